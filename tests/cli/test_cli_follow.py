"""``lakectl scan --follow`` as whole processes: a follower process reads what writer
processes commit to the same table, checked against the change model of
``tests/model/follow_model.py`` (built from the written batches)."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
from follow_model import as_changes, lookup_changes, random_batches, stored_records  # noqa: E402

BIN = shutil.which("lakectl", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(BIN is None, reason="the lakectl console script is not installed")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    out.update(HOME=str(tmp_path / "home"), LAKECTL_WAREHOUSE=str(tmp_path / "wh"))
    return out


def lakectl(env: dict[str, str], *args: Any, cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def follower(env: dict[str, str], *args: Any, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([BIN, "scan", "db.t", "--follow", "--poll-interval", "100ms", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def write_batch(env: dict[str, str], cwd: Path, batch: list, n: int) -> int:
    path = cwd / f"batch-{n}.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "v", "op"])
        w.writerows([[key, value, kind] for kind, key, value in batch])
    out = lakectl(env, "write", "db.t", "-i", path, "--row-kind-column", "op", "-f", "json", cwd=cwd)
    return json.loads(out.stdout)["snapshot_id"]


def by_snapshot(lines: list[str]) -> dict[int, list]:
    rows: dict[int, list] = {}
    for line in lines:
        row = json.loads(line)
        rows.setdefault(row.pop("_snapshot_id"), []).append(row)
    return {sid: as_changes(r) for sid, r in rows.items()}


@pytest.mark.slow
@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_a_follower_process_sees_every_commit_of_writer_processes_once_in_order(
        env: dict[str, str], tmp_path: Path, producer: str) -> None:
    lakectl(env, "create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id",
            "-o", "bucket=2", "-o", f"changelog-producer={producer}", "-o", "num-sorted-run.compaction-trigger=3",
            cwd=tmp_path)
    rng = random.Random(42)
    batches = random_batches(rng, 6)
    state: dict[int, str] = {}
    expected = [lookup_changes(state, b) if producer == "lookup" else stored_records(b) for b in batches]
    readable = [e for e in expected if e]
    proc = follower(env, "--scan-mode", "from-snapshot", "--snapshot-id", 1, "--max-snapshots", len(readable),
                    "-f", "jsonl", cwd=tmp_path)
    try:
        commits = []
        for n, batch in enumerate(batches):
            time.sleep(rng.uniform(0, 0.3))
            commits.append(write_batch(env, tmp_path, batch, n))
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    seen = by_snapshot(stdout.splitlines())
    # lookup: each write's changes are in the COMPACT snapshot right after its APPEND (one writer
    # at a time here), as Java commits them
    after = 1 if producer == "lookup" else 0
    wanted = {sid + after: e for sid, e in zip(commits, expected) if e}
    assert list(seen) == sorted(seen) == list(wanted)  # each commit once, in commit order
    assert seen == wanted


def test_sigterm_ends_following_cleanly_and_keeps_the_consumer_position(env: dict[str, str], tmp_path: Path) -> None:
    lakectl(env, "create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id", cwd=tmp_path)
    first = write_batch(env, tmp_path, [("+I", 1, "a")], 0)
    proc = follower(env, "--consumer-id", "ops", "-f", "jsonl", cwd=tmp_path)
    deadline = time.monotonic() + 60
    consumer = tmp_path / "wh" / "db.db" / "t" / "consumer" / "consumer-ops"
    while not consumer.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert [json.loads(line) for line in stdout.splitlines()] == [
        {"_row_kind": "+I", "_snapshot_id": first, "id": 1, "v": "a"}]
    assert json.loads(consumer.read_text()) == {"nextSnapshot": first + 1}
    # The next run resumes after what was read, not with the latest in full.
    second = write_batch(env, tmp_path, [("+I", 2, "b")], 1)
    out = lakectl(env, "scan", "db.t", "--follow", "--consumer-id", "ops", "--max-snapshots", 1, "-f", "jsonl",
                  cwd=tmp_path)
    assert [json.loads(line) for line in out.stdout.splitlines()] == [
        {"_row_kind": "+I", "_snapshot_id": second, "id": 2, "v": "b"}]


def test_json_is_one_document_per_snapshot_and_csv_has_one_header(env: dict[str, str], tmp_path: Path) -> None:
    lakectl(env, "create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id", cwd=tmp_path)
    write_batch(env, tmp_path, [("+I", 1, "a"), ("+I", 2, "b")], 0)
    write_batch(env, tmp_path, [("-D", 1, "a")], 1)
    out = lakectl(env, "scan", "db.t", "--follow", "--scan-mode", "from-snapshot-full", "--snapshot-id", 1,
                  "--max-snapshots", 2, "-f", "json", cwd=tmp_path)
    docs = [json.loads(line) for line in out.stdout.splitlines()]
    assert docs == [
        {"table": "db.t", "branch": "main", "snapshot_id": 1, "commit_kind": "APPEND", "full": True, "watermark": None,
         "rows": [{"_row_kind": "+I", "id": 1, "v": "a"}, {"_row_kind": "+I", "id": 2, "v": "b"}]},
        {"table": "db.t", "branch": "main", "snapshot_id": 2, "commit_kind": "APPEND", "full": False, "watermark": None,
         "rows": [{"_row_kind": "-D", "id": 1, "v": "a"}]}]
    out = lakectl(env, "scan", "db.t", "--follow", "--scan-mode", "from-snapshot", "--snapshot-id", 1,
                  "--max-snapshots", 2, "-f", "csv", cwd=tmp_path)
    assert list(csv.reader(io.StringIO(out.stdout))) == [
        ["_row_kind", "_snapshot_id", "id", "v"], ["+I", "1", "1", "a"], ["+I", "1", "2", "b"],
        ["-D", "2", "1", "a"]]


@pytest.mark.parametrize("args, code, fragment", [
    (["--scan-mode", "latest"], 2, "--scan-mode needs --follow"),
    (["--consumer-id", "x"], 2, "--consumer-id needs --follow"),
    (["--follow", "--scan-mode", "sideways"], 2, "scan mode 'sideways' is not supported"),
    (["--follow", "--tag", "t1"], 2, "--follow takes no --tag"),
    (["--follow", "--scan-mode", "from-snapshot"], 2, "needs a snapshot id"),
    (["--follow", "--max-snapshots", "0"], 2, "--max-snapshots must be 1 or more"),
    (["--follow", "--poll-interval", "soon"], 2, "--poll-interval 'soon' is not a duration"),
    (["--follow", "--scan-mode", "from-snapshot", "--snapshot-id", "1", "--consumer-id", "a/b"], 2, "consumer id"),
])
def test_bad_follow_flags(env: dict[str, str], tmp_path: Path, args: list[str], code: int, fragment: str) -> None:
    lakectl(env, "create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id", cwd=tmp_path)
    proc = subprocess.run([BIN, "scan", "db.t", *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60)
    lines = proc.stderr.splitlines()
    assert proc.returncode == code and len(lines) == 1 and fragment in lines[0], proc.stderr


def test_consumer_list_reset_delete(env: dict[str, str], tmp_path: Path) -> None:
    lakectl(env, "create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id", cwd=tmp_path)
    for n in range(3):
        write_batch(env, tmp_path, [("+I", n, f"v{n}")], n)
    lakectl(env, "scan", "db.t", "--follow", "--scan-mode", "from-snapshot", "--snapshot-id", 1,
            "--consumer-id", "c", "--max-snapshots", 1, cwd=tmp_path)
    listed = json.loads(lakectl(env, "consumer", "list", "db.t", "-f", "json", cwd=tmp_path).stdout)
    assert [(c["consumer_id"], c["next_snapshot"], c["pending_snapshots"]) for c in listed] == [("c", 2, 2)]
    assert listed[0]["modified_millis"] > 0

    dry = json.loads(lakectl(env, "consumer", "reset", "db.t", "c", "--next-snapshot", 3, "--dry-run", "-f", "json",
                             cwd=tmp_path).stdout)
    assert (dry["next_snapshot_before"], dry["next_snapshot_after"], dry["dry_run"]) == (2, 3, True)
    lakectl(env, "consumer", "reset", "db.t", "c", "--next-snapshot", 3, cwd=tmp_path)
    out = lakectl(env, "scan", "db.t", "--follow", "--consumer-id", "c", "--max-snapshots", 1, "-f", "jsonl",
                  cwd=tmp_path)
    assert [json.loads(line)["_snapshot_id"] for line in out.stdout.splitlines()] == [3]

    lakectl(env, "consumer", "delete", "db.t", "c", "--dry-run", cwd=tmp_path)
    assert len(json.loads(lakectl(env, "consumer", "list", "db.t", "-f", "json", cwd=tmp_path).stdout)) == 1
    lakectl(env, "consumer", "delete", "db.t", "c", cwd=tmp_path)
    assert json.loads(lakectl(env, "consumer", "list", "db.t", "-f", "json", cwd=tmp_path).stdout) == []
    for args, code in ((["delete", "db.t", "c"], 3), (["reset", "db.t", "c", "--next-snapshot", 9], 2),
                       (["reset", "db.t", "a/b", "--next-snapshot", 1], 2)):
        proc = subprocess.run([BIN, "consumer", *map(str, args)], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=60)
        assert proc.returncode == code and proc.stderr.startswith("error: "), proc.stderr
