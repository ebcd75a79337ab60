"""The postpone compaction of a postpone-bucket table (``bucket = -2``, ``core.postpone``):
the rows waiting in each partition's ``bucket-postpone/`` are given real buckets and become
visible to batch readers.

Per partition, as Paimon's compaction of such a table does: the bucket count is the one the
partition's real-bucket files already have, else ``postpone.default-bucket-num``, else an
estimate from the partition's rows (``core.postpone.estimated_bucket_num``); the
postponed files are replayed oldest first, their records (row kinds kept, their own sequence
numbers dropped) hashed to buckets with the table's bucket function and written by the write
kernel of a fixed-bucket table of that count, so each bucket's new level-0 file continues the
bucket's sequence numbers and folds its records by the merge engine; readers merge it with the
rows the bucket already holds. One COMPACT snapshot then DELETEs the postponed files read and
ADDs the new ones, through the normal commit: files another writer postpones meanwhile stay
for the next compaction, and a commit that removed a file this one read (another compaction)
makes this one plan again.

The records of one partition are read into memory together (the local engine only).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import pyarrow as pa

from core.commit import CommitMessage, FileStoreCommit, base_entries
from core.errors import CommitConflictError, CorruptMetadataError
from core.fileio import join
from core.manifest import DataFileMeta
from core.postpone import (POSTPONE_BUCKET, binary_row_bytes, check_postpone_supported, default_bucket_num,
                           estimated_bucket_num, partition_bucket_counts, real_bucket_schema, replay_order)
from core.replan import lost_race, replan_on_lost_race
from core.snapshot import COMPACT, Snapshot
from core.table_handle import TableHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PostponedPartition:
    """One partition's postponed files and the bucket count they will be written with."""

    partition: bytes
    values: tuple[Any, ...]
    num_buckets: int | None  # None: a new partition whose count is estimated from its rows
    new_partition: bool  # no real-bucket files yet
    files: tuple[DataFileMeta, ...]  # in replay order


@dataclass(frozen=True, slots=True)
class PostponePlan:
    snapshot: Snapshot | None
    partitions: tuple[PostponedPartition, ...]
    starts: dict[tuple[bytes, int], int]  # (partition, real bucket) -> next sequence number

    @property
    def files(self) -> int:
        return sum(len(p.files) for p in self.partitions)

    @property
    def bytes(self) -> int:
        return sum(f.file_size for p in self.partitions for f in p.files)


@dataclass(frozen=True, slots=True)
class PostponeOutcome:
    snapshot: Snapshot | None
    plan: PostponePlan
    messages: tuple[CommitMessage, ...]


def plan_postponed(table: TableHandle, *, partitions: Sequence[Mapping[str, str]] | None = None) -> PostponePlan:
    """The postponed files of the latest snapshot (of ``partitions``, all if None), per partition."""
    from core.ops.compact_planning import partition_filter

    schema = table.schema
    selected = partition_filter(schema, partitions)
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return PostponePlan(None, (), {})
    try:
        entries = base_entries(table.manifests(), snapshot, table.snapshots)
    except CorruptMetadataError as e:
        raise lost_race(table.snapshots, snapshot, e) or e
    counts = partition_bucket_counts(entries)
    starts: dict[tuple[bytes, int], int] = {}
    waiting: dict[bytes, list[DataFileMeta]] = {}
    for e in entries:
        if e.bucket == POSTPONE_BUCKET:
            waiting.setdefault(e.partition, []).append(e.file)
        else:
            key = (e.partition, e.bucket)
            starts[key] = max(starts.get(key, 0), e.file.max_sequence_number + 1)
    default = default_bucket_num(schema.options) if waiting else None
    out = []
    for part, files in waiting.items():
        values = schema.partition_values(part)
        if not selected(values):
            continue
        out.append(PostponedPartition(part, values, counts.get(part, default), part not in counts,
                                      tuple(replay_order(files))))
    return PostponePlan(snapshot, tuple(out), starts)


