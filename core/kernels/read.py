"""Read kernel: one split (the live files of a partition and bucket) -> merged Arrow rows.

Each data file is read in the schema it was written with (``_SCHEMA_ID``) and mapped to the
read schema by field id: renamed columns are found under their old names, added columns
read as null, widened types are cast. Primary-key splits are then merged by the table's
merge engine (``core.kernels.merge``), and keys whose merged record is -U/-D disappear.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core import binary_row, formats
from core.kernels import data_evolution
from core.arrow_values import boolean_array
from core.default_values import fill_defaults
from core.deletion_vectors import DeletionFile, deleted_mask, read_vector
from core.errors import CorruptMetadataError
from core.fileio import FileIO, join
from core.kernels.records import KIND_NAMES, SEQUENCE_NUMBER, VALUE_KIND, alive
from core.kernels import stream_merge
from core.kernels.merge import MergeEngine
from core.manifest import DataFileMeta, sorted_runs
from core.kernels.key_prune import keep_matching_keys, key_condition
from core.predicate import ColumnRange, Predicate
from core.schema import TableSchema
from core.types import DataField, arrow_field, parse_type, timestamps_from_counts, to_arrow


@dataclass(frozen=True, slots=True)
class ReadSplit:
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

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    def deletion(self, meta: DataFileMeta) -> DeletionFile | None:
        for name, deletion in self.deletion_files:
            if name == meta.file_name:
                return deletion
        return None


def _file_columns(read_fields: Sequence[DataField], file_schema: TableSchema) -> dict[int, DataField]:
    """Read field id -> the field as the file's own schema names and types it."""
    by_id = {f.id: f for f in file_schema.fields}
    return {f.id: by_id[f.id] for f in read_fields if f.id in by_id}


def read_file(path: str, meta: DataFileMeta, file_schema: TableSchema, read_fields: Sequence[DataField],
              file_io: FileIO, *, system_columns: bool, row_filter: Predicate | None = None,
              deletion: DeletionFile | None = None, needed: frozenset[str] | None = None) -> pa.Table:
    """Read one data file and present it in ``read_fields`` (plus seq/kind if asked); with a
    ``row_filter``, only the row groups whose stats may satisfy it; with a ``deletion``
    vector, without the rows it marks deleted; with ``needed``, only those read fields are
    read (the others are null).

    Raises:
        CorruptMetadataError: the file is missing or unreadable, or holds a timestamp outside
            the years a nanosecond column can hold (1677-2262) in a column that is read.
    """
    mapping = _file_columns([f for f in read_fields if needed is None or f.name in needed], file_schema)
    wanted = [mapping[f.id].name for f in read_fields if f.id in mapping]
    if system_columns:
        wanted += [SEQUENCE_NUMBER, VALUE_KIND]
    try:
        table, group_rows, groups = _read_columns(path, meta, file_io, wanted, row_filter, read_fields, mapping)
        if deletion is not None:
            table = _without_deleted(table, group_rows, groups, read_vector(file_io, deletion))
    except FileNotFoundError as e:
        raise CorruptMetadataError(f"data file {path} listed in a manifest is missing") from e
    except (ValueError, OSError) as e:  # pa.ArrowInvalid is a ValueError
        raise CorruptMetadataError(f"cannot read data file {path}: {e}") from e
    columns, fields = [], []
    for f in read_fields:
        target = arrow_field(f)
        if f.id in mapping:
            col = table.column(mapping[f.id].name)
            if col.type != target.type:
                counted = timestamps_from_counts(col.type, target.type)
                if counted != col.type:
                    col = col.cast(counted)
                try:
                    col = pc.cast(col, target.type)
                except pa.ArrowInvalid as e:
                    if not pa.types.is_timestamp(target.type):
                        raise
                    raise CorruptMetadataError(_out_of_range(path, f.name, str(e))) from None
        else:
            col = pa.nulls(table.num_rows, target.type)
        columns.append(col)
        fields.append(target.with_nullable(True))
    if system_columns:
        columns += [pc.cast(table.column(SEQUENCE_NUMBER), pa.int64()), pc.cast(table.column(VALUE_KIND), pa.int8())]
        fields += [pa.field(SEQUENCE_NUMBER, pa.int64()), pa.field(VALUE_KIND, pa.int8())]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _out_of_range(path: str, column: str, detail: str) -> str:
    return (f"cannot read column {column} of data file {path}: it holds a timestamp outside 1677-09-21 to "
            f"2262-04-11, which lakectl cannot hold with nanoseconds ({detail.splitlines()[0]}); "
            f"read the other columns with --select")


