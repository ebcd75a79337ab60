"""Values that must never come out wrong, below the CLI: TIMESTAMP(9) literals against stats
whose bounds lost their last digits, binary and nanosecond literals, Avro maps with
non-string keys, aggregation's remove-record-on-delete on NOT NULL columns, and scans that
read only the columns they use. Expectations are computed by hand here.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from core import formats
from core.errors import UsageError
from core.ops.create import create
from core.predicate import ColumnRange, Comparison, text_value
from core.where import parse_where
from core.table import Table
from core.types import DataField, parse_type, to_arrow

BASE = 1709208000 * 10**9  # 2024-02-29T12:00:00 in epoch nanoseconds
TS9 = DataField(0, "ts", parse_type("TIMESTAMP(9)"))
LTZ9 = DataField(1, "ltz", parse_type("TIMESTAMP(9) WITH LOCAL TIME ZONE"))
BIN = DataField(2, "b", parse_type("BYTES"))
TIME0 = DataField(3, "t", parse_type("TIME(0)"))
FIELDS = [TS9, LTZ9, BIN, TIME0]


def micros_stamp(nanos: int) -> dt.datetime:
    """What a BinaryRow decode or a pyarrow ``as_py`` gives for a nanosecond value: its
    microseconds, the last three digits dropped."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=nanos // 1000)


def test_nine_digit_literals_keep_every_digit() -> None:
    pred = parse_where("ts = '2024-02-29T12:00:00.123456789'", FIELDS)
    assert pred == Comparison("ts", TS9.type, "=", BASE + 123456789)
    assert parse_where("ts = TIMESTAMP '2024-02-29 12:00:00.000000001'", FIELDS).value == BASE + 1
    # LTZ literals are instants: an offset moves them, nanos stay.
    assert parse_where("ltz = '2024-02-29T13:00:00.000000007+01:00'", FIELDS).value == BASE + 7


@pytest.mark.parametrize("literal, op, lo, hi, can_match", [
    # A file whose min and max are both ...123456789, decoded as ...123456 (micros).
    (BASE + 123456789, "=", BASE + 123456789, BASE + 123456789, True),
    (BASE + 123456999, "=", BASE + 123456789, BASE + 123456789, True),   # within the lost digits
    (BASE + 123457000, "=", BASE + 123456789, BASE + 123456789, False),  # past them: pruned
    (BASE + 123455999, "=", BASE + 123456789, BASE + 123456789, False),
    (BASE + 123456789, ">", BASE + 123456000, BASE + 123456789, True),
    (BASE + 123457000, ">=", BASE + 123456000, BASE + 123456789, False),
    (BASE + 123456001, "<", BASE + 123456500, BASE + 123456900, True),
    (BASE + 123456000, "<", BASE + 123456500, BASE + 123456900, False),
])
def test_nanosecond_pruning_is_sound_with_microsecond_bounds(literal: int, op: str, lo: int, hi: int,
                                                              can_match: bool) -> None:
    """Stats decoded to datetimes lost the nanos: the min still bounds from below, and the
    max plus 999 nanos from above; a bound given exactly (an int, a pandas Timestamp's
    ``value``) is used as it is."""
    pred = Comparison("ts", TS9.type, op, literal)
    assert pred.may_match({"ts": ColumnRange(micros_stamp(lo), micros_stamp(hi), 0, 2)}) is can_match
    exact = pred.may_match({"ts": ColumnRange(lo, hi, 0, 2)})
    # Exact bounds: the hand answer of lo..hi holding some value v with v op literal.
    assert exact is {"=": lo <= literal <= hi, ">": hi > literal, ">=": hi >= literal, "<": lo < literal}[op]


def test_literal_between_two_nanoseconds_is_exact() -> None:
    assert parse_where("ts = '2024-02-29T12:00:00.1234567891'", FIELDS).to_arrow() is not None
    table = pa.table({"ts": pa.array([BASE + 123456789, BASE + 123456790], pa.timestamp("ns"))})
    lt = parse_where("ts < '2024-02-29T12:00:00.1234567895'", [TS9])
    assert table.filter(lt.to_arrow()).column(0).cast(pa.int64()).to_pylist() == [BASE + 123456789]
    eq = parse_where("ts = '2024-02-29T12:00:00.1234567895'", [TS9])
    assert table.filter(eq.to_arrow()).num_rows == 0


def test_time_literal_with_digits_past_the_millisecond_matches_nothing() -> None:
    table = pa.table({"t": pa.array([0], pa.time32("ms"))})
    assert table.filter(parse_where("t = '00:00:00.000000001'", [TIME0]).to_arrow()).num_rows == 0
    assert table.filter(parse_where("t < '00:00:00.000000001'", [TIME0]).to_arrow()).num_rows == 1


@pytest.mark.parametrize("text, value", [
    ("X'0700ff'", b"\x07\x00\xff"), ("x''", b""), ("FROM_BASE64('BwD/')", b"\x07\x00\xff"),
    ("unbase64('')", b""), ("abc", b"abc"), ("X'0", b"X'0"),  # not a literal: its UTF-8 bytes
])
def test_binary_key_text(text: str, value: bytes) -> None:
    assert text_value(text, BIN) == value


def test_binary_literal_errors() -> None:
    with pytest.raises(UsageError, match="even number of hex digits"):
        text_value("X'abc'", BIN)
    with pytest.raises(UsageError, match="not base64"):
        parse_where("b = FROM_BASE64('@@')", FIELDS)
    with pytest.raises(UsageError, match=r"binary literals: X'0700ff'"):
        parse_where("b = 7", FIELDS)


