"""Tests for core.predicate: ``parse_where``, the Arrow row filter, and stats pruning.

The filter is checked against a plain-Python model of SQL's three-valued logic written
here, independently of the module; pruning is checked for soundness (``may_match`` False
means the model selects no row) and, on one-row partitions, for exactness.
"""

from __future__ import annotations

import logging
import math
import operator
import re
import struct
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import UsageError
from core.predicate import ColumnRange, Comparison, InList, Predicate
from core.where import parse_where
from core.types import DataField, parse_type, to_arrow

Row = dict[str, Any]
Model = Callable[[Row], "bool | None"]

OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge}


# ---- SQL three-valued logic, the model's own -------------------------------------------------
def and3(*xs: bool | None) -> bool | None:
    if any(x is False for x in xs):
        return False
    return None if any(x is None for x in xs) else True


def or3(*xs: bool | None) -> bool | None:
    if any(x is True for x in xs):
        return True
    return None if any(x is None for x in xs) else False


def not3(x: bool | None) -> bool | None:
    return None if x is None else not x


def cmp(a: Any, op: str, b: Any) -> bool | None:
    if a is None or b is None:
        return None
    if isinstance(a, float) and isinstance(b, float):
        a, b = java_double_order(a), java_double_order(b)
    return OPS[op](a, b)


def java_double_order(x: float) -> int:
    """Java's ``Double.compare`` (Paimon's predicates) as an integer: the IEEE bits of the
    canonical value, negative ones flipped, so -0.0 < 0.0 and NaN lies above +Infinity."""
    bits = struct.unpack(">q", struct.pack(">d", math.nan if math.isnan(x) else x))[0]
    return bits if bits >= 0 else bits ^ 0x7FFF_FFFF_FFFF_FFFF


def in3(a: Any, items: list[Any]) -> bool | None:
    return or3(*(cmp(a, "=", v) for v in items))


def like3(value: str | None, regex: str) -> bool | None:
    return None if value is None else re.fullmatch(regex, value, re.DOTALL) is not None


def fields_of(spec: list[tuple[str, str]]) -> list[DataField]:
    return [DataField(i, name, parse_type(t)) for i, (name, t) in enumerate(spec)]


def table_of(fields: list[DataField], rows: list[Row]) -> pa.Table:
    cols = {f.name: pa.array([r[f.name] for r in rows], to_arrow(f.type)) for f in fields}
    cols["_row"] = pa.array(range(len(rows)), pa.int64())
    return pa.table(cols)


def selected(pred: Predicate, fields: list[DataField], rows: list[Row]) -> list[int]:
    return table_of(fields, rows).filter(pred.to_arrow())["_row"].to_pylist()


def model_selected(model: Model, rows: list[Row]) -> list[int]:
    return [i for i, r in enumerate(rows) if model(r) is True]


# ---- every construct on a small table of many types -------------------------------------------
WIDE = fields_of([("id", "INT"), ("name", "STRING"), ("dt", "DATE"), ("x", "DOUBLE"), ("amount", "DECIMAL(10, 2)"),
                  ("ts", "TIMESTAMP(3)"), ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("flag", "BOOLEAN"),
                  ("t", "TIME"), ("raw", "BYTES"), ("f32", "FLOAT"), ("big", "BIGINT"), ("tiny", "TINYINT"),
                  ("Mixed", "INT"), ("odd name", "STRING")])
UTC = timezone.utc


def f32(x: float | None) -> float | None:
    """The value a FLOAT column holds for ``x``."""
    return None if x is None else float(pa.scalar(x, pa.float32()).as_py())


def wide_row(i: int, name: str | None, dt: date | None, x: float | None, amount: str | None, ts: datetime | None,
             flag: bool | None, t: time | None) -> Row:
    return {"id": i if i % 4 else None, "name": name, "dt": dt, "x": x,
            "amount": None if amount is None else Decimal(amount), "ts": ts,
            "ltz": None if ts is None else ts.replace(tzinfo=UTC), "flag": flag, "t": t,
            "raw": None if name is None else name.encode(), "f32": f32(x),
            "big": None if i == 3 else i * 1_000_000_000, "tiny": i - 3, "Mixed": i, "odd name": name}


WIDE_ROWS = [
    wide_row(1, "apple", date(2024, 1, 1), 1.5, "1.23", datetime(2024, 1, 1, 10, 0, 0, 1000), True, time(1, 0)),
    wide_row(2, "apricot", date(2024, 1, 2), -0.0, "9.99", datetime(2024, 1, 1, 10, 0, 0, 2000), False,
             time(2, 30, 0, 5000)),
    wide_row(3, None, None, None, None, None, None, None),
    wide_row(4, "a_c", date(2024, 1, 1), float("nan"), "-5.00", datetime(2024, 1, 2), None, time(23, 59)),
    wide_row(5, "a%c", date(2024, 2, 29), 0.1, "0.50", datetime(2023, 12, 31, 23, 59, 59), True, time(0, 0)),
    wide_row(6, "Banana", date(2023, 12, 31), 3.0, "100.00", datetime(2024, 1, 1), False, time(12, 0)),
    wide_row(7, "", date(2024, 1, 3), 2.5, "1.24", datetime(2024, 1, 1, 10, 0, 0, 3000), True, time(1, 0, 0, 1000)),
    wide_row(8, "apple pie", date(2024, 1, 1), None, "1.24", None, None, time(1, 0)),
]
D = date.fromisoformat
TS = datetime.fromisoformat


def midnight(d: date | None) -> datetime | None:
    """SQL compares a DATE with a TIMESTAMP as that day's midnight."""
    return None if d is None else datetime.combine(d, time())


