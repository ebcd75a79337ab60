"""Key-value records as the kernels hold them: the table columns plus ``_SEQUENCE_NUMBER``
and ``_VALUE_KIND``, and the sorting every merge starts from."""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import pyarrow as pa

from core.arrow_values import boolean_scalar, numpy_bool_values, numpy_ints, sole_int_key, values_array

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
ROW_KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}
KIND_NAMES = {code: name for name, code in ROW_KINDS.items()}


@functools.cache
def retract_kinds() -> pa.Array:
    """The -U/-D kind codes as an Arrow array, built on first use without pandas."""
    return values_array([UPDATE_BEFORE, DELETE], pa.int8())


def key_columns_sorted(table: pa.Table, keys: list[str], seq_column: str, sequence_fields: Sequence[str] = (),
                       ascending: bool = True) -> pa.Table:
    """Sort by key ascending, then by the ``sequence_fields`` (``sequence.field``, ascending or
    not), then sequence ascending: the newest version of a key is last, in the order Java
    Paimon's merge readers and write buffer compare records.

    Key columns are NOT NULL. A null sequence field sorts first in either direction, as in
    Java's generated record comparator (nullIsLast=false, not flipped by descending)."""
    import pyarrow.compute as pc

    if not sequence_fields and _in_key_and_sequence_order(table, keys, seq_column):
        return table  # the local engine hands over key-sorted groups: no sort needed
    direction = "ascending" if ascending else "descending"
    order = ([(k, "ascending") for k in keys] + [(f, direction) for f in sequence_fields]
             + [(seq_column, "ascending")])
    indices = _sort_indices_nulls_first(table, order) if sequence_fields else pc.sort_indices(table, sort_keys=order)
    if _is_identity(indices):
        return table  # already in order (the local engine hands over key-sorted groups)
    return table.take(indices)


def _in_key_and_sequence_order(table: pa.Table, keys: Sequence[str], seq_column: str) -> bool:
    """Whether ``table`` is already sorted by its single integer key, then by sequence number
    (False also when that cannot be checked cheaply: the caller then sorts)."""
    values = sole_int_key(table, keys)
    if values is None or table.num_rows < 2:
        return values is not None
    seq = table.column(seq_column)
    if seq.null_count:
        return False
    seq_values = numpy_ints(seq)
    later, earlier = values[1:], values[:-1]
    return bool(np.all((later > earlier) | ((later == earlier) & (seq_values[1:] > seq_values[:-1]))))


def _sort_indices_nulls_first(table: pa.Table, order: list[tuple[str, str]]) -> pa.Array:
    """``pc.sort_indices`` with nulls first: per sort key where pyarrow takes it (newer
    versions deprecate the global option), else the global ``null_placement``."""
    import pyarrow.compute as pc

    try:
        return pc.sort_indices(table, sort_keys=[(name, direction, "at_start") for name, direction in order])
    except (TypeError, ValueError):
        return pc.sort_indices(table, sort_keys=order, null_placement="at_start")


def _is_identity(indices: pa.Array) -> bool:
    values = numpy_ints(indices)
    return bool(np.array_equal(values, np.arange(len(values), dtype=values.dtype)))


def key_changes(table: pa.Table, keys: list[str]) -> np.ndarray:
    """For rows sorted by ``keys``: element i is True where row i+1's key differs from row i's
    (nulls equal each other)."""
    import pyarrow.compute as pc

    n = table.num_rows
    values = sole_int_key(table, keys)
    if values is not None:
        return values[1:] != values[:-1]
    differs = np.zeros(max(n - 1, 0), dtype=bool)
    for k in keys:
        col = table.column(k)
        a, b = col.slice(0, n - 1), col.slice(1)
        neq = pc.fill_null(pc.not_equal(a, b), boolean_scalar(True))
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        differs |= numpy_bool_values(pc.and_not(neq, both_null))
    return differs


def alive(table: pa.Table) -> pa.Table:
    """Records that are not retractions (-U/-D): what a reader shows of merged records."""
    import pyarrow.compute as pc

    return table.filter(pc.invert(pc.is_in(table.column(VALUE_KIND), retract_kinds())))
