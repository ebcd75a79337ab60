"""Read kernel: one split (the live files of a partition and bucket) -> merged Arrow rows.

Each data file is read in the schema it was written with (``_SCHEMA_ID``) and mapped to the
read schema by field id: renamed columns are found under their old names, added columns
read as null, widened types are cast. Primary-key splits are then merged by the table's
merge engine (``core.kernels.merge``), and keys whose merged record is -U/-D disappear.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from core import binary_row, system_columns
from core.arrow_values import empty_table, int_array, numpy_ints
from core.kernels import data_evolution
from core.kernels.data_file import (POSITION, partition_columns, read_file, read_file_parts, read_rows_at, stored_sequence_numbers,
                                    with_row_tracking)
from core.default_values import fill_defaults
from core.deletion_vectors import CarriesDeletionFiles, DeletionFile
from core.fileio import FileIO, join
from core.kernels.records import KIND_NAMES, SEQUENCE_NUMBER, VALUE_KIND, alive
from core.kernels import stream_merge
from core.manifest import DataFileMeta, sorted_runs
from core.kernels.key_prune import keep_matching_keys, key_condition
from core.predicate import And, Comparison, InList, Predicate
from core.schema import TableSchema
from core.types import arrow_field, to_arrow

if TYPE_CHECKING:
    from core.kernels.merge import MergeEngine  # imported where a split is merged: append reads never are


@dataclass(frozen=True, slots=True)
class ReadSplit(CarriesDeletionFiles):
    """The live files of one (partition, bucket), in commit order."""

    partition: bytes
    bucket: int
    bucket_dir: str
    files: tuple[DataFileMeta, ...]
    # An incremental read: the files' records as they are (no merge), each with its row kind
    # in a leading ``_row_kind`` column (+I, -U, +U, -D).
    changes: bool = False
    # The scan's condition: row groups whose Parquet stats prove no row satisfies it are not
    # read, where that cannot change a key that passes (``_row_group_filter``). The caller
    # still filters the rows exactly.
    predicate: Predicate | None = None
    # Deletion vectors of the files that have one: (data file name, where its vector is).
    deletion_files: tuple[tuple[str, DeletionFile], ...] = ()
    # The read-schema columns the caller uses (None: all). The others are not read from the
    # files and come out null: merge engines fold each column on its own, so they change
    # nothing the caller sees, and a value lakectl cannot hold there stops nothing.
    columns: frozenset[str] | None = None
    # System columns (core.system_columns) of a row-tracking table the rows carry after the
    # read schema's columns, computed per file (``with_row_tracking``).
    system_columns: tuple[str, ...] = ()

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


def read_split(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
               file_io: FileIO, *, defaults: bool = True) -> pa.Table:
    """All rows of a split in the read schema; merged by key for primary-key tables, and with
    the columns' default values filled into their nulls after the merge, as Paimon reads them
    (``defaults=False``: the values as stored, for rewriting them)."""
    if data_evolution.enabled(read_schema):  # files hold column subsets, merged by row id
        rows = data_evolution.read_merged(split.files, split.bucket_dir, read_schema, schemas, file_io,
                                          has_deletions=bool(split.deletion_files), changes=split.changes,
                                          needed=split.columns, system=split.system_columns,
                                          deletion_files=split.deletion_files)
        return fill_defaults(rows, read_schema) if defaults else rows
    if split.changes:
        return read_changes(split, read_schema, schemas, file_io)
    parts = list(read_split_parts(split, read_schema, schemas, file_io, defaults=defaults))
    if not parts:  # defaults still checked, so a bad default fails every read alike
        return fill_defaults(_empty(read_schema), read_schema) if defaults else _empty(read_schema)
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def read_split_parts(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                     file_io: FileIO, *, defaults: bool = True) -> Iterator[pa.Table]:
    """``read_split``'s rows as consecutive parts, in its order, produced as they are read: a
    merged split chunk by chunk as the merge of its runs emits them, other splits a few row
    groups of a file at a time (``read_file_parts``), so a reader that writes each part out
    (``scan --output``) holds a part, not the split. Incremental and data-evolution splits
    come as one part."""
    if data_evolution.enabled(read_schema) or split.changes:
        yield read_split(split, read_schema, schemas, file_io, defaults=defaults)
        return
    for part in _split_parts(split, read_schema, schemas, file_io):
        yield fill_defaults(part, read_schema) if defaults else part


def _empty(read_schema: TableSchema) -> pa.Table:
    return empty_table(pa.schema([arrow_field(f).with_nullable(True) for f in read_schema.fields]))


def _split_parts(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                 file_io: FileIO) -> Iterator[pa.Table]:
    read_fields = list(read_schema.fields)
    primary_key = read_schema.has_primary_key
    if primary_key and (sorted_runs(split.files) == 1 or raw_convertible(split, read_schema)):
        yield from _read_sorted_run(split, read_schema, schemas, file_io)
        return
    row_filter = _row_group_filter(split.predicate, read_schema if primary_key else None)
    if primary_key:
        yield from _read_merged(split, read_schema, schemas, file_io, row_filter)
        return
    tracked = bool(split.system_columns)
    partition = partition_columns(read_schema, split.partition)
    for meta in split.files:
        path = meta.external_path or join(split.bucket_dir, meta.file_name)
        parts = read_file_parts(path, meta, schemas[meta.schema_id], read_fields, file_io,
                                part_rows=stream_merge.BATCH_ROWS, system_columns=primary_key,
                                row_filter=row_filter, deletion=split.deletion(meta),
                                needed=needed_columns(split, read_schema), positions=tracked,
                                partition=partition)
        if not tracked:
            yield from parts
            continue
        stored = (stored_sequence_numbers(path, meta, file_io)
                  if system_columns.SEQUENCE_NUMBER in split.system_columns else None)
        for part in parts:
            positions = part.column(POSITION)
            yield with_row_tracking(part.drop_columns([POSITION]), meta, split.system_columns, positions, stored)


def run_files(files: Sequence[DataFileMeta], key_types: Sequence) -> list[list[DataFileMeta]]:
    """The sorted runs of a bucket, each as its files in key order: every level-0 file is a
    run of its own (they overlap), the files of a level above 0 are one run (disjoint keys)."""
    by_min_key = sorted(files, key=lambda f: binary_row.sort_key(binary_row.decode(f.min_key, key_types)))
    runs = [[f] for f in by_min_key if f.level == 0]
    for level in sorted({f.level for f in files if f.level > 0}):
        runs.append([f for f in by_min_key if f.level == level])
    return runs


def _read_merged(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                 file_io: FileIO, row_filter: Predicate | None) -> Iterator[pa.Table]:
    """A primary-key split of several runs, merged as streams of batches (``stream_merge``):
    a run's files are read a few row groups at a time (``read_file_parts``), so the merge holds
    about one batch per run, not the bucket; its chunks come out as they are merged."""
    read_fields = list(read_schema.fields)
    from core.kernels.merge import MergeEngine

    engine = MergeEngine.of(read_schema)
    # Object stores fetch a file whole in one GET (data_file._read_columns): reading it
    # twice, keys first, would fetch it twice.
    if row_filter is not None and engine.kind in _CHOOSING_ENGINES and names_points(row_filter) \
            and file_io.local:
        yield _read_merged_late(split, read_schema, schemas, file_io, row_filter, engine)
        return
    needed = needed_columns(split, read_schema)
    # A deduplicate merge shows no value of a file of retractions only (a delete's file): its
    # record of a key either wins, and the key is gone, or loses. Its keys are enough.
    keys_only = (needed_columns(replace(split, columns=frozenset()), read_schema)
                 if engine.kind == "deduplicate" else None)

    def run_tables(files: list[DataFileMeta]):
        for meta in files:
            path = meta.external_path or join(split.bucket_dir, meta.file_name)
            columns = keys_only if keys_only is not None and retractions_only(meta) else needed
            for records in read_file_parts(path, meta, schemas[meta.schema_id], read_fields, file_io,
                                           part_rows=stream_merge.BATCH_ROWS, system_columns=True,
                                           row_filter=row_filter, deletion=split.deletion(meta), needed=columns):
                # A key-only condition (row_filter) drops every record of a rejected key before
                # the merge: all records of a key agree on it (key_prune). Deletion vectors applied.
                yield engine.with_level(keep_matching_keys(records, row_filter), meta.level)

    runs = run_files(split.files, [f.type for f in read_schema.key_fields])
    names = [f.name for f in read_fields]
    yield from stream_merge.merge_runs(engine, [stream_merge.batches(run_tables(r)) for r in runs],
                                       alive_only=True, columns=names)


# Merge engines whose merged record of a key is one of its records as it is (the newest):
# which record that is follows from the key, sequence and kind columns alone. (first-row also
# chooses, but its reads see level 0 hidden, rarely merge, and keep the plain path.)
_CHOOSING_ENGINES = ("deduplicate",)
_FILE = "_FILE_INDEX"


def names_points(condition: Predicate) -> bool:
    """Does the key condition hold only at points (``=``, ``IN``) where it must hold at all?
    Then a row group whose stats admit it may still hold none of its keys (a lookup's keys
    fall inside most groups' [min, max] in every partition), and reading the key columns
    first saves decoding the rest of such groups. A key range instead holds throughout each
    group its stats admit: there, reading late would decode those groups twice."""
    if isinstance(condition, And):
        return any(names_points(c) for c in condition.children)
    return isinstance(condition, InList) or (isinstance(condition, Comparison) and condition.op == "=")


def _read_merged_late(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                      file_io: FileIO, row_filter: Predicate, engine: MergeEngine) -> pa.Table:
    """``_read_merged`` with late materialisation, for a key condition naming points
    (``names_points``) and an engine that chooses records: the runs are read and merged in
    the columns the merge compares (key, sequence fields, sequence number, kind) plus each
    record's file and position; only the records that come out alive are then read in full
    (``read_rows_at``: just the row groups holding them). With few keys passing the
    condition, most row groups of the other columns are never decoded, nor are the records
    the merge overrides or deletes."""
    read_fields = list(read_schema.fields)
    # what the merge compares, and what the condition reads (partition columns may be in it)
    narrow = frozenset(engine.keys) | frozenset(engine.sequence_fields) | row_filter.columns
    narrow_names = [f.name for f in read_fields if f.name in narrow]
    files = list(split.files)
    index = {id(meta): i for i, meta in enumerate(files)}

    def run_tables(run: list[DataFileMeta]):
        for meta in run:
            path = meta.external_path or join(split.bucket_dir, meta.file_name)
            for records in read_file_parts(path, meta, schemas[meta.schema_id], read_fields, file_io,
                                           part_rows=stream_merge.BATCH_ROWS, system_columns=True,
                                           row_filter=row_filter, deletion=split.deletion(meta), needed=narrow,
                                           positions=True):
                records = keep_matching_keys(records.select(narrow_names + [SEQUENCE_NUMBER, VALUE_KIND, POSITION]),
                                             row_filter)
                yield records.append_column(_FILE, int_array(np.full(records.num_rows, index[id(meta)], np.int32)))

    runs = run_files(files, [f.type for f in read_schema.key_fields])
    chunks = list(stream_merge.merge_runs(engine, [stream_merge.batches(run_tables(r)) for r in runs],
                                          alive_only=True))
    chunks = [c for c in chunks if c.num_rows]
    if not chunks:
        return empty_table(pa.schema([arrow_field(f).with_nullable(True) for f in read_fields]))
    chosen = pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]
    return _rows_of(chosen, files, split, read_schema, schemas, file_io)


def _rows_of(chosen: pa.Table, files: Sequence[DataFileMeta], split: ReadSplit, read_schema: TableSchema,
             schemas: Mapping[int, TableSchema], file_io: FileIO) -> pa.Table:
    """The full rows of the ``chosen`` records (their ``_FILE`` and ``POSITION``), in their order."""
    file_of = numpy_ints(chosen.column(_FILE))
    position = numpy_ints(chosen.column(POSITION))
    needed = needed_columns(split, read_schema)
    parts, order = [], []
    for i in np.flatnonzero(np.bincount(file_of)):  # the files named (np.unique imports numpy.ma)
        meta = files[int(i)]
        at = np.flatnonzero(file_of == i)
        at = at[np.argsort(position[at], kind="stable")]
        path = meta.external_path or join(split.bucket_dir, meta.file_name)
        parts.append(read_rows_at(path, meta, schemas[meta.schema_id], list(read_schema.fields), file_io,
                                  position[at], needed=needed))
        order.append(at)
    rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    # rows are grouped by file; put them back in merged (key) order
    return rows.take(int_array(np.argsort(np.concatenate(order), kind="stable").astype(np.int64)))


def retractions_only(meta: DataFileMeta) -> bool:
    """Does the file hold -U/-D records only (its manifest's delete row count is its rows)?"""
    return meta.delete_row_count is not None and 0 < meta.row_count == meta.delete_row_count


def _row_group_filter(predicate: Predicate | None, merged: TableSchema | None) -> Predicate | None:
    """The condition row groups may be skipped by before the records are merged (``merged``:
    the schema of a primary-key merge, None when nothing is merged).

    Unmerged rows are final, so any condition will do. Before a merge only a condition on the
    primary key is safe: all records of a key agree on it, so a skipped row group holds no
    record of a key that passes. A value condition could skip a key's newest record and let
    an older one through."""
    if merged is None:
        return predicate
    return key_condition(predicate, list(merged.primary_keys))


def needed_columns(split: ReadSplit, read_schema: TableSchema) -> frozenset[str] | None:
    """The columns to read for ``split``: what the caller uses, plus the key columns merges
    compare and the columns options read (sequence and row-kind fields)."""
    if split.columns is None:
        return None
    options = read_schema.options
    named = [n.strip() for key in ("sequence.field", "rowkind.field") for n in options.get(key, "").split(",")]
    return split.columns | set(read_schema.primary_keys) | set(read_schema.partition_keys) | {n for n in named if n}


def raw_convertible(split: ReadSplit, read_schema: TableSchema) -> bool:
    """Java's rule (MergeTreeSplitGenerator) for reading a primary-key split without merging
    in deletion-vector mode: every file says it has no delete rows (or says nothing). Level 0
    is not read there, and the files left, their deletion vectors applied, hold each key once."""
    return (read_schema.core_options.deletion_vectors_enabled
            and all(f.delete_row_count is None or f.delete_row_count == 0 for f in split.files))


def _read_sorted_run(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                     file_io: FileIO) -> Iterator[pa.Table]:
    """A split that is one sorted run needs no merge (each key once, and a lone record passes
    unmerged); only its -U/-D records are dropped, and files without any skip even that.
    Files are read in key order, so the output is sorted by key like a merged split. Its rows
    are final, so the split's condition may skip row groups whatever columns it reads.
    Deletion-vector splits (``raw_convertible``) are read the same way, each file without the
    rows its vector deletes."""
    read_fields = list(read_schema.fields)
    key_types = [f.type for f in read_schema.key_fields]
    files = sorted(split.files, key=lambda f: binary_row.sort_key(binary_row.decode(f.min_key, key_types)))
    for meta in files:
        path = meta.external_path or join(split.bucket_dir, meta.file_name)
        deletes = meta.delete_row_count is None or meta.delete_row_count > 0
        for part in read_file_parts(path, meta, schemas[meta.schema_id], read_fields, file_io,
                                    part_rows=stream_merge.BATCH_ROWS, system_columns=deletes,
                                    row_filter=split.predicate, deletion=split.deletion(meta),
                                    needed=needed_columns(split, read_schema)):
            yield alive(part).select([f.name for f in read_fields]) if deletes else part


ROW_KIND_COLUMN = "_row_kind"


def changes_schema(read_schema: TableSchema) -> pa.Schema:
    """Columns of an incremental read: ``_row_kind`` and then the table's."""
    return pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), False)]
                     + [arrow_field(f).with_nullable(True) for f in read_schema.fields])


