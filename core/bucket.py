"""Fixed-bucket assignment: Paimon's hash of the bucket-key BinaryRow (spec section 7).

This module owns the bucket function of ``bucket-function.type=default``: MurmurHash3
x86_32 (seed 42, word loop only) over the bucket key's BinaryRow bytes, read as a
signed int, then Java's ``Math.abs(hash % numBuckets)``.

``bucket_of`` does it for one row of Python values. ``assign_buckets`` does it for
whole Arrow columns with numpy, one batch of rows at a time: each column is laid out
in BinaryRow form (a uint64 slot per row, plus the rows' variable parts as 8-byte
words with a word count per row), the null bits and slots become a list of 32-bit
row words, and the Murmur word loop runs once per word position over all rows.
Rows whose variable parts differ in length are sorted longest first, so variable
word ``j`` is mixed into the prefix of rows that still have one. The Python loops
run per word position and per column, never per row.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core import binary_row as br
from core.types import DataType

SEED = 42
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_C3 = 0xE6546B64
_F1 = 0x85EBCA6B
_F2 = 0xC2B2AE35
_MASK32 = 0xFFFF_FFFF
_MASK64 = 0xFFFF_FFFF_FFFF_FFFF

# Rows hashed per numpy pass; bounds the temporary arrays (about 100 bytes a row).
_BATCH_ROWS = 1 << 20


# ---- scalar ---------------------------------------------------------------------------
def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK32


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * _F1) & _MASK32
    h ^= h >> 13
    h = (h * _F2) & _MASK32
    return h ^ (h >> 16)


def hash_bytes(data: bytes) -> int:
    """MurmurHash3 x86_32 with seed 42 as a signed 32-bit int (Java ``BinaryRow.hashCode``).

    Raises:
        ValueError: the length is not a multiple of 4; Paimon's word-only variant has
            no tail step, and BinaryRow bytes are always whole words.
    """
    if len(data) % 4:
        raise ValueError(f"hash input must be whole 4-byte words, got {len(data)} bytes")
    h = SEED
    for (k,) in struct.iter_unpack("<I", data):
        k = (_rotl32((k * _C1) & _MASK32, 15) * _C2) & _MASK32
        h = (_rotl32(h ^ k, 13) * 5 + _C3) & _MASK32
    h = _fmix32(h ^ len(data))
    return h - (1 << 32) if h & 0x8000_0000 else h


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """Standard MurmurHash3 x86_32 over any bytes (tail included), unsigned, as Guava's
    ``Hashing.murmur3_32()`` computes it; Paimon's external-path entropy hashes file names so."""
    h = seed & _MASK32
    whole = len(data) - len(data) % 4
    for (k,) in struct.iter_unpack("<I", data[:whole]):
        k = (_rotl32((k * _C1) & _MASK32, 15) * _C2) & _MASK32
        h = (_rotl32(h ^ k, 13) * 5 + _C3) & _MASK32
    tail = data[whole:]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= (_rotl32((k * _C1) & _MASK32, 15) * _C2) & _MASK32
    return _fmix32(h ^ len(data))


def bucket_from_hash(hash_code: int, num_buckets: int) -> int:
    """Java's ``Math.abs(hash % numBuckets)``; ``%`` truncates, so this is ``|hash| mod n``."""
    return abs(hash_code) % num_buckets


def _check_buckets(num_buckets: int) -> None:
    if num_buckets < 1:
        raise ValueError(f"fixed bucket mode needs at least 1 bucket, got {num_buckets}")


def bucket_of(values: Sequence[Any], types: Sequence[DataType], num_buckets: int) -> int:
    """The bucket of one bucket-key row of Python values (``core.binary_row`` conventions)."""
    _check_buckets(num_buckets)
    return bucket_from_hash(hash_bytes(br.row_bytes(values, types)), num_buckets)


