"""lakectl health DB.TABLE [--branch B]: the measures maintain acts on, with what to do about them."""

from __future__ import annotations

from typing import Any

import typer

from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt

# File-size histogram buckets: upper bounds in bytes (the last is open-ended).
_SIZE_BOUNDS = ((1 << 20, "< 1 MB"), (16 << 20, "1-16 MB"), (64 << 20, "16-64 MB"), (128 << 20, "64-128 MB"),
                (256 << 20, "128-256 MB"), (None, ">= 256 MB"))


def size_histogram(sizes: tuple[int, ...]) -> list[tuple[str, int]]:
    counts = [0] * len(_SIZE_BOUNDS)
    for size in sizes:
        counts[next(i for i, (bound, _) in enumerate(_SIZE_BOUNDS) if bound is None or size < bound)] += 1
    return [(label, n) for (_, label), n in zip(_SIZE_BOUNDS, counts)]


def _bars(out: Any, title: str, items: list[tuple[str, int]], caption: str | None = None) -> None:
    """A rich bar chart: one row per item, bar length proportional to its value."""
    from rich.table import Table as RichTable

    top = max((v for _, v in items), default=0) or 1
    grid = RichTable(title=title, show_header=False, box=None, caption=caption)
    for label, value in items:
        grid.add_row(label, "█" * max(0, round(40 * value / top)), str(value))
    out.console.print(grid)


# Bars a chart of buckets draws at most: the fullest ones, the rest summed up in one line, so
# that 90 partitions of 4 buckets stay a screen, not 360 bars.
BUCKET_BARS = 15


def fullest(items: list[tuple[str, int]], shown: int = BUCKET_BARS) -> tuple[list[tuple[str, int]], str | None]:
    """The ``shown`` largest items (in their order) and a line about the others, if any."""
    if len(items) <= shown:
        return items, None
    ranked = sorted(range(len(items)), key=lambda i: -items[i][1])
    kept = sorted(ranked[:shown])
    rest = [items[i][1] for i in ranked[shown:]]
    return ([items[i] for i in kept],
            f"{len(items)} buckets, the {shown} fullest shown; the other {len(rest)} hold {sum(rest):,} rows "
            f"({min(rest):,} to {max(rest):,} each)")


def register(app: typer.Typer) -> None:
    @app.command("health")
    def health_cmd(ctx: typer.Context, table: TableArg, branch: BranchOpt = None, warehouse: WarehouseOpt = None,
                   fmt: FormatOpt = None) -> None:
        """Show a table's health (snapshots, files, small files, sorted runs, deletion vectors,
        oldest snapshot) and what to do about it, each recommendation naming its command.

        The recommendations are the verbs `lakectl maintain` would run on the table under the
        config's [maintain] policy (orphan removal aside, which needs a listing of the files).

        With --branch, the branch's own snapshots, files, tags and options, as maintain
        measures and plans each branch; its recommendations name --branch.

        On a terminal: a file-size histogram and rows per bucket as bar charts.

        Examples:

        \b
          lakectl health shop.orders
          lakectl health shop.orders -f json
          lakectl health shop.orders --branch dev
        """
        import dataclasses

        from core.health import measure
        from core.ops.maintain import recommendations
        from core.table import Table
        from lakectl.maintain_policy import Policies
        from lakectl.output import JSON_NAMES

        out = output(ctx, fmt)
        s = settings(ctx)
        t = s.open_table(table, warehouse, branch=branch)
        h = measure(t)
        # What maintain would do under the config's policy for this table: one rule for both.
        recs = recommendations(t, h, Policies(s.config.get("maintain"))(t.name))
        measures = {k: v for k, v in dataclasses.asdict(h).items() if k != "file_sizes"}
        measures = {"table": measures.pop("table"), "branch": t.branch, **measures}
        measures = {JSON_NAMES["health"].get(k, k): v for k, v in measures.items()}
        if out.format != "table":
            out.record({**measures, "file_size_histogram": dict(size_histogram(h.file_sizes)),
                        "recommendations": [dataclasses.asdict(r) for r in recs]}, data=True)
            return
        out.record(measures, title=f"health of {t.name}" + ("" if t.is_main else f" branch {t.branch}"), data=True)
        out.rows([dataclasses.asdict(r) for r in recs] or [{"problem": "none", "command": ""}],
                 ["problem", "command"], title="recommendations")
        if out.terminal:
            from core.ops.table_stats import bucket_stats

            _bars(out, "files by size", size_histogram(h.file_sizes))
            rows, caption = fullest([(f"{'/'.join(f'{k}={v}' for k, v in b.partition.items()) or '-'} "
                                      f"bucket {b.bucket}", b.record_count) for b in bucket_stats(t)])
            _bars(out, "rows per bucket", rows, caption)
