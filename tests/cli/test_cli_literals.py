"""Literals in ``scan --where`` and ``lookup --key`` that must find every value they spell, and
input values that must be stored exactly or refused: through the console script (``python -m
lakectl`` in a subprocess), as users type them.

The expectations are computed here from the rows written (epoch nanoseconds as Python ints,
bytes as bytes), not by lakectl.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

BASE = 1709208000 * 10**9  # 2024-02-29T12:00:00 in epoch nanoseconds


def _text(nanos: int) -> str:
    """Epoch nanoseconds as scan prints a TIMESTAMP(9) value (hand-rolled, not lakectl's encoder)."""
    seconds, fraction = divmod(nanos, 10**9)
    import datetime as dt

    stamp = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
    text = stamp.strftime("%Y-%m-%dT%H:%M:%S")
    if fraction % 10**6 == 0 and fraction:
        return f"{text}.{fraction // 10**6:03d}"
    if fraction % 1000 == 0 and fraction:
        return f"{text}.{fraction // 1000:06d}"
    return f"{text}.{fraction:09d}" if fraction else text


# Values one nanosecond apart (same microsecond), whole seconds, and millisecond ones; each
# commit its own file, so stats pruning decides which files are read.
STAMPS = [[BASE + 123456789, BASE + 123456788, BASE + 123456790],
          [BASE, BASE + 10**9, BASE + 5 * 10**8],
          [BASE + 123456000, BASE + 999999999, BASE - 1]]


def lakectl(wh: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["HOME"] = str(wh.parent / "home")
    return subprocess.run([sys.executable, "-m", "lakectl", "-w", str(wh), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


def ok(wh: Path, *args: Any) -> str:
    proc = lakectl(wh, *args)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stderr}"
    return proc.stdout


def rows(wh: Path, *args: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ok(wh, *args, "-f", "jsonl").splitlines() if line.strip()]


def refused(wh: Path, code: int, *args: Any) -> str:
    proc = lakectl(wh, *args)
    assert proc.returncode == code, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "internal error" not in proc.stderr
    return proc.stderr


@pytest.fixture(scope="module")
def stamps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("stamps") / "wh"
    ok(wh, "-q", "create", "db.t", "--schema", "k TIMESTAMP(9) NOT NULL, v STRING", "--primary-key", "k",
       "--option", "bucket=1")
    for i, batch in enumerate(STAMPS):
        path = wh.parent / f"in{i}.jsonl"
        path.write_text("".join(json.dumps({"k": _text(n), "v": str(n)}) + "\n" for n in batch))
        ok(wh, "-q", "write", "db.t", "-i", path)
    return wh


ALL = sorted(n for batch in STAMPS for n in batch)


@pytest.mark.parametrize("where, expected", [
    (f"k = '{_text(BASE + 123456789)}'", [BASE + 123456789]),
    (f"k = TIMESTAMP '{_text(BASE + 123456788).replace('T', ' ')}'", [BASE + 123456788]),
    (f"k > '{_text(BASE + 123456788)}' AND k < '{_text(BASE + 123456790)}'", [BASE + 123456789]),
    (f"k BETWEEN '{_text(BASE + 123456000)}' AND '{_text(BASE + 123456789)}'",
     [BASE + 123456000, BASE + 123456788, BASE + 123456789]),
    (f"k IN ('{_text(BASE + 123456790)}', '{_text(BASE - 1)}', '2024-02-29T12:00:00.1234567')",
     [BASE - 1, BASE + 123456790]),
    (f"k <> '{_text(BASE + 123456789)}'", [n for n in ALL if n != BASE + 123456789]),
    (f"k >= '{_text(BASE + 999999999)}'", [BASE + 999999999, BASE + 10**9]),
    # A literal between two nanoseconds matches no value and bounds a range exactly.
    ("k = '2024-02-29T12:00:00.1234567885'", []),
    ("k < '2024-02-29T12:00:00.1234567885'", [n for n in ALL if n <= BASE + 123456788]),
    # Outside what a nanosecond column can hold: every value is above or below.
    ("k > '1500-01-01'", ALL),
    ("k = '9999-12-31T23:59:59.999999999'", []),
])
def test_timestamp9_where_finds_exactly_the_matching_rows(stamps: Path, where: str, expected: list[int]) -> None:
    got = rows(stamps, "scan", "db.t", "--where", where)
    assert sorted(int(r["v"]) for r in got) == sorted(expected)


def test_timestamp9_where_on_microsecond_and_millisecond_columns_is_exact(tmp_path: Path) -> None:
    """A nine-digit literal on a TIMESTAMP(6) or (3) column matches no value it does not
    spell: the digits past the column's precision are not dropped."""
    wh = tmp_path / "wh"
    ok(wh, "-q", "create", "db.m", "--schema", "t6 TIMESTAMP(6), t3 TIMESTAMP(3)")
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"t6": "2024-02-29T12:00:00.123456", "t3": "2024-02-29T12:00:00.123"}) + "\n")
    ok(wh, "-q", "write", "db.m", "-i", path)
    assert rows(wh, "scan", "db.m", "--where", "t6 = '2024-02-29T12:00:00.123456789'") == []
    assert len(rows(wh, "scan", "db.m", "--where", "t6 = '2024-02-29T12:00:00.123456000'")) == 1
    assert rows(wh, "scan", "db.m", "--where", "t3 = '2024-02-29T12:00:00.123000001'") == []
    assert len(rows(wh, "scan", "db.m", "--where", "t3 < '2024-02-29T12:00:00.123000001'")) == 1


