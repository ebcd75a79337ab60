"""lakectl partitions | buckets | manifests DB.TABLE: Paimon's $partitions, $buckets and $manifests
system tables as listings of a snapshot (metadata only)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.listings import every_when_zero
from lakectl.output import about
from lakectl.completion import complete_snapshot_id
from lakectl.params import BranchOpt, FormatOpt, PartitionsOpt, TableArg, TagOpt, TimestampOpt, WarehouseOpt

SnapshotIdOpt = Annotated[Optional[int], typer.Option("--snapshot-id", metavar="ID", help="Snapshot (default: latest).",
                                                      autocompletion=complete_snapshot_id)]


def register(app: typer.Typer) -> None:
    """Declares all three (the registry imports this module for any one of them)."""
    _register_partitions(app)
    _register_buckets(app)
    _register_manifests(app)


def _register_partitions(app: typer.Typer) -> None:
    @app.command("partitions")
    def partitions_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: SnapshotIdOpt = None,
        timestamp: TimestampOpt = None,
        tag: TagOpt = None,
        partition: PartitionsOpt = None,
        limit: Annotated[Optional[int], typer.Option("--limit", metavar="N", help="Only the first N partitions (0: all).")] = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List partitions with their record count, file size, file count and last update time
        (as Paimon's $partitions).

        last_update_time is the newest creation time of the partition's live files.

        Example:

        \b
          lakectl partitions shop.orders --format json
        """
        from core.ops.table_stats import PartitionStats, partition_stats
        from core.travel import snapshot_id_of
        from lakectl.config import parse_partitions

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        specs = parse_partitions(partition) if partition else None
        chosen = snapshot_id_of(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag)
        out.records(partition_stats(t, chosen, partitions=specs, limit=every_when_zero(limit)), PartitionStats,
                    title=f"partitions of {t.name}", about=about(t))


def _register_buckets(app: typer.Typer) -> None:
    @app.command("buckets")
    def buckets_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: SnapshotIdOpt = None,
        timestamp: TimestampOpt = None,
        tag: TagOpt = None,
        partition: PartitionsOpt = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List buckets per partition with their record count, file size, file count and last update
        time (as Paimon's $buckets).

        Example:

        \b
          lakectl buckets shop.orders --partition dt=2024-01-01
        """
        from core.ops.table_stats import BucketStats, bucket_stats
        from core.travel import snapshot_id_of
        from lakectl.config import parse_partitions

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        specs = parse_partitions(partition) if partition else None
        chosen = snapshot_id_of(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag)
        out.records(bucket_stats(t, chosen, partitions=specs), BucketStats, title=f"buckets of {t.name}", about=about(t))


def _register_manifests(app: typer.Typer) -> None:
    @app.command("manifests")
    def manifests_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: SnapshotIdOpt = None,
        timestamp: TimestampOpt = None,
        tag: TagOpt = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List the manifest files of a snapshot's base and delta lists: name, size, files added and
        deleted, schema id (as Paimon's $manifests).

        Example:

        \b
          lakectl manifests shop.orders --snapshot-id 3 --format json
        """
        from core.ops.table_stats import ManifestInfo, manifests
        from core.travel import snapshot_id_of

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        chosen = snapshot_id_of(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag)
        out.records(manifests(t, chosen), ManifestInfo, title=f"manifests of {t.name}", about=about(t))
