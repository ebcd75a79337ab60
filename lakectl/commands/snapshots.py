"""lakectl snapshots DB.TABLE: the snapshot history, newest first."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from core.ops.describe import SnapshotInfo
from core.table import Table
from lakectl.commands import output, settings
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("snapshots")
    def snapshots_cmd(
        ctx: typer.Context,
        table: TableArg,
        limit: Annotated[Optional[int], typer.Option("--limit", help="Only the newest N snapshots.")] = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List snapshots: id, schema id, commit kind, commit time, delta and total record counts.

        Examples:

        \b
          lakectl snapshots shop.orders --limit 10
          lakectl snapshots shop.orders --format jsonl
        """
        out = output(ctx, fmt)
        t = Table.open(table, warehouse=settings(ctx).resolve_warehouse(warehouse))
        out.records(t.history(limit=limit), SnapshotInfo, title=f"snapshots of {t.name}")