def test_lookup_finds_every_timestamp9_key_by_the_text_scan_prints(stamps: Path) -> None:
    printed = rows(stamps, "scan", "db.t")
    assert sorted(int(r["v"]) for r in printed) == ALL
    assert {r["k"] for r in printed} == {_text(n) for n in ALL}  # scan prints all nine digits
    keys = [arg for r in printed for arg in ("--key", f"k={r['k']}")]
    found = rows(stamps, "lookup", "db.t", *keys)
    assert [int(r["v"]) for r in found] == [int(r["v"]) for r in printed]  # in the order asked
    # One nanosecond off finds nothing (and is no error).
    assert rows(stamps, "lookup", "db.t", "--key", f"k={_text(BASE + 123456787)}") == []


BLOBS = [b"\x07\x00\xff", b"", b"\x00", b"abc", bytes(range(256))]


@pytest.fixture(scope="module")
def blobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("blobs") / "wh"
    ok(wh, "-q", "create", "db.b", "--schema", "b BYTES NOT NULL, n INT", "--primary-key", "b",
       "--option", "bucket=2")
    path = wh.parent / "in.jsonl"
    path.write_text("".join(json.dumps({"b": base64.b64encode(v).decode(), "n": i}) + "\n" for i, v in enumerate(BLOBS)))
    ok(wh, "-q", "write", "db.b", "-i", path)
    return wh


@pytest.mark.parametrize("i", range(len(BLOBS)))
def test_binary_literals_find_each_value(blobs: Path, i: int) -> None:
    value = BLOBS[i]
    printed = base64.b64encode(value).decode()
    for where in (f"b = X'{value.hex()}'", f"b = x'{value.hex().upper()}'", f"b = FROM_BASE64('{printed}')",
                  f"b = unbase64('{printed}')", f"b IN (X'{value.hex()}', X'deadbeef')"):
        assert [r["n"] for r in rows(blobs, "scan", "db.b", "--where", where)] == [i], where
    assert [r["b"] for r in rows(blobs, "scan", "db.b", "--where", f"b = X'{value.hex()}'")] == [printed]
    for key in (f"b=X'{value.hex()}'", f"b=FROM_BASE64('{printed}')"):
        assert [r["n"] for r in rows(blobs, "lookup", "db.b", "--key", key)] == [i], key


def test_binary_literal_order_and_plain_strings(blobs: Path) -> None:
    """Bytes order as unsigned bytes; a quoted string still stands for its UTF-8 bytes."""
    below = sorted(i for i, v in enumerate(BLOBS) if v < b"\x07")
    assert sorted(r["n"] for r in rows(blobs, "scan", "db.b", "--where", "b < X'07'")) == below
    assert [r["n"] for r in rows(blobs, "scan", "db.b", "--where", "b = 'abc'")] == [3]
    assert [r["n"] for r in rows(blobs, "lookup", "db.b", "--key", "b=abc")] == [3]


@pytest.mark.parametrize("where, fragment", [
    ("b = X'0'", "even number of hex digits"),
    ("b = FROM_BASE64('B!')", "not base64"),
    ("n = X'07'", "cannot compare column 'n'"),
    ("b = FROM_BASE64(n)", "one string"),
    ("b = UNBASE64('a', 'b')", "one string"),
])
def test_bad_binary_literals_are_usage_errors(blobs: Path, where: str, fragment: str) -> None:
    assert fragment in refused(blobs, 2, "scan", "db.b", "--where", where)


