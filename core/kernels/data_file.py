"""One data file read in the schema it was written with (``_SCHEMA_ID``) and mapped to the
read schema by field id: renamed columns are found under their old names, added columns read
as null, widened types are cast; rows a deletion vector removes are dropped, and row groups
whose statistics cannot match a filter are skipped. The read kernel and the data-evolution
merge both read files through here.
"""

from __future__ import annotations

import functools
import io
import os
import threading
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
# The reader itself, not pyarrow.parquet, whose import (with pyarrow.fs: ~0.01 s) a read of
# Parquet files through ParquetReader does without.
from pyarrow._parquet import ParquetReader

from core import formats
from core.arrow_values import boolean_array, int_array, numpy_ints
from core.deletion_vectors import DeletionFile, deleted_mask, read_vector
from core.errors import CorruptMetadataError
from core.fileio import FileIO, local_path
from core.kernels.records import SEQUENCE_NUMBER, VALUE_KIND
from core.manifest import DataFileMeta
from core.schema import TableSchema
from core.system_columns import ROW_ID
from core.types import DataField, arrow_field, parse_type, timestamps_from_counts, to_arrow

if TYPE_CHECKING:
    import pyarrow.parquet as pq

    from core.predicate import Predicate


@dataclass(frozen=True)
class _Plan:
    """How the files of one schema are read in a read schema: which of their columns, and
    where each read column comes from (its name in the file; None: not there, read as null)."""

    mapping: Mapping[int, DataField]  # read field id -> the field as the file names and types it
    wanted: tuple[str, ...]  # the file's columns to read
    sources: tuple[str | None, ...]  # per read field
    targets: tuple[pa.Field, ...]  # per output column (read fields, then system and position columns)
    schema: pa.Schema


# Every file of a read is mapped the same way when it has the same schema: the plan is built
# once per (file fields, read fields, options), rather than per file. The key is the fields
# themselves, not a schema id, so files of another table or schema never share a plan.
@functools.lru_cache(maxsize=256)
def _plan(file_fields: tuple[DataField, ...], read_fields: tuple[DataField, ...], needed: frozenset[str] | None,
          system_columns: bool, positions: bool) -> _Plan:
    by_id = {f.id: f for f in file_fields}
    mapping = {f.id: by_id[f.id] for f in read_fields if f.id in by_id and (needed is None or f.name in needed)}
    wanted = [mapping[f.id].name for f in read_fields if f.id in mapping]
    targets = [arrow_field(f).with_nullable(True) for f in read_fields]
    if system_columns:
        wanted += [SEQUENCE_NUMBER, VALUE_KIND]
        targets += [pa.field(SEQUENCE_NUMBER, pa.int64()), pa.field(VALUE_KIND, pa.int8())]
    if positions:
        targets.append(pa.field(POSITION, pa.int64()))
    sources = tuple(mapping[f.id].name if f.id in mapping else None for f in read_fields)
    return _Plan(mapping, tuple(wanted), sources, tuple(targets), pa.schema(targets))


# A column ``read_file(positions=True)`` adds: each row's position in its file (0-based, counting
# every row of the file, deleted or not), the address ``read_rows_at`` reads a row back by.
POSITION = "_ROW_POSITION"


