"""Key-bounded reads of many splits in one merge: a ``--where`` on primary-key columns or a
lookup, over local files of a deduplicate table, where few records pass the key condition.

The per-split read (``read.read_split``) merges each (partition, bucket) on its own: per
split it opens the files, sorts the chunk, cuts it at the frontier, folds and drops
retractions, a few milliseconds of Python each, which is most of a key range's or a lookup's
cost when only a few thousand records pass. Here every split's records that pass are
gathered (file by file, the row groups their key statistics admit) and merged once, all
splits together, with the split's index as the first key column (keys of different splits
never meet). A key range reads its records in the columns used, in one pass; a key list or
a lookup reads them in the columns the merge compares (key, sequence fields, sequence number,
kind) plus each record's file and position, and only the records that come out alive are
then read in the other columns, from the row groups holding them, one read per file.
Partition columns are filled from the splits' partition values where they can be.

The result is the per-split read's, split by split and row for row: the same engine folds
the same records (``MergeEngine.merge``: newest by ``sequence.field`` and sequence number,
``ignore-delete``), ties are broken the same way (records are gathered run by run in the
order ``run_files`` gives, and Arrow's sort is stable, as in each chunk of
``stream_merge``), and deletion vectors are applied as each file is read. When more than
``MAX_CANDIDATES`` records pass the key condition the read gives up (None) and the caller
reads split by split, whose memory follows its batches, not the result.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import pyarrow as pa

from core import formats
from core.arrow_values import empty_table, int_array, numpy_ints, values_array
from core.default_values import fill_defaults
from core.fileio import FileIO, join
from core.kernels import data_evolution, data_file
from core.kernels.data_file import POSITION
from core.kernels.key_prune import keep_matching_keys, key_condition
from core.kernels.merge import MergeEngine
from core.kernels.read import ReadSplit, names_points, needed_columns, raw_convertible, retractions_only, run_files
from core.kernels.records import alive
from core.manifest import DataFileMeta, sorted_runs
from core.predicate import And, Comparison, InList, Predicate
from core.schema import TableSchema
from core.types import DataField, arrow_field, to_arrow

if TYPE_CHECKING:
    import pyarrow.parquet as pq

# The most records passing the key condition that are merged at once (about 30 bytes each
# in the compared columns, plus the result's rows); above it the read goes split by split.
MAX_CANDIDATES = 256 * 1024

_SPLIT = "_SPLIT_INDEX"
_FILE = "_FILE_INDEX"


def eligible(splits: Sequence[ReadSplit], read_schema: TableSchema, file_io: FileIO) -> bool:
    """Can ``read_key_bounded`` read these splits? Local files (an object store's file is
    fetched whole per read: reading it twice would fetch it twice), a deduplicate table
    (its merged record is one of the key's records as it is), a key condition on every split,
    and no split read without merging (an incremental read, or deletion-vector files that
    may overlap: those keep their own order)."""
    if not splits or not file_io.local or not read_schema.has_primary_key or data_evolution.enabled(read_schema):
        return False
    if MergeEngine.of(read_schema).kind != "deduplicate":
        return False
    keys = list(read_schema.primary_keys)
    for split in splits:
        if split.changes or key_condition(split.predicate, keys) is None:
            return False
        if sorted_runs(split.files) > 1 and raw_convertible(split, read_schema):
            return False
    return True


def read_key_bounded(splits: Sequence[ReadSplit], read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                     file_io: FileIO) -> list[pa.Table] | None:
    """Each split's merged rows (as ``read_split`` gives them, defaults filled), or None when
    more than ``MAX_CANDIDATES`` records pass the key conditions. The caller checks
    ``eligible`` first.

    Key lists and lookups (conditions naming points) are read late: a point list falls
    inside most row groups' [min, max] while few of their rows match, so the other columns
    are read only for the records that come out alive. A key range instead holds throughout
    the row groups its stats admit: their rows are read whole in one pass (the late pass would
    decode the same groups again and open every file twice)."""
    engine = MergeEngine.of(read_schema)
    read_fields = list(read_schema.fields)
    conditions = [key_condition(s.predicate, list(read_schema.primary_keys)) for s in splits]
    late = all(names_points(c) for c in conditions)
    narrow = frozenset(engine.keys) | frozenset(engine.sequence_fields)
    for condition in conditions:
        narrow |= condition.columns
    first_key = engine.keys[0] if engine.keys else None
    # partition columns no condition reads come from the splits' partition values, not the files
    partitions = {name: values for name, values in _partition_columns(splits, read_schema).items()
                  if name not in narrow}
    reading = _Reading(splits, read_schema, schemas, file_io,
                       [f for f in read_fields if f.name in narrow] if late else None, first_key, frozenset(partitions))
    files: list[tuple[ReadSplit, DataFileMeta]] = []
    gathered = _Gathered()
    key_types = [f.type for f in read_schema.key_fields]
    for s, (split, condition) in enumerate(zip(splits, conditions)):
        for run in run_files(split.files, key_types):
            for meta in run:
                records, unfiltered = reading.candidates(s, split, meta, condition)
                gathered.add(engine.with_level(records, meta.level), s, len(files), condition if unfiltered else None)
                files.append((split, meta))
                if gathered.passing > MAX_CANDIDATES:
                    return None
    pieces = gathered.finish()
    if gathered.passing > MAX_CANDIDATES:
        return None
    chosen = _merged(pieces, engine)
    if chosen is None:  # defaults still checked, so a bad default fails every read alike
        empty = empty_table(pa.schema([arrow_field(f).with_nullable(True) for f in read_fields]))
        return [fill_defaults(empty, read_schema)] * len(splits)
    if late:
        rows = _with_other_columns(chosen, files, splits, read_schema, schemas, file_io, narrow, frozenset(partitions))
    else:
        rows = chosen.select([f.name for f in read_fields])
    split_of = chosen.column(_SPLIT)
    for name, values in partitions.items():
        i = rows.schema.get_field_index(name)
        rows = rows.set_column(i, rows.schema.field(i), values.take(split_of))
    return _by_split(fill_defaults(rows, read_schema), chosen, len(splits))


def _partition_columns(splits: Sequence[ReadSplit], read_schema: TableSchema) -> dict[str, pa.Array]:
    """Per partition column of an integer or string type, each split's value (index: the
    split), where every split has one (not null). Every record of a split's files carries its
    partition's value, so these columns need not be decoded from the files: a string column
    costs about what the key column does."""
    fields = read_schema.partition_fields
    if not fields:
        return {}
    values = [read_schema.partition_values(split.partition) for split in splits]
    out = {}
    for i, field in enumerate(fields):
        arrow_type = to_arrow(field.type)
        python_type = int if pa.types.is_integer(arrow_type) else str if pa.types.is_string(arrow_type) else None
        column = [v[i] for v in values]
        if python_type is not None and all(type(v) is python_type for v in column):
            out[field.name] = values_array(column, arrow_type)  # from memory: no pandas
    return out


class _Reading:
    """How one read takes each file's candidates: in the compared columns (``narrow_fields``,
    late) or in the columns the caller uses (None: whole)."""

    def __init__(self, splits: Sequence[ReadSplit], read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                 file_io: FileIO, narrow_fields: list[DataField] | None, first_key: str | None,
                 filled: frozenset[str]) -> None:
        self.read_schema = read_schema
        self.filled = filled  # partition columns not read: filled in from the splits
        self.read_fields = list(read_schema.fields)
        self.schemas = schemas
        self.file_io = file_io
        self.narrow_fields = narrow_fields
        self.first_key = first_key
        # Read whole (not late): per split, the columns of its files, and of its files of
        # retractions only, whose keys will do (a deduplicate merge shows none of their values).
        self._columns = [(self._columns_of(split), self._columns_of(replace(split, columns=frozenset())))
                         for split in splits] if narrow_fields is None else []

    def _columns_of(self, split: ReadSplit) -> frozenset[str] | None:
        """The columns to read of ``split``'s files in one pass (None: all), less the filled ones."""
        needed = needed_columns(split, self.read_schema)
        if not self.filled:
            return needed
        return (needed if needed is not None else frozenset(f.name for f in self.read_fields)) - self.filled

    def candidates(self, s: int, split: ReadSplit, meta: DataFileMeta,
                   condition: Predicate) -> tuple[pa.Table, bool]:
        """The records of one file of split ``s`` that may pass ``condition``, with sequence
        number and kind (row groups pruned by their stats, the file's deletion vector applied);
        read late, in the compared columns plus each record's file position. The flag says whether the
        condition is still to be applied (False: only passing records came back)."""
        path = meta.external_path or join(split.bucket_dir, meta.file_name)
        schema = self.schemas[meta.schema_id]
        groups = _admitted_groups(path, meta, schema, condition, self.read_schema, self.file_io)
        # the row groups to read: those admitted here, else read_file prunes by the condition
        pruning = {"row_filter": condition} if groups is None else {"only_groups": groups}
        deletion = split.deletion(meta)
        if self.narrow_fields is None:
            whole, keys_only = self._columns[s]
            records = data_file.read_file(path, meta, schema, self.read_fields, self.file_io, system_columns=True,
                                          deletion=deletion, needed=keys_only if retractions_only(meta) else whole,
                                          **pruning)
            return records, True
        records = data_file.read_file(path, meta, schema, self.narrow_fields, self.file_io, system_columns=True,
                                      deletion=deletion, positions=True, **pruning)
        found = _points_in_sorted(records, condition, self.first_key)
        return (records, True) if found is None else (found, False)


