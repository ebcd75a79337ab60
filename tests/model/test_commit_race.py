"""Concurrent commits from several processes, and the create-if-absent primitive under races.

Writers run in their own interpreters (``_race_worker.py``), held at a start line until all are
up, then commit to one table at once. Each reports which snapshot id its commits got. We then
check that commits serialize: ids are exactly 1..n with each write in exactly one snapshot,
every snapshot file is whole JSON, every snapshot's scan equals replaying the writes in id
order (so an OVERWRITE deletes what was live when it *landed*, not when it was planned), the
record counts add up, and losers left no temp files or unreferenced manifests behind. A reader
process scanning during the race must only ever see such committed states.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from core.fileio import FileIO
from core.manifest import merge_entries, read_entries
from core.ops.create import create
from core.snapshot import Snapshot
from core.table import Table

WORKER = Path(__file__).with_name("_race_worker.py")
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 180


# ---- running workers -----------------------------------------------------------------------
def _spawn(spec: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, str(WORKER), json.dumps(spec)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)


def _finish(name: str, proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"worker {name} timed out; stderr:\n{err}")
    assert proc.returncode == 0, f"worker {name} failed (exit {proc.returncode}):\n{err}"
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def race(barrier: Path, writers: dict[str, dict[str, Any]], readers: dict[str, dict[str, Any]] | None = None
         ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Start every worker, release them together, stop the readers once the writers are done."""
    barrier.mkdir(parents=True, exist_ok=True)
    readers = readers or {}
    procs = {name: _spawn({**spec, "name": name, "barrier": str(barrier)})
             for name, spec in {**writers, **readers}.items()}
    deadline = time.monotonic() + 60
    while not all((barrier / f"ready-{name}").exists() for name in procs):
        dead = [n for n, p in procs.items() if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            for p in procs.values():
                p.kill()
            errors = {n: procs[n].communicate()[1] for n in dead}
            pytest.fail(f"workers did not reach the start line: {errors or 'timeout'}")
        time.sleep(0.01)
    (barrier / "go").touch()
    written = {name: _finish(name, procs[name]) for name in writers}
    (barrier / "stop").touch()
    read = {name: _finish(name, procs[name]) for name in readers}
    return written, read


# ---- checking a raced table ----------------------------------------------------------------
def _replay(ops_by_snapshot: dict[int, dict[str, Any]], partitioned: bool) -> dict[int, dict[int, tuple]]:
    """Model state (id -> row) after each snapshot, applying writes in snapshot id order."""
    rows: dict[int, tuple] = {}
    states = {0: {}}
    for sid in sorted(ops_by_snapshot):
        op = ops_by_snapshot[sid]
        if op["mode"] == "overwrite":
            touched = {r[2] for r in op["rows"]}
            rows = {k: r for k, r in rows.items() if partitioned and r[2] not in touched}
        for r in op["rows"]:
            rows[r[0]] = tuple(r)
        states[sid] = dict(rows)
    return states


def _scan_rows(t: Table, sid: int) -> list[tuple]:
    data = t.scan(snapshot_id=sid)
    return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))))


