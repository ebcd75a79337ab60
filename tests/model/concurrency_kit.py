"""Running writer, compactor and reader processes against one table and checking the result;
shared by tests/model/test_concurrent_writers.py (local files) and
tests/s3/test_s3_concurrency.py (S3). The children are ``_concurrent_worker.py``.

``check_table`` holds the claims: every writer's M commits landed (N x M APPEND snapshots),
snapshot ids are gapless 1..n and each is claimed by exactly one commit, every snapshot scans
to the writes replayed in id order (a COMPACT changes no row), every row of every writer is in
the final scan, and every state a concurrent reader saw equals the state of the snapshot it
read.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import binary_row
from core.bucket import bucket_of
from core.manifest import live_entries
from core.table import Table
from core.types import parse_type

WORKER = Path(__file__).with_name("_concurrent_worker.py")
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 240  # seconds for the whole race

Row = tuple[int, str, str]


@dataclass
class Figures:
    """What a race did, for the test output and the report."""

    writers: int = 0
    commits_per_writer: int = 0
    commits: int = 0  # commits that landed
    retries: int = 0  # lost attempts of all commits (writers and compactors)
    compactions: int = 0  # COMPACT snapshots
    conflicts: int = 0  # compactions that found their input files gone and planned again
    reads: int = 0  # states a reader observed
    rows_expected: int = 0
    rows_lost: int = 0
    seconds: float = 0.0
    reasons: list[str] = field(default_factory=list)

    def line(self, label: str) -> str:
        return (f"{label}: {self.writers} writers x {self.commits_per_writer} commits = "
                f"{self.writers * self.commits_per_writer} tried, {self.commits} landed, {self.retries} lost "
                f"attempts retried, {self.compactions} compactions ({self.conflicts} conflicts re-planned), "
                f"{self.reads} reader states checked, {self.rows_expected} rows, {self.rows_lost} lost, "
                f"{self.seconds:.1f}s")


# ---- building the writers' work ---------------------------------------------------------------
def keys_in_bucket(bucket: int, buckets: int, count: int, start: int) -> list[int]:
    """``count`` ids >= start whose bucket (Paimon's hash of the BIGINT key) is ``bucket``."""
    out, k = [], start
    bigint = parse_type("BIGINT")
    while len(out) < count:
        if bucket_of([k], [bigint], buckets) == bucket:
            out.append(k)
        k += 1
    return out


def writer_commits(writer: int, commits: int, rows: int, *, bucket: tuple[int, int] | None = None,
                   dts: tuple[str, ...] = ("a",)) -> list[dict[str, Any]]:
    """Writer w's own keys: commit i, row j -> id w*100000 + i*100 + j (or the next ids in
    ``bucket`` = (bucket, of buckets)), value "w<w>-<i>"."""
    out = []
    for i in range(commits):
        base = writer * 100000 + i * 100
        ids = keys_in_bucket(bucket[0], bucket[1], rows, base) if bucket else list(range(base, base + rows))
        assert all(writer * 100000 <= k < (writer + 1) * 100000 for k in ids)
        out.append({"mode": "append", "rows": [[k, f"w{writer}-{i}", dts[(k + i) % len(dts)]] for k in ids]})
    return out


# ---- running them -----------------------------------------------------------------------------
def _spawn(spec: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("LAKECTL_FAULT", None)
    env.pop("LAKECTL_KILL_AFTER_WRITES", None)
    return subprocess.Popen([sys.executable, str(WORKER), json.dumps(spec)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)


def _stop(procs: dict[str, subprocess.Popen[str]]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def _collect(name: str, proc: subprocess.Popen[str], deadline: float) -> list[dict[str, Any]]:
    try:
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"worker {name} timed out; stderr:\n{err[-3000:]}") from None
    assert proc.returncode == 0, f"worker {name} failed (exit {proc.returncode}):\n{err[-3000:]}"
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def race(barrier: Path, table: Table, *, writers: dict[str, list[dict[str, Any]]],
         compactors: int = 0, readers: int = 0, rounds: bool = False,
         storage_options: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Run the workers from one start line; compactors and readers stop once the writers are done."""
    barrier.mkdir(parents=True, exist_ok=True)
    base = {"warehouse": str(Path(table.path).parents[1]) if "://" not in table.path
            else table.path.rsplit("/", 2)[0], "table": table.name, "barrier": str(barrier),
            "storage_options": storage_options}
    specs = {name: {**base, "role": "write", "commits": commits, "rounds": rounds, "peers": len(writers)}
             for name, commits in writers.items()}
    specs.update({f"c{i}": {**base, "role": "compact", "min_runs": 1, "pause": 0.05} for i in range(compactors)})
    specs.update({f"r{i}": {**base, "role": "read"} for i in range(readers)})
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        for name, spec in specs.items():
            procs[name] = _spawn({**spec, "name": name})
        deadline = time.monotonic() + TIMEOUT
        while not all((barrier / f"ready-{name}").exists() for name in procs):
            dead = {n: p for n, p in procs.items() if p.poll() is not None}
            if dead or time.monotonic() > deadline:
                errors = {n: p.communicate()[1][-2000:] for n, p in dead.items()}
                raise AssertionError(f"workers did not reach the start line: {errors or 'timeout'}")
            time.sleep(0.01)
        (barrier / "go").touch()
        start = time.monotonic()
        results = {name: _collect(name, procs[name], deadline) for name in writers}
        seconds = time.monotonic() - start
        (barrier / "stop").touch()
        results.update({name: _collect(name, procs[name], deadline) for name in specs if name not in writers})
        results["_seconds"] = [{"seconds": seconds}]
        return results
    finally:
        _stop(procs)


# ---- checking ---------------------------------------------------------------------------------
def check_levels(t: Table, snapshot_id: int) -> None:
    """The LSM invariant of a primary-key table: every level above 0 of a bucket is one sorted
    run, its files' key ranges do not overlap (two compactions landing on the same level
    must not break it)."""
    schema = t.schema
    if not schema.has_primary_key:
        return
    types = [f.type for f in schema.key_fields]
    runs: dict[tuple[bytes, int, int], list[tuple[Any, Any, str]]] = {}
    for e in live_entries(t.manifests(), t.snapshots.snapshot(snapshot_id)):
        if e.file.level > 0:
            runs.setdefault((e.partition, e.bucket, e.file.level), []).append(
                (binary_row.decode(e.file.min_key, types), binary_row.decode(e.file.max_key, types), e.file.file_name))
    for (_, bucket, level), files in runs.items():
        files.sort()
        for (_, high, a), (low, _, b) in zip(files, files[1:]):
            assert high < low, f"snapshot {snapshot_id}, bucket {bucket}, level {level}: {a} and {b} overlap"


def check_table(t: Table, writers: dict[str, list[dict[str, Any]]], results: dict[str, list[dict[str, Any]]],
                figures: Figures, *, writers_compact: bool = False) -> dict[int, dict[int, Row]]:
    """The claims of the module docstring; returns the model state of every snapshot.
    ``writers_compact``: the writers' own post-commit compactions add COMPACT snapshots."""
    ops: dict[int, dict[str, Any]] = {}
    for name, commits in writers.items():
        got = results[name]
        assert [r["op"] for r in got] == list(range(len(commits))), f"writer {name} lost a commit"
        for r in got:
            sid = r["snapshot_id"]
            assert sid is not None and sid not in ops, f"snapshot {sid} claimed twice"
            assert r["commit_kind"] == "APPEND"
            ops[sid] = commits[r["op"]]
            figures.retries += r["retries"]
            figures.conflicts += r.get("conflicts", 0)
            figures.reasons += r["reasons"]
    compacted: set[int] = set()
    figures.seconds = results.get("_seconds", [{"seconds": 0.0}])[0]["seconds"]
    for name, got in results.items():
        if name.startswith("c"):
            assert got, f"compactor {name} never ran"
            for r in got:
                figures.retries += r["retries"]
                figures.conflicts += r["conflicts"]
                if r["snapshot_id"] is not None:
                    assert r["snapshot_id"] not in ops and r["snapshot_id"] not in compacted
                    compacted.add(r["snapshot_id"])
    ids = t.snapshots.list_ids()
    n = len(ids) if writers_compact else len(ops) + len(compacted)
    assert ids == list(range(1, n + 1)), f"snapshot ids are not gapless 1..{n}: {ids}"
    figures.writers = len(writers)
    figures.commits_per_writer = max(len(c) for c in writers.values())
    figures.commits = len(ops)
    assert figures.commits == sum(len(c) for c in writers.values())

    states: dict[int, dict[int, Row]] = {0: {}}
    rows: dict[int, Row] = {}
    total = 0
    for sid in ids:
        snap = t.snapshots.snapshot(sid)
        if sid in ops:
            assert snap.commit_kind == "APPEND"
            for r in ops[sid]["rows"]:
                rows[r[0]] = tuple(r)
        else:
            assert snap.commit_kind == "COMPACT", f"snapshot {sid} is nobody's commit"
            assert sid in compacted or writers_compact, f"snapshot {sid} is nobody's commit"
            compacted.add(sid)
        states[sid] = dict(rows)
        assert snap.total_record_count >= len(rows)
        total = len(rows)
    for sid in ids:
        data = t.scan(snapshot_id=sid, select=["id", "v", "dt"])
        got = {i: (i, v, d) for i, v, d in zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt")))}
        assert data.num_rows == len(got), f"snapshot {sid} holds a key twice"
        assert got == states[sid], f"snapshot {sid} does not equal the commits replayed up to it"
        check_levels(t, sid)
    figures.compactions = len(compacted)
    final = t.scan(select=["id"]).column("id").to_pylist()
    expected = {r[0] for commits in writers.values() for op in commits for r in op["rows"]}
    figures.rows_expected = len(expected)
    figures.rows_lost = len(expected - set(final))
    assert figures.rows_lost == 0 and len(final) == total == len(expected)

    for name, got in results.items():
        if name.startswith("r"):
            last = 0
            for obs in got:
                sid = obs["snapshot_id"]
                assert sid >= last, f"reader {name}: the latest snapshot went back from {last} to {sid}"
                last = sid
                want = sorted([k, r[1]] for k, r in states[sid].items())
                assert sorted(obs["rows"]) == want, f"reader {name} saw a state of snapshot {sid} that is not its own"
            figures.reads += len(got)
    return states
