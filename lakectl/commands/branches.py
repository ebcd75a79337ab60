"""lakectl branch create|delete|list|rename|merge|fast-forward DB.TABLE: branches in Paimon's layout."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_branch, complete_snapshot_id, complete_tag
from lakectl.params import FormatOpt, TableArg, WarehouseOpt

BranchNameArg = Annotated[str, typer.Argument(help="Branch name.", metavar="NAME", show_default=False)]
ExistingBranchArg = Annotated[str, typer.Argument(help="Branch name.", metavar="NAME", show_default=False,
                                                 autocompletion=complete_branch)]


def register(app: typer.Typer) -> None:
    branch_app = typer.Typer(help="Create, delete, list, merge and fast-forward branches: snapshot histories of their own that share "
                                  "the table's data files.\n\n"
                                  "Example:\n\n\b\n  lakectl branch create shop.orders hotfix --tag eod-2024-01-01",
                             no_args_is_help=True)

    @branch_app.command("create")
    def create_cmd(
        ctx: typer.Context,
        table: TableArg,
        name: BranchNameArg,
        tag: Annotated[Optional[str], typer.Option("--tag", metavar="NAME", help="Branch from this tag of main.", autocompletion=complete_tag)] = None,
        snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", metavar="ID", help="Branch from this snapshot of main (default: the latest).", autocompletion=complete_snapshot_id)] = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Create a branch at a tag or snapshot of main (copies that snapshot and its schemas).

        Example:

        \b
          lakectl branch create shop.orders experiment --snapshot-id 3
        """
        from core.ops.branches import create_branch

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        out.record(create_branch(t, name, tag=tag, snapshot_id=snapshot_id))

    @branch_app.command("delete")
    def delete_cmd(
        ctx: typer.Context,
        table: TableArg,
        name: ExistingBranchArg,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be removed; change nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Delete a branch's directory (files only it used become collectable by remove-orphan-files).

        Also removes what an interrupted branch create or delete left under that name (not a
        branch; check reports it); a killed delete is gone at once and its rerun finishes.

        Example:

        \b
          lakectl branch delete shop.orders test
        """
        from core.ops.branches import delete_branch

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        from lakectl.output import result_json

        out.record(result_json(delete_branch(t, name, dry_run=dry_run), "branch delete"))

    @branch_app.command("rename")
    def rename_cmd(
        ctx: typer.Context,
        table: TableArg,
        name: ExistingBranchArg,
        new_name: Annotated[str, typer.Argument(metavar="NEW", help="The branch's new name.")],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Check that it can be renamed; change "
                                                                 "nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Rename a branch (Paimon's rename_branch): its directory, with every snapshot, schema, tag and consumer.

        Made once no command of several steps is at work on the table; a commit to the old name
        afterwards fails whole (exit 4). On local disk one atomic directory rename; on object stores,
        which have no rename, the branch's files are copied and the old ones deleted, and a rerun of
        the same command finishes an interrupted one. Refused for the table's scan.fallback-branch.

        Example:

        \b
          lakectl branch rename shop.orders test qa
        """
        from core.ops.branches import rename_branch

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        out.record(rename_branch(t, name, new_name, dry_run=dry_run))

    @branch_app.command("merge")
    def merge_cmd(
        ctx: typer.Context,
        table: TableArg,
        source: Annotated[str, typer.Argument(metavar="SOURCE", help="The branch whose new data files are merged.",
                                              show_default=False, autocompletion=complete_branch)],
        into: Annotated[str, typer.Option("--into", metavar="TARGET", help="The branch that takes them.",
                                          autocompletion=complete_branch)] = "main",
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be merged; change "
                                                                 "nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Merge a branch into another (Paimon's merge_branch): the data files only SOURCE has, as one commit on TARGET.

        For append tables whose history on both branches is complete and pure append, as tables
        created with branch-merge.enabled=true keep it (compaction, overwrite, delete, truncate
        and the like are refused on them). Files TARGET already lists are skipped, so merging
        again adds nothing; both branches keep everything else. Schemas and row tracking must
        agree.

        Example:

        \b
          lakectl branch merge shop.events hotfix --dry-run
          lakectl branch merge shop.events hotfix
        """
        from core.ops.merge_branch import merge_branch

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        out.record(merge_branch(t, source, into=into, dry_run=dry_run))

    @branch_app.command("fast-forward")
    def fast_forward_cmd(
        ctx: typer.Context,
        table: TableArg,
        name: ExistingBranchArg,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Make main equal to a branch: main's snapshots, schemas and tags after the branch's start are replaced by the branch's.

        Data files of main's removed snapshots stay until remove-orphan-files; the branch stays.
        If it is killed, main refuses every change (naming this command) until it is rerun.

        Example:

        \b
          lakectl branch fast-forward shop.orders test --dry-run
        """
        from core.ops.branches import fast_forward

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        out.record(fast_forward(t, name, dry_run=dry_run))

    @branch_app.command("list")
    def list_cmd(
        ctx: typer.Context,
        table: TableArg,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List branches: name, earliest and latest snapshot, schema, tag count, record count.

        Example:

        \b
          lakectl branch list shop.orders --format json
        """
        from core.ops.branches import BranchInfo, list_branches

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        out.records(list_branches(t), BranchInfo, title=f"branches of {t.name}")

    app.add_typer(branch_app, name="branch")
