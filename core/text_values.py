"""Table values as text: the one encoding that ``scan --format jsonl|csv`` (and ``--output
x.jsonl|.csv``) writes and that ``write --input-format jsonl|csv`` reads back, so that a
``scan | write`` round trip gives back the same table.

The encoding (the README's "Values as text" section describes it for users):

- null: JSON ``null``; in CSV an empty unquoted field (an empty string is ``""``).
- BOOLEAN ``true``/``false``; integers as numbers.
- FLOAT/DOUBLE as numbers; NaN and the infinities, which JSON lacks, as the strings ``"NaN"``,
  ``"Infinity"``, ``"-Infinity"``.
- DECIMAL as a string with its exact digits (``"12.30"``).
- BYTES/BINARY/VARBINARY as standard base64 with padding.
- DATE ``2024-01-31``; TIME ``12:30:00.250``; TIMESTAMP ``2024-01-31T12:30:00.250`` with as
  many fractional digits as the value needs, in groups of 3 (none, 3, 6 or 9); TIMESTAMP_LTZ
  the same with ``+00:00``. Input may give any number of digits as long as the column's
  precision holds them all (nothing is rounded away), and any zone offset for LTZ.
- ARRAY as a JSON array, ROW as a JSON object, MAP as a JSON array of ``[key, value]`` pairs
  (an object is accepted too); in CSV each is the JSON text of that value.

Decoding is driven by the table's Arrow types; errors say which value could not be read
(``TextValueError``), and the input readers add the row and column.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import decimal
import json
import math
import re
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import pyarrow as pa


_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class TextValueError(ValueError):
    """A value that does not decode to its column's type; ``index`` is its row in the batch."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