def test_timestamp9_key_text_is_epoch_nanos() -> None:
    assert text_value("2024-02-29T12:00:00.123456789", TS9) == BASE + 123456789
    with pytest.raises(UsageError):
        text_value("2024-02-29T12:00:00.1234567891", TS9)  # between two nanoseconds: no key


def test_avro_map_with_int_keys_is_an_array_of_records() -> None:
    """Java's layout: logicalType map over an array of {key, value} records named after the field."""
    t = parse_type("ROW<m MAP<INT, STRING>>")
    schema = formats.avro_schema([("r", t)])
    m = schema[1]["fields"][0]["type"][1]["fields"][0]["type"][1]
    assert m["type"] == "array" and m["logicalType"] == "map"
    assert [f["name"] for f in m["items"]["fields"]] == ["key", "value"]
    values = [{"m": [(1, "a"), (-7, None)]}, None, {"m": []}, {"m": None}]
    data = pa.table({"r": pa.array(values, to_arrow(t))})
    blob = formats.encode_avro(data, [("r", t)], "null", 1)
    raw = [rec["r"] for rec in fastavro.reader(io.BytesIO(blob))]
    assert raw[0] == {"m": [{"key": 1, "value": "a"}, {"key": -7, "value": None}]}
    assert formats.read_avro(io.BytesIO(blob), {"r": t}).column("r").to_pylist() == values


def _agg_table(tmp_path: Path) -> Table:
    table = Table.locate("db.agg", warehouse=str(tmp_path / "wh"))
    create(table, "id INT NOT NULL, s BIGINT NOT NULL, n BIGINT, la STRING NOT NULL",
           primary_keys=["id"], options={"bucket": "1", "merge-engine": "aggregation",
                                         "aggregation.remove-record-on-delete": "true",
                                         "fields.s.aggregate-function": "sum", "fields.n.aggregate-function": "sum",
                                         "fields.la.aggregate-function": "listagg"})
    return table


def _write(table: Table, kind: str, s: int, n: int, la: str) -> None:
    table.write(pa.table({"id": pa.array([1], pa.int32()), "s": [s], "n": [n], "la": [la], "op": [kind]}),
                row_kind_column="op")


def test_remove_record_on_delete_restarts_empty_but_seeds_not_null_columns(tmp_path: Path) -> None:
    """+I (3, 3, 'a'), -D (1, 1, 'x'), +I (5, 5, 'b'), each its own commit: the nullable sum
    starts over (5), the NOT NULL ones start from the -D's values (1 + 5 = 6, 'x,b'), as
    Paimon's AggregateMergeFunction.initRow seeds them."""
    table = _agg_table(tmp_path)
    _write(table, "+I", 3, 3, "a")
    _write(table, "-D", 1, 1, "x")
    assert table.scan().num_rows == 0  # the -D removed the key
    _write(table, "+I", 5, 5, "b")
    assert table.scan().to_pylist() == [{"id": 1, "s": 6, "n": 5, "la": "x,b"}]
    table.compact(full=True)
    assert table.scan().to_pylist() == [{"id": 1, "s": 6, "n": 5, "la": "x,b"}]


def test_select_reads_only_the_columns_it_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scan --select asks the files for the selected, filtered and key columns only."""
    from core.kernels import data_file

    table = Table.locate("db.wide", warehouse=str(tmp_path / "wh"))
    create(table, "id INT NOT NULL, a STRING, b STRING, c INT", primary_keys=["id"], options={"bucket": "1"})
    table.write(pa.table({"id": pa.array([1, 2], pa.int32()), "a": ["x", "y"], "b": ["p", "q"],
                          "c": pa.array([7, 8], pa.int32())}))
    table.write(pa.table({"id": pa.array([2], pa.int32()), "a": ["z"], "b": [None], "c": pa.array([9], pa.int32())}))
    asked: list[list[str]] = []
    real_read = data_file._read_columns

    def spy(path, meta, file_io, wanted, *args, **kwargs):
        asked.append(list(wanted))
        return real_read(path, meta, file_io, wanted, *args, **kwargs)

    monkeypatch.setattr(data_file, "_read_columns", spy)
    got = table.scan(select=["a"], where="c > 7")
    assert got.to_pylist() == [{"a": "z"}]
    assert asked and all("b" not in cols for cols in asked)
    assert all({"id", "a", "c"} <= set(cols) for cols in asked)


def test_lookup_prunes_files_by_nanosecond_key_ranges(tmp_path: Path) -> None:
    """Each commit is a file with a key range; a TIMESTAMP(9) key is looked for only in the
    files whose range (its bounds decoded to microseconds, widened by 999 nanos) holds it."""
    table = Table.locate("db.keys", warehouse=str(tmp_path / "wh"))
    create(table, "k TIMESTAMP(9) NOT NULL, v INT", primary_keys=["k"], options={"bucket": "1"})
    for first in (0, 10_000, 20_000):  # three files: BASE+first .. BASE+first+1 nanos
        table.write(pa.table({"k": pa.array([BASE + first, BASE + first + 1], pa.timestamp("ns")),
                              "v": pa.array([first, first + 1], pa.int32())}))
    result = table.lookup(["k=2024-02-29T12:00:00.000010001"])
    assert result.rows.column("v").to_pylist() == [10_001]
    assert result.files_read == 1 and result.files_total == 3
    missing = table.lookup(["k=2024-02-29T12:00:00.000010002"])
    assert missing.rows.num_rows == 0 and missing.files_read == 1  # within the widened bound
