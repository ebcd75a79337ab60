"""A table's health: the measures that decide its maintenance, from metadata only.

``lakectl health``, ``lakectl maintain``'s plan and its Prometheus metrics all read these
measures, so what the plan acts on is what the operator sees. No data file is read.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from core.table_handle import TableHandle


@dataclass(frozen=True, slots=True)
class Health:
    table: str
    snapshots: int
    files: int
    small_files: int           # live data files below target-file-size * small-file ratio
    bytes: int
    rows: int
    max_sorted_runs: int       # the most sorted runs of any bucket (PK: Paimon's count; append: files)
    sorted_run_trigger: int    # num-sorted-run.compaction-trigger
    target_file_size: int
    deletion_vector_files: int  # data files with a deletion vector
    deletion_vector_ratio: float  # of the live data files
    oldest_snapshot_age_seconds: float | None
    tags: int
    has_primary_key: bool
    manifests: int = 0          # in the latest snapshot's base and delta lists
    manifest_bytes: int = 0
    small_manifests: int = 0    # under manifest.target-file-size: what a commit's merge would fold
    manifest_merge_min_count: int = 30  # manifest.merge-min-count
    file_sizes: tuple[int, ...] = field(default=(), repr=False)  # every live file's size (histograms)
    # postpone-bucket tables: files waiting in bucket-postpone/ for the postpone compaction
    # (counted in ``files``, not in the sorted runs: their rows are in no bucket yet)
    postponed_files: int = 0


# A file under this fraction of target-file-size counts as small: Paimon's append compaction
# picks files below target-file-size, but a file at 70% of it is not worth rewriting.
SMALL_FILE_FRACTION = 0.5


def measure(table: TableHandle, *, now: float | None = None) -> Health:
    """The table's health at its latest snapshot."""
    from core.manifest import live_entries, sorted_runs

    now = time.time() if now is None else now
    schema = table.schema
    opts = schema.core_options
    target = opts.file_size_for(schema.has_primary_key)
    snap = table.latest_snapshot()
    earliest = table.snapshots.earliest_id()
    latest = table.snapshots.latest_id()
    snapshots = 0 if latest is None or earliest is None else latest - earliest + 1
    oldest_age = None
    if earliest is not None and table.snapshots.exists(earliest):
        oldest_age = round(max(0.0, now - table.snapshots.snapshot(earliest).time_millis / 1000), 3)
    entries = live_entries(table.manifests(), snap) if snap is not None else []
    buckets: dict[tuple[bytes, int], list] = defaultdict(list)
    postponed = 0
    for e in entries:
        if e.bucket == -2:
            postponed += 1
            continue
        buckets[(e.partition, e.bucket)].append(e.file)
    if schema.has_primary_key:
        max_runs = max((sorted_runs(fs) for fs in buckets.values()), default=0)
    else:
        max_runs = max((len(fs) for fs in buckets.values()), default=0)
    sizes = tuple(e.file.file_size for e in entries)
    dv_files = _deletion_vector_files(table, snap)
    manifests = _manifests(table, snap)
    return Health(
        table=table.name, snapshots=snapshots, files=len(entries),
        small_files=sum(1 for s in sizes if s < target * SMALL_FILE_FRACTION),
        bytes=sum(sizes), rows=sum(e.file.row_count for e in entries),
        max_sorted_runs=max_runs, sorted_run_trigger=opts.num_sorted_run_compaction_trigger,
        target_file_size=target, deletion_vector_files=dv_files,
        deletion_vector_ratio=dv_files / len(entries) if entries else 0.0,
        oldest_snapshot_age_seconds=oldest_age, tags=len(table.tags.names()),
        has_primary_key=schema.has_primary_key, manifests=len(manifests),
        manifest_bytes=sum(m.file_size for m in manifests),
        small_manifests=sum(1 for m in manifests if m.file_size < opts.manifest_target_file_size),
        manifest_merge_min_count=opts.manifest_merge_min_count, file_sizes=sizes, postponed_files=postponed)


def _manifests(table: TableHandle, snap) -> list:
    if snap is None:
        return []
    mio = table.manifests()
    return [m for name in (snap.base_manifest_list, snap.delta_manifest_list) for m in mio.read_manifest_list(name)]


def _deletion_vector_files(table: TableHandle, snap) -> int:
    if snap is None or not snap.index_manifest:
        return 0
    from core.deletion_vectors import snapshot_deletion_files

    return sum(len(files) for files in snapshot_deletion_files(table.file_io, table.path, snap).values())
