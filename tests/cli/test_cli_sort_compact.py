"""``lakectl compact --order-by`` (Paimon's sort compaction) on append tables: the rows stay the
same multiset (deletion vectors applied), the new files hold them in the strategy's order (with
'order', files and row groups with disjoint, ascending ranges of the first column, read from
the Parquet footers), one COMPACT snapshot; a fixed-bucket table is sorted within each bucket;
pypaimon reads the result; a write landing while the compaction is held before its commit stays; a kill
before each of its mutations leaves the table whole and a rerun finishes;
the refusals."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cli_kit import invoke, ok, script

T = "db.e"
SCHEMA = "x BIGINT, y DOUBLE, s STRING"


def _table(tmp_path: Path, *options: str, writes: int = 4, rows: int = 400) -> tuple[str, Counter]:
    wh = str(tmp_path / "wh")
    ok("create", T, "-w", wh, "-s", SCHEMA, *[a for o in options for a in ("-o", o)])
    rng = random.Random(11)
    written: Counter = Counter()
    for w in range(writes):
        batch = [(rng.randint(-500, 500), round(rng.random() * 100, 3), f"s{rng.randint(0, 9)}") for _ in range(rows)]
        path = tmp_path / f"w{w}.csv"
        path.write_text("x,y,s\n" + "".join(f"{x},{y},{s}\n" for x, y, s in batch))
        ok("write", T, "-w", wh, "-i", path)
        written.update(batch)
    return wh, written


def _rows(wh: str) -> Counter:
    return Counter((r["x"], r["y"], r["s"]) for r in ok("scan", T, "-w", wh))


def _files(wh: str) -> list[Path]:
    names = {f["file_name"] for f in ok("files", T, "-w", wh)}
    return sorted(p for p in (Path(wh) / "db.db" / "e").rglob("data-*.parquet") if p.name in names)


@pytest.mark.parametrize("strategy", ["order", "zorder", "hilbert"])
def test_rows_stay_and_the_result_is_one_compact_snapshot(tmp_path: Path, strategy: str) -> None:
    wh, written = _table(tmp_path, "bucket=-1")
    result = ok("compact", T, "-w", wh, "--order-by", "x,y", "--order-strategy", strategy)
    assert (result["snapshot_id"], result["files_before"]) == (5, 4)
    assert ok("snapshots", T, "-w", wh)[0]["commit_kind"] == "COMPACT"
    assert _rows(wh) == written


def test_order_leaves_files_and_row_groups_with_ascending_disjoint_ranges(tmp_path: Path) -> None:
    wh, written = _table(tmp_path, "bucket=-1", "target-file-size=8kb", "parquet.block.size=2048")
    ok("compact", T, "-w", wh, "--order-by", "x")
    ranges = []
    for path in _files(wh):
        meta = pq.ParquetFile(path).metadata
        x = meta.schema.names.index("x")
        ranges += [(meta.row_group(g).column(x).statistics.min, meta.row_group(g).column(x).statistics.max)
                   for g in range(meta.num_row_groups)]
    ranges.sort()
    assert len(ranges) >= 4
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(ranges, ranges[1:]))
    assert _rows(wh) == written


def test_a_fixed_bucket_table_is_sorted_within_each_bucket(tmp_path: Path) -> None:
    wh, written = _table(tmp_path, "bucket=2", "bucket-key=s")
    before = {f["bucket"]: 0 for f in ok("files", T, "-w", wh)}
    ok("compact", T, "-w", wh, "--order-by", "x")
    files = ok("files", T, "-w", wh)
    assert {f["bucket"] for f in files} == set(before) and len(files) == len(before)
    for path in _files(wh):
        xs = pq.read_table(path, columns=["x"]).column("x").to_pylist()
        assert xs == sorted(xs)
    assert _rows(wh) == written


def test_deleted_rows_stay_deleted(tmp_path: Path) -> None:
    wh, written = _table(tmp_path, "bucket=-1", "deletion-vectors.enabled=true")
    done = ok("delete", T, "-w", wh, "--where", "x < 0")
    assert done["records_deleted"] > 0
    ok("compact", T, "-w", wh, "--order-by", "y", "--order-strategy", "zorder")
    assert _rows(wh) == Counter({r: n for r, n in written.items() if r[0] >= 0})


def test_refusals(tmp_path: Path) -> None:
    wh, _ = _table(tmp_path, "bucket=-1", writes=1, rows=3)
    for args, words in [(["--order-by", "nope"], "not a column"), (["--order-by", "x", "--order-strategy", "spiral"],
                        "must be one of order, zorder, hilbert"), (["--order-strategy", "zorder"], "goes with --order-by")]:
        res = invoke("compact", T, "-w", wh, *args)
        assert res.exit_code == 2 and words in res.stderr, res.stderr
    ok("create", "db.k", "-w", wh, "-s", "id BIGINT, v STRING", "--primary-key", "id")
    res = invoke("compact", "db.k", "-w", wh, "--order-by", "v")
    assert res.exit_code == 2 and "primary key" in res.stderr


@pytest.mark.slow
def test_a_write_landing_while_it_is_held_before_its_commit_stays(tmp_path: Path) -> None:

    wh, written = _table(tmp_path, "bucket=-1")
    stall = tmp_path / "stall"
    lakectl = str(Path(sys.executable).with_name("lakectl"))
    repo = str(Path(__file__).resolve().parents[2])  # this checkout first, as the console tests run it
    env = {**os.environ, "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "LAKECTL_FAULT": "stall:publish:1", "LAKECTL_STALL_FILE": str(stall)}
    proc = subprocess.Popen([lakectl, "-w", wh, "-f", "json", "compact", T, "--order-by", "x,y", "--order-strategy",
                             "hilbert"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not stall.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    late = tmp_path / "late.csv"
    late.write_text("x,y,s\n9999,1.0,late\n")
    ok("write", T, "-w", wh, "-i", late)
    stall.unlink()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out)["files_before"] == 4  # the files it planned on, not the late one
    assert _rows(wh) == written + Counter({(9999, 1.0, "late"): 1})



@pytest.mark.slow
def test_killed_at_each_mutation_the_table_reads_whole_and_a_rerun_finishes(tmp_path: Path) -> None:
    """SIGKILLed before each of its storage mutations (``LAKECTL_FAULT=kill:mutation:N``, counted
    by a traced run): the table reads the rows it held (before the compaction or after it, never
    a file twice or none), check finds nothing, and the compaction run again ends sorted in one
    COMPACT snapshot over exactly those rows."""
    template, written = _table(tmp_path / "template", "bucket=-1", writes=3, rows=50)
    trace = tmp_path / "trace"
    args = ("compact", T, "--order-by", "x", "--order-strategy", "zorder")
    shutil.copytree(Path(template).parent, tmp_path / "traced", dirs_exist_ok=True)
    traced = script(str(tmp_path / "traced" / "wh"), *args, LAKECTL_FAULT_TRACE=str(trace))
    assert traced.returncode == 0, traced.stderr
    points = len(trace.read_text().splitlines())
    assert points >= 4, trace.read_text()  # data file(s), manifests, manifest lists, snapshot, hint
    for n in range(1, points + 1):
        shutil.copytree(Path(template).parent, tmp_path / f"k{n}")
        wh = str(tmp_path / f"k{n}" / "wh")
        killed = script(wh, *args, LAKECTL_FAULT=f"kill:mutation:{n}")
        assert killed.returncode == -9, (n, killed.stderr)
        assert _rows(wh) == written, n
        kinds = [s["commit_kind"] for s in ok("snapshots", T, "-w", wh)]
        assert kinds in (["APPEND"] * 3, ["COMPACT"] + ["APPEND"] * 3), (n, kinds)
        assert ok("check", T, "-w", wh)["ok"], n
        ok("compact", T, "-w", wh, "--order-by", "x", "--order-strategy", "zorder")
        assert _rows(wh) == written and ok("snapshots", T, "-w", wh)[0]["commit_kind"] == "COMPACT", n
