"""lakectl remove-unexisting-files DB.TABLE [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("remove-unexisting-files")
    def remove_unexisting_files_cmd(
        ctx: typer.Context,
        table: TableArg,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="List the missing files and the records they "
                                                                 "held; commit nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Remove the latest snapshot's entries of data files that no longer exist, as one APPEND snapshot.

        Paimon's remove_unexisting_files: for a table whose data files were lost (deleted by hand, or by an
        orphan clean with too short an age), so that reading the latest snapshot fails. The rows those files
        held are lost (records_deleted counts them); every snapshot is kept, and the older ones that list a
        missing file stay unreadable until they expire. check --repair instead removes every snapshot that
        lists a missing file, later good writes included. Nothing missing commits nothing.

        Example:

        \b
          lakectl remove-unexisting-files shop.orders --dry-run
        """
        from core.ops.missing_files import remove_unexisting_files

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(remove_unexisting_files(t, dry_run=dry_run))
