"""``lakectl write --stream``: flags, output, exit codes, signals, and the exactly-once proof.

The proof runs the installed console script on a pipe: the writer is SIGKILLed right before it
publishes the snapshot of its third batch (its data files and manifests are written by then),
restarted with the same commit user re-sending its last batch (``--input-offset``), or, in the
second variant, replaying its whole input; the table then holds every input record once (an
append table, so a record written twice would show twice), and ``remove-orphan-files``
removes exactly the files the killed attempt wrote. Expected rows come from the records the
test generated; the killed attempt's files are found on disk and read with pyarrow.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()
SCRIPT = shutil.which("lakectl", path=str(Path(sys.executable).parent))


@pytest.fixture
def wh(tmp_path: Path) -> str:
    warehouse = str(tmp_path / "wh")
    invoke("-w", warehouse, "create", "db.t", "--schema", "id BIGINT, v STRING, ts TIMESTAMP(3), dt STRING",
           "--partition-by", "dt", expect=0)
    return warehouse


def invoke(*args: Any, input: bytes | str | None = None, expect: int | None = None) -> Result:
    result = runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
    if expect is not None:
        assert result.exit_code == expect, (f"lakectl {' '.join(map(str, args))} exited {result.exit_code}\n"
                                            f"stdout: {result.stdout}\nstderr: {result.stderr}")
    return result


def records(first: int, last: int) -> list[dict]:
    """Records ``first`` .. ``last`` (1-based offsets in the stream) of the test's input."""
    return [{"id": i, "v": f"v{i}", "ts": f"2026-01-01 00:00:{i:02d}", "dt": f"d{i % 2}"}
            for i in range(first, last + 1)]


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def table_path(wh: str) -> Path:
    return Path(wh) / "db.db" / "t"


def scanned(wh: str) -> list[tuple]:
    rows = json.loads(invoke("-w", wh, "-f", "json", "scan", "db.t", expect=0).stdout)
    return sorted((r["id"], r["v"], r["dt"]) for r in rows)  # duplicates stay: an append table


def model(rows: list[dict]) -> list[tuple]:
    return sorted((r["id"], r["v"], r["dt"]) for r in rows)


def snapshots(wh: str) -> list[tuple[str, int]]:
    out = []
    snap_dir = table_path(wh) / "snapshot"
    if not snap_dir.exists():
        return out
    for name in sorted(os.listdir(snap_dir), key=lambda n: int(n.split("-")[1]) if n.startswith("snapshot-") else 0):
        if name.startswith("snapshot-"):
            snap = json.loads((snap_dir / name).read_text())
            out.append((snap["commitUser"], snap["commitIdentifier"]))
    return out


def snapshot_json(wh: str, sid: int) -> dict:
    return json.loads((table_path(wh) / "snapshot" / f"snapshot-{sid}").read_text())


def data_files(wh: str) -> set[Path]:
    return {p for p in table_path(wh).glob("dt=*/bucket-*/*.parquet")}


# ---- flags, output and exit codes (in-process) ----------------------------------------------
def test_commits_per_batch_as_json_lines(wh):
    rows = records(1, 5)
    result = invoke("-w", wh, "-f", "jsonl", "write", "db.t", "-i", "-", "--stream", "--commit-rows", "2",
                    "--commit-user", "feed", "--watermark-column", "ts", input=jsonl(rows), expect=0)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    commits, summary = lines[:-1], lines[-1]
    assert [(c["snapshot_id"], c["commit_identifier"], c["records_written"], c["skipped"], c["commit_user"])
            for c in commits] == [(1, 2, 2, False, "feed"), (2, 4, 2, False, "feed"), (3, 5, 1, False, "feed")]
    # ts is second i of 2026-01-01 UTC: each snapshot's watermark is its last record's.
    base = 1767225600000
    assert [c["watermark"] for c in commits] == [base + 2000, base + 4000, base + 5000]
    assert [snapshot_json(wh, c["snapshot_id"])["watermark"] for c in commits] == [c["watermark"] for c in commits]
    assert summary == {"table": "db.t", "branch": "main", "commit_user": "feed", "batches": 3, "batches_skipped": 0,
                       "records_written": 5, "records_skipped": 0, "snapshot_id": 3, "commit_identifier": 5,
                       "watermark": base + 5000, "stopped_by": "eof"}
    assert scanned(wh) == model(rows)


