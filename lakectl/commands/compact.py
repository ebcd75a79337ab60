"""lakectl compact DB.TABLE [--full] [--partition COL=VALUE[,COL=VALUE...] ...] [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_order_strategy
from lakectl.config import parse_partitions
from lakectl.params import BranchOpt, FormatOpt, PartitionsOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("compact")
    def compact_cmd(
        ctx: typer.Context,
        table: TableArg,
        full: Annotated[bool, typer.Option(
            "--full", help="Rewrite every bucket into one sorted run at the top level (drops deleted keys); "
                           "without it, what Paimon's own compaction picks: primary-key buckets that reached "
                           "num-sorted-run.compaction-trigger sorted runs (default 5; with deletion vectors, "
                           "level-0 files) and append buckets' small files, the oldest first: in a bucketed "
                           "table once compaction.min.file-num of them reach target-file-size together or "
                           "compaction.max.file-num (5) gather; with bucket=-1 at most compaction.max.file-num "
                           "(50) per bucket.")] = False,
        partition: PartitionsOpt = None,
        order_by: Annotated[str | None, typer.Option(
            "--order-by", metavar="COL[,COL...]",
            help="Sort compaction (Paimon's order_by) of an append table: rewrite every bucket (of --partition) "
                 "with its rows ordered by these columns, so that --where on them skips most files and row "
                 "groups.")] = None,
        order_strategy: Annotated[str, typer.Option(
            "--order-strategy", metavar="STRATEGY", autocompletion=complete_order_strategy,
            help="With --order-by: order (by the columns in turn), zorder or hilbert (space-filling curves "
                 "that cluster on every column at once).")] = "order",
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be rewritten; write nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Compact data files: merge each bucket's files, commit a COMPACT snapshot.

        With --order-by, Paimon's sort compaction of an append table: every bucket is rewritten, its rows in
        the --order-strategy order, as one COMPACT snapshot (deletion vectors applied).

        On a postpone-bucket table (bucket=-2) the rows waiting in bucket-postpone/ are first moved into real
        buckets (the partition's bucket count, or postpone.default-bucket-num for a new partition) as their
        own COMPACT snapshot: until then batch readers do not see them.

        Examples:

        \b
          lakectl compact shop.orders
          lakectl compact shop.orders --full --partition dt=2024-01-01 --dry-run
          lakectl compact shop.events --order-by id,event_time \\
              --order-strategy zorder
        """
        from core.ops.compact import compact

        out = output(ctx, fmt)
        s = settings(ctx)
        t = s.open_table(table, warehouse, branch=branch)
        specs = parse_partitions(partition) if partition else None
        order = _order(order_by, order_strategy)
        with out.progress() as progress:
            result = compact(t, full=full or order is not None, partitions=specs, dry_run=dry_run,
                             engine_settings=s.engine_settings(progress), order=order)
        out.record(result)


def _order(order_by: str | None, strategy: str) -> tuple[str, tuple[str, ...]] | None:
    """(strategy, columns) of a sort compaction, None without --order-by."""
    from core.errors import UsageError

    if order_by is None:
        if strategy != "order":
            raise UsageError("--order-strategy goes with --order-by")
        return None
    columns = tuple(c.strip() for c in order_by.split(",") if c.strip())
    return strategy, columns
