"""A condition on partition columns alone is settled by the partitions the plan keeps (issue 44):
when each kept partition's values prove it TRUE for all its rows, the scan skips the row filter.
A wrong skip would let rows through, so every case compares the scan's rows with the rows of a
full scan filtered in Python (SQL's three-valued logic written out by hand), and checks whether
the row filter ran, so a skip that stopped happening shows too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest

import core.ops.scan as scan_module
from core.engines import EngineSettings
from core.ops.create import create
from core.ops.scan import prepare, scan
from core.ops.write import write
from core.table import Table

LOCAL = EngineSettings(engine="local")
Row = dict[str, Any]

_SCHEMA = pa.schema([("p", pa.int32()), ("s", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def _rows(commit: int, nulls: bool) -> list[Row]:
    """36 rows per commit over partitions p in {0, 1, 2, NULL} x s in {'a', 'b', NULL}, three
    in each (without ``nulls``, 3 and 'c' in place of NULL: key columns hold no NULL), so a
    file's stats do not settle a condition on ``id`` or ``v``."""
    out = []
    for i in range(36):
        p = [0, 1, 2, None if nulls else 3][i % 4]
        s = ["a", "b", None if nulls else "c"][i % 3]
        out.append({"p": p, "s": s, "id": commit * 100 + i, "v": None if i % 5 == 0 else f"v{i % 4}"})
    return out


def _table(tmp_path: Path, primary_key: bool) -> tuple[Table, list[Row]]:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    if primary_key:
        create(t, "p INT, s STRING, id BIGINT NOT NULL, v STRING", partition_keys=["p", "s"],
               primary_keys=["p", "s", "id"], options={"bucket": "2"})
    else:
        create(t, "p INT, s STRING, id BIGINT, v STRING", partition_keys=["p", "s"],
               options={"bucket": "1", "bucket-key": "id"})
    rows: list[Row] = []
    for c in range(3):
        part = _rows(c, nulls=not primary_key)
        write(t, pa.Table.from_pylist(part, schema=_SCHEMA), engine_settings=LOCAL)
        rows += part
    return t, rows


def _eq(x: Any, y: Any) -> bool | None:
    return None if x is None else x == y


def _not(x: bool | None) -> bool | None:
    return None if x is None else not x


def _or(x: bool | None, y: bool | None) -> bool | None:
    if x is True or y is True:
        return True
    return None if x is None or y is None else False


def _and(x: bool | None, y: bool | None) -> bool | None:
    if x is False or y is False:
        return False
    return None if x is None or y is None else True


def _lt(x: Any, y: Any) -> bool | None:
    return None if x is None else x < y


# (condition, its SQL truth value for a row, does it read partition columns alone)
_CASES: list[tuple[str, Callable[[Row], bool | None], bool]] = [
    ("p = 1", lambda r: _eq(r["p"], 1), True),
    ("p IN (0, 2)", lambda r: None if r["p"] is None else r["p"] in (0, 2), True),
    ("p < 2", lambda r: _lt(r["p"], 2), True),
    ("p IS NULL", lambda r: r["p"] is None, True),
    ("p IS NOT NULL", lambda r: r["p"] is not None, True),
    ("s IS NULL AND p = 2", lambda r: _and(r["s"] is None, _eq(r["p"], 2)), True),
    ("p = 0 OR s = 'b'", lambda r: _or(_eq(r["p"], 0), _eq(r["s"], "b")), True),
    ("NOT (p = 1)", lambda r: _not(_eq(r["p"], 1)), True),
    ("s <> 'a'", lambda r: _not(_eq(r["s"], "a")), True),
    ("p BETWEEN 1 AND 2 AND s = 'a'", lambda r: _and(_and(None if r["p"] is None else r["p"] >= 1,
                                                          None if r["p"] is None else r["p"] <= 2),
                                                     _eq(r["s"], "a")), True),
    ("p = 7", lambda r: _eq(r["p"], 7), True),
    # an OR across two partition columns, one NULL in some partitions
    ("p = 1 OR s IS NULL", lambda r: _or(_eq(r["p"], 1), r["s"] is None), True),
    # mixed with data columns: the rows must still be filtered
    ("p = 1 AND id > 110", lambda r: _and(_eq(r["p"], 1), r["id"] > 110), False),
    ("p = 1 OR id = 3", lambda r: _or(_eq(r["p"], 1), r["id"] == 3), False),
    ("id < 120 AND s = 'a'", lambda r: _and(r["id"] < 120, _eq(r["s"], "a")), False),
    ("p = 2 AND v = 'v2'", lambda r: _and(_eq(r["p"], 2), _eq(r["v"], "v2")), False),
    ("p IS NULL AND v IS NULL", lambda r: _and(r["p"] is None, r["v"] is None), False),
]


def _scanned(t: Table, where: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], int]:
    """The ids the scan returns, and how many parts the row filter was applied to."""
    calls = []
    real = scan_module.filter_rows
    monkeypatch.setattr(scan_module, "filter_rows", lambda part, p: calls.append(1) or real(part, p))
    got = scan(t, where=where, engine_settings=LOCAL)
    monkeypatch.setattr(scan_module, "filter_rows", real)
    return sorted(got.column("id").to_pylist()), len(calls)


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_partition_conditions_scan_the_rows_python_keeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          primary_key: bool) -> None:
    t, rows = _table(tmp_path, primary_key)
    assert sorted(scan(t, engine_settings=LOCAL).column("id").to_pylist()) == sorted(r["id"] for r in rows)
    skipped = []
    for where, truth, partition_only in _CASES:
        expected = sorted(r["id"] for r in rows if truth(r) is True)
        got, filtered = _scanned(t, where, monkeypatch)
        assert got == expected, where
        decided = prepare(t, where=where).plan.decided is not None
        assert not decided or partition_only, where  # a data column is never settled by partitions
        assert (filtered == 0) == decided or not got, where  # settled: no row filter ran
        if decided:
            skipped.append(where)
    # the skip happens where the partitions settle the condition (the check can fail)
    assert {"p = 1", "p IN (0, 2)", "p < 2", "p IS NULL", "p = 0 OR s = 'b'", "NOT (p = 1)"} <= set(skipped)


def test_a_partition_type_rows_may_hold_otherwise_keeps_the_row_filter(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A DOUBLE partition (-0.0 and NaN order apart from IEEE's) is not trusted to settle the
    condition: the rows are filtered, and still come out right."""
    t = Table.locate("db.d", warehouse=str(tmp_path / "wh"))
    create(t, "x DOUBLE, id BIGINT", partition_keys=["x"], options={"bucket": "1", "bucket-key": "id"})
    xs = [1.5, -0.0, 0.0, float("nan"), None, 2.5]
    write(t, pa.table({"x": pa.array(xs, pa.float64()), "id": pa.array(range(len(xs)), pa.int64())}),
          engine_settings=LOCAL)
    for where, expected in (("x = 1.5", [0]), ("x < 2", [0, 1, 2]), ("x IS NULL", [4])):
        got, filtered = _scanned(t, where, monkeypatch)
        assert got == expected, where
        assert filtered > 0 and prepare(t, where=where).plan.decided is None, where
