"""Paimon's system-table views as listings: ``$partitions``, ``$buckets`` and ``$manifests``.

Metadata only: computed from a snapshot's manifest lists and live manifest entries, never
from a data file. Field names follow Paimon's system tables; ``last_update_time`` is, as
Paimon's ``lastFileCreationTime``, the newest creation time of the live files counted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from core.options import check_limit
from core.partition import partition_spec_text
from core.snapshot import Snapshot
from core.table_handle import TableHandle


@dataclass(frozen=True, slots=True)
class PartitionStats:
    partition: dict[str, Any]
    record_count: int
    file_size_in_bytes: int
    file_count: int
    last_update_time: str | None  # ISO 8601 with the local zone offset


@dataclass(frozen=True, slots=True)
class BucketStats:
    partition: dict[str, Any]
    bucket: int
    record_count: int
    file_size_in_bytes: int
    file_count: int
    last_update_time: str | None  # ISO 8601 with the local zone offset


@dataclass(frozen=True, slots=True)
class ManifestInfo:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    schema_id: int
    manifest_list: str  # "base" or "delta": which list of the snapshot names it


@dataclass
class _Totals:
    partition: dict[str, Any]
    record_count: int = 0
    file_size_in_bytes: int = 0
    file_count: int = 0
    last_creation_millis: int | None = None  # local wall-clock epoch ms, as Paimon stores it

    def add(self, row_count: int, file_size: int, creation_millis: int | None) -> None:
        self.record_count += row_count
        self.file_size_in_bytes += file_size
        self.file_count += 1
        if creation_millis is not None:
            self.last_creation_millis = max(self.last_creation_millis or creation_millis, creation_millis)

    def last_update_time(self) -> str | None:
        if self.last_creation_millis is None:
            return None
        # The stored millis are a local wall-clock time read as if UTC (Java's LocalDateTime).
        naive = dt.datetime.fromtimestamp(self.last_creation_millis / 1000, dt.timezone.utc).replace(tzinfo=None)
        return naive.astimezone().isoformat(timespec="milliseconds")


def partition_stats(table: TableHandle, snapshot_id: int | None = None, *,
                    partitions: Sequence[Mapping[str, str]] | None = None,
                    limit: int | None = None) -> list[PartitionStats]:
    """Per partition of a snapshot (the latest by default): its live files' row count, size,
    count and newest creation time, as Paimon's ``$partitions``; the first ``limit`` partitions
    (ordered as ``files`` orders them), only those of ``partitions`` if given.

    Raises:
        NotFoundError: the snapshot does not exist.
        UsageError: a spec names a column that is not a partition column; a bad limit.
    """
    check_limit(limit)
    totals: dict[bytes, _Totals] = {}
    for key, spec, entry in _live_entries(table, snapshot_id, partitions):
        f = entry.file
        totals.setdefault(key, _Totals(spec)).add(f.row_count, f.file_size, f.creation_time)
    out = [PartitionStats(t.partition, t.record_count, t.file_size_in_bytes, t.file_count, t.last_update_time())
           for t in totals.values()]
    out.sort(key=lambda s: _partition_order(s.partition))
    return out if limit is None else out[:limit]


def bucket_stats(table: TableHandle, snapshot_id: int | None = None, *,
                 partitions: Sequence[Mapping[str, str]] | None = None) -> list[BucketStats]:
    """Per (partition, bucket) of a snapshot: as :func:`partition_stats`, as Paimon's ``$buckets``."""
    totals: dict[tuple[bytes, int], _Totals] = {}
    for key, spec, entry in _live_entries(table, snapshot_id, partitions):
        f = entry.file
        totals.setdefault((key, entry.bucket), _Totals(spec)).add(f.row_count, f.file_size, f.creation_time)
    out = [BucketStats(t.partition, bucket, t.record_count, t.file_size_in_bytes, t.file_count, t.last_update_time())
           for (_, bucket), t in totals.items()]
    out.sort(key=lambda s: (_partition_order(s.partition), s.bucket))
    return out


def manifests(table: TableHandle, snapshot_id: int | None = None) -> list[ManifestInfo]:
    """The manifest files of a snapshot (the latest by default): its base list, then its delta
    list, each in list order, as Paimon's ``$manifests``. Changelog manifests are not data
    manifests and are left out, as Paimon does."""
    snap = _snapshot(table, snapshot_id)
    if snap is None:
        return []
    mio = table.manifests()
    out = []
    for which, list_name in (("base", snap.base_manifest_list), ("delta", snap.delta_manifest_list)):
        if not list_name:
            continue
        for m in mio.read_manifest_list(list_name):
            out.append(ManifestInfo(m.file_name, m.file_size, m.num_added_files, m.num_deleted_files,
                                    m.schema_id, which))
    return out


def _snapshot(table: TableHandle, snapshot_id: int | None) -> Snapshot | None:
    return table.snapshots.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()


def _live_entries(table: TableHandle, snapshot_id: int | None, partitions: Sequence[Mapping[str, str]] | None
                  ) -> Iterator[tuple[bytes, dict[str, Any], Any]]:
    """(partition bytes, partition as {column: value}, entry) of every live file of the snapshot
    in the selected partitions."""
    snap = _snapshot(table, snapshot_id)
    schema = table.schemas.schema(snap.schema_id) if snap is not None else table.schema
    selected: Callable[[tuple], bool] = lambda values: True
    if partitions is not None:
        from core.ops.compact_planning import partition_filter

        selected = partition_filter(schema, partitions)
    if snap is None:
        return
    from core import binary_row
    from core.manifest import live_entries

    fields = schema.partition_fields
    types = [f.type for f in fields]
    decoded: dict[bytes, dict[str, Any] | None] = {}
    for e in live_entries(table.manifests(), snap):
        if e.partition not in decoded:
            values = binary_row.decode(e.partition, types)
            decoded[e.partition] = partition_spec_text(values, fields) if selected(tuple(values)) else None
        spec = decoded[e.partition]
        if spec is not None:
            yield e.partition, spec, e


def _partition_order(partition: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(v) for v in partition.values())
