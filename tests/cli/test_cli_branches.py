"""``lakectl branch`` and ``--branch`` through CliRunner on real tables: JSON output, effects,
exit codes. Expected rows come from what each test wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_kit import invoke, ok, scan, write_csv


@pytest.fixture()
def wh(tmp_path: Path) -> str:
    wh = str(tmp_path / "wh")
    assert invoke("-q", "create", "db.t", "-w", wh, "--schema", "id BIGINT, v STRING", "--primary-key", "id",
                  "--option", "bucket=1").exit_code == 0
    write_csv(tmp_path, wh, {1: "a", 2: "b"})
    assert invoke("-q", "tag", "create", "db.t", "t1", "-w", wh).exit_code == 0
    write_csv(tmp_path, wh, {2: "B", 3: "c"})
    return wh


def test_create_list_delete(tmp_path: Path, wh: str) -> None:
    created = ok("branch", "create", "db.t", "dev", "--tag", "t1", "-w", wh)
    assert created == {"table": "db.t", "branch": "dev", "earliest_snapshot_id": 1, "latest_snapshot_id": 1, "schema_id": 0,
                       "tags": 1, "record_count": 2}
    assert ok("branch", "create", "db.t", "head", "-w", wh)["latest_snapshot_id"] == 2
    assert ok("branch", "create", "db.t", "s1", "--snapshot-id", "1", "-w", wh)["tags"] == 0
    assert [b["branch"] for b in ok("branch", "list", "db.t", "-w", wh)] == ["dev", "head", "s1"]
    dry = ok("branch", "delete", "db.t", "s1", "--dry-run", "-w", wh)
    assert dry == {"table": "db.t", "branch": "s1", "files_deleted": 2, "dry_run": True,
                   "leftover": False}
    assert (Path(wh) / "db.db" / "t" / "branch" / "branch-s1").exists()
    assert ok("branch", "delete", "db.t", "s1", "-w", wh)["dry_run"] is False
    assert not (Path(wh) / "db.db" / "t" / "branch" / "branch-s1").exists()
    assert [b["branch"] for b in ok("branch", "list", "db.t", "-w", wh)] == ["dev", "head"]


@pytest.mark.parametrize("args,code,message", [
    (["branch", "create", "db.t", "dev"], 1, "error: branch dev of table db.t already exists"),
    (["branch", "create", "db.t", "x", "--tag", "nope"], 3, "error: tag nope"),
    (["branch", "create", "db.t", "x", "--snapshot-id", "9"], 3, "error: snapshot 9"),
    (["branch", "create", "db.t", "main"], 2, "error: branch name 'main' is the main branch"),
    (["branch", "create", "db.t", "x", "--tag", "t1", "--snapshot-id", "1"], 2, "error: give --tag or"),
    (["branch", "delete", "db.t", "nope"], 3, "error: branch nope of table db.t does not exist"),
    (["scan", "db.t", "--branch", "nope"], 3, "error: branch nope of table db.t does not exist"),
])
def test_errors(wh: str, args: list[str], code: int, message: str) -> None:
    ok("branch", "create", "db.t", "dev", "-w", wh)
    result = invoke(*args, "-w", wh)
    assert result.exit_code == code, result.stderr
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1


def test_write_scan_snapshots_on_a_branch(tmp_path: Path, wh: str) -> None:
    ok("branch", "create", "db.t", "dev", "--tag", "t1", "-w", wh)
    write_csv(tmp_path, wh, {1: "dev", 9: "z"}, "--branch", "dev")
    write_csv(tmp_path, wh, {4: "main"})
    assert scan(wh, "--branch", "dev") == {1: "dev", 2: "b", 9: "z"}
    assert scan(wh, "--branch", "dev", "--tag", "t1") == {1: "a", 2: "b"}
    assert scan(wh) == {1: "a", 2: "B", 3: "c", 4: "main"}
    assert [s["snapshot_id"] for s in ok("snapshots", "db.t", "--branch", "dev", "-w", wh)] == [2, 1]
    assert [s["snapshot_id"] for s in ok("snapshots", "db.t", "-w", wh)] == [3, 2, 1]
    # Tags and lookups follow the branch too.
    assert ok("tag", "create", "db.t", "d1", "--branch", "dev", "-w", wh)["snapshot_id"] == 2
    assert [t["tag"] for t in ok("tag", "list", "db.t", "-w", wh)] == ["t1"]
    assert [t["tag"] for t in ok("tag", "list", "db.t", "--branch", "dev", "-w", wh)] == ["d1", "t1"]
    looked = ok("lookup", "db.t", "--key", "id=9", "--branch", "dev", "-w", wh)
    assert [r["v"] for r in looked] == ["z"]
    assert ok("lookup", "db.t", "--key", "id=9", "-w", wh) == []


def test_expire_and_orphans_on_main_keep_the_branch(tmp_path: Path, wh: str) -> None:
    ok("branch", "create", "db.t", "dev", "--tag", "t1", "-w", wh)
    assert invoke("-q", "tag", "delete", "db.t", "t1", "-w", wh).exit_code == 0
    ok("compact", "db.t", "--full", "-w", wh)
    ok("expire", "db.t", "--retain-min", "1", "--retain-max", "1", "--older-than", "0s", "-w", wh)
    ok("remove-orphan-files", "db.t", "--older-than", "0s", "--force", "-w", wh)
    assert scan(wh, "--branch", "dev") == {1: "a", 2: "b"}
    assert scan(wh) == {1: "a", 2: "B", 3: "c"}


def test_fast_forward(tmp_path: Path, wh: str) -> None:
    ok("branch", "create", "db.t", "dev", "--tag", "t1", "-w", wh)
    write_csv(tmp_path, wh, {1: "dev", 9: "z"}, "--branch", "dev")
    dry = ok("branch", "fast-forward", "db.t", "dev", "--dry-run", "-w", wh)
    assert dry == {"table": "db.t", "branch": "dev", "start_snapshot_id": 1, "latest_before": 2, "latest_after": 2,
                   "snapshots_removed": [2], "snapshots_copied": [2], "schemas_copied": [], "tags_removed": ["t1"],
                   "tags_copied": ["t1"], "dry_run": True}
    assert scan(wh) == {1: "a", 2: "B", 3: "c"}
    assert ok("branch", "fast-forward", "db.t", "dev", "-w", wh)["dry_run"] is False
    assert scan(wh) == {1: "dev", 2: "b", 9: "z"} == scan(wh, "--branch", "dev")
    assert scan(wh, "--tag", "t1") == {1: "a", 2: "b"}
    result = invoke("branch", "fast-forward", "db.t", "nope", "-w", wh)
    assert result.exit_code == 3 and result.stderr.startswith("error: branch nope")


def test_compact_and_alter_schema_on_a_branch_leave_main_alone(tmp_path: Path, wh: str) -> None:
    ok("branch", "create", "db.t", "dev", "-w", wh)
    write_csv(tmp_path, wh, {5: "e"}, "--branch", "dev")
    assert ok("compact", "db.t", "--full", "--branch", "dev", "-w", wh)["snapshot_id"] == 4
    altered = ok("alter-schema", "db.t", "--add-column", "note STRING", "--branch", "dev", "-w", wh)
    assert (altered["previous_schema_id"], altered["schema_id"]) == (0, 1)
    kinds = [s["commit_kind"] for s in ok("snapshots", "db.t", "--branch", "dev", "-w", wh)]
    assert kinds == ["COMPACT", "APPEND", "APPEND"]
    assert [s["commit_kind"] for s in ok("snapshots", "db.t", "-w", wh)] == ["APPEND", "APPEND"]
    assert [s["schema_id"] for s in ok("schemas", "db.t", "-w", wh)] == [0]
    rows = ok("scan", "db.t", "--branch", "dev", "-w", wh)
    assert {r["id"]: (r["v"], r["note"]) for r in rows} == {1: ("a", None), 2: ("B", None), 3: ("c", None),
                                                            5: ("e", None)}
    assert scan(wh) == {1: "a", 2: "B", 3: "c"}
