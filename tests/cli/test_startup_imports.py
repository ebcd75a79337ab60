"""Start-up proportional to the work (issue 26): a metadata command on a local warehouse
imports no data or storage library. Checked on the modules a real `python -m lakectl` process
loaded (-X importtime lists each one), not on timings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pyarrow", "fsspec", "rich", "asyncio", "sqlglot", "numpy", "pandas")


def _imported(*args: str, cwd: Path, environ: dict[str, str] | None = None) -> set[str]:
    env = {**(os.environ if environ is None else environ), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "lakectl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=True)
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


def test_snapshots_imports_no_data_library(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    csv = tmp_path / "in.csv"
    csv.write_text("id,v\n1,a\n2,b\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in (["create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id"],
                 ["write", "db.t", "-i", str(csv)]):
        subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", *args], env=env, check=True, cwd=tmp_path)
    modules = _imported("-w", wh, "snapshots", "db.t", cwd=tmp_path)
    assert "core.snapshot" in modules  # the probe sees the command's own imports
    assert _heavy(modules) == set()
    # nor what only a commit, a rewrite or a new schema needs (issue 45: snapshots within 3x
    # of a Python process reading the snapshot files)
    assert {"core.rewrite", "core.commit_user", "core.holders", "core.options", "core.merge_options",
            "core.tag_options", "core.binary_row"} & modules == set()
    # the same check fails on a data command, so it can fail at all
    assert "pyarrow" in _imported("-w", wh, "scan", "db.t", "-f", "csv", cwd=tmp_path)


def test_version_imports_no_data_library(tmp_path: Path) -> None:
    assert _heavy(_imported("--version", cwd=tmp_path)) == set()


def test_a_plain_write_and_scan_load_no_where_parser(tmp_path: Path) -> None:
    """A write, and a scan without --where, parse no SQL: sqlglot (a fifth of a small write's
    start-up) comes in with a condition only. A write-only table's write loads no compaction
    or expiration code either (maintenance imports each step's operation when it runs)."""
    wh = str(tmp_path / "wh")
    csv = tmp_path / "in.csv"
    csv.write_text("id,v\n1,a\n2,b\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "create", "db.t", "--schema",
                    "id BIGINT NOT NULL, v STRING", "--primary-key", "id", "-o", "bucket=2", "-o", "write-only=true"],
                   env=env, check=True, cwd=tmp_path)
    write = _imported("-w", wh, "write", "db.t", "-i", str(csv), cwd=tmp_path)
    assert "core.ops.write" in write and "pyarrow" in write
    assert {m for m in write if m.split(".")[0] == "sqlglot"} == set()
    assert {"core.where", "core.ops.compact", "core.kernels.compact", "core.ops.expire"} & write == set()
    scan = _imported("-w", wh, "scan", "db.t", "-f", "csv", cwd=tmp_path)
    assert "core.kernels.read" in scan and "core.where" not in scan
    # a simple condition is read without it (core.where_simple); any other loads it, so the
    # check can fail
    assert "core.where" not in _imported("-w", wh, "scan", "db.t", "--where", "id > 1", cwd=tmp_path)
    assert "core.where" in _imported("-w", wh, "scan", "db.t", "--where", "id > 1 OR v = 'a'", cwd=tmp_path)



def test_a_partition_condition_scan_to_csv_loads_no_compute_module(tmp_path: Path) -> None:
    """Issue 44: ``scan --where "p = X" -f csv`` on integer and string columns runs no row
    filter (the partitions settle the condition) and encodes its few cells in Python, so it
    never imports pyarrow.compute (~0.03 s of such a scan). A condition on a data column
    filters rows, which loads it, so the check can fail."""
    wh = str(tmp_path / "wh")
    csv = tmp_path / "in.csv"
    csv.write_text("p,id,v\n1,1,a\n1,2,b\n2,3,c\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "create", "db.t", "--schema",
                    "p INT, id BIGINT, v STRING", "--partition-by", "p"], env=env, check=True, cwd=tmp_path)
    subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "write", "db.t", "-i", str(csv)],
                   env=env, check=True, cwd=tmp_path)
    for where in ("p = 1", "p IN (1, 2)"):
        scan = _imported("-w", wh, "scan", "db.t", "--where", where, "-f", "csv", cwd=tmp_path)
        assert "core.kernels.data_file" in scan and "pyarrow.compute" not in scan, where
    assert "pyarrow.compute" in _imported("-w", wh, "scan", "db.t", "--where", "p = 1 AND id > 1", "-f", "csv",
                                          cwd=tmp_path)


