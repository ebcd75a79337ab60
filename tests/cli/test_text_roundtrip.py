"""``scan --format jsonl|csv | write --input-format jsonl|csv`` gives back the same table, for
every type lakectl supports (property tests), in process and through the console script
with a shell pipe; and the text encoding ``core.text_values`` documents, value by value."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
import typer.main
from typer.testing import CliRunner, Result

from core.table import Table
from core.types import parse_type, to_arrow
from lakectl.app import app

runner = CliRunner()
# Each example runs several commands: shrinking a failure would take minutes; the failing
# example is printed whole instead.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)

# Every type lakectl supports, with a column each (id first: rows are compared in id order).
COLUMNS = [("id", "BIGINT NOT NULL"), ("s", "STRING"), ("vc", "VARCHAR(12)"), ("bo", "BOOLEAN"),
           ("i8", "TINYINT"), ("i16", "SMALLINT"), ("i32", "INT"), ("i64", "BIGINT"),
           ("f", "FLOAT"), ("d", "DOUBLE"), ("dec", "DECIMAL(38, 10)"), ("dec2", "DECIMAL(5, 2)"),
           ("b", "BYTES"), ("vb", "VARBINARY(16)"), ("dt", "DATE"), ("tm", "TIME"),
           *[(f"ts{p}", f"TIMESTAMP({p})") for p in range(10)],
           *[(f"ltz{p}", f"TIMESTAMP({p}) WITH LOCAL TIME ZONE") for p in (0, 3, 6, 9)],
           ("arr", "ARRAY<STRING>"), ("arr_ts", "ARRAY<TIMESTAMP(3)>"), ("m", "MAP<STRING, BYTES>"),
           ("m2", "MAP<INT, DOUBLE>"), ("r", "ROW<a TIMESTAMP(6), b DECIMAL(10, 2), c ARRAY<BYTES>, d STRING>")]
SCHEMA_TEXT = ", ".join(f"{n} {t}" for n, t in COLUMNS)
ARROW = pa.schema([pa.field(n, to_arrow(parse_type(t))) for n, t in COLUMNS])

_MS = (-62135596800000, 253402300799999)  # 0001-01-01 .. 9999-12-31 in milliseconds
_EDGE_FLOATS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, 5e-324]
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8) | st.sampled_from(
    ["", "null", "NULL", "NA", "NaN", " padded ", 'quo"te', "a,b", "two\nlines", "日本語", "\u00e9"])


def _timestamp(t: pa.TimestampType, precision: int) -> st.SearchStrategy[int]:
    """Counts of the column's unit with only ``precision`` fractional digits."""
    per_second = {"ms": 1000, "us": 10**6, "ns": 10**9}[t.unit]
    step = per_second // 10**precision if precision <= {"ms": 3, "us": 6, "ns": 9}[t.unit] else 1
    lo, hi = (_MS[0] * per_second // 1000, _MS[1] * per_second // 1000) if t.unit != "ns" else (-(2**63) + 1, 2**63 - 1)
    return st.integers(-(-lo // step), hi // step).map(lambda n: n * step)


def values(t: pa.DataType, type_text: str) -> st.SearchStrategy[Any]:
    dtype = parse_type(type_text)
    if pa.types.is_string(t):
        return text.filter(lambda s: dtype.length is None or len(s) <= dtype.length)
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        bits = t.bit_width
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if pa.types.is_floating(t):
        width = 32 if t == pa.float32() else 64
        edge = [v for v in _EDGE_FLOATS if width == 64 or abs(v) < 1e38 and v != 5e-324]
        return st.floats(width=width, allow_nan=True) | st.sampled_from(edge)
    if pa.types.is_decimal(t):
        return st.decimals(min_value=-(10 ** (t.precision - t.scale)) + 1, max_value=10 ** (t.precision - t.scale) - 1,
                           places=t.scale, allow_nan=False, allow_infinity=False)
    if pa.types.is_binary(t):
        limit = dtype.length if dtype.length and dtype.length < 2**31 - 1 else 12
        return st.binary(max_size=limit) | st.just(b"\x00\x00") | st.just(b"")
    if pa.types.is_date(t):
        return st.dates()
    if pa.types.is_time(t):
        # Only the fractional digits TIME(p) keeps: writers refuse more, as for TIMESTAMP(p).
        step = 10 ** (3 - min(dtype.precision, 3))
        return st.integers(0, 86_399_999 // step).map(
            lambda n: (dt.datetime.min + dt.timedelta(milliseconds=n * step)).time())
    if pa.types.is_timestamp(t):
        return _timestamp(t, dtype.precision)
    if pa.types.is_list(t):
        return st.lists(st.none() | values(t.value_type, dtype.element.root_text()), max_size=3)
    if pa.types.is_map(t):
        return st.dictionaries(values(t.key_type, dtype.key.root_text()),
                               st.none() | values(t.item_type, dtype.value.root_text()), max_size=3
                               ).map(lambda d: list(d.items()))
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: st.none() | values(f.type, ft.type.root_text())
                                      for f, ft in zip(t, dtype.fields)})
    raise AssertionError(f"no strategy for {t}")


def _column_values(name: str, t: pa.DataType, type_text: str) -> st.SearchStrategy[Any]:
    return values(t, type_text) if name == "id" else st.none() | values(t, type_text)


rows = st.lists(st.fixed_dictionaries({n: _column_values(n, ARROW.field(n).type, t) for n, t in COLUMNS}),
                max_size=5, unique_by=lambda r: r["id"])


def _table(data: list[dict[str, Any]]) -> pa.Table:
    columns = []
    for f in ARROW:
        columns.append(pa.array([r[f.name] for r in data], type=f.type))
    return pa.Table.from_arrays(columns, schema=ARROW)


def same(a: Any, b: Any) -> bool:
    """Cell equality, NaN equal to NaN (and -0.0 told from 0.0), at any depth."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def assert_same_tables(expected: pa.Table, actual: pa.Table) -> None:
    expected = expected.sort_by("id").select(ARROW.names)
    actual = actual.sort_by("id").select(ARROW.names)
    assert actual.num_rows == expected.num_rows
    for name in ARROW.names:
        want, got = expected.column(name), actual.column(name)
        assert got.type == want.type, name
        # Compare at the Arrow level, cell by cell: integers stay exact (no Python conversion of
        # nanosecond timestamps), floats via their Python values so that NaN equals NaN.
        for i in range(expected.num_rows):
            w, g = want[i], got[i]
            if pa.types.is_timestamp(want.type):
                assert w.cast(pa.int64()) == g.cast(pa.int64()), (name, i, w, g)
            else:
                assert same(_py(w), _py(g)), (name, i, w, g)


def _py(scalar: pa.Scalar) -> Any:
    """A cell as Python, nested nanosecond timestamps as integer counts."""
    t = scalar.type
    if pa.types.is_timestamp(t):
        return None if not scalar.is_valid else scalar.cast(pa.int64()).as_py()
    if not scalar.is_valid:
        return None
    if pa.types.is_list(t):
        return [_py(v) for v in scalar.values]
    if pa.types.is_struct(t):
        return {f.name: _py(scalar[f.name]) for f in t}
    return scalar.as_py()


_COMMAND = typer.main.get_command(app)


def invoke(args: list[str], input: bytes | None = None) -> Result:
    """``runner.invoke(app, ...)`` without rebuilding the command tree each time (a third of a
    second per call, times the hundreds of calls of the property test)."""
    with mock.patch("typer.testing._get_command", lambda _: _COMMAND):
        return runner.invoke(app, args, input=input)


def cli(wh: Path, *args: str, input: bytes | None = None) -> str:
    result = invoke(["-w", str(wh), *args], input=input)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout


@settings(max_examples=25, deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=rows)
def test_scan_text_write_gives_back_the_same_table(data: list[dict[str, Any]]) -> None:
    """Generated rows written with lakectl, scanned to jsonl and to csv, each text written back
    into a new table made by ``write --auto-create --like`` (the documented copy): every table
    holds the generated values exactly, and has the source's columns, keys and options."""
    original = _table(data)
    with tempfile.TemporaryDirectory() as tmp:
        wh, source = Path(tmp) / "wh", Path(tmp) / "rows.parquet"
        pq.write_table(original, source)
        cli(wh, "-q", "create", "db.a", "--schema", SCHEMA_TEXT, "--option", "file.compression=snappy")
        cli(wh, "-q", "write", "db.a", "-i", str(source))
        assert_same_tables(original, Table.open("db.a", warehouse=str(wh)).scan())
        for fmt in ("jsonl", "csv"):
            text_rows = cli(wh, "scan", "db.a", "--format", fmt).encode()
            cli(wh, "-q", "write", f"db.{fmt}", "-i", "-", "--input-format", fmt, "--auto-create", "--like", "db.a",
                input=text_rows)
            assert_same_tables(original, Table.open(f"db.{fmt}", warehouse=str(wh)).scan())
            assert _layout(wh, f"db.{fmt}") == _layout(wh, "db.a")
            # A copy prints the same text: no value wraps twice (as base64 did).
            assert cli(wh, "scan", f"db.{fmt}", "--format", fmt).encode() == text_rows


def _layout(wh: Path, name: str) -> tuple:
    schema = Table.open(name, warehouse=str(wh)).schema
    return ([(f.name, str(f.type), f.description) for f in schema.fields], schema.primary_keys,
            schema.partition_keys, schema.options)


# ---- through the console script, with a shell pipe ------------------------------------------
def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


@pytest.mark.slow
@settings(max_examples=2, deadline=None, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=rows.filter(lambda r: len(r) > 0))
def test_pipe_through_the_console_script(data: list[dict[str, Any]]) -> None:
    """``lakectl scan ... --format jsonl | lakectl write ... --input -`` (and csv), in bash."""
    lakectl = shutil.which("lakectl", path=str(Path(sys.executable).parent))
    if lakectl is None:
        pytest.skip(f"the lakectl console script is not installed next to {sys.executable}")
    original = _table(data)
    with tempfile.TemporaryDirectory() as tmp:
        wh, source = Path(tmp) / "wh", Path(tmp) / "rows.parquet"
        pq.write_table(original, source)
        cli(wh, "-q", "create", "db.a", "--schema", SCHEMA_TEXT)
        cli(wh, "-q", "write", "db.a", "-i", str(source))
        script = (f"set -o pipefail; L='{lakectl} -w {wh}'; "
                  "$L scan db.a --format jsonl | $L -q write db.j --input - --input-format jsonl --auto-create "
                  "--like db.a && "
                  "$L scan db.a --format csv | $L -q write db.c --input - --input-format csv --auto-create --like db.a")
        proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=_environment(), timeout=300)
        assert proc.returncode == 0, proc.stderr
        for name in ("db.j", "db.c"):
            assert_same_tables(original, Table.open(name, warehouse=str(wh)).scan())


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "json", "table", "output.csv"])
def test_console_script_prints_sub_microsecond_timestamps(fmt: str, tmp_path: Path) -> None:
    """The console script keeps pandas out of pyarrow (core/pandas_probe.py), and pyarrow
    turns a nanosecond timestamp into Python only through pandas: the digits below the
    microsecond must still print, top-level and nested, in every format."""
    lakectl = shutil.which("lakectl", path=str(Path(sys.executable).parent))
    if lakectl is None:
        pytest.skip(f"the lakectl console script is not installed next to {sys.executable}")
    wh = tmp_path / "wh"
    cli(wh, "-q", "create", "db.n", "--schema", "id INT, ts TIMESTAMP(9), arr ARRAY<TIMESTAMP(7)>")
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "ts": pa.array([-2_100], pa.timestamp("ns")),
                             "arr": pa.array([[1_700_000_000_123_456_700]], pa.list_(pa.timestamp("ns")))}),
                   tmp_path / "n.parquet")
    cli(wh, "-q", "write", "db.n", "-i", str(tmp_path / "n.parquet"))
    args = ["-O", str(tmp_path / "out.csv")] if fmt == "output.csv" else ["-f", fmt]
    proc = subprocess.run([lakectl, "-w", str(wh), "scan", "db.n", *args], capture_output=True, text=True,
                          env=_environment(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "out.csv").read_text() if fmt == "output.csv" else proc.stdout
    assert "1969-12-31T23:59:59.999997900" in text and "2023-11-14T22:13:20.1234567" in text, text


# ---- the encoding, value by value -------------------------------------------------------------
@pytest.fixture
def wh(tmp_path: Path) -> Path:
    return tmp_path / "wh"


def test_timestamp3_takes_six_digits_when_nothing_is_lost(wh: Path) -> None:
    cli(wh, "-q", "create", "db.t", "--schema", "id INT, ts TIMESTAMP(3), ltz TIMESTAMP(3) WITH LOCAL TIME ZONE")
    rows = ('{"id": 1, "ts": "2024-01-01T10:00:00.123000", "ltz": "2024-01-01T10:00:00.250000+02:00"}\n'
            '{"id": 2, "ts": "2024-01-01 10:00:00", "ltz": "2024-01-01T10:00:00Z"}\n')
    cli(wh, "-q", "write", "db.t", "-i", "-", "--input-format", "jsonl", input=rows.encode())
    got = Table.open("db.t", warehouse=str(wh)).scan().sort_by("id")
    assert got.column("ts").cast(pa.int64()).to_pylist() == [1704103200123, 1704103200000]
    assert got.column("ltz").cast(pa.int64()).to_pylist() == [1704096000250, 1704103200000]
    out = cli(wh, "scan", "db.t", "-f", "jsonl")
    assert '"ts": "2024-01-01T10:00:00.123"' in out and '"ltz": "2024-01-01T08:00:00.250+00:00"' in out
    lost = invoke(["-w", str(wh), "write", "db.t", "-i", "-", "--input-format", "jsonl"],
                         input=b'{"id": 3, "ts": "2024-01-01T10:00:00.123456"}\n')
    assert lost.exit_code == 5 and "row 1, column ts" in lost.output and "fractional digits" in lost.output


def test_stdout_gets_the_encoders_bytes_in_its_own_encoding(wh: Path) -> None:
    """scan -f csv|jsonl hands the encoders' UTF-8 bytes to stdout's byte stream when stdout
    is UTF-8 (the same bytes as --output writes), and text to a stdout of another encoding,
    which encodes it as it would any text (PYTHONIOENCODING=latin-1 gives é as one byte)."""
    cli(wh, "-q", "create", "db.t", "--schema", "id INT, s STRING")
    cli(wh, "-q", "write", "db.t", "-i", "-", "--input-format", "jsonl", input='{"id": 1, "s": "café"}\n'.encode())
    for fmt, expected in (("csv", "id,s\n1,café\n"), ("jsonl", '{"id": 1, "s": "café"}\n')):
        file = wh.parent / f"out.{fmt}"
        cli(wh, "-q", "scan", "db.t", "--output", str(file))
        assert file.read_bytes() == expected.encode("utf-8")
        for encoding in ("utf-8", "latin-1"):
            env = {**_environment(), "PYTHONIOENCODING": encoding}
            done = subprocess.run([sys.executable, "-m", "lakectl", "-w", str(wh), "scan", "db.t", "-f", fmt],
                                  env=env, capture_output=True, check=True)
            assert done.stdout == expected.encode(encoding), (fmt, encoding)


def test_bytes_are_base64_both_ways_and_do_not_wrap_again(wh: Path) -> None:
    cli(wh, "-q", "create", "db.t", "--schema", "id INT, b BYTES")
    cli(wh, "-q", "write", "db.t", "-i", "-", "--input-format", "jsonl", input=b'{"id": 1, "b": "aGk="}\n')
    assert Table.open("db.t", warehouse=str(wh)).scan().column("b").to_pylist() == [b"hi"]
    assert cli(wh, "scan", "db.t", "-f", "jsonl") == '{"id": 1, "b": "aGk="}\n'
    bad = invoke(["-w", str(wh), "write", "db.t", "-i", "-", "--input-format", "jsonl"],
                        input=b'{"id": 2, "b": "not base64!"}\n')
    assert bad.exit_code == 5 and "column b" in bad.output and "base64" in bad.output


def test_nan_and_infinities_round_trip(wh: Path) -> None:
    cli(wh, "-q", "create", "db.t", "--schema", "id INT, d DOUBLE")
    cli(wh, "-q", "write", "db.t", "-i", "-", "--input-format", "jsonl",
        input=b'{"id": 1, "d": "NaN"}\n{"id": 2, "d": "Infinity"}\n{"id": 3, "d": "-Infinity"}\n{"id": 4, "d": 0.5}\n')
    got = Table.open("db.t", warehouse=str(wh)).scan().sort_by("id").column("d").to_pylist()
    assert math.isnan(got[0]) and got[1:] == [math.inf, -math.inf, 0.5]
    assert cli(wh, "scan", "db.t", "-f", "csv").splitlines()[1:] == ["1,NaN", "2,Infinity", "3,-Infinity", "4,0.5"]


def test_csv_null_is_an_empty_field_and_quotes_mark_an_empty_string(wh: Path) -> None:
    cli(wh, "-q", "create", "db.t", "--schema", "id INT, s STRING, n INT")
    csv_text = 'id,s,n\n1,,\n2,"",3\n3,NA,\n4,null,\n5,"a,b",\n'
    cli(wh, "-q", "write", "db.t", "-i", "-", "--input-format", "csv", input=csv_text.encode())
    got = Table.open("db.t", warehouse=str(wh)).scan().sort_by("id")
    assert got.column("s").to_pylist() == [None, "", "NA", "null", "a,b"]
    assert got.column("n").to_pylist() == [None, 3, None, None, None]
    assert cli(wh, "scan", "db.t", "-f", "csv") == csv_text
    out = cli(wh, "scan", "db.t", "--output", str(wh.parent / "o.csv"))
    assert out and (wh.parent / "o.csv").read_text() == csv_text


def test_decimals_keep_their_digits(wh: Path) -> None:
    """Exact digits, never an exponent (Python writes a zero of scale 10 as ``0E-10``)."""
    cli(wh, "-q", "create", "db.t", "--schema", "id INT, x DECIMAL(20, 10)")
    cli(wh, "-q", "write", "db.t", "-i", "-", "--input-format", "csv", input=b"id,x\n1,0\n2,-12345678.1234\n")
    assert Table.open("db.t", warehouse=str(wh)).scan().sort_by("id").column("x").to_pylist() == \
        [decimal.Decimal("0E-10"), decimal.Decimal("-12345678.1234000000")]
    assert cli(wh, "scan", "db.t", "-f", "jsonl").splitlines() == ['{"id": 1, "x": "0.0000000000"}',
                                                                   '{"id": 2, "x": "-12345678.1234000000"}']


# ---- the same text written on Spark -------------------------------------------------------------
@pytest.fixture(scope="module")
def spark_session():
    from core.engines.spark import SparkEngine

    engine = SparkEngine(master="local[2]")
    yield engine.session
    engine.session.stop()


@pytest.mark.spark
@settings(max_examples=4, deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=rows)
def test_spark_writes_the_text_back_as_the_local_engine_does(spark_session: Any, data: list[dict[str, Any]]) -> None:
    """Spark reads CSV and JSON lines itself (as text) and the write kernels decode them with
    core.text_values: the table it builds from lakectl's text equals the original (bytes
    not wrapped in base64 twice, "" apart from null, NaN, every timestamp precision)."""
    from core.engines import EngineSettings
    from core.ops.create import create
    from core.ops.create import Layout
    from core.ops.scan import scan_to_output
    from core.ops.write import AutoCreate, write_input

    original = _table(data)
    with tempfile.TemporaryDirectory() as tmp:
        wh = str(Path(tmp) / "wh")
        source = Table.locate("db.a", warehouse=wh)
        create(source, SCHEMA_TEXT)
        source.write(original)
        for fmt in ("jsonl", "csv"):
            text_file = str(Path(tmp) / f"rows.{fmt}")
            scan_to_output(source, text_file)
            copy = Table.locate(f"db.{fmt}", warehouse=wh)  # made by the write, as the source is
            result = write_input(copy, text_file, engine_settings=EngineSettings(engine="spark", master="local[2]"),
                                 auto_create=AutoCreate(like=Layout.of(source)))
            assert result.engine == "spark"
            assert_same_tables(original, Table.open(f"db.{fmt}", warehouse=wh).scan())