def check_raced_table(t: Table, writers: dict[str, dict[str, Any]], results: dict[str, list[dict[str, Any]]],
                      *, partitioned: bool) -> dict[int, dict[int, tuple]]:
    ops_by_snapshot: dict[int, dict[str, Any]] = {}
    for name, spec in writers.items():
        assert [r["op"] for r in results[name]] == list(range(len(spec["ops"]))), f"worker {name} lost a write"
        for r in results[name]:
            op = spec["ops"][r["op"]]
            sid = r["snapshot_id"]
            assert sid is not None and sid not in ops_by_snapshot, f"snapshot {sid} claimed twice"
            assert r["commit_kind"] == ("OVERWRITE" if op["mode"] == "overwrite" else "APPEND")
            ops_by_snapshot[sid] = op
    n = sum(len(spec["ops"]) for spec in writers.values())
    assert sorted(ops_by_snapshot) == list(range(1, n + 1))
    assert t.snapshots.list_ids() == list(range(1, n + 1))
    assert t.latest_snapshot().id == n

    snapshot_dir = Path(t.path) / "snapshot"
    # EARLIEST too when a writer's expire ran (a table without write-only), naming snapshot 1
    hints = ["LATEST", "EARLIEST"] if (snapshot_dir / "EARLIEST").exists() else ["LATEST"]
    assert sorted(os.listdir(snapshot_dir)) == sorted([f"snapshot-{i}" for i in range(1, n + 1)] + hints), \
        "temp files left behind"
    assert t.snapshots.earliest_hint() in (None, 1)
    states = _replay(ops_by_snapshot, partitioned)
    mio = t.manifests()
    referenced: set[str] = set()
    users = set()
    previous_total = 0
    for sid in range(1, n + 1):
        raw = (snapshot_dir / f"snapshot-{sid}").read_text()
        snap = Snapshot.from_dict(json.loads(raw))  # whole, valid JSON
        assert snap.id == sid and snap.schema_id == 0
        assert snap.commit_kind == ("OVERWRITE" if ops_by_snapshot[sid]["mode"] == "overwrite" else "APPEND")
        users.add(snap.commit_user)
        lists = [snap.base_manifest_list, snap.delta_manifest_list]
        referenced.update(lists)
        referenced.update(m.file_name for name in lists for m in mio.read_manifest_list(name))
        live = merge_entries(read_entries(mio, lists))
        assert snap.total_record_count == sum(e.file.row_count for e in live)
        assert snap.delta_record_count == snap.total_record_count - previous_total
        previous_total = snap.total_record_count
        assert _scan_rows(t, sid) == sorted(states[sid].values()), f"snapshot {sid}"
    assert len(users) == n, "each batch commit must use a fresh commit user"
    assert set(os.listdir(Path(t.path) / "manifest")) == referenced, "a losing attempt left manifests behind"
    return states


def _table(tmp_path: Path, *, primary_keys: list[str], partition_keys: list[str],
           options: dict[str, str]) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=primary_keys, partition_keys=partition_keys,
           options=options)
    return t


def _writer(t: Table, ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "write", "warehouse": str(Path(t.path).parents[1]), "table": "db.t", "ops": ops}


def _append_ops(worker: int, writes: int, rows: int, dts: list[str]) -> list[dict[str, Any]]:
    """Distinct keys everywhere: worker w, write i, row j -> id w*10000 + i*100 + j."""
    return [{"mode": "append",
             "rows": [[worker * 10000 + i * 100 + j, f"w{worker}-{i}", dts[(i + j) % len(dts)]] for j in range(rows)]}
            for i in range(writes)]


# ---- tests ---------------------------------------------------------------------------------
@pytest.mark.parametrize("primary_keys", [["id"], []], ids=["pk", "append"])
def test_two_writers_ten_commits_each(tmp_path: Path, primary_keys: list[str]) -> None:
    # write-only: every snapshot must be one of the workers' writes (no COMPACT after commit)
    options = {"bucket": "2", "write-only": "true"} if primary_keys else {}
    t = _table(tmp_path, primary_keys=primary_keys, partition_keys=[], options=options)
    writers = {f"w{w}": _writer(t, _append_ops(w, 10, 3, ["a", "b"])) for w in range(2)}
    results, _ = race(tmp_path / "barrier", writers)
    states = check_raced_table(t, writers, results, partitioned=False)
    assert sorted(t.scan().column("id").to_pylist()) == sorted(
        r[0] for spec in writers.values() for op in spec["ops"] for r in op["rows"])
    assert len(states[20]) == 60


