"""compact: plan per-bucket compaction from the latest snapshot, run the compaction kernel on
an engine, and commit the rewritten files as one COMPACT snapshot.

Full compaction (the default) rewrites every primary-key bucket that is not already one
sorted run at the top level without deletes, and merges the small files of append buckets.
Without ``full`` only primary-key buckets holding more than one sorted run are compacted (a
bucket that is a single file, or already one run, keeps its files); append buckets follow
the same rule either way. Universal compaction's size-ratio picking may refine this later.

The commit DELETEs the input files and ADDs the new ones; it fails with CommitConflictError
if another commit removed an input file in the meantime (an overwrite, another
compaction), and then nothing of this compaction remains referenced.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa

from core import binary_row
from core.commit import CommitMessage, FileStoreCommit
from core.engines import EngineSettings, choose_engine
from core.errors import CommitConflictError, UsageError
from core.fileio import join
from core.kernels.compact import CompactTask, output_level, pick_files
from core.manifest import ManifestEntry, merge_entries, read_entries
from core.partition import partition_path, render_value
from core.schema import TableSchema
from core.snapshot import COMPACT, Snapshot
from core.table import Table
from core.types import DataField, arrow_field

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CompactResult:
    table: str
    snapshot_id: int | None  # None when nothing needed compaction (or dry run)
    buckets_compacted: int
    files_before: int
    files_after: int | None  # None for a dry run: the new files are not known before writing
    bytes_before: int
    bytes_after: int | None
    dry_run: bool


@dataclass(frozen=True, slots=True)
class CompactPlan:
    snapshot: Snapshot | None
    schema: TableSchema
    tasks: tuple[CompactTask, ...]


# ---- partition selection -----------------------------------------------------------------
def _expected_value(text: str, f: DataField, default_name: str) -> Any:
    """The partition value a ``col=text`` spec names, as ``binary_row.decode`` returns it."""
    if text == default_name:
        return None
    try:
        return pa.array([text]).cast(arrow_field(f).type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return text  # compared with the partition's directory text instead


def partition_filter(schema: TableSchema, partitions: Sequence[Mapping[str, str]] | None
                     ) -> Callable[[tuple[Any, ...]], bool]:
    """A test on decoded partition values: does the partition match any of the specs?

    Each spec maps some partition columns to values as text (``{"dt": "2024-01-01"}``); the
    partition-default-name stands for null. A partition matches a spec when every column
    it names has that value (typed) or that text in the partition's directory name.

    Raises:
        UsageError: a spec names a column that is not a partition column, or the table is
            not partitioned.
    """
    if partitions is None:
        return lambda values: True
    fields = schema.partition_fields
    if not fields:
        raise UsageError("--partition was given, but the table is not partitioned")
    index = {f.name: i for i, f in enumerate(fields)}
    default_name = schema.core_options.partition_default_name
    specs: list[list[tuple[int, str, Any]]] = []
    for spec in partitions:
        if not spec:
            raise UsageError("--partition needs at least one COLUMN=VALUE")
        conditions = []
        for name, text in spec.items():
            if name not in index:
                raise UsageError(f"--partition column {name!r} is not a partition column; "
                                 f"partition columns are: {', '.join(index)}")
            f = fields[index[name]]
            conditions.append((index[name], str(text), _expected_value(str(text), f, default_name)))
        specs.append(conditions)

    def matches(values: tuple[Any, ...]) -> bool:
        for conditions in specs:
            if all(values[i] == expected or (values[i] is not None and render_value(values[i], fields[i].type) == text)
                   for i, text, expected in conditions):
                return True
        return False

    return matches


# ---- planning ----------------------------------------------------------------------------
def plan(table: Table, *, full: bool = True, partitions: Sequence[Mapping[str, str]] | None = None) -> CompactPlan:
    """One CompactTask per (partition, bucket) of the latest snapshot that needs compaction."""
    schema = table.schema
    selected = partition_filter(schema, partitions)
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return CompactPlan(None, schema, ())
    level = output_level(schema)
    if schema.has_primary_key and level < 1:
        raise UsageError(f"option num-levels={schema.core_options.num_levels} leaves no level above 0 to compact to")
    entries = merge_entries(read_entries(table.manifests(), [snapshot.base_manifest_list,
                                                             snapshot.delta_manifest_list]))
    part_fields = schema.partition_fields
    part_types = [f.type for f in part_fields]
    default_name = schema.core_options.partition_default_name
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    values_of: dict[bytes, tuple[Any, ...]] = {}
    for e in entries:  # manifest order: files of equal sequence numbers stay in commit order
        if e.partition not in values_of:
            values_of[e.partition] = binary_row.decode(e.partition, part_types)
        if selected(values_of[e.partition]):
            groups.setdefault((e.partition, e.bucket), []).append(e)
    loaded: dict[int, TableSchema] = {schema.id: schema}
    tasks = []
    for (part, bucket), group in groups.items():
        files = pick_files(schema, [e.file for e in group], level, full=full)
        if not files:
            continue
        for f in files:
            if f.schema_id not in loaded:
                loaded[f.schema_id] = table.schemas.schema(f.schema_id)
        needed = {schema.id} | {f.schema_id for f in files}
        tasks.append(CompactTask(
            table_path=table.path, schema=schema, schemas={i: loaded[i] for i in sorted(needed)}, partition=part,
            partition_dir=partition_path(values_of[part], part_fields, default_name), bucket=bucket,
            total_buckets=group[0].total_buckets, files=files, output_level=level))
    return CompactPlan(snapshot, schema, tuple(tasks))


# ---- the operation -----------------------------------------------------------------------
def compact(table: Table, *, full: bool = True, partitions: Sequence[Mapping[str, str]] | None = None,
            dry_run: bool = False, engine: Any = None,
            engine_settings: EngineSettings | None = None) -> CompactResult:
    """Compact the table's buckets (all, or those of ``partitions``) as one COMPACT snapshot.

    Args:
        table: an existing table.
        full: full compaction (every bucket not yet compacted); False compacts only
            primary-key buckets with more than one sorted run.
        partitions: only these partitions, each ``{column: value as text}``; None = all.
        dry_run: plan only; report what would be rewritten, write nothing.
        engine: an engine object with ``compact(tasks, file_io)``; None picks one by data size.
        engine_settings: how to pick the engine when ``engine`` is None.

    Returns:
        What was (or, for a dry run, would be) rewritten; ``snapshot_id`` None if nothing was.

    Raises:
        UsageError: a bad partition spec.
        CommitConflictError: another commit removed input files (or changed the schema)
            before this one landed; nothing was committed.
    """
    compaction = plan(table, full=full, partitions=partitions)
    tasks = list(compaction.tasks)
    bytes_in = sum(f.file_size for t in tasks for f in t.files)
    if dry_run or not tasks:
        return CompactResult(table=table.name, snapshot_id=None, buckets_compacted=len(tasks),
                             files_before=sum(len(t.files) for t in tasks), files_after=None if dry_run else 0,
                             bytes_before=bytes_in, bytes_after=None if dry_run else 0, dry_run=dry_run)
    if engine is None:
        engine, why = choose_engine(engine_settings, data_bytes=bytes_in)
        log.info("engine: %s (%s)", engine.name, why)
    messages: list[CommitMessage] = [m for m in engine.compact(tasks, table.file_io)
                                     if m.compact_before or m.compact_after]
    committer = FileStoreCommit(table.file_io, table.path, compaction.schema)
    try:
        snapshot = committer.commit(messages, kind=COMPACT)
    except CommitConflictError:
        _discard_if_unreferenced(table, committer.commit_user, compaction.snapshot, messages)
        raise
    before = [f for m in messages for f in m.compact_before]
    after = [f for m in messages for f in m.compact_after]
    return CompactResult(
        table=table.name,
        snapshot_id=snapshot.id if snapshot else None,
        buckets_compacted=len(messages),
        files_before=len(before),
        files_after=len(after),
        bytes_before=sum(f.file_size for f in before),
        bytes_after=sum(f.file_size for f in after),
        dry_run=False,
    )


def _discard_if_unreferenced(table: Table, commit_user: str, planned: Snapshot | None,
                             messages: Sequence[CommitMessage]) -> None:
    """After a conflict, delete the files this compaction wrote, unless a snapshot of ours landed.

    A conflict is raised before publishing, but an earlier attempt's publish may have had an
    unknown outcome; if any snapshot since the plan carries our commit user, keep everything.
    """
    latest = table.snapshots.latest_id() or 0
    for sid in range((planned.id if planned else 0) + 1, latest + 1):
        if table.snapshots.exists(sid) and table.snapshots.snapshot(sid).commit_user == commit_user:
            return
    for m in messages:
        if not m.compact_after:
            continue
        task_dir = _bucket_dir(table, m)
        for f in m.compact_after:
            table.file_io.delete_quietly(f.external_path or join(task_dir, f.file_name))


def _bucket_dir(table: Table, m: CommitMessage) -> str:
    schema = table.schema
    fields = schema.partition_fields
    values = binary_row.decode(m.partition, [f.type for f in fields])
    return join(table.path, partition_path(values, fields, schema.core_options.partition_default_name),
                f"bucket-{m.bucket}")
