"""``lakectl write --stream``: a commit user's progress survives snapshot expiry (issue 43, case 8).

The scenario: a stream commits batches and is killed; before it restarts with its whole input
replayed, other writes commit and an aggressive expire removes every snapshot of the stream.
The restart must skip exactly what was committed (the commit user's progress marker says
so), refuse with exit 2 naming ``--input-offset`` where nothing can tell, and never write a
record twice. Expected rows come from the records the test generated; the table is an append
table, so a record written twice shows twice.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()
SCRIPT = shutil.which("lakectl", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.slow  # console-script processes


@pytest.fixture
def wh(tmp_path: Path) -> str:
    warehouse = str(tmp_path / "wh")
    invoke("-w", warehouse, "create", "db.t", "--schema", "id BIGINT, v STRING, dt STRING", "--partition-by", "dt",
           expect=0)
    return warehouse


def invoke(*args: Any, input: bytes | None = None, expect: int | None = None) -> Result:
    result = runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
    if expect is not None:
        assert result.exit_code == expect, (f"lakectl {' '.join(map(str, args))} exited {result.exit_code}\n"
                                            f"stdout: {result.stdout}\nstderr: {result.stderr}")
    return result


def records(first: int, last: int, tag: str = "feed") -> list[dict]:
    """Records ``first`` .. ``last`` (1-based offsets in the stream)."""
    return [{"id": i, "v": f"{tag}{i}", "dt": f"d{i % 2}"} for i in range(first, last + 1)]


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def scanned(wh: str) -> list[tuple]:
    rows = json.loads(invoke("-w", wh, "-f", "json", "scan", "db.t", expect=0).stdout)
    return sorted((r["id"], r["v"], r["dt"]) for r in rows)  # duplicates stay: an append table


def model(rows: list[dict]) -> list[tuple]:
    return sorted((r["id"], r["v"], r["dt"]) for r in rows)


def marker_path(wh: str, user: str = "feed") -> Path:
    return Path(wh) / "db.db" / "t" / "commit-user" / f"user-{user}"


def snapshot_ids(wh: str) -> list[int]:
    return sorted(s["snapshot_id"] for s in json.loads(invoke("-w", wh, "-f", "json", "snapshots", "db.t",
                                                              expect=0).stdout))


def stream(wh: str, *args: Any, data: bytes, env: dict[str, str] | None = None) -> tuple[int, list[dict], str]:
    """Run the console script's streaming write to the end of ``data``: exit code, JSON lines, stderr."""
    if SCRIPT is None:
        pytest.skip("the lakectl console script is not installed next to the interpreter")
    done = subprocess.run([SCRIPT, "-w", wh, "-f", "jsonl", "write", "db.t", "-i", "-", "--stream", *map(str, args)],
                          input=data, capture_output=True, timeout=120, env={**os.environ, **(env or {})})
    return done.returncode, [json.loads(line) for line in done.stdout.decode().splitlines()], done.stderr.decode()


def stream_killed_after_three_batches(wh: str) -> None:
    """A stream of commit user ``feed`` commits records 1..30 in batches of 10, then is
    SIGKILLed while it waits for more input (stdin still open)."""
    if SCRIPT is None:
        pytest.skip("the lakectl console script is not installed next to the interpreter")
    with subprocess.Popen([SCRIPT, "-w", wh, "-f", "jsonl", "write", "db.t", "-i", "-", "--stream",
                           "--commit-rows", "10", "--commit-user", "feed"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        try:
            proc.stdin.write(jsonl(records(1, 30)))
            proc.stdin.flush()
            for expected in (10, 20, 30):
                ready, _, _ = select.select([proc.stdout], [], [], 120)
                assert ready, "no commit within 120s"
                line = proc.stdout.readline()
                assert line, proc.stderr.read().decode()
                assert json.loads(line)["commit_identifier"] == expected
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(60) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def others_write_then_expire(wh: str, tmp_path: Path, writes: int = 2) -> list[dict]:
    """Other writers commit, then an aggressive expire keeps the latest snapshot alone: no
    snapshot of ``feed`` is left. Returns the rows the other writers wrote."""
    written = []
    for n in range(writes):
        rows = records(1000 + 10 * n, 1000 + 10 * n + 2, tag="other")
        path = tmp_path / f"other{n}.jsonl"
        path.write_bytes(jsonl(rows))
        invoke("-w", wh, "write", "db.t", "-i", path, expect=0)
        written += rows
    invoke("-w", wh, "expire", "db.t", "--retain-max", 1, "--retain-min", 1, "--older-than", "0s", expect=0)
    latest = max(snapshot_ids(wh))
    assert snapshot_ids(wh) == [latest]
    assert (Path(wh) / "db.db" / "t" / "snapshot" / "EARLIEST").read_text().strip() == str(latest)
    return written


# ---- case 8 -----------------------------------------------------------------------------------
def test_a_restart_after_its_snapshots_expired_skips_exactly_what_was_committed(wh, tmp_path):
    stream_killed_after_three_batches(wh)
    others = others_write_then_expire(wh, tmp_path)

    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 60)))
    assert code == 0, err
    assert scanned(wh) == model(records(1, 60) + others)  # every record exactly once
    commits, summary = lines[:-1], lines[-1]
    assert [(c["commit_identifier"], c["records_written"], c["skipped"]) for c in commits] == \
        [(10, 0, True), (20, 0, True), (30, 0, True), (40, 10, False), (50, 10, False), (60, 10, False)]
    assert (summary["records_written"], summary["batches_skipped"], summary["commit_identifier"]) == (30, 3, 60)
    assert json.loads(marker_path(wh).read_text()) == {"commitUser": "feed", "commitIdentifier": 60,
                                                       "snapshotId": commits[-1]["snapshot_id"]}
    # The marker is no problem for check.
    assert invoke("-w", wh, "check", "db.t").exit_code == 0