def read_file(path: str, meta: DataFileMeta, file_schema: TableSchema, read_fields: Sequence[DataField],
              file_io: FileIO, *, system_columns: bool, row_filter: Predicate | None = None,
              deletion: DeletionFile | None = None, needed: frozenset[str] | None = None,
              only_groups: Sequence[int] | None = None, positions: bool = False,
              partition: Mapping[str, Any] | None = None) -> pa.Table:
    """Read one data file and present it in ``read_fields`` (plus seq/kind if asked); with a
    ``row_filter``, only the row groups whose stats may satisfy it; with a ``deletion``
    vector, without the rows it marks deleted; with ``needed``, only those read fields are
    read (the others are null); with ``only_groups``, only those row groups of a Parquet
    file (``read_file_parts``); with ``positions``, a last ``POSITION`` column; with
    ``partition`` (column -> value of the file's partition), a partition column the file does
    not hold is that value in every row: files migrated from a Hive layout keep their partition
    values in directory names only, and Paimon's readers (Java's ``PartitionInfo``, pypaimon's)
    fill such columns from the partition.

    Raises:
        CorruptMetadataError: the file is missing or unreadable, or holds a timestamp outside
            the years a nanosecond column can hold (1677-2262) in a column that is read.
    """
    plan = _plan(file_schema.fields, tuple(read_fields), needed, system_columns, positions)
    try:
        table, group_rows, groups = _read_columns(path, meta, file_io, plan.wanted, row_filter, read_fields,
                                                  plan.mapping, only_groups, frozenset(partition or ()))
        if positions:  # before the deletion vector drops rows: positions count every row
            table = table.append_column(POSITION, _positions(group_rows, groups))
        if deletion is not None:
            table = _without_deleted(table, group_rows, groups, read_vector(file_io, deletion))
    except FileNotFoundError as e:
        raise CorruptMetadataError(f"data file {path} listed in a manifest is missing (lakectl check lists every "
                                   "missing file; remove-unexisting-files drops them from the latest snapshot, "
                                   "losing their rows)") from e
    except (ValueError, OSError, pa.ArrowException) as e:  # pa.ArrowInvalid is a ValueError; a bad ORC zstd stream only an ArrowException
        raise CorruptMetadataError(f"cannot read data file {path}: {e}") from e
    columns = [_partition_column(table, target, partition[source])
               if partition and source in partition and source not in table.column_names
               else _column(table, source, target, path) for source, target in zip(plan.sources, plan.targets)]
    if system_columns:
        columns += [_typed(table.column(SEQUENCE_NUMBER), pa.int64()), _typed(table.column(VALUE_KIND), pa.int8())]
    if positions:
        columns.append(table.column(POSITION))
    return pa.Table.from_arrays(columns, schema=plan.schema)


def partition_columns(schema: TableSchema, partition: bytes) -> dict[str, Any] | None:
    """``read_file``'s ``partition``: the partition's value by column, None when unpartitioned."""
    if not schema.partition_keys:
        return None
    return dict(zip(schema.partition_keys, schema.partition_values(partition)))


def _partition_column(table: pa.Table, target: pa.Field, value: Any) -> pa.Array:
    """A partition column the file lacks: its partition's value in every row."""
    return pa.array([value] * table.num_rows, target.type)


def _typed(column: pa.ChunkedArray, arrow_type: pa.DataType) -> pa.ChunkedArray:
    """``column`` in ``arrow_type``: as it is when it has that type already (as files we and
    Java write do), which saves a cast call per column per file (and the import of
    pyarrow.compute, ~0.03 s of a small scan)."""
    if column.type == arrow_type:
        return column
    import pyarrow.compute as pc

    return pc.cast(column, arrow_type)


def _column(table: pa.Table, source: str | None, target: pa.Field, path: str) -> pa.ChunkedArray | pa.Array:
    """The read column ``target`` from the file's column ``source`` (None: nulls), cast to the
    read type where the file holds another (a widened type, timestamps counted in other units)."""
    if source is None:
        return pa.nulls(table.num_rows, target.type)
    col = table.column(source)
    if col.type == target.type:
        return col
    counted = timestamps_from_counts(col.type, target.type)
    if counted != col.type:
        col = col.cast(counted)
    import pyarrow.compute as pc

    try:
        return pc.cast(col, target.type)
    except pa.ArrowInvalid as e:
        if not pa.types.is_timestamp(target.type):
            raise
        raise CorruptMetadataError(_out_of_range(path, target.name, str(e))) from None


