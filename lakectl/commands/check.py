"""lakectl check DB.TABLE: verify a table end to end; exit 1 when anything is wrong."""

from __future__ import annotations

import dataclasses
import sys

import typer

from core.table import Table
from lakectl.commands import output, settings
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check_cmd(
        ctx: typer.Context,
        table: TableArg,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Verify every schema, snapshot, tag, manifest and referenced file (present, with its
        recorded size) and the LATEST/EARLIEST hints. Changes nothing. Exit 0 when the table is
        sound, 1 when problems were found (each names its file; a one-line summary goes to stderr).
        A stale hint is a warning on stderr only: readers fall back to listing, the next commit
        rewrites it.

        Example:

        \b
          lakectl check shop.orders --format json
        """
        from core.ops.check import Problem, check

        out = output(ctx, fmt)
        t = Table.open(table, warehouse=settings(ctx).resolve_warehouse(warehouse))
        result = check(t)
        if out.format != "table":
            out.record(result)
        elif result.problems:
            out.records(result.problems, Problem, title=f"problems in {t.name}")
        else:
            summary = {k: v for k, v in dataclasses.asdict(result).items() if k not in ("problems", "warnings")}
            out.record(summary, title=f"{t.name} is sound")
        for w in result.warnings:
            print(f"warning: {w.kind} {w.path} {w.detail}", file=sys.stderr)
        if result.problems:
            print(f"error: {len(result.problems)} problem(s) in {t.name}", file=sys.stderr)
            raise typer.Exit(1)
