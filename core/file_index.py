"""Paimon's file indexes (``file-index.<type>.columns``), read to skip data files.

A data file's index is one blob in Paimon's file-index format, embedded in the manifest
(``_EMBEDDED_FILE_INDEX``, when smaller than ``file-index.in-manifest-threshold``) or written
beside the data file as ``<data file>.index`` and listed in ``_EXTRA_FILES``. The blob is a
big-endian header (magic 1493475289347502, version 1, head length, then per column its name
and per index type its name, body offset and length, as Java's ``DataOutput.writeUTF``
strings and ints) followed by the bodies.

Only ``bloom-filter`` is used: its body is the number of hash functions (a big-endian int)
and the bit set (bit ``i`` is bit ``i % 8`` of byte ``i / 8``). A value hashes to 64 bits
(xxHash64, seed 0, of the UTF-8 or binary bytes; Thomas Wang's 64-bit integer hash of
integral values and dates), split into two 32-bit halves ``h1, h2``; for ``i`` in
``1..k`` the bit ``(h1 + i*h2)`` (32-bit, bits flipped when negative) modulo the bit count
must be set. A file whose filter lacks a value ``column = value`` asks for is skipped.
Values of other types never skip a file.
"""

from __future__ import annotations

import datetime as dt
import struct
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from core.types import DataType

if TYPE_CHECKING:
    from core.predicate import Comparison, Predicate

MAGIC = 1493475289347502
BLOOM_FILTER = "bloom-filter"
_M64 = (1 << 64) - 1


def _signed64(x: int) -> int:
    x &= _M64
    return x - (1 << 64) if x >> 63 else x


def _signed32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


# ---- the blob --------------------------------------------------------------------------------
def _utf(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", data, pos)
    return data[pos + 2:pos + 2 + n].decode("utf-8"), pos + 2 + n


def parse(blob: bytes) -> dict[str, dict[str, bytes]]:
    """column name -> index type -> body bytes; {} for a blob that is not a file index of version 1."""
    if len(blob) < 16:
        return {}
    magic, version, _head_length = struct.unpack_from(">qii", blob, 0)
    if magic != MAGIC or version != 1:
        return {}
    (columns,) = struct.unpack_from(">i", blob, 16)
    pos = 20
    out: dict[str, dict[str, bytes]] = {}
    for _ in range(columns):
        name, pos = _utf(blob, pos)
        (count,) = struct.unpack_from(">i", blob, pos)
        pos += 4
        for _ in range(count):
            kind, pos = _utf(blob, pos)
            start, length = struct.unpack_from(">ii", blob, pos)
            pos += 8
            out.setdefault(name, {})[kind] = blob[start:start + length]
    return out


# ---- hashes ----------------------------------------------------------------------------------
_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                           0x27D4EB2F165667C5)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def _merge(acc: int, val: int) -> int:
    return ((acc ^ _round(0, val)) * _P1 + _P4) & _M64


def xxh64(data: bytes, seed: int = 0) -> int:
    """xxHash64 of ``data`` as a signed 64-bit value (Java's long)."""
    n = len(data)
    pos = 0
    if n >= 32:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64
        while pos + 32 <= n:
            a, b, c, d = struct.unpack_from("<QQQQ", data, pos)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            pos += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M64
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while pos + 8 <= n:
        (k,) = struct.unpack_from("<Q", data, pos)
        h = ((_rotl(h ^ _round(0, k), 27) * _P1) + _P4) & _M64
        pos += 8
    if pos + 4 <= n:
        (k,) = struct.unpack_from("<I", data, pos)
        h = ((_rotl(h ^ ((k * _P1) & _M64), 23) * _P2) + _P3) & _M64
        pos += 4
    while pos < n:
        h = (_rotl(h ^ ((data[pos] * _P5) & _M64), 11) * _P1) & _M64
        pos += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return _signed64(h)


def long_hash(key: int) -> int:
    """Thomas Wang's 64-bit integer hash, in Java long arithmetic (``>>`` keeps the sign)."""
    key = _signed64(key)
    key = _signed64(~key + (key << 21))
    key = _signed64(key ^ (key >> 24))
    key = _signed64(key + (key << 3) + (key << 8))
    key = _signed64(key ^ (key >> 14))
    key = _signed64(key + (key << 2) + (key << 4))
    key = _signed64(key ^ (key >> 28))
    key = _signed64(key + (key << 31))
    return key


_INTEGRAL = {"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"}
_STRINGS = {"CHAR", "VARCHAR", "STRING"}
_BINARY = {"BINARY", "VARBINARY", "BYTES"}


def value_hash(value: Any, type_: DataType) -> int | None:
    """Paimon's 64-bit hash of a non-null value for its bloom filter; None when lakectl does not
    hash that type (the file is then never skipped)."""
    name = type_.name.upper()
    if name in _STRINGS and isinstance(value, str):
        return xxh64(value.encode("utf-8"))
    if name in _BINARY and isinstance(value, (bytes, bytearray)):
        return xxh64(bytes(value))
    if name in _INTEGRAL and isinstance(value, int) and not isinstance(value, bool):
        return long_hash(value)
    if name == "DATE" and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return long_hash((value - dt.date(1970, 1, 1)).days)
    return None


# ---- bloom filter ----------------------------------------------------------------------------
def bloom_may_contain(body: bytes, hash64: int) -> bool:
    if len(body) <= 4:
        return True
    (k,) = struct.unpack_from(">i", body, 0)
    bits = (len(body) - 4) * 8
    h1 = _signed32(hash64)
    h2 = _signed32(hash64 >> 32)
    for i in range(1, k + 1):
        combined = _signed32(h1 + i * h2)
        if combined < 0:
            combined = ~combined
        pos = combined % bits
        if not body[4 + (pos >> 3)] & (1 << (pos & 7)):
            return False
    return True