def _points_in_sorted(records: pa.Table, condition: Predicate, first_key: str | None) -> pa.Table | None:
    """The records whose leading key column equals one of ``condition``'s points, found by
    binary search: a data file is sorted by its key, so each point's records are one run of
    rows, and searching for each point costs less than hashing every row (``pc.is_in``).
    None where that does not apply (another shape of condition, a non-integer column, or
    rows not in order, which are then filtered row by row)."""
    if isinstance(condition, InList):
        points = condition.values
    elif isinstance(condition, Comparison) and condition.op == "=":
        points = (condition.value,)
    else:
        return None
    if condition.column != first_key or records.num_rows == 0:
        return None
    column = records.column(first_key)
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    values = numpy_ints(column)
    if not bool(np.all(values[1:] >= values[:-1])):
        return None
    wanted = np.array(sorted(set(points)), dtype=values.dtype)  # values of the column's type (parsed so)
    lo = np.searchsorted(values, wanted, side="left")
    counts = np.searchsorted(values, wanted, side="right") - lo
    # the rows lo[i] .. lo[i] + counts[i] - 1 of every point, in order
    first_of_run = np.repeat(np.cumsum(counts) - counts, counts)
    at = np.repeat(lo, counts) + (np.arange(int(counts.sum())) - first_of_run)
    return records.take(int_array(at.astype(np.int64)))


