"""Issue 24: branch commands stopped part-way (a failed mutation leaves what a kill leaves).

The crash matrix (``fault_lab``: BranchCreate, BranchDelete, FastForward) kills before every
mutation; these tests pin the rules around it: what a half-done fast-forward refuses and
allows, who clears a leftover branch directory, and what a dry run leaves alone. Expected
rows are the ones each test wrote.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from core.branch import FAST_FORWARD, LEFTOVER, UNFINISHED, WHOLE, branch_path, branch_state
from core.errors import FastForwardUnfinishedError, NotFoundError
from core.fileio import inject_fault, join
from core.ops.branches import create_branch, delete_branch, fast_forward, list_branches
from core.ops.check import check
from core.ops.create import create
from core.ops.repair import repair
from core.ops.tags import create_tag, delete_tag, expire_tags, rename_tag
from core.evolution import AddColumn
from core.table import Table
from core.types import parse_type

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(t: Table) -> dict[int, str]:
    data = t.scan(select=["id", "v"])
    return dict(zip(data.column("id").to_pylist(), data.column("v").to_pylist()))


def write(t: Table, upserts: dict[int, str]) -> None:
    t.write(pa.Table.from_pylist([{"id": k, "v": v} for k, v in upserts.items()], schema=SCHEMA))


@pytest.fixture()
def table(tmp_path: Path) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    write(t, {1: "a", 2: "b"})
    return t


def half_fast_forward(t: Table, name: str, mutations: int) -> None:
    """Fast-forward to ``name``, failing at its ``mutations``-th mutation (the ones before it done)."""
    with inject_fault("fail", "mutation", mutations), pytest.raises(OSError, match="injected fault"):
        fast_forward(t, name)


def test_a_half_fast_forward_refuses_changes_to_main_and_its_branch_only(table: Table) -> None:
    create_branch(table, "dev")
    write(table.on_branch("dev"), {1: "dev"})
    create_branch(table, "other")
    write(table, {3: "main"})  # main's snapshot 2, which the fast-forward replaces
    half_fast_forward(table, "dev", 6)  # the busy marker, the rewrite marker, the marker, main's snapshot 2, LATEST; fails copying dev's 2
    assert table.snapshots.list_ids() == [1] and rows(table) == {1: "a", 2: "b"}
    rerun = "lakectl branch fast-forward db.t dev"
    refused = [lambda: write(table, {4: "lost"}), lambda: table.rollback(snapshot_id=1, dry_run=False),
               lambda: table.expire(retain_min=1, retain_max=1, dry_run=False),
               lambda: create_tag(table, "t"), lambda: expire_tags(table, older_than="0s"),
               lambda: table.alter([AddColumn("extra", parse_type("INT"))]),
               lambda: table.compact(full=True), lambda: table.delete("id = 1"), lambda: table.truncate(dry_run=False),
               lambda: delete_branch(table, "dev"), lambda: table.on_branch("dev").rollback(snapshot_id=1, dry_run=False),
               lambda: fast_forward(table, "other")]
    for attempt in refused:
        with pytest.raises(FastForwardUnfinishedError, match=rerun.replace(" ", r"\s")):
            attempt()
    assert table.snapshots.list_ids() == [1] and table.schemas.list_ids() == [0] and not table.tags.names()
    files = {p for p in Path(table.path).rglob("*") if p.is_file()}
    for attempt in refused[:1] + refused[6:7]:  # write and compact refuse before writing a data file
        with pytest.raises(FastForwardUnfinishedError):
            attempt()
    assert {p for p in Path(table.path).rglob("*") if p.is_file()} == files
    # Dry runs, reads and the other branch go on.
    assert table.rollback(snapshot_id=1, dry_run=True).snapshots_removed == ()
    write(table.on_branch("other"), {7: "other"})
    assert rows(table.on_branch("other")) == {1: "a", 2: "b", 7: "other"}
    write(table.on_branch("dev"), {8: "dev2"})  # the rerun takes it along
    found = [p for p in check(table).problems if p.kind == "fast-forward"]
    assert len(found) == 1 and rerun in found[0].detail
    repaired = repair(table)
    assert not repaired.ok and [p.kind for p in repaired.problems_left] == ["fast-forward"]
    result = fast_forward(table, "dev")
    assert (result.latest_before, result.latest_after) == (2, 3)
    assert rows(table) == {1: "dev", 2: "b", 8: "dev2"} == rows(table.on_branch("dev"))
    assert not table.file_io.exists(join(table.snapshots.dir, FAST_FORWARD))
    write(table, {9: "after"})
    assert rows(table) == {1: "dev", 2: "b", 8: "dev2", 9: "after"}
    assert check(table).ok


def test_tag_commands_wait_for_the_fast_forward(table: Table) -> None:
    create_tag(table, "keep")  # on snapshot 1, before the branch starts: the fast-forward keeps it
    write(table, {3: "c"})
    create_branch(table, "dev")
    write(table.on_branch("dev"), {1: "dev"})
    half_fast_forward(table, "dev", 5)  # the busy marker, the rewrite marker, the marker and LATEST; fails copying dev's snapshot 3
    for attempt in (lambda: rename_tag(table, "keep", "kept"), lambda: delete_tag(table, "keep"),
                    lambda: create_tag(table, "new", replace=True)):
        with pytest.raises(FastForwardUnfinishedError):
            attempt()
    assert table.tags.names() == ["keep"]
    fast_forward(table, "dev")
    rename_tag(table, "keep", "kept")
    assert table.tags.names() == ["kept"]


def test_a_leftover_is_cleared_by_create_delete_or_repair_and_a_dry_run_keeps_it(table: Table) -> None:
    for clear in ("create", "delete", "repair"):
        with inject_fault("fail", "mutation", 4), pytest.raises(OSError):
            create_branch(table, "dev")  # (after the busy marker) the marker and the snapshot are there, the schema not
        assert branch_state(table, "dev") == LEFTOVER and not list_branches(table)
        with pytest.raises(NotFoundError, match="branch delete db.t dev"):
            table.on_branch("dev")
        dry = repair(table, dry_run=True)
        assert dry.leftovers_removed == ["dev"] and branch_state(table, "dev") == LEFTOVER
        assert delete_branch(table, "dev", dry_run=True).leftover and branch_state(table, "dev") == LEFTOVER
        if clear == "create":
            create_branch(table, "dev", snapshot_id=1)
            assert branch_state(table, "dev") == WHOLE and rows(table.on_branch("dev")) == {1: "a", 2: "b"}
            delete_branch(table, "dev")
        elif clear == "delete":
            assert delete_branch(table, "dev").leftover
        else:
            assert repair(table).leftovers_removed == ["dev"]
        assert not Path(branch_path(table.path, "dev")).exists() and check(table).ok, clear


def test_a_directory_with_schemas_and_the_marker_is_no_branch(table: Table) -> None:
    """A delete stopped after its marker: every file still there, yet the branch is gone."""
    create_branch(table, "dev")
    with inject_fault("fail", "mutation", 3), pytest.raises(OSError):  # the busy marker, the marker
        delete_branch(table, "dev")
    assert Path(branch_path(table.path, "dev"), UNFINISHED).exists()
    assert Path(branch_path(table.path, "dev"), "schema", "schema-0").exists()
    assert branch_state(table, "dev") == LEFTOVER and list_branches(table) == []
    with pytest.raises(NotFoundError):
        table.on_branch("dev")
    assert [p.kind for p in check(table).problems] == ["branch"]


def test_a_fast_forward_marker_whose_start_expired_before_it_changed_anything_is_removed_by_the_rerun(
        table: Table) -> None:
    """Issue 43, case 7: an older lakectl let expire retire the branch's start next to a
    fast-forward that had only written its marker; the rerun used to exit 4 forever and every
    write on main was refused. Now the rerun sees main untouched, removes the marker and says so."""
    from core.errors import CommitConflictError
    from core.ops.expire import expire_snapshots

    create_branch(table, "dev")
    write(table.on_branch("dev"), {1: "dev"})
    write(table, {3: "main"})
    write(table, {4: "main"})
    expire_snapshots(table, retain_min=1, retain_max=1, older_than="0s")  # main's snapshot 1 (dev's start) goes
    latest = table.snapshots.latest_id()
    marker = join(table.path, "snapshot", FAST_FORWARD)
    Path(marker).write_text(f'{{"branch": "dev", "startSnapshotId": 1, "latestBefore": {latest}}}')
    with pytest.raises(FastForwardUnfinishedError):
        write(table, {5: "refused"})
    with pytest.raises(CommitConflictError, match="marker was removed"):
        fast_forward(table, "dev")
    assert not Path(marker).exists()
    write(table, {5: "main"})
    assert rows(table) == {1: "a", 2: "b", 3: "main", 4: "main", 5: "main"}