def read_changes(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                 file_io: FileIO) -> pa.Table:
    """The records of a split's (changelog or delta) files in file order, with their row kinds."""
    import pyarrow.compute as pc

    read_fields = list(read_schema.fields)
    primary_key = read_schema.has_primary_key
    parts = []
    for meta in split.files:
        path = meta.external_path or join(split.bucket_dir, meta.file_name)
        part = read_file(path, meta, schemas[meta.schema_id], read_fields, file_io, system_columns=primary_key,
                         partition=partition_columns(read_schema, split.partition))
        if primary_key:
            codes = pc.cast(part.column(VALUE_KIND), pa.int64())
            kinds = pc.take(pa.array([KIND_NAMES[k] for k in sorted(KIND_NAMES)]), codes)
            part = part.drop_columns([SEQUENCE_NUMBER, VALUE_KIND])
        else:
            kinds = pa.array(["+I"] * part.num_rows, pa.string())
        parts.append(part.add_column(0, ROW_KIND_COLUMN, kinds))
    schema = changes_schema(read_schema)
    if not parts:
        return empty_table(schema)
    return fill_defaults(pa.concat_tables(parts).cast(schema), read_schema)


__all__ = ["ROW_KIND_COLUMN", "ReadSplit", "changes_schema", "read_changes", "read_split", "read_split_parts",
           "read_file", "to_arrow"]
