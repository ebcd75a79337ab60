"""The types ``write --auto-create`` infers from text never change a value: reading the text in
the inferred type and printing it as ``scan`` does gives back the same text, cell for cell
(property tests over mixes of texts that look like every type and like none), and the rules
README's table states pick the types it says."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import sources
from core.text_columns import csv_rows, decode_column, jsonl_rows
from core.text_inference import csv_schema, json_schema
from core.text_values import FloatText, parse_json

# Texts that are, or nearly are, the text of some type: canonical and padded integers,
# fixed-point numbers of several scales, doubles as Python prints them and not, words,
# dates, timestamps, booleans in other spellings.
_LOOKALIKES = ["0", "-0", "007", "1", "-12", "9223372036854775807", "9223372036854775808",
               "123456789012345678901234567890", "1.5", "1.50", "-0.00", "0.25", "12.5", "1e+20", "1e20", "1E20",
               "0.1", "100.0", "1.0", ".5", "5.", "+1", "NaN", "Infinity", "-Infinity", "nan", "inf", "true",
               "false", "True", "FALSE", "2024-01-02", "2024-01-02T00:00:00", "12:00:00", "", " 1", "1 ",
               "a", "[1, 2]", '{"a": 1}']
_text = st.sampled_from(_LOOKALIKES) | st.from_regex(r"-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,4})?", fullmatch=True) \
    | st.floats(allow_nan=False, allow_infinity=False).map(repr) | st.text(max_size=4)
_column = st.lists(st.none() | _text, min_size=1, max_size=12)


def _printed(column: list[str | None]) -> list[str | None]:
    """The column read in its inferred type and printed as scan prints CSV cells."""
    text = pa.array(column, pa.string())
    inferred = csv_schema([pa.table({"c": text})]).field("c").type
    from core.text_columns import canonical_text

    return canonical_text(decode_column(text, inferred)).to_pylist()


@settings(max_examples=300, deadline=None)
@given(column=_column)
def test_a_csv_column_reads_back_as_the_same_text(column: list[str | None]) -> None:
    assert _printed(column) == column


@settings(max_examples=100, deadline=None)
@given(column=st.lists(st.sampled_from(["1.50", "2.25", "3", "4.000", "NaN"]) | st.none(), min_size=1, max_size=6),
       cut=st.integers(0, 6))
def test_batches_agree_with_the_whole(column: list[str | None], cut: int) -> None:
    """A CSV streams in batches: the facts folded batch by batch choose the type the whole does."""
    whole = csv_schema([pa.table({"c": pa.array(column, pa.string())})])
    parts = [pa.table({"c": pa.array(column[:cut], pa.string())}), pa.table({"c": pa.array(column[cut:], pa.string())})]
    assert csv_schema(parts) == whole


@pytest.mark.parametrize("texts, expected", [
    (["1", "-2", None], pa.int64()),
    (["12.50", "3.00"], pa.decimal128(18, 2)),
    (["1.5"], pa.decimal128(18, 1)),
    (["1.5", "2.25", "1e+20"], pa.float64()),
    (["1.5", "2.25", "NaN"], pa.float64()),
    (["NaN"], pa.string()),
    (["1", "2.5"], pa.string()),  # as a double 1 prints 1.0
    (["007", "1"], pa.string()),
    (["-0"], pa.string()),
    (["-0.00"], pa.string()),
    (["true", "false", None], pa.bool_()),
    (["True"], pa.string()),
    (["2024-01-02"], pa.string()),
    (["2024-01-02T00:00:00"], pa.string()),
    ([None, None], pa.string()),
    (["9223372036854775808"], pa.decimal128(19, 0)),
    (["1" * 39], pa.string()),
    (["1" * 19 + ".5"], pa.decimal128(20, 1)),
])
def test_the_readme_rules(texts: list[str | None], expected: pa.DataType) -> None:
    assert csv_schema([pa.table({"c": pa.array(texts, pa.string())})]).field("c").type == expected


# ---- JSON ----------------------------------------------------------------------------------------
_json_value = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | _text \
    | st.sampled_from(["1.50", "2.25", "1e+20", "0.1", "3.0"]).map(FloatText)
_json_column = st.lists(_json_value, min_size=1, max_size=8)


def _literal(value: Any) -> str | None:
    """A JSON value's text: a string's characters, a number as written, true or false."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, FloatText):
        return value.text
    return json.dumps(value)