def _check_int96_range(source: Any, parquet: pq.ParquetFile, table: pa.Table, path: str) -> None:
    """Refuse a read of a Parquet INT96 column holding a value pyarrow wraps into a wrong date."""
    found = formats.int96_out_of_range(source, parquet, table.column_names)
    if found is not None:
        raise CorruptMetadataError(_out_of_range(path, found[0], f"e.g. {found[1]}"))


def _without_deleted(table: pa.Table, group_rows: list[int], groups: list[int] | None, deleted: Any) -> pa.Table:
    """``table`` (all row groups, or ``groups`` of them; ``group_rows`` the rows of each row
    group of the file) minus the rows at deleted positions."""
    if not len(deleted):
        return table
    mask = deleted_mask(deleted, sum(group_rows))
    if groups is not None:
        starts = np.cumsum([0] + group_rows)
        mask = np.concatenate([mask[starts[g]:starts[g + 1]] for g in groups]) if groups else mask[:0]
    # not pa.array(~mask): pyarrow's first conversion of a numpy array imports pandas
    return table.filter(boolean_array(~mask))


def _read_columns(path: str, meta: DataFileMeta, file_io: FileIO, wanted: Sequence[str],
                  row_filter: Predicate | None, read_fields: Sequence[DataField],
                  mapping: Mapping[int, DataField]) -> tuple[pa.Table, list[int], list[int] | None]:
    """The ``wanted`` columns of a data file in the types its format gives them, the rows of
    each of the file's row groups, and the row groups read (None: all). The format is the
    file's extension: ``file.format`` may have changed since the file was written."""
    fmt = formats.format_of(meta.file_name)
    if fmt is None:
        raise ValueError(f"unknown data file format of {meta.file_name} (lakectl reads "
                         f"{', '.join(formats.FORMATS)} files)")
    if file_io.local:
        source: str | io.BytesIO = path
    else:
        # One GET for the whole file: cheaper on object stores than ranged reads of each
        # column chunk.
        with file_io.open_input(path) as fh:
            source = io.BytesIO(fh.read())
    if fmt in ("orc", "avro"):
        types = {mapping[f.id].name: mapping[f.id].type for f in read_fields if f.id in mapping}
        types.update({SEQUENCE_NUMBER: parse_type("BIGINT NOT NULL"), VALUE_KIND: parse_type("TINYINT NOT NULL")})
        columns = {c: types[c] for c in wanted}
        if fmt == "orc":
            table = formats.read_orc(source, columns)
        elif isinstance(source, str):
            with open(source, "rb") as fh:
                table = formats.read_avro(fh, columns)
        else:
            table = formats.read_avro(source, columns)
        return table, [table.num_rows], None
    # Row groups are pruned by their stats in Parquet files only.
    with pq.ParquetFile(source) as parquet:
        metadata = parquet.metadata
        group_rows = [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
        if row_filter is None:
            table, groups = parquet.read(columns=list(wanted)), None
        else:
            groups = matching_row_groups(parquet, row_filter, read_fields, mapping)
            table = parquet.read_row_groups(groups, columns=list(wanted))
        _check_int96_range(source, parquet, table, path)
        return table, group_rows, groups


# Types whose Parquet min/max come back from pyarrow in the form ``ColumnRange`` holds (that of
# ``as_py()``). Floats are left out: Parquet's min/max skip NaN, which ``<>`` matches.
def _prunable(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_binary(t)
            or pa.types.is_fixed_size_binary(t) or pa.types.is_boolean(t) or pa.types.is_date32(t)
            or pa.types.is_decimal(t) or pa.types.is_timestamp(t) or pa.types.is_time(t))


def matching_row_groups(parquet: pq.ParquetFile, row_filter: Predicate, read_fields: Sequence[DataField],
                        mapping: Mapping[int, DataField]) -> list[int]:
    """Indices of the row groups whose column stats may satisfy ``row_filter``.

    Stats are used only for a filtered column whose type in the file is the type it is read
    in (a widened column's old stats would compare in the old type); any other column is
    unknown to the predicate, which then keeps the row group."""
    file_types = parquet.schema_arrow
    metadata = parquet.metadata
    # Top-level primitive columns are the leaves whose path is their name.
    positions = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    columns: dict[str, int] = {}  # read name -> Parquet leaf column index
    for f in read_fields:
        if f.name not in row_filter.columns or f.id not in mapping:
            continue
        name = mapping[f.id].name
        target = to_arrow(f.type)
        if name in positions and file_types.field(name).type == target and _prunable(target):
            columns[f.name] = positions[name]
    if not columns:
        return list(range(metadata.num_row_groups))
    kept = []
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        ranges = {}
        for read_name, index in columns.items():
            st = group.column(index).statistics
            if st is None:
                continue
            nulls = st.null_count if st.has_null_count else None
            lo, hi = (st.min, st.max) if st.has_min_max else (None, None)
            ranges[read_name] = ColumnRange(lo, hi, nulls, group.num_rows)
        if row_filter.may_match(ranges):
            kept.append(g)
    return kept


def read_split(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
               file_io: FileIO, *, defaults: bool = True) -> pa.Table:
    """All rows of a split in the read schema; merged by key for primary-key tables, and with
    the columns' default values filled into their nulls after the merge, as Paimon reads them
    (``defaults=False``: the values as stored, for rewriting them)."""
    if data_evolution.enabled(read_schema):  # files hold column subsets, merged by row id
        rows = data_evolution.read_merged(split.files, split.bucket_dir, read_schema, schemas, file_io,
                                          has_deletions=bool(split.deletion_files), changes=split.changes)
        return fill_defaults(rows, read_schema) if defaults else rows
    if split.changes:
        return read_changes(split, read_schema, schemas, file_io)
    rows = _split_rows(split, read_schema, schemas, file_io)
    return fill_defaults(rows, read_schema) if defaults else rows


def _split_rows(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                file_io: FileIO) -> pa.Table:
    read_fields = list(read_schema.fields)
    primary_key = read_schema.has_primary_key
    if primary_key and (sorted_runs(split.files) == 1 or raw_convertible(split, read_schema)):
        return _read_sorted_run(split, read_schema, schemas, file_io)
    row_filter = _row_group_filter(split.predicate, read_schema if primary_key else None)
    if primary_key:
        return _read_merged(split, read_schema, schemas, file_io, row_filter)
    parts = []
    for meta in split.files:
        path = meta.external_path or join(split.bucket_dir, meta.file_name)
        part = read_file(path, meta, schemas[meta.schema_id], read_fields, file_io,
                         system_columns=primary_key, row_filter=row_filter, deletion=split.deletion(meta),
                         needed=_needed(split, read_schema))
        parts.append(part)
    empty = pa.schema([arrow_field(f).with_nullable(True) for f in read_fields])
    if not parts:
        return empty.empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def run_files(files: Sequence[DataFileMeta], key_types: Sequence) -> list[list[DataFileMeta]]:
    """The sorted runs of a bucket, each as its files in key order: every level-0 file is a
    run of its own (they overlap), the files of a level above 0 are one run (disjoint keys)."""
    by_min_key = sorted(files, key=lambda f: binary_row.sort_key(binary_row.decode(f.min_key, key_types)))
    runs = [[f] for f in by_min_key if f.level == 0]
    for level in sorted({f.level for f in files if f.level > 0}):
        runs.append([f for f in by_min_key if f.level == level])
    return runs


def _read_merged(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                 file_io: FileIO, row_filter: Predicate | None) -> pa.Table:
    """A primary-key split of several runs, merged as streams of batches (``stream_merge``):
    a run's files are read one at a time, so the merge holds about one file and one batch per
    run, not the bucket."""
    read_fields = list(read_schema.fields)
    engine = MergeEngine.of(read_schema)
    needed = _needed(split, read_schema)

    def run_tables(files: list[DataFileMeta]):
        for meta in files:
            path = meta.external_path or join(split.bucket_dir, meta.file_name)
            records = read_file(path, meta, schemas[meta.schema_id], read_fields, file_io, system_columns=True,
                                row_filter=row_filter, deletion=split.deletion(meta), needed=needed)
            # A key-only condition (row_filter) drops every record of a rejected key before the
            # merge: all records of a key agree on it (key_prune). Deletion vectors applied above.
            yield keep_matching_keys(records, row_filter)

    runs = run_files(split.files, [f.type for f in read_schema.key_fields])
    names = [f.name for f in read_fields]
    chunks = [alive(chunk).select(names)
              for chunk in stream_merge.merge_runs(engine, [stream_merge.batches(run_tables(r)) for r in runs])]
    if not chunks:
        return pa.schema([arrow_field(f).with_nullable(True) for f in read_fields]).empty_table()
    return pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]


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