def test_a_follower_bounded_by_watermark_stops_before_the_first_snapshot_past_it(wh):
    rows = records(1, 6)  # ts = second i: the batches of 2 get watermarks 2s, 4s, 6s
    invoke("-w", wh, "write", "db.t", "-i", "-", "--stream", "--commit-rows", "2", "--watermark-column", "ts",
           input=jsonl(rows), expect=0)
    bound = 1767225600000 + 4500  # past snapshot 2's watermark, below snapshot 3's
    out = invoke("-w", wh, "-f", "jsonl", "scan", "db.t", "--follow", "--scan-mode", "from-snapshot",
                 "--snapshot-id", "1", "--bounded-watermark", bound, expect=0).stdout
    got = sorted((r["_snapshot_id"], r["id"]) for r in map(json.loads, out.splitlines()))
    assert got == [(1 + (r["id"] - 1) // 2, r["id"]) for r in rows[:4]]


def test_a_fresh_commit_user_is_printed_and_csv_rows_follow(wh):
    result = invoke("-w", wh, "-f", "csv", "write", "db.t", "-i", "-", "--stream", "--commit-rows", "3",
                    "--input-format", "csv", "--fill-missing-columns",  # the header has no ts
                    input="id,v,dt\n1,a,d1\n2,b,d0\n3,c,d1\n4,d,d0\n", expect=0)
    lines = result.stdout.splitlines()
    assert lines[0] == "table,branch,snapshot_id,commit_identifier,records_written,skipped,watermark,commit_user"
    user = lines[1].split(",")[-1]
    # (booleans as every CSV output writes them)
    assert lines[1:] == [f"db.t,main,1,3,3,false,,{user}", f"db.t,main,2,4,1,false,,{user}"]
    assert f"commit user: {user}" in result.stderr
    assert snapshots(wh) == [(user, 3), (user, 4)]


def test_table_format_prints_a_row_per_commit_then_the_summary(wh):
    out = invoke("-w", wh, "write", "db.t", "-i", "-", "--stream", "--commit-rows", "2", "--commit-user", "u",
                 input=jsonl(records(1, 3)), expect=0).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["snapshot_id", "commit_identifier", "records_written", "skipped", "watermark"]
    assert [line.split() for line in lines[1:3]] == [["1", "2", "2", "false", "-"], ["2", "3", "1", "false", "-"]]
    assert lines[3] == ""
    assert "stopped_by" in out and "eof" in out


@pytest.mark.parametrize("args, message", [
    (["--stream", "--input", "rows.jsonl"], "--stream reads stdin"),
    (["--stream", "-i", "-", "--mode", "overwrite"], "--mode overwrite"),
    (["--stream", "-i", "-", "--commit-interval", "soon"], "--commit-interval 'soon' is not a duration"),
    (["--stream", "-i", "-", "--commit-interval", "0s"], "longer than 0"),
    (["--stream", "-i", "-", "--commit-rows", "0"], "--commit-rows 0"),
    (["--stream", "-i", "-", "--input-format", "parquet"], "jsonl or csv"),
    (["--stream", "-i", "-", "--auto-create"], "create the table first"),
    (["--stream", "-i", "-", "--watermark-column", "v"], "must be a TIMESTAMP"),
    (["-i", "-", "--input-format", "jsonl", "--commit-rows", "5"], "add --stream"),
    (["-i", "-", "--input-format", "jsonl", "--input-offset", "5"], "add --stream"),
])
def test_usage_errors_exit_2(wh, args, message):
    result = invoke("-w", wh, "write", "db.t", *args, input=b"")
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr
    assert snapshots(wh) == []


def test_missing_table_exits_3(tmp_path):
    result = invoke("-w", str(tmp_path / "none"), "write", "db.t", "-i", "-", "--stream", input=b"")
    assert result.exit_code == 3


def test_bad_input_exits_5_and_keeps_the_earlier_batches(wh):
    text = jsonl(records(1, 2)) + b'{"id": 3, "v": "c", "dt": "d1", "oops": 1}\n'
    result = invoke("-w", wh, "-f", "jsonl", "write", "db.t", "-i", "-", "--stream", "--commit-rows", "2",
                    "--commit-user", "u", input=text)
    assert result.exit_code == 5
    assert "'oops' is not in table" in result.stderr
    assert [json.loads(line)["commit_identifier"] for line in result.stdout.splitlines()] == [2]
    assert snapshots(wh) == [("u", 2)]
    assert scanned(wh) == model(records(1, 2))


# ---- processes: the console script on a pipe ------------------------------------------------
def lakectl(wh: str, *args: Any, env: dict[str, str] | None = None) -> subprocess.Popen:
    if SCRIPT is None:
        pytest.skip("the lakectl console script is not installed next to the interpreter")
    return subprocess.Popen([SCRIPT, "-w", wh, *map(str, args)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})})


def stream(wh: str, *args: Any, env: dict[str, str] | None = None) -> subprocess.Popen:
    return lakectl(wh, "-f", "jsonl", "write", "db.t", "-i", "-", "--stream", *args, env=env)


