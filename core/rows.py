"""Input rows -> table rows: match columns by name, cast to the table types, take row kinds
from a CDC column, and route rows to (partition, bucket).

Both engines call these on the rows they hold (the driver's for the local engine, each
executor's batch for Spark), so validation and routing are identical everywhere. Every
problem raises ``InvalidDataError`` before a file is written.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.bucket import assign_buckets
from core.errors import InvalidDataError, UsageError
from core.kernels.merge import MergeEngine
from core.kernels.records import ROW_KINDS, VALUE_KIND, retract_kinds
from core.postpone import POSTPONE_BUCKET
from core.schema import TableSchema
from core.text_values import first_float_overflow, float_overflow_message, python_values, text_value
from core.types import DataField, arrow_field
from core.value_range import first_misfit



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
    if not has_primary_key and pc.any(pc.is_in(values, retract_kinds())).as_py():
        raise InvalidDataError("an append table (no primary key) cannot take -U or -D rows")
    return pc.cast(values, pa.int8()).combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _cast_column(col: pa.ChunkedArray | pa.Array, f: DataField, row_offset: int = 0) -> pa.ChunkedArray | pa.Array:
    target = arrow_field(f).type
    if col.type == target:
        return col
    try:
        out = pc.cast(col, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        found = first_misfit(col.to_pylist(), target, f.type.root_text())  # the error path only
        if found is not None:
            row, reason = found
            raise InvalidDataError(f"column {f.name} (input row {row_offset + row + 1}): {reason}") from e
        reason = str(e).strip().splitlines()[0]
        if "out of bounds timestamp" in reason:
            reason += " (TIMESTAMP(7..9) values lakectl can hold lie in 1677-09-21 to 2262-04-11)"
        raise InvalidDataError(f"column {f.name}: values of type {col.type} do not fit {f.type.root_text()}: {reason}") \
            from e
    bad = first_float_overflow(col, out)  # a safe cast still turns 1e39 into a FLOAT's Infinity
    if bad is not None:
        raise InvalidDataError(f"column {f.name}: {float_overflow_message(col[bad].as_py(), out.type)}")
    return out


_UNIT_DIGITS = {"ms": 3, "us": 6, "ns": 9}


def _check_precision(col: pa.ChunkedArray | pa.Array, f: DataField) -> None:
    """Refuse fractional digits a TIME(p) or TIMESTAMP(p) column does not keep (TIME(0)
    given 12:00:00.5): Arrow stores such a column in ms, us or ns, so it would keep them."""
    if f.type.name not in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
        return
    t = arrow_field(f).type
    digits = _UNIT_DIGITS.get(t.unit, 0)
    if f.type.precision is None or f.type.precision >= digits:
        return
    ticks = pc.fill_null(col.cast(pa.int32() if pa.types.is_time32(t) else pa.int64()), 0)  # null: no digits
    if isinstance(ticks, pa.ChunkedArray):
        ticks = ticks.combine_chunks()
    values = ticks.to_numpy(zero_copy_only=False).astype(np.int64)
    extra = values % 10 ** (digits - f.type.precision) != 0
    if extra.any():
        first = int(np.flatnonzero(extra)[0])
        text = text_value(python_values(col.slice(first, 1))[0])
        raise InvalidDataError(f"column {f.name}: {text!r} has more fractional digits than "
                               f"{f.type.root_text()} keeps")


def _check_lengths(col: pa.ChunkedArray | pa.Array, f: DataField) -> None:
    limit = f.type.length
    if limit is None or limit >= 2147483647:
        return
    lengths = pc.utf8_length(col) if f.type.is_string else pc.binary_length(col)
    longest = pc.max(lengths).as_py()
    if longest is not None and longest > limit:
        raise InvalidDataError(f"column {f.name}: a value of length {longest} does not fit {f.type.root_text()}")


def prepare_rows(data: pa.Table, schema: TableSchema, row_kind_column: str | None = None, *,
                 row_offset: int = 0) -> pa.Table:
    """Match input columns by name, cast to the table types, and check nulls.

    ``row_offset`` counts the input rows before ``data`` (when the input comes batch by
    batch), so an error names the row of the whole input.

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
    if kinds is not None and schema.has_primary_key:
        MergeEngine.of(schema).check_input(kinds)  # e.g. first-row refuses -D rows
    n = data.num_rows
    is_retract = pc.is_in(kinds, retract_kinds()) if kinds is not None else None
    columns = []
    for f in schema.fields:
        if f.name in data.column_names:
            col = _cast_column(data.column(f.name), f, row_offset)
        elif f.type.nullable or n == 0:  # an empty input (e.g. an overwrite clearing a partition)
            col = pa.nulls(n, arrow_field(f).type)
        else:
            raise InvalidDataError(f"input lacks column {f.name!r}, which is NOT NULL")
        _check_lengths(col, f)
        _check_precision(col, f)
        if not f.type.nullable and col.null_count:
            # Key columns may never be null; other NOT NULL columns may be null on -U/-D rows,
            # which only carry a key.
            nulls = pc.is_null(col)
            if f.name not in schema.primary_keys and f.name not in schema.partition_keys and is_retract is not None:
                nulls = pc.and_(nulls, pc.invert(is_retract))
            if pc.any(nulls).as_py():
                row = int(pc.index(nulls, True).as_py())
                what = "primary key" if f.name in schema.primary_keys else "NOT NULL"
                raise InvalidDataError(f"null in {what} column {f.name!r} (input row {row_offset + row + 1})")
        columns.append(col)
    fields = [arrow_field(f) for f in schema.fields]
    out = pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in fields]))
    if schema.has_primary_key:
        # the zeros over numpy's buffer: pa.array of a numpy array imports numpy.ma (~12 ms) to
        # ask whether it is masked
        if kinds is None:
            kinds = pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(np.zeros(n, np.int8))])
        out = out.append_column(VALUE_KIND, kinds)
    return out


