"""lakectl schemas DB.TABLE: the schema history, newest first, with what each version changed."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.listings import every_when_zero
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("schemas")
    def schemas_cmd(
        ctx: typer.Context,
        table: TableArg,
        limit: Annotated[Optional[int], typer.Option("--limit", metavar="N", help="Only the newest N schemas (0: all).")] = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List schema versions: id, time, column count and what each changed (columns paired by field id).

        Example:

        \b
          lakectl schemas shop.orders --format json
        """
        from core.ops.schemas import SchemaInfo

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        history = t.schema_history(limit=every_when_zero(limit))
        from lakectl.output import JSON_NAMES, about, renamed

        names = JSON_NAMES["schemas"]
        if out.format == "table":  # one change per line; the epoch millis only in the script formats
            rows = [{**renamed(s, names), "changes": "\n".join(s.changes)} for s in history]
            columns = [names.get(f.name, f.name) for f in dataclasses.fields(SchemaInfo) if f.name != "time_millis"]
            out.rows(rows, columns, title=f"schemas of {table}")
        else:
            out.records(history, SchemaInfo, about=about(t), names=names)