def _needed(split: ReadSplit, read_schema: TableSchema) -> frozenset[str] | None:
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
                     file_io: FileIO) -> pa.Table:
    """A split that is one sorted run needs no merge (each key once, and a lone record passes
    unmerged); only its -U/-D records are dropped, and files without any skip even that.
    Files are read in key order, so the output is sorted by key like a merged split. Its rows
    are final, so the split's condition may skip row groups whatever columns it reads.
    Deletion-vector splits (``raw_convertible``) are read the same way, each file without the
    rows its vector deletes."""
    read_fields = list(read_schema.fields)
    key_types = [f.type for f in read_schema.key_fields]
    files = sorted(split.files, key=lambda f: binary_row.sort_key(binary_row.decode(f.min_key, key_types)))
    parts = []
    for meta in files:
        path = meta.external_path or join(split.bucket_dir, meta.file_name)
        deletes = meta.delete_row_count is None or meta.delete_row_count > 0
        part = read_file(path, meta, schemas[meta.schema_id], read_fields, file_io, system_columns=deletes,
                         row_filter=split.predicate, deletion=split.deletion(meta), needed=_needed(split, read_schema))
        if deletes:
            part = alive(part).select([f.name for f in read_fields])
        parts.append(part)
    if not parts:
        return pa.schema([arrow_field(f).with_nullable(True) for f in read_fields]).empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