def _positions(group_rows: list[int], groups: list[int] | None) -> pa.Array:
    """The file positions of the rows of ``groups`` (None: all row groups), in file order."""
    if groups is None:
        return int_array(np.arange(sum(group_rows), dtype=np.int64))
    rows = np.asarray(group_rows, np.int64)
    chosen = np.asarray(groups, np.int64)
    chosen = chosen[rows[chosen] > 0]  # a group without rows holds no position
    counts = rows[chosen]
    firsts = (np.cumsum(rows) - rows)[chosen]  # the position of each chosen group's first row
    # Each position is the one before it plus 1, except at a group's first row, which steps
    # from the previous group's last row to its own first: the steps, summed in place. One
    # array of the rows' size, not one per intermediate: a lookup's key pass reads ~30k rows
    # of a file, and every fresh array of that size costs its page faults.
    steps = np.ones(int(counts.sum()), np.int64)
    if len(chosen):
        previous_last = np.concatenate(([0], (firsts + counts - 1)[:-1]))
        steps[np.cumsum(counts) - counts] = firsts - previous_last
        np.cumsum(steps, out=steps)
    return int_array(steps)


def read_rows_at(path: str, meta: DataFileMeta, file_schema: TableSchema, read_fields: Sequence[DataField],
                 file_io: FileIO, positions: np.ndarray, *, needed: frozenset[str] | None = None) -> pa.Table:
    """The rows at file ``positions`` (ascending, as ``read_file(positions=True)`` numbers them)
    in ``read_fields``, in that order. Of a Parquet file only the row groups holding them are
    decoded; other formats are read whole. No deletion vector applies: the positions chosen
    are of live rows already.

    Raises:
        CorruptMetadataError: as ``read_file``.
    """
    group_rows = _group_rows(path, meta, file_io)
    if group_rows is None:
        table = read_file(path, meta, file_schema, read_fields, file_io, system_columns=False, needed=needed)
        return table.take(int_array(np.asarray(positions, np.int64)))
    starts = np.cumsum([0] + group_rows)
    group_of = np.searchsorted(starts, positions, side="right") - 1
    # the distinct groups, in order (positions ascend); not np.unique, which imports numpy.ma
    holding = group_of[np.append(True, group_of[1:] != group_of[:-1])] if len(group_of) else group_of
    table = read_file(path, meta, file_schema, read_fields, file_io, system_columns=False, needed=needed,
                      only_groups=[int(g) for g in holding])
    # Position -> index in the table of the groups read: the rows before its group that were
    # read (groups read before it) plus its offset inside the group.
    read_before = np.cumsum([0] + [group_rows[g] for g in holding])[:-1]
    local = read_before[np.searchsorted(holding, group_of)] + (positions - starts[group_of])
    return table.take(int_array(local.astype(np.int64)))


def _out_of_range(path: str, column: str, detail: str) -> str:
    return (f"cannot read column {column} of data file {path}: it holds a timestamp outside 1677-09-21 to "
            f"2262-04-11, which lakectl cannot hold with nanoseconds ({detail.splitlines()[0]}); "
            f"read the other columns with --select")


def _check_int96_range(source: Any, parquet: Any, table: pa.Table, path: str) -> None:
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


@dataclass
class RowGroupCount:
    """Parquet row groups this process's reads looked at and decoded (the others pruned by
    their statistics): what ``scan -v`` reports after a local read. A file read in parts
    counts each part's groups once."""

    considered: int = 0
    read: int = 0
    _lock: threading.Lock = dataclass_field(default_factory=threading.Lock, repr=False)

    def add(self, considered: int, read: int) -> None:
        with self._lock:  # the local engine reads splits on a few threads
            self.considered += considered
            self.read += read

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.considered, self.read


ROW_GROUPS = RowGroupCount()


