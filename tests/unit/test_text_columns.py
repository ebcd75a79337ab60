"""The column-wise text encoding (core/text_columns.py) against the per-cell one it replaces
(core/text_values.py's ``text_value`` / ``json_value``, which stay the model): the same bytes
for random tables of every type, with nulls, unicode, quotes, line breaks, extreme values,
and sliced columns (Arrow's offsets)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import sys

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.text_columns import csv_rows, jsonl_rows
from core.text_values import csv_line, json_value, python_values, text_value


def model_csv(table: pa.Table) -> str:
    columns = [python_values(c) for c in table.columns]
    return "".join(csv_line([text_value(v) for v in row]) for row in zip(*columns))


def model_jsonl(table: pa.Table) -> str:
    columns = [python_values(c) for c in table.columns]
    return "".join(json.dumps({k: json_value(v) for k, v in zip(table.column_names, row)}, ensure_ascii=False) + "\n"
                   for row in zip(*columns))


# ---- random columns ------------------------------------------------------------------------------
MIN_DAY, MAX_DAY = -719162, 2932896  # Python's dates: 0001-01-01 .. 9999-12-31
PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
TIME_LIMIT = {"s": 86400, "ms": 86400 * 1000, "us": 86400 * 10**6, "ns": 86400 * 10**9}

awkward = st.sampled_from(',"\r\n \t\x00\x1f\x85\u2028\u3000é€😀')
texts = st.text(alphabet=st.one_of(st.characters(codec="utf-8"), awkward), max_size=12)
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 1e16, 9999999999999998.0, 1e-4, 0.99999e-4, 5e-324, 1e22, 123.0]))


def timestamp_values(unit: str) -> st.SearchStrategy[int]:
    per = PER_SECOND[unit]
    if unit == "ns":  # the whole int64 range is within Python's years
        return st.integers(-(2**63) + 1, 2**63 - 1)
    low, high = MIN_DAY * 86400 * per, (MAX_DAY + 1) * 86400 * per - 1
    return st.one_of(st.integers(low, high), st.integers(-10 * per, 10 * per).map(lambda v: v * 1000 // 1000))


def decimals(precision: int, scale: int) -> st.SearchStrategy[decimal.Decimal]:
    bound = 10**precision - 1
    exact = decimal.Context(prec=80)  # the default context would round 38 digits to 28
    return st.integers(-bound, bound).map(lambda n: decimal.Decimal(n).scaleb(-scale, exact))


@st.composite
def column_types(draw: st.DrawFn, depth: int = 0) -> tuple[pa.DataType, st.SearchStrategy]:
    """An Arrow type and a strategy for its (non-null) Python values."""
    choices = ["int8", "int16", "int32", "int64", "float32", "float64", "string", "large_string", "binary", "bool",
               "decimal", "date", "time", "timestamp"]
    if depth < 2:
        choices += ["list", "map", "struct"]
    kind = draw(st.sampled_from(choices))
    if kind.startswith("int"):
        t = getattr(pa, kind)()
        bits = t.bit_width
        return t, st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if kind == "float32":
        return pa.float32(), st.floats(width=32, allow_nan=True, allow_infinity=True)
    if kind == "float64":
        return pa.float64(), floats
    if kind in ("string", "large_string"):
        return getattr(pa, kind)(), texts
    if kind == "binary":
        return pa.binary(), st.binary(max_size=10)
    if kind == "bool":
        return pa.bool_(), st.booleans()
    if kind == "decimal":
        precision = draw(st.integers(1, 38))
        scale = draw(st.integers(0, precision))
        return pa.decimal128(precision, scale), decimals(precision, scale)
    if kind == "date":
        return pa.date32(), st.integers(MIN_DAY, MAX_DAY).map(lambda d: dt.date(1970, 1, 1) + dt.timedelta(days=d))
    if kind == "time":
        unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
        t = pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit)
        return t, st.one_of(st.integers(0, TIME_LIMIT[unit] - 1), st.sampled_from([0, TIME_LIMIT[unit] - 1]))
    if kind == "timestamp":
        unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
        tz = draw(st.sampled_from([None, "UTC"]))
        return pa.timestamp(unit, tz=tz), timestamp_values(unit)
    if kind == "list":
        inner, values = draw(column_types(depth + 1))
        return pa.list_(inner), st.lists(st.one_of(st.none(), values), max_size=4)
    if kind == "map":
        key = draw(st.sampled_from([(pa.string(), texts), (pa.int32(), st.integers(-(2**31), 2**31 - 1))]))
        item, values = draw(column_types(depth + 1))
        return pa.map_(key[0], item), st.lists(st.tuples(key[1], st.one_of(st.none(), values)), max_size=3)
    names = draw(st.lists(texts, min_size=0, max_size=3, unique=True))
    fields = [(name, draw(column_types(depth + 1))) for name in names]
    t = pa.struct([(name, ft) for name, (ft, _) in fields])
    return t, st.fixed_dictionaries({name: st.one_of(st.none(), values) for name, (_, values) in fields})


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    rows = draw(st.integers(0, 8))
    names = draw(st.lists(texts, min_size=1, max_size=4, unique=True))
    columns = []
    for _ in names:
        t, values = draw(column_types())
        cells = draw(st.lists(st.one_of(st.none(), values), min_size=rows, max_size=rows))
        columns.append(pa.array(cells, type=t))
    table = pa.Table.from_arrays(columns, names=names)
    start = draw(st.integers(0, rows))
    return table.slice(start, draw(st.integers(0, rows - start)))  # a slice: Arrow offsets


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables())
def test_csv_is_the_per_cell_encoding(table: pa.Table) -> None:
    assert csv_rows(table).decode("utf-8") == model_csv(table)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables())
def test_json_lines_are_the_per_cell_encoding(table: pa.Table) -> None:
    assert jsonl_rows(table).decode("utf-8") == model_jsonl(table)


# ---- hand-picked cases -------------------------------------------------------------------------
def test_doubles_at_the_edges_of_pythons_positional_range() -> None:
    values = [1e16, 9999999999999998.0, 1e15, 123456789012345.6, 1e-4, 9.999999999999999e-05, 1e-5, 0.1, -0.0,
              5e-324, 1.7976931348623157e308, 2.0**53, float("nan"), float("inf"), -float("inf"), None]
    table = pa.table({"x": pa.array(values, pa.float64())})
    assert csv_rows(table).decode().splitlines() == [
        "1e+16", "9999999999999998.0", "1000000000000000.0", "123456789012345.6", "0.0001", "9.999999999999999e-05",
        "1e-05", "0.1", "-0.0", "5e-324", "1.7976931348623157e+308", "9007199254740992.0", "NaN", "Infinity",
        "-Infinity", ""]
    assert json.loads("[" + ",".join(jsonl_rows(table).decode().splitlines()) + "]")[12:] == [
        {"x": "NaN"}, {"x": "Infinity"}, {"x": "-Infinity"}, {"x": None}]


def test_timestamps_keep_as_many_digit_groups_as_they_need() -> None:
    ns = pa.array([0, 1, 1000, 1_000_000, 1_500_000_000, -1, None], pa.timestamp("ns", tz="UTC"))
    assert csv_rows(pa.table({"t": ns})).decode().splitlines() == [
        "1970-01-01T00:00:00+00:00", "1970-01-01T00:00:00.000000001+00:00", "1970-01-01T00:00:00.000001+00:00",
        "1970-01-01T00:00:00.001+00:00", "1970-01-01T00:00:01.500+00:00", "1969-12-31T23:59:59.999999999+00:00", ""]


def test_base64_pads_each_value() -> None:
    values = [b"", b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar", None, b"\xff\xfe\xfd"]
    out = csv_rows(pa.table({"b": pa.array(values, pa.binary())})).decode().splitlines()
    assert out == ['""', "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy", "", "//79"]  # RFC 4648 §10


def test_csv_quotes_fields_with_any_space_python_strips() -> None:
    """The quoting regex lists Python's whitespace by hand (RE2's \\s is ASCII only)."""
    spaces = [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()]
    values = [f"{c}x" for c in spaces] + [f"x{c}" for c in spaces] + [f"x{c}x" for c in spaces]
    table = pa.table({"s": pa.array(values)})
    assert csv_rows(table).decode() == model_csv(table)
    # every field with an outer space is quoted, and of the inner ones \r and \n
    assert csv_rows(table).decode().count('"') == 2 * (2 * len(spaces) + 2)


def test_zones_other_than_utc_fall_back_to_the_cell_encoding() -> None:
    table = pa.table({"t": pa.array([0, None], pa.timestamp("s", tz="Europe/Paris"))})
    assert csv_rows(table).decode() == model_csv(table) == "1970-01-01T01:00:00+01:00\n\n"


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_empty_table_is_no_bytes(fmt: str) -> None:
    table = pa.table({"a": pa.array([], pa.int64())})
    assert (csv_rows if fmt == "csv" else jsonl_rows)(table) == b""


# ---- decoding base64 a column at a time ----------------------------------------------------------
def python_base64(values: list[str | None]) -> list[bytes | None] | int:
    """The per-cell decoding (the model): the values, or the index of the first refused."""
    import base64

    out = []
    for i, v in enumerate(values):
        try:
            out.append(None if v is None else base64.b64decode(v, validate=True))
        except ValueError:  # binascii.Error, or text that is not ASCII
            return i
    return out


base64ish = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= é\n", max_size=13)
encoded = st.binary(max_size=13).map(lambda b: __import__("base64").b64encode(b).decode())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), encoded, base64ish), max_size=8), st.integers(0, 3))
def test_base64_input_decodes_as_python_does(values: list[str | None], start: int) -> None:
    from core.text_columns import decode_column
    from core.text_values import TextValueError

    column = pa.array(values, pa.string()).slice(min(start, len(values)))
    expected = python_base64(column.to_pylist())
    try:
        got: list[bytes | None] | int = decode_column(column, pa.binary()).to_pylist()
    except TextValueError as e:
        got = e.index
    assert got == expected


def test_timestamps_at_the_ends_of_pythons_years() -> None:
    first, last = -62135596800 * 10**6, 253402300799 * 10**6 + 999999  # 0001-01-01, 9999-12-31T23:59:59.999999
    table = pa.table({"t": pa.array([first, None, last, -1], pa.timestamp("us"))})
    assert csv_rows(table).decode().splitlines() == [
        "0001-01-01T00:00:00", "", "9999-12-31T23:59:59.999999", "1969-12-31T23:59:59.999999"]
    assert csv_rows(table).decode() == model_csv(table)


# ---- long columns: the fast paths that look at a column's bytes ----------------------------------
def long_table(seed: int, rows: int = 3000) -> pa.Table:
    """Thousands of rows per column, so the column-wide shortcuts (skip quoting and escaping when
    no byte calls for it, Arrow's timestamp text cut per row, ``.0`` added to whole doubles)
    meet both kinds of row in one column: mostly plain values with a few that need the slow
    path, and columns with none."""
    import numpy as np

    rng = np.random.default_rng(seed)
    plain = [f"customer-{i:08d}" for i in rng.integers(0, 10**8, rows)]
    awkward_text = [",", '"', "\r", "\n", " x", "x ", "\u3000x", "x\u00a0", "", "é", "\\", "\x01", "😀"]
    sprinkled = list(plain)
    for i in rng.choice(rows, 20, replace=False):
        sprinkled[i] = plain[i] + str(rng.choice(awkward_text)) if i % 2 else str(rng.choice(awkward_text))
    spaced = list(plain)  # only outer spaces call for quotes here
    for i, space in zip(rng.choice(rows, 8, replace=False), [" ", "\t", "\u3000", "\u00a0", "\u2028", "\x1f"] * 2):
        spaced[i] = space + plain[i] if i % 2 else plain[i] + space
    doubles = rng.random(rows) * 10.0 ** rng.integers(-8, 20, rows)
    doubles[rng.choice(rows, 200, replace=False)] = rng.integers(-10**6, 10**6, 200)  # whole numbers
    micros = rng.integers(-10**12, 10**16, rows)  # 1938 to 2286
    for unit in (1000, 10**6):  # some whole milliseconds and seconds: fewer fraction digits
        some = rng.choice(rows, 300, replace=False)
        micros[some] = micros[some] // unit * unit
    nanos = rng.integers(-(2**62), 2**62, rows)
    some = rng.choice(rows, 300, replace=False)
    nanos[some] = nanos[some] // 10**6 * 10**6
    nulls = rng.random(rows) < 0.05
    decimals = [decimal.Decimal(int(v)).scaleb(-4) for v in rng.integers(-10**17, 10**17, rows)]
    big = [decimal.Decimal(int(v)).scaleb(-4) for v in rng.integers(10**4, 10**17, rows) * rng.choice([-1, 1], rows)]
    decimals[10:13] = [decimal.Decimal("0.0000"), decimal.Decimal("-0.0001"), decimal.Decimal("0.0010")]
    table = pa.table({
        "plain": pa.array(plain), "sprinkled": pa.array(sprinkled), "spaced": pa.array(spaced),
        "nullable": pa.array(plain, mask=nulls),
        "double": pa.array(doubles), "double_nulls": pa.array(doubles, mask=nulls),
        "ts_us": pa.array(micros, pa.timestamp("us")),
        "ts_ms": pa.array(micros // 1000, pa.timestamp("ms")),
        "ts_ns": pa.array(nanos, pa.timestamp("ns"), mask=nulls),
        "ts_s": pa.array(micros // 10**6, pa.timestamp("s")),
        "dec": pa.array(decimals, pa.decimal128(18, 4)), "dec_zero": pa.array(decimals, pa.decimal128(38, 10)),
        "dec_big": pa.array(big, pa.decimal128(18, 4), mask=nulls), "dec_int": pa.array([decimal.Decimal(int(v)) for v in micros], pa.decimal128(18, 0)),
    })
    return table.slice(7, rows - 20)  # a slice: the byte checks must start at the column's first value


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_long_columns_are_the_per_cell_encoding(seed: int) -> None:
    table = long_table(seed)
    assert csv_rows(table).decode("utf-8") == model_csv(table)
    assert jsonl_rows(table).decode("utf-8") == model_jsonl(table)
    # the plain columns took the shortcuts: nothing in them is quoted or escaped
    plain = table.select(["plain", "ts_us", "double"])
    assert '"' not in csv_rows(plain).decode()


# ---- a CSV stream's first cells, encoded cell by cell (core/sinks.py) ------------------------------
plain_columns = st.sampled_from([
    (pa.int32(), st.integers(-2**31, 2**31 - 1)), (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    (pa.int8(), st.integers(-128, 127)), (pa.bool_(), st.booleans()), (pa.string(), texts),
    (pa.large_string(), texts)])


@st.composite
def plain_parts(draw: st.DrawFn) -> tuple[pa.Schema, list[pa.Table]]:
    kinds = draw(st.lists(plain_columns, min_size=1, max_size=4))
    schema = pa.schema([(f"c{i}", t) for i, (t, _) in enumerate(kinds)])
    parts = []
    for rows in draw(st.lists(st.sampled_from([0, 1, 3, 40, 300, 900]), min_size=1, max_size=6)):
        columns = [pa.array(draw(st.lists(st.one_of(st.none(), values), min_size=rows, max_size=rows)), type=t)
                   for t, values in kinds]
        parts.append(pa.Table.from_arrays(columns, schema=schema))
    return schema, parts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(plain_parts())
def test_a_csv_stream_of_plain_columns_is_the_column_encoding(drawn: tuple[pa.Schema, list[pa.Table]]) -> None:
    """The stream encodes its first cells in Python and the rest column-wise (parts here cross
    that budget); every part's bytes are the column encoder's."""
    from core.sinks import text_bytes

    schema, parts = drawn
    expected = ",".join(schema.names).encode() + b"\n" + b"".join(csv_rows(p) for p in parts)
    assert b"".join(text_bytes(parts, schema, "csv")) == expected