CASES: list[tuple[str, Model]] = [
    ("id > 5", lambda r: cmp(r["id"], ">", 5)),
    ("id >= 5", lambda r: cmp(r["id"], ">=", 5)),
    ("id < 5", lambda r: cmp(r["id"], "<", 5)),
    ("id <= 5", lambda r: cmp(r["id"], "<=", 5)),
    ("id = 5", lambda r: cmp(r["id"], "=", 5)),
    ("id <> 5", lambda r: cmp(r["id"], "<>", 5)),
    ("id != 5", lambda r: cmp(r["id"], "<>", 5)),
    ("5 < id", lambda r: cmp(5, "<", r["id"])),
    ("id > '5'", lambda r: cmp(r["id"], ">", 5)),
    ("id > 5.5", lambda r: cmp(r["id"], ">", Decimal("5.5"))),
    ("id <= 5.5", lambda r: cmp(r["id"], "<=", Decimal("5.5"))),
    ("id = 5.0", lambda r: cmp(r["id"], "=", 5)),
    ("id = 5.5", lambda r: cmp(r["id"], "=", Decimal("5.5"))),
    ("id <> 5.5", lambda r: cmp(r["id"], "<>", Decimal("5.5"))),
    ("id > -1.5", lambda r: cmp(r["id"], ">", Decimal("-1.5"))),
    ("tiny < 300", lambda r: cmp(r["tiny"], "<", 300)),
    ("tiny > 300", lambda r: cmp(r["tiny"], ">", 300)),
    ("tiny >= -300", lambda r: cmp(r["tiny"], ">=", -300)),
    ("tiny <> 300", lambda r: cmp(r["tiny"], "<>", 300)),
    ("big > 4000000000", lambda r: cmp(r["big"], ">", 4_000_000_000)),
    ("big < 1e30", lambda r: cmp(r["big"], "<", 10 ** 30)),
    ("id = 5 AND name = 'a%c'", lambda r: and3(cmp(r["id"], "=", 5), cmp(r["name"], "=", "a%c"))),
    ("id = 5 OR name = 'apple'", lambda r: or3(cmp(r["id"], "=", 5), cmp(r["name"], "=", "apple"))),
    ("NOT id > 5", lambda r: not3(cmp(r["id"], ">", 5))),
    ("NOT (id > 5 OR name IS NULL)", lambda r: not3(or3(cmp(r["id"], ">", 5), r["name"] is None))),
    ("id > 5 OR NULL", lambda r: or3(cmp(r["id"], ">", 5), None)),
    ("NOT (id > 5 AND NULL)", lambda r: not3(and3(cmp(r["id"], ">", 5), None))),
    ("id IN (1, 2, 7)", lambda r: in3(r["id"], [1, 2, 7])),
    ("id IN (1, NULL)", lambda r: in3(r["id"], [1, None])),
    ("id NOT IN (1, 2)", lambda r: not3(in3(r["id"], [1, 2]))),
    ("id NOT IN (1, NULL)", lambda r: not3(in3(r["id"], [1, None]))),
    ("NOT id IN (5, 5.5)", lambda r: not3(in3(r["id"], [5, Decimal("5.5")]))),
    ("id IN (5.5)", lambda r: in3(r["id"], [Decimal("5.5")])),
    ("id IN (Mixed, 2)", lambda r: in3(r["id"], [r["Mixed"], 2])),
    ("x IN (0, 1.5)", lambda r: in3(r["x"], [0.0, 1.5])),
    ("x NOT IN (0, 1.5)", lambda r: not3(in3(r["x"], [0.0, 1.5]))),
    ("name IS NULL", lambda r: r["name"] is None),
    ("name IS NOT NULL", lambda r: r["name"] is not None),
    ("NOT name IS NULL", lambda r: r["name"] is not None),
    ("id BETWEEN 2 AND 6", lambda r: and3(cmp(r["id"], ">=", 2), cmp(r["id"], "<=", 6))),
    ("id NOT BETWEEN 2 AND 6", lambda r: not3(and3(cmp(r["id"], ">=", 2), cmp(r["id"], "<=", 6)))),
    ("id BETWEEN SYMMETRIC 6 AND 2", lambda r: and3(cmp(r["id"], ">=", 2), cmp(r["id"], "<=", 6))),
    ("dt BETWEEN '2024-01-01' AND DATE '2024-01-02'",
     lambda r: and3(cmp(r["dt"], ">=", D("2024-01-01")), cmp(r["dt"], "<=", D("2024-01-02")))),
    ("name LIKE 'ap%'", lambda r: like3(r["name"], "ap.*")),
    ("name LIKE 'a_c'", lambda r: like3(r["name"], "a.c")),
    ("name LIKE 'a\\_c'", lambda r: like3(r["name"], "a_c")),
    ("name LIKE 'a!%c' ESCAPE '!'", lambda r: like3(r["name"], "a%c")),
    ("name NOT LIKE 'a!%c' ESCAPE '!'", lambda r: not3(like3(r["name"], "a%c"))),
    ("name LIKE '%p%'", lambda r: like3(r["name"], ".*p.*")),
    ("name LIKE ''", lambda r: like3(r["name"], "")),
    ("name LIKE 'apple'", lambda r: like3(r["name"], "apple")),
    ("name NOT LIKE 'ap%'", lambda r: not3(like3(r["name"], "ap.*"))),
    ("NOT name LIKE '%'", lambda r: not3(like3(r["name"], ".*"))),
    ("`odd name` = 'apple'", lambda r: cmp(r["odd name"], "=", "apple")),
    ('"odd name" = \'apple\'', lambda r: cmp(r["odd name"], "=", "apple")),
    ("mixed = 2", lambda r: cmp(r["Mixed"], "=", 2)),
    ("ID = 2", lambda r: cmp(r["id"], "=", 2)),
    ("dt = '2024-01-01'", lambda r: cmp(r["dt"], "=", D("2024-01-01"))),
    ("dt = DATE '2024-01-01'", lambda r: cmp(r["dt"], "=", D("2024-01-01"))),
    ("dt >= CAST('2024-01-02' AS DATE)", lambda r: cmp(r["dt"], ">=", D("2024-01-02"))),
    ("dt < TIMESTAMP '2024-01-02 00:00:01'", lambda r: cmp(midnight(r["dt"]), "<", TS("2024-01-02 00:00:01"))),
    ("dt > TIMESTAMP '2024-01-02 00:00:00'", lambda r: cmp(midnight(r["dt"]), ">", TS("2024-01-02"))),
    ("dt >= TIMESTAMP '2024-01-01 10:00:00'", lambda r: cmp(midnight(r["dt"]), ">=", TS("2024-01-01 10:00"))),
    ("dt = TIMESTAMP '2024-01-01 10:00:00'", lambda r: cmp(midnight(r["dt"]), "=", TS("2024-01-01 10:00"))),
    ("dt <> TIMESTAMP '2024-01-01 10:00:00'", lambda r: cmp(midnight(r["dt"]), "<>", TS("2024-01-01 10:00"))),
    ("ts > TIMESTAMP '2024-01-01 10:00:00.001'", lambda r: cmp(r["ts"], ">", TS("2024-01-01 10:00:00.001"))),
    ("ts > '2024-01-01 10:00:00.0015'", lambda r: cmp(r["ts"], ">", TS("2024-01-01 10:00:00.0015"))),
    ("ts >= '2024-01-01 10:00:00.0015'", lambda r: cmp(r["ts"], ">=", TS("2024-01-01 10:00:00.0015"))),
    ("ts < '2024-01-01 10:00:00.0015'", lambda r: cmp(r["ts"], "<", TS("2024-01-01 10:00:00.0015"))),
    ("ts = '2024-01-01 10:00:00.0015'", lambda r: cmp(r["ts"], "=", TS("2024-01-01 10:00:00.0015"))),
    ("ts >= '2024-01-01'", lambda r: cmp(r["ts"], ">=", TS("2024-01-01"))),
    ("ts < DATE '2024-01-01'", lambda r: cmp(r["ts"], "<", TS("2024-01-01"))),
    ("ltz > '2024-01-01 10:00:00.001'", lambda r: cmp(r["ltz"], ">", TS("2024-01-01 10:00:00.001+00:00"))),
    ("ltz > '2024-01-01 12:00:00.001+02:00'", lambda r: cmp(r["ltz"], ">", TS("2024-01-01 10:00:00.001+00:00"))),
    ("amount > 1.234", lambda r: cmp(r["amount"], ">", Decimal("1.234"))),
    ("amount <= 1.234", lambda r: cmp(r["amount"], "<=", Decimal("1.234"))),
    ("amount = 1.24", lambda r: cmp(r["amount"], "=", Decimal("1.24"))),
    ("amount = '1.240'", lambda r: cmp(r["amount"], "=", Decimal("1.24"))),
    ("amount < 100000000000", lambda r: cmp(r["amount"], "<", 10 ** 11)),
    ("amount > -0.5", lambda r: cmp(r["amount"], ">", Decimal("-0.5"))),
    ("amount > id", lambda r: cmp(r["amount"], ">", r["id"])),
    ("x > 1", lambda r: cmp(r["x"], ">", 1.0)),
    ("x = 0", lambda r: cmp(r["x"], "=", 0.0)),
    ("x <> 3", lambda r: cmp(r["x"], "<>", 3.0)),
    ("NOT x > 1", lambda r: not3(cmp(r["x"], ">", 1.0))),
    ("x NOT BETWEEN 0 AND 2", lambda r: not3(and3(cmp(r["x"], ">=", 0.0), cmp(r["x"], "<=", 2.0)))),
    ("x = 'NaN'", lambda r: cmp(r["x"], "=", math.nan)),
    ("x <> 'NaN'", lambda r: cmp(r["x"], "<>", math.nan)),
    ("x IN ('NaN', 3)", lambda r: in3(r["x"], [math.nan, 3.0])),
    ("x < 1.5e0", lambda r: cmp(r["x"], "<", 1.5)),
    ("f32 = 0.1", lambda r: cmp(r["f32"], "=", f32(0.1))),
    ("f32 > 0.1", lambda r: cmp(r["f32"], ">", f32(0.1))),
    ("x < id", lambda r: cmp(r["x"], "<", r["id"])),
    ("id = Mixed", lambda r: cmp(r["id"], "=", r["Mixed"])),
    ("id BETWEEN Mixed AND 5", lambda r: and3(cmp(r["id"], ">=", r["Mixed"]), cmp(r["id"], "<=", 5))),
    ("flag", lambda r: r["flag"]),
    ("NOT flag", lambda r: not3(r["flag"])),
    ("flag = 'true'", lambda r: cmp(r["flag"], "=", True)),
    ("flag = FALSE OR flag IS NULL", lambda r: or3(cmp(r["flag"], "=", False), r["flag"] is None)),
    ("t = '01:00:00'", lambda r: cmp(r["t"], "=", time(1))),
    ("t > TIME '01:00:00.0005'", lambda r: cmp(r["t"], ">", time(1, 0, 0, 500))),
    ("raw = 'apple'", lambda r: cmp(r["raw"], "=", b"apple")),
    ("name > 'b'", lambda r: cmp(r["name"], ">", "b")),
    ("name = 'it''s'", lambda r: cmp(r["name"], "=", "it's")),
    ("TRUE", lambda r: True),
    ("FALSE", lambda r: False),
    ("NULL", lambda r: None),
    ("NOT NULL", lambda r: None),
    ("1 = 1", lambda r: True),
    ("1 < 0.5", lambda r: False),
    ("'a' < 'b' AND DATE '2024-01-01' < DATE '2024-01-02'", lambda r: True),
    ("id = NULL", lambda r: None),
    ("NOT (id <> NULL)", lambda r: None),
    ("NULL IS NULL", lambda r: True),
    ("5 IS NULL", lambda r: False),
    ("'abc' LIKE 'a%'", lambda r: True),
    ("NULL LIKE 'a%' OR id = 1", lambda r: or3(None, cmp(r["id"], "=", 1))),
    ("5 IN (id, 7)", lambda r: in3(5, [r["id"], 7])),
    ("2 IN (1, 2)", lambda r: True),
    ("((id > 1)) AND (((name IS NOT NULL)))", lambda r: and3(cmp(r["id"], ">", 1), r["name"] is not None)),
    ("id > 1 AND id < 7 AND name LIKE 'a%' OR flag",
     lambda r: or3(and3(cmp(r["id"], ">", 1), cmp(r["id"], "<", 7), like3(r["name"], "a.*")), r["flag"])),
    ("id = -(-1)", lambda r: cmp(r["id"], "=", 1)),
]


