"""lakectl expire-partitions DB.TABLE [--expiration-time 7d] [--max-expires N] [--dry-run]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("expire-partitions")
    def expire_partitions_cmd(
        ctx: typer.Context,
        table: TableArg,
        expiration_time: Annotated[Optional[str], typer.Option(
            "--expiration-time", metavar="DURATION", help="Drop partitions older than this, e.g. 7d or 12h "
                                      "(default: option partition.expiration-time).")] = None,
        max_expires: Annotated[Optional[int], typer.Option(
            "--max-expires", min=1, metavar="N", help="Expire at most N partitions: the oldest first (values-time), the first by "
                                      "value (update-time), as Paimon picks them.")] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would expire; commit nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Drop partitions whose time has expired, as one OVERWRITE snapshot; data files go
        when that snapshot's predecessors expire. The time is read from the partition's values
        (partition.expiration-strategy=values-time, the default: partition.timestamp-pattern /
        -formatter) or is its last update, the newest creation time of its data files (update-time).

        Example:

        \b
          lakectl expire-partitions shop.orders --expiration-time 30d --dry-run
        """
        from core.ops.partitions import expire_partitions

        out = output(ctx, fmt)
        s = settings(ctx)
        t = s.open_table(table, warehouse, branch=branch)
        result = expire_partitions(t, expiration_time=expiration_time, max_expires=max_expires, dry_run=dry_run)
        out.record(result)