def test_a_restart_with_neither_snapshot_nor_marker_is_refused_until_input_offset_says_where(wh, tmp_path):
    stream_killed_after_three_batches(wh)
    marker_path(wh).unlink()  # as a stream of an older lakectl left it: no marker
    others = others_write_then_expire(wh, tmp_path)
    before = snapshot_ids(wh)

    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 60)))
    assert code == 2
    assert lines == []
    errors = [line for line in err.splitlines() if line.strip()]
    assert len(errors) == 1, err
    assert "commit user feed" in errors[0] and "--input-offset N" in errors[0]
    assert snapshot_ids(wh) == before  # nothing committed
    assert not marker_path(wh).exists()

    # The producer re-sends from record 31 and says so.
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", "--input-offset", 30,
                              data=jsonl(records(31, 60)))
    assert code == 0, err
    assert [(c["commit_identifier"], c["records_written"]) for c in lines[:-1]] == [(40, 10), (50, 10), (60, 10)]
    assert scanned(wh) == model(records(1, 60) + others)
    # From now on the marker knows: a replay of everything adds nothing.
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 60)))
    assert code == 0, err
    assert all(c["skipped"] for c in lines[:-1])
    assert scanned(wh) == model(records(1, 60) + others)


def test_a_new_commit_user_starts_where_nothing_expired_and_needs_input_offset_where_something_did(wh, tmp_path):
    path = tmp_path / "first.jsonl"
    path.write_bytes(jsonl(records(500, 501, tag="other")))
    invoke("-w", wh, "write", "db.t", "-i", path, expect=0)
    code, lines, err = stream(wh, "--commit-rows", 5, "--commit-user", "new", data=jsonl(records(1, 5)))
    assert code == 0, err  # snapshot 1 is still there: "new" never committed anything
    assert [c["commit_identifier"] for c in lines[:-1]] == [5]

    invoke("-w", wh, "expire", "db.t", "--retain-max", 1, "--retain-min", 1, "--older-than", "0s", expect=0)
    code, lines, err = stream(wh, "--commit-rows", 5, "--commit-user", "newer", data=jsonl(records(1, 5)))
    assert code == 2 and "--input-offset" in err
    code, lines, err = stream(wh, "--commit-rows", 5, "--commit-user", "newer", "--input-offset", 0,
                              data=jsonl(records(1, 5, tag="newer")))
    assert code == 0, err
    assert [c["commit_identifier"] for c in lines[:-1]] == [5]
    # A stream without --commit-user gets a fresh UUID, which has committed nothing: it starts.
    code, lines, err = stream(wh, "--commit-rows", 5, data=jsonl(records(1, 2, tag="anon")))
    assert code == 0, err


def test_a_commit_in_flight_when_killed_whose_snapshots_expired_is_refused_not_guessed(wh, tmp_path):
    # Killed right before it publishes batch 4 (records 31..40): the marker says it was committing.
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 60)),
                              env={"LAKECTL_FAULT": "kill:publish:4"})
    assert code == -signal.SIGKILL, err
    assert [c["commit_identifier"] for c in lines] == [10, 20, 30]
    assert json.loads(marker_path(wh).read_text()) == {
        "commitUser": "feed", "commitIdentifier": 30, "snapshotId": 3,
        "committing": {"commitIdentifier": 40, "afterSnapshotId": 3}}
    others = others_write_then_expire(wh, tmp_path)  # snapshot 4, where batch 4 would be, is gone

    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 60)))
    assert code == 2
    assert "committing records up to 40" in err and "--input-offset" in err
    assert scanned(wh) == model(records(1, 30) + others)

    # The user looked: records up to 30 are there. Re-sent from 31, every record lands once.
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", "--input-offset", 30,
                              data=jsonl(records(31, 60)))
    assert code == 0, err
    assert scanned(wh) == model(records(1, 60) + others)
    assert "committing" not in json.loads(marker_path(wh).read_text())


