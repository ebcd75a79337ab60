"""A ``scan --where --output`` and a ``lookup`` process on a pipe, as scripts and the peers
benchmark run them, import neither rich (their progress bar is off on a pipe) nor numpy.ma
(pulled in by pyarrow's and numpy's masked-array checks) nor the write side (routing,
buffering, the write kernel, commit messages, nor the rewrite markers and commit users a
commit or an expire takes: core.rewrite, with hashlib, socket and uuid, issue 45), and still
return the right rows.
A table of two sorted runs per bucket sends both through the merge."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.unit.test_read_without_pandas import N, two_run_table

# Runs the console script's entry point, then writes the modules it loaded to argv[1].
PROBE = r"""
import json, sys
WRITE_SIDE = {"numpy.ma", "core.commit", "core.kernels.write", "core.kernels.delete", "core.write_buffer",
              "core.sources", "core.rows", "core.rewrite", "core.commit_user", "core.holders"}
out = sys.argv[1]
sys.argv = ["lakectl", *sys.argv[2:]]
from lakectl.app import main
try:
    main()
finally:
    with open(out, "w") as fh:
        json.dump(sorted(m for m in sys.modules if m.split(".")[0] == "rich" or m in WRITE_SIDE), fh)
"""


def _run(tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    loaded = tmp_path / "modules.json"
    out = subprocess.run([sys.executable, "-c", PROBE, str(loaded), *args], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout, json.loads(loaded.read_text())


def test_scan_where_to_a_file_imports_neither_rich_nor_numpy_ma(tmp_path: Path) -> None:
    rows = two_run_table(tmp_path / "wh")
    target = tmp_path / "out.parquet"
    _, loaded = _run(tmp_path, "-w", str(tmp_path / "wh"), "scan", "db.t", "--where", "id BETWEEN 100 AND 1999",
                     "--output", str(target))
    got = pq.read_table(target).sort_by("id")
    want = sorted((i, *rows[i]) for i in rows if 100 <= i <= 1999)
    assert list(zip(*(got.column(c).to_pylist() for c in ("id", "v", "s")))) == want
    assert loaded == []


def test_lookup_imports_neither_rich_nor_numpy_ma(tmp_path: Path) -> None:
    rows = two_run_table(tmp_path / "wh")
    keys = [1, 3, 7, 14, 15, 2998, N + 5]  # kept, updated, deleted, absent
    stdout, loaded = _run(tmp_path, "-w", str(tmp_path / "wh"), "lookup", "db.t", "-f", "csv",
                          *[a for k in keys for a in ("-k", f"id={k}")])
    got = sorted((int(r["id"]), int(r["v"]), r["s"]) for r in csv.DictReader(io.StringIO(stdout)))
    assert got == sorted((k, *rows[k]) for k in keys if k in rows)
    assert loaded == []