@pytest.mark.slow
def test_many_writers_with_overwrites_and_a_reader(tmp_path: Path) -> None:
    """4 writers x 12 commits on a partitioned PK table; two writers overwrite partitions the
    others append to. Every snapshot must equal the writes replayed in snapshot order, and a
    reader scanning throughout only ever sees those states."""
    t = _table(tmp_path, primary_keys=["id", "dt"], partition_keys=["dt"],
               options={"bucket": "2", "commit.max-retries": "50", "write-only": "true"})
    writers = {}
    for w in range(4):
        ops = _append_ops(w, 12, 4, ["a", "b", "c"])
        if w >= 2:  # every third commit of these overwrites the partitions its rows touch
            for i in range(0, 12, 3):
                ops[i] = {"mode": "overwrite", "rows": [[w * 10000 + i * 100, f"o{w}-{i}", "abc"[(w + i) % 3]]]}
        writers[f"w{w}"] = _writer(t, ops)
    reader = {"role": "read", "warehouse": str(Path(t.path).parents[1]), "table": "db.t"}
    results, seen = race(tmp_path / "barrier", writers, {"r": reader})
    states = check_raced_table(t, writers, results, partitioned=True)
    observed = seen["r"]
    assert observed, "the reader saw no snapshot"
    for obs in observed:
        assert sorted(obs["ids"]) == sorted(states[obs["snapshot_id"]]), f"reader at snapshot {obs['snapshot_id']}"
    assert [o["snapshot_id"] for o in observed] == sorted(o["snapshot_id"] for o in observed), \
        "the latest snapshot went backwards"


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "lost"])
def test_publish_with_unknown_outcome_commits_exactly_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          landed: bool) -> None:
    """The first snapshot publish raises OSError after (or instead of) creating the file: the
    retry must find its own landed snapshot rather than commit the rows a second time."""
    t = _table(tmp_path, primary_keys=[], partition_keys=[], options={})
    real = FileIO.try_create
    failures: list[str] = []

    def flaky(self: FileIO, path: str, data: bytes, **kw: bool) -> bool:
        if "/snapshot/" in path and not failures:
            failures.append(path)
            if landed:
                real(self, path, data, **kw)
            raise OSError("connection reset while publishing")
        return real(self, path, data, **kw)

    monkeypatch.setattr(FileIO, "try_create", flaky)
    result = t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["x", "y"], "dt": ["a", "b"]}))
    assert failures, "the fault was never injected"
    assert result.snapshot_id == 1 and t.snapshots.list_ids() == [1]
    assert sorted(t.scan().column("id").to_pylist()) == [1, 2]
    assert t.latest_snapshot().total_record_count == 2


# ---- FileIO.try_create ---------------------------------------------------------------------
def test_try_create_basics(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    path = str(tmp_path / "new" / "dir" / "f")
    assert io.try_create(path, b"first")
    assert not io.try_create(path, b"second")
    assert Path(path).read_bytes() == b"first"
    assert os.listdir(tmp_path / "new" / "dir") == ["f"]


def test_try_create_racing_threads(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    threads, rounds = 16, 25
    for r in range(rounds):
        path = str(tmp_path / "snapshot" / f"snapshot-{r}")
        barrier = threading.Barrier(threads)

        def attempt(i: int) -> bool:
            barrier.wait()
            return io.try_create(path, f"thread-{i}-".encode() * 2048)

        with ThreadPoolExecutor(threads) as pool:
            won = list(pool.map(attempt, range(threads)))
        assert sum(won) == 1, f"round {r}: {sum(won)} winners"
        assert Path(path).read_bytes() == f"thread-{won.index(True)}-".encode() * 2048
    assert sorted(os.listdir(tmp_path / "snapshot")) == sorted(f"snapshot-{r}" for r in range(rounds))


def test_try_create_racing_processes(tmp_path: Path) -> None:
    target = tmp_path / "target"
    paths = [str(target / f"snapshot-{i}") for i in range(60)]
    workers = {f"p{i}": {"role": "create", "dir": str(target), "paths": paths, "peers": 4} for i in range(4)}
    results, _ = race(tmp_path / "barrier", workers)
    for path in paths:
        winners = [name for name, rows in results.items() for row in rows if row["path"] == path and row["won"]]
        assert len(winners) == 1, f"{path}: winners {winners}"
        assert Path(path).read_bytes() == winners[0].encode() * 4096
    # The per-path barrier makes the races real. Which process wins is up to the scheduler, so a
    # loaded machine may let one process win every path: that says nothing about try_create.
    assert sorted(os.listdir(target)) == sorted(os.path.basename(p) for p in paths), "temp files left behind"