def test_a_primary_key_write_plans_its_compaction_without_the_rewrite_kernels(tmp_path: Path) -> None:
    """After its commit a primary-key table's write asks whether a bucket reached
    num-sorted-run.compaction-trigger (core.kernels.compact_plan); until one does, it loads
    neither the rewrite kernel nor the read kernels and predicates that kernel reads with. The
    write that reaches the trigger (2 here) loads them, so the check can fail."""
    wh = str(tmp_path / "wh")
    csv = tmp_path / "in.csv"
    csv.write_text("id,v\n1,a\n2,b\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "create", "db.t", "--schema",
                    "id BIGINT NOT NULL, v STRING", "--primary-key", "id", "-o", "bucket=1",
                    "-o", "num-sorted-run.compaction-trigger=2"], env=env, check=True, cwd=tmp_path)
    rewrite = {"core.kernels.compact", "core.kernels.read", "core.predicate", "core.kernels.stream_merge"}
    first = _imported("-w", wh, "-q", "write", "db.t", "-i", str(csv), cwd=tmp_path)
    assert {"core.ops.compact", "core.kernels.compact_plan"} <= first
    assert rewrite & first == set()
    second = _imported("-w", wh, "-q", "write", "db.t", "-i", str(csv), cwd=tmp_path)
    assert rewrite <= second
    snapshots = subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-f", "json", "snapshots", "db.t"],
                               env=env, check=True, cwd=tmp_path, capture_output=True, text=True).stdout
    assert "COMPACT" in snapshots


def test_a_write_into_the_readme_table_loads_no_numpy_ma(tmp_path: Path) -> None:
    """A write into the README's shop.orders (primary key, partitioned, two buckets: its rows
    are routed to several groups by one take) does not load numpy.ma (pa.array of a numpy
    array asks for it; ~12 ms); the rows land. The same check on a pa.array of a
    numpy array in a plain process finds numpy.ma, so it can fail."""
    wh = str(tmp_path / "wh")
    csv = tmp_path / "orders.csv"
    csv.write_text("id,customer,amount,dt\n1,alice,10.50,2024-01-01\n2,bob,20.25,2024-01-01\n"
                   "3,carol,5.00,2024-01-02\n4,dave,7.75,2024-01-03\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "create", "shop.orders", "--primary-key", "id,dt",
                    "--partition-by", "dt", "--option", "bucket=2", "--schema",
                    "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING"], env=env, check=True, cwd=tmp_path)
    write = _imported("-w", wh, "-q", "write", "shop.orders", "-i", str(csv), cwd=tmp_path)
    assert {"core.write_buffer", "pyarrow.compute"} <= write  # the probe sees the routing
    assert {m for m in write if m.split(".")[:2] == ["numpy", "ma"]} == set()
    rows = subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "scan", "shop.orders", "-f", "csv"], env=env,
                          check=True, cwd=tmp_path, capture_output=True, text=True).stdout
    assert sorted(rows.splitlines()[1:]) == ["1,alice,10.50,2024-01-01", "2,bob,20.25,2024-01-01",
                                             "3,carol,5.00,2024-01-02", "4,dave,7.75,2024-01-03"]
    probe = ("import sys, numpy as np, pyarrow as pa; pa.array(np.zeros(3, np.int8)); "
             "print('numpy.ma' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", probe], env=env, check=True, capture_output=True,
                          text=True).stdout.strip() == "True"


def test_maintain_dry_run_plans_a_compaction_without_the_data_libraries(tmp_path: Path) -> None:
    """`maintain --dry-run` on a primary-key bucket at num-sorted-run.compaction-trigger plans
    the compaction from the manifests alone (core.ops.compact_planning): no data library
    loads. The real run then compacts, which loads them, so the check can fail."""
    wh = str(tmp_path / "wh")
    csv = tmp_path / "in.csv"
    csv.write_text("id,v\n1,a\n2,b\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "create", "db.t", "--schema",
                    "id BIGINT NOT NULL, v STRING", "--primary-key", "id", "-o", "bucket=1", "-o", "write-only=true",
                    "-o", "num-sorted-run.compaction-trigger=2"], env=env, check=True, cwd=tmp_path)
    for _ in range(2):
        subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "write", "db.t", "-i", str(csv)],
                       env=env, check=True, cwd=tmp_path)
    planned = _imported("-w", wh, "-q", "maintain", "--dry-run", cwd=tmp_path)
    assert "core.ops.compact_planning" in planned
    assert {m for m in planned if m.split(".")[0] in ("pyarrow", "numpy")} == set()
    ran = _imported("-w", wh, "-q", "maintain", cwd=tmp_path)
    assert {"core.kernels.compact", "pyarrow"} <= ran
    snapshots = subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-f", "json", "snapshots", "db.t"],
                               env=env, check=True, cwd=tmp_path, capture_output=True, text=True).stdout
    assert "COMPACT" in snapshots


