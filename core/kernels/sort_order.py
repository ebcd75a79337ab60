"""The row orders of Paimon's sort compaction (``order_strategy``): ``order`` (lexicographic by
the columns), ``zorder`` and ``hilbert`` (space-filling curves over the columns, so that a
filter on any of them finds its rows in few files and row groups).

The curves work on one unsigned 64-bit key per column that sorts as the column does
(``order_keys``): integers, dates, times and timestamps with the sign bit flipped, floats by
their IEEE bits (negative ones inverted), decimals as doubles, strings and binaries by their
first eight bytes, booleans as 0 and 1; a null is 0, ahead of every value, as Paimon's
indexers put nulls first. Each key is then replaced by its dense rank among the rows being
sorted, spread over 32 bits (``spread_ranks``): a BIGINT column holding 0..1,000,000 varies
only in its low 20 bits and a DOUBLE in [0, 1) mostly in its mantissa, so interleaving the raw
bits (as Paimon's ZIndexer interleaves bytes) would order by whichever column varies highest
and leave the other unclustered; ranks give every column the same weight, as Delta's
``range_partition_id`` does for its Z-order. ``zorder`` interleaves the spread keys' bits,
most significant first; ``hilbert`` takes them through Skilling's transform ("Programming the
Hilbert curve", 2004) and interleaves the result, whose order visits neighbouring cells one
step apart. The curve keys are a layout choice: readers never see them, only files whose rows
cluster.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

STRATEGIES = ("order", "zorder", "hilbert")
_SIGN = np.uint64(1 << 63)
_HILBERT_BITS = 32


def sort_indices(table: pa.Table, columns: Sequence[str], strategy: str) -> pa.Array:
    """The row order that ``strategy`` gives ``table`` on ``columns`` (stable: ties keep their order)."""
    if strategy == "order":
        return pc.sort_indices(table, sort_keys=[(c, "ascending", "at_start") for c in columns])
    keys = [spread_ranks(order_keys(table.column(c))) for c in columns]
    words = zorder_words(keys) if strategy == "zorder" else hilbert_words(keys)
    # np.lexsort sorts by its last key first: most significant word last; stable.
    return pa.array(np.lexsort(list(reversed(words))) if words else np.arange(table.num_rows))


def order_keys(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """One uint64 per value that sorts as the values do; nulls are 0."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = arr.type
    valid = np.asarray(arr.is_valid(), dtype=bool)
    if pa.types.is_boolean(t):
        keys = np.asarray(arr.fill_null(False), dtype=np.uint64)
    elif pa.types.is_integer(t) or pa.types.is_temporal(t):
        ints = np.asarray(arr.cast(pa.int64(), safe=False).fill_null(0), dtype=np.int64)
        keys = ints.view(np.uint64) ^ _SIGN
    elif pa.types.is_floating(t) or pa.types.is_decimal(t):
        floats = np.asarray(arr.cast(pa.float64(), safe=False).fill_null(0.0), dtype=np.float64)
        bits = floats.view(np.uint64)
        keys = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        keys = np.fromiter((_prefix(v) for v in arr.to_pylist()), dtype=np.uint64, count=len(arr))
    else:
        raise ValueError(f"cannot order by a column of type {t}")
    return np.where(valid, keys, np.uint64(0)).astype(np.uint64)


def spread_ranks(keys: np.ndarray) -> np.ndarray:
    """Each key's dense rank among ``keys``, spread evenly over the top 32 bits (order kept,
    equal keys equal)."""
    distinct, rank = np.unique(keys, return_inverse=True)
    top = np.uint64(max(len(distinct) - 1, 1))
    spread = (rank.astype(np.uint64) * np.uint64(0xFFFFFFFF)) // top
    return spread << np.uint64(32)


def _prefix(value: str | bytes | None) -> int:
    if value is None:
        return 0
    data = value.encode("utf-8") if isinstance(value, str) else value
    return int.from_bytes(data[:8].ljust(8, b"\0"), "big")


def zorder_words(keys: Sequence[np.ndarray], bits: int = 32) -> list[np.ndarray]:
    """The keys' top ``bits`` bits interleaved (bit b of every key, then bit b-1, ...; the
    first key first), as uint64 words, most significant word first."""
    n = len(keys[0]) if keys else 0
    total = bits * len(keys)
    words = [np.zeros(n, dtype=np.uint64) for _ in range((total + 63) // 64)]
    for i in range(total):
        key, bit = keys[i % len(keys)], 63 - i // len(keys)
        word, pos = divmod(i, 64)
        words[word] |= ((key >> np.uint64(bit)) & np.uint64(1)) << np.uint64(63 - pos)
    return words


def hilbert_words(keys: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The Hilbert index of each row's point (the keys' top 32 bits), as uint64 words."""
    if len(keys) == 1:
        return [keys[0]]
    shift = np.uint64(64 - _HILBERT_BITS)
    x = [k >> shift for k in keys]
    _axes_to_transpose(x, _HILBERT_BITS)
    # The transpose holds the index's bits spread over the axes: bit b of x[0], x[1], ...
    return zorder_words([v << shift for v in x], _HILBERT_BITS)


def _axes_to_transpose(x: list[np.ndarray], bits: int) -> None:
    """Skilling's AxestoTranspose, in place, on every point at once."""
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:
        p = np.uint64(q - 1)
        for i in range(n):
            high = (x[i] & np.uint64(q)) != 0
            x[0] = np.where(high, x[0] ^ p, x[0])  # invert the low bits of x[0]
            t = np.where(high, np.uint64(0), (x[0] ^ x[i]) & p)  # or exchange them with x[i]'s
            x[0] ^= t
            x[i] ^= t
        q >>= 1
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (bits - 1)
    while q > 1:
        t = np.where((x[n - 1] & np.uint64(q)) != 0, t ^ np.uint64(q - 1), t)
        q >>= 1
    for i in range(n):
        x[i] ^= t


__all__ = ["STRATEGIES", "hilbert_words", "order_keys", "sort_indices", "spread_ranks", "zorder_words"]