@contextmanager
def running(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """The process, killed if still running when the block ends; its pipes closed."""
    with proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def read_line(proc: subprocess.Popen, timeout: float = 60) -> dict:
    """The next JSON line of a running process, waiting at most ``timeout`` seconds."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"no output within {timeout}s"
    line = proc.stdout.readline()
    assert line, f"the process ended: {proc.stderr.read().decode()}"
    return json.loads(line)


@pytest.mark.slow
@pytest.mark.parametrize("restart", ["resend-last-batch", "replay-from-start"])
def test_exactly_once_across_a_kill_before_the_commit(wh, restart):
    rows = records(1, 9)
    # kill:publish:3: SIGKILL right before the third snapshot publish of this process, of snapshot-3.
    with running(stream(wh, "--commit-rows", 3, "--commit-user", "feed",
                        env={"LAKECTL_FAULT": "kill:publish:3"})) as first:
        out, err = first.communicate(jsonl(rows), timeout=120)
    assert first.returncode == -signal.SIGKILL, err.decode()
    assert [json.loads(line)["commit_identifier"] for line in out.splitlines()] == [3, 6]
    assert snapshots(wh) == [("feed", 3), ("feed", 6)]
    assert scanned(wh) == model(rows[:6])

    # The killed attempt wrote its data files: exactly records 7..9, referenced by no snapshot.
    live = {f["file_name"] for f in json.loads(invoke("-w", wh, "-f", "json", "files", "db.t", expect=0).stdout)}
    assert live <= {p.name for p in data_files(wh)}
    orphans = {p.resolve() for p in data_files(wh) if p.name not in live}
    assert orphans, "the killed attempt left no data files"
    orphan_ids = sorted(i for p in orphans for i in pq.read_table(p, columns=["id"]).column("id").to_pylist())
    assert orphan_ids == [7, 8, 9]

    if restart == "resend-last-batch":
        # The producer re-sends its last batch: records 7..9, the first being record 6 + 1.
        with running(stream(wh, "--commit-rows", 3, "--commit-user", "feed", "--input-offset", 6)) as again:
            out, err = again.communicate(jsonl(rows[6:]), timeout=120)
        expected_ids = [("feed", 3), ("feed", 6), ("feed", 9)]
        written = [(9, 3, False)]
    else:
        # The producer replays everything, and the writer cuts batches of 4 this time:
        # 1..4 was committed (skipped), of 5..8 only 7 and 8 are new, then 9.
        with running(stream(wh, "--commit-rows", 4, "--commit-user", "feed")) as again:
            out, err = again.communicate(jsonl(rows), timeout=120)
        expected_ids = [("feed", 3), ("feed", 6), ("feed", 8), ("feed", 9)]
        written = [(4, 0, True), (8, 2, False), (9, 1, False)]
    assert again.returncode == 0, err.decode()
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(c["commit_identifier"], c["records_written"], c["skipped"]) for c in lines[:-1]] == written
    assert snapshots(wh) == expected_ids
    assert scanned(wh) == model(rows)  # every record exactly once

    result = json.loads(invoke("-w", wh, "-f", "json", "remove-orphan-files", "db.t", "--older-than", "0s", "--force",
                               expect=0).stdout)
    removed = {Path(p).resolve() for p in result["paths"]}
    assert orphans <= removed
    assert all(not p.exists() for p in orphans)
    assert any("/manifest/" in str(p) for p in removed)  # the killed commit's manifests went too
    assert scanned(wh) == model(rows)
    assert not (orphans & {p.resolve() for p in data_files(wh)})


@pytest.mark.slow
def test_commit_interval_commits_while_stdin_is_idle(wh):
    rows = records(1, 5)
    with running(stream(wh, "--commit-interval", "300ms", "--commit-user", "slow")) as proc:
        proc.stdin.write(jsonl(rows[:3]))
        proc.stdin.flush()
        first = read_line(proc)  # stdin stays open: only the interval can commit this
        assert (first["commit_identifier"], first["records_written"]) == (3, 3)
        assert snapshots(wh) == [("slow", 3)]
        assert proc.poll() is None
        proc.stdin.write(jsonl(rows[3:]))
        proc.stdin.flush()
        second = read_line(proc)
        assert (second["commit_identifier"], second["records_written"]) == (5, 2)
        proc.stdin.close()
        assert proc.wait(60) == 0
        summary = json.loads(proc.stdout.read().decode().splitlines()[-1])
        assert (summary["batches"], summary["records_written"], summary["stopped_by"]) == (2, 5, "eof")
    assert scanned(wh) == model(rows)


@pytest.mark.slow
@pytest.mark.parametrize("sig, code, committed", [(signal.SIGTERM, 0, 3), (signal.SIGINT, 130, 2)])
def test_sigterm_commits_the_pending_batch_and_sigint_does_not(wh, sig, code, committed):
    rows = records(1, 3)
    with running(stream(wh, "--commit-rows", 2, "--commit-user", "sig")) as proc:
        proc.stdin.write(jsonl(rows[:2]))
        proc.stdin.flush()
        assert read_line(proc)["commit_identifier"] == 2  # running, handlers installed
        proc.stdin.write(jsonl(rows[2:]))  # one record: below --commit-rows, pending
        proc.stdin.flush()
        time.sleep(1.0)  # the writer waits in select and reads it at once
        proc.send_signal(sig)
        assert proc.wait(60) == code, proc.stderr.read().decode()
        stdout, stderr = proc.stdout.read().decode(), proc.stderr.read().decode()
    assert [i for _, i in snapshots(wh)] == ([2, 3] if committed == 3 else [2])
    assert scanned(wh) == model(rows[:committed])
    if sig == signal.SIGTERM:
        summary = json.loads(stdout.splitlines()[-1])
        assert (summary["stopped_by"], summary["commit_identifier"]) == ("signal", 3)
    else:
        assert "interrupted" in stderr
