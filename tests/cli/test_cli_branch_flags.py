"""``--branch`` on rollback, expire, describe, files, partitions, buckets, manifests,
expire-tags, tag rename, consumer and clone, and ``check`` / ``check --repair`` on a table
with branches, through CliRunner: JSON output, effects on the branch only, exit codes.
Expected rows and counts come from what each test wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_kit import invoke, ok, scan, write_csv


MAIN = {1: "a", 2: "B", 3: "c"}  # main after the fixture's two writes
DEV_3 = {1: "dev", 2: "b", 8: "y", 9: "z"}  # dev after its first commit (snapshot 2)
DEV_4 = {**DEV_3, 7: "x"}  # and its second (snapshot 3)


@pytest.fixture()
def wh(tmp_path: Path) -> str:
    """Main: {1: a, 2: b} (1, tagged t1), then {2: B, 3: c} (2). Branch dev from t1 with two
    commits of its own (2: three rows; 3: one row), its snapshot 2 tagged d2."""
    wh = str(tmp_path / "wh")
    assert invoke("-q", "create", "db.t", "-w", wh, "--schema", "id BIGINT, v STRING", "--primary-key", "id",
                  "--option", "bucket=1").exit_code == 0
    write_csv(tmp_path, wh, {1: "a", 2: "b"})
    assert invoke("-q", "tag", "create", "db.t", "t1", "-w", wh).exit_code == 0
    write_csv(tmp_path, wh, {2: "B", 3: "c"})
    ok("branch", "create", "db.t", "dev", "--tag", "t1", "-w", wh)
    write_csv(tmp_path, wh, {1: "dev", 8: "y", 9: "z"}, "--branch", "dev")
    ok("tag", "create", "db.t", "d2", "--branch", "dev", "-w", wh)
    write_csv(tmp_path, wh, {7: "x"}, "--branch", "dev")
    return wh


def main_untouched(wh: str) -> None:
    assert scan(wh) == MAIN
    assert [s["snapshot_id"] for s in ok("snapshots", "db.t", "-w", wh)] == [2, 1]
    assert [t["tag"] for t in ok("tag", "list", "db.t", "-w", wh)] == ["t1"]


def test_rollback_on_a_branch(wh: str) -> None:
    assert scan(wh, "--branch", "dev") == DEV_4
    dry = ok("rollback", "db.t", "--branch", "dev", "--snapshot-id", "1", "--dry-run", "-w", wh)
    assert dry == {"table": "db.t", "branch": "dev", "target_snapshot_id": 1, "snapshots_removed": [3, 2],
                   "tags_removed": ["d2"], "dry_run": True, "as_latest": False, "new_snapshot_id": None}
    assert ok("rollback", "db.t", "--branch", "dev", "--tag", "d2", "-w", wh)["snapshots_removed"] == [3]
    assert scan(wh, "--branch", "dev") == DEV_3
    main_untouched(wh)
    # --timestamp picks among the branch's snapshots: at the time of its snapshot 1 (main's
    # 1, copied), not main's 2.
    first = ok("snapshots", "db.t", "--branch", "dev", "-w", wh)[-1]["commit_time_millis"]
    done = ok("rollback", "db.t", "--branch", "dev", "--timestamp", first, "-w", wh)
    assert done["target_snapshot_id"] == 1 and done["tags_removed"] == ["d2"]
    assert scan(wh, "--branch", "dev") == {1: "a", 2: "b"}
    main_untouched(wh)
    # The branch's tag t1 (copied at create) is the branch's: rollback to it works there.
    assert ok("rollback", "db.t", "--branch", "dev", "--tag", "t1", "-w", wh)["target_snapshot_id"] == 1


def test_expire_on_a_branch(tmp_path: Path, wh: str) -> None:
    result = ok("expire", "db.t", "--branch", "dev", "--retain-min", "1", "--retain-max", "1",
                "--older-than", "0s", "-w", wh)
    assert (result["branch"], result["snapshots_expired"], result["earliest_after"]) == ("dev", [1, 2], 3)
    assert [s["snapshot_id"] for s in ok("snapshots", "db.t", "--branch", "dev", "-w", wh)] == [3]
    main_untouched(wh)
    ok("remove-orphan-files", "db.t", "--older-than", "0s", "--force", "-w", wh)
    assert scan(wh, "--branch", "dev") == DEV_4
    assert scan(wh, "--branch", "dev", "--tag", "d2") == DEV_3
    assert scan(wh, "--branch", "dev", "--tag", "t1") == {1: "a", 2: "b"}
    assert scan(wh, "--tag", "t1") == {1: "a", 2: "b"} and scan(wh) == MAIN
    # The table format names the branch too.
    shown = invoke("expire", "db.t", "--branch", "dev", "--dry-run", "-w", wh)
    assert shown.exit_code == 0 and shown.stdout.splitlines()[1].split() == ["branch", "dev"]


def test_describe_files_and_views_on_a_branch(tmp_path: Path, wh: str) -> None:
    ok("alter-schema", "db.t", "--add-column", "note STRING", "--branch", "dev", "-w", wh)
    described = ok("describe", "db.t", "--branch", "dev", "-w", wh)
    assert (described["branch"], described["latest_snapshot_id"], described["schema_id"]) == ("dev", 3, 1)
    assert [c["name"] for c in described["columns"]] == ["id", "v", "note"]
    # Six rows in files (t1's 2, then 3 and 1): counted as written, not merged by key.
    assert described["total_record_count"] == 6 and described["file_count"] == 3
    on_main = ok("describe", "db.t", "-w", wh)
    assert (on_main["branch"], on_main["latest_snapshot_id"], on_main["schema_id"]) == ("main", 2, 0)
    assert on_main["total_record_count"] == 4
    files = ok("files", "db.t", "--branch", "dev", "-w", wh)
    assert sorted(f["record_count"] for f in files) == [1, 2, 3]
    assert sorted(f["record_count"] for f in ok("files", "db.t", "--branch", "dev", "--tag", "d2", "-w", wh)) == [2, 3]
    assert sorted(f["record_count"] for f in ok("files", "db.t", "-w", wh)) == [2, 2]
    [part] = ok("partitions", "db.t", "--branch", "dev", "-w", wh)
    assert (part["record_count"], part["file_count"]) == (6, 3)
    [bucket] = ok("buckets", "db.t", "--branch", "dev", "--snapshot-id", "2", "-w", wh)
    assert (bucket["record_count"], bucket["file_count"]) == (5, 2)
    dev_manifests = {m["file_name"] for m in ok("manifests", "db.t", "--branch", "dev", "-w", wh)}
    main_manifests = {m["file_name"] for m in ok("manifests", "db.t", "-w", wh)}
    assert dev_manifests - main_manifests and main_manifests - dev_manifests


def test_tags_on_a_branch_rename_and_expire(wh: str) -> None:
    renamed = ok("tag", "rename", "db.t", "d2", "dev-2", "--branch", "dev", "-w", wh)
    assert (renamed["tag"], renamed["branch"], renamed["snapshot_id"]) == ("dev-2", "dev", 2)
    assert [(t["tag"], t["branch"]) for t in ok("tag", "list", "db.t", "--branch", "dev", "-w", wh)] == [("dev-2", "dev"), ("t1", "dev")]
    assert invoke("tag", "rename", "db.t", "d2", "x", "-w", wh).exit_code == 3  # not main's
    expired = ok("expire-tags", "db.t", "--branch", "dev", "--older-than", "0s", "-w", wh)
    assert expired["branch"] == "dev" and sorted(t["tag"] for t in expired["tags_expired"]) == ["dev-2", "t1"]
    assert ok("tag", "list", "db.t", "--branch", "dev", "-w", wh) == []
    main_untouched(wh)


def test_consumers_on_a_branch(tmp_path: Path, wh: str) -> None:
    reset = ok("consumer", "reset", "db.t", "reader", "--next-snapshot", "2", "--branch", "dev", "-w", wh)
    assert (reset["branch"], reset["next_snapshot_after"]) == ("dev", 2)
    assert (Path(wh) / "db.db" / "t" / "branch" / "branch-dev" / "consumer" / "consumer-reader").exists()
    [listed] = ok("consumer", "list", "db.t", "--branch", "dev", "-w", wh)
    assert (listed["consumer_id"], listed["pending_snapshots"]) == ("reader", 2)
    assert ok("consumer", "list", "db.t", "-w", wh) == []
    # The branch's consumer holds back the branch's expire (not main's).
    ok("expire", "db.t", "--branch", "dev", "--retain-min", "1", "--older-than", "0s", "-w", wh)
    assert [s["snapshot_id"] for s in ok("snapshots", "db.t", "--branch", "dev", "-w", wh)] == [3, 2]
    ok("expire", "db.t", "--retain-min", "1", "--older-than", "0s", "-w", wh)
    assert [s["snapshot_id"] for s in ok("snapshots", "db.t", "-w", wh)] == [2]
    assert ok("consumer", "delete", "db.t", "reader", "--branch", "dev", "-w", wh)["branch"] == "dev"
    assert ok("consumer", "list", "db.t", "--branch", "dev", "-w", wh) == []


def test_clone_a_branch(wh: str) -> None:
    result = ok("clone", "db.t", "db.copy", "--branch", "dev", "--tag", "d2", "-w", wh)
    assert (result["branch"], result["snapshot_id"]) == ("dev", 2)
    assert {r["id"]: r["v"] for r in ok("scan", "db.copy", "-w", wh)} == DEV_3
    assert ok("clone", "db.t", "db.copy2", "--branch", "dev", "-w", wh)["snapshot_id"] == 3
    assert {r["id"]: r["v"] for r in ok("scan", "db.copy2", "-w", wh)} == DEV_4


@pytest.mark.parametrize("args", [
    ["rollback", "db.t", "--snapshot-id", "1"],
    ["expire", "db.t"],
    ["describe", "db.t"],
    ["files", "db.t"],
    ["partitions", "db.t"],
    ["buckets", "db.t"],
    ["manifests", "db.t"],
    ["expire-tags", "db.t"],
    ["tag", "rename", "db.t", "d2", "x"],
    ["consumer", "list", "db.t"],
    ["consumer", "reset", "db.t", "c", "--next-snapshot", "1"],
    ["consumer", "delete", "db.t", "c"],
    ["clone", "db.t", "db.copy"],
])
def test_an_unknown_branch_is_not_found(wh: str, args: list[str]) -> None:
    result = invoke(*args, "--branch", "nope", "-w", wh)
    assert result.exit_code == 3, result.stderr
    assert result.stderr == "error: branch nope of table db.t does not exist\n"


def test_check_and_repair_a_branchs_hints(wh: str) -> None:
    hints = Path(wh) / "db.db" / "t" / "branch" / "branch-dev" / "snapshot"
    (hints / "LATEST").write_text("7")
    checked = invoke("check", "db.t", "-w", wh, "-f", "json")
    assert checked.exit_code == 0
    body = json.loads(checked.stdout)
    assert body["ok"] and body["branches_checked"] == 1
    assert [(w["kind"], w["branch"]) for w in body["warnings"]] == [("hint", "dev")]
    assert checked.stderr.startswith("warning: branch dev: hint ")
    dry = ok("check", "db.t", "--repair", "--dry-run", "-w", wh)
    assert dry["hints_rewritten"] == [] and dry["branches"] == [
        {"branch": "dev", "snapshots_removed": [], "tags_removed": [], "latest_after": 3, "earliest_after": 1,
         "hints_rewritten": ["LATEST"], "problems_left": [], "ok": True}]
    assert (hints / "LATEST").read_text() == "7"
    shown = invoke("check", "db.t", "--repair", "-w", wh)
    assert shown.exit_code == 0 and "dev: hints rewritten ['LATEST']" in shown.stdout
    assert (hints / "LATEST").read_text() == "3"
    again = invoke("check", "db.t", "-w", wh, "-f", "json")
    assert again.exit_code == 0 and json.loads(again.stdout)["warnings"] == [] and again.stderr == ""


def test_check_and_repair_a_torn_rollback_on_a_branch(wh: str) -> None:
    """A rollback of dev to 1 killed after removing snapshot 3, before 2 and the hint; then
    dev's snapshot 2 lost its manifest list by hand: check names dev, repair finishes the
    branch's removal and leaves main's history."""
    table = Path(wh) / "db.db" / "t"
    snapshots = table / "branch" / "branch-dev" / "snapshot"
    (snapshots / "snapshot-3").unlink()
    doomed = json.loads((snapshots / "snapshot-2").read_text())["deltaManifestList"]
    (table / "manifest" / doomed).unlink()
    checked = invoke("check", "db.t", "-w", wh, "-f", "json")
    assert checked.exit_code == 1 and "error: 1 problem(s) in db.t" in checked.stderr
    problems = json.loads(checked.stdout)["problems"]
    assert [(p["kind"], p["branch"]) for p in problems] == [("manifest-list", "dev")]
    before_main = sorted(p.name for p in (table / "snapshot").iterdir())
    repaired = ok("check", "db.t", "--repair", "-w", wh)
    assert repaired["ok"] and repaired["snapshots_removed"] == []
    [dev] = repaired["branches"]
    assert [r["snapshot_id"] for r in dev["snapshots_removed"]] == [2]
    assert [r["tag"] for r in dev["tags_removed"]] == ["d2"]  # its snapshot cannot be read either
    assert (dev["latest_after"], dev["hints_rewritten"]) == (1, ["LATEST"])
    assert sorted(p.name for p in (table / "snapshot").iterdir()) == before_main
    assert scan(wh, "--branch", "dev") == {1: "a", 2: "b"}
    main_untouched(wh)
    assert invoke("check", "db.t", "-w", wh).exit_code == 0


def test_remove_orphan_files_takes_no_branch(wh: str) -> None:
    """Files are the table's, shared by every branch: one branch's view has nothing of its own
    to reclaim, so the command is table-wide and has no --branch (see the README)."""
    result = invoke("remove-orphan-files", "db.t", "--branch", "dev", "-w", wh)
    assert result.exit_code == 2 and "No such option: --branch" in result.stderr


def test_a_follower_on_a_branch_keeps_its_position_in_the_branch(wh: str) -> None:
    """``scan --follow --branch`` reads the branch's snapshots and records its consumer in the
    branch's consumer/ (where Paimon's reader of db.t$branch_dev keeps it)."""
    result = invoke("scan", "db.t", "--branch", "dev", "--follow", "--consumer-id", "reader", "--max-snapshots", "1",
                    "-f", "jsonl", "-w", wh)
    assert result.exit_code == 0, result.stderr
    assert {json.loads(line)["id"]: json.loads(line)["v"] for line in result.stdout.splitlines()} == DEV_4
    [listed] = ok("consumer", "list", "db.t", "--branch", "dev", "-w", wh)
    assert (listed["consumer_id"], listed["next_snapshot"]) == ("reader", 4)
    assert ok("consumer", "list", "db.t", "-w", wh) == []


def test_delete_truncate_and_schemas_on_a_branch(tmp_path: Path, wh: str) -> None:
    ok("delete", "db.t", "--where", "id >= 8", "--branch", "dev", "-w", wh)
    assert scan(wh, "--branch", "dev") == {k: v for k, v in DEV_4.items() if k < 8}
    main_untouched(wh)
    ok("alter-schema", "db.t", "--add-column", "note STRING", "--branch", "dev", "-w", wh)
    assert [s["schema_id"] for s in ok("schemas", "db.t", "--branch", "dev", "-w", wh)] == [1, 0]
    assert [s["schema_id"] for s in ok("schemas", "db.t", "-w", wh)] == [0]
    truncated = ok("truncate", "db.t", "--branch", "dev", "-w", wh)
    assert truncated["snapshot_id"] == 5  # dev's: 4 was the delete (alter-schema commits no snapshot)
    assert scan(wh, "--branch", "dev") == {}
    main_untouched(wh)


def test_rewrites_and_partition_drops_on_a_branch_of_an_append_table(tmp_path: Path) -> None:
    """An append table's delete rewrites files (an OVERWRITE commit), drop-partition and
    expire-partitions DELETE whole partitions: on a branch all of them commit to the branch."""
    wh = str(tmp_path / "wh")
    assert invoke("-q", "create", "db.a", "-w", wh, "--schema", "id BIGINT, dt STRING", "--partition-by", "dt",
                  ).exit_code == 0
    path = tmp_path / "a.csv"
    path.write_text("id,dt\n1,2020-01-01\n2,2020-01-01\n3,2999-01-02\n4,2999-01-03\n")
    ok("write", "db.a", "-w", wh, "-i", path)
    ok("branch", "create", "db.a", "b", "-w", wh)

    def ids(*extra: str) -> list[int]:
        return sorted(r["id"] for r in ok("scan", "db.a", "-w", wh, *extra))

    assert ok("delete", "db.a", "--where", "id = 2", "--branch", "b", "-w", wh)["commit_kind"] == "OVERWRITE"
    assert ids("--branch", "b") == [1, 3, 4]
    assert ok("drop-partition", "db.a", "--partition", "dt=2999-01-03", "--branch", "b", "-w", wh)["snapshot_id"] == 3
    assert ids("--branch", "b") == [1, 3]
    expired = ok("expire-partitions", "db.a", "--expiration-time", "1d", "--branch", "b", "-w", wh)
    assert expired["snapshot_id"] == 4 and ids("--branch", "b") == [3]
    assert ids() == [1, 2, 3, 4]
    assert [s["snapshot_id"] for s in ok("snapshots", "db.a", "-w", wh)] == [1]
