"""Compaction kernel: rewrite the files of one (partition, bucket) -> CommitMessage.

Pure function of a small picklable ``CompactTask`` (``core.kernels.compact_plan``, with the
picking of what to compact) and a FileIO, so the local engine runs it in-process and the
Spark engine on executors, with the same files as the result.

Primary-key buckets (full compaction): every live file is read in the latest schema (old
files mapped by field id), rows are merged by key with the table's merge engine, and keys
whose merged record is -U/-D are dropped: the output sits at the top level
(``num-levels - 1``), below which nothing older can exist, so there is nothing left for a
delete to hide. Survivors keep their ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``; the output is
one sorted run (files with disjoint key ranges, no delete rows), which Paimon readers,
pypaimon included, may read without merging.

With ``changelog-producer=full-compaction`` a compaction that writes the top level also
writes changelog files: the new top level compared with the old one (``core.kernels.changelog``).

Append buckets: Java's full compaction of bucketed append files. In sequence order, leading
files that are already full-size stay; the rest are concatenated, rows and order kept, and
rewritten into files of about target-file-size (level 0, where Paimon keeps append files),
if that merges at least two files and small files outnumber big ones.

A bucket that needs nothing (already one sorted run at the top level without deletes, or no
small append files to merge) gives an empty CommitMessage, so compaction is idempotent.

Universal compaction (``compact_plan.pick_universal``, Paimon's UniversalCompaction rules)
hands this kernel the runs it picked (``CompactTask.picked``), rewritten as given.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from core import row_tracking
from core.commit import CommitMessage
from core.deletion_vectors import (bitmap_class, deleted_mask, read_index_file, read_vector, write_index_file,
                                   writes_bitmap64)
from core.errors import CorruptMetadataError
from core.fileio import FileIO, join
from core.kernels import stream_merge
from core.kernels.changelog import changes, tagged_sort
from core.kernels.compact_plan import CompactTask, in_sequence_order, pick_files
from core.kernels.data_file import partition_columns, read_file, read_file_parts
from core.kernels.merge import MergeEngine
from core.kernels.read import run_files
from core.kernels.records import SEQUENCE_NUMBER, alive
from core.kernels.rolling_writer import write_files_streamed
from core.kernels.sort_order import sort_indices
from core.kernels.write import external_provider, write_file, write_files
from core.manifest import FILE_SOURCE_COMPACT, DataFileMeta
from core.schema import TableSchema


def compact_bucket(task: CompactTask, file_io: FileIO) -> CommitMessage:
    """Rewrite one bucket's files; ``compact_before`` = the inputs, ``compact_after`` = the new files.

    Raises:
        CorruptMetadataError: a data file is missing or unreadable, or its schema is unknown.
    """
    if task.lookup:
        return lookup_compact_bucket(task, file_io)
    if task.order is not None:
        return _sort_bucket(task, file_io)
    if task.data_evolution:
        return _compact_data_evolution(task, file_io)
    schema = task.schema
    empty = CommitMessage(task.partition, task.bucket, task.total_buckets)
    files = in_sequence_order(task.files) if task.picked else pick_files(schema, task.files, task.output_level)
    if not files:
        return empty
    if not schema.has_primary_key and row_tracking.enabled(schema):
        return _compact_keeping_row_ids(task, files, file_io)
    changelog: list[DataFileMeta] = []
    if schema.has_primary_key and not _writes_changelog(task, files):
        # Streamed end to end: merged chunks go straight to a rolling writer, so the bucket's
        # rows are never held at once (one sorted run out, the same files as before).
        chunks = _streamed_chunks(task, files, file_io, MergeEngine.of(schema), task.drop_deletes)
        after = write_files_streamed(chunks, schema, task.bucket_dir, file_io, level=task.output_level,
                                     file_source=FILE_SOURCE_COMPACT)
        return CommitMessage(task.partition, task.bucket, task.total_buckets,
                             compact_before=files, compact_after=tuple(after))
    if schema.has_primary_key:
        rows, log = _merged_rows(task, files, file_io, drop_deletes=task.drop_deletes)
        if log is not None and log.num_rows:
            # lookup's at the output level, as Java's lookup rewriter writes it
            level = task.output_level if schema.core_options.changelog_producer == "lookup" else 0
            changelog = write_files(log, schema, task.bucket_dir, file_io, level=level,
                                    prefix=schema.core_options.changelog_file_prefix)
    else:
        rows = _concatenated_rows(task, files, file_io)
    after = write_files(rows, schema, task.bucket_dir, file_io, level=task.output_level,
                        file_source=FILE_SOURCE_COMPACT, measure_size=True)
    return CommitMessage(task.partition, task.bucket, task.total_buckets,
                         compact_before=files, compact_after=tuple(after), changelog_files=tuple(changelog))


def _sort_bucket(task: CompactTask, file_io: FileIO) -> CommitMessage:
    """Sort compaction of an append bucket: every file's rows (deletion vectors applied) in the
    task's order, rewritten into files of about target-file-size. Each row keeps its sequence
    number; the new files' ranges cover the inputs'."""
    strategy, columns = task.order
    files = in_sequence_order(task.files)
    if not files:
        return CommitMessage(task.partition, task.bucket, task.total_buckets)
    rows = _concatenated_rows(task, files, file_io)
    rows = rows.take(sort_indices(rows, columns, strategy))
    after = write_files(rows, task.schema, task.bucket_dir, file_io, level=task.output_level,
                        file_source=FILE_SOURCE_COMPACT, measure_size=True)
    return CommitMessage(task.partition, task.bucket, task.total_buckets,
                         compact_before=files, compact_after=tuple(after))


def _compact_keeping_row_ids(task: CompactTask, files: Sequence[DataFileMeta], file_io: FileIO) -> CommitMessage:
    """Row-tracking append bucket: each run of files with consecutive row ids is concatenated
    in row-id order and its new files take the run's ids, so every row keeps its _ROW_ID.
    Files with a deletion vector are left alone (their deleted rows would shift the ids)."""
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    for run in row_tracking.contiguous_runs(files, lambda f: task.deletion(f) is None):
        if len(run) < 2:
            continue
        written = write_files(_concatenated_rows(task, run, file_io), task.schema, task.bucket_dir, file_io,
                              level=task.output_level, file_source=FILE_SOURCE_COMPACT, measure_size=True)
        before += run
        after += row_tracking.number_on(written, run[0].first_row_id)
    return CommitMessage(task.partition, task.bucket, task.total_buckets,
                         compact_before=tuple(before), compact_after=tuple(after))


def _compact_data_evolution(task: CompactTask, file_io: FileIO) -> CommitMessage:
    """Data-evolution bin (``compact_plan.data_evolution_bins``), as Paimon 2.1's normal
    data-evolution compaction task: the bin's row-id ranges read merged (each column from the
    newest file holding it) in the latest schema, written as one file of whole rows that
    starts at the bin's first row id, so every row keeps its _ROW_ID, with the inputs' range
    of sequence numbers (it stays the newest file of its rows)."""
    from core.kernels.data_evolution import read_merged

    files = sorted(task.files, key=lambda f: f.first_row_id)
    rows = read_merged(files, task.bucket_dir, task.schema, task.schemas, file_io,
                       has_deletions=False, changes=False)
    lowest = min(f.min_sequence_number for f in files)
    highest = max(f.max_sequence_number for f in files)
    seq = pa.array(np.full(rows.num_rows, highest, dtype=np.int64), pa.int64())
    rows = rows.append_column(SEQUENCE_NUMBER, seq)
    # One file however large, as Paimon's task writes: a second file would need its own
    # first row id, and Paimon's reader expects the bin's range in one file.
    written = write_file(rows, task.schema, task.bucket_dir, file_io,
                         f"{task.schema.core_options.data_file_prefix}{uuid.uuid4()}-0."
                         f"{task.schema.core_options.file_format}",
                         primary_key=False, level=0, file_source=FILE_SOURCE_COMPACT,
                         external=external_provider(task.schema, task.bucket_dir, file_io))
    after = dataclasses.replace(written, first_row_id=files[0].first_row_id, min_sequence_number=lowest,
                                max_sequence_number=highest)
    return CommitMessage(task.partition, task.bucket, task.total_buckets,
                         compact_before=tuple(files), compact_after=(after,))


_POSITION = "__lakectl_position"


def lookup_level0(files: Sequence[DataFileMeta], top: int) -> tuple[list[DataFileMeta], list[DataFileMeta], int]:
    """Java's forced level-0 pick of a deletion-vector bucket: (files to rewrite, files that
    stay, output level). The level-0 files, and with them every run up to the first level that
    leaves a free level above it; the output goes right above the first run that stays, or to
    the top level when none stays."""
    picked = [f for f in files if f.level == 0]
    rest = [f for f in files if f.level > 0]
    levels = sorted({f.level for f in rest})
    while levels and levels[0] - 1 < 1:
        picked += [f for f in rest if f.level == levels[0]]
        rest = [f for f in rest if f.level != levels[0]]
        levels.pop(0)
    return picked, rest, (levels[0] - 1 if levels else top)


def lookup_compact_bucket(task: CompactTask, file_io: FileIO) -> CommitMessage:
    """Java's lookup compaction: the bucket's level-0 files (and runs without a free level
    above them) are merged into new files at a higher level, and every key they hold is
    looked up in the files that stay. With ``changelog-producer=lookup`` the changelog of the
    level-0 records against that older state is written here, at the output level, as
    Java's lookup compaction writes it.

    With deletion vectors the older record found joins the merge (so partial-update and
    aggregation fold onto it) and its row is marked deleted in that file's vector instead of
    rewriting the file; deletes are dropped from the output (nothing visible can hide below
    it); the bucket's index file is replaced by one holding the vectors of the files that
    stay. Without them the older records stay below as old versions; the output folds them
    in all the same, as Java's does (its readers then take the newest record above level 0:
    ``MergeEngine.newest_upper_only``), and keeps deletes while files stay below."""
    schema = task.schema
    empty = CommitMessage(task.partition, task.bucket, task.total_buckets)
    files = in_sequence_order(task.files)
    if not any(f.level == 0 for f in files):
        return empty
    dv = schema.core_options.deletion_vectors_enabled
    picked, rest, level = lookup_level0(files, schema.core_options.num_levels - 1)
    engine = MergeEngine.of(schema)
    keys = schema.trimmed_primary_keys
    new_parts = [engine.drop_ignored(_read(task, m, file_io, system_columns=True)) for m in picked]
    new = pa.concat_tables(new_parts)
    producing = schema.core_options.changelog_producer == "lookup" and task.changelog
    old, hits = _older_records(task, rest, new, keys, file_io)
    # The state before: what the files that stay hold for these keys, and the picked runs
    # above level 0; the level-0 records are what changed.
    upper = [i for i, m in enumerate(picked) if m.level > 0]
    if upper:
        old = pa.concat_tables([old, *(new_parts[i] for i in upper)])
        new = pa.concat_tables([new_parts[i] for i, m in enumerate(picked) if m.level == 0])
    rows, is_old = tagged_sort(old, new, engine)
    # Each key's output holds the older record folded in (Java's lookup rewriter writes it so,
    # and its readers then take only the newest record above level 0). Without vectors the
    # older records stay below: deletes are kept while files stay below to hide them.
    merged = engine.merge(rows)
    merged = alive(merged) if dv or not rest else merged
    after = write_files(merged, schema, task.bucket_dir, file_io, level=level, file_source=FILE_SOURCE_COMPACT,
                        measure_size=True)
    changelog: list[DataFileMeta] = []
    if producing:
        log = changes(rows, is_old, engine, row_deduplicate=schema.core_options.changelog_row_deduplicate)
        if log.num_rows:
            changelog = write_files(log, schema, task.bucket_dir, file_io, level=level,
                                    prefix=schema.core_options.changelog_file_prefix)
    if not dv:
        return CommitMessage(task.partition, task.bucket, task.total_buckets, compact_before=tuple(picked),
                             compact_after=tuple(after), changelog_files=tuple(changelog))
    staying = {f.file_name for f in rest}
    bitmap = bitmap_class()
    vectors: dict[str, Any] = {}
    if task.index_file is not None:
        vectors = {n: b for n, b in read_index_file(file_io, task.table_path, task.index_file).items()
                   if n in staying}
    for name, positions in hits.items():
        vectors[name] = vectors.get(name, bitmap()) | bitmap(positions.astype(np.uint32))
    new_index = write_index_file(file_io, task.table_path, vectors, bitmap64=writes_bitmap64(schema.options)) \
        if any(len(b) for b in vectors.values()) else None
    return CommitMessage(task.partition, task.bucket, task.total_buckets, compact_before=tuple(picked),
                         compact_after=tuple(after), changelog_files=tuple(changelog),
                         new_index_files=(new_index,) if new_index is not None else (),
                         deleted_index_files=(task.index_file,) if task.index_file is not None else ())


def _older_records(task: CompactTask, rest: Sequence[DataFileMeta], new: pa.Table, keys: Sequence[str],
                   file_io: FileIO) -> tuple[pa.Table, dict[str, np.ndarray]]:
    """The records the files that stay hold for the keys of ``new`` (their deleted rows
    left out), and per file the positions of those rows."""
    wanted = new.select(keys).group_by(keys).aggregate([])
    old_parts, hits = [], {}
    for meta in rest:
        records = _read(task, meta, file_io, system_columns=True, apply_deletion=False)
        records = records.append_column(_POSITION, pa.array(np.arange(records.num_rows, dtype=np.int64)))
        deletion = task.deletion(meta)
        if deletion is not None:
            records = records.filter(pa.array(~deleted_mask(read_vector(file_io, deletion), records.num_rows)))
        found = records.join(wanted, keys, join_type="left semi")
        if found.num_rows:
            hits[meta.file_name] = found.column(_POSITION).to_numpy()
            old_parts.append(found.drop_columns([_POSITION]).select(new.column_names))
    old = pa.concat_tables([p.cast(new.schema) for p in old_parts]) if old_parts else new.slice(0, 0)
    return old, hits


def _located(task: CompactTask, meta: DataFileMeta) -> tuple[str, TableSchema]:
    """Where a file of the task is, and the schema it was written with."""
    file_schema = task.schemas.get(meta.schema_id)
    if file_schema is None:
        raise CorruptMetadataError(f"data file {meta.file_name} was written with schema {meta.schema_id}, "
                                   "which the compaction task does not carry")
    return meta.external_path or join(task.bucket_dir, meta.file_name), file_schema


def _read(task: CompactTask, meta: DataFileMeta, file_io: FileIO, *, system_columns: bool,
          apply_deletion: bool = True) -> pa.Table:
    path, file_schema = _located(task, meta)
    records = read_file(path, meta, file_schema, list(task.schema.fields), file_io, system_columns=system_columns,
                        deletion=task.deletion(meta) if apply_deletion else None,
                        partition=partition_columns(task.schema, task.partition))
    return _leveller(task)(records, meta.level) if system_columns else records


def _leveller(task: CompactTask) -> Callable[[pa.Table, int], pa.Table]:
    """Tags records with their file's level where the merge needs it (``MergeEngine.newest_upper_only``)."""
    if not task.schema.has_primary_key:
        return lambda records, level: records
    return MergeEngine.of(task.schema).with_level


