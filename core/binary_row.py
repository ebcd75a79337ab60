"""Paimon's BinaryRow: the byte layout of partitions, min/max keys and stats rows.

This module owns the row layout of spec section 5 for one row of Python values:
``encode`` writes the serialized form stored in Avro ``bytes`` (4-byte big-endian
arity, then the row bytes), ``row_bytes`` the row bytes alone (what the bucket hash
reads) and ``decode`` the inverse. Columnar encoding for hashing whole Arrow
columns lives in ``core.bucket``; it shares the layout helpers defined here.

Layout in brief (all numbers little-endian): a null-bit region (byte 0 is the row
kind, field ``i`` is null iff bit ``i + 8`` is set), one 8-byte slot per field, then a
variable region of 8-byte-aligned values addressed from the slots as
``(offset << 32) | size``.

Nulls of non-compact DECIMAL (precision > 18) and TIMESTAMP (precision > 3) follow
Java, not pypaimon: Java's ``RowHelper`` and generated projections write them with
``writeDecimal(pos, null)``/``writeTimestamp(pos, null)``, which reserve zeroed
variable space (16 or 8 bytes) and point the slot at it. pypaimon writes an
all-zero slot instead. Readers see a null either way, but partition equality and
the bucket hash compare bytes, and Java is the writer lakectl must agree with.
"""

from __future__ import annotations

import datetime as dt
import operator
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

from core.nano_datetime import NanoDatetime, epoch_nanos
from core.types import DataType

HEADER_BITS = 8  # byte 0 of the null-bit region holds the row kind
MAX_INLINE_BYTES = 7  # strings/binaries up to this length live inside their slot
COMPACT_DECIMAL_PRECISION = 18
COMPACT_TIMESTAMP_PRECISION = 3
NON_COMPACT_DECIMAL_BYTES = 16

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
NANOS_PER_MILLI = 1_000_000

# Wide enough for 38-digit unscaled values at any scale, so scaling never rounds.
_DECIMAL_CONTEXT = Context(prec=100, rounding=ROUND_HALF_UP)

EMPTY_ROW: bytes = b"\x00\x00\x00\x00" + b"\x00" * 8