ROW_KIND_COLUMN = "_row_kind"


def changes_schema(read_schema: TableSchema) -> pa.Schema:
    """Columns of an incremental read: ``_row_kind`` and then the table's."""
    return pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), False)]
                     + [arrow_field(f).with_nullable(True) for f in read_schema.fields])


def read_changes(split: ReadSplit, read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                 file_io: FileIO) -> pa.Table:
    """The records of a split's (changelog or delta) files in file order, with their row kinds."""
    read_fields = list(read_schema.fields)
    primary_key = read_schema.has_primary_key
    parts = []
    for meta in split.files:
        path = meta.external_path or join(split.bucket_dir, meta.file_name)
        part = read_file(path, meta, schemas[meta.schema_id], read_fields, file_io, system_columns=primary_key)
        if primary_key:
            codes = pc.cast(part.column(VALUE_KIND), pa.int64())
            kinds = pc.take(pa.array([KIND_NAMES[k] for k in sorted(KIND_NAMES)]), codes)
            part = part.drop_columns([SEQUENCE_NUMBER, VALUE_KIND])
        else:
            kinds = pa.array(["+I"] * part.num_rows, pa.string())
        parts.append(part.add_column(0, ROW_KIND_COLUMN, kinds))
    schema = changes_schema(read_schema)
    if not parts:
        return schema.empty_table()
    return fill_defaults(pa.concat_tables(parts).cast(schema), read_schema)


__all__ = ["ROW_KIND_COLUMN", "ReadSplit", "changes_schema", "read_changes", "read_split", "read_file", "to_arrow"]
