"""``lakectl expire`` through CliRunner on real tables: JSON output, effects, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner, Result

from core.ops.create import create
from core.table import Table
from lakectl.app import app

runner = CliRunner()


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def table_with(tmp_path: Path, n: int) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for i in range(n):
        t.write(pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]}))
    return t


def test_expire_dry_run_then_real(tmp_path: Path) -> None:
    t = table_with(tmp_path, 5)
    wh = str(tmp_path / "wh")
    args = ["expire", "db.t", "-w", wh, "--retain-min", "2", "--older-than", "0s", "--format", "json"]
    dry = invoke(*args, "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    out = json.loads(dry.stdout)
    assert out["snapshots_expired"] == [1, 2, 3] and out["dry_run"] is True
    assert t.snapshots.list_ids() == [1, 2, 3, 4, 5]
    real = invoke(*args)
    assert real.exit_code == 0, real.stderr
    assert json.loads(real.stdout) == {**out, "dry_run": False}
    assert t.snapshots.list_ids() == [4, 5]
    assert sorted(r["id"] for r in t.scan().to_pylist()) == [0, 1, 2, 3, 4]
    limited = table_with(tmp_path / "x", 5)
    res = invoke("expire", "db.t", "-w", str(tmp_path / "x" / "wh"), "--retain-max", "3", "--retain-min", "1", "--max-deletes", "1",
                 "--format", "json")
    assert json.loads(res.stdout)["snapshots_expired"] == [1]
    assert limited.snapshots.list_ids() == [2, 3, 4, 5]


@pytest.mark.parametrize("flags, fragment", [
    (["--retain-min", "0"], "retain-min must be at least 1"),
    # not "pass --retain-min N (N <= -1)", a hint nobody can follow
    (["--retain-max", "-1"], "retain-max must be at least 1 (got -1)"),
    (["--retain-min", "3", "--retain-max", "2"], "must not be smaller than retain-min"),
    (["--older-than", "soon"], "neither a duration"),
    # Paimon's default retain-min (10) against a smaller --retain-max: the refusal says where
    # the 10 comes from and how to get past it
    (["--retain-max", "3"], "retain-max (3) must not be smaller than retain-min (10): retain-min comes from "
                            "the table option snapshot.num-retained.min (10); pass --retain-min N (N <= 3)"),
])
def test_expire_refusals_exit_2(tmp_path: Path, flags: list[str], fragment: str) -> None:
    t = table_with(tmp_path, 3)
    res = invoke("expire", "db.t", "-w", str(tmp_path / "wh"), *flags)
    assert res.exit_code == 2 and fragment in res.stderr, res.stderr
    assert t.snapshots.list_ids() == [1, 2, 3]


def test_following_the_retain_min_hint_works(tmp_path: Path) -> None:
    t = table_with(tmp_path, 5)
    res = invoke("expire", "db.t", "-w", str(tmp_path / "wh"), "--retain-max", "3", "--retain-min", "1", "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["snapshots_expired"] == [1, 2] and t.snapshots.list_ids() == [3, 4, 5]


def test_expire_missing_table_exit_3(tmp_path: Path) -> None:
    res = invoke("expire", "db.nope", "-w", str(tmp_path / "wh"))
    assert res.exit_code == 3


def test_the_cron_script_runs_on_a_fresh_table_with_default_options(tmp_path: Path) -> None:
    """Issue 26's cron script: write; compact; expire --retain-max 3 --retain-min 1; check, each
    -f json, on a table created with no options at all."""
    wh = str(tmp_path / "wh")

    def json_of(*args: str) -> Any:
        res = invoke("-w", wh, "-f", "json", *args)
        assert res.exit_code == 0, (args, res.stderr)
        return json.loads(res.stdout)

    json_of("create", "db.cron", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id")
    rows = tmp_path / "rows.csv"
    for n in range(5):
        rows.write_text(f"id,v\n{n},v{n}\n")
        assert json_of("write", "db.cron", "-i", str(rows))["snapshot_id"] == n + 1
    compacted = json_of("compact", "db.cron")
    assert (compacted["table"], compacted["branch"]) == ("db.cron", "main")
    # (the fifth write's own maintenance may have compacted already: count what is there)
    latest = max(s["snapshot_id"] for s in json_of("snapshots", "db.cron"))
    expired = json_of("expire", "db.cron", "--retain-max", "3", "--retain-min", "1")
    # retain-max keeps the newest three whatever their age (snapshot.time-retained is 1h)
    assert expired["snapshots_expired"] == list(range(1, latest - 2))
    assert json_of("check", "db.cron")["ok"] is True
    assert sorted(r["id"] for r in json_of("scan", "db.cron")) == [0, 1, 2, 3, 4]