@pytest.mark.parametrize(("where", "model"), CASES, ids=[c[0] for c in CASES])
def test_construct_filters_like_sql(where: str, model: Model) -> None:
    pred = parse_where(where, WIDE)
    assert selected(pred, WIDE, WIDE_ROWS) == model_selected(model, WIDE_ROWS)


@pytest.mark.parametrize(("where", "model"), CASES, ids=[c[0] for c in CASES])
def test_construct_prunes_soundly_per_row(where: str, model: Model) -> None:
    pred = parse_where(where, WIDE)
    for row in WIDE_ROWS:
        stats = {name: ColumnRange(v, v, 0, 1) if v is not None else ColumnRange(None, None, 1, 1)
                 for name, v in row.items()}
        if not pred.may_match(stats):
            assert model(row) is not True, row


def test_columns_and_literal_types() -> None:
    pred = parse_where("dt = '2024-01-01' AND (id > '5' OR amount < 2) AND `odd name` LIKE 'a%' AND x = id", WIDE)
    assert pred.columns == frozenset({"dt", "id", "amount", "odd name", "x"})
    assert parse_where("dt = '2024-01-01'", WIDE) == Comparison("dt", WIDE[2].type, "=", date(2024, 1, 1))
    assert parse_where("id > '5'", WIDE) == Comparison("id", WIDE[0].type, ">", 5)
    amount = parse_where("amount < 2", WIDE)
    assert isinstance(amount, Comparison) and amount.value == Decimal("2") and isinstance(amount.value, Decimal)
    ts = parse_where("ts >= TIMESTAMP '2024-01-01 10:00:00'", WIDE)
    assert isinstance(ts, Comparison) and ts.value == datetime(2024, 1, 1, 10)
    ltz = parse_where("ltz >= '2024-01-01 10:00:00'", WIDE)
    assert isinstance(ltz, Comparison) and ltz.value == datetime(2024, 1, 1, 10, tzinfo=UTC)
    assert parse_where("x > 1", WIDE) == Comparison("x", WIDE[3].type, ">", 1.0)
    assert parse_where("id IN (3, 1, 3)", WIDE) == InList("id", WIDE[0].type, (3, 1))
    assert parse_where("`odd name` = 'x'", WIDE).columns == frozenset({"odd name"})