class _Gathered:
    """The candidates of every file, tagged with their split and file, the key condition
    applied a batch of files at a time (one filter over up to ``_FILTER_ROWS`` rows of files
    that share a condition, rather than one per file)."""

    def __init__(self) -> None:
        self.pieces: list[pa.Table] = []
        self.passing = 0
        self._pending: list[pa.Table] = []
        self._tags: list[tuple[int, int, int]] = []  # (split, file, rows) of each pending table
        self._condition: Predicate | None = None
        self._rows = 0

    def add(self, records: pa.Table, split_index: int, file_index: int, condition: Predicate | None) -> None:
        """``records`` of one file; ``condition`` still to be applied to them (None: applied)."""
        if records.num_rows == 0:
            return
        if self._pending and condition is not self._condition:
            self._flush()
        self._pending.append(records)
        self._tags.append((split_index, file_index, records.num_rows))
        self._condition = condition
        self._rows += records.num_rows
        if self._rows >= _FILTER_ROWS:
            self._flush()

    def finish(self) -> list[pa.Table]:
        if self._pending:
            self._flush()
        return self.pieces

    def _flush(self) -> None:
        table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        splits, files, counts = (np.array(v, np.int32) for v in zip(*self._tags))
        table = table.add_column(0, _SPLIT, int_array(np.repeat(splits, counts)))
        table = table.append_column(_FILE, int_array(np.repeat(files, counts)))
        if self._condition is not None:
            # all records of a key agree on a key condition (key_prune)
            table = keep_matching_keys(table, self._condition)
        if table.num_rows:
            self.pieces.append(table)
            self.passing += table.num_rows
        self._pending, self._tags, self._condition, self._rows = [], [], None, 0


