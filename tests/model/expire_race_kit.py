"""Cron ``expire`` next to live writers, through the installed console script; shared by
tests/model/test_expire_race.py (local files) and tests/s3/test_s3_expire_race.py (S3).

``stalled_write_reproduction`` is issue 24's user report, step by step: a ``lakectl write``
held just before it publishes ``snapshot-(L+1)`` (``LAKECTL_FAULT=stall:publish:1``), three
other writes, ``expire --retain-max 1 --retain-min 1 --older-than 0s`` removing L..L+2, then
the stalled write goes on. It must exit 0 with its rows visible exactly once, the table
whole (``check``), the ids gapless and LATEST the newest.

``expire_race`` runs writers, a compactor, an aggressive expirer, a deleter and a reader as
console-script loops for a fixed time; ``check_race`` holds the claims against a model (the
keys each successful write added, the seed keys each successful delete removed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

LAKECTL = Path(sys.executable).parent / "lakectl"
REPO = Path(__file__).resolve().parents[2]
TABLE = "db.t"
SCHEMA = "id BIGINT, v STRING, dt STRING"
# Commit retries that say why (core.commit / core.replan log them at INFO with -v).
RETRY_MARKS = ("lost, retrying", "lost a race against expire")
EXPIRE_MARKS = ("free only because expire had removed it", "expired by a concurrent expire",
                "went away while it was read")


class Lakectl:
    """The console script on one warehouse, with this checkout first on PYTHONPATH."""

    def __init__(self, warehouse: str, env: dict[str, str] | None = None) -> None:
        self.warehouse = warehouse
        self.env = {**os.environ, **(env or {}),
                    "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        for var in ("LAKECTL_FAULT", "LAKECTL_STALL_FILE", "LAKECTL_KILL_AFTER_WRITES"):
            self.env.pop(var, None)

    def argv(self, *args: str) -> list[str]:
        return [str(LAKECTL), "-v", "--warehouse", self.warehouse, *args]

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), env=self.env, capture_output=True, text=True, timeout=timeout)

    def ok(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, f"lakectl {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
        return done.stdout

    def json(self, *args: str) -> object:
        return json.loads(self.ok("--format", "json", *args))

    def rows(self) -> list[tuple[int, str, str]]:
        out = self.json("scan", TABLE)
        assert isinstance(out, list)
        return sorted((r["id"], r["v"], r["dt"]) for r in out)


def csv_of(path: Path, rows: list[tuple[int, str, str]]) -> str:
    path.write_text("id,v,dt\n" + "".join(f"{i},{v},{d}\n" for i, v, d in rows))
    return str(path)


def snapshot_ids(lk: Lakectl) -> list[int]:
    out = lk.json("snapshots", TABLE)
    assert isinstance(out, list)
    return sorted(s["snapshot_id"] if "snapshot_id" in s else s["id"] for s in out)


# ---- the reproduction ---------------------------------------------------------------------
@dataclass
class Reproduction:
    base: int  # L: the latest snapshot the stalled write read
    expired: list[int]
    stalled_snapshot: int  # where the stalled write's rows landed in the end
    ids: list[int]
    stderr: str


def stalled_write_reproduction(lk: Lakectl, tmp: Path) -> Reproduction:
    lk.ok("create", TABLE, "--schema", SCHEMA, "--partition-by", "dt", "--option", "write-only=true")
    model: list[tuple[int, str, str]] = []

    def write(rows: list[tuple[int, str, str]], name: str) -> None:
        lk.ok("write", TABLE, "--input", csv_of(tmp / f"{name}.csv", rows))
        model.extend(rows)

    write([(1, "seed", "a"), (2, "seed", "b")], "seed")
    base = max(snapshot_ids(lk))
    stall = tmp / "stall"
    stalled_rows = [(100, "stalled", "a"), (101, "stalled", "b")]
    env = {**lk.env, "LAKECTL_FAULT": "stall:publish:1", "LAKECTL_STALL_FILE": str(stall),
           "LAKECTL_STALL_SECONDS": "120"}
    stalled = subprocess.Popen(lk.argv("--format", "json", "write", TABLE, "--input",
                                       csv_of(tmp / "stalled.csv", stalled_rows)),
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not stall.exists():
            assert stalled.poll() is None, f"the stalled write ended early:\n{stalled.communicate()[1]}"
            assert time.monotonic() < deadline, "the write never reached its publish"
            time.sleep(0.02)
        for w in range(3):
            write([(10 + w, f"w{w}", "a")], f"w{w}")
        assert max(snapshot_ids(lk)) == base + 3
        expired = lk.json("expire", TABLE, "--retain-max", "1", "--retain-min", "1", "--older-than", "0s")
        assert isinstance(expired, dict)
        assert expired["snapshots_expired"] == list(range(1, base + 3)), expired  # L..L+2 among them
    finally:
        stall.unlink(missing_ok=True)  # the write goes on
    out, err = stalled.communicate(timeout=180)
    assert stalled.returncode == 0, f"the stalled write exited {stalled.returncode}:\n{err}"
    model.extend(stalled_rows)
    result = json.loads(out)
    assert lk.rows() == sorted(model)
    return Reproduction(base, expired["snapshots_expired"], result["snapshot_id"], snapshot_ids(lk), err)


def check_reproduction(lk: Lakectl, table_dir: Path | None, repro: Reproduction) -> None:
    """The claims after the stalled write resumed (the rows were checked already)."""
    assert repro.stalled_snapshot == repro.base + 4  # retried on the real latest, L+3
    assert repro.ids == [repro.base + 3, repro.base + 4]  # gapless; L+1 (re-created) was undone
    assert "free only because expire had removed it" in repro.stderr
    assert lk.json("check", TABLE)["ok"] is True  # type: ignore[index]
    if table_dir is not None:
        assert (table_dir / "snapshot" / "LATEST").read_text().strip() == str(repro.base + 4)


# ---- the bounded race ---------------------------------------------------------------------
SEEDS = 60  # keys 1..SEEDS in partition "seed": only the deleter touches them
WORKER = Path(__file__).with_name("_expire_race_worker.py")


@dataclass
class RaceFigures:
    seconds: float = 0.0
    runs: Counter = field(default_factory=Counter)  # (role, exit code) -> count
    commits: int = 0  # snapshots published by writes, compactions and deletes
    retries: int = 0  # commit attempts lost and planned again (core's INFO lines)
    expire_races: int = 0  # races lost to expire (undone publishes, re-planned reads)
    snapshots_expired: int = 0
    reads: int = 0
    failures: list[str] = field(default_factory=list)  # unexpected outcomes

    def line(self, label: str) -> str:
        runs = ", ".join(f"{role} exit {code}: {n}" for (role, code), n in sorted(self.runs.items()))
        return (f"{label}: {self.seconds:.0f}s; runs {runs}; {self.commits} commits, {self.retries} retries "
                f"({self.expire_races} races lost to expire), {self.snapshots_expired} snapshots expired, "
                f"{self.reads} reads checked")


@dataclass
class RaceModel:
    written: dict[int, tuple[int, str, str]] = field(default_factory=dict)  # id -> row, of writes that succeeded
    deleted: set[int] = field(default_factory=set)  # seed ids of deletes that succeeded


def expire_race(lk: Lakectl, tmp: Path, *, writers: int = 3, seconds: float = 25.0,
                storage_options: dict | None = None, catalog: dict[str, str] | None = None,
                roles: list[dict] | None = None) -> tuple[RaceModel, RaceFigures]:
    """The table is created and seeded through the console script; the racing roles are
    long-lived worker processes looping through the core API (a console script's start-up
    would leave a handful of operations per role in the time), each recording the exit code
    the CLI would give for every operation. ``catalog``: the workers open the table through a
    catalog of these keys (the console script gets them from ``lk``'s environment);
    ``roles``: other roles than the writers, compactor, expirer, deleter and reader."""
    lk.ok("create", TABLE, "--schema", SCHEMA, "--partition-by", "dt",
          "--option", "write-only=true", "--option", "commit.max-retries=20")
    seed = [(k, "seed", "seed") for k in range(1, SEEDS + 1)]
    lk.ok("write", TABLE, "--input", csv_of(tmp / "seed.csv", seed))
    model, figures = RaceModel(), RaceFigures()
    model.written.update({r[0]: r for r in seed})
    if roles is None:
        roles = [{"role": "write", "w": w} for w in range(writers)]
        roles += [{"role": "compact"}, {"role": "expire"}, {"role": "delete", "seeds": SEEDS}, {"role": "scan"}]
    barrier = tmp / "barrier"
    barrier.mkdir()
    # Output to files: a pipe read only after the race would block a chatty worker at 64 KiB.
    outs = [tmp / f"worker-{i}.jsonl" for i in range(len(roles))]
    procs = []
    for i, (role, out_path) in enumerate(zip(roles, outs)):
        with open(out_path, "w") as out:
            procs.append(subprocess.Popen([sys.executable, str(WORKER), json.dumps(
                {**role, "name": str(i), "table": TABLE, "warehouse": lk.warehouse, "seconds": seconds,
                 "barrier": str(barrier), "storage_options": storage_options, "catalog": catalog})],
                env=lk.env, cwd=REPO, stdout=out, stderr=subprocess.PIPE, text=True))
    limit = time.monotonic() + 120
    while not all((barrier / f"ready-{i}").exists() for i in range(len(roles))):
        if time.monotonic() > limit or any(p.poll() is not None for p in procs):
            for p in procs:
                p.kill()
            raise AssertionError(f"workers did not reach the start line: {[p.communicate()[1][-500:] for p in procs]}")
        time.sleep(0.01)
    (barrier / "go").touch()
    began = time.monotonic()
    for proc, out_path in zip(procs, outs):
        _, err = proc.communicate(timeout=seconds + 300)
        if proc.returncode != 0:
            figures.failures.append(f"worker exited {proc.returncode}: {err[-3000:]}")
        for line in out_path.read_text().splitlines():
            _count(json.loads(line), model, figures)
    figures.seconds = time.monotonic() - began
    return model, figures


def _count(op: dict, model: RaceModel, figures: RaceFigures) -> None:
    role, code = op["op"], op["code"]
    figures.runs[(role, code)] += 1
    figures.retries += op["retries"]
    figures.expire_races += op["expire_races"]
    # Exit 4 only once retries ran out (its message says so); any exit 1 is a lost race
    # reported as damage, which is the bug.
    gave_up = code == 4 and ("did not land after" in op["error"] or "gave up after" in op["error"])
    if code != 0 and not gave_up:
        figures.failures.append(f"{role} exit {code}: {op.get('error')}")
    if code != 0:
        return
    if op.get("twice"):
        figures.failures.append(f"a scan saw ids twice: {op['twice']}")
    figures.reads += role == "scan"
    figures.snapshots_expired += len(op.get("expired", ()))
    figures.commits += op.get("snapshot_id") is not None
    if role == "write":
        model.written.update({r[0]: tuple(r) for r in op["rows"]})
    if role == "delete":
        model.deleted.add(op["deleted"])


def check_race(lk: Lakectl, model: RaceModel, figures: RaceFigures) -> None:
    """Every write that succeeded is in the table exactly once, every delete that succeeded
    took its key, nothing else changed; ``check`` passes; the ids are gapless."""
    assert not figures.failures, "\n\n".join(figures.failures[:3])
    rows = lk.rows()
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)), "a row is in the table twice"
    expected = sorted(r for k, r in model.written.items() if k not in model.deleted)
    assert rows == expected, (f"missing {sorted(set(expected) - set(rows))[:10]}, "
                              f"unexpected {sorted(set(rows) - set(expected))[:10]}")
    assert lk.json("check", TABLE)["ok"] is True  # type: ignore[index]
    ids_now = snapshot_ids(lk)
    assert ids_now == list(range(ids_now[0], ids_now[-1] + 1)), ids_now