def _read_columns(path: str, meta: DataFileMeta, file_io: FileIO, wanted: tuple[str, ...],
                  row_filter: Predicate | None, read_fields: Sequence[DataField],
                  mapping: Mapping[int, DataField],
                  only_groups: Sequence[int] | None = None,
                  optional: frozenset[str] = frozenset()) -> tuple[pa.Table, list[int], list[int] | None]:
    """The ``wanted`` columns of a data file in the types its format gives them, the rows of
    each of the file's row groups, and the row groups read (None: all). The format is the
    file's extension: ``file.format`` may have changed since the file was written. Columns
    named in ``optional`` are read only where the file has them (a Parquet footer's leaves
    skip absent names by themselves)."""
    fmt = formats.format_of(meta.file_name)
    if fmt is None:
        raise ValueError(f"unknown data file format of {meta.file_name} (lakectl reads "
                         f"{', '.join(formats.FORMATS)} files)")
    if file_io.local:
        # a plain path: pyarrow's reader opens no URI (an external path may be file:/...)
        source: str | io.BytesIO = local_path(path)
    else:
        # One GET for the whole file: cheaper on object stores than ranged reads of each
        # column chunk.
        with file_io.open_input(path) as fh:
            source = io.BytesIO(fh.read())
    if fmt in ("orc", "avro"):
        types = {mapping[f.id].name: mapping[f.id].type for f in read_fields if f.id in mapping}
        types.update({SEQUENCE_NUMBER: parse_type("BIGINT NOT NULL"), VALUE_KIND: parse_type("TINYINT NOT NULL")})
        if optional and fmt == "orc":
            present = set(formats.orc_column_names(source))
            wanted = tuple(c for c in wanted if c not in optional or c in present)
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
    cached = local_footer(path, file_io)
    reader = _open_parquet(source, cached.metadata if cached is not None else None)
    try:
        footer = cached if cached is not None else Footer(reader.metadata)
        group_rows = footer.group_rows
        indices = footer.leaves(wanted)
        if row_filter is None and only_groups is None:
            table, groups = _decode(reader, None, indices), None
        else:
            groups = list(range(len(group_rows))) if only_groups is None else list(only_groups)
            if row_filter is not None:
                matching = set(matching_row_groups(reader, row_filter, read_fields, mapping))
                groups = [g for g in groups if g in matching]
            table = _decode(reader, groups, indices)
        ROW_GROUPS.add(len(group_rows) if only_groups is None else len(only_groups),
                       len(group_rows) if groups is None else len(groups))
        if footer.int96 and footer.int96 & set(wanted):
            _check_int96_range(source, reader, table, path)
        return table, group_rows, groups
    finally:
        reader.close()


def _open_parquet(source: str | io.BytesIO, footer: pq.FileMetaData | None) -> ParquetReader:
    """A reader of the Parquet file ``source``; with its ``footer`` parsed already, the file is
    not asked for it again. pyarrow's ``ParquetReader`` (in ``pyarrow._parquet``: the reader
    ``pq.ParquetFile`` itself wraps) rather than ``pq.ParquetFile``, which maps every column
    path of the file to its name on each opening (a read here opens dozens of files whose
    leaves are known from the cached footer). No pre-buffering: it coalesces the
    column chunks' reads through pyarrow's I/O threads, which costs more than it saves on a
    local file's few small chunks (measured: 3-5% of a key range's or a lookup's CPU)."""
    reader = ParquetReader()
    reader.open(source, metadata=footer, pre_buffer=False)
    return reader


def _decode(reader: ParquetReader, groups: list[int] | None, indices: list[int]) -> pa.Table:
    """The leaf columns ``indices`` of the row groups ``groups`` (None: all), one thread: the
    reads of a query are many small ones, for which pyarrow's thread pool costs more than it
    saves."""
    if groups is None:
        return reader.read_all(column_indices=indices, use_threads=False)
    return reader.read_row_groups(groups, column_indices=indices, use_threads=False)


def _top_level_leaves(metadata: pq.FileMetaData) -> dict[str, list[int]]:
    """The leaf column indices of each top-level column of a Parquet file (a nested column's
    leaves together). Found from the Arrow schema's fields: a name may hold a dot, so the
    leaves' dotted paths do not say where a top-level column ends. A name the file lacks has
    no leaves, and is left out of a read, as ``pq.ParquetFile.read`` leaves it."""
    by_top: dict[str, list[int]] = {}
    start = 0
    for field in metadata.schema.to_arrow_schema():
        count = _leaf_count(field.type)
        by_top[field.name] = list(range(start, start + count))
        start += count
    return by_top


def _leaf_count(t: pa.DataType) -> int:
    """The Parquet leaf columns an Arrow type is stored in."""
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_count(t.value_type)
    return 1


def _int96_columns(metadata: pq.FileMetaData) -> frozenset[str]:
    """The top-level columns of a Parquet file holding INT96 leaves, at any depth (a legacy
    timestamp a read checks)."""
    return frozenset(formats.int96_columns(metadata.schema))


