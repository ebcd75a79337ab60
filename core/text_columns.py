"""The text encoding of ``core.text_values``, a column at a time: the same bytes as encoding
every cell in Python (``text_value`` / ``json_value``), at Arrow's and numpy's speed.

Each column becomes an Arrow string array of its cells' text (Arrow's casts where they print
exactly our encoding: integers, booleans, decimals, dates, most doubles; numpy for the rest:
timestamps and times with 0/3/6/9 fractional digits, base64); CSV quoting, JSON escaping and
the joining of cells into lines are Arrow string kernels. Nested values become JSON text
built from their children's JSON text. A type this module does not know (a timestamp in a
zone other than UTC, DATE64) is encoded cell by cell with ``core.text_values``, so the bytes
are the same whichever path a column takes.

Everything here is imported on the first text output: pyarrow.compute and numpy are not
needed by commands that print no rows.
"""

from __future__ import annotations

import decimal
import json
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from core.arrow_values import boolean_array, int_array, numpy_bools, numpy_values, string_array
from core.arrow_values import string_scalar as _lit
from core.text_values import (TextValueError, check_float_range, decode_value, first_bad, json_value, python_values,
                               text_value)

# Every character Python's ``str.strip()`` removes (``str.isspace``), for RE2: a CSV field
# with one at either end is quoted, as ``text_values.csv_field`` does.
_SPACES = ("\\t\\n\\x{0b}\\x{0c}\\r\\x{1c}\\x{1d}\\x{1e}\\x{1f} \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}"
           "\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}")
_NEEDS_QUOTES = f'[,"\\r\\n]|^[{_SPACES}]|[{_SPACES}]$'
_JSON_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CONTROL = "[\\x{00}-\\x{1f}]"
_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)
_UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_UTC = ("UTC", "Etc/UTC", "+00:00", "Z")
# Days since the epoch of 0001-01-01 and 9999-12-31: Python's dates (the per-cell encoding
# refuses values beyond them, and so does this one by handing them to it).
_MIN_DAY, _MAX_DAY = -719162, 2932896


# ---- the text of one column ------------------------------------------------------------------
class _Column:
    """A column's cells as text: ``text`` (a string array, null where the cell is null) and
    whether JSON shows that text as a string (quoted) rather than as it is (numbers,
    booleans, nested values' JSON); ``json`` and ``csv`` where a column's JSON or CSV text
    is not derived from ``text`` that way (NaN quoted in JSON only; the per-cell path).
    ``bare``: no cell's text is ever empty or holds a character CSV quotes (numbers, dates,
    times), so CSV need not look."""

    __slots__ = ("text", "quoted", "json", "csv", "bare")

    def __init__(self, text: pa.Array, quoted: bool, json: pa.Array | None = None,
                 csv: pa.Array | None = None, bare: bool = False) -> None:
        self.text, self.quoted, self.json, self.csv, self.bare = text, quoted, json, csv, bare


