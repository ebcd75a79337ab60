"""The sqlglot-free reader of simple ``--where`` conditions (core/where_simple.py): the same
predicate as core.where.parse_where for every text, simple or not, and the same errors; and
sqlglot is not imported for the simple ones."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import core.where_simple as simple
from core.errors import UsageError
from core.types import DataField, parse_type
from core.where import parse_where

FIELDS = [DataField(i, name, parse_type(t)) for i, (name, t) in enumerate([
    ("id", "BIGINT NOT NULL"), ("n", "INT"), ("small", "TINYINT"), ("dt", "STRING"), ("d", "DATE"),
    ("amount", "DECIMAL(10, 2)"), ("x", "DOUBLE"), ("flag", "BOOLEAN"), ("MixedCase", "INT"),
    ("ts", "TIMESTAMP(6)"), ("b", "BYTES"), ("between_", "INT")])]

SIMPLE = [
    "id BETWEEN 5 AND 10", "id between -3 and 7", "id IN (1, 2, 3)", "id in (5)", "id = 5", "id <> 5", "id != 5",
    "id < 5", "id <= 5", "id > -5", "id >= 5", "dt = '2024-01-01' AND id >= 3", "id=5 AND n<3 AND small>=-128",
    "small = 300", "small IN (1, 1000, 2)", "n = 2.5", "n = 2.0", "amount = 1.25", "amount = 1.256",
    "amount BETWEEN -1.5 AND 2", "x > 0.5", "x = 007", "d = '2024-02-29'", "d BETWEEN '2024-01-01' AND '2024-12-31'",
    "mixedcase = 3", "MixedCase IN (1, 2)", "ts >= '2024-01-01 00:00:00'", "dt = ''", "dt IN ('a', 'b', 'a')",
    "id BETWEEN 1 AND 2 AND dt = 'x'", "  id = 1  ", "id = 99999999999999999999", f"dt = '{'y' * 80}'",
    "between_ = 4",
]
NOT_SIMPLE = [
    "id = 5 OR id = 6", "NOT id = 5", "(id = 5)", "id NOT IN (1, 2)", "id IN ()", "id = NULL", "id IS NULL",
    "flag", "flag = TRUE", "5 < id", "id = n", "dt LIKE 'a%'", "dt = 'it''s'", "dt = 'a\\b'", "d = DATE '2024-01-01'",
    "id = 1e3", "id = .5", "id = 5;", "t.id = 5", "`id` = 5", '"id" = 5', "nope = 1", "id = 5 AND", "id BETWEEN 1",
    "id = 0x10", "d = 'not a date'", "small = 'abc'", "b = X'00ff'", "id = 5 - 3", "id = +5", "", "   ",
    "id = 5 AND (n = 1 OR n = 2)", "id IN (SELECT 1)", "id = 5AND n = 3", "id = 5.5.5", "id = 5 -- note",
    "id = 5 /* note */",
]


def outcome(parse, text: str):
    try:
        return ("ok", parse(text, FIELDS))
    except UsageError as e:
        return ("error", str(e))


@pytest.mark.parametrize("text", SIMPLE + NOT_SIMPLE)
def test_same_predicate_or_error_as_the_sqlglot_reader(text: str) -> None:
    assert outcome(simple.parse_condition, text) == outcome(parse_where, text)


@pytest.mark.parametrize("text", SIMPLE)
def test_simple_conditions_are_read_without_the_full_parser(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import core.where

    expected = parse_where(text, FIELDS)

    def refuse(*args: object) -> None:
        raise AssertionError("the full parser was called")

    monkeypatch.setattr(core.where, "parse_where", refuse)
    assert simple.parse_condition(text, FIELDS) == expected


def test_a_key_range_scan_does_not_import_sqlglot(tmp_path) -> None:
    code = ("import sys, pyarrow as pa\n"
            "from core.ops.create import create\nfrom core.table import Table\n"
            f"t = Table.locate('db.t', warehouse={str(tmp_path)!r})\n"
            "create(t, 'id BIGINT NOT NULL, v STRING', primary_keys=['id'], options={'bucket': '1'})\n"
            "t.write(pa.table({'id': pa.array([1, 2, 3], pa.int64()), 'v': ['a', 'b', 'c']}))\n"
            "rows = t.scan(where='id BETWEEN 2 AND 3').to_pylist()\n"
            "print(rows, 'sqlglot' in sys.modules)\n"
            "t.scan(where='id = 2 OR id = 3')\n"
            "print('sqlglot' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()}).stdout.split("\n")
    assert out[0] == "[{'id': 2, 'v': 'b'}, {'id': 3, 'v': 'c'}] False"
    assert out[1] == "True"  # an OR goes to the full parser