def _records(table: TableHandle, part: PostponedPartition, file_io: Any) -> pa.Table:
    """A partition's postponed records in replay order: the table's columns and ``_VALUE_KIND``."""
    from core.kernels.data_file import read_file
    from core.kernels.records import SEQUENCE_NUMBER

    schema = table.schema
    directory = schema.bucket_dir(table.path, part.partition, POSTPONE_BUCKET)
    schemas = {schema.id: schema}
    tables = []
    for f in part.files:
        if f.schema_id not in schemas:
            schemas[f.schema_id] = table.schemas.schema(f.schema_id)
        rows = read_file(f.external_path or join(directory, f.file_name), f, schemas[f.schema_id],
                         list(schema.fields), file_io, system_columns=True)
        tables.append(rows.drop_columns([SEQUENCE_NUMBER]))
    return pa.concat_tables(tables)


def _write_partition(table: TableHandle, plan: PostponePlan, part: PostponedPartition) -> list[CommitMessage]:
    """The messages that move one partition's postponed rows into its real buckets."""
    from core.kernels.write import WriteJob, write_bucket
    from core.rows import group_rows

    rows = _records(table, part, table.file_io)
    num_buckets = part.num_buckets
    if num_buckets is None:
        schema = table.schema
        num_buckets = estimated_bucket_num(schema.options, rows.num_rows, binary_row_bytes(rows, schema.fields))
    real = real_bucket_schema(table.schema, num_buckets)
    job = WriteJob(table.path, real, None, plan.starts)
    messages = []
    for values, bucket, group in group_rows(rows, real):
        written = write_bucket(job.task_at(part.partition, bucket, part.values), group, table.file_io)
        # The rows land through a compaction: the new files are its output (Java's postpone
        # compactor turns its writers' new files into compaction results the same way).
        messages.append(replace(written, new_files=(), compact_after=written.new_files))
    messages.append(CommitMessage(part.partition, POSTPONE_BUCKET, POSTPONE_BUCKET, compact_before=part.files))
    return messages


def compact_postponed(table: TableHandle, *, partitions: Sequence[Mapping[str, str]] | None = None,
                      dry_run: bool = False) -> PostponeOutcome:
    """Move the postponed rows into real buckets as one COMPACT snapshot (see the module).

    Raises:
        UsageError: a bad partition spec, a bad ``postpone.default-bucket-num``, or a table
            option lakectl does not compact postpone tables with (``check_postpone_supported``).
        StalePlanError: another compaction took the postponed files first, every time it planned.
    """
    check_postpone_supported(table.schema, table.name)

    def once() -> PostponeOutcome:
        plan = plan_postponed(table, partitions=partitions)
        if dry_run or not plan.partitions:
            return PostponeOutcome(None, plan, ())
        messages: list[CommitMessage] = []
        try:
            for part in plan.partitions:
                messages.extend(_write_partition(table, plan, part))
        except CorruptMetadataError as e:  # a postponed file gone: damage, or its snapshot expired meanwhile
            _delete_outputs(table, messages)
            raise lost_race(table.snapshots, plan.snapshot, e) or e
        committer = FileStoreCommit(table.file_io, table.path, table.schema, branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit())
        try:
            snapshot = committer.commit(messages, kind=COMPACT)
        except CommitConflictError:
            _discard_if_unreferenced(table, committer.commit_user, plan.snapshot, messages)
            raise
        log.info("postpone compaction of %s: %d files of %d partitions -> snapshot %s", table.name, plan.files,
                 len(plan.partitions), snapshot.id if snapshot else None)
        return PostponeOutcome(snapshot, plan, tuple(messages))

    return replan_on_lost_race(table.schema.core_options.commit_max_retries, once, "postpone compaction",
                               stale_plans=True)


def _discard_if_unreferenced(table: TableHandle, commit_user: str, planned: Snapshot | None,
                             messages: Sequence[CommitMessage]) -> None:
    """After a conflict, delete the files written, unless a snapshot of ours landed (an earlier
    attempt's publish of unknown outcome): then they may be referenced, and stay."""
    latest = table.snapshots.latest_id() or 0
    for sid in range((planned.id if planned else 0) + 1, latest + 1):
        if table.snapshots.exists(sid) and table.snapshots.snapshot(sid).commit_user == commit_user:
            return
    _delete_outputs(table, messages)


def _delete_outputs(table: TableHandle, messages: Sequence[CommitMessage]) -> None:
    for m in messages:
        directory = table.schema.bucket_dir(table.path, m.partition, m.bucket)
        for f in m.compact_after:
            table.file_io.delete_quietly(f.external_path or join(directory, f.file_name))
