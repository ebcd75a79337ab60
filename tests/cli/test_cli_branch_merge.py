"""``lakectl branch merge`` (Paimon 2.0's merge_branch) and the ``branch-merge.enabled`` option,
through CliRunner and the console script: the target ends with its own rows plus exactly the
rows only the source had; a second merge commits nothing; a merge and a write to the target that
land together keep both, and two merges of the same files add them once; Paimon's refusals
(history not pure append, schemas that differ, primary keys); and every command the option
refuses, in one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_kit import console, held, invoke, ok, script

T = "db.t"
MERGE = "branch-merge.enabled=true"


def _csv(tmp_path: Path, name: str, rows: dict[int, str]) -> Path:
    path = tmp_path / name
    path.write_text("id,v\n" + "".join(f"{i},{v}\n" for i, v in rows.items()))
    return path


def _table(tmp_path: Path, *options: str, partitioned: bool = False) -> str:
    """main: ids 1, 2 then 4 (after the fork); branch dev: 1, 2 (shared) then 3."""
    wh = str(tmp_path / "wh")
    schema = "id BIGINT, v STRING" + (", dt STRING" if partitioned else "")
    flags = ["--partition-by", "dt"] if partitioned else []
    ok("create", T, "-w", wh, "-s", schema, *flags, *[a for o in options for a in ("-o", o)])
    part = (lambda p: p) if not partitioned else (lambda p: _with_dt(p))
    ok("write", T, "-w", wh, "-i", part(_csv(tmp_path, "base.csv", {1: "base", 2: "base"})))
    ok("branch", "create", T, "dev", "-w", wh)
    ok("write", T, "-w", wh, "-i", part(_csv(tmp_path, "dev.csv", {3: "dev"})), "--branch", "dev")
    ok("write", T, "-w", wh, "-i", part(_csv(tmp_path, "main.csv", {4: "main"})))
    return wh


def _with_dt(path: Path) -> Path:
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0] + ",dt", *(line + ",2024-01-01" for line in lines[1:])]) + "\n")
    return path


def _rows(wh: str, *args: str) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in ok("scan", T, "-w", wh, *args))


def _snapshot_file(wh: str, snapshot_id: int, branch: str = "main") -> dict:
    root = Path(wh) / "db.db" / "t"
    if branch != "main":
        root = root / "branch" / f"branch-{branch}"
    return json.loads((root / "snapshot" / f"snapshot-{snapshot_id}").read_text())


def test_merge_adds_the_source_only_rows_once(tmp_path: Path) -> None:
    wh = _table(tmp_path, MERGE)
    before = ok("snapshots", T, "-w", wh)
    dry = ok("branch", "merge", T, "dev", "--dry-run", "-w", wh)
    assert dry == {"table": T, "branch": "main", "source_branch": "dev", "snapshot_id": None, "files_added": 1,
                   "records_added": 1, "bytes_added": dry["bytes_added"], "dry_run": True}
    assert dry["bytes_added"] > 0
    assert ok("snapshots", T, "-w", wh) == before
    done = ok("branch", "merge", T, "dev", "-w", wh)
    assert (done["snapshot_id"], done["files_added"], done["records_added"]) == (3, 1, 1)
    assert _rows(wh) == [(1, "base"), (2, "base"), (3, "dev"), (4, "main")]
    assert _rows(wh, "--branch", "dev") == [(1, "base"), (2, "base"), (3, "dev")]  # the source keeps its own
    snap = _snapshot_file(wh, 3)
    # Paimon's BranchMergeHandler: an APPEND commit, identifier 0, a commit user of its own
    assert snap["commitKind"] == "APPEND" and snap["commitIdentifier"] == 0
    assert snap["commitUser"] not in {_snapshot_file(wh, i)["commitUser"] for i in (1, 2)}
    assert (snap["deltaRecordCount"], snap["totalRecordCount"]) == (1, 4)
    again = ok("branch", "merge", T, "dev", "-w", wh)
    assert (again["snapshot_id"], again["files_added"]) == (None, 0)
    assert [s["snapshot_id"] for s in ok("snapshots", T, "-w", wh)] == [3, 2, 1]
    assert _rows(wh) == [(1, "base"), (2, "base"), (3, "dev"), (4, "main")]
    ok("check", T, "-w", wh)


def test_merge_into_a_branch_and_back(tmp_path: Path) -> None:
    wh = _table(tmp_path)  # no option: Paimon's merge checks the history, not the option
    ok("branch", "merge", T, "main", "--into", "dev", "-w", wh)
    ok("branch", "merge", T, "dev", "-w", wh)
    want = [(1, "base"), (2, "base"), (3, "dev"), (4, "main")]
    assert _rows(wh) == want and _rows(wh, "--branch", "dev") == want
    assert ok("branch", "merge", T, "dev", "-w", wh)["files_added"] == 0
    assert ok("branch", "merge", T, "main", "--into", "dev", "-w", wh)["files_added"] == 0


def test_row_tracking_targets_number_the_merged_rows_after_their_own(tmp_path: Path) -> None:
    from core.manifest import live_entries
    from core.table import Table

    wh = _table(tmp_path, MERGE, "row-tracking.enabled=true")
    ok("branch", "merge", T, "dev", "-w", wh)
    main = Table.locate(T, warehouse=wh)
    latest = main.snapshots.latest()
    ranges = sorted((e.file.first_row_id, e.file.first_row_id + e.file.row_count - 1)
                    for e in live_entries(main.manifests(), latest))
    assert ranges == [(0, 1), (2, 2), (3, 3)]  # base 0-1, main's 4 at 2, dev's 3 renumbered to 3
    assert latest.next_row_id == 4
    dev = Table.locate(T, warehouse=wh).on_branch("dev")
    assert sorted(e.file.first_row_id for e in live_entries(dev.manifests(), dev.snapshots.latest())) == [0, 2]


def test_paimons_refusals(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    for args, code, words in [(["dev", "--into", "dev"], 2, "into itself"), (["nope"], 3, "does not exist"),
                              (["dev", "--into", "nope"], 3, "does not exist")]:
        res = invoke("branch", "merge", T, *args, "-w", wh)
        assert (res.exit_code, words in res.stderr) == (code, True), res.stderr
    ok("alter-schema", T, "-w", wh, "--branch", "dev", "--add-column", "note STRING")
    res = invoke("branch", "merge", T, "dev", "-w", wh)
    assert res.exit_code == 2 and "schemas differ" in res.stderr, res.stderr
    ok("compact", T, "-w", wh, "--full")  # allowed without the option; then main's history is not pure append
    res = invoke("branch", "merge", T, "main", "--into", "dev", "-w", wh)
    assert res.exit_code == 2 and "snapshot 3 of branch main is COMPACT" in res.stderr, res.stderr
    keyed = str(tmp_path / "keyed")
    ok("create", T, "-w", keyed, "-s", "id BIGINT, v STRING", "--primary-key", "id")
    ok("write", T, "-w", keyed, "-i", _csv(tmp_path, "k.csv", {1: "a"}))
    ok("branch", "create", T, "dev", "-w", keyed)
    res = invoke("branch", "merge", T, "dev", "-w", keyed)
    assert res.exit_code == 2 and "primary key" in res.stderr, res.stderr


def test_an_expired_history_is_refused(tmp_path: Path) -> None:
    wh = _table(tmp_path, MERGE)
    ok("expire", T, "-w", wh, "--retain-min", "1", "--retain-max", "1", "--older-than", "0s")
    res = invoke("branch", "merge", T, "dev", "-w", wh)
    assert res.exit_code == 2 and "starts at snapshot 2" in res.stderr, res.stderr


def test_the_option_is_set_at_create_and_refuses_rewrites(tmp_path: Path) -> None:
    wh = _table(tmp_path, MERGE, partitioned=True)
    before = ok("snapshots", T, "-w", wh)
    csv = _with_dt(_csv(tmp_path, "over.csv", {9: "x"}))
    for args in (["compact", T, "--full"], ["compact", T], ["compact", T, "--order-by", "id"],
                 ["compact", T, "--full", "--branch", "dev"], ["compact-manifests", T],
                 ["write", T, "-i", csv, "--mode", "overwrite"], ["delete", T, "--where", "id = 1"],
                 ["truncate", T], ["drop-partition", T, "--partition", "dt=2024-01-01"],
                 ["expire-partitions", T, "--expiration-time", "1d"], ["rescale", T, "--buckets", "2"],
                 ["remove-unexisting-files", T], ["rollback", T, "--snapshot-id", "1", "--as-latest"]):
        res = invoke(*args, "-w", wh)
        assert res.exit_code == 1, (args, res.stdout, res.stderr)
        assert "branch-merge.enabled=true" in res.stderr and res.stderr.count("\n") == 1, (args, res.stderr)
    assert ok("snapshots", T, "-w", wh) == before
    for change in (["--reset-option", "branch-merge.enabled"], ["--set-option", "branch-merge.enabled=false"],
                   ["--set-option", "deletion-vectors.enabled=true"]):
        res = invoke("alter-schema", T, "-w", wh, *change)
        assert res.exit_code == 2 and "branch-merge.enabled" in res.stderr, (change, res.stderr)
    other = str(tmp_path / "other")
    for flags in (["--primary-key", "id"], ["-o", "deletion-vectors.enabled=true"],
                  ["-o", "data-evolution.enabled=true", "-o", "row-tracking.enabled=true"]):
        res = invoke("create", T, "-w", other, "-s", "id BIGINT", "-o", MERGE, *flags)
        assert res.exit_code == 2 and "branch-merge.enabled" in res.stderr, (flags, res.stderr)
    ok("create", T, "-w", other, "-s", "id BIGINT")
    res = invoke("alter-schema", T, "-w", other, "--set-option", MERGE)
    assert res.exit_code == 2 and "set when the table is created" in res.stderr, res.stderr


def test_maintain_skips_compaction_with_the_reason(tmp_path: Path) -> None:
    wh = _table(tmp_path, MERGE, "write-only=true")
    for i in range(6):  # small files past compaction.min.file-num: compaction is due
        ok("write", T, "-w", wh, "-i", _csv(tmp_path, f"w{i}.csv", {10 + i: "w"}))
    health = ok("health", T, "-w", wh)
    assert not [r for r in health["recommendations"] if r["command"].startswith("lakectl compact")]
    res = invoke("maintain", T, "-w", wh, "-f", "json")
    assert res.exit_code == 0, res.stderr
    (report,) = [r for r in json.loads(res.stdout) if r["branch"] == "main"]
    assert report["status"] == "done"
    (compact,) = [a for a in report["actions"] if a["verb"] == "compact"]
    assert compact["done"] is False and compact["error"].startswith("not run: compact refused")
    assert {s["commit_kind"] for s in ok("snapshots", T, "-w", wh)} == {"APPEND"}




@pytest.mark.slow
def test_through_the_console_script(tmp_path: Path) -> None:
    wh = _table(tmp_path, MERGE)
    out, err = console(wh, "branch", "merge", T, "dev", "--into", "main").communicate(timeout=120)
    assert json.loads(out)["snapshot_id"] == 3, err
    assert _rows(wh) == [(1, "base"), (2, "base"), (3, "dev"), (4, "main")]


@pytest.mark.slow
def test_a_write_landing_while_the_merge_commits_is_kept(tmp_path: Path) -> None:
    wh = _table(tmp_path, MERGE)
    stall = tmp_path / "stall"
    merge = console(wh, "branch", "merge", T, "dev", LAKECTL_FAULT="stall:publish:1", LAKECTL_STALL_FILE=str(stall))
    held(merge, stall)
    ok("write", T, "-w", wh, "-i", _csv(tmp_path, "late.csv", {5: "late"}))  # takes snapshot 3
    stall.unlink()
    out, err = merge.communicate(timeout=120)
    assert merge.returncode == 0, err
    assert json.loads(out)["snapshot_id"] == 4
    assert _rows(wh) == [(1, "base"), (2, "base"), (3, "dev"), (4, "main"), (5, "late")]
    ok("check", T, "-w", wh)


@pytest.mark.slow
def test_two_merges_of_the_same_files_add_them_once(tmp_path: Path) -> None:
    wh = _table(tmp_path, MERGE)
    stall = tmp_path / "stall"
    merge = console(wh, "branch", "merge", T, "dev", LAKECTL_FAULT="stall:publish:1", LAKECTL_STALL_FILE=str(stall))
    held(merge, stall)
    assert ok("branch", "merge", T, "dev", "-w", wh)["snapshot_id"] == 3
    stall.unlink()
    out, err = merge.communicate(timeout=120)
    assert merge.returncode == 0, err
    assert (json.loads(out)["snapshot_id"], json.loads(out)["files_added"]) == (None, 0)  # planned again: nothing left
    assert _rows(wh) == [(1, "base"), (2, "base"), (3, "dev"), (4, "main")]
    assert [s["snapshot_id"] for s in ok("snapshots", T, "-w", wh)] == [3, 2, 1]



@pytest.mark.slow
def test_killed_at_each_mutation_both_branches_stay_readable_and_a_rerun_finishes(tmp_path: Path) -> None:
    """SIGKILLed before each of its storage mutations (``LAKECTL_FAULT=kill:mutation:N``): main
    reads as before the merge or after it, never in between, the source is unchanged, check
    finds nothing, and the merge run again ends with every row once."""
    template = tmp_path / "template"
    wh0 = _table(template, MERGE)
    trace = tmp_path / "trace"
    assert script(wh0, "branch", "merge", T, "dev", LAKECTL_FAULT_TRACE=str(trace)).returncode == 0
    points = len(trace.read_text().splitlines())
    assert points >= 3  # the busy marker, the manifests, the snapshot, ...
    before = [(1, "base"), (2, "base"), (4, "main")]
    after = [(1, "base"), (2, "base"), (3, "dev"), (4, "main")]
    for n in range(1, points + 1):
        wh = str(_table(tmp_path / f"k{n}", MERGE))
        killed = script(wh, "branch", "merge", T, "dev", LAKECTL_FAULT=f"kill:mutation:{n}")
        assert killed.returncode == -9, (n, killed.stderr)
        assert _rows(wh) in (before, after), n
        assert _rows(wh, "--branch", "dev") == [(1, "base"), (2, "base"), (3, "dev")], n
        ok("check", T, "-w", wh)
        ok("branch", "merge", T, "dev", "-w", wh)
        assert _rows(wh) == after, n
        assert all(s["commit_kind"] == "APPEND" for s in ok("snapshots", T, "-w", wh)), n


@pytest.mark.slow
def test_a_rename_of_the_source_waits_for_a_merge_at_work(tmp_path: Path) -> None:
    wh = _table(tmp_path, MERGE)
    stall = tmp_path / "stall"
    merge = console(wh, "branch", "merge", T, "dev", LAKECTL_FAULT="stall:mutation:2", LAKECTL_STALL_FILE=str(stall))
    held(merge, stall)  # its busy marker is written, its manifests not yet
    res = invoke("branch", "rename", T, "dev", "qa", "-w", wh)  # waits LAKECTL_REWRITE_WAIT_SECONDS, then 4
    assert res.exit_code == 4 and "merge branch dev" in res.stderr, res.stderr
    stall.unlink()
    out, err = merge.communicate(timeout=120)
    assert merge.returncode == 0 and json.loads(out)["snapshot_id"] == 3, err
    assert _rows(wh) == [(1, "base"), (2, "base"), (3, "dev"), (4, "main")]
