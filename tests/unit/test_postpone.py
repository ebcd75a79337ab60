"""Postpone-bucket tables (core.postpone, core.ops.postpone_compact): the pure rules, a
concurrent postpone write during a compaction, and kills at every mutation of a compaction."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from core.commit import base_entries
from core.errors import UsageError
from core.postpone import (binary_row_bytes, bucket_dir_name, default_bucket_num, estimated_bucket_num,
                           partition_bucket_counts, replay_order)
from core.types import parse_type
from core.table_handle import TableHandle
from lakectl.app import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_names_counts_and_replay_order() -> None:
    assert bucket_dir_name(-2) == "bucket-postpone" and bucket_dir_name(3) == "bucket-3"
    assert default_bucket_num({}) is None and default_bucket_num({"postpone.default-bucket-num": "4"}) == 4
    with pytest.raises(UsageError, match="postpone.default-bucket-num"):
        default_bucket_num({"postpone.default-bucket-num": "0"})
    # pypaimon 2.1's estimate: rows over the row target, else binary size over 1 GB; 1 to 2048
    assert estimated_bucket_num({}, 10**6, 10**6 * 40) == 1
    assert estimated_bucket_num({}, 10**8, 3 * 2**30 + 1) == 4
    assert estimated_bucket_num({"postpone.target-size-per-bucket": "1 mb"}, 10, 5 * 2**20) == 5
    assert estimated_bucket_num({"postpone.target-row-num-per-bucket": "10"}, 25, 10**12) == 3
    assert estimated_bucket_num({"postpone.target-row-num-per-bucket": "1",
                                 "postpone.batch-write-fixed-bucket.max-parallelism": "8"}, 25, 0) == 8
    schema = [SimpleNamespace(name="id", type=parse_type("INT")), SimpleNamespace(name="s", type=parse_type("STRING")),
              SimpleNamespace(name="d", type=parse_type("DECIMAL(20, 2)")),
              SimpleNamespace(name="t", type=parse_type("TIMESTAMP(6)"))]
    table = pa.table({"id": [1, 2], "s": ["short", "a string of 17 b."], "d": [None, None], "t": [None, None]})
    # per row: 8 bytes of null bits + 4 slots of 8, 16 (DECIMAL(20)) and 8 (TIMESTAMP(6)); plus 24 for the long string
    assert binary_row_bytes(table, schema) == 2 * (8 + 32 + 16 + 8) + 24
    entries = [SimpleNamespace(partition=b"a", bucket=-2, total_buckets=-2),
               SimpleNamespace(partition=b"a", bucket=1, total_buckets=4),
               SimpleNamespace(partition=b"b", bucket=-2, total_buckets=-2)]
    assert partition_bucket_counts(entries) == {b"a": 4}

    def f(name: str, created: int, seq: int) -> Any:
        return SimpleNamespace(file_name=name, creation_time=created, min_sequence_number=seq)

    # creation time first; files of one millisecond keep their manifest (commit) order
    files = [f("data--u-x-s-9-w-b-0.avro", 5, 0), f("data--u-y-s-2-w-a-0.avro", 3, 0),
             f("data--u-x-s-1-w-c-0.avro", 5, 0)]
    assert [x.file_name for x in replay_order(files)] == ["data--u-y-s-2-w-a-0.avro", "data--u-x-s-9-w-b-0.avro",
                                                          "data--u-x-s-1-w-c-0.avro"]


def cli(wh: Path, *args: Any, input: str | None = None) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["--warehouse", str(wh), "--format", "jsonl", *map(str, args)], input=input,
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def make_table(wh: Path) -> list[tuple[int, str]]:
    cli(wh, "create", "db.t", "--schema", "id INT, v STRING", "--primary-key", "id", "--option", "bucket=-2",
        "--option", "postpone.default-bucket-num=2")
    cli(wh, "write", "db.t", "-i", "-", "--input-format", "jsonl",
        input="".join(json.dumps({"id": i, "v": f"v{i}"}) + "\n" for i in range(20)))
    cli(wh, "write", "db.t", "-i", "-", "--input-format", "jsonl",
        input="".join(json.dumps({"id": i, "v": f"w{i}"}) + "\n" for i in range(0, 20, 2)))
    return sorted((i, f"w{i}" if i % 2 == 0 else f"v{i}") for i in range(20))


def rows(wh: Path) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in cli(wh, "scan", "db.t"))


def test_a_write_during_the_compaction_is_kept_for_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A postpone write landing between the compaction's plan and its commit stays in
    bucket-postpone/ (the compaction deletes only the files it read); the next one moves it."""
    from core.ops import postpone_compact

    wh = tmp_path / "wh"
    expected = make_table(wh)
    real = postpone_compact._write_partition
    landed = []

    def write_meanwhile(*args: Any) -> Any:
        out = real(*args)
        if not landed:
            landed.append(cli(wh, "write", "db.t", "-i", "-", "--input-format", "jsonl",
                              input='{"id": 100, "v": "late"}\n'))
        return out

    monkeypatch.setattr(postpone_compact, "_write_partition", write_meanwhile)
    cli(wh, "compact", "db.t")
    assert rows(wh) == expected  # the late row waits
    table = TableHandle.open("db.t", warehouse=str(wh))
    waiting = [e for e in base_entries(table.manifests(), table.latest_snapshot(), table.snapshots)
               if e.bucket == -2]
    assert len(waiting) == 1 and waiting[0].file.row_count == 1
    cli(wh, "compact", "db.t")
    assert rows(wh) == sorted(expected + [(100, "late")])


