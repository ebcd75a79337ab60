"""lakectl remove-orphan-files DB.TABLE [--older-than 1d] [--dry-run] [--force]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("remove-orphan-files")
    def remove_orphan_files_cmd(
        ctx: typer.Context,
        table: TableArg,
        older_than: Annotated[str, typer.Option("--older-than", metavar="DURATION", help="Only files last modified longer ago than this (e.g. 1d, 12h); younger files may belong to a running write.")] = "1d",
        dry_run: Annotated[bool, typer.Option("--dry-run", help="List the files; delete nothing.")] = False,
        force: Annotated[bool, typer.Option("--force", help="Allow --older-than under 1h. Only with every writer of the table stopped: a commit in progress writes its files before it publishes the snapshot that references them.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Delete files under the table that no snapshot or tag references (failed writes, rollbacks).

        An --older-than under 1h is refused unless --force says no writer is running.

        Example:

        \b
          lakectl remove-orphan-files shop.orders --older-than 3d --dry-run
        """
        from core.ops.orphans import remove_orphan_files

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        with out.progress() as progress:
            result = remove_orphan_files(t, older_than=older_than, dry_run=dry_run, force=force,
                                         progress=progress)
        from lakectl.output import result_json

        out.record(result_json(result, "remove-orphan-files"))