def test_predicates_are_frozen_and_hashable() -> None:
    pred = parse_where("id IN (1, 2) AND NOT name LIKE 'a%'", WIDE)
    assert hash(pred) == hash(parse_where("id IN (1, 2) AND NOT name LIKE 'a%'", WIDE))
    with pytest.raises(AttributeError):
        pred.children = ()  # type: ignore[attr-defined, misc]


# ---- pruning -------------------------------------------------------------------------------------
def rng(lo: Any, hi: Any, nulls: int | None = 0, rows: int | None = 10) -> ColumnRange:
    return ColumnRange(lo, hi, nulls, rows)


PARTITION_Y = {"dt": rng(D("2024-01-02"), D("2024-01-02"), 0, 1)}
NULL_PARTITION = {"dt": rng(None, None, 1, 1)}

PRUNING: list[tuple[str, dict[str, ColumnRange], bool]] = [
    ("id > 5", {"id": rng(1, 3)}, False),
    ("id > 5", {"id": rng(1, 6)}, True),
    ("id >= 3", {"id": rng(1, 3)}, True),
    ("id < 1", {"id": rng(1, 3)}, False),
    ("id = 4", {"id": rng(1, 3)}, False),
    ("id = 2", {"id": rng(1, 3)}, True),
    ("id <> 3", {"id": rng(3, 3)}, False),
    ("id <> 3", {"id": rng(3, 3, None)}, False),
    ("id <> 3", {"id": rng(2, 3)}, True),
    ("id > 5", {}, True),
    ("id > 5", {"id": rng(None, None)}, True),
    ("id > 5", {"id": rng(None, 3)}, False),
    ("id > 5", {"id": rng(1, None)}, True),
    ("id > 5", {"name": rng("a", "b")}, True),
    ("dt = 'x'".replace("'x'", "'2024-01-01'"), PARTITION_Y, False),
    ("dt = '2024-01-02'", PARTITION_Y, True),
    ("dt <> '2024-01-02'", PARTITION_Y, False),
    ("dt IS NULL", PARTITION_Y, False),
    ("dt IS NULL", NULL_PARTITION, True),
    ("dt IS NOT NULL", NULL_PARTITION, False),
    ("dt = '2024-01-02'", NULL_PARTITION, False),
    ("dt <> '2024-01-02'", NULL_PARTITION, False),
    ("NOT dt = '2024-01-02'", NULL_PARTITION, False),
    ("dt > '2024-01-01' OR dt IS NULL", NULL_PARTITION, True),
    ("id IS NULL", {"id": rng(1, 3, 0)}, False),
    ("id IS NULL", {"id": rng(1, 3, None)}, True),
    ("id IS NULL", {"id": rng(1, 3, 2)}, True),
    ("id IS NOT NULL", {"id": rng(None, None, 10, 10)}, False),
    ("id IS NOT NULL", {"id": rng(None, None, 9, 10)}, True),
    ("id IS NOT NULL", {"id": rng(None, None, 10, None)}, True),
    ("id > 0", {"id": rng(None, None, 10, 10)}, False),
    ("id IN (5, 7)", {"id": rng(1, 3)}, False),
    ("id IN (0, 2)", {"id": rng(1, 3)}, True),
    ("id NOT IN (1, 2)", {"id": rng(1, 1)}, False),
    ("id NOT IN (1, 2)", {"id": rng(1, 2)}, True),
    ("id IN (1, NULL)", {"id": rng(5, 6)}, False),
    ("id NOT IN (1, NULL)", {"id": rng(5, 6)}, False),
    ("id BETWEEN 4 AND 9", {"id": rng(1, 3)}, False),
    ("id BETWEEN 0 AND 1", {"id": rng(1, 3)}, True),
    ("id NOT BETWEEN 0 AND 9", {"id": rng(1, 3)}, False),
    ("id NOT BETWEEN 2 AND 9", {"id": rng(1, 3)}, True),
    ("name LIKE 'abc%'", {"name": rng("abd", "abz")}, False),
    ("name LIKE 'abc%'", {"name": rng("aaa", "abb")}, False),
    ("name LIKE 'abc%'", {"name": rng("aaa", "abc")}, True),
    ("name LIKE 'abc%'", {"name": rng("abcz", "b")}, True),
    ("name LIKE 'abc%'", {"name": rng("abb", "abd")}, True),
    ("name LIKE 'abc%x'", {"name": rng("abd", "abz")}, False),
    ("name LIKE 'abc'", {"name": rng("abd", "abz")}, False),
    ("name LIKE '%c'", {"name": rng("abd", "abz")}, True),
    ("name LIKE 'a_c'", {"name": rng("abc", "abc")}, True),
    ("name LIKE 'a_c'", {"name": rng("abd", "abd")}, False),
    ("name NOT LIKE 'abc%'", {"name": rng("abc", "abcz")}, False),
    ("name NOT LIKE 'abc%'", {"name": rng("abc", "abd")}, True),
    ("name NOT LIKE '%'", {"name": rng("a", "z")}, False),
    ("name LIKE '\U0010ffff%'", {"name": rng("a", "z")}, False),
    ("name LIKE 'a\U0010ffff%'", {"name": rng("b", "c")}, False),  # the prefix's strings all sort below 'b'
    ("name LIKE 'a\U0010ffff%'", {"name": rng("a\U0010ffffz", "c")}, True),
    ("NOT (id > 5)", {"id": rng(6, 9)}, False),
    ("NOT (id > 5)", {"id": rng(6, 9, 3)}, False),
    ("NOT (id > 5)", {"id": rng(5, 9)}, True),
    ("NOT (id > 5 OR id IS NULL)", {"id": rng(6, 9, 3)}, False),
    ("NOT (NOT (id > 5))", {"id": rng(1, 3)}, False),
    ("id > 5 AND name = 'a'", {"id": rng(6, 9), "name": rng("b", "c")}, False),
    ("id > 5 OR name = 'a'", {"id": rng(1, 3), "name": rng("b", "c")}, False),
    ("id > 5 OR name = 'a'", {"id": rng(1, 3), "name": rng("a", "c")}, True),
    ("id > 5 OR NULL", {"id": rng(1, 3)}, False),
    ("NOT (id > 5 AND NULL)", {"id": rng(6, 9)}, False),
    ("NOT (id > 5 AND NULL)", {"id": rng(1, 9)}, True),
    ("id = Mixed", {"id": rng(1, 1), "Mixed": rng(2, 2)}, True),
    ("id = Mixed", {"id": rng(None, None, 10, 10), "Mixed": rng(2, 2)}, False),
    ("FALSE", {}, False),
    ("NULL", {}, False),
    ("TRUE", {}, True),
    ("id > 5.5", {"id": rng(1, 5)}, False),
    ("id = 5.5", {"id": rng(1, 9)}, False),
    ("id <> 5.5", {"id": rng(1, 9)}, True),
    ("tiny > 300", {"tiny": rng(-9, 9)}, False),
    ("amount > 1.234", {"amount": rng(Decimal("1.00"), Decimal("1.23"))}, False),
    ("amount > 1.234", {"amount": rng(Decimal("1.00"), Decimal("1.24"))}, True),
    ("ts > '2024-01-01 10:00:00.0015'", {"ts": rng(TS("2024-01-01"), TS("2024-01-01 10:00:00.001"))}, False),
    ("ltz < '2024-01-01'", {"ltz": rng(TS("2024-01-01 00:00+00:00"), TS("2024-01-02 00:00+00:00"))}, False),
    ("x > 5", {"x": rng(1.0, 3.0)}, True),  # a NaN min/max leave out is above 5 in Java's order
    ("x > 5", {"x": rng(1.0, 3.0, 0, 1)}, False),
    ("x < 1", {"x": rng(1.0, 3.0)}, False),
    ("x = 2", {"x": rng(2.0, 2.0)}, True),
    ("x <> 2", {"x": rng(2.0, 2.0)}, True),  # a NaN that min/max leave out would match
    ("x <> 2", {"x": rng(2.0, 2.0, 0, 1)}, False),
    ("NOT x > 1", {"x": rng(2.0, 3.0)}, False),  # NaN > 1 in Java's order, so NOT fails for it too
    ("NOT x > 1", {"x": rng(0.0, 3.0)}, True),
    ("NOT x > 1", {"x": rng(2.0, 3.0, 0, 1)}, False),
    ("x > 1", {"x": rng(math.nan, math.nan)}, True),
    ("x < 1", {"x": rng(2.0, math.nan)}, False),
    ("x = 'NaN'", {"x": rng(1.0, 2.0)}, True),  # a NaN min/max leave out
    ("x = 'NaN'", {"x": rng(1.0, 2.0, 0, 1)}, False),
    ("x <= 'NaN'", {"x": rng(1.0, 2.0, 0, 1)}, True),
    ("x >= 'NaN'", {"x": rng(1.0, 2.0, 0, 1)}, False),
    # A zero bound stands for both zeros: IEEE-style writers (ORC) keep either as the bound.
    ("x = 0.0", {"x": rng(-0.0, -0.0, 0, 2)}, True),
    ("x < 0.0", {"x": rng(0.0, 5.0, 0, 2)}, True),
    ("x > -0.0", {"x": rng(-5.0, -0.0, 0, 1)}, True),
    ("x > -0.0", {"x": rng(-5.0, -1.0, 0, 1)}, False),
    ("x < -0.0", {"x": rng(0.0, 5.0, 0, 2)}, False),
    ("x IN (-0.0, 'NaN')", {"x": rng(1.0, 5.0, 0, 2)}, True),  # the NaN
    ("x IN (-0.0, 'NaN')", {"x": rng(1.0, 5.0, 0, 1)}, False),
    ("x <> 'NaN'", {"x": rng(1.0, 2.0)}, True),
    ("id > 0", {"id": rng(1, 3, 0, 0)}, False),
    ("id IS NULL", {"id": rng(None, None, None, 0)}, False),
]