def equalities(predicate: Predicate | None) -> Iterator[Comparison]:
    """The ``column = value`` conditions every matching row meets (top-level conjuncts)."""
    # imported here: a write builds indexes (below) and never reads a predicate, so it does not
    # load the predicate module (10-20 ms)
    from core.predicate import And, Comparison

    if isinstance(predicate, Comparison) and predicate.op == "=":
        yield predicate
    elif isinstance(predicate, And):
        for child in predicate.children:
            yield from equalities(child)


def may_match(indexes: Mapping[str, Mapping[str, bytes]], conditions: list[tuple[str, Any, DataType]]) -> bool:
    """False when a bloom filter of the file rules out one of (file column name, value, type)."""
    for column, value, type_ in conditions:
        body = indexes.get(column, {}).get(BLOOM_FILTER)
        if body is None:
            continue
        h = value_hash(value, type_)
        if h is not None and not bloom_may_contain(body, h):
            return False
    return True


# ---- writing ---------------------------------------------------------------------------------
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1


def bloom_columns(options: Mapping[str, str]) -> list[str]:
    text = options.get("file-index.bloom-filter.columns") or ""
    return [c.strip() for c in text.split(",") if c.strip()]


def _long_hashes(values: "np.ndarray") -> "np.ndarray":
    """Thomas Wang's hash over an int64 array (numpy wraps as Java's long does)."""
    import numpy as np

    with np.errstate(over="ignore"):
        key = values.astype(np.int64)
        key = ~key + (key << np.int64(21))
        key = key ^ (key >> np.int64(24))
        key = key + (key << np.int64(3)) + (key << np.int64(8))
        key = key ^ (key >> np.int64(14))
        key = key + (key << np.int64(2)) + (key << np.int64(4))
        key = key ^ (key >> np.int64(28))
        key = key + (key << np.int64(31))
    return key


def _column_hashes(column: Any, type_: DataType) -> "np.ndarray | None":
    """The 64-bit hashes of a column's distinct non-null values, or None for a type lakectl
    does not index."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    name = type_.name.upper()
    values = pc.unique(column.drop_null() if hasattr(column, "drop_null") else pc.drop_null(column))
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if name in _INTEGRAL:
        return _long_hashes(values.cast(pa.int64()).to_numpy(zero_copy_only=False))
    if name == "DATE":
        return _long_hashes(values.cast(pa.int32()).cast(pa.int64()).to_numpy(zero_copy_only=False))
    if name in _STRINGS:
        return np.array([xxh64(v.encode("utf-8")) for v in values.to_pylist()], dtype=np.int64)
    if name in _BINARY:
        return np.array([xxh64(bytes(v)) for v in values.to_pylist()], dtype=np.int64)
    return None


def bloom_body(hashes: "np.ndarray", items: int, fpp: float) -> bytes:
    """Paimon's BloomFilter64 of ``hashes``: the hash function count (big-endian int) and the bits."""
    import math

    import numpy as np

    n = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    num_bits = n + (8 - n % 8)
    k = max(1, int(math.floor(num_bits / items * math.log(2) + 0.5)))
    bits = np.zeros(num_bits // 8, dtype=np.uint8)
    h = hashes.astype(np.int64)
    h1 = h.astype(np.int32)
    h2 = (h >> np.int64(32)).astype(np.int32)
    with np.errstate(over="ignore"):
        for i in range(1, k + 1):
            combined = (h1 + np.int32(i) * h2).astype(np.int32)
            combined = np.where(combined < 0, ~combined, combined).astype(np.int64)
            pos = combined % num_bits
            np.bitwise_or.at(bits, pos >> 3, (np.int64(1) << (pos & 7)).astype(np.uint8))
    return struct.pack(">i", k) + bits.tobytes()


def _utf_bytes(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">H", len(raw)) + raw


def build(table: Any, fields: list, options: Mapping[str, str]) -> bytes | None:
    """The file-index blob of a data file's rows (an Arrow table with the columns of
    ``fields``) for the table's ``file-index.bloom-filter.columns``; None when none applies."""
    bodies: dict[str, bytes] = {}
    by_name = {f.name: f for f in fields}
    for column in bloom_columns(options):
        f = by_name.get(column)
        if f is None:
            continue
        hashes = _column_hashes(table.column(column), f.type)
        if hashes is None:
            continue
        items = int(options.get(f"file-index.bloom-filter.{column}.items", DEFAULT_ITEMS))
        fpp = float(options.get(f"file-index.bloom-filter.{column}.fpp", DEFAULT_FPP))
        bodies[column] = bloom_body(hashes, items, fpp)
    if not bodies:
        return None
    names = b"".join(_utf_bytes(c) + _utf_bytes(BLOOM_FILTER) for c in bodies)
    head_length = 8 + 4 + 4 + 4 + len(bodies) * 8 + len(bodies) * 4 + 4 + len(names)
    head = [struct.pack(">qiii", MAGIC, 1, head_length, len(bodies))]
    offset = head_length
    for column, body in bodies.items():
        head.append(_utf_bytes(column) + struct.pack(">i", 1) + _utf_bytes(BLOOM_FILTER)
                    + struct.pack(">ii", offset, len(body)))
        offset += len(body)
    head.append(struct.pack(">i", 0))
    return b"".join(head) + b"".join(bodies.values())