def test_a_commit_in_flight_that_did_not_land_is_known_while_its_snapshots_are_there(wh):
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 60)),
                              env={"LAKECTL_FAULT": "kill:publish:4"})
    assert code == -signal.SIGKILL, err
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 60)))
    assert code == 0, err
    assert [(c["commit_identifier"], c["skipped"]) for c in lines[:-1]] == \
        [(10, True), (20, True), (30, True), (40, False), (50, False), (60, False)]
    assert scanned(wh) == model(records(1, 60))


def test_the_marker_never_moves_back(wh, tmp_path):
    stream_killed_after_three_batches(wh)
    # A producer replaying only part of what was committed: every batch is skipped, and the
    # marker keeps 30, not 20.
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 20)))
    assert code == 0, err
    assert [c["skipped"] for c in lines[:-1]] == [True, True]
    assert json.loads(marker_path(wh).read_text())["commitIdentifier"] == 30
    # A producer re-sending from an earlier record than it must (--input-offset 15): 16..30 dropped.
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", "--input-offset", 15,
                              data=jsonl(records(16, 35)))
    assert code == 0, err
    assert json.loads(marker_path(wh).read_text())["commitIdentifier"] == 35
    others = others_write_then_expire(wh, tmp_path)
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 40)))
    assert code == 0, err
    assert scanned(wh) == model(records(1, 40) + others)


def test_reset_progress_forgets_the_commit_user(wh, tmp_path):
    stream_killed_after_three_batches(wh)
    others = others_write_then_expire(wh, tmp_path)
    # With an empty input, --reset-progress only removes the marker ...
    code, lines, err = stream(wh, "--commit-user", "feed", "--reset-progress", data=b"")
    assert code == 0, err
    assert not marker_path(wh).exists()
    assert not marker_path(wh).parent.exists() or not any(marker_path(wh).parent.iterdir())
    # ... so the next plain restart cannot know, and says so.
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", data=jsonl(records(1, 60)))
    assert code == 2 and "--input-offset" in err
    # With an input, every record of it is written (the user truncated the table, say).
    invoke("-w", wh, "truncate", "db.t", expect=0)
    code, lines, err = stream(wh, "--commit-rows", 10, "--commit-user", "feed", "--reset-progress",
                              data=jsonl(records(1, 60)))
    assert code == 0, err
    assert scanned(wh) == model(records(1, 60))
    assert json.loads(marker_path(wh).read_text())["commitIdentifier"] == 60
    assert others  # written, then truncated


def test_reset_progress_applies_to_streams_only(wh, tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(jsonl(records(1, 1)))
    result = invoke("-w", wh, "write", "db.t", "-i", path, "--reset-progress")
    assert result.exit_code == 2 and "--reset-progress applies to streaming writes only" in result.stderr


def test_a_branch_keeps_its_markers_in_its_own_directory(wh, tmp_path):
    path = tmp_path / "first.jsonl"
    path.write_bytes(jsonl(records(500, 501, tag="other")))
    invoke("-w", wh, "write", "db.t", "-i", path, expect=0)
    invoke("-w", wh, "branch", "create", "db.t", "dev", expect=0)  # at snapshot 1: nothing expired
    code, lines, err = stream(wh, "--commit-rows", 5, "--commit-user", "feed", "--branch", "dev",
                              data=jsonl(records(1, 5)))
    assert code == 0, err
    branch_marker = Path(wh) / "db.db" / "t" / "branch" / "branch-dev" / "commit-user" / "user-feed"
    assert json.loads(branch_marker.read_text())["commitIdentifier"] == 5
    assert not marker_path(wh).exists()
    assert invoke("-w", wh, "check", "db.t").exit_code == 0


def test_remove_orphan_files_keeps_the_markers(wh):
    code, lines, err = stream(wh, "--commit-rows", 5, "--commit-user", "feed", data=jsonl(records(1, 5)))
    assert code == 0, err
    os.utime(marker_path(wh), (0, 0))  # as old as can be
    invoke("-w", wh, "remove-orphan-files", "db.t", "--older-than", "0s", "--force", expect=0)
    assert marker_path(wh).exists()