@pytest.mark.parametrize(("where", "stats", "expected"), PRUNING, ids=[f"{w} | {s}" for w, s, _ in PRUNING])
def test_may_match(where: str, stats: dict[str, ColumnRange], expected: bool) -> None:
    assert parse_where(where, WIDE).may_match(stats) is expected


# ---- errors ----------------------------------------------------------------------------------------
ERRORS = [
    ("foo = 1", r"^unknown column 'foo' in --where; columns are: id, name, dt, x, amount"),
    ('"ID" = 1', r"unknown column 'ID'"),
    ("id = ", r"^cannot parse --where 'id =': Required keyword: 'expression' missing for EQ at '=' "),
    ("id = 'abc", r"^cannot parse --where"),
    ("id >> 1 (", r"^cannot parse --where"),
    ("", r"--where is empty"),
    ("   ", r"--where is empty"),
    ("id = 1; id = 2", r"one condition, not 2 statements"),
    ("id = 1 name", r"^cannot parse --where 'id = 1 name': .*at 'name' \(line 1, column 11\)$"),
    ("if id = 1", r"^cannot parse --where"),
    ("upper(name) = 'A'", r"^function calls are not supported in --where: UPPER\(name\)"),
    ("id + 1 > 2", r"^arithmetic is not supported in --where"),
    ("-id > 2", r"^arithmetic is not supported in --where"),
    ("id IN (SELECT 1)", r"^subqueries are not supported in --where"),
    ("id = (SELECT 1)", r"^subqueries are not supported in --where"),
    ("EXISTS (SELECT 1)", r"^subqueries are not supported"),
    ("SELECT 1", r"^cannot parse --where"),
    ("id = ?", r"^parameters are not supported"),
    ("id = 'abc'", r"^cannot compare column 'id' \(INT\) with 'abc'"),
    ("id = TRUE", r"^cannot compare column 'id' \(INT\) with TRUE"),
    ("id = DATE '2024-01-01'", r"^cannot compare column 'id' \(INT\) with DATE '2024-01-01'$"),
    ("id = 'NaN'", r"^cannot compare column 'id'"),
    ("dt = 'yesterday'", r"^cannot compare column 'dt' \(DATE\) with 'yesterday'"),
    ("dt = 5", r"^cannot compare column 'dt' \(DATE\) with 5"),
    ("dt = '2024-01-01T00:00:00+01:00'", r"a DATE has no time zone"),
    ("ts = '2024-01-01 10:00:00+01:00'", r"without time zone"),
    ("dt = DATE '2024-13-01'", r"^invalid DATE literal '2024-13-01' in --where"),
    ("ts = TIMESTAMP 'soon'", r"^invalid TIMESTAMP literal"),
    ("name = 5", r"^cannot compare column 'name' \(STRING\) with 5 \(quote string literals"),
    ("x = 'abc'", r"^cannot compare column 'x' \(DOUBLE\)"),
    ("flag = 'maybe'", r"^cannot compare column 'flag' \(BOOLEAN\)"),
    ("t = 'noon'", r"^cannot compare column 't' \(TIME\(0\)\) with 'noon'"),
    ("id LIKE '1%'", r"^LIKE needs a string column; 'id' is INT"),
    ("name LIKE name", r"^LIKE needs a string literal pattern"),
    ("name LIKE 5", r"^LIKE needs a string literal pattern in --where, not 5"),
    ("name LIKE 'a\\b'", r"the escape '\\\\' must be followed by %, _ or itself"),
    ("name LIKE 'ab!' ESCAPE '!'", r"the escape '!' must be followed"),
    ("name LIKE 'a' ESCAPE '!!'", r"ESCAPE must be one character"),
    ("name ILIKE 'a%'", r"^ILIKE is not supported in --where"),
    ("id", r"^column 'id' is INT, not a condition"),
    ("5", r"is a value, not a condition"),
    ("'abc'", r"is a value, not a condition"),
    ("flag IS TRUE", r"^only IS NULL and IS NOT NULL are supported"),
    ("t.id = 1", r"^qualified column names are not supported"),
    ("id IN ()", r"^IN needs a list of values"),
    ("CAST(id AS BIGINT) = 1", r"^CAST is supported only for DATE, TIME and TIMESTAMP literals"),
    ("id = CAST('1' AS INT)", r"^only DATE, TIME and TIMESTAMP literals may be cast"),
    ("id = name", r"^cannot compare column 'id' \(INT\) with column 'name' \(STRING\)"),
    ("ts = ltz", r"^cannot compare column 'ts'"),
    ("dt = ts", r"^cannot compare column 'dt' \(DATE\) with column 'ts'"),
    ("1 = 'a'", r"^cannot compare 1 with 'a' in --where"),
    ("id <=> 1", r"not supported in --where"),
]