def bucket_column(rows: pa.Table, schema: TableSchema) -> np.ndarray:
    """Each row's fixed bucket (bucket 0 for bucket-unaware append tables)."""
    total = schema.num_buckets
    if total == POSTPONE_BUCKET and schema.has_primary_key:
        # Postpone bucket mode: every row waits in the partition's bucket-postpone/ (core.postpone).
        return np.full(rows.num_rows, POSTPONE_BUCKET, dtype=np.int32)
    if total < 1:
        if schema.has_primary_key:
            # Dynamic bucket mode: buckets come from the table's hash index, never a hash mod n.
            raise UsageError("a dynamic-bucket table (bucket=-1) gets its buckets from its hash index "
                             "(core.dynamic_bucket), not from a fixed bucket count")
        return np.zeros(rows.num_rows, dtype=np.int32)
    keys = schema.bucket_keys
    return assign_buckets([rows.column(k) for k in keys], [schema.field(k).type for k in keys], total)


def _codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, int]:
    """Dense integer codes of a column's values (null its own code) and how many there are."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes + 1, len(encoded.dictionary) + 1


def group_indices(rows: pa.Table, schema: TableSchema,
                  buckets: np.ndarray | None = None) -> list[tuple[tuple[Any, ...], int, np.ndarray | None]]:
    """(partition values, bucket, row indices in input order) per group; indices None when
    every row is in the one group. ``buckets``: each row's bucket when already assigned
    (dynamic bucket mode, ``core.dynamic_bucket``), else the fixed-bucket hash decides.

    Each row gets one integer group id from its partition values' dictionary codes and its
    bucket; a stable argsort of the ids gives each group's rows in input order (sorting the
    partition values themselves is far slower).
    """
    n = rows.num_rows
    if n == 0:
        return []
    buckets = (bucket_column(rows, schema) if buckets is None else buckets).astype(np.int64)
    group_id = np.zeros(n, dtype=np.int64)
    for k in schema.partition_keys:
        codes, cardinality = _codes(rows.column(k))
        group_id = group_id * cardinality + codes
    low = int(buckets.min())  # -2 in postpone bucket mode: ids from 0 all the same
    group_id = group_id * (int(buckets.max()) - low + 1) + (buckets - low)
    if group_id.min() == group_id.max():
        return [(partition_values(rows, schema, 0), int(buckets[0]), None)]
    # Few groups: a stable sort of small integers is a radix sort in numpy, ~7x faster than int64.
    compact_ids = np.unique(group_id, return_inverse=True)[1] if group_id.max() >= 1 << 15 else group_id
    small = compact_ids.astype(np.int16 if compact_ids.max() < 1 << 15 else np.int64)
    order = np.argsort(small, kind="stable")
    sorted_ids = group_id[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_ids)) + 1])
    ends = np.append(starts[1:], n)
    out = []
    for start, end in zip(starts.tolist(), ends.tolist()):
        first = int(order[start])
        out.append((partition_values(rows, schema, first), int(buckets[first]), order[start:end]))
    return out


def partition_values(rows: pa.Table, schema: TableSchema, index: int) -> tuple[Any, ...]:
    """Row ``index``'s partition values as Python values (``py_values``)."""
    return tuple(py_values(rows.column(k).slice(index, 1))[0] for k in schema.partition_keys)


def py_values(values: pa.Array | pa.ChunkedArray) -> list[Any]:
    """``to_pylist``, except that nanosecond timestamps keep their digits past the microsecond
    (NanoDatetime), which pyarrow would refuse (or hand to pandas)."""
    if not (pa.types.is_timestamp(values.type) and values.type.unit == "ns"):
        return values.to_pylist()
    from core.nano_datetime import from_epoch_nanos

    ltz = values.type.tz is not None
    return [None if n is None else from_epoch_nanos(n, ltz) for n in values.cast(pa.int64()).to_pylist()]


def group_rows(rows: pa.Table, schema: TableSchema) -> list[tuple[tuple[Any, ...], int, pa.Table]]:
    """Split rows into (partition values, bucket, rows in input order) groups.

    One ``take`` puts every group's rows together and each group is a zero-copy slice of it:
    one take per group costs ~1.6x as much CPU at 32 groups (the Spark write's route step)."""
    groups = group_indices(rows, schema)
    if not groups:  # no rows
        return []
    if len(groups) == 1 and groups[0][2] is None:
        return [(groups[0][0], groups[0][1], rows)]
    together = rows.take(pa.array(np.concatenate([indices for _, _, indices in groups])))
    out, start = [], 0
    for values, bucket, indices in groups:
        out.append((values, bucket, together.slice(start, len(indices))))
        start += len(indices)
    return out