def test_a_local_write_of_one_file_loads_no_filesystem_library(tmp_path: Path) -> None:
    """A write of one local file into an append table (the text benchmark's write, issue 27)
    loads neither fsspec (a local file is found, sized and written with os), nor numpy.ma
    (pa.array of a numpy array asks for it), nor the predicate module (no condition), nor the
    compaction code (an append table compacts only with full-compaction.delta-commits), nor the
    ORC and JSON readers, and the rows land. A directory input still lists its files through fsspec, so the check can fail."""
    wh = str(tmp_path / "wh")
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.csv").write_text("id,v\n1,a\n2,b\n")
    (inputs / "b.csv").write_text("id,v\n3,c\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "create", "db.t", "--schema",
                    "id BIGINT NOT NULL, v STRING"], env=env, check=True, cwd=tmp_path)
    write = _imported("-w", wh, "-q", "write", "db.t", "-i", str(inputs / "a.csv"), cwd=tmp_path)
    assert {"core.ops.write", "core.kernels.write", "pyarrow"} <= write  # the probe sees the write's imports
    assert {m for m in write if m.split(".")[0] == "fsspec" or m.split(".")[:2] == ["numpy", "ma"]} == set()
    assert {"core.predicate", "core.where", "core.ops.compact", "core.kernels.compact"} & write == set()
    # nor the readers of other input formats, nor partition expiration (the table sets no expiration time)
    assert {"pyarrow.orc", "pyarrow.json", "core.ops.partitions"} & write == set()
    assert "fsspec" in _imported("-w", wh, "-q", "write", "db.t", "-i", str(inputs), cwd=tmp_path)
    rows = subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "scan", "db.t", "-f", "csv"], env=env,
                          check=True, cwd=tmp_path, capture_output=True, text=True).stdout
    assert sorted(rows.splitlines()[1:]) == ["1,a", "1,a", "2,b", "2,b", "3,c"]


def test_a_scan_to_a_pipe_loads_no_rich(tmp_path: Path) -> None:
    """scan -f csv with stdout and stderr on pipes draws no progress bar and no table, so rich
    is not imported to find that out; with stderr forced interactive (rich's TTY_INTERACTIVE
    and TTY_COMPATIBLE) it is, so the check can fail."""
    wh = str(tmp_path / "wh")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", "create", "db.t", "--schema", "id BIGINT"],
                   env=env, check=True, cwd=tmp_path)
    clean = {name: "" for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    plain = _imported("-w", wh, "scan", "db.t", "-f", "csv", cwd=tmp_path,
                      environ={k: v for k, v in os.environ.items() if k not in clean})
    assert "core.sinks" in plain and "rich" not in plain
    forced = _imported("-w", wh, "scan", "db.t", "-f", "csv", cwd=tmp_path,
                       environ={**os.environ, "TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"})
    assert "rich" in forced

# The console script as pip generates it for `lakectl = "lakectl.app:main"` (pyproject.toml).
CONSOLE_SCRIPT = """
import sys
from lakectl.app import main
sys.exit(main())
"""
APP = ("typer", "click", "rich", "core", "lakectl.cli", "lakectl.registry")


def _app_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if any(m == name or m.startswith(name + ".") for name in APP)}


def test_version_alone_builds_no_command_tree(tmp_path: Path) -> None:
    """`lakectl --version` alone is answered before Typer, the command tree or core load,
    through both entry points; among other options it still goes through the tree."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for entry in (["-c", CONSOLE_SCRIPT], ["-m", "lakectl"]):
        done = subprocess.run([sys.executable, "-X", "importtime", *entry, "--version"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=True)
        modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
        assert "lakectl.version" in modules  # the probe sees the entry point's own imports
        assert _app_modules(modules) == set(), entry
        assert re.fullmatch(r"lakectl (\d\S*|\(not installed\))\n", done.stdout)
    # With another option, --version is the tree's eager option: the same line, Typer loaded
    loaded = _imported("-q", "--version", cwd=tmp_path)
    assert {"typer", "lakectl.cli"} <= loaded
    fast = subprocess.run([sys.executable, "-m", "lakectl", "--version"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True).stdout
    slow = subprocess.run([sys.executable, "-m", "lakectl", "-q", "--version"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True).stdout
    assert fast == slow