@pytest.mark.parametrize(("where", "message"), ERRORS, ids=[e[0] or "<empty>" for e in ERRORS])
def test_errors_are_one_line_usage_errors(where: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_where(where, WIDE)
    text = str(info.value)
    assert "\n" not in text
    assert re.search(message, text), text


def test_nanosecond_timestamps_prune_with_a_rounded_down_max() -> None:
    fields = fields_of([("ts", "TIMESTAMP(9)")])
    nanos = pa.array([1_704_103_200_000_001_500], pa.int64()).cast(pa.timestamp("ns"))  # 2024-01-01 10:00:00.0000015
    table = pa.table({"ts": nanos, "_row": pa.array([0], pa.int64())})
    pred = parse_where("ts > '2024-01-01 10:00:00.000001'", fields)
    assert table.filter(pred.to_arrow())["_row"].to_pylist() == [0]
    # Stats decoded to datetime lose the last 500 ns; the row must still not be pruned.
    rounded = TS("2024-01-01 10:00:00.000001")
    assert pred.may_match({"ts": rng(rounded, rounded, 0, 1)})
    assert parse_where("ts <> '2024-01-01 10:00:00.000001'", fields).may_match({"ts": rng(rounded, rounded, 0, 1)})
    # A max of 10:00:00 stands for at most 10:00:00.000000999, still below the literal.
    assert not pred.may_match({"ts": rng(TS("2024-01-01 09:00:00"), TS("2024-01-01 10:00:00"), 0, 5)})


def test_composite_columns_can_be_null_tested_but_not_compared() -> None:
    fields = fields_of([("tags", "ARRAY<STRING>"), ("id", "INT")])
    rows = [{"tags": ["a"], "id": 1}, {"tags": None, "id": 2}]
    assert selected(parse_where("tags IS NULL", fields), fields, rows) == [1]
    with pytest.raises(UsageError, match="compares only atomic columns"):
        parse_where("tags = 'a'", fields)
    with pytest.raises(UsageError, match="compares only atomic columns"):
        parse_where("tags IN ('a')", fields)


def test_wide_decimal_columns_that_arrow_cannot_compare_are_rejected_at_parse_time() -> None:
    fields = fields_of([("a", "DECIMAL(38, 0)"), ("b", "DECIMAL(38, 10)")])
    with pytest.raises(UsageError, match="cannot compare column 'a'"):
        parse_where("a < b", fields)


def test_sqlglot_fallbacks_fail_without_logging(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(UsageError, match="^cannot parse --where"):
            parse_where("if `odd name` LIKE 0 NOT x", WIDE)
    assert caplog.records == []


def test_deep_nesting_is_a_usage_error_and_long_lists_work() -> None:
    with pytest.raises(UsageError, match="nests too deeply"):
        parse_where("(" * 300 + "id = 1" + ")" * 300, WIDE)
    with pytest.raises(UsageError, match="nests too deeply"):
        parse_where("NOT " * 3000 + "id = 1", WIDE)
    chain = parse_where(" AND ".join(f"id <> {k}" for k in range(3000)), WIDE)
    assert selected(chain, WIDE, WIDE_ROWS) == [r for r, row in enumerate(WIDE_ROWS) if (row["id"] or 0) >= 3000]
    many = parse_where("id IN (" + ", ".join(str(k) for k in range(0, 20000, 2)) + ")", WIDE)
    assert selected(many, WIDE, WIDE_ROWS) == model_selected(lambda r: in3(r["id"], list(range(0, 20000, 2))), WIDE_ROWS)
    assert not many.may_match({"id": rng(20001, 30000)})


def test_long_text_is_shortened_in_messages() -> None:
    with pytest.raises(UsageError) as info:
        parse_where("id = 1 AND\n" + "name = 'x' AND " * 20 + "(", WIDE)
    assert len(str(info.value)) < 200 and "\n" not in str(info.value)


def test_filter_pushes_into_parquet_datasets(tmp_path: Path) -> None:
    table = table_of(WIDE, WIDE_ROWS)
    pq.write_table(table, tmp_path / "part-0.parquet")
    where = ("(id NOT IN (1, NULL) OR name LIKE 'a%') AND NOT x > 1 AND ltz > '2024-01-01' "
             "AND amount > 1.234 OR id = Mixed")
    expr = parse_where(where, WIDE).to_arrow()
    expected = table.filter(expr)["_row"].to_pylist()
    assert ds.dataset(tmp_path).to_table(filter=expr)["_row"].to_pylist() == expected
    assert pq.read_table(tmp_path, filters=expr)["_row"].to_pylist() == expected


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(alphabet=st.sampled_from(list("idnamex ()'\"`=<>!%_,.;-+*/ANDORNTILKEBW0123456789\\")), max_size=30))
def test_arbitrary_text_raises_only_usage_error(text: str) -> None:
    try:
        parse_where(text, WIDE)
    except UsageError as e:
        assert "\n" not in str(e)


# ---- generated predicates against the model ---------------------------------------------------
GEN = fields_of([("i", "INT"), ("j", "BIGINT"), ("s", "STRING"), ("d", "DATE"), ("f", "DOUBLE"),
                  ("p", "DECIMAL(4, 1)"), ("ts", "TIMESTAMP(3)")])
DAY0 = date(2024, 1, 1)
NOON = datetime(2024, 1, 1, 12)


@dataclass(frozen=True)
class Cond:
    """A generated condition: its SQL, the model's evaluation, and whether single-row pruning is exact."""

    sql: str
    eval: Model
    exact: bool = True


@dataclass(frozen=True)
class Lit:
    """A generated literal: its SQL text and the value the model compares."""

    sql: str
    value: Any  # the value as SQL means it, before any coercion to the column's type


def as_column(col: str, v: Any) -> Any:
    """The model's coercion of a row value or literal to the comparison domain of ``col``."""
    if v is None:
        return None
    if col in ("i", "j", "p"):
        return Decimal(str(v))
    if col == "f":
        return float(v)
    if col == "d":
        if isinstance(v, str):
            v = date.fromisoformat(v)
        return v if isinstance(v, datetime) else datetime.combine(v, time())
    return v


def lits_for(col: str) -> st.SearchStrategy[Lit]:
    if col in ("i", "j"):
        return st.one_of(
            st.integers(-4, 4).map(lambda n: Lit(str(n), n)),
            st.integers(-4, 3).map(lambda n: Lit(f"{n}.5", Decimal(f"{n}.5"))),
            st.integers(-4, 4).map(lambda n: Lit(f"'{n}'", n)),
            st.sampled_from([Lit("3000000000", 3_000_000_000), Lit("-3000000000", -3_000_000_000),
                             Lit("1e20", Decimal("1e20")), Lit("2.0", 2)]))
    if col == "p":  # DECIMAL(4, 1): quarter steps fall between its values; 1000 is out of range
        return st.one_of(
            st.integers(-12, 12).map(lambda k: Decimal(k) / 4).map(lambda v: Lit(str(v), v)),
            st.sampled_from([Lit("1000", 1000), Lit("-999.95", Decimal("-999.95")), Lit("'0.5'", Decimal("0.5"))]))
    if col == "ts":  # TIMESTAMP(3): half milliseconds fall between its values
        stamp = st.integers(0, 9).map(lambda k: NOON + timedelta(microseconds=500 * k))
        return st.one_of(stamp.map(lambda v: Lit(f"TIMESTAMP '{v.isoformat(' ')}'", v)),
                         stamp.map(lambda v: Lit(f"'{v.isoformat(' ')}'", v)),
                         st.just(Lit("DATE '2024-01-01'", datetime(2024, 1, 1))))
    if col == "s":
        return st.text(alphabet="ab%_", max_size=3).map(lambda t: Lit(f"'{t}'", t))
    if col == "d":
        day = st.integers(0, 4).map(lambda k: DAY0 + timedelta(days=k))
        return st.one_of(
            day.map(lambda v: Lit(f"DATE '{v}'", v)),
            day.map(lambda v: Lit(f"'{v}'", v)),
            st.tuples(day, st.sampled_from([0, 12])).map(
                lambda p: Lit(f"TIMESTAMP '{p[0]} {p[1]:02d}:00:00'", datetime.combine(p[0], time(p[1])))))
    return st.sampled_from([-1.5, 0.0, 0.5, 2.0]).flatmap(
        lambda v: st.sampled_from([Lit(repr(v), v), Lit(f"'{v}'", v)]))


def lit_or_null(col: str) -> st.SearchStrategy[Lit]:
    return st.one_of(lits_for(col), st.just(Lit("NULL", None)))


COLS = [f.name for f in GEN]
OPS_SQL = ["=", "<>", "!=", "<", "<=", ">", ">="]


@st.composite
def comparisons(draw: st.DrawFn) -> Cond:
    col = draw(st.sampled_from(COLS))
    op = draw(st.sampled_from(OPS_SQL))
    lit = draw(lit_or_null(col))

    def model(r: Row) -> bool | None:
        return cmp(as_column(col, r[col]), op, as_column(col, lit.value))

    if draw(st.booleans()):
        flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        return Cond(f"{lit.sql} {flipped} {col}", model)
    return Cond(f"{col} {op} {lit.sql}", model)


@st.composite
def column_comparisons(draw: st.DrawFn) -> Cond:
    a, b = draw(st.sampled_from([("i", "j"), ("i", "f"), ("j", "f"), ("j", "i"), ("d", "d"), ("s", "s"), ("i", "i"),
                                                 ("p", "i"), ("p", "f"), ("ts", "ts")]))
    op = draw(st.sampled_from(OPS_SQL))

    def model(r: Row) -> bool | None:
        x, y = r[a], r[b]
        if isinstance(x, float) or isinstance(y, float):  # DECIMAL meets DOUBLE as a double
            x, y = (None if v is None else float(v) for v in (x, y))
        return cmp(x, op, y)

    return Cond(f"{a} {op} {b}", model, exact=False)


@st.composite
def null_tests(draw: st.DrawFn) -> Cond:
    col = draw(st.sampled_from(COLS))
    if draw(st.booleans()):
        return Cond(f"{col} IS NOT NULL", lambda r: r[col] is not None)
    return Cond(f"{col} IS NULL", lambda r: r[col] is None)


@st.composite
def in_lists(draw: st.DrawFn) -> Cond:
    col = draw(st.sampled_from(COLS))
    items = draw(st.lists(lit_or_null(col), min_size=1, max_size=4))
    negate = draw(st.booleans())
    sql = f"{col} {'NOT ' if negate else ''}IN ({', '.join(i.sql for i in items)})"

    def model(r: Row) -> bool | None:
        hit = in3(as_column(col, r[col]), [as_column(col, i.value) for i in items])
        return not3(hit) if negate else hit

    return Cond(sql, model)


@st.composite
def betweens(draw: st.DrawFn) -> Cond:
    col = draw(st.sampled_from(COLS))
    lo, hi = draw(lit_or_null(col)), draw(lit_or_null(col))
    negate = draw(st.booleans())

    def model(r: Row) -> bool | None:
        v = as_column(col, r[col])
        hit = and3(cmp(v, ">=", as_column(col, lo.value)), cmp(v, "<=", as_column(col, hi.value)))
        return not3(hit) if negate else hit

    return Cond(f"{col} {'NOT ' if negate else ''}BETWEEN {lo.sql} AND {hi.sql}", model)


LIKE_TOKENS = {"a": "a", "b": "b", "%": ".*", "_": ".", "\\%": "%", "\\_": "_"}


@st.composite
def likes(draw: st.DrawFn) -> Cond:
    tokens = draw(st.lists(st.sampled_from(sorted(LIKE_TOKENS)), max_size=4))
    regex = "".join(LIKE_TOKENS[t] if t in ("%", "_") else re.escape(LIKE_TOKENS[t]) for t in tokens)
    bang = draw(st.booleans())
    if bang:  # the same pattern with ESCAPE '!'
        pattern, tail = "".join(t.replace("\\", "!") for t in tokens), " ESCAPE '!'"
    else:
        pattern, tail = "".join(tokens), ""
    negate = draw(st.booleans())

    def model(r: Row) -> bool | None:
        hit = like3(r["s"], regex)
        return not3(hit) if negate else hit

    return Cond(f"s {'NOT ' if negate else ''}LIKE '{pattern}'{tail}", model)


def constants() -> st.SearchStrategy[Cond]:
    return st.sampled_from([
        Cond("TRUE", lambda r: True), Cond("FALSE", lambda r: False), Cond("NULL", lambda r: None),
        Cond("1 = 1", lambda r: True), Cond("2 < 1.5", lambda r: False), Cond("NULL = 1", lambda r: None)])


def combine(children: st.SearchStrategy[Cond]) -> st.SearchStrategy[Cond]:
    def conj(p: tuple[Cond, Cond]) -> Cond:
        a, b = p
        return Cond(f"({a.sql}) AND ({b.sql})", lambda r: and3(a.eval(r), b.eval(r)), a.exact and b.exact)

    def disj(p: tuple[Cond, Cond]) -> Cond:
        a, b = p
        return Cond(f"({a.sql}) OR ({b.sql})", lambda r: or3(a.eval(r), b.eval(r)), a.exact and b.exact)

    def neg(a: Cond) -> Cond:
        return Cond(f"NOT ({a.sql})", lambda r: not3(a.eval(r)), a.exact)

    pairs = st.tuples(children, children)
    return st.one_of(pairs.map(conj), pairs.map(disj), children.map(neg))


CONDITIONS = st.recursive(
    st.one_of(comparisons(), column_comparisons(), null_tests(), in_lists(), betweens(), likes(), constants()),
    combine, max_leaves=6)


def rows_strategy() -> st.SearchStrategy[list[Row]]:
    def nullable(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(st.none(), s)

    row = st.fixed_dictionaries({
        "i": nullable(st.integers(-3, 3)),
        "j": nullable(st.integers(-3, 3)),
        "s": nullable(st.text(alphabet="ab%_", max_size=3)),
        "d": nullable(st.integers(0, 4).map(lambda k: DAY0 + timedelta(days=k))),
        "f": nullable(st.sampled_from([-1.5, 0.0, -0.0, 0.5, 1.0, 2.0, math.nan])),
        "p": nullable(st.integers(-6, 6).map(lambda k: Decimal(k) / 2)),
        "ts": nullable(st.integers(0, 4).map(lambda k: NOON + timedelta(milliseconds=k))),
    })
    return st.lists(row, max_size=8)


def is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def stats_of(rows: list[Row], col: str) -> ColumnRange:
    """Stats as a writer keeps them: NaN is left out of min/max."""
    values = [r[col] for r in rows]
    bounded = [v for v in values if v is not None and not is_nan(v)]
    return ColumnRange(min(bounded, default=None), max(bounded, default=None),
                       sum(v is None for v in values), len(rows))


# Ways to lose part of a column's stats: 0 keeps them, 1 drops the column, 2..5 blank one field,
# 6 loosens min/max to bounds that are no longer tight (as truncated string stats are).
def blur(r: ColumnRange, how: int) -> ColumnRange | None:
    if how == 1:
        return None
    if how == 6 and r.min is not None and r.max is not None:
        if isinstance(r.min, str):
            return ColumnRange(r.min[:1], r.max + "b", r.null_count, r.row_count)
        if isinstance(r.min, date):  # dates and datetimes
            return ColumnRange(r.min - timedelta(days=1), r.max + timedelta(days=2), r.null_count, r.row_count)
        return ColumnRange(r.min - 1, r.max + 1, r.null_count, r.row_count)
    fields = {2: "min", 3: "max", 4: "null_count", 5: "row_count"}
    if how in fields:
        values = {"min": r.min, "max": r.max, "null_count": r.null_count, "row_count": r.row_count}
        values[fields[how]] = None
        return ColumnRange(**values)
    return r


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(cond=CONDITIONS, rows=rows_strategy())
def test_generated_filter_matches_model(cond: Cond, rows: list[Row]) -> None:
    pred = parse_where(cond.sql, GEN)
    assert selected(pred, GEN, rows) == model_selected(cond.eval, rows), cond.sql


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(cond=CONDITIONS, rows=rows_strategy(), blurs=st.lists(st.integers(0, 8), min_size=len(COLS), max_size=len(COLS)))
def test_generated_pruning_is_sound(cond: Cond, rows: list[Row], blurs: list[int]) -> None:
    pred = parse_where(cond.sql, GEN)
    hits = model_selected(cond.eval, rows)
    full = {c: stats_of(rows, c) for c in COLS}
    if not pred.may_match(full):
        assert hits == [], (cond.sql, full)
    partial = {c: b for c, how in zip(COLS, blurs) if (b := blur(full[c], how)) is not None}
    if not pred.may_match(partial):
        assert hits == [], (cond.sql, partial)
    for row in rows:
        one = {c: stats_of([row], c) for c in COLS}
        matches = cond.eval(row) is True
        if not pred.may_match(one):
            assert not matches, (cond.sql, row)
        elif cond.exact and not is_nan(row["f"]):
            # A one-row partition pins every value, so pruning should be exact.
            assert matches, (cond.sql, row)
