"""core.stats: spec 5.4's ``stats`` table byte for byte, stats modes, truncation, edge columns."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import stats
from core.nano_datetime import from_epoch_nanos
from core.binary_row import EMPTY_ROW, encode
from core.errors import InvalidDataError, UsageError
from core.types import DataField, parse_type


def fields(*columns: tuple[str, str]) -> list[DataField]:
    return [DataField(i, name, parse_type(text)) for i, (name, text) in enumerate(columns)]


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("|", ""))


STATS_FIELDS = fields(("id", "BIGINT"), ("a", "INT"), ("s", "STRING"))
STATS_TABLE = pa.table({
    "id": pa.array([5, 3, 9], pa.int64()),
    "a": pa.array([7, None, -1], pa.int32()),
    "s": pa.array(["ab", "hello world!", None]),
})


def test_spec_stats_table_full_mode() -> None:
    result = stats.compute(STATS_TABLE, STATS_FIELDS, "full")
    assert result.min_values == h(
        "00000003 | 0000000000000000 | 0300000000000000 | ffffffff00000000 | 6162000000000082")
    assert result.max_values == h(
        "00000003 | 0000000000000000 | 0900000000000000 | 0700000000000000 | 0c00000020000000"
        "| 68656c6c6f20776f726c6421 00000000")
    assert result.null_counts == (0, 1, 1)
    assert stats.decode(result, [f.type for f in STATS_FIELDS]) == [
        stats.ColumnStats(3, 9, 0), stats.ColumnStats(-1, 7, 1), stats.ColumnStats("ab", "hello world!", 1)]


def test_full_is_the_default_mode() -> None:
    assert stats.compute(STATS_TABLE, STATS_FIELDS) == stats.compute(STATS_TABLE, STATS_FIELDS, "full")


def test_columns_follow_field_order_and_names() -> None:
    reordered = [STATS_FIELDS[2], STATS_FIELDS[0]]
    decoded = stats.decode(stats.compute(STATS_TABLE, reordered), [f.type for f in reordered])
    assert decoded == [stats.ColumnStats("ab", "hello world!", 1), stats.ColumnStats(3, 9, 0)]


def test_avro_record_round_trip() -> None:
    result = stats.compute(STATS_TABLE, STATS_FIELDS)
    record = result.to_avro()
    assert record == {"_MIN_VALUES": result.min_values, "_MAX_VALUES": result.max_values, "_NULL_COUNTS": [0, 1, 1]}
    assert stats.SimpleStats.from_avro(record) == result


def test_empty_stats() -> None:
    assert stats.EMPTY_STATS == stats.SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
    assert stats.EMPTY_STATS.to_avro() == {"_MIN_VALUES": EMPTY_ROW, "_MAX_VALUES": EMPTY_ROW, "_NULL_COUNTS": []}
    record = {"_MIN_VALUES": EMPTY_ROW, "_MAX_VALUES": EMPTY_ROW, "_NULL_COUNTS": None}
    assert stats.SimpleStats.from_avro(record) == stats.EMPTY_STATS
    assert stats.decode(stats.EMPTY_STATS, [f.type for f in STATS_FIELDS]) == [stats.ColumnStats(None, None, None)] * 3


def test_none_mode() -> None:
    assert stats.compute(STATS_TABLE, STATS_FIELDS, "none") == stats.EMPTY_STATS


def test_counts_mode() -> None:
    result = stats.compute(STATS_TABLE, STATS_FIELDS, "counts")
    row_types = [f.type for f in STATS_FIELDS]
    assert result.min_values == result.max_values == encode([None] * 3, row_types)
    assert result.null_counts == (0, 1, 1)
    assert stats.decode(result, row_types) == [
        stats.ColumnStats(None, None, 0), stats.ColumnStats(None, None, 1), stats.ColumnStats(None, None, 1)]


@pytest.mark.parametrize("mode", ["FULL", " Truncate(4) ", "COUNTS"])
def test_modes_are_case_insensitive(mode: str) -> None:
    stats.compute(STATS_TABLE, STATS_FIELDS, mode)


@pytest.mark.parametrize("mode", ["truncate(0)", "truncate", "truncate(-1)", "all", ""])
def test_unknown_modes(mode: str) -> None:
    with pytest.raises(UsageError):
        stats.compute(STATS_TABLE, STATS_FIELDS, mode)


def test_missing_column() -> None:
    with pytest.raises(InvalidDataError):
        stats.compute(STATS_TABLE, fields(("nope", "INT")))


# ---- truncate(N) ------------------------------------------------------------------------
def test_truncate_mode_cuts_strings_only() -> None:
    table = pa.table({"s": ["apple", "banana split", "cherry"], "n": pa.array([1, 2, 3], pa.int64()),
                      "b": [b"aaaaaaaaaa", b"zzzzzzzzzz", b"m"]})
    cols = fields(("s", "STRING"), ("n", "BIGINT"), ("b", "BYTES"))
    decoded = stats.decode(stats.compute(table, cols, "truncate(3)"), [c.type for c in cols])
    # binaries get no bounds in any mode (as Java 1.0 writes them), only their null count
    assert decoded == [stats.ColumnStats("app", "chf", 0), stats.ColumnStats(1, 3, 0),
                       stats.ColumnStats(None, None, 0)]


def test_truncate_keeps_short_values_whole() -> None:
    table = pa.table({"s": ["abc", "abd"]})
    decoded = stats.decode(stats.compute(table, fields(("s", "STRING")), "truncate(3)"), [parse_type("STRING")])
    assert decoded == [stats.ColumnStats("abc", "abd", 0)]


def test_truncate_counts_code_points() -> None:
    assert stats.truncate_min("日本語テキスト", 2) == "日本"
    assert stats.truncate_max("日本語テキスト", 2) == "日" + chr(ord("本") + 1)
    assert stats.truncate_max("a\U0001F600\U0001F600", 2) == "a\U0001F601"


def test_truncate_max_carries_past_the_last_code_point() -> None:
    top = chr(0x10FFFF)
    assert stats.truncate_max("a" + top + "zzz", 2) == "b"
    assert stats.truncate_max(top * 3, 2) is None
    assert stats.truncate_max("ab", 2) == "ab"
    assert stats.truncate_max("\ud7ffx", 1) == "\ue000"  # never a lone surrogate


def test_truncate_drops_both_bounds_when_max_has_no_bound() -> None:
    top = chr(0x10FFFF)
    table = pa.table({"s": ["a", top * 5]})
    decoded = stats.decode(stats.compute(table, fields(("s", "STRING")), "truncate(2)"), [parse_type("STRING")])
    assert decoded == [stats.ColumnStats(None, None, 0)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), min_size=1), st.integers(1, 8))
def test_truncated_bounds_still_bound(values: list[str], length: int) -> None:
    table = pa.table({"s": pa.array(values, pa.string())})
    (column,) = stats.decode(stats.compute(table, fields(("s", "STRING")), f"truncate({length})"),
                             [parse_type("STRING")])
    encoded = sorted(v.encode("utf-8") for v in values)
    if column.max is None:
        assert column.min is None
        return
    assert len(column.min) <= length and len(column.max) <= length
    assert column.min.encode("utf-8") <= encoded[0]
    assert column.max.encode("utf-8") >= encoded[-1]


# ---- column kinds -----------------------------------------------------------------------
def test_all_null_and_empty_columns() -> None:
    table = pa.table({"x": pa.array([None, None], pa.int64()), "s": pa.array([None, None], pa.string())})
    cols = fields(("x", "BIGINT"), ("s", "STRING"))
    assert stats.decode(stats.compute(table, cols), [c.type for c in cols]) == [
        stats.ColumnStats(None, None, 2), stats.ColumnStats(None, None, 2)]
    empty = table.slice(0, 0)
    assert stats.decode(stats.compute(empty, cols), [c.type for c in cols]) == [
        stats.ColumnStats(None, None, 0), stats.ColumnStats(None, None, 0)]


def test_nan_gives_unknown_bounds() -> None:
    table = pa.table({"d": [1.0, float("nan"), None], "f": pa.array([1.5, -2.5, None], pa.float32())})
    cols = fields(("d", "DOUBLE"), ("f", "FLOAT"))
    assert stats.decode(stats.compute(table, cols), [c.type for c in cols]) == [
        stats.ColumnStats(None, None, 1), stats.ColumnStats(-2.5, 1.5, 1)]


def test_composite_columns_have_counts_only() -> None:
    table = pa.table({"l": pa.array([[1], None, [2, 3]]), "r": pa.array([{"x": 1}, {"x": 2}, None])})
    cols = fields(("l", "ARRAY<INT>"), ("r", "ROW<x INT>"))
    assert stats.decode(stats.compute(table, cols), [c.type for c in cols]) == [
        stats.ColumnStats(None, None, 1), stats.ColumnStats(None, None, 1)]


def test_other_types_full_mode() -> None:
    table = pa.table({
        "dec": pa.array([Decimal("1.50"), Decimal("-20.25"), None], pa.decimal128(30, 2)),
        "day": pa.array([dt.date(2024, 1, 2), dt.date(1999, 12, 31), dt.date(2024, 1, 1)]),
        "ts": pa.array([1_000_000_001, -5, None], pa.int64()).cast(pa.timestamp("ns")),
        "ltz": pa.array([dt.datetime(2024, 1, 1), dt.datetime(2023, 1, 1), None], pa.timestamp("ms", tz="UTC")),
        "flag": [True, False, True],
        "tm": pa.array([3_600_000, 0, None], pa.time32("ms")),
    })
    cols = fields(("dec", "DECIMAL(30, 2)"), ("day", "DATE"), ("ts", "TIMESTAMP(9)"),
                  ("ltz", "TIMESTAMP_LTZ(3)"), ("flag", "BOOLEAN"), ("tm", "TIME(3)"))
    result = stats.compute(table, cols)
    utc = dt.timezone.utc
    assert stats.decode(result, [c.type for c in cols]) == [
        stats.ColumnStats(Decimal("-20.25"), Decimal("1.50"), 1),
        stats.ColumnStats(dt.date(1999, 12, 31), dt.date(2024, 1, 2), 0),
        # exact to the nanosecond (NanoDatetime): -5 ns and 1 s + 1 ns
        stats.ColumnStats(from_epoch_nanos(-5), from_epoch_nanos(1_000_000_001), 1),
        stats.ColumnStats(dt.datetime(2023, 1, 1, tzinfo=utc), dt.datetime(2024, 1, 1, tzinfo=utc), 1),
        stats.ColumnStats(False, True, 0),
        stats.ColumnStats(dt.time(0), dt.time(1), 1),
    ]
    # The max timestamp keeps its last nanosecond on disk even though Python cannot show it.
    assert result.max_values.endswith((1000).to_bytes(8, "little"))
    assert int.from_bytes(result.max_values[4 + 8 + 2 * 8: 4 + 8 + 3 * 8][:4], "little") == 1


def test_chunked_columns() -> None:
    table = pa.Table.from_batches([
        pa.record_batch({"x": pa.array([4, None], pa.int32())}),
        pa.record_batch({"x": pa.array([-3, 10], pa.int32())}),
    ])
    assert stats.decode(stats.compute(table, fields(("x", "INT"))), [parse_type("INT")]) == [
        stats.ColumnStats(-3, 10, 1)]


def test_decode_refuses_rows_narrower_than_types() -> None:
    result = stats.compute(STATS_TABLE, STATS_FIELDS[:2])
    with pytest.raises(ValueError):
        stats.decode(result, [f.type for f in STATS_FIELDS])


def test_from_columns_round_trip() -> None:
    columns = [stats.ColumnStats(1, 5, 0), stats.ColumnStats(None, None, None)]
    row_types = [parse_type("INT"), parse_type("STRING")]
    assert stats.decode(stats.from_columns(columns, row_types), row_types) == columns


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1),
       st.lists(st.one_of(st.none(), st.text()), min_size=1))
def test_full_mode_matches_arrow(ints: list[int | None], texts: list[str | None]) -> None:
    table = pa.table({"i": pa.array(ints, pa.int64())})
    strings = pa.table({"s": pa.array(texts, pa.string())})
    (i_stats,) = stats.decode(stats.compute(table, fields(("i", "BIGINT"))), [parse_type("BIGINT")])
    (s_stats,) = stats.decode(stats.compute(strings, fields(("s", "STRING"))), [parse_type("STRING")])
    for column, got in ((table["i"], i_stats), (strings["s"], s_stats)):
        expected = pc.min_max(column)
        assert (got.min, got.max, got.null_count) == (
            expected["min"].as_py(), expected["max"].as_py(), column.null_count)
