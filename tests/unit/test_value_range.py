"""Values that do not fit their column's type: the error names the column, the row, the
value, the type and its range, in lakectl's words (never Arrow's). Expected ranges are the
types' definitions (two's complement widths, DECIMAL(p, s) digits), written out by hand."""

from __future__ import annotations

import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from core.ops.create import create
from core.table import Table
from core.value_range import misfit
from lakectl.app import app


@pytest.mark.parametrize("value, t, expected", [
    (128, pa.int8(), "128 is out of range for TINYINT (-128 to 127)"),
    (-129, pa.int8(), "-129 is out of range for TINYINT (-128 to 127)"),
    (127, pa.int8(), None),
    (32768, pa.int16(), "32768 is out of range for SMALLINT (-32768 to 32767)"),
    (2**31, pa.int32(), "2147483648 is out of range for INT (-2147483648 to 2147483647)"),
    (-2**63 - 1, pa.int64(), "-9223372036854775809 is out of range for BIGINT "
                             "(-9223372036854775808 to 9223372036854775807)"),
    (decimal.Decimal("1.555"), pa.decimal128(5, 2), "1.555 has 3 digits after the point; DECIMAL(5, 2) keeps 2 "
                                                    "(lakectl does not round)"),
    (decimal.Decimal("1.550"), pa.decimal128(5, 2), None),  # a trailing zero loses nothing
    (decimal.Decimal("1000"), pa.decimal128(5, 2), "1000 is out of range for DECIMAL(5, 2) (-999.99 to 999.99)"),
    (decimal.Decimal("999.99"), pa.decimal128(5, 2), None),
    (decimal.Decimal("-10"), pa.decimal128(3, 2), "-10 is out of range for DECIMAL(3, 2) (-9.99 to 9.99)"),
    (decimal.Decimal("1"), pa.decimal128(2, 2), "1 is out of range for DECIMAL(2, 2) (-0.99 to 0.99)"),
    (decimal.Decimal("0"), pa.decimal128(2, 2), None),
])
def test_misfit_names_value_type_and_range(value: object, t: pa.DataType, expected: str | None) -> None:
    assert misfit(value, t) == expected
    if expected is None:
        pa.array([value], t)  # Arrow agrees that it fits


def make(tmp_path: Path) -> Table:
    t = Table.locate("db.v", warehouse=str(tmp_path / "wh"))
    create(t, "id INT NOT NULL, b TINYINT, d DECIMAL(5, 2)", primary_keys=[], partition_keys=[], options={})
    return Table.open("db.v", warehouse=str(tmp_path / "wh"))


@pytest.mark.parametrize("fmt, text, expected", [
    ("csv", "id,b,d\n1,1,1.5\n2,128,1.5\n", "row 2 (line 3), column b: 128 is out of range for TINYINT (-128 to 127)"),
    ("csv", "id,b,d\n1,1,1.555\n", "row 1 (line 2), column d: 1.555 has 3 digits after the point; DECIMAL(5, 2) "
                                   "keeps 2"),
    ("csv", "id,b,d\n1,1,12345.5\n", "column d: 12345.5 is out of range for DECIMAL(5, 2) (-999.99 to 999.99)"),
    ("jsonl", json.dumps({"id": 1, "b": -129, "d": 1}) + "\n", "row 1, column b: -129 is out of range for TINYINT"),
])
def test_text_input_errors_name_row_column_value_and_range(tmp_path: Path, fmt: str, text: str,
                                                           expected: str) -> None:
    t = make(tmp_path)
    path = tmp_path / f"in.{fmt}"
    path.write_text(text)
    refused(tmp_path, path, expected)
    assert t.snapshots.latest_id() is None


def test_typed_input_errors_name_row_column_value_and_range(tmp_path: Path) -> None:
    t = make(tmp_path)
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "b": pa.array([1, 2, -300], pa.int64()),
                             "d": pa.array([decimal.Decimal(1)] * 3, pa.decimal128(6, 2))}), path)
    refused(tmp_path, path, "column b (input row 3): -300 is out of range for TINYINT (-128 to 127)")
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "b": pa.array([1], pa.int8()),
                             "d": pa.array([decimal.Decimal("2.125")], pa.decimal128(6, 3))}), path)
    refused(tmp_path, path, "column d (input row 1): 2.125 has 3 digits after the point; DECIMAL(5, 2) keeps 2")
    assert t.snapshots.latest_id() is None


def refused(tmp_path: Path, path: Path, expected: str) -> None:
    result = CliRunner().invoke(app, ["-w", str(tmp_path / "wh"), "write", "db.v", "--input", str(path)])
    assert result.exit_code == 5, (result.exit_code, result.stderr)
    assert expected in result.stderr and "C integer" not in result.stderr and "Rescaling" not in result.stderr, \
        result.stderr