# ---- layout helpers (shared with core.bucket) ------------------------------------------
def null_bits_size(arity: int) -> int:
    """Bytes of the null-bit region for a row of ``arity`` fields."""
    return ((arity + 63 + HEADER_BITS) // 64) * 8


def fixed_part_size(arity: int) -> int:
    """Bytes of the null-bit region plus the slots."""
    return null_bits_size(arity) + 8 * arity


def is_compact_decimal(precision: int) -> bool:
    return precision <= COMPACT_DECIMAL_PRECISION


def is_compact_timestamp(precision: int) -> bool:
    return precision <= COMPACT_TIMESTAMP_PRECISION


def pad8(n: int) -> int:
    """``n`` rounded up to a multiple of 8."""
    return (n + 7) & ~7


def minimal_twos_complement(n: int) -> bytes:
    """Big-endian two's complement in the fewest bytes, as Java's ``BigInteger.toByteArray``."""
    magnitude = ~n if n < 0 else n
    return n.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


# ---- value conversions ------------------------------------------------------------------
def decimal_unscaled(value: Any, precision: int, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (HALF_UP, as Java's ``Decimal.fromBigDecimal``).

    Raises:
        ValueError: the value is not finite or needs more than ``precision`` digits
            (Java would store null; lakectl refuses rather than lose the value).
    """
    if isinstance(value, float):
        value = Decimal(repr(value))
    elif not isinstance(value, Decimal):
        value = Decimal(operator.index(value))
    if not value.is_finite():
        raise ValueError(f"cannot store {value} in DECIMAL({precision}, {scale})")
    try:
        quantized = value.quantize(Decimal(1).scaleb(-scale), context=_DECIMAL_CONTEXT)
    except InvalidOperation as exc:
        raise ValueError(f"cannot store {value} in DECIMAL({precision}, {scale})") from exc
    unscaled = int(quantized.scaleb(scale, context=_DECIMAL_CONTEXT))
    if len(str(abs(unscaled))) > precision:
        raise ValueError(f"{value} does not fit DECIMAL({precision}, {scale})")
    return unscaled


def decimal_from_unscaled(unscaled: int, scale: int) -> Decimal:
    return Decimal(unscaled).scaleb(-scale, context=_DECIMAL_CONTEXT)


def datetime_from_parts(millis: int, nano_of_milli: int, ltz: bool) -> dt.datetime:
    """The datetime of epoch ``millis`` + ``nano_of_milli``: a NanoDatetime when there are
    digits past the microsecond (a TIMESTAMP(7..9) partition value or stats bound)."""
    value = EPOCH + dt.timedelta(microseconds=millis * 1_000 + nano_of_milli // 1_000)
    value = value.replace(tzinfo=dt.timezone.utc) if ltz else value
    return NanoDatetime.of(value, nano_of_milli % 1_000)


def _date_days(value: Any) -> int:
    if isinstance(value, dt.datetime):
        raise TypeError(f"DATE takes datetime.date, got {value!r}")
    if isinstance(value, dt.date):
        return (value - EPOCH_DATE).days
    return operator.index(value)


def _time_millis(value: Any) -> int:
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000 + value.microsecond // 1_000
    return operator.index(value)


def _millis_to_time(millis: int) -> dt.time:
    seconds, ms = divmod(millis, 1_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return dt.time(hour, minute, second, ms * 1_000)


def _as_bytes(value: Any, t: DataType) -> bytes:
    if t.is_string:
        if not isinstance(value, str):
            raise TypeError(f"{t} takes str, got {type(value).__name__}")
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{t} takes bytes, got {type(value).__name__}")


# ---- writing ----------------------------------------------------------------------------
# A field writer returns (slot, variable bytes). With variable bytes, the slot holds
# only the low 32 bits (size or nano-of-milli); the caller adds the offset.
_Written = tuple[int, bytes | None]


def _int_slot(width: int) -> Callable[[Any, DataType], _Written]:
    def write(value: Any, t: DataType) -> _Written:
        if isinstance(value, bool) and t.name != "BOOLEAN":
            raise TypeError(f"{t} does not take a bool")
        return int.from_bytes(operator.index(value).to_bytes(width, "little", signed=True), "little"), None
    return write


def _write_boolean(value: Any, t: DataType) -> _Written:
    return (1 if value else 0), None


def _write_float(value: Any, t: DataType) -> _Written:
    return struct.unpack("<I", struct.pack("<f", value))[0], None


def _write_double(value: Any, t: DataType) -> _Written:
    return struct.unpack("<Q", struct.pack("<d", value))[0], None


_write_int = _int_slot(4)


def _write_date(value: Any, t: DataType) -> _Written:
    return _write_int(_date_days(value), t)


def _write_time(value: Any, t: DataType) -> _Written:
    return _write_int(_time_millis(value), t)


def _write_decimal(value: Any, t: DataType) -> _Written:
    unscaled = decimal_unscaled(value, t.precision, t.scale)
    if is_compact_decimal(t.precision):
        return unscaled & 0xFFFF_FFFF_FFFF_FFFF, None
    raw = minimal_twos_complement(unscaled)
    return len(raw), raw.ljust(NON_COMPACT_DECIMAL_BYTES, b"\x00")


def _write_timestamp(value: Any, t: DataType) -> _Written:
    millis, nano_of_milli = divmod(epoch_nanos(value, t.name == "TIMESTAMP_LTZ"), NANOS_PER_MILLI)
    if is_compact_timestamp(t.precision):
        return millis & 0xFFFF_FFFF_FFFF_FFFF, None
    return nano_of_milli, struct.pack("<q", millis)


def _write_bytes(value: Any, t: DataType) -> _Written:
    raw = _as_bytes(value, t)
    if len(raw) <= MAX_INLINE_BYTES:
        return int.from_bytes(raw.ljust(7, b"\x00") + bytes([0x80 | len(raw)]), "little"), None
    return len(raw), raw.ljust(pad8(len(raw)), b"\x00")


_WRITERS: dict[str, Callable[[Any, DataType], _Written]] = {
    "BOOLEAN": _write_boolean,
    "TINYINT": _int_slot(1),
    "SMALLINT": _int_slot(2),
    "INT": _write_int,
    "BIGINT": _int_slot(8),
    "FLOAT": _write_float,
    "DOUBLE": _write_double,
    "DECIMAL": _write_decimal,
    "CHAR": _write_bytes,
    "VARCHAR": _write_bytes,
    "BINARY": _write_bytes,
    "VARBINARY": _write_bytes,
    "DATE": _write_date,
    "TIME": _write_time,
    "TIMESTAMP": _write_timestamp,
    "TIMESTAMP_LTZ": _write_timestamp,
}


# Types whose value is stored as one run of bytes that depends on the value alone: for an
# integer or a DATE the low bytes of its slot (little-endian), for text and binary its bytes
# (inline in the slot or in the variable part). TINYINT and BOOLEAN are left out: one byte
# is found almost anywhere, so looking for it saves nothing.
_INT_WIDTHS = {"SMALLINT": 2, "INT": 4, "BIGINT": 8, "DATE": 4}


def value_bytes(value: Any, t: DataType) -> bytes | None:
    """Bytes that every BinaryRow holding ``value`` in a field of type ``t`` contains in one
    run, whoever wrote it (Java, pypaimon or lakectl): a row whose bytes lack them cannot hold
    the value. None for a type or value without such a run worth looking for."""
    try:
        if t.name in _INT_WIDTHS:
            number = _date_days(value) if t.name == "DATE" else value
            if isinstance(number, bool) or not isinstance(number, int):
                return None
            return number.to_bytes(_INT_WIDTHS[t.name], "little", signed=True)
        if t.name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            raw = _as_bytes(value, t)
            return raw if len(raw) >= 2 else None
    except (TypeError, OverflowError):  # a value the type cannot hold: no row holds it either
        return None
    return None


def null_reservation(t: DataType) -> int:
    """Variable bytes Java reserves for a null of type ``t`` (see the module docstring)."""
    if t.name == "DECIMAL" and not is_compact_decimal(t.precision):
        return NON_COMPACT_DECIMAL_BYTES
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ") and not is_compact_timestamp(t.precision):
        return 8
    return 0


def _writer(t: DataType) -> Callable[[Any, DataType], _Written]:
    try:
        return _WRITERS[t.name]
    except KeyError:
        raise ValueError(f"BinaryRow fields of type {t} are not supported") from None


def row_bytes(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """The row bytes of ``values`` (without the arity prefix); what the bucket hash reads.

    Raises:
        ValueError: value count and type count differ, a type is not supported, or a
            value does not fit its type.
        TypeError: a value of the wrong Python type.
    """
    if len(values) != len(types):
        raise ValueError(f"{len(values)} values for {len(types)} types")
    header = null_bits_size(len(types))
    fixed_size = header + 8 * len(types)
    fixed = bytearray(fixed_size)
    variable = bytearray()
    for pos, (value, t) in enumerate(zip(values, types)):
        slot_at = header + 8 * pos
        if value is None:
            bit = pos + HEADER_BITS
            fixed[bit // 8] |= 1 << (bit % 8)
            reserve = null_reservation(t)
            if reserve:
                fixed[slot_at:slot_at + 8] = ((fixed_size + len(variable)) << 32).to_bytes(8, "little")
                variable += bytes(reserve)
            continue
        slot, var = _writer(t)(value, t)
        if var is not None:
            slot |= (fixed_size + len(variable)) << 32
            variable += var
        fixed[slot_at:slot_at + 8] = slot.to_bytes(8, "little")
    return bytes(fixed) + bytes(variable)


def encode(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """The serialized BinaryRow of ``values``: 4-byte big-endian arity, then the row bytes."""
    return struct.pack(">i", len(types)) + row_bytes(values, types)


# ---- reading ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Row:
    """Bounds-checked reads from one row's bytes (offsets count from the row start)."""

    data: bytes
    header: int  # size of the null-bit region, where the slots begin

    def slot(self, pos: int) -> bytes:
        at = self.header + 8 * pos
        return self.take(at, 8)

    def take(self, at: int, size: int) -> bytes:
        if at < 0 or at + size > len(self.data):
            raise ValueError(f"BinaryRow truncated: need bytes {at}..{at + size}, have {len(self.data)}")
        return self.data[at:at + size]


def _read_int(width: int) -> Callable[[_Row, int, DataType], Any]:
    def read(row: _Row, pos: int, t: DataType) -> Any:
        return int.from_bytes(row.slot(pos)[:width], "little", signed=True)
    return read


def _read_boolean(row: _Row, pos: int, t: DataType) -> bool:
    return row.slot(pos)[0] != 0


def _read_float(row: _Row, pos: int, t: DataType) -> float:
    return struct.unpack("<f", row.slot(pos)[:4])[0]


def _read_double(row: _Row, pos: int, t: DataType) -> float:
    return struct.unpack("<d", row.slot(pos))[0]


_read_int32 = _read_int(4)


def _read_date(row: _Row, pos: int, t: DataType) -> dt.date:
    return EPOCH_DATE + dt.timedelta(days=_read_int32(row, pos, t))


def _read_time(row: _Row, pos: int, t: DataType) -> dt.time:
    return _millis_to_time(_read_int32(row, pos, t))


def _offset_and_size(row: _Row, pos: int) -> tuple[int, int]:
    word = int.from_bytes(row.slot(pos), "little")
    return word >> 32, word & 0xFFFF_FFFF


def _read_decimal(row: _Row, pos: int, t: DataType) -> Decimal:
    if is_compact_decimal(t.precision):
        unscaled = int.from_bytes(row.slot(pos), "little", signed=True)
    else:
        offset, size = _offset_and_size(row, pos)
        unscaled = int.from_bytes(row.take(offset, size), "big", signed=True)
    return decimal_from_unscaled(unscaled, t.scale)


def _read_timestamp(row: _Row, pos: int, t: DataType) -> dt.datetime:
    ltz = t.name == "TIMESTAMP_LTZ"
    if is_compact_timestamp(t.precision):
        return datetime_from_parts(int.from_bytes(row.slot(pos), "little", signed=True), 0, ltz)
    offset, nano_of_milli = _offset_and_size(row, pos)
    millis = int.from_bytes(row.take(offset, 8), "little", signed=True)
    return datetime_from_parts(millis, nano_of_milli, ltz)


def _read_bytes(row: _Row, pos: int, t: DataType) -> str | bytes:
    slot = row.slot(pos)
    if slot[7] & 0x80:
        raw = slot[:slot[7] & 0x7F]
    else:
        offset, size = _offset_and_size(row, pos)
        raw = row.take(offset, size)
    return raw.decode("utf-8") if t.is_string else raw


_READERS: dict[str, Callable[[_Row, int, DataType], Any]] = {
    "BOOLEAN": _read_boolean,
    "TINYINT": _read_int(1),
    "SMALLINT": _read_int(2),
    "INT": _read_int32,
    "BIGINT": _read_int(8),
    "FLOAT": _read_float,
    "DOUBLE": _read_double,
    "DECIMAL": _read_decimal,
    "CHAR": _read_bytes,
    "VARCHAR": _read_bytes,
    "BINARY": _read_bytes,
    "VARBINARY": _read_bytes,
    "DATE": _read_date,
    "TIME": _read_time,
    "TIMESTAMP": _read_timestamp,
    "TIMESTAMP_LTZ": _read_timestamp,
}


def arity_of(data: bytes) -> int:
    """The field count in a serialized BinaryRow's prefix."""
    if len(data) < 4:
        raise ValueError(f"BinaryRow of {len(data)} bytes has no arity prefix")
    return struct.unpack_from(">i", data)[0]


def sort_key(values: Sequence[Any]) -> tuple:
    """An ordering key for decoded row values (keys, partitions): field by field, nulls first,
    as Paimon's key comparator orders them."""
    return tuple((v is not None, v) for v in values)


def decode(data: bytes, types: Sequence[DataType]) -> tuple[Any, ...]:
    """Values of the first ``len(types)`` fields of a serialized BinaryRow.

    The layout follows the arity stored in ``data``, so a row with more fields than
    ``types`` (e.g. read with an older, shorter schema) decodes its leading fields.

    Raises:
        ValueError: the stored arity is smaller than ``len(types)``, the bytes are
            truncated, or a type is not supported.
    """
    arity = arity_of(data)
    if arity < len(types):
        raise ValueError(f"BinaryRow has {arity} fields, {len(types)} expected")
    row = _Row(bytes(data[4:]), null_bits_size(arity))
    row.take(0, fixed_part_size(arity))
    out: list[Any] = []
    for pos, t in enumerate(types):
        bit = pos + HEADER_BITS
        if row.data[bit // 8] & (1 << (bit % 8)):
            out.append(None)
            continue
        try:
            reader = _READERS[t.name]
        except KeyError:
            raise ValueError(f"BinaryRow fields of type {t} are not supported") from None
        out.append(reader(row, pos, t))
    return tuple(out)
