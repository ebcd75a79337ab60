"""``lakectl expire-partitions`` and universal ``lakectl compact`` through CliRunner, and both
console scripts killed at every mutating file op (LAKECTL_KILL_AFTER_WRITES)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner, Result

from core.ops.create import create
from core.snapshot import OVERWRITE
from core.table import Table
from lakectl.app import app

runner = CliRunner()
LAKECTL = Path("/work/main/.venv/bin/lakectl")


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def as_json(wh: Path, *args: Any) -> dict[str, Any]:
    result = invoke("--warehouse", wh, "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def dated(wh: Path, options: dict[str, str] | None = None) -> Table:
    t = Table.locate("db.events", warehouse=str(wh))
    create(t, "id BIGINT, dt STRING", partition_keys=["dt"], options={"write-only": "true", **(options or {})})
    for dt in ("2000-01-01", "2000-01-02", "2999-01-01"):
        t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "dt": [dt, dt]}))
    return t


def keyed(wh: Path, writes: int) -> Table:
    t = Table.locate("db.keyed", warehouse=str(wh))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for w in range(writes):
        t.write(pa.table({"id": pa.array([w, w + 100], pa.int64()), "v": [f"v{w}", "x"]}))
    return t


def test_expire_partitions_json_dry_run_then_commit(tmp_path: Path) -> None:
    t = dated(tmp_path / "wh")
    dry = as_json(tmp_path / "wh", "expire-partitions", "db.events", "--expiration-time", "7d", "--dry-run")
    assert dry["dry_run"] and dry["snapshot_id"] is None
    assert dry["partitions"] == [{"dt": "2000-01-01"}, {"dt": "2000-01-02"}] and t.latest_snapshot().id == 3
    one = as_json(tmp_path / "wh", "expire-partitions", "db.events", "--expiration-time", "7d", "--max-expires", "1")
    assert one["snapshot_id"] == 4 and one["partitions"] == [{"dt": "2000-01-01"}] and one["files_deleted"] == 1
    assert t.latest_snapshot().commit_kind == OVERWRITE


def test_expire_partitions_usage_errors_exit_2(tmp_path: Path) -> None:
    dated(tmp_path / "wh")
    no_time = invoke("--warehouse", tmp_path / "wh", "expire-partitions", "db.events")
    assert no_time.exit_code == 2 and "expiration time" in no_time.stderr
    bad = invoke("--warehouse", tmp_path / "wh", "expire-partitions", "db.events", "--expiration-time", "soon")
    assert bad.exit_code == 2 and "duration" in bad.stderr
    missing = invoke("--warehouse", tmp_path / "wh", "expire-partitions", "db.nope", "--expiration-time", "1d")
    assert missing.exit_code == 3


def test_unparsable_partitions_exit_2(tmp_path: Path) -> None:
    dated(tmp_path / "wh", {"partition.timestamp-formatter": "yyyyMMdd"})
    result = invoke("--warehouse", tmp_path / "wh", "expire-partitions", "db.events", "--expiration-time", "1d")
    assert result.exit_code == 2 and "never expire" in result.stderr


def test_compact_without_full_is_universal(tmp_path: Path) -> None:
    t = keyed(tmp_path / "wh", 4)
    assert as_json(tmp_path / "wh", "compact", "db.keyed")["snapshot_id"] is None  # 4 runs < trigger 5
    t.write(pa.table({"id": pa.array([9], pa.int64()), "v": ["y"]}))
    result = as_json(tmp_path / "wh", "compact", "db.keyed")
    assert result["snapshot_id"] == 6 and result["files_before"] == 5


def test_help_lists_expire_partitions() -> None:
    result = invoke("expire-partitions", "--help")
    assert result.exit_code == 0 and "--expiration-time" in result.stdout and "--max-expires" in result.stdout


# ---- crash safety ---------------------------------------------------------------------------
def _run(wh: Path, args: list[str], kill_after: int | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["HOME"] = str(wh.parent / "home")
    if kill_after is not None:
        env["LAKECTL_KILL_AFTER_WRITES"] = str(kill_after)
    return subprocess.run([str(LAKECTL), "--warehouse", str(wh), "--format", "json", *args],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["compact", "expire-partitions"])
def test_killed_at_every_write_leaves_a_readable_table_and_a_rerun_completes(tmp_path: Path, command: str) -> None:
    for k in range(1, 60):
        wh = tmp_path / f"k{k}" / "wh"
        if command == "compact":
            t = keyed(wh, 5)
            args = ["compact", "db.keyed"]
        else:
            t = dated(wh)
            args = ["expire-partitions", "db.events", "--expiration-time", "7d"]
        expected_before = sorted(map(str, t.scan().to_pylist()))
        proc = _run(wh, args, k)
        latest = Table.open(t.name, warehouse=str(wh)).latest_snapshot()
        rows = Table.open(t.name, warehouse=str(wh)).scan(snapshot_id=latest.id).to_pylist()
        if proc.returncode == 0:
            assert k > 1
            break  # k exceeds the command's writes: it completed
        assert proc.returncode < 0 or proc.returncode == 137, proc.stderr
        if latest.id == 5 if command == "compact" else latest.id == 3:
            assert sorted(map(str, rows)) == expected_before
        rerun = _run(wh, args, None)
        assert rerun.returncode == 0, rerun.stderr
        after = Table.open(t.name, warehouse=str(wh))
        if command == "compact":
            assert sorted(map(str, after.scan().to_pylist())) == expected_before
        else:
            assert {r["dt"] for r in after.scan().to_pylist()} == {"2999-01-01"}
    else:
        pytest.fail("the command never completed")
