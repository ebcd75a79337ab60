"""lakectl compact DB.TABLE [--full] [--partition COL=VALUE[,COL=VALUE...] ...] [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from core.table import Table
from lakectl.commands import output, settings
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
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be rewritten; write nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Compact data files: merge each bucket's files, commit a COMPACT snapshot.

        Examples:

        \b
          lakectl compact shop.orders
          lakectl compact shop.orders --full --partition dt=2024-01-01 --dry-run
        """
        from core.ops.compact import compact

        out = output(ctx, fmt)
        s = settings(ctx)
        t = Table.open(table, warehouse=s.resolve_warehouse(warehouse), branch=branch)
        specs = parse_partitions(partition) if partition else None
        with out.progress() as progress:
            result = compact(t, full=full, partitions=specs, dry_run=dry_run,
                             engine_settings=s.engine_settings(progress))
        out.record(result)
