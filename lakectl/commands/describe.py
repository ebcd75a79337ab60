"""lakectl describe DB.TABLE: schema, keys, partitioning, buckets, options, files."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_snapshot_id
from lakectl.params import BranchOpt, FormatOpt, TableArg, TagOpt, TimestampOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("describe")
    def describe_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: Annotated[Optional[int], typer.Option(
            "--snapshot-id", metavar="ID", help="Schema, files and size as of this snapshot (default: latest).",
            autocompletion=complete_snapshot_id)] = None,
        timestamp: TimestampOpt = None,
        tag: TagOpt = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Show a table's schema (with field ids), keys, partitioning, buckets, options and size.

        Example:

        \b
          lakectl describe shop.orders
        """
        from core.ops.describe import ColumnInfo, describe
        from core.travel import snapshot_id_of

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        d = describe(t, snapshot_id=snapshot_id_of(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag))
        if out.format == "table":
            summary = {"table": d.table, "branch": d.branch,
                       **{f.name: getattr(d, f.name) for f in dataclasses.fields(d) if f.name != "columns"}}
            out.record(summary, title=d.table, data=True)
            out.records(list(d.columns), ColumnInfo, title="columns")
        else:  # table and branch first, as in every result
            out.record({"table": d.table, "branch": d.branch, **dataclasses.asdict(d)}, data=True)