def _lakectl(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "lakectl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**clean, "PYTHONPATH": str(REPO), "HOME": str(cwd), **env})


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["kill", "fail"])
def test_a_compaction_killed_at_any_mutation_leaves_a_readable_table_and_a_rerun_finishes(tmp_path: Path,
                                                                                          kind: str) -> None:
    """Killed (SIGKILL) or failing (an OSError) before each storage mutation of its own."""
    template = tmp_path / "template"
    expected = make_table(template)
    kills = 0
    for n in range(1, 60):
        wh = tmp_path / f"wh-{n}"
        shutil.copytree(template, wh)
        killed = _lakectl(["-w", str(wh), "compact", "db.t"], tmp_path, LAKECTL_FAULT=f"{kind}:mutation:{n}")
        if killed.returncode == 0:
            break
        assert killed.returncode == (-9 if kind == "kill" else 1), killed.stderr
        assert kind == "kill" or "injected fault" in killed.stderr, killed.stderr
        kills += 1
        # The last snapshot reads whole: before the postpone commit nothing is visible yet
        # (Paimon's batch read), after it every row.
        assert rows(wh) in ([], expected), n
        cli(wh, "compact", "db.t")
        assert rows(wh) == expected, n
        table = TableHandle.open("db.t", warehouse=str(wh))
        live = base_entries(table.manifests(), table.latest_snapshot(), table.snapshots)
        assert live and all(e.bucket >= 0 and e.total_buckets == 2 for e in live), n
        assert cli(wh, "check", "db.t")[0]["ok"], n
    print(f"\npostpone compaction: {kind} at each of its {kills} mutations, then rerun")
    assert kills >= 5, kills


def test_maintain_plans_the_postpone_compaction_and_health_recommends_it(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    expected = make_table(wh)
    health = cli(wh, "health", "db.t")[0]
    assert health["postponed_files"] == 2 and health["max_sorted_runs"] == 0
    assert any("postpone" in r["problem"] and "compact" in r["command"] for r in health["recommendations"])
    planned = cli(wh, "maintain", "db.t", "--dry-run")[0]
    compact = [a for a in planned["actions"] if a["verb"] == "compact"]
    assert compact and "postponed" in compact[0]["reason"] and compact[0]["detail"]["postponed_files"] == 2
    assert rows(wh) == []  # a dry run moves nothing
    cli(wh, "maintain", "db.t")
    assert rows(wh) == expected
    assert cli(wh, "health", "db.t")[0]["postponed_files"] == 0
    assert not [a for a in cli(wh, "maintain", "db.t", "--dry-run")[0]["actions"] if a["verb"] == "compact"]


@pytest.mark.slow
def test_a_compaction_stalled_at_each_mutation_next_to_other_commands(tmp_path: Path) -> None:
    """The stall matrix of the postpone compaction (the stall explorer's template is not a
    postpone table): held before each of its mutations while a write, another compaction, a
    rollback or an aggressive expire runs to its end, then let go. Whatever the order, the table
    reads whole, check finds nothing, and after one more compaction it holds exactly what the
    commands that exited 0 mean: a write's rows on top (its file is newer than every file the
    compaction replays), a rollback to snapshot 1 the first write's rows only, the rest nothing."""
    template = tmp_path / "template"
    expected = make_table(template)
    first = sorted((i, f"v{i}") for i in range(20))
    trace = tmp_path / "trace"
    shutil.copytree(template, tmp_path / "traced")
    assert _lakectl(["-w", str(tmp_path / "traced"), "compact", "db.t"], tmp_path,
                    LAKECTL_FAULT_TRACE=str(trace)).returncode == 0
    points = len(trace.read_text().splitlines())
    assert points >= 5, trace.read_text()
    late = '{"id": 0, "v": "late"}\n{"id": 100, "v": "late"}\n'
    others: dict[str, tuple[list[str], Any]] = {
        "write": (["write", "db.t", "-i", "-", "--input-format", "jsonl"],
                  sorted([r for r in expected if r[0] != 0] + [(0, "late"), (100, "late")])),
        "compact": (["compact", "db.t"], expected),
        "rollback": (["rollback", "db.t", "--snapshot-id", "1"], first),
        "expire": (["expire", "db.t", "--retain-max", "1", "--retain-min", "1", "--older-than", "0s"], expected),
    }
    for n in range(1, points + 1):
        for b, (argv, after_b) in others.items():
            wh = tmp_path / f"s{n}-{b}"
            shutil.copytree(template, wh)
            stall = tmp_path / f"stall-{n}-{b}"
            clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
            a = subprocess.Popen([sys.executable, "-m", "lakectl", "-w", str(wh), "compact", "db.t"], cwd=tmp_path,
                                 env={**clean, "PYTHONPATH": str(REPO), "HOME": str(tmp_path),
                                      "LAKECTL_FAULT": f"stall:mutation:{n}", "LAKECTL_STALL_FILE": str(stall),
                                      "LAKECTL_REWRITE_WAIT_SECONDS": "1"},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            while not stall.exists():
                assert a.poll() is None, (n, b, a.communicate())
            code_b = runner.invoke(app, ["--warehouse", str(wh), "--format", "jsonl", *argv],
                                   input=late if b == "write" else None).exit_code
            assert code_b in (0, 4), (n, b, code_b)
            stall.unlink()
            _, err = a.communicate(timeout=120)
            assert a.returncode in (0, 4), (n, b, err)
            assert rows(wh) in ([], first, expected, after_b) or b == "write", (n, b)
            assert cli(wh, "check", "db.t")[0]["ok"], (n, b)
            cli(wh, "compact", "db.t")
            assert rows(wh) == (after_b if code_b == 0 else expected), (n, b, code_b, a.returncode)
