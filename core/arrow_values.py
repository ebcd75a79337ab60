"""Arrow arrays and scalars built from memory, without pyarrow's conversion of Python or
numpy values: a process's first such conversion (``pa.array``, ``pa.scalar``, a Python value
handed to a compute function) makes pyarrow import pandas (0.4 CPU s) only to ask whether
the value is a pandas object (core/pandas_probe.py). The read and text paths use these."""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np
import pyarrow as pa


def boolean_array(values: np.ndarray) -> pa.Array:
    """A numpy bool array as an Arrow one, from its packed bits."""
    bits = np.packbits(np.asarray(values, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


@functools.cache
def string_scalar(text: str) -> pa.Scalar:
    """A string scalar, from its UTF-8 bytes."""
    data = text.encode("utf-8")
    offsets = np.array([0, len(data)], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])[0]


@functools.cache
def boolean_scalar(value: bool) -> pa.Scalar:
    return boolean_array(np.array([value]))[0]


def string_array(texts: list[str]) -> pa.Array:
    """Python strings (no nulls) as an Arrow string array, from their UTF-8 bytes."""
    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    data = pa.py_buffer(b"".join(encoded))
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets), data])


def numpy_bools(arr: pa.Array) -> np.ndarray:
    """A boolean Arrow array (nulls read as False) as numpy, from its bits."""
    bits = np.unpackbits(np.frombuffer(arr.buffers()[1], dtype=np.uint8), bitorder="little")
    values = bits[arr.offset:arr.offset + len(arr)].astype(bool)
    if arr.null_count:
        values &= numpy_bools(arr.is_valid())
    return values


def numpy_values(arr: pa.Array, dtype: type) -> np.ndarray:
    """The values buffer of a fixed-width Arrow array as numpy (a view; null slots hold
    whatever the buffer does)."""
    return np.frombuffer(arr.buffers()[1], dtype=dtype)[arr.offset:arr.offset + len(arr)]


def int_array(values: np.ndarray) -> pa.Array:
    """A numpy int32 or int64 array (no nulls) as an Arrow one over the same memory."""
    values = np.ascontiguousarray(values)
    arrow_type = {np.dtype(np.int32): pa.int32(), np.dtype(np.int64): pa.int64()}[values.dtype]
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


# Arrow integer types and the numpy types of their values buffers.
_INTEGERS = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
             pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64}


def values_array(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    """Python values (no nulls) as an Arrow array of ``arrow_type``: built from memory for
    integers and strings, the usual key types, so that a key condition's literals do not
    import pandas; any other type (or a value out of the type's range) through ``pa.array``."""
    numpy_type = _INTEGERS.get(arrow_type)
    if numpy_type is not None and all(type(v) is int for v in values):
        try:
            data = np.array(values, dtype=numpy_type)
        except OverflowError:  # pa.array reports it as it always has
            return pa.array(list(values), arrow_type)
        return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)])
    if pa.types.is_string(arrow_type) and all(type(v) is str for v in values):
        return string_array(list(values))
    return pa.array(list(values), arrow_type)


def numpy_ints(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An integer Arrow array without nulls (chunked or not) as numpy, from its buffers (its
    ``to_numpy`` would import pandas)."""
    dtype = _INTEGERS[values.type]
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if len(chunks) == 1:
        return numpy_values(chunks[0], dtype)
    return np.concatenate([numpy_values(c, dtype) for c in chunks]) if chunks else np.zeros(0, dtype)


_FLOATS = {pa.float32(): np.float32, pa.float64(): np.float64}


def sole_int_key(table: pa.Table, keys: Sequence[str]) -> np.ndarray | None:
    """The values of ``table``'s key when it is a single null-free integer column, or None for
    any other key: the common key, whose order numpy checks and sorts in microseconds where an
    Arrow sort or comparison kernel costs tens of them on a small file's rows."""
    if len(keys) != 1:
        return None
    column = table.column(keys[0])
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    return numpy_ints(column)


def stable_int_order(values: np.ndarray) -> np.ndarray:
    """Indices that sort integer ``values`` ascending, stably (equal values keep their order).

    numpy's quicksort is about twice as fast as its stable sort on int64 keys, and when no value
    repeats every sort gives the one order; so quicksort, and the stable sort only when two
    adjacent sorted values are equal."""
    order = np.argsort(values)
    ordered = values[order]
    if len(ordered) > 1 and np.any(ordered[1:] == ordered[:-1]):
        return np.argsort(values, kind="stable")
    return order


def numpy_numbers(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A null-free integer, floating-point or timestamp Arrow array (chunked or not) as numpy,
    from its buffers: timestamps as their int64 counts (``to_numpy`` would import pandas)."""
    arrow_type = values.type
    if pa.types.is_integer(arrow_type):
        return numpy_ints(values)
    dtype = _FLOATS.get(arrow_type, np.int64 if pa.types.is_timestamp(arrow_type) else None)
    if dtype is None:
        raise TypeError(f"not a number column: {arrow_type}")
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if len(chunks) == 1:
        return numpy_values(chunks[0], dtype)
    return np.concatenate([numpy_values(c, dtype) for c in chunks]) if chunks else np.zeros(0, dtype)


def numpy_bool_values(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow array (chunked or not; nulls read as False) as numpy, from its bits."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if len(chunks) == 1:
        return numpy_bools(chunks[0])
    return np.concatenate([numpy_bools(c) for c in chunks]) if chunks else np.zeros(0, bool)


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows in ``schema`` (``schema.empty_table()`` imports pandas)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