# Types whose Parquet min/max come back from pyarrow in the form ``ColumnRange`` holds (that of
# ``as_py()``). Floats are left out: Parquet's min/max skip NaN, which ``<>`` matches.
def _prunable(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_binary(t)
            or pa.types.is_fixed_size_binary(t) or pa.types.is_boolean(t) or pa.types.is_date32(t)
            or pa.types.is_decimal(t) or pa.types.is_timestamp(t) or pa.types.is_time(t))


def matching_row_groups(parquet: pq.ParquetFile | ParquetReader, row_filter: Predicate,
                        read_fields: Sequence[DataField], mapping: Mapping[int, DataField]) -> list[int]:
    """Indices of the row groups whose column stats may satisfy ``row_filter``.

    Stats are used only for a filtered column whose type in the file is the type it is read
    in (a widened column's old stats would compare in the old type); any other column is
    unknown to the predicate, which then keeps the row group."""
    from core.predicate import ColumnRange  # here: a write reads files (lookups) without a filter

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


def read_file_parts(path: str, meta: DataFileMeta, file_schema: TableSchema, read_fields: Sequence[DataField],
                    file_io: FileIO, *, part_rows: int, **options: Any) -> Iterator[pa.Table]:
    """``read_file``'s rows as consecutive tables of about ``part_rows`` rows (whole row groups),
    so that a merge of sorted runs holds a part of each run rather than each run's file.

    A local Parquet file is read some row groups at a time (a primary-key file has groups of
    4,096 rows at most); other files, and files on object stores (fetched in one GET
    anyway), are one part."""
    parts = _group_parts(path, meta, file_io, part_rows)
    if parts is None:
        yield read_file(path, meta, file_schema, read_fields, file_io, **options)
        return
    for groups in parts:
        yield read_file(path, meta, file_schema, read_fields, file_io, only_groups=groups, **options)


def _group_parts(path: str, meta: DataFileMeta, file_io: FileIO, part_rows: int) -> list[list[int]] | None:
    """Runs of consecutive row groups of about ``part_rows`` rows; None to read the file whole."""
    group_rows = _group_rows(path, meta, file_io)  # None on object stores and for non-Parquet files
    if group_rows is None or len(group_rows) <= 1:
        return None
    parts: list[list[int]] = [[]]
    rows = 0
    for g, n in enumerate(group_rows):
        if parts[-1] and rows + n > part_rows:
            parts.append([])
            rows = 0
        parts[-1].append(g)
        rows += n
    return parts


def _group_rows(path: str, meta: DataFileMeta, file_io: FileIO) -> list[int] | None:
    """The rows of each row group of a local Parquet file; None for other files, and for a
    file that cannot be read (``read_file`` reports it)."""
    if not file_io.local or formats.format_of(meta.file_name) != "parquet":
        return None
    try:
        metadata = local_footer(path, file_io)
    except (OSError, ValueError):
        return None
    return None if metadata is None else metadata.group_rows


def local_footer(path: str, file_io: FileIO) -> Footer | None:
    """The footer of the local Parquet file at ``path`` (cached); None on object stores, whose
    files are fetched whole anyway and parsed with the file."""
    if not file_io.local:
        return None
    local = local_path(path)
    st = os.stat(local)
    return _parsed_footer(local, st.st_size, st.st_mtime_ns)


