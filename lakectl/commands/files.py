"""lakectl files DB.TABLE [--snapshot-id N] [--partition COL=VALUE[,...] ...] [--limit N]: the live data
files of a snapshot."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.listings import every_when_zero
from lakectl.completion import complete_snapshot_id
from lakectl.params import BranchOpt, FormatOpt, PartitionsOpt, TableArg, TagOpt, TimestampOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("files")
    def files_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", metavar="ID", help="Snapshot (default: latest).", autocompletion=complete_snapshot_id)] = None,
        timestamp: TimestampOpt = None,
        tag: TagOpt = None,
        partition: PartitionsOpt = None,
        limit: Annotated[Optional[int], typer.Option("--limit", metavar="N", help="Only the first N files (0: all).")] = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List live data files: partition, bucket, level, rows, size, sequence range, schema, name,
        and the rows each file's deletion vector deletes (tables with deletion-vectors.enabled).

        Example:

        \b
          lakectl files shop.orders --snapshot-id 3 --format csv
          lakectl files shop.orders --partition dt=2024-01-01 --limit 20
        """
        from core.ops.describe import FileInfo, live_files
        from core.travel import snapshot_id_of
        from lakectl.config import parse_partitions

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        specs = parse_partitions(partition) if partition else None
        chosen = snapshot_id_of(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag)
        from lakectl.output import JSON_NAMES, about

        out.records(live_files(t, chosen, partitions=specs, limit=every_when_zero(limit)), FileInfo, title=f"files of {t.name}",
                    about=about(t), names=JSON_NAMES["files"])