# Rows of candidates filtered at once (read ahead of the filter: bounded by this plus a file).
_FILTER_ROWS = 64 * 1024


def _merged(pieces: list[pa.Table], engine: MergeEngine) -> pa.Table | None:
    """The alive records of all splits after one merge, sorted by split and then key; None if none."""
    if not pieces:
        return None
    table = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
    by_split = replace(engine, keys=(_SPLIT, *engine.keys))
    chosen = alive(by_split.merge(by_split.sorted(table)))
    return chosen if chosen.num_rows else None


def _with_other_columns(chosen: pa.Table, files: Sequence[tuple[ReadSplit, DataFileMeta]],
                        splits: Sequence[ReadSplit], read_schema: TableSchema,
                        schemas: Mapping[int, TableSchema], file_io: FileIO, narrow: frozenset[str],
                        filled: frozenset[str]) -> pa.Table:
    """The full rows of the ``chosen`` records in the read schema, in their order: the
    compared columns as merged, the others read at the records' files and positions (columns
    no split needs come out null, as ``read_split`` leaves them, and so do the ``filled``
    ones until the caller fills them)."""
    read_fields = list(read_schema.fields)
    schema = pa.schema([arrow_field(f).with_nullable(True) for f in read_fields])
    needed = needed_columns(splits[0], read_schema)  # every split of a read carries the same columns
    other = [f for f in read_fields
             if f.name not in narrow and f.name not in filled and (needed is None or f.name in needed)]
    fetched = _fetch(chosen, files, other, schemas, file_io) if other else None
    columns = []
    for f, target in zip(read_fields, schema):
        if f.name in narrow:
            columns.append(chosen.column(f.name))
        elif fetched is not None and f.name in fetched.column_names:
            columns.append(fetched.column(f.name))
        else:
            columns.append(pa.nulls(chosen.num_rows, target.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _fetch(chosen: pa.Table, files: Sequence[tuple[ReadSplit, DataFileMeta]], fields: list[DataField],
           schemas: Mapping[int, TableSchema], file_io: FileIO) -> pa.Table:
    """The ``fields`` of the ``chosen`` records, read file by file (only the row groups holding
    them), in the records' order."""
    file_of = numpy_ints(chosen.column(_FILE))
    position = numpy_ints(chosen.column(POSITION))
    by_file = np.argsort(file_of, kind="stable")
    bounds = np.cumsum(np.bincount(file_of, minlength=len(files)))
    parts, order = [], []
    start = 0
    for i, end in enumerate(bounds):
        if end > start:
            at = by_file[start:end]
            at = at[np.argsort(position[at], kind="stable")]  # read_rows_at wants ascending positions
            split, meta = files[i]
            path = meta.external_path or join(split.bucket_dir, meta.file_name)
            parts.append(data_file.read_rows_at(path, meta, schemas[meta.schema_id], fields, file_io, position[at]))
            order.append(at)
        start = end
    rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    # rows are grouped by file; put them back in merged order
    return rows.take(int_array(np.argsort(np.concatenate(order), kind="stable").astype(np.int64)))


def _by_split(rows: pa.Table, chosen: pa.Table, count: int) -> list[pa.Table]:
    """``rows`` (sorted by split) cut into one table per split, in the read schema's columns."""
    split_of = numpy_ints(chosen.column(_SPLIT))
    bounds = np.searchsorted(split_of, np.arange(count + 1), side="left")
    return [rows.slice(int(bounds[s]), int(bounds[s + 1] - bounds[s])) for s in range(count)]


def _admitted_groups(path: str, meta: DataFileMeta, file_schema: TableSchema, condition: Predicate,
                     read_schema: TableSchema, file_io: FileIO) -> list[int] | None:
    """The row groups of a local Parquet file whose key statistics may satisfy ``condition``,
    found with numpy over the groups' min/max (cached with the footer), where
    ``data_file.matching_row_groups`` asks the predicate group by group in Python; None where
    this does not apply (another file format, a condition not made of comparisons and IN lists
    on integer columns read in the file's own type), and ``read_file`` prunes then. A group is
    kept unless its statistics rule the condition out, as there."""
    footer = data_file.local_footer(path, file_io) if formats.format_of(meta.file_name) == "parquet" else None
    if footer is None:
        return None
    columns = {}
    for name in condition.columns:
        stats = _group_ranges(footer, _file_column(name, file_schema, read_schema))
        if stats is None:
            return None
        columns[name] = stats
    admitted = _may_hold(condition, columns)
    return None if admitted is None else [int(g) for g in np.flatnonzero(admitted)]


def _file_column(name: str, file_schema: TableSchema, read_schema: TableSchema) -> tuple[str, pa.DataType] | None:
    """The file's name of read column ``name`` (renames follow the field id) and its read type."""
    field = read_schema.field(name)
    by_id = {f.id: f for f in file_schema.fields}
    if field.id not in by_id or by_id[field.id].type != field.type:
        return None  # added since, or widened: the file's stats are in another type
    return by_id[field.id].name, to_arrow(field.type)


def _group_ranges(footer: data_file.Footer, column: tuple[str, pa.DataType] | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per row group the (min, max) of an integer column and whether both are known without
    nulls beside them; None for a column that is not a top-level integer leaf of the file.
    Kept with the file's cached footer."""
    if column is None or not pa.types.is_integer(column[1]):
        return None
    key = ("key ranges", column[0])
    if key not in footer.derived:
        footer.derived[key] = _ranges_of(footer.metadata, column[0])
    return footer.derived[key]


def _ranges_of(metadata: pq.FileMetaData, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    leaves = [i for i in range(metadata.num_columns) if metadata.schema.column(i).path == name]
    if len(leaves) != 1 or metadata.schema.column(leaves[0]).physical_type not in ("INT32", "INT64"):
        return None
    n = metadata.num_row_groups
    lo, hi, known = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool)
    for g in range(n):
        st = metadata.row_group(g).column(leaves[0]).statistics
        if st is not None and st.has_min_max and st.has_null_count and st.null_count == 0:
            lo[g], hi[g], known[g] = st.min, st.max, True
    return lo, hi, known


# Per comparison operator, which row groups of per-group bounds (lo, hi) may hold a row
# comparing so with the value (only the one asked is computed: this runs per file).
_COMPARED = {
    "=": lambda lo, hi, v: (lo <= v) & (v <= hi),
    "<>": lambda lo, hi, v: ~((lo == v) & (hi == v)),
    "<": lambda lo, hi, v: lo < v,
    "<=": lambda lo, hi, v: lo <= v,
    ">": lambda lo, hi, v: hi > v,
    ">=": lambda lo, hi, v: hi >= v,
}


def _may_hold(condition: Predicate, columns: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
              ) -> np.ndarray | None:
    """Per row group, whether ``condition`` can be TRUE for a row within the groups' ranges
    (a group without known statistics always can); None for a shape not handled here."""
    if isinstance(condition, And):
        parts = [_may_hold(c, columns) for c in condition.children]
        if any(p is None for p in parts):
            return None
        return np.logical_and.reduce(parts)
    if isinstance(condition, Comparison):
        lo, hi, known = columns[condition.column]
        return _COMPARED[condition.op](lo, hi, condition.value) | ~known
    if isinstance(condition, InList):
        lo, hi, known = columns[condition.column]
        points = np.array(sorted(condition.values), np.int64)
        if not len(points):
            return ~known
        # the first point at or above each group's min, and whether it is within the max
        first = np.searchsorted(points, lo, side="left")
        inside = first < len(points)
        inside[inside] = points[first[inside]] <= hi[inside]
        return inside | ~known
    return None
