"""lakectl iceberg-sync DB.TABLE [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("iceberg-sync")
    def iceberg_sync_cmd(
        ctx: typer.Context,
        table: TableArg,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show which snapshot and how many files the "
                                                                "metadata would list; write nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Write the table's Iceberg metadata anew from its latest snapshot (tables with metadata.iceberg.storage).

        Every commit writes it; this brings it in step after a commit that was killed before
        writing it, or on a table that set the option after it had snapshots.

        Example:

        \b
          lakectl iceberg-sync shop.events --dry-run
          lakectl iceberg-sync shop.events --format json
        """
        from core.ops.iceberg_sync import iceberg_sync

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        out.record(iceberg_sync(t, dry_run=dry_run))