def _read_parts(task: CompactTask, meta: DataFileMeta, file_io: FileIO) -> Iterator[pa.Table]:
    """``_read`` (system columns, deletion vector applied) a few row groups at a time."""
    path, file_schema = _located(task, meta)
    tag = _leveller(task)  # once per file, not per part
    for records in read_file_parts(path, meta, file_schema, list(task.schema.fields), file_io,
                                   part_rows=stream_merge.BATCH_ROWS, system_columns=True, deletion=task.deletion(meta),
                                   partition=partition_columns(task.schema, task.partition)):
        yield tag(records, meta.level)


def _merged_rows(task: CompactTask, files: Sequence[DataFileMeta], file_io: FileIO, *,
                 drop_deletes: bool = True) -> tuple[pa.Table, pa.Table | None]:
    """The merged record of each key, sorted by key; -U/-D results are dropped only with
    ``drop_deletes`` (they must keep hiding older versions below).

    Also returns the changelog the compaction writes (else None): with ``full-compaction``
    when it writes the top level, the new top level against the old one; with ``lookup``
    when it rewrites level-0 files, their records against the levels above, as Java's lookup
    rewriter does in any compaction that takes level 0.
    """
    schema = task.schema
    engine = MergeEngine.of(schema)
    top = schema.core_options.num_levels - 1
    if not _writes_changelog(task, files):
        return _streamed_merge(task, files, file_io, engine, drop_deletes), None
    full_changelog = schema.core_options.changelog_producer == "full-compaction"
    old_parts, new_parts = [], []
    for meta in files:
        part = engine.drop_ignored(_read(task, meta, file_io, system_columns=True))
        older = meta.level == top if full_changelog else meta.level > 0
        (old_parts if older else new_parts).append(part)
    empty = (old_parts or new_parts)[0].slice(0, 0)
    old = pa.concat_tables(old_parts) if old_parts else empty
    new = pa.concat_tables(new_parts) if new_parts else empty
    rows, is_old = tagged_sort(old, new, engine)
    merged = engine.merge(rows)
    log = changes(rows, is_old, engine, row_deduplicate=schema.core_options.changelog_row_deduplicate)
    return (alive(merged) if drop_deletes else merged), log