# ---- columnar layout ------------------------------------------------------------------
# Everything below works on one batch of rows at a time and keeps row data in numpy:
# 8-byte slots as uint64 arrays, variable parts as little-endian 8-byte words laid out
# row after row, with a word count per row.
@dataclass(frozen=True, slots=True)
class _Var:
    """Variable parts of a batch: ``counts[i]`` 8-byte words for row ``i``, rows back to back."""

    words: np.ndarray  # uint64, read little-endian as the row bytes are
    counts: np.ndarray  # int64

    @classmethod
    def uniform(cls, words: np.ndarray, per_row: int) -> _Var:
        return cls(words.reshape(-1), np.full(words.size // per_row, per_row, dtype=np.int64))


@dataclass(frozen=True, slots=True)
class _Laid:
    """One column of a batch in BinaryRow form.

    ``slots`` holds each row's slot; for rows with variable words it holds only the low
    32 bits (size or nano-of-milli), and the row offset is added when rows are laid out.
    """

    slots: np.ndarray
    nulls: np.ndarray
    var: _Var | None = None


def _starts(counts: np.ndarray) -> np.ndarray:
    """Where each row's words begin when rows of ``counts`` words lie back to back."""
    return np.cumsum(counts) - counts


def _nulls(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return arr.is_null().to_numpy(zero_copy_only=False)


def _ints(arr: pa.Array, int_type: pa.DataType) -> np.ndarray:
    """The array's values as numpy ints of ``int_type``, nulls as 0.

    Temporal columns are reinterpreted (their storage is the int); anything else is
    cast, and the safe cast refuses values that do not fit, as Java would.
    """
    if not arr.type.equals(int_type):
        arr = arr.view(int_type) if pa.types.is_temporal(arr.type) else arr.cast(int_type)
    if arr.null_count:
        arr = pc.fill_null(arr, 0)
    return arr.to_numpy(zero_copy_only=False)


def _lay_int(width: int, int_type: pa.DataType) -> Callable[[pa.Array, DataType], _Laid]:
    unsigned = np.dtype(f"<u{width}")

    def lay(arr: pa.Array, t: DataType) -> _Laid:
        # The slot holds only the type's own bytes; the rest stays zero.
        return _Laid(_ints(arr, int_type).view(unsigned).astype(np.uint64), _nulls(arr))
    return lay


def _lay_boolean(arr: pa.Array, t: DataType) -> _Laid:
    if not pa.types.is_boolean(arr.type):
        arr = arr.cast(pa.bool_())
    values = pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint64)
    return _Laid(values, _nulls(arr))


def _lay_float(float_type: pa.DataType, bits: np.dtype) -> Callable[[pa.Array, DataType], _Laid]:
    def lay(arr: pa.Array, t: DataType) -> _Laid:
        if not arr.type.equals(float_type):
            arr = arr.cast(float_type)
        values = (pc.fill_null(arr, 0.0) if arr.null_count else arr).to_numpy(zero_copy_only=False)
        return _Laid(values.view(bits).astype(np.uint64), _nulls(arr))
    return lay


def _lay_date(arr: pa.Array, t: DataType) -> _Laid:
    if pa.types.is_date64(arr.type):
        arr = arr.cast(pa.date32())
    return _lay_int(4, pa.int32())(arr, t)


_NANOS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _millis_and_nanos(values: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Split counts of ``unit`` since an epoch into (millis, nano-of-milli), flooring."""
    per_unit = _NANOS_PER_UNIT[unit]
    if per_unit >= br.NANOS_PER_MILLI:
        return values * (per_unit // br.NANOS_PER_MILLI), np.zeros_like(values)
    millis, rest = np.divmod(values, br.NANOS_PER_MILLI // per_unit)
    return millis, rest * per_unit


def _lay_time(arr: pa.Array, t: DataType) -> _Laid:
    if pa.types.is_time(arr.type):
        storage = pa.int32() if arr.type.bit_width == 32 else pa.int64()
        millis, _ = _millis_and_nanos(_ints(arr, storage).astype(np.int64), arr.type.unit)
    else:
        millis = _ints(arr, pa.int32())
    return _Laid(millis.astype(np.int32).view(np.uint32).astype(np.uint64), _nulls(arr))


def _lay_decimal(arr: pa.Array, t: DataType) -> _Laid:
    target = pa.decimal128(t.precision, t.scale)
    if not arr.type.equals(target):
        arr = arr.cast(target)  # safe cast: refuses to drop digits
    nulls = _nulls(arr)
    # decimal128 is 16-byte little-endian two's complement: (low word, high word).
    words = np.frombuffer(arr.buffers()[1], dtype="<u8")[2 * arr.offset: 2 * (arr.offset + len(arr))]
    low, high = words[0::2].astype(np.uint64), words[1::2].astype(np.uint64)
    low[nulls] = 0
    high[nulls] = 0
    if br.is_compact_decimal(t.precision):
        return _Laid(low, nulls)
    return _lay_wide_decimal(low, high, nulls)


def _lay_wide_decimal(low: np.ndarray, high: np.ndarray, nulls: np.ndarray) -> _Laid:
    """DECIMAL p > 18: Java's minimal big-endian bytes, left-aligned in 16 reserved bytes."""
    negative = (high >> np.uint64(63)).astype(bool)
    sign = np.where(negative, np.uint64(_MASK64), np.uint64(0))
    mag_high, mag_low = high ^ sign, low ^ sign  # x, or ~x when negative
    # BigInteger.toByteArray length is bitLength // 8 + 1; bitLength >= 8k iff mag >= 2**(8k-1).
    size = np.ones(len(low), dtype=np.int64)
    for k in range(1, 16):
        bit = 8 * k - 1
        if bit < 64:
            size += (mag_high != 0) | (mag_low >= np.uint64(1 << bit))
        else:
            size += mag_high >= np.uint64(1 << (bit - 64))
    # Shift the 128-bit value left so its minimal bytes lead, then store big-endian.
    shift = (8 * (16 - size)).astype(np.uint64)
    wide = shift >= 64
    small = np.where(wide, np.uint64(0), shift)
    carry = np.where(small == 0, np.uint64(0), low >> (np.uint64(64) - np.maximum(small, np.uint64(1))))
    new_high = np.where(wide, low << np.where(wide, shift - np.uint64(64), np.uint64(0)), (high << small) | carry)
    new_low = np.where(wide, np.uint64(0), low << small)
    new_high[nulls] = 0
    new_low[nulls] = 0
    # Word values whose little-endian bytes are the big-endian bytes of each half.
    words = np.stack([new_high.byteswap(), new_low.byteswap()], axis=1)
    return _Laid(np.where(nulls, 0, size).astype(np.uint64), nulls, _Var.uniform(words, 2))


def _timestamp_parts(arr: pa.Array, t: DataType) -> tuple[np.ndarray, np.ndarray]:
    """(epoch millis, nano-of-milli) per row; integer columns are epoch nanoseconds."""
    if pa.types.is_timestamp(arr.type):
        if arr.type.tz is not None and t.name == "TIMESTAMP":
            raise ValueError(f"{t} is wall-clock time; got a column with time zone {arr.type.tz}")
        unit = arr.type.unit
    elif pa.types.is_integer(arr.type):
        unit = "ns"
    else:
        raise ValueError(f"cannot read {t} from an Arrow {arr.type} column")
    return _millis_and_nanos(_ints(arr, pa.int64()), unit)


def _lay_timestamp(arr: pa.Array, t: DataType) -> _Laid:
    nulls = _nulls(arr)
    millis, nanos = _timestamp_parts(arr, t)
    millis[nulls] = 0
    if br.is_compact_timestamp(t.precision):
        return _Laid(millis.view(np.uint64), nulls)
    nanos[nulls] = 0
    # Nulls keep their 8 reserved bytes, as Java writes them (see core.binary_row).
    return _Laid(nanos.astype(np.uint64), nulls, _Var.uniform(millis.view(np.uint64), 1))


# Arrow's string and binary arrays are the same bytes; reading both as binary skips a copy.
_AS_BINARY = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary(),
              pa.binary(): pa.binary(), pa.large_binary(): pa.large_binary()}
# _KEEP_LOW[n] keeps the low n bytes of a little-endian 8-byte read.
_KEEP_LOW = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)


def _binary_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(value offsets, data bytes) of a string or binary array."""
    binary = _AS_BINARY.get(arr.type)
    arr = arr.view(binary) if binary is not None else arr.cast(pa.large_binary())
    offset_type = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=offset_type)[arr.offset: arr.offset + len(arr) + 1]
    data_buffer = arr.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return offsets.astype(np.int64), data


def _reads(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Little-endian 8-byte words at byte ``starts``, each keeping its low ``sizes`` (<= 8) bytes."""
    # Copy only the bytes these reads touch (the buffer may back a much larger array),
    # plus 8 zero bytes so no read runs past the end.
    first = int(starts.min())
    used = data[first: int((starts + sizes).max())]
    padded = np.concatenate([used, np.zeros(8, dtype=np.uint8)])
    # Overlapping unaligned 8-byte views, one starting at every byte.
    windows = np.ndarray(shape=(used.size + 1,), dtype="<u8", buffer=padded, strides=(1,))
    return windows[starts - first] & _KEEP_LOW[sizes]


def _long_values(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The words of values longer than 7 bytes, zero-padded to whole words, row after row."""
    width = int(lengths[0])
    if counts.all() and (lengths == width).all():
        # All values long and equally long: they lie back to back, a rows x width matrix.
        padded = np.zeros((len(lengths), 8 * int(counts[0])), dtype=np.uint8)
        padded[:, :width] = data[starts[0]: starts[0] + len(lengths) * width].reshape(-1, width)
        return padded.view("<u8").reshape(-1)
    total = int(counts.sum())
    word_in_row = np.arange(total) - np.repeat(_starts(counts), counts)
    byte_in_row = 8 * word_in_row
    left = np.repeat(lengths, counts) - byte_in_row
    return _reads(data, np.repeat(starts, counts) + byte_in_row, np.minimum(left, 8))


def _lay_bytes(arr: pa.Array, t: DataType) -> _Laid:
    nulls = _nulls(arr)
    offsets, data = _binary_parts(arr)
    lengths = np.where(nulls, 0, np.diff(offsets))
    starts = offsets[:-1]
    long = lengths > br.MAX_INLINE_BYTES
    short = ~nulls & ~long
    slots = np.zeros(len(arr), dtype=np.uint64)
    if short.any():
        rows = np.nonzero(short)[0]
        inline = _reads(data, starts[rows], lengths[rows])
        slots[rows] = inline | ((lengths[rows].astype(np.uint64) | np.uint64(0x80)) << np.uint64(56))
    if not long.any():
        return _Laid(slots, nulls)
    slots[long] = lengths[long].astype(np.uint64)
    counts = np.where(long, (lengths + 7) // 8, 0)
    return _Laid(slots, nulls, _Var(_long_values(data, starts, lengths, counts), counts))


_LAYOUTS: dict[str, Callable[[pa.Array, DataType], _Laid]] = {
    "BOOLEAN": _lay_boolean,
    "TINYINT": _lay_int(1, pa.int8()),
    "SMALLINT": _lay_int(2, pa.int16()),
    "INT": _lay_int(4, pa.int32()),
    "BIGINT": _lay_int(8, pa.int64()),
    "FLOAT": _lay_float(pa.float32(), np.dtype("<u4")),
    "DOUBLE": _lay_float(pa.float64(), np.dtype("<u8")),
    "DECIMAL": _lay_decimal,
    "CHAR": _lay_bytes,
    "VARCHAR": _lay_bytes,
    "BINARY": _lay_bytes,
    "VARBINARY": _lay_bytes,
    "DATE": _lay_date,
    "TIME": _lay_time,
    "TIMESTAMP": _lay_timestamp,
    "TIMESTAMP_LTZ": _lay_timestamp,
}


def _lay(arr: pa.Array, t: DataType) -> _Laid:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    try:
        layout = _LAYOUTS[t.name]
    except KeyError:
        raise ValueError(f"{t} cannot be part of a bucket key") from None
    return layout(arr, t)


def _join(pieces: Sequence[_Var], rows: int) -> _Var:
    """Per row, the variable words of every column in column order."""
    if len(pieces) == 1:
        return pieces[0]
    widths = [int(p.counts[0]) for p in pieces]
    if all((p.counts == w).all() for p, w in zip(pieces, widths)):
        # Every piece has the same word count on every row: join them as matrices.
        matrix = np.concatenate([p.words.reshape(rows, w) for p, w in zip(pieces, widths)], axis=1)
        return _Var.uniform(matrix, sum(widths))
    counts = np.sum([p.counts for p in pieces], axis=0)
    words = np.zeros(int(counts.sum()), dtype=np.uint64)
    at = _starts(counts)  # where the next piece's words go, per row
    for piece in pieces:
        inside = np.arange(piece.words.size) - np.repeat(_starts(piece.counts), piece.counts)
        words[np.repeat(at, piece.counts) + inside] = piece.words
        at = at + piece.counts
    return _Var(words, counts)


# A row word is a uint32 array with one word per row, or an int when every row has the
# same word there (a header without nulls); leading constant words are mixed once.
_Word = int | np.ndarray


def _split_words(word64: np.ndarray) -> list[_Word]:
    """The two little-endian 32-bit words of a column of 64-bit words."""
    return [word64.astype(np.uint32), (word64 >> np.uint64(32)).astype(np.uint32)]


def _layout_rows(laid: Sequence[_Laid], rows: int) -> tuple[list[_Word], _Var | None]:
    """The fixed part as a list of 32-bit row words, and the rows' variable parts."""
    arity = len(laid)
    header: list[np.ndarray | None] = [None] * (br.null_bits_size(arity) // 8)
    next_offset = np.full(rows, br.fixed_part_size(arity), dtype=np.uint64)
    slot_words: list[_Word] = []
    pieces = []
    for pos, column in enumerate(laid):
        if column.nulls.any():
            bit = pos + br.HEADER_BITS
            word = header[bit // 64]
            if word is None:
                word = header[bit // 64] = np.zeros(rows, dtype=np.uint64)
            word |= column.nulls.astype(np.uint64) << np.uint64(bit % 64)
        slots = column.slots
        if column.var is not None:
            has_var = column.var.counts > 0
            slots = slots | np.where(has_var, next_offset << np.uint64(32), np.uint64(0))
            next_offset += (8 * column.var.counts).astype(np.uint64)
            pieces.append(column.var)
        slot_words += _split_words(slots)
    words: list[_Word] = []
    for word in header:
        words += [0, 0] if word is None else _split_words(word)
    return words + slot_words, (_join(pieces, rows) if pieces else None)


# ---- vectorized murmur ----------------------------------------------------------------
def _mix_scalar(h: int, k: int) -> int:
    k = (_rotl32((k * _C1) & _MASK32, 15) * _C2) & _MASK32
    return (_rotl32(h ^ k, 13) * 5 + _C3) & _MASK32


def _mix(h: np.ndarray, k: np.ndarray) -> None:
    """One word step for many rows, in place on ``h``; ``k`` is scratch and gets overwritten."""
    k *= np.uint32(_C1)
    spill = k >> np.uint32(17)
    k <<= np.uint32(15)
    k |= spill
    k *= np.uint32(_C2)
    h ^= k
    np.right_shift(h, np.uint32(19), out=spill)
    h <<= np.uint32(13)
    h |= spill
    h *= np.uint32(5)
    h += np.uint32(_C3)


def _fmix(h: np.ndarray) -> np.ndarray:
    h ^= h >> np.uint32(16)
    h *= np.uint32(_F1)
    h ^= h >> np.uint32(13)
    h *= np.uint32(_F2)
    h ^= h >> np.uint32(16)
    return h


def _hash_rows(words: list[_Word], var: _Var | None, rows: int) -> np.ndarray:
    seed = SEED
    position = 0
    while position < len(words) and isinstance(words[position], int):
        seed = _mix_scalar(seed, words[position])
        position += 1
    h = np.full(rows, seed, dtype=np.uint32)
    for word in words[position:]:
        _mix(h, np.full(rows, word, dtype=np.uint32) if isinstance(word, int) else word.copy())
    length = np.full(rows, 4 * len(words), dtype=np.uint32)
    if var is not None and var.words.size:
        length += (8 * var.counts).astype(np.uint32)
        _mix_variable(h, var)
    h ^= length
    return _fmix(h)


def _mix_variable(h: np.ndarray, var: _Var) -> None:
    """Mix each row's variable words into ``h``."""
    data = var.words.view("<u4")
    counts = 2 * var.counts
    if counts.min() == counts.max():
        # Equal lengths: the variable parts are a rows x words matrix as they lie.
        matrix = data.reshape(len(h), -1)
        for j in range(matrix.shape[1]):
            _mix(h, matrix[:, j].astype(np.uint32))
        return
    # Longest rows first, so the rows that still have a word j are a prefix.
    order = np.argsort(-counts, kind="stable")
    counts = counts[order]
    starts = (2 * _starts(var.counts))[order]
    active = np.searchsorted(-counts, -np.arange(int(counts[0])), side="left")
    hs = h[order]
    for j, n in enumerate(active):
        _mix(hs[:n], data[starts[:n] + j].astype(np.uint32))
    h[order] = hs


def _batch(column: pa.Array | pa.ChunkedArray, start: int, size: int) -> pa.Array:
    part = column.slice(start, size)
    if isinstance(part, pa.ChunkedArray):
        return part.combine_chunks() if part.num_chunks else pa.array([], type=part.type)
    return part


def hash_codes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]) -> np.ndarray:
    """Java's ``BinaryRow.hashCode()`` of every row of these columns laid out as one
    BinaryRow, vectorized: the int32 codes that fixed buckets take ``abs(h % n)`` of and
    that dynamic-bucket tables store in their HASH index (``core.dynamic_bucket``).

    Agrees with ``hash_bytes(binary_row.row_bytes(...))`` row by row. Columns may use any
    Arrow type that casts to the field's type; TIMESTAMP columns may be timestamps of any
    unit or int64 epoch nanoseconds.

    Raises:
        ValueError: no columns, mismatched lengths, a type that cannot be hashed, or values
            that do not fit their type.
    """
    if not columns or len(columns) != len(types):
        raise ValueError(f"{len(columns)} columns for {len(types)} key types")
    rows = len(columns[0])
    if any(len(c) != rows for c in columns):
        raise ValueError("key columns differ in length")
    out = np.empty(rows, dtype=np.int32)
    for start in range(0, rows, _BATCH_ROWS):
        size = min(_BATCH_ROWS, rows - start)
        laid = [_lay(_batch(c, start, size), t) for c, t in zip(columns, types)]
        words, var = _layout_rows(laid, size)
        out[start:start + size] = _hash_rows(words, var, size).view(np.int32)
    return out


def assign_buckets(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
                   num_buckets: int) -> np.ndarray:
    """The bucket of every row of the bucket-key columns, vectorized.

    Agrees with ``bucket_of`` row by row (see ``hash_codes`` for the accepted columns).

    Args:
        columns: the bucket-key columns, in bucket-key order, all the same length.
        types: their Paimon types.
        num_buckets: the table's ``bucket`` option (>= 1).

    Returns:
        An int32 array of buckets in ``0..num_buckets-1``.

    Raises:
        ValueError: no columns, mismatched lengths, a type that cannot be a bucket key,
            or values that do not fit their type.
    """
    _check_buckets(num_buckets)
    hashes = hash_codes(columns, types).astype(np.int64)
    return (np.abs(hashes) % num_buckets).astype(np.int32)
