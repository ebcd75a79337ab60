"""lakectl snapshots DB.TABLE: the snapshot history, newest first."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from core.table import Table
from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("snapshots")
    def snapshots_cmd(
        ctx: typer.Context,
        table: TableArg,
        limit: Annotated[Optional[int], typer.Option("--limit", help="Only the newest N snapshots.")] = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List snapshots: id, schema id, commit kind, commit time, delta and total record counts
        (and commit_time_millis and commit_user in the json, jsonl and csv formats).

        Examples:

        \b
          lakectl snapshots shop.orders --limit 10
          lakectl snapshots shop.orders --format jsonl
        """
        from core.ops.describe import SnapshotInfo

        out = output(ctx, fmt)
        t = Table.open(table, warehouse=settings(ctx).resolve_warehouse(warehouse), branch=branch)
        history = t.history(limit=limit)
        if out.format == "table":  # for people: the commit user (a UUID per writer) is noise
            columns = [f.name for f in dataclasses.fields(SnapshotInfo) if f.name != "commit_user"]
            out.rows([dataclasses.asdict(s) for s in history], columns, title=f"snapshots of {t.name}")
        else:
            out.records(history, SnapshotInfo)