def _plain(arr: pa.Array) -> pa.Array:
    """``arr`` in one of the types the encoders below know (dictionary decoded, large string
    and binary types as their plain forms, float as double: Python prints a float's double)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return _plain(arr.dictionary_decode())
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return arr.cast(pa.string())
    if pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t):
        return arr.cast(pa.binary())
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return arr.cast(pa.float64())
    return arr


def _encode(arr: pa.Array) -> _Column:
    arr = _plain(arr)
    t = arr.type
    if pa.types.is_null(t):
        return _Column(pa.nulls(len(arr), pa.string()), False)
    if pa.types.is_string(t):
        return _Column(arr, True)
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return _Column(arr.cast(pa.string()), False, bare=True)
    if pa.types.is_float64(t):
        return _float_text(arr)
    if pa.types.is_decimal(t) and t.scale >= 0:
        return _Column(_decimal_text(arr), True, bare=True)
    if pa.types.is_binary(t):
        return _Column(_base64(arr), True)
    if pa.types.is_date32(t):
        days = _int_values(arr)
        if _in_range(days, arr):
            return _Column(arr.cast(pa.string()), True, bare=True)
    if pa.types.is_time(t):
        return _Column(_time_text(arr), True, bare=True)
    if pa.types.is_timestamp(t) and (t.tz is None or t.tz in _UTC):
        text = _timestamp_text(arr)
        if text is not None:
            return _Column(text, True, bare=True)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _Column(_list_json(arr), False)
    if pa.types.is_map(t):
        return _Column(_map_json(arr), False)
    if pa.types.is_struct(t) and len({f.name for f in t}) == t.num_fields:
        return _Column(_struct_json(arr), False)
    return _per_cell(arr)


def canonical_text(arr: pa.Array) -> pa.Array:
    """Each cell's text as ``scan`` prints it in CSV (null for null): the text a value must
    have for ``core.text_inference`` to give its column this type."""
    return _encode(arr).text


def _per_cell(arr: pa.Array) -> _Column:
    """The Python encoding, cell by cell, for what the encoders above do not cover: JSON text for
    every cell, so the column reads as raw JSON; CSV takes the ``text_value`` form."""
    values = python_values(arr)
    json_texts = pa.array([None if v is None else json.dumps(json_value(v), ensure_ascii=False) for v in values],
                          pa.string())
    return _Column(json_texts, False, csv=pa.array([text_value(v) for v in values], pa.string()))


def _int_values(arr: pa.Array) -> np.ndarray:
    """The integers behind a temporal array, nulls as 0."""
    values = numpy_values(arr, np.int32 if arr.type.bit_width == 32 else np.int64).astype(np.int64)
    if arr.null_count:
        values[_nulls(arr)] = 0
    return values


def _nulls(arr: pa.Array) -> np.ndarray:
    return ~numpy_bools(arr.is_valid())


def _in_range(days: np.ndarray, arr: pa.Array) -> bool:
    valid = ~_nulls(arr)
    return bool(((days[valid] >= _MIN_DAY) & (days[valid] <= _MAX_DAY)).all())


def _join(*parts: pa.Array | str) -> pa.Array:
    """``binary_join_element_wise`` of arrays and literal texts, the last part the separator
    (literals as scalars made from memory: see core/arrow_values.py)."""
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(*(_lit(p) if isinstance(p, str) else p for p in parts))


# ---- numbers -----------------------------------------------------------------------------------
def _float_text(arr: pa.Array) -> _Column:
    """Doubles as Python's ``repr`` prints them: Arrow prints the same shortest digits, so
    its text serves where both print them positionally (adding Python's ``.0`` to whole
    numbers); other magnitudes (Arrow and Python switch to exponents at different places:
    Arrow writes 1e15 as ``1e+15``) go through ``repr``. NaN and the infinities are the
    words JSON lacks, quoted in JSON."""
    import pyarrow.compute as pc

    values = numpy_values(arr, np.float64)
    if arr.null_count:
        values = values.copy()
        values[_nulls(arr)] = np.nan  # their text is made null again below
    text = arr.cast(pa.string())
    offsets, chars = _utf8(text)
    finite = np.isfinite(values)
    magnitude = np.abs(values)
    positional = ((magnitude >= 1e-4) & (magnitude < 1e16)) | (values == 0)
    positional &= ~_rows_holding(offsets, chars, ord("e"))
    # Positional shortest digits of a whole number have no fraction, of any other number one:
    # Arrow's "3" is Python's "3.0"
    whole = positional & (values == np.trunc(values))
    if whole.any():
        text = _string_array(*_append_to_rows(offsets, chars, whole, b".0"), text)
    others = ~positional & finite
    if others.any():
        reprs = string_array([repr(v) for v in values[others].tolist()])
        text = pc.replace_with_mask(text, boolean_array(others), reprs)
    if not finite.all():
        words = pc.if_else(boolean_array(np.isnan(values)), _lit("NaN"),
                           pc.if_else(boolean_array(values > 0), _lit("Infinity"), _lit("-Infinity")))
        text = pc.if_else(boolean_array(finite), text, words)
        text = pc.if_else(arr.is_null(), pa.nulls(len(arr), pa.string()), text)
        json_text = pc.if_else(boolean_array(finite), text, _join('"', text, '"', ""))
        return _Column(text, False, json=json_text, bare=True)
    return _Column(text, False, bare=True)


def _decimal_text(arr: pa.Array) -> pa.Array:
    """Decimals with all their scale's digits: Arrow's text, but Arrow writes a value below
    1e-6 (a zero with a scale above 6 among them) with an exponent, so those go to Python."""
    import pyarrow.compute as pc

    if pa.types.is_decimal128(arr.type) and arr.type.precision <= 18:
        text = _small_decimal_text(arr)
        if text is not None:
            return text
    text = arr.cast(pa.string())
    offsets, chars = _utf8(text)
    exponent = _rows_holding(offsets, chars, ord("E"))
    if not exponent.any():
        return text
    fixed = string_array([format(v, "f") for v in arr.filter(boolean_array(exponent)).to_pylist()])
    return pc.replace_with_mask(text, boolean_array(exponent), fixed)


def _small_decimal_text(arr: pa.Array) -> pa.Array | None:
    """DECIMAL(p <= 18, s): the unscaled values fit 64 bits, so their text is Arrow's text of
    integers (a fraction of the time of its decimal text) with the point put ``s`` digits
    from the end. None when a value has no digit before the point (|value| < 1: the zeros
    in front are Arrow's decimal text's to write)."""
    scale = arr.type.scale
    # a decimal128 is two 64-bit words, the low one first: for these values that word is the value
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[2 * arr.offset:2 * (arr.offset + len(arr))]
    unscaled = words[::2].copy()
    if arr.null_count:
        unscaled[_nulls(arr)] = 10 ** scale  # any value with a digit before the point: its text is dropped
    if (np.abs(unscaled) < 10 ** scale).any():
        return None
    text = int_array(unscaled).cast(pa.string())
    offsets, chars = _utf8(text)
    if scale:
        chars = np.insert(chars, offsets[1:] - scale, ord("."))
        offsets = offsets + np.arange(len(offsets))
    return _string_array(chars, offsets, arr)


# ---- the bytes of a string array ------------------------------------------------------------------
def _utf8(text: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array's offsets (from its first value's, as int64) and the UTF-8 bytes they
    cut, as numpy views (null slots may hold bytes: the checks below treat them as values)."""
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset:text.offset + len(text) + 1]
    offsets = offsets.astype(np.int64)
    data = text.buffers()[2]
    chars = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offsets - offsets[0], chars[offsets[0]:offsets[-1]]