def _streamed_merge(task: CompactTask, files: Sequence[DataFileMeta], file_io: FileIO, engine: MergeEngine,
                    drop_deletes: bool) -> pa.Table:
    """The merged records of ``files``, merged as streams of their sorted runs (read file by
    file), so the merge itself holds about one batch per run; the result is still one table."""
    chunks = list(_streamed_chunks(task, files, file_io, engine, drop_deletes))
    if not chunks:
        return engine.newest_upper(_read(task, files[0], file_io, system_columns=True).slice(0, 0))
    return pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]


def _writes_changelog(task: CompactTask, files: Sequence[DataFileMeta]) -> bool:
    """Whether this compaction also writes changelog: a full-compaction one (it writes the
    top level), or a lookup one (it rewrites level-0 files)."""
    options = task.schema.core_options
    if options.changelog_producer == "full-compaction":
        return task.output_level == options.num_levels - 1
    return options.changelog_producer == "lookup" and task.changelog and any(f.level == 0 for f in files)


def _streamed_chunks(task: CompactTask, files: Sequence[DataFileMeta], file_io: FileIO, engine: MergeEngine,
                     drop_deletes: bool):
    """The merged records of ``files`` chunk by chunk in key order, each sorted run read file by file."""
    def run_tables(run: list[DataFileMeta]):
        for meta in run:
            yield from _read_parts(task, meta, file_io)

    runs = run_files(files, [f.type for f in task.schema.key_fields])
    yield from stream_merge.merge_runs(engine, [stream_merge.batches(run_tables(r)) for r in runs],
                                       alive_only=drop_deletes)


def _concatenated_rows(task: CompactTask, files: Sequence[DataFileMeta], file_io: FileIO) -> pa.Table:
    """Append rows file after file, each with a sequence number inside its file's range.

    Row ``j`` of a file gets ``min(min_seq + j, max_seq)``: its own number for files written
    one number per row (lakectl, Java), and the file's range for files that carry less
    (pypaimon writes [0, 0]); either way the rewrite keeps the inputs' sequence range.
    """
    parts = []
    for meta in files:
        part = _read(task, meta, file_io, system_columns=False)
        seq = np.minimum(np.arange(part.num_rows, dtype=np.int64) + meta.min_sequence_number,
                         meta.max_sequence_number)
        parts.append(part.append_column(SEQUENCE_NUMBER, pa.array(seq, pa.int64())))
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]
