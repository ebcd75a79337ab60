"""write: validate and cast input rows, route them to (partition, bucket), run the write
kernel per group on an engine, and commit the resulting files as one snapshot.

Everything that can be wrong with the input is checked before the first file is written,
so bad input never leaves even an orphan behind.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core import binary_row
from core.bucket import assign_buckets
from core.commit import CommitMessage, FileStoreCommit, OverwriteSpec
from core.engines.local import LocalEngine
from core.errors import InvalidDataError, UsageError
from core.kernels.write import DELETE, ROW_KINDS, UPDATE_BEFORE, VALUE_KIND, WriteTask
from core.manifest import DELETE as DELETE_ENTRY, merge_entries, read_entries
from core.partition import partition_path
from core.schema import TableSchema
from core.snapshot import OVERWRITE, Snapshot
from core.table import Table
from core.types import DataField, arrow_field

log = logging.getLogger(__name__)

MODES = ("append", "overwrite")
_GROUP_ROW = "__lakectl_row"
_GROUP_BUCKET = "__lakectl_bucket"


@dataclass(frozen=True, slots=True)
class WriteResult:
    table: str
    snapshot_id: int | None
    commit_kind: str | None
    rows_written: int
    files_added: int
    bytes_added: int
    files_deleted: int
    partitions: int
    buckets: int
    engine: str


# ---- input validation ------------------------------------------------------------------
def _row_kinds(data: pa.Table, column: str, has_primary_key: bool) -> pa.Array:
    if column not in data.column_names:
        raise InvalidDataError(f"--row-kind-column {column!r} is not in the input; columns are: "
                               f"{', '.join(data.column_names)}")
    text = pc.utf8_trim_whitespace(pc.cast(data.column(column), pa.string()))
    codes = pc.index_in(text, value_set=pa.array(list(ROW_KINDS)))
    bad = pc.is_null(codes)
    if pc.any(bad).as_py():
        first = pc.filter(text, bad)[0].as_py()
        raise InvalidDataError(f"row kind {first!r} in column {column} is not one of +I, -U, +U, -D")
    values = pa.array(np.array(list(ROW_KINDS.values()), np.int8)).take(codes)
    if not has_primary_key and pc.any(pc.is_in(values, pa.array([UPDATE_BEFORE, DELETE], pa.int8()))).as_py():
        raise InvalidDataError("an append table (no primary key) cannot take -U or -D rows")
    return pc.cast(values, pa.int8()).combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _cast_column(col: pa.ChunkedArray | pa.Array, f: DataField) -> pa.ChunkedArray | pa.Array:
    target = arrow_field(f).type
    if col.type == target:
        return col
    try:
        return pc.cast(col, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        reason = str(e).strip().splitlines()[0]
        raise InvalidDataError(f"column {f.name}: values of type {col.type} do not fit {f.type.root_text()}: {reason}") \
            from e


def _check_lengths(col: pa.ChunkedArray | pa.Array, f: DataField) -> None:
    limit = f.type.length
    if limit is None or limit >= 2147483647:
        return
    lengths = pc.utf8_length(col) if f.type.is_string else pc.binary_length(col)
    longest = pc.max(lengths).as_py()
    if longest is not None and longest > limit:
        raise InvalidDataError(f"column {f.name}: a value of length {longest} does not fit {f.type.root_text()}")


def prepare_rows(data: pa.Table, schema: TableSchema, row_kind_column: str | None = None) -> pa.Table:
    """Match input columns by name, cast to the table types, and check nulls.

    Returns the table columns in schema order, plus ``_VALUE_KIND`` (int8) for primary-key tables.

    Raises:
        InvalidDataError: unknown or missing columns, uncastable values, null keys.
    """
    names = schema.field_names
    # Paimon's `rowkind.field` option names a table column that carries the row kind.
    row_kind_column = row_kind_column or schema.options.get("rowkind.field")
    extra = [c for c in data.column_names if c not in names and c != row_kind_column]
    if extra:
        raise InvalidDataError(f"input column {extra[0]!r} is not in table; columns are: {', '.join(names)}")
    kinds = _row_kinds(data, row_kind_column, schema.has_primary_key) if row_kind_column else None
    n = data.num_rows
    is_retract = pc.is_in(kinds, pa.array([UPDATE_BEFORE, DELETE], pa.int8())) if kinds is not None else None
    columns = []
    for f in schema.fields:
        if f.name in data.column_names:
            col = _cast_column(data.column(f.name), f)
        elif f.type.nullable:
            col = pa.nulls(n, arrow_field(f).type)
        else:
            raise InvalidDataError(f"input lacks column {f.name!r}, which is NOT NULL")
        _check_lengths(col, f)
        if not f.type.nullable and col.null_count:
            # Key columns may never be null; other NOT NULL columns may be null on -U/-D rows,
            # which only carry a key.
            nulls = pc.is_null(col)
            if f.name not in schema.primary_keys and f.name not in schema.partition_keys and is_retract is not None:
                nulls = pc.and_(nulls, pc.invert(is_retract))
            if pc.any(nulls).as_py():
                row = int(pc.index(nulls, True).as_py())
                what = "primary key" if f.name in schema.primary_keys else "NOT NULL"
                raise InvalidDataError(f"null in {what} column {f.name!r} (input row {row + 1})")
        columns.append(col)
    fields = [arrow_field(f) for f in schema.fields]
    out = pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in fields]))
    if schema.has_primary_key:
        out = out.append_column(VALUE_KIND, kinds if kinds is not None else pa.array(np.zeros(n, np.int8)))
    return out


# ---- routing ---------------------------------------------------------------------------
def bucket_column(rows: pa.Table, schema: TableSchema) -> np.ndarray:
    total = schema.num_buckets
    if total < 1:
        return np.zeros(rows.num_rows, dtype=np.int32)
    keys = schema.bucket_keys
    return assign_buckets([rows.column(k) for k in keys], [schema.field(k).type for k in keys], total)


def group_rows(rows: pa.Table, schema: TableSchema) -> list[tuple[tuple[Any, ...], int, pa.Table]]:
    """Split rows into (partition values, bucket, rows in input order) groups."""
    if rows.num_rows == 0:
        return []
    buckets = bucket_column(rows, schema)
    keys = list(schema.partition_keys) + [_GROUP_BUCKET]
    index = pa.table([rows.column(k) for k in schema.partition_keys] + [pa.array(buckets),
                      pa.array(np.arange(rows.num_rows, dtype=np.int64))],
                     names=keys + [_GROUP_ROW])
    grouped = index.group_by(keys, use_threads=False).aggregate([(_GROUP_ROW, "list")])
    out = []
    parts = [grouped.column(k).to_pylist() for k in schema.partition_keys]
    bucket_ids = grouped.column(_GROUP_BUCKET).to_pylist()
    row_lists = grouped.column(_GROUP_ROW + "_list")
    for g in range(grouped.num_rows):
        # Row numbers sorted = input order, which decides sequence numbers.
        idx = np.sort(row_lists[g].values.to_numpy())
        values = tuple(p[g] for p in parts)
        out.append((values, int(bucket_ids[g]), rows.take(pa.array(idx))))
    return out


def next_sequences(table: Table, schema: TableSchema) -> dict[tuple[bytes, int], int]:
    """(partition, bucket) -> the first sequence number a new write there must use."""
    latest = table.latest_snapshot()
    if latest is None:
        return {}
    entries = merge_entries(read_entries(table.manifests(), [latest.base_manifest_list, latest.delta_manifest_list]))
    out: dict[tuple[bytes, int], int] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        out[key] = max(out.get(key, 0), e.file.max_sequence_number + 1)
    return out


def plan_tasks(table: Table, schema: TableSchema, rows: pa.Table) -> list[tuple[WriteTask, pa.Table]]:
    groups = group_rows(rows, schema)
    if not groups:
        return []
    starts = next_sequences(table, schema)
    part_fields = schema.partition_fields
    part_types = [f.type for f in part_fields]
    default_name = schema.core_options.partition_default_name
    total = schema.num_buckets
    tasks = []
    for values, bucket, group in groups:
        part = binary_row.encode(list(values), part_types)
        task = WriteTask(table_path=table.path, schema=schema, partition=part,
                         partition_dir=partition_path(values, part_fields, default_name), bucket=bucket,
                         total_buckets=total, start_sequence=starts.get((part, bucket), 0))
        tasks.append((task, group))
    return tasks


# ---- the operation ---------------------------------------------------------------------
def write(table: Table, data: pa.Table, *, mode: str = "append", row_kind_column: str | None = None,
          engine: Any = None) -> WriteResult:
    """Write ``data`` as one snapshot (APPEND, or OVERWRITE of the partitions it touches).

    Raises:
        UsageError: unknown mode.
        InvalidDataError: input that does not fit the table (nothing is written).
        CommitConflictError: the commit could not land.
    """
    if mode not in MODES:
        raise UsageError(f"--mode {mode!r} must be one of {', '.join(MODES)}")
    if mode == "overwrite" and row_kind_column:
        raise UsageError("--mode overwrite cannot be combined with --row-kind-column")
    schema = table.schema
    rows = prepare_rows(data, schema, row_kind_column)
    engine = engine or LocalEngine()
    tasks = plan_tasks(table, schema, rows)
    messages: list[CommitMessage] = engine.write(tasks, table.file_io)
    overwrite = None
    if mode == "overwrite":
        overwrite = OverwriteSpec(frozenset(t.partition for t, _ in tasks) if schema.partition_keys else None)
        if schema.partition_keys and not tasks:
            overwrite = None  # no input rows touch any partition: nothing to replace
    committer = FileStoreCommit(table.file_io, table.path, schema)
    snapshot = committer.commit(messages, overwrite=overwrite)
    files = [f for m in messages for f in m.new_files]
    return WriteResult(
        table=table.name,
        snapshot_id=snapshot.id if snapshot else None,
        commit_kind=snapshot.commit_kind if snapshot else None,
        rows_written=rows.num_rows,
        files_added=len(files),
        bytes_added=sum(f.file_size for f in files),
        files_deleted=_deleted_files(table, snapshot) if snapshot and snapshot.commit_kind == OVERWRITE else 0,
        partitions=len({t.partition for t, _ in tasks}),
        buckets=len(tasks),
        engine=getattr(engine, "name", "local"),
    )


def _deleted_files(table: Table, snapshot: Snapshot) -> int:
    entries = read_entries(table.manifests(), [snapshot.delta_manifest_list])
    return sum(1 for e in entries if e.kind == DELETE_ENTRY)
