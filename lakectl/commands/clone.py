"""lakectl clone DB.TABLE DB.COPY [--snapshot-id N | --tag T | --timestamp T] [--dry-run]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_snapshot_id
from lakectl.params import BranchOpt, FormatOpt, TableArg, TagOpt, TimestampOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("clone")
    def clone_cmd(
        ctx: typer.Context,
        table: TableArg,
        copy: Annotated[str, typer.Argument(help="The new table: DB.TABLE in the same warehouse, or a path/URI "
                                                 "(another warehouse or filesystem).", metavar="DB.COPY",
                                            show_default=False)],
        snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", metavar="ID", help="Clone this snapshot.",
                                                           autocompletion=complete_snapshot_id)] = None,
        tag: TagOpt = None,
        timestamp: TimestampOpt = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be copied; write nothing.")]
        = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Copy a table as of one snapshot (default the latest) into a new, independent table with one snapshot.

        Copies the snapshot's data, deletion-vector and index files and its schema versions;
        tags, consumers and older snapshots stay behind. The copy shares no file with the
        source. On a local disk the copy is built in a hidden sibling directory and renamed
        into place; a killed clone leaves only that directory (.NAME.clone-*, remove it with
        rm -r). On an object store a killed clone leaves a partial target: remove it and re-run.
        With --branch, the snapshot is the branch's (--snapshot-id, --tag and --timestamp name
        the branch's own) and the copy is a table whose main holds it.

        Examples:

        \b
          lakectl clone shop.orders shop.orders_backup --tag release-1
          lakectl clone shop.orders s3://other-bucket/wh/shop.db/orders
          lakectl clone shop.orders shop.orders_dev --branch dev
        """
        from core.ops.clone import clone

        out = output(ctx, fmt)
        s = settings(ctx)
        source = s.open_table(table, warehouse, branch=branch)
        target = s.locate_table(copy, warehouse)
        with out.progress() as progress:
            result = clone(source, target, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp,
                           dry_run=dry_run, progress=progress)
        from lakectl.output import result_json

        out.record(result_json(result, "clone"), title=f"clone {source.name}")