class Footer:
    """A Parquet file's parsed footer and what reads look up in it, worked out once per file:
    the rows of each row group, the leaf columns of each top-level column, the INT96 ones, and
    whatever else a reader keeps here (``derived``: key_read's per-group key ranges). Not keyed
    by ``pq.FileMetaData`` itself: its hash walks the whole schema on every lookup."""

    __slots__ = ("metadata", "group_rows", "int96", "_tops", "derived")

    def __init__(self, metadata: pq.FileMetaData) -> None:
        self.metadata = metadata
        self.group_rows = [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
        self.int96 = _int96_columns(metadata)
        self._tops: dict[str, list[int]] | None = None
        self.derived: dict[Any, Any] = {}

    def leaves(self, names: Sequence[str]) -> list[int]:
        """The leaf column indices of the top-level columns ``names`` (see ``_top_level_leaves``)."""
        if self._tops is None:
            self._tops = _top_level_leaves(self.metadata)
        tops = self._tops
        return [i for name in names for i in tops.get(name, ())]


# A data file never changes once written (its name is unique), so a read that opens it again,
# in this call (the row groups of read_file_parts, the rows of read_rows_at) or the next,
# skips the footer. Size and mtime are part of the key so that a file replaced under the same
# name is read afresh.
@functools.lru_cache(maxsize=4096)
def _parsed_footer(local: str, size: int, mtime_ns: int) -> Footer:
    """The parsed footer of the local Parquet file ``local`` of that size and mtime. Read by a
    bare ``ParquetReader``: ``pq.read_metadata`` builds a ``ParquetFile`` around it, mapping
    every column path, which cost a merged read of 2,000 one-row files a fifth of its time."""
    reader = ParquetReader()
    reader.open(local, pre_buffer=False)
    try:
        return Footer(reader.metadata)
    finally:
        reader.close()


def stored_sequence_numbers(path: str, meta: DataFileMeta, file_io: FileIO) -> pa.ChunkedArray | None:
    """The ``_SEQUENCE_NUMBER`` column of an append table's data file, every row in file order,
    where the file stores one (Paimon's row-tracking rewrites keep each row's number there);
    None where it does not. What ``_SEQUENCE_NUMBER`` of a row-tracking table reads
    (``core.system_columns``).

    Raises:
        CorruptMetadataError: as ``read_file``.
    """
    fmt = formats.format_of(meta.file_name)
    try:
        with file_io.open_input(path) as fh:
            source = io.BytesIO(fh.read())
        if fmt == "parquet":
            import pyarrow.parquet as pq

            parquet = pq.ParquetFile(source)
            if SEQUENCE_NUMBER not in parquet.schema_arrow.names:
                return None
            return parquet.read(columns=[SEQUENCE_NUMBER], use_threads=False).column(0)
        if fmt == "orc":
            if SEQUENCE_NUMBER not in formats._orc().ORCFile(source).schema.names:
                return None
            source.seek(0)
        elif fmt == "avro":
            import fastavro

            if SEQUENCE_NUMBER not in {f["name"] for f in fastavro.reader(source).writer_schema["fields"]}:
                return None
            source.seek(0)
        else:
            raise ValueError(f"unknown data file format of {meta.file_name}")
        columns = {SEQUENCE_NUMBER: parse_type("BIGINT")}
        table = formats.read_orc(source, columns) if fmt == "orc" else formats.read_avro(source, columns)
        return table.column(0)
    except FileNotFoundError as e:
        raise CorruptMetadataError(f"data file {path} listed in a manifest is missing") from e
    except (ValueError, OSError, pa.ArrowException) as e:
        raise CorruptMetadataError(f"cannot read data file {path}: {e}") from e


def with_row_tracking(part: pa.Table, meta: DataFileMeta, names: Sequence[str], positions: pa.ChunkedArray,
                      stored_sequence: pa.ChunkedArray | None) -> pa.Table:
    """``part`` (rows of ``meta`` at file ``positions``) with the system columns ``names``
    appended, as pypaimon 2.1 computes them (``core.system_columns``): ``_ROW_ID`` the file's
    first row id plus the position (null without a first row id), ``_SEQUENCE_NUMBER`` the
    file's stored column where it has one and is not null, else its max sequence number."""
    import pyarrow.compute as pc

    at = numpy_ints(positions)
    for name in names:
        if name == ROW_ID:
            column = (pa.nulls(len(at), pa.int64()) if meta.first_row_id is None
                      else int_array(at + meta.first_row_id))
        else:
            column = int_array(np.full(len(at), meta.max_sequence_number, np.int64))
            if stored_sequence is not None:
                column = pc.coalesce(pc.cast(stored_sequence.take(int_array(at)), pa.int64()), column)
        part = part.append_column(pa.field(name, pa.int64()), column)
    return part
