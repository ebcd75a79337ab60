"""lakectl tag create|rename|delete|list DB.TABLE: named, long-lived references to snapshots."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_snapshot_id, complete_tag
from lakectl.params import BranchOpt, FormatOpt, TableArg, TagOpt, TimestampOpt, WarehouseOpt

TagNameArg = Annotated[str, typer.Argument(help="Tag name.", metavar="NAME", show_default=False)]
ExistingTagArg = Annotated[str, typer.Argument(help="Tag name.", metavar="NAME", show_default=False,
                                              autocompletion=complete_tag)]


def register(app: typer.Typer) -> None:
    tag_app = typer.Typer(help="Create, rename, delete and list tags: named snapshots that expire leaves alone.\n\n"
                               "Example:\n\n\b\n  lakectl tag create shop.orders eod-2024-01-02 --time-retained 30d",
                          no_args_is_help=True)

    @tag_app.command("create")
    def create_cmd(
        ctx: typer.Context,
        table: TableArg,
        name: TagNameArg,
        snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", metavar="ID", help="Snapshot to tag (default: latest).", autocompletion=complete_snapshot_id)] = None,
        timestamp: TimestampOpt = None,
        tag: TagOpt = None,
        time_retained: Annotated[Optional[str], typer.Option("--time-retained", metavar="DURATION", help="Keep the tag this long, e.g. 7d (stored as the tag's TTL).")] = None,
        replace: Annotated[bool, typer.Option("--replace", help="Point an existing tag at this snapshot (new create time and TTL) instead of refusing; a missing tag is an error (Paimon's replace_tag).")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Tag a snapshot; an existing name is an error unless --replace.

        --timestamp tags the latest snapshot at or before that time, as scan --timestamp reads
        (Paimon's create_tag_from_timestamp takes the earliest at or after it).

        Example:

        \b
          lakectl tag create shop.orders eod-2024-01-02 --time-retained 30d
        """
        from core.ops.tags import create_tag
        from core.travel import snapshot_id_of

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(create_tag(t, name, snapshot_id=snapshot_id_of(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag),
                               time_retained=time_retained, replace=replace))

    @tag_app.command("rename")
    def rename_cmd(
        ctx: typer.Context,
        table: TableArg,
        old: ExistingTagArg,
        new: Annotated[str, typer.Argument(help="New tag name.", metavar="NEW", show_default=False)],
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Rename a tag, keeping its snapshot, create time and TTL; an existing NEW is an error.

        Example:

        \b
          lakectl tag rename shop.orders eod-2024-01-01 release-1.0
        """
        from core.ops.tags import rename_tag

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(rename_tag(t, old, new))

    @tag_app.command("delete")
    def delete_cmd(
        ctx: typer.Context,
        table: TableArg,
        name: ExistingTagArg,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Delete a tag (its files become collectable by expire / remove-orphan-files).

        Example:

        \b
          lakectl tag delete shop.orders eod-2024-01-01
        """
        from core.ops.tags import delete_tag

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(delete_tag(t, name))

    @tag_app.command("list")
    def list_cmd(
        ctx: typer.Context,
        table: TableArg,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List tags: name, snapshot, schema, commit and create time, TTL, record count.

        Example:

        \b
          lakectl tag list shop.orders --format json
        """
        from core.ops.tags import TagInfo, list_tags

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.records(list_tags(t), TagInfo, title=f"tags of {t.name}")

    app.add_typer(tag_app, name="tag")

