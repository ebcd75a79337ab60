"""Java Paimon 1.0's filters against lakectl's ``--where`` on binary and float columns.

Java prunes files by their stats with its own comparison (bytes signed, floats in
``Double.compare``'s total order: -0.0 < 0.0, NaN equal to itself and above +Infinity) and
then drops the rows its predicate rejects. On lakectl-written files Java must find every row
lakectl finds: lakectl writes no binary bounds (as Java 1.0) and float bounds that hold in
Java's order, and its own ``--where`` compares floats in that order too. Rows carry an id, so
-0.0 and 0.0 (equal in Python) are told apart.
"""

from __future__ import annotations

import base64
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, java_read_filtered, java_run, lakectl_rows
from test_lakectl_to_pypaimon import lakectl_table

from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

NAN, INF = math.nan, math.inf


def b64(hex_digits: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_digits)).decode("ascii")


# ---- binary columns ----------------------------------------------------------------------
# Bytes on both sides of 0x80, where signed and unsigned orders disagree, over three files.
BINARY_FILES = [[(1, "ff0180"), (2, "010203"), (3, None)],
                [(4, "7f"), (5, "ff0180"), (6, "80")],
                [(7, "ff0180"), (8, "00"), (9, "ff")]]


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_java_filters_binary_columns_of_lakectl_files(tmp_path: Path, primary_key: bool) -> None:
    """Java 1.0's ``b = X'ff0180'`` found 0 rows in lakectl's files (its signed comparison
    against lakectl's unsigned bounds pruned them all); now each value finds the rows lakectl
    finds, which are the rows holding it."""
    table = lakectl_table(tmp_path, "bin", [("id", "INT NOT NULL"), ("b", "VARBINARY(8)"), ("bn", "BINARY(3)")],
                          primary_keys=["id"] if primary_key else [],
                          options={"bucket": "1" if primary_key else "-1"})
    for rows in BINARY_FILES:
        values = [None if h is None else bytes.fromhex(h) for _, h in rows]
        fixed = [None if v is None else v.ljust(3, b"\0") for v in values]
        table.write(pa.table({"id": pa.array([i for i, _ in rows], pa.int32()), "b": pa.array(values, pa.binary()),
                              "bn": pa.array(fixed, pa.binary())}))
    asked = [(column, bytes.fromhex(digits).ljust(3 if column == "bn" else 0, b"\0").hex())
             for digits in ("ff0180", "7f", "80", "ff", "00", "010203") for column in ("b", "bn")]
    answers = java_read_filtered(Path(table.path), [[("equal", column, b64(literal))] for column, literal in asked]
                                 + [[("in", "b", [b64("ff0180"), b64("80")])]])
    for (column, literal), java in zip(asked, answers):
        holding = [i for rows in BINARY_FILES for i, h in rows
                   if h is not None and bytes.fromhex(h).ljust(3 if column == "bn" else 0, b"\0").hex() == literal]
        ours = [r[0] for r in lakectl_rows(table.scan(where=f"{column} = X'{literal}'"))]
        assert sorted(r[0] for r in java) == sorted(ours) == sorted(holding), (column, literal)
    assert answers[-1] == lakectl_rows(table.scan(where="b IN (X'ff0180', X'80')"))
    assert sorted(r[0] for r in answers[-1]) == [1, 5, 6, 7]


# ---- float columns -----------------------------------------------------------------------
# Every special value, spread over files so that stats decide: both zeros in one file (whose
# max Arrow reports as -0.0), NaN beside ordinary values, a file of only NaN and NULL.
FLOAT_FILES = [[(1, -0.0), (2, 0.0), (3, 1.5)],
               [(4, NAN), (5, -INF), (6, None), (7, -2.0)],
               [(8, NAN), (9, None)],
               [(10, 0.0), (11, INF)],
               [(12, -0.0)]]

ZERO, NEG_ZERO = 0.0, -0.0
# (--where text after the column, Java's filter op, its value in the oracle's normal form)
FLOAT_CONDITIONS = [
    *[(f"{op} {text}", java_op, value)
      for op, java_op in (("=", "equal"), ("<>", "notEqual"), ("<", "lessThan"), ("<=", "lessOrEqual"),
                          (">", "greaterThan"), (">=", "greaterOrEqual"))
      for text, value in (("0.0", ZERO), ("-0.0", NEG_ZERO), ("'NaN'", "NaN"), ("'Infinity'", "Infinity"),
                          ("-1.0", -1.0))],
    ("IN (0.0)", "in", [ZERO]),
    ("IN (-0.0, 'NaN')", "in", [NEG_ZERO, "NaN"]),
    ("NOT IN (-0.0, 1.5)", "notIn", [NEG_ZERO, 1.5]),
    ("BETWEEN -0.0 AND 0.0", "between", [NEG_ZERO, ZERO]),
    ("BETWEEN 0.0 AND 'Infinity'", "between", [ZERO, "Infinity"]),
    ("BETWEEN -1.0 AND -0.0", "between", [-1.0, NEG_ZERO]),
]


