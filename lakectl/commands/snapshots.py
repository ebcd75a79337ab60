"""lakectl snapshots DB.TABLE: the snapshot history, newest first."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("snapshots")
    def snapshots_cmd(
        ctx: typer.Context,
        table: TableArg,
        limit: Annotated[Optional[int], typer.Option("--limit", metavar="N", help="Only the newest N snapshots (0: all).")] = None,
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
        from lakectl.listings import snapshots_listing

        snapshots_listing(settings(ctx), table, limit=limit, branch=branch, warehouse=warehouse, fmt=fmt)()