@pytest.mark.parametrize("row, fragment", [
    ({"f": 1e39}, "1e+39 is out of range for FLOAT"),
    ({"f": -1e39}, "out of range for FLOAT"),
    ({"f": "3.5e38"}, "out of range for FLOAT"),
    ({"t0": "12:00:00.5"}, "more fractional digits than TIME(0) keeps"),
    ({"t1": "12:00:00.25"}, "more fractional digits than TIME(1) keeps"),
    ({"s0": "2024-01-01T00:00:00.5"}, "more fractional digits than TIMESTAMP(0) keeps"),
    ({"s7": "2024-01-01T00:00:00.12345678"}, "more fractional digits than TIMESTAMP(7) keeps"),
])
def test_values_a_column_cannot_hold_exactly_are_refused(tmp_path: Path, row: dict[str, Any], fragment: str) -> None:
    wh = tmp_path / "wh"
    ok(wh, "-q", "create", "db.u", "--schema",
       "id INT, f FLOAT, t0 TIME(0), t1 TIME(1), s0 TIMESTAMP(0), s7 TIMESTAMP(7)")
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": 1, **row}) + "\n")
    err = refused(wh, 5, "write", "db.u", "-i", path)
    column = next(iter(row))
    assert f"column {column}" in err and fragment in err
    assert rows(wh, "scan", "db.u") == []


def test_values_a_column_holds_are_stored_exactly(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    ok(wh, "-q", "create", "db.u", "--schema", "id INT, f FLOAT, t0 TIME(0), t1 TIME(1), s7 TIMESTAMP(7)")
    path = tmp_path / "in.csv"
    path.write_text("id,f,t0,t1,s7\n1,3.4e38,12:00:01,12:00:00.2,2024-01-01T00:00:00.1234567\n2,Infinity,,,\n")
    ok(wh, "-q", "write", "db.u", "-i", path)
    got = rows(wh, "scan", "db.u")
    assert got[0] == {"id": 1, "f": float(np.float32(3.4e38)), "t0": "12:00:01", "t1": "12:00:00.200",
                      "s7": "2024-01-01T00:00:00.123456700"}
    assert got[1]["f"] == "Infinity"  # an infinity given as such is a value


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("value", ["1500-01-01T00:00:00", "2262-04-11T23:47:16.854775808", "9999-12-31T23:59:59"])
def test_timestamp9_input_outside_what_nanoseconds_hold_is_refused(tmp_path: Path, fmt: str, value: str) -> None:
    wh = tmp_path / "wh"
    ok(wh, "-q", "create", "db.u", "--schema", "id INT, s9 TIMESTAMP(9)")
    path = tmp_path / f"in.{fmt}"
    path.write_text(json.dumps({"id": 1, "s9": value}) + "\n" if fmt == "jsonl" else f"id,s9\n1,{value}\n")
    err = refused(wh, 5, "write", "db.u", "-i", path)
    assert "column s9" in err and "outside 1677-09-21" in err and "2262-04-11" in err
    # The last value a nanosecond column holds is stored exactly.
    path.write_text(json.dumps({"id": 2, "s9": "2262-04-11T23:47:16.854775807"}) + "\n" if fmt == "jsonl"
                    else "id,s9\n2,2262-04-11T23:47:16.854775807\n")
    ok(wh, "-q", "write", "db.u", "-i", path)
    assert rows(wh, "scan", "db.u") == [{"id": 2, "s9": "2262-04-11T23:47:16.854775807"}]


def test_parquet_input_int96_outside_what_nanoseconds_hold_is_refused(tmp_path: Path) -> None:
    """A legacy INT96 timestamp of 1500 (as Spark and Impala write them) would be read by
    pyarrow as a date in 2084; lakectl refuses the input naming the column instead, a file or a
    folder of files, and stores an INT96 value in range to the nanosecond."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    wh = tmp_path / "wh"
    ok(wh, "-q", "create", "db.u", "--schema", "id INT, s9 TIMESTAMP(9)")
    far = tmp_path / "far.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()),
                             "s9": pa.array([dt.datetime(2000, 1, 1), dt.datetime(1500, 1, 1)], pa.timestamp("us"))}),
                   far, use_deprecated_int96_timestamps=True)
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "part-0.parquet").write_bytes(far.read_bytes())
    for source in (far, folder):
        err = refused(wh, 5, "write", "db.u", "-i", source)
        assert "column s9" in err and "1500-01-01T00:00:00" in err and "outside 1677-09-21" in err
    near = tmp_path / "near.parquet"
    pq.write_table(pa.table({"id": pa.array([3], pa.int32()), "s9": pa.array([BASE + 123456789], pa.timestamp("ns"))}),
                   near, use_deprecated_int96_timestamps=True)
    ok(wh, "-q", "write", "db.u", "-i", near)
    assert rows(wh, "scan", "db.u") == [{"id": 3, "s9": _text(BASE + 123456789)}]
