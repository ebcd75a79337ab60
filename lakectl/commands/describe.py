"""lakectl describe DB.TABLE: schema, keys, partitioning, buckets, options, files."""

from __future__ import annotations

import dataclasses

import typer

from core.table import Table
from lakectl.commands import output, settings
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("describe")
    def describe_cmd(ctx: typer.Context, table: TableArg, warehouse: WarehouseOpt = None, fmt: FormatOpt = None) -> None:
        """Show a table's schema (with field ids), keys, partitioning, buckets, options and size.

        Example:

        \b
          lakectl describe shop.orders
        """
        from core.ops.describe import ColumnInfo

        out = output(ctx, fmt)
        d = Table.open(table, warehouse=settings(ctx).resolve_warehouse(warehouse)).describe()
        if out.format == "table":
            summary = {f.name: getattr(d, f.name) for f in dataclasses.fields(d) if f.name != "columns"}
            out.record(summary, title=d.table, data=True)
            out.records(list(d.columns), ColumnInfo, title="columns")
        else:
            out.record(d, data=True)