def _rows_holding(offsets: np.ndarray, chars: np.ndarray, byte: int) -> np.ndarray:
    """Which values hold ``byte`` (an ASCII character): found in the bytes, a few at a time."""
    rows = np.zeros(len(offsets) - 1, dtype=bool)
    found = np.flatnonzero(chars == byte)
    if len(found):
        rows[np.searchsorted(offsets, found, side="right") - 1] = True
    return rows


def _append_to_rows(offsets: np.ndarray, chars: np.ndarray, rows: np.ndarray,
                    suffix: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets) with ``suffix`` after each value where ``rows``."""
    ends = np.repeat(offsets[1:][rows], len(suffix))
    added = np.tile(np.frombuffer(suffix, dtype=np.uint8), int(rows.sum()))
    grown = np.concatenate([[0], np.cumsum(rows) * len(suffix)])
    return np.insert(chars, ends, added), offsets + grown


# ---- bytes -------------------------------------------------------------------------------------
def _base64(arr: pa.Array) -> pa.Array:
    """Standard base64 with padding of each value: the values' bytes are laid out in slots
    padded to multiples of 3, encoded 3 bytes to 4 characters at once, then the characters
    that stand for padding become ``=``."""
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset:arr.offset + len(arr) + 1].astype(np.int64)
    data = arr.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    padded = (lengths + 2) // 3 * 3
    slot = np.concatenate([[0], np.cumsum(padded)])
    source = raw[offsets[0]:offsets[-1]]
    # each source byte's place in the padded layout: its offset in its value + its slot's start
    owner = np.repeat(np.arange(len(lengths)), lengths)
    place = np.arange(len(source)) - (offsets[:-1] - offsets[0])[owner] + slot[:-1][owner]
    layout = np.zeros(int(slot[-1]), dtype=np.uint8)
    layout[place] = source
    groups = layout.reshape(-1, 3).astype(np.uint32)
    word = (groups[:, 0] << 16) | (groups[:, 1] << 8) | groups[:, 2]
    chars = _B64[np.stack([(word >> 18) & 63, (word >> 12) & 63, (word >> 6) & 63, word & 63], axis=1)].reshape(-1)
    out_offsets = slot // 3 * 4
    short = padded - lengths  # 0, 1 or 2 padding bytes in the value's last group
    ends = out_offsets[1:]
    chars[(ends - 1)[short >= 1]] = ord("=")
    chars[(ends - 2)[short == 2]] = ord("=")
    return _string_array(chars, out_offsets, arr)


def _string_array(chars: np.ndarray, offsets: np.ndarray, like: pa.Array) -> pa.Array:
    """A string array of ``chars`` cut at ``offsets``, null where ``like`` is."""
    validity = _copy_bits(like.is_valid()) if like.null_count else None
    return pa.Array.from_buffers(pa.string(), len(like),
                                 [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(chars)],
                                 null_count=like.null_count)


def _copy_bits(valid: pa.BooleanArray) -> pa.Buffer:
    """A boolean array's bits from bit 0 (a slice's bits start at its offset)."""
    return pa.concat_arrays([valid]).buffers()[1] if valid.offset else valid.buffers()[1]


def _template(n: int, text: bytes) -> np.ndarray:
    """An n x len(text) character matrix, every row ``text`` (the digits are filled in after)."""
    matrix = np.empty((n, len(text)), dtype=np.uint8)
    matrix[:] = np.frombuffer(text, dtype=np.uint8)
    return matrix


def _put(matrix: np.ndarray, start: int, width: int, values: np.ndarray) -> None:
    """Write non-negative integers as ``width`` zero-padded digits at column ``start`` (int32
    arithmetic: every field here, nanoseconds included, is below 2**31)."""
    left = values.astype(np.int32)
    for column in range(start + width - 1, start - 1, -1):
        matrix[:, column] = left % 10 + 48
        left //= 10


def _compact(matrix: np.ndarray, lengths: np.ndarray, like: pa.Array) -> pa.Array:
    """Rows of a character matrix, each cut to its length, as a string array."""
    keep = np.arange(matrix.shape[1])[None, :] < lengths[:, None]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return _string_array(np.ascontiguousarray(matrix[keep]), offsets, like)


# ---- times and timestamps -------------------------------------------------------------------------
_TIME = b"00:00:00.000000000"
_TIMESTAMP = b"0000-00-00T00:00:00.000000000"


def _fraction_lengths(nanos: np.ndarray) -> np.ndarray:
    """Characters of ``.fffffffff`` to keep: none for a whole second, else the fewest groups
    of 3 digits that hold the value (1 + 3, 6 or 9)."""
    return np.where(nanos == 0, 0, np.where(nanos % 1_000_000 == 0, 4, np.where(nanos % 1000 == 0, 7, 10)))


def _put_clock(matrix: np.ndarray, start: int, seconds_of_day: np.ndarray, nanos: np.ndarray) -> None:
    """HH:MM:SS.fffffffff at column ``start`` of a template."""
    _put(matrix, start, 2, seconds_of_day // 3600)
    _put(matrix, start + 3, 2, seconds_of_day // 60 % 60)
    _put(matrix, start + 6, 2, seconds_of_day % 60)
    _put(matrix, start + 9, 9, nanos)


def _split(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A time or timestamp column as (whole seconds, nanoseconds of the second), floored."""
    per = _UNIT_PER_SECOND[arr.type.unit]
    values = _int_values(arr)
    seconds = values // per
    return seconds, (values - seconds * per) * (1_000_000_000 // per)


def _time_text(arr: pa.Array) -> pa.Array:
    """HH:MM:SS[.fff]: Python's time holds microseconds, so a nanosecond TIME prints those."""
    seconds, nanos = _split(arr)
    nanos -= nanos % 1000
    matrix = _template(len(arr), _TIME)
    _put_clock(matrix, 0, seconds, nanos)
    return _compact(matrix, 8 + _fraction_lengths(nanos), arr)


def _dates(days: np.ndarray) -> np.ndarray:
    """YYYY-MM-DD of days since 1970-01-01 as an n x 10 character matrix: Arrow's text of a
    date (4-digit years within Python's, as ``date.isoformat``)."""
    dates = pa.Array.from_buffers(pa.date32(), len(days), [None, pa.py_buffer(days.astype(np.int32))])
    text = dates.cast(pa.string())
    return np.frombuffer(text.buffers()[2], dtype=np.uint8)[:len(days) * 10].reshape(-1, 10)


def _timestamp_text(arr: pa.Array) -> pa.Array | None:
    """YYYY-MM-DDTHH:MM:SS[.fff][+00:00]; None when a value is outside Python's years."""
    seconds, nanos = _split(arr)
    days = np.floor_divide(seconds, 86400)
    if not _in_range(days, arr):
        return None
    if arr.type.tz is None:
        text = _arrow_timestamp_text(arr, nanos)
        if text is not None:
            return text
    n = len(arr)
    zoned = arr.type.tz is not None
    matrix = _template(n, _TIMESTAMP + (b"000000" if zoned else b""))
    matrix[:, :10] = _dates(days)  # null rows' days are 0: 1970-01-01
    _put_clock(matrix, 11, seconds - days * 86400, nanos)
    lengths = _fraction_lengths(nanos)
    if not zoned:
        return _compact(matrix, 19 + lengths, arr)
    # the zone goes right after the kept fraction digits: lay it over the first dropped ones
    zone = np.frombuffer(b"+00:00", np.uint8)
    columns = (19 + lengths)[:, None] + np.arange(6)[None, :]
    matrix[np.arange(n)[:, None], columns] = zone
    return _compact(matrix, 25 + lengths, arr)


# Characters of Arrow's text of a timestamp of each unit: "YYYY-MM-DD HH:MM:SS" and all the
# unit's fractional digits.
_ARROW_WIDTH = {"s": 19, "ms": 23, "us": 26, "ns": 29}


def _arrow_timestamp_text(arr: pa.Array, nanos: np.ndarray) -> pa.Array | None:
    """A timestamp without zone from Arrow's text (a third of the time of building the digits
    in numpy): its space becomes ``T`` and the fraction digits our encoding leaves out (the
    groups of 3 the value does not need) are cut. None if Arrow's text is not of one width
    for every value (then the digits are built in numpy)."""
    n, width = len(arr), _ARROW_WIDTH[arr.type.unit]
    counts = _int_values(arr)  # nulls as 0: every slot has text of the full width
    text = pa.Array.from_buffers(pa.timestamp(arr.type.unit), n, [None, pa.py_buffer(counts)]).cast(pa.string())
    offsets, chars = _utf8(text)
    if len(chars) != n * width or (np.diff(offsets) != width).any():
        return None
    matrix = chars.reshape(n, width).copy()
    matrix[:, 10] = ord("T")
    lengths = 19 + _fraction_lengths(nanos)
    short = np.flatnonzero(lengths != width)
    flat = matrix.reshape(-1)
    if len(short):
        cut = np.arange(width)[None, :] >= lengths[short][:, None]
        flat = np.delete(flat, (short[:, None] * width + np.arange(width)[None, :])[cut])
    return _string_array(flat, np.concatenate([[0], np.cumsum(lengths)]), arr)


# ---- JSON ----------------------------------------------------------------------------------------
def _json_string(text: pa.Array) -> pa.Array:
    """Strings as JSON string literals, as ``json.dumps(s, ensure_ascii=False)`` writes them."""
    return _join('"', _json_escaped(text), '"', "")


def _json_escaped(text: pa.Array) -> pa.Array:
    """The inside of each string's JSON literal: backslashes, quotes and control characters
    escaped (most columns hold none, which a look at their bytes tells)."""
    import pyarrow.compute as pc

    _, chars = _utf8(text)
    data = chars.tobytes()
    if b"\\" not in data and b'"' not in data and not (len(chars) and chars.min() < 32):
        return text
    text = pc.replace_substring(text, "\\", "\\\\")
    text = pc.replace_substring(text, '"', '\\"')
    if pc.any(pc.match_substring_regex(text, _CONTROL)).as_py():
        for code in range(32):
            char = chr(code)
            text = pc.replace_substring(text, char, _JSON_ESCAPES.get(char, f"\\u{code:04x}"))
    return text


def _json(col: _Column) -> pa.Array:
    """A column's cells as JSON text, ``null`` for null."""
    text, quoted = _json_inside(col)
    if quoted:
        text = _join('"', text, '"', "")
    return text.fill_null(_lit("null"))


def _json_inside(col: _Column) -> tuple[pa.Array, bool]:
    """A column's JSON text (nulls null), or without its quotes and True when every cell is a
    JSON string (no nulls): a line's join then adds the quotes with the text around the
    cell, one pass over the column less."""
    if col.json is not None:
        return col.json, False
    if not col.quoted:
        return col.text, False
    inside = col.text if col.bare else _json_escaped(col.text)  # decimals, dates, times: nothing to escape
    if col.text.null_count:
        return _join('"', inside, '"', ""), False
    return inside, True


def json_text(arr: pa.Array) -> pa.Array:
    """Each cell's JSON text (``json.dumps(json_value(v), ensure_ascii=False)``), no nulls."""
    return _json(_encode(arr))


def _wrap(joined: pa.Array, left: str, right: str, valid: pa.Array) -> pa.Array:
    """``left + joined + right`` where ``valid``, JSON null elsewhere."""
    import pyarrow.compute as pc

    text = _join(left, joined, right, "")
    return pc.if_else(valid, text, pa.nulls(len(text), pa.string()))


def _list_json(arr: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    items = json_text(arr.values)
    lists = pa.ListArray.from_arrays(arr.offsets.cast(pa.int32()), items)
    return _wrap(pc.binary_join(lists, _lit(", ")), "[", "]", arr.is_valid())


def _map_json(arr: pa.MapArray) -> pa.Array:
    """A map as the JSON array of its ``[key, value]`` pairs."""
    import pyarrow.compute as pc

    pairs = _join("[", json_text(arr.keys), ", ", json_text(arr.items), "]", "")
    lists = pa.ListArray.from_arrays(arr.offsets, pairs)
    return _wrap(pc.binary_join(lists, _lit(", ")), "[", "]", arr.is_valid())


def _struct_json(arr: pa.StructArray) -> pa.Array:
    """A row as a JSON object of its fields, in their order."""
    pieces: list[pa.Array | str] = []
    for i, f in enumerate(arr.type):
        pieces += [("" if i == 0 else ", ") + json.dumps(f.name, ensure_ascii=False) + ": ", json_text(arr.field(i))]
    if not pieces:
        joined = pa.nulls(len(arr), pa.string()).fill_null(_lit(""))
    else:
        joined = _join(*pieces, "")
    return _wrap(joined, "{", "}", arr.is_valid())


# ---- lines ---------------------------------------------------------------------------------------
def _csv_field(col: _Column) -> pa.Array:
    """The CSV field of each cell (``text_values.csv_field``): null empty and unquoted, an
    empty string or one holding a separator, a quote, a line break or outer spaces quoted."""
    import pyarrow.compute as pc

    text = col.csv
    if text is None:
        text = col.text
    if col.bare or not _may_need_quotes(text):
        return text.fill_null(_lit(""))
    needs = pc.or_(pc.equal(text, _lit("")), pc.match_substring_regex(text, _NEEDS_QUOTES))
    if pc.any(needs).as_py():
        quoted = _join('"', pc.replace_substring(text, '"', '""'), '"', "")
        text = pc.if_else(needs, quoted, text)
    return text.fill_null(_lit(""))


# Bytes that can make a CSV field need quotes: the separator, a quote, a line break anywhere;
# at a value's start ASCII white space or the first byte of a multi-byte space (U+0085,
# U+00A0, U+1680, U+2000..U+3000); at its end ASCII white space or any byte of a multi-byte
# character. A superset of what _NEEDS_QUOTES matches, told from a few bytes of each value.
_STRUCTURAL = (b",", b'"', b"\r", b"\n")
_ASCII_SPACES = np.frombuffer(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ", dtype=np.uint8)
_EDGE_START = np.zeros(256, dtype=bool)
_EDGE_START[_ASCII_SPACES] = True
_EDGE_START[[0xC2, 0xE1, 0xE2, 0xE3]] = True
_EDGE_END = np.zeros(256, dtype=bool)
_EDGE_END[_ASCII_SPACES] = True
_EDGE_END[0x80:] = True


def _may_need_quotes(text: pa.Array) -> bool:
    """False when no value of ``text`` can need quoting (no empty string, no separator, quote
    or line break, no space at either end), so the exact (regular expression) test is skipped."""
    offsets, chars = _utf8(text)
    lengths = np.diff(offsets)
    valid = ~_nulls(text) if text.null_count else np.ones(len(text), dtype=bool)
    if (valid & (lengths == 0)).any():
        return True
    data = chars.tobytes()
    if any(b in data for b in _STRUCTURAL):
        return True
    filled = lengths > 0
    return bool(_EDGE_START[chars[offsets[:-1][filled]]].any() or _EDGE_END[chars[offsets[1:][filled] - 1]].any())


def _as_bytes(lines: pa.Array) -> bytes:
    """The concatenated text of a string array without nulls."""
    if not len(lines):
        return b""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    start, end = offsets[lines.offset], offsets[lines.offset + len(lines)]
    return lines.buffers()[2][int(start):int(end)].to_pybytes()  # one copy: the buffer's slice is a view


def _columns(table: pa.Table) -> list[pa.Array]:
    return [col.combine_chunks() if col.num_chunks != 1 else col.chunk(0) for col in table.columns]


def csv_rows(table: pa.Table) -> bytes:
    """The rows as CSV lines (no header), UTF-8."""
    if not table.num_rows:
        return b""
    fields = [_csv_field(_encode(arr)) for arr in _columns(table)]
    if not fields:
        return b"\n" * table.num_rows
    fields[-1] = _join(fields[-1], "\n", "")  # the line break on the last field: one pass less over the lines
    return _as_bytes(_join(*fields, ","))


def jsonl_rows(table: pa.Table) -> bytes:
    """The rows as JSON lines (``json.dumps(row, ensure_ascii=False)``), UTF-8."""
    if not table.num_rows:
        return b""
    if not table.num_columns:
        return b"{}\n" * table.num_rows
    pieces: list[pa.Array | str] = []
    close = ""  # the quote that ends the previous cell, when the join adds it
    for i, (name, arr) in enumerate(zip(table.column_names, _columns(table))):
        text, quoted = _json_inside(_encode(arr))
        key = ("{" if i == 0 else ", ") + json.dumps(name, ensure_ascii=False) + ": "
        pieces += [close + key + ('"' if quoted else ""), text.fill_null(_lit("null")) if text.null_count else text]
        close = '"' if quoted else ""
    return _as_bytes(_join(*pieces, close + "}\n", ""))


ROWS_ENCODERS: dict[str, Callable[[pa.Table], bytes]] = {"csv": csv_rows, "jsonl": jsonl_rows}


# ---- decoding ------------------------------------------------------------------------------------
_BASE64_TEXT = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_B64_VALUES = np.zeros(256, dtype=np.uint32)
_B64_VALUES[_B64] = np.arange(64, dtype=np.uint32)


def base64_column(text: pa.Array, t: pa.DataType) -> pa.Array | None:
    """Canonical base64 text (padded, nothing but the alphabet) decoded a column at a time;
    None when a value is anything else, for ``text_values`` to decode (or refuse) in Python.

    Every value is whole groups of 4 characters, so the column's characters decode as one run
    of groups; each value then drops the bytes its padding stood for."""
    import pyarrow.compute as pc

    valid = pc.match_substring_regex(text, _BASE64_TEXT)
    if pc.any(pc.invert(valid)).as_py():
        return None
    filled = text.fill_null(_lit("")) if text.null_count else text  # a null's slot may hold bytes
    offsets = numpy_values(pa.Array.from_buffers(pa.int32(), len(filled) + 1, [None, filled.buffers()[1]],
                                                 offset=filled.offset), np.int32).astype(np.int64)
    data = filled.buffers()[2]
    chars = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]] if data is not None else np.zeros(0, np.uint8)
    groups = _B64_VALUES[chars].reshape(-1, 4)
    word = (groups[:, 0] << 18) | (groups[:, 1] << 12) | (groups[:, 2] << 6) | groups[:, 3]
    decoded = np.stack([(word >> 16) & 255, (word >> 8) & 255, word & 255], axis=1).astype(np.uint8).reshape(-1)
    lengths = np.diff(offsets)
    ends = offsets[1:] - offsets[0]
    pads = np.zeros(len(lengths), dtype=np.int64)
    nonempty = lengths > 0
    pads[nonempty] = (chars[ends[nonempty] - 1] == ord("=")).astype(np.int64) \
        + (chars[ends[nonempty] - 2] == ord("=")).astype(np.int64)
    out_lengths = lengths // 4 * 3 - pads
    keep = np.ones(len(decoded), dtype=bool)
    slot_ends = ends // 4 * 3
    keep[(slot_ends - 1)[pads >= 1]] = False
    keep[(slot_ends - 2)[pads == 2]] = False
    out_offsets = np.concatenate([[0], np.cumsum(out_lengths)]).astype(np.int32)
    validity = _copy_bits(text.is_valid()) if text.null_count else None
    binary = pa.Array.from_buffers(pa.binary(), len(text), [validity, pa.py_buffer(out_offsets),
                                                             pa.py_buffer(np.ascontiguousarray(decoded[keep]))],
                                   null_count=text.null_count)
    return binary if t == pa.binary() else binary.cast(t)


# ---- decoding: a CSV or JSON column of text into its type -------------------------------------
def _fast_cast(col: pa.Array, t: pa.DataType) -> pa.Array | None:
    """Arrow's own cast from text when it parses exactly our encoding; None to decode in Python."""
    import pyarrow.compute as pc

    plain = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) \
        or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_boolean(t)
    if not plain or not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return None
    try:
        return pc.cast(col, t, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # e.g. 6 digits for a millisecond column: the Python path checks them


def _plain_cast(col: pa.Array, t: pa.DataType) -> pa.Array | None:
    """A column JSON gave a non-text type (numbers, booleans, timestamps the reader inferred)
    cast to ``t`` when nothing is lost; None to decode in Python."""
    import pyarrow.compute as pc

    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return None
    try:
        return pc.cast(col, t, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


# Messages of Python's own conversions (int(), float(), Decimal()), which name Python's
# functions or classes ("invalid literal for int() with base 10", "[<class
# 'decimal.ConversionSyntax'>]") instead of what was wrong with the value.
_PYTHON_MESSAGES = ("int()", "float()", "could not convert", "Python int", "C long", "<class ")


def _reason(error: Exception, value: Any, t: pa.DataType) -> str:
    """Why ``value`` does not decode to ``t``, in lakectl's words."""
    text = str(error)
    if isinstance(error, (TypeError, decimal.InvalidOperation)) or not text \
            or any(m in text for m in _PYTHON_MESSAGES):
        return f"{value!r} is not {_kind(t)}"
    return text


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        names = {8: "TINYINT", 16: "SMALLINT", 32: "INT", 64: "BIGINT"}
        return f"an integer ({names.get(t.bit_width, t)})"
    if pa.types.is_decimal(t):
        return f"a decimal number of precision {t.precision} and scale {t.scale}"
    if pa.types.is_floating(t):
        return "a number"
    if pa.types.is_boolean(t):
        return "true or false"
    return f"a value of type {t}"


def decode_column(col: pa.Array | pa.ChunkedArray, t: pa.DataType) -> pa.Array:
    """A column as read from CSV text or JSON -> type ``t``.

    Raises:
        TextValueError: the first value that does not decode, with its index.
    """
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if col.type == t:
        return col
    if pa.types.is_null(col.type):
        return pa.nulls(len(col), t)
    text = pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
    nested = pa.types.is_list(col.type) or pa.types.is_struct(col.type) or pa.types.is_map(col.type)
    converted = _fast_cast(col, t) if text else None if nested else _plain_cast(col, t)
    if converted is None and text and (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        converted = base64_column(col.cast(pa.string()), t)
    if converted is not None:
        check_float_range(col, converted)
        return converted
    values = col.to_pylist()
    out = []
    for i, v in enumerate(values):
        try:
            out.append(decode_value(v, t))
        except (ValueError, TypeError, OverflowError, decimal.InvalidOperation) as e:
            raise TextValueError(i, _reason(e, v, t)) from None
    try:
        converted = pa.array(out, type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
        from core.value_range import first_misfit  # the error path only: it imports pyarrow

        found = first_misfit(out, t)  # a range lakectl can explain (Arrow's words do not name the value)
        if found is not None:
            raise TextValueError(*found) from None
        raise TextValueError(first_bad(out, t), str(e).splitlines()[0]) from None
    check_float_range(col, converted)
    return converted