# ---- encoding --------------------------------------------------------------------------------
class FloatText(float):
    """A JSON number with a fraction or an exponent that keeps its literal text (``1.50``),
    which Python's float forgets (``1.5``): a DECIMAL or STRING column takes the digits as
    written, and ``core.text_inference`` judges a column by them."""

    text: str

    def __new__(cls, text: str) -> "FloatText":
        number = super().__new__(cls, text)
        number.text = text
        return number


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` whose numbers with a fraction are ``FloatText``."""
    return json.loads(text, parse_float=FloatText)


def _fraction(micros: int, nanos: int = 0) -> str:
    """The fewest groups of 3 fractional digits that hold the value exactly."""
    total = micros * 1000 + nanos
    if total == 0:
        return ""
    if total % 1_000_000 == 0:
        return f".{total // 1_000_000:03d}"
    if total % 1000 == 0:
        return f".{total // 1000:06d}"
    return f".{total:09d}"


def _datetime_text(value: dt.datetime) -> str:
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    text += _fraction(value.microsecond, getattr(value, "nanosecond", 0))  # pandas' Timestamp has nanos
    offset = value.utcoffset()
    if offset is not None:
        minutes = int(offset.total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        text += f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return text


def json_value(value: Any) -> Any:
    """A Python value of a table cell (as ``pyarrow`` gives it) -> its JSON value."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dt.datetime):
        return _datetime_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}" + _fraction(value.microsecond)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_value(dataclasses.asdict(value))
    return value


def text_value(value: Any) -> str | None:
    """A cell as one CSV field's text: None for null, nested values as JSON text."""
    if value is None:
        return None
    v = json_value(value)
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def csv_field(text: str | None) -> str:
    """One CSV field: null empty and unquoted, an empty string ``""``, quotes where needed."""
    if text is None:
        return ""
    if text == "" or any(c in text for c in ',"\r\n') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_line(fields: Sequence[str | None]) -> str:
    return ",".join(csv_field(f) for f in fields) + "\n"


def python_values(data: pa.Table | pa.Array | pa.ChunkedArray) -> list[Any]:
    """``data.to_pylist()`` (a table's rows or a column's values) with nanosecond timestamps
    kept: pyarrow gives those only as pandas Timestamps (whose ``nanosecond`` the encoding
    reads), so pandas is let back in (``core.pandas_probe``) when ``data`` holds any."""
    if _has_nanoseconds(data.schema if hasattr(data, "schema") else data.type):
        from core import pandas_probe

        pandas_probe.restore()
    return data.to_pylist()


def _has_nanoseconds(t: Any) -> bool:
    import pyarrow as pa

    if isinstance(t, pa.Schema):
        return any(_has_nanoseconds(f.type) for f in t)
    if pa.types.is_timestamp(t):
        return t.unit == "ns"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_nanoseconds(t.value_type)
    if pa.types.is_map(t):
        return _has_nanoseconds(t.key_type) or _has_nanoseconds(t.item_type)
    if pa.types.is_struct(t):
        return any(_has_nanoseconds(f.type) for f in t)
    return False


def text_table(data: pa.Table) -> pa.Table:
    """Every column as text (CSV fields), nulls kept: for Arrow's CSV writer, which quotes
    strings and leaves nulls empty, as ``csv_field`` does."""
    import pyarrow as pa

    columns = [pa.array([text_value(v) for v in python_values(col)], pa.string()) for col in data.columns]
    return pa.Table.from_arrays(columns, names=data.column_names)


# ---- decoding --------------------------------------------------------------------------------
_UNITS = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_TIMESTAMP = re.compile(r"(\d{4,})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
                        r"(Z|[+-]\d\d:?\d\d)?$")
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?$")
_EPOCH = dt.datetime(1970, 1, 1)


def _nanos(digits: str | None) -> int:
    return int((digits or "").ljust(9, "0"))


def _count(nanos_of_second: int, unit: str, text: str) -> int:
    """Sub-second nanos as a count of ``unit``, refusing digits the unit would drop."""
    per = 1_000_000_000 // _UNITS[unit]
    if nanos_of_second % per:
        raise ValueError(f"{text!r} has more fractional digits than the column keeps ({unit})")
    return nanos_of_second // per


def parse_timestamp(text: str, t: pa.TimestampType) -> int:
    """ISO 8601 text -> the count of ``t.unit`` since the epoch (UTC for a zoned column)."""
    m = _TIMESTAMP.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not an ISO 8601 timestamp (YYYY-MM-DDTHH:MM:SS[.fff])")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    zone = m.group(8)
    if zone and not t.tz:
        raise ValueError(f"{text!r} has a zone; the column is a TIMESTAMP without time zone")
    moment = dt.datetime(year, month, day, hour, minute, second)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        moment -= sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    delta = moment - _EPOCH
    seconds = delta.days * 86400 + delta.seconds
    count = seconds * _UNITS[t.unit] + _count(_nanos(m.group(7)), t.unit, text)
    if not -(2 ** 63) <= count < 2 ** 63:  # only nanosecond counts can overflow (years 1677-2262)
        raise ValueError(f"{text!r} is outside 1677-09-21T00:12:43.145224192 to 2262-04-11T23:47:16.854775807, "
                         "the TIMESTAMP(7..9) values lakectl can hold")
    return count


def parse_time(text: str, t: pa.DataType) -> int:
    m = _TIME.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a time (HH:MM:SS[.fff])")
    hour, minute, second = (int(g) for g in m.groups()[:3])
    return (hour * 3600 + minute * 60 + second) * _UNITS[t.unit] + _count(_nanos(m.group(4)), t.unit, text)


def _parse_float(value: Any) -> float:
    if isinstance(value, str):
        if value in _FLOAT_WORDS:
            return _FLOAT_WORDS[value]
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def _expect(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if isinstance(value, bool) and kind is not bool:
        raise ValueError(f"{json.dumps(value)} is not {what}")
    if not isinstance(value, kind):
        raise ValueError(f"{json.dumps(value) if not isinstance(value, str) else repr(value)} is not {what}")
    return value


def decode_value(value: Any, t: pa.DataType) -> Any:
    """A value parsed from JSON (or a CSV field's text) -> a Python value ``pa.array`` takes
    for type ``t`` (timestamps and times as counts of their unit)."""
    import pyarrow as pa

    if value is None:
        return None
    if isinstance(value, (dt.date, dt.time, decimal.Decimal, bytes)):
        value = json_value(value)  # a value the JSON reader already typed: back to its text
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _expect(value, str, "a string")
    if pa.types.is_boolean(t):
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        return _expect(value, bool, "true or false")
    if pa.types.is_integer(t):
        return int(value) if isinstance(value, str) else _expect(value, int, "an integer")
    if pa.types.is_floating(t):
        return _parse_float(value)
    if pa.types.is_decimal(t):
        if isinstance(value, float):
            value = repr(value)
        return decimal.Decimal(str(_expect(value, (str, int), "a decimal")))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        try:
            return base64.b64decode(_expect(value, str, "base64 text"), validate=True)
        except binascii.Error as e:
            raise ValueError(f"{value!r} is not base64 ({e})") from None
    if pa.types.is_date(t):
        return dt.date.fromisoformat(_expect(value, str, "a date (YYYY-MM-DD)"))
    if pa.types.is_time(t):
        return parse_time(_expect(value, str, "a time"), t)
    if pa.types.is_timestamp(t):
        return parse_timestamp(_expect(value, str, "a timestamp"), t)
    if isinstance(value, str) and (pa.types.is_list(t) or pa.types.is_map(t) or pa.types.is_struct(t)):
        value = json.loads(value)  # nested values in CSV are JSON text
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [decode_value(v, t.value_type) for v in _expect(value, list, "an array")]
    if pa.types.is_map(t):
        pairs = value.items() if isinstance(value, dict) else _expect(value, list, "a map")
        return [(decode_value(k, t.key_type), decode_value(v, t.item_type)) for k, v in pairs]
    if pa.types.is_struct(t):
        row = _expect(value, dict, "an object")
        return {f.name: decode_value(row.get(f.name), f.type) for f in t}
    raise ValueError(f"no text encoding for type {t}")


def first_float_overflow(source: pa.Array | pa.ChunkedArray, converted: pa.Array | pa.ChunkedArray) -> int | None:
    """The index of the first finite ``source`` number that became an infinity in the
    floating-point column ``converted`` (1e39 in a FLOAT), or None.

    Arrow's casts overflow to Infinity silently; the value written would not be the value
    given, so writers refuse it as they refuse 128 for a TINYINT.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_floating(converted.type):
        return None
    infinite = pc.is_inf(converted)
    if not pc.any(infinite).as_py():
        return None
    try:
        meant = pc.is_inf(pc.cast(source, pa.float64(), safe=False))  # the input spelled Infinity
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        meant = pa.array([isinstance(v, float) and math.isinf(v) or v in _FLOAT_WORDS
                          for v in source.to_pylist()])
    bad = pc.and_(infinite, pc.invert(pc.fill_null(meant, False)))
    return int(pc.index(bad, True).as_py()) if pc.any(bad).as_py() else None


def float_overflow_message(value: Any, t: pa.DataType) -> str:
    name = "FLOAT" if t.bit_width == 32 else "DOUBLE"
    return f"{value} is out of range for {name} (it would be stored as Infinity)"


def check_float_range(source: pa.Array, converted: pa.Array) -> None:
    bad = first_float_overflow(source, converted)
    if bad is not None:
        raise TextValueError(bad, float_overflow_message(source[bad].as_py(), converted.type))


def first_bad(values: list[Any], t: pa.DataType) -> int:
    import pyarrow as pa

    for i, v in enumerate(values):
        try:
            pa.array([v], type=t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return i
    return 0
