"""A process that only reads through the core API (a key range, a lookup, a full scan of a
table of several sorted runs) never imports pandas: pyarrow imports it on the first
conversion of Python or numpy values (``pa.scalar``, ``pa.array``, ``to_numpy``,
``Schema.empty_table``), 0.3 CPU s of a first read; ``core.arrow_values`` builds those
arrays from memory instead. The rows are checked against a dict of what was written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from core.arrow_values import numpy_bool_values, numpy_ints, values_array
from core.ops.create import create
from core.table import Table

PROBE = r"""
import json, sys
from core.ops.lookup import lookup
from core.ops.scan import scan
from core.table import Table
t = Table.open("db.t", warehouse=sys.argv[1])
ranged = scan(t, where="id BETWEEN 100 AND 1999")
found = lookup(t, ["id=1", "id=3", "id=7", "id=2998", "id=5000"]).rows
empty = lookup(t, ["id=7"]).rows
whole = scan(t)
out = {name: sorted(zip(*(tab.column(c).to_pylist() for c in ("id", "v", "s"))))
       for name, tab in (("range", ranged), ("lookup", found), ("empty", empty), ("full", whole))}
out["pandas"] = "pandas" in sys.modules
print(json.dumps(out))
"""

N = 3000


def two_run_table(wh: Path) -> dict[int, tuple[int, str]]:
    """db.t with two runs per bucket (an upsert of every third key, then deletes of every
    seventh); returns (v, s) by key, as the rows must read."""
    t = Table.locate("db.t", warehouse=str(wh))
    create(t, "id BIGINT, v BIGINT, s STRING", primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": list(range(N)), "v": list(range(N)), "s": [f"a{i}" for i in range(N)]}))
    up = list(range(0, N, 3))
    t.write(pa.table({"id": up, "v": [-i for i in up], "s": [f"b{i}" for i in up]}))
    gone = list(range(0, N, 7))
    t.write(pa.table({"id": gone, "v": gone, "s": ["x"] * len(gone), "op": ["-D"] * len(gone)}),
            row_kind_column="op")
    rows = {i: (i, f"a{i}") for i in range(N)}
    rows.update({i: (-i, f"b{i}") for i in up})
    for i in gone:
        rows.pop(i)
    return rows


def test_reads_through_the_api_import_no_pandas(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    rows = {i: [i, *vs] for i, vs in two_run_table(tmp_path / "wh").items()}

    out = subprocess.run([sys.executable, "-c", PROBE, wh], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])

    assert got["range"] == [rows[i] for i in sorted(rows) if 100 <= i <= 1999]
    assert got["lookup"] == [rows[i] for i in (1, 3, 2998) if i in rows]  # 7 deleted, 5000 never written
    assert got["empty"] == []
    assert got["full"] == [rows[i] for i in sorted(rows)]
    assert got["pandas"] is False


@pytest.mark.parametrize("arrow_type,values", [
    (pa.int8(), [-128, 0, 127]), (pa.int32(), [7, -7]), (pa.int64(), [2 ** 63 - 1, -2 ** 63]),
    (pa.uint16(), [0, 65535]), (pa.string(), ["", "é", "key"]), (pa.date32(), []),
])
def test_values_array_equals_pyarrows_conversion(arrow_type: pa.DataType, values: list) -> None:
    assert values_array(values, arrow_type).equals(pa.array(values, arrow_type))


def test_values_array_out_of_range_fails_as_pyarrow_does() -> None:
    with pytest.raises(OverflowError):
        pa.array([2 ** 63], pa.int64())
    with pytest.raises(OverflowError):
        values_array([2 ** 63], pa.int64())


def test_numpy_of_chunked_arrays() -> None:
    ints = pa.chunked_array([pa.array([1, 2], pa.int64()).slice(1), pa.array([3, 4, 5], pa.int64())])
    assert numpy_ints(ints).tolist() == [2, 3, 4, 5]
    bools = pa.chunked_array([pa.array([True, None, False]), pa.array([True])])
    assert numpy_bool_values(bools).tolist() == [True, False, False, True]
    assert numpy_ints(pa.chunked_array([], pa.int32())).dtype == np.int32