def _json_round_trip(values: list[Any]) -> tuple[pa.DataType, list[Any]]:
    records = [{"c": v} for v in values]
    lines = "\n".join('{"c": ' + (json.dumps(v) if not isinstance(v, FloatText) else v.text) + "}"
                      for v in values).encode()
    hint = json_schema(iter(parse_json(line) for line in lines.splitlines()))
    assert hint.names == ["c"] and len(records) == len(values)
    table = sources._read_jsonl(io.BytesIO(lines), hint, "test")
    return hint.field("c").type, [parse_json(line)["c"] for line in jsonl_rows(table).splitlines()]


@settings(max_examples=300, deadline=None)
@given(values=_json_column)
def test_a_json_column_reads_back_as_the_same_text(values: list[Any]) -> None:
    """Every value prints again with its text (a number in a STRING or DECIMAL column prints
    as a string holding its digits)."""
    _, printed = _json_round_trip(values)
    assert [_literal(v) for v in printed] == [_literal(v) for v in values]


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.none() | st.booleans(), min_size=1, max_size=8)
       | st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=8))
def test_json_numbers_and_booleans_stay_json_numbers_and_booleans(values: list[Any]) -> None:
    """A column of one JSON kind keeps it: no integer or boolean turns into a string."""
    _, printed = _json_round_trip(values)
    assert printed == values and [type(v) for v in printed] == [type(v) for v in values]


@pytest.mark.parametrize("values, expected", [
    ([1, 2], pa.int64()),
    (["12.50", "3.00"], pa.decimal128(18, 2)),
    (["7", "8"], pa.string()),  # a JSON string stays a string: BIGINT prints numbers
    ([FloatText("1.5"), FloatText("2.25")], pa.float64()),
    ([FloatText("1.50"), FloatText("2.25")], pa.decimal128(18, 2)),
    ([FloatText("1.5"), "NaN"], pa.float64()),
    ([1, "a"], pa.string()),
    ([True, None], pa.bool_()),
    ([{"x": 1, "y": ["2.50"]}, {"x": 2}], pa.struct([("x", pa.int64()), ("y", pa.list_(pa.decimal128(18, 2)))])),
    ([[1, "a"]], pa.string()),
    ([{}], pa.string()),
])
def test_the_json_rules(values: list[Any], expected: pa.DataType) -> None:
    assert json_schema(iter({"c": v} for v in values)).field("c").type == expected


def test_nested_values_keep_their_values() -> None:
    values = [{"x": 1, "y": ["2.50", "3.25"], "z": {"w": True}}, {"x": None, "y": [], "z": None}, None]
    kind, printed = _json_round_trip(values)
    assert pa.types.is_struct(kind)
    assert printed[0] == {"x": 1, "y": ["2.50", "3.25"], "z": {"w": True}}
    assert printed[1] == {"x": None, "y": [], "z": None} and printed[2] is None


def test_what_scan_prints_in_csv_and_in_json_lines_infers_the_same_types() -> None:
    """The text of one table in CSV and in JSON lines gives the same types (where the table's
    own types are inferable: a STRING column of digits is BIGINT from CSV, which cannot tell)."""
    table = pa.table({"id": pa.array([1, 2, None], pa.int64()),
                      "amount": pa.array([Decimal("12.50"), Decimal("-3.00"), None], pa.decimal128(10, 2)),
                      "score": pa.array([1.5, 2.25, float("nan")], pa.float64()),
                      "ok": pa.array([True, None, False]), "dt": pa.array(["2024-01-02", "x", None])})
    header = (",".join(table.column_names) + "\n").encode()
    from_csv = csv_schema([sources._read_csv(io.BytesIO(header + csv_rows(table)),
                                             pa.schema([(n, pa.string()) for n in table.column_names]), "t")])
    from_jsonl = json_schema(iter(parse_json(line) for line in jsonl_rows(table).splitlines()))
    assert from_csv == from_jsonl
    assert [str(t) for t in from_csv.types] == ["int64", "decimal128(18, 2)", "double", "bool", "string"]
