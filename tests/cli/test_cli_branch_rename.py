"""``lakectl branch rename`` through CliRunner and the console script: the branch keeps its
snapshots, tags and rows under the new name (and pypaimon reads it there); the refusals; a write
to the old name held before its commit fails whole once the branch moved, leaving nothing behind;
a rename waits for a command of several steps at work on the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_kit import console, held, invoke, ok

T = "db.t"


def _csv(tmp_path: Path, name: str, rows: dict[int, str]) -> Path:
    path = tmp_path / name
    path.write_text("id,v\n" + "".join(f"{i},{v}\n" for i, v in rows.items()))
    return path


def _table(tmp_path: Path) -> str:
    wh = str(tmp_path / "wh")
    ok("create", T, "-w", wh, "-s", "id BIGINT, v STRING", "--primary-key", "id")
    ok("write", T, "-w", wh, "-i", _csv(tmp_path, "main.csv", {1: "main", 2: "main"}))
    ok("branch", "create", T, "dev", "-w", wh)
    ok("write", T, "-w", wh, "-i", _csv(tmp_path, "dev.csv", {2: "dev", 3: "dev"}), "--branch", "dev")
    ok("tag", "create", T, "before", "--branch", "dev", "-w", wh)
    return wh


def _rows(wh: str, *args: str) -> dict[int, str]:
    return {r["id"]: r["v"] for r in ok("scan", T, "-w", wh, *args)}


def test_the_branch_keeps_its_history_under_the_new_name(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    snapshots = ok("snapshots", T, "-w", wh, "--branch", "dev")
    dry = ok("branch", "rename", T, "dev", "qa", "--dry-run", "-w", wh)
    assert dry == {"table": T, "branch": "dev", "new_name": "qa", "dry_run": True}
    assert [b["branch"] for b in ok("branch", "list", T, "-w", wh)] == ["dev"]
    assert ok("branch", "rename", T, "dev", "qa", "-w", wh)["dry_run"] is False
    assert [b["branch"] for b in ok("branch", "list", T, "-w", wh)] == ["qa"]
    assert _rows(wh, "--branch", "qa") == {1: "main", 2: "dev", 3: "dev"}
    assert _rows(wh, "--branch", "qa", "--tag", "before") == {1: "main", 2: "dev", 3: "dev"}
    moved = ok("snapshots", T, "-w", wh, "--branch", "qa")
    assert [(s["snapshot_id"], s["commit_time"]) for s in moved] == \
        [(s["snapshot_id"], s["commit_time"]) for s in snapshots]
    assert _rows(wh) == {1: "main", 2: "main"}
    gone = invoke("scan", T, "-w", wh, "--branch", "dev")
    assert gone.exit_code == 3
    ok("write", T, "-w", wh, "-i", _csv(tmp_path, "qa.csv", {4: "qa"}), "--branch", "qa")
    assert _rows(wh, "--branch", "qa")[4] == "qa"
    ok("check", T, "-w", wh)


def test_refusals(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    ok("branch", "create", T, "test", "-w", wh)
    for args, code, words in [(["dev", "test"], 1, "already exists"), (["nope", "x"], 3, "does not exist"),
                              (["dev", "main"], 2, "main branch"), (["dev", "dev"], 2, "already has that name")]:
        res = invoke("branch", "rename", T, *args, "-w", wh)
        assert (res.exit_code, words in res.stderr) == (code, True), res.stderr
    leftover = Path(wh) / "db.db" / "t" / "branch" / "branch-half"
    leftover.mkdir()
    (leftover / "UNFINISHED").write_text("{}")
    res = invoke("branch", "rename", T, "dev", "half", "-w", wh)
    assert res.exit_code == 1 and "branch delete" in res.stderr
    ok("alter-schema", T, "-w", wh, "--set-option", "scan.fallback-branch=dev")
    res = invoke("branch", "rename", T, "dev", "qa", "-w", wh)
    assert res.exit_code == 2 and "scan.fallback-branch" in res.stderr
    assert sorted(b["branch"] for b in ok("branch", "list", T, "-w", wh)) == ["dev", "test"]




@pytest.mark.slow
def test_a_write_to_the_old_name_held_before_its_commit_fails_whole(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    stall = tmp_path / "stall"
    write = console(wh, "write", T, "-i", str(_csv(tmp_path, "late.csv", {9: "late"})), "--branch", "dev",
                     LAKECTL_FAULT="stall:publish:1", LAKECTL_STALL_FILE=str(stall))
    held(write, stall)
    ok("branch", "rename", T, "dev", "qa", "-w", wh)
    stall.unlink()
    _, err = write.communicate(timeout=120)
    assert write.returncode == 4, err
    assert _rows(wh, "--branch", "qa") == {1: "main", 2: "dev", 3: "dev"}
    assert not (Path(wh) / "db.db" / "t" / "branch" / "branch-dev").exists()  # nothing re-made at the old name
    ok("check", T, "-w", wh)


@pytest.mark.slow
def test_it_waits_for_a_rollback_at_work_on_the_branch(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    ok("write", T, "-w", wh, "-i", _csv(tmp_path, "more.csv", {5: "more"}), "--branch", "dev")
    stall = tmp_path / "stall"
    rollback = console(wh, "rollback", T, "--snapshot-id", "2", "--branch", "dev",
                        LAKECTL_FAULT="stall:delete:1", LAKECTL_STALL_FILE=str(stall))
    held(rollback, stall)
    res = invoke("branch", "rename", T, "dev", "qa", "-w", wh)  # waits LAKECTL_REWRITE_WAIT_SECONDS, then 4
    assert res.exit_code == 4 and "roll back" in res.stderr, res.stderr
    stall.unlink()
    out, err = rollback.communicate(timeout=120)
    assert rollback.returncode == 0, err
    ok("branch", "rename", T, "dev", "qa", "-w", wh)
    assert _rows(wh, "--branch", "qa") == {1: "main", 2: "dev", 3: "dev"}
    assert json.loads(out)["target_snapshot_id"] == 2
