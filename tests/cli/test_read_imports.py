"""A ``scan --where --output`` and a ``lookup`` process on a pipe, as scripts and the peers
benchmark run them, import neither rich (their progress bar is off on a pipe) nor numpy.ma
(pulled in by pyarrow's and numpy's masked-array checks) nor the write side (routing,
buffering, the write kernel, commit messages), and still return the right rows.
A table of two sorted runs per bucket sends both through the merge."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from core.ops.create import create
from core.table import Table

# Runs the console script's entry point, then writes the modules it loaded to argv[1].
PROBE = r"""
import json, sys
WRITE_SIDE = {"numpy.ma", "core.commit", "core.kernels.write", "core.kernels.delete", "core.write_buffer",
              "core.sources", "core.rows"}
out = sys.argv[1]
sys.argv = ["lakectl", *sys.argv[2:]]
from lakectl.app import main
try:
    main()
finally:
    with open(out, "w") as fh:
        json.dump(sorted(m for m in sys.modules if m.split(".")[0] == "rich" or m in WRITE_SIDE), fh)
"""

N = 3000


def _table(wh: Path) -> dict[int, tuple[int, str]]:
    """Two runs per bucket (an upsert of every third key, then deletes of every seventh);
    returns the rows by key, as they must read."""
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


def _run(tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    loaded = tmp_path / "modules.json"
    out = subprocess.run([sys.executable, "-c", PROBE, str(loaded), *args], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout, json.loads(loaded.read_text())


def test_scan_where_to_a_file_imports_neither_rich_nor_numpy_ma(tmp_path: Path) -> None:
    rows = _table(tmp_path / "wh")
    target = tmp_path / "out.parquet"
    _, loaded = _run(tmp_path, "-w", str(tmp_path / "wh"), "scan", "db.t", "--where", "id BETWEEN 100 AND 1999",
                     "--output", str(target))
    got = pq.read_table(target).sort_by("id")
    want = sorted((i, *rows[i]) for i in rows if 100 <= i <= 1999)
    assert list(zip(*(got.column(c).to_pylist() for c in ("id", "v", "s")))) == want
    assert loaded == []


def test_lookup_imports_neither_rich_nor_numpy_ma(tmp_path: Path) -> None:
    rows = _table(tmp_path / "wh")
    keys = [1, 3, 7, 14, 15, 2998, N + 5]  # kept, updated, deleted, absent
    stdout, loaded = _run(tmp_path, "-w", str(tmp_path / "wh"), "lookup", "db.t", "-f", "csv",
                          *[a for k in keys for a in ("-k", f"id={k}")])
    got = sorted((int(r["id"]), int(r["v"]), r["s"]) for r in csv.DictReader(io.StringIO(stdout)))
    assert got == sorted((k, *rows[k]) for k in keys if k in rows)
    assert loaded == []