def write_float_files(table: Table) -> None:
    for rows in FLOAT_FILES:
        values = [v for _, v in rows]
        table.write(pa.table({"id": pa.array([i for i, _ in rows], pa.int32()), "f": pa.array(values, pa.float32()),
                              "d": pa.array(values, pa.float64())}))


def java_double_order(x: float) -> tuple[int, float, int]:
    """``Double.compare``'s order, the model: NaN last, then by value, -0.0 before 0.0."""
    return (1, 0.0, 0) if math.isnan(x) else (0, x, 0 if math.copysign(1.0, x) < 0 else 1)


def model_ids(java_op: str, value: Any) -> list[int]:
    """The ids whose value passes Java's predicate, computed here from the rows written."""
    def number(v: Any) -> float:
        return float(v)  # "NaN" and "Infinity" parse as Java's Double.parseDouble does

    def passes(x: float) -> bool:
        k = java_double_order(x)
        if java_op in ("in", "notIn"):
            hit = any(k == java_double_order(number(v)) for v in value)
            return hit if java_op == "in" else not hit
        if java_op == "between":
            return java_double_order(number(value[0])) <= k <= java_double_order(number(value[1]))
        v = java_double_order(number(value))
        return {"equal": k == v, "notEqual": k != v, "lessThan": k < v, "lessOrEqual": k <= v,
                "greaterThan": k > v, "greaterOrEqual": k >= v}[java_op]

    return sorted(i for rows in FLOAT_FILES for i, x in rows if x is not None and passes(x))


def assert_float_filters_agree(path: Path, table: Table, *, java_prunes_soundly: bool = True) -> None:
    """Every condition of FLOAT_CONDITIONS on both columns: lakectl's ids are the model's, and
    so are Java's where its pruning is sound on these files."""
    asked = [(column, text, java_op, value) for column in ("f", "d") for text, java_op, value in FLOAT_CONDITIONS]
    answers = java_read_filtered(path, [[(java_op, column, value)] for column, _, java_op, value in asked])
    for (column, text, java_op, value), java_rows in zip(asked, answers):
        ours = sorted(r[0] for r in lakectl_rows(table.scan(where=f"{column} {text}")))
        assert ours == model_ids(java_op, value), f"{column} {text}"
        if java_prunes_soundly:
            assert sorted(r[0] for r in java_rows) == ours, f"{column} {text}"


@pytest.mark.parametrize(("primary_key", "fmt"), [(False, "parquet"), (True, "parquet"), (False, "orc"),
                                                  (False, "avro")])
def test_float_filters_follow_javas_order_on_lakectl_files(tmp_path: Path, primary_key: bool, fmt: str) -> None:
    """On FLOAT and DOUBLE columns holding -0.0, 0.0, NaN, ±Infinity and NULL, lakectl's
    ``--where`` and Java's filter return the same rows, those of the model of Java's order.
    Before, lakectl took -0.0 for 0.0 and NaN for unordered; Java pruned the file holding
    both zeros from ``= 0.0`` by the max -0.0 lakectl wrote, and skipped Parquet row groups
    holding NaN by the min/max pyarrow wrote without it."""
    table = lakectl_table(tmp_path, "fl", [("id", "INT NOT NULL"), ("f", "FLOAT"), ("d", "DOUBLE")],
                          primary_keys=["id"] if primary_key else [],
                          options={"bucket": "1" if primary_key else "-1", "file.format": fmt})
    write_float_files(table)
    assert_float_filters_agree(Path(table.path), table)


@pytest.mark.parametrize("fmt", ["parquet", "avro", "orc"])
def test_float_filters_on_java_files_return_javas_rows(tmp_path: Path, fmt: str) -> None:
    """The same conditions on the same rows written by Java (Parquet: no float bounds beside a
    NaN; Avro: bounds in Java's order, NaN the max): lakectl's rows are Java's. Java's ORC
    files hold IEEE-style bounds (NaN left out, max -0.0 beside a 0.0) by which Java itself
    skips matching rows (``f <> 'NaN'`` misses -2.0 and -Infinity); lakectl widens such
    bounds and returns the model's rows there."""
    path = tmp_path / "wh" / "db.db" / f"jfl_{fmt}"
    steps = [{"op": "write", "rows": [[i, _normal(v), _normal(v)] for i, v in rows]} for rows in FLOAT_FILES]
    java_run(path, steps, create={"fields": [{"name": "id", "type": "INT NOT NULL"}, {"name": "f", "type": "FLOAT"},
                                             {"name": "d", "type": "DOUBLE"}],
                                  "options": {"bucket": "-1", "file.format": fmt}})
    assert java_read(path)[0] == sorted_rows_written(), "Java reads back what it wrote"
    assert_float_filters_agree(path, Table.open(f"db.{path.name}", warehouse=str(path.parents[1])),
                               java_prunes_soundly=fmt != "orc")


def sorted_rows_written() -> list[list[Any]]:
    from java_oracle import sort_rows

    return sort_rows([[i, _normal(v), _normal(v)] for rows in FLOAT_FILES for i, v in rows])


def _normal(v: float | None) -> Any:
    if v is None or not (math.isnan(v) or math.isinf(v)):
        return v
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
