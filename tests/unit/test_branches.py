"""Branches on real tables under tmp_path: create, write, scan, delete, and the safety of
expire / remove-orphan-files / rollback on a table whose branches share its files.

Expected rows come from a dict model keyed by primary key that each test updates as it
writes, never from lakectl's readers; layout checks look at the table directory directly.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from core.errors import BranchExistsError, NotFoundError, UsageError
from core.ops.branches import create_branch, delete_branch, list_branches
from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.tags import create_tag, delete_tag
from core.table import Table

Row = dict[str, Any]
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


class Model:
    """The rows each branch should hold at each of its snapshots: {branch: {snapshot id: rows}}."""

    def __init__(self) -> None:
        self.states: dict[str, dict[int, dict[int, str]]] = {}

    def record(self, table: Table, upserts: dict[int, str]) -> None:
        branch = self.states.setdefault(table.branch, {})
        snap = table.latest_snapshot()
        assert snap is not None
        previous = branch[max(branch)] if branch else {}
        branch[snap.id] = {**previous, **upserts}

    def fork(self, name: str, source: str, snapshot_id: int) -> None:
        self.states[name] = {snapshot_id: dict(self.states[source][snapshot_id])}

    def rows(self, branch: str, snapshot_id: int) -> list[Row]:
        return [{"id": k, "v": v} for k, v in sorted(self.states[branch][snapshot_id].items())]


def write(table: Table, model: Model, upserts: dict[int, str]) -> None:
    table.write(pa.Table.from_pylist([{"id": k, "v": v} for k, v in upserts.items()], schema=SCHEMA))
    model.record(table, upserts)


def scanned(table: Table, snapshot_id: int | None = None) -> list[Row]:
    return sorted(table.scan(snapshot_id=snapshot_id).to_pylist(), key=lambda r: r["id"])


@pytest.fixture()
def main(tmp_path: Path) -> tuple[Table, Model]:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    model = Model()
    write(t, model, {1: "a", 2: "b"})
    write(t, model, {2: "b2", 3: "c"})
    write(t, model, {4: "d"})
    return t, model


def test_branch_from_tag_copies_tag_snapshot_and_schemas(main: tuple[Table, Model]) -> None:
    t, model = main
    create_tag(t, "t1", snapshot_id=1)
    info = create_branch(t, "dev", tag="t1")
    assert (info.branch, info.earliest_snapshot_id, info.latest_snapshot_id, info.tags) == ("dev", 1, 1, 1)
    root = Path(t.path) / "branch" / "branch-dev"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == \
        ["schema/schema-0", "snapshot/snapshot-1", "tag/tag-t1"]
    assert (root / "snapshot" / "snapshot-1").read_bytes() == (Path(t.path) / "snapshot" / "snapshot-1").read_bytes()
    model.fork("dev", "main", 1)
    b = Table.open("db.t", warehouse=str(Path(t.path).parents[1]), branch="dev")
    assert scanned(b) == model.rows("dev", 1)
    assert sorted(b.scan(tag="t1").to_pylist(), key=lambda r: r["id"]) == model.rows("dev", 1)


def test_branch_from_snapshot_and_latest(main: tuple[Table, Model]) -> None:
    t, model = main
    assert create_branch(t, "s2", snapshot_id=2).latest_snapshot_id == 2
    assert create_branch(t, "head").latest_snapshot_id == 3
    assert [b.branch for b in list_branches(t)] == ["head", "s2"]
    model.fork("s2", "main", 2)
    model.fork("head", "main", 3)
    assert scanned(t.on_branch("s2")) == model.rows("s2", 2)
    assert scanned(t.on_branch("head")) == model.rows("head", 3)


def test_writes_on_a_branch_stay_on_it(main: tuple[Table, Model]) -> None:
    t, model = main
    create_branch(t, "dev", snapshot_id=2)
    model.fork("dev", "main", 2)
    dev = t.on_branch("dev")
    write(dev, model, {1: "dev1", 9: "z"})
    write(t, model, {5: "main5"})
    write(dev, model, {2: "dev2"})
    # Both continue their own numbering from the fork point: main has 4, dev has 2, 3, 4.
    assert t.snapshots.list_ids() == [1, 2, 3, 4]
    assert dev.snapshots.list_ids() == [2, 3, 4]
    for sid in dev.snapshots.list_ids():
        assert scanned(dev, sid) == model.rows("dev", sid)
    for sid in t.snapshots.list_ids():
        assert scanned(t, sid) == model.rows("main", sid)
    # main's snapshot/ never got a branch commit; the branch's manifests are the table's.
    assert not (Path(dev.branch_path) / "manifest").exists()


def test_errors(main: tuple[Table, Model]) -> None:
    t, _ = main
    create_branch(t, "dev")
    with pytest.raises(BranchExistsError):
        create_branch(t, "dev")
    for bad in ("main", "12", "a/b", ""):
        with pytest.raises(UsageError):
            create_branch(t, bad)
    with pytest.raises(NotFoundError):
        create_branch(t, "x", tag="nope")
    with pytest.raises(NotFoundError):
        create_branch(t, "x", snapshot_id=99)
    with pytest.raises(NotFoundError):
        t.on_branch("nope")
    with pytest.raises(NotFoundError):
        delete_branch(t, "nope")
    with pytest.raises(UsageError):
        create_branch(t.on_branch("dev"), "nested")


def test_delete_branch(main: tuple[Table, Model]) -> None:
    t, model = main
    create_branch(t, "dev")
    dev = t.on_branch("dev")
    write(dev, model.__class__(), {7: "x"})  # a branch with its own commit
    dry = delete_branch(t, "dev", dry_run=True)
    assert dry.dry_run and dry.files == 4  # schema-0, snapshot-3, snapshot-4, LATEST hint
    assert (Path(t.path) / "branch" / "branch-dev").exists()
    real = delete_branch(t, "dev")
    assert real.files == dry.files and not real.dry_run
    assert not (Path(t.path) / "branch" / "branch-dev").exists()
    assert list_branches(t) == []
    assert scanned(t) == model.rows("main", 3)


def _all_readable(t: Table, model: Model) -> None:
    """Every snapshot of every branch scans to the model."""
    for branch, states in model.states.items():
        view = t.on_branch(branch)
        for sid in view.snapshots.list_ids():
            assert scanned(view, sid) == model.rows(branch, sid), (branch, sid)


def test_expire_and_orphans_on_main_keep_every_branch_readable(main: tuple[Table, Model]) -> None:
    t, model = main
    create_tag(t, "t1", snapshot_id=1)
    create_branch(t, "from-tag", tag="t1")
    model.fork("from-tag", "main", 1)
    create_branch(t, "from-snap", snapshot_id=2)
    model.fork("from-snap", "main", 2)
    write(t.on_branch("from-snap"), model, {2: "fs", 8: "h"})
    # Main rewrites everything and forgets its history: compaction DELETEs every old file,
    # the tag goes, and expire keeps one snapshot.
    delete_tag(t, "t1")
    t.compact(full=True)
    model.record(t, {})
    write(t, model, {6: "f"})
    expired = t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
    assert expired.snapshots_expired == [1, 2, 3, 4]
    remove_orphan_files(t, older_than="0s", force=True)
    _all_readable(t, model)
    # Without branches the same steps do delete the first files: the branches kept them.
    delete_branch(t, "from-tag")
    delete_branch(t, "from-snap")
    assert remove_orphan_files(t, older_than="0s", force=True).files > 0
    assert scanned(t) == model.rows("main", 5)


def test_expire_on_a_branch_keeps_main_readable(main: tuple[Table, Model]) -> None:
    t, model = main
    create_branch(t, "dev", snapshot_id=1)
    model.fork("dev", "main", 1)
    dev = t.on_branch("dev")
    write(dev, model, {1: "x"})
    dev.compact(full=True)
    model.record(dev, {})
    write(dev, model, {2: "y"})
    dev.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
    assert dev.snapshots.list_ids() == [4]
    assert t.snapshots.list_ids() == [1, 2, 3]
    _all_readable(t, model)


def test_rollback_and_orphans_keep_a_branch_of_a_rolled_back_snapshot(main: tuple[Table, Model]) -> None:
    t, model = main
    create_branch(t, "keep", snapshot_id=3)
    model.fork("keep", "main", 3)
    t.rollback(snapshot_id=1, dry_run=False)
    remove_orphan_files(t, older_than="0s", force=True)
    assert scanned(t) == model.rows("main", 1)
    assert scanned(t.on_branch("keep")) == model.rows("keep", 3)


def test_branch_snapshot_json_is_the_mains(main: tuple[Table, Model]) -> None:
    t, _ = main
    create_branch(t, "dev", snapshot_id=2)
    copied = json.loads((Path(t.path) / "branch" / "branch-dev" / "snapshot" / "snapshot-2").read_text())
    assert copied == json.loads((Path(t.path) / "snapshot" / "snapshot-2").read_text())


def test_check_on_main_verifies_every_branch(main: tuple[Table, Model]) -> None:
    from core.ops.check import check

    t, model = main
    create_branch(t, "dev", snapshot_id=1)
    dev = t.on_branch("dev")
    write(dev, model, {7: "x"})
    result = check(t)
    assert result.ok and result.branches == 1
    assert result.snapshots == 3 + 2  # main's three, the branch's two
    # A data file only the branch references goes missing: check on main reports it.
    on_main = {f.file_name for s in t.snapshots.list_ids() for f in t.files(snapshot_id=s)}
    only_branch = {f.file_name for f in dev.files()} - on_main
    assert len(only_branch) == 1
    victim = next(Path(t.path).rglob(only_branch.pop()))
    victim.unlink()
    broken = check(t)
    assert not broken.ok and [p.kind for p in broken.problems] == ["data-file"]
    assert broken.problems[0].path == str(victim)
    # A branch directory without schemas (a create killed after its snapshot, before its
    # schemas) is reported, not skipped; one that holds no file at all is no branch.
    half = Path(t.path) / "branch" / "branch-half" / "snapshot"
    half.mkdir(parents=True)
    assert [p.kind for p in check(t).problems] == ["data-file"]
    shutil.copy(Path(t.path) / "snapshot" / "snapshot-1", half / "snapshot-1")
    assert [p.kind for p in check(t).problems] == ["data-file", "branch"]


def test_fast_forward_makes_main_the_branch(main: tuple[Table, Model]) -> None:
    from core.ops.branches import fast_forward
    from core.evolution import AddColumn
    from core.types import parse_type

    t, model = main
    create_tag(t, "t1", snapshot_id=1)
    create_tag(t, "t3", snapshot_id=3)
    create_branch(t, "dev", snapshot_id=2)
    model.fork("dev", "main", 2)
    dev = t.on_branch("dev")
    write(dev, model, {1: "dev"})
    dev.alter([AddColumn("note", parse_type("STRING"))])
    dev.write(pa.table({"id": pa.array([9], pa.int64()), "v": ["z"], "note": ["n"]}))
    model.record(dev, {9: "z"})
    create_tag(dev, "d4", snapshot_id=4)
    dry = fast_forward(t, "dev", dry_run=True)
    assert (dry.start_snapshot_id, dry.latest_before, dry.latest_after) == (2, 3, 4)
    assert dry.snapshots_removed == (3,) and dry.snapshots_copied == (3, 4)
    assert dry.schemas_copied == (1,) and dry.tags_removed == ("t3",) and dry.tags_copied == ("d4",)
    assert t.snapshots.list_ids() == [1, 2, 3] and scanned(t) == model.rows("main", 3)
    fast_forward(t, "dev")
    assert t.snapshots.list_ids() == [1, 2, 3, 4] and t.snapshots.latest_id() == 4
    assert sorted(t.tags.names()) == ["d4", "t1"] and t.schema.id == 1
    for sid in (3, 4):
        assert [{"id": r["id"], "v": r["v"]} for r in scanned(t, sid)] == model.rows("dev", sid)
    assert scanned(t, 1) == model.rows("main", 1)
    # Main goes on from the branch's state; the branch is untouched.
    write(t, model.__class__(), {10: "main-again"})
    assert dev.snapshots.list_ids() == [2, 3, 4]


def test_fast_forward_refuses_when_main_lost_the_start(main: tuple[Table, Model]) -> None:
    from core.errors import CommitConflictError
    from core.ops.branches import fast_forward

    t, _ = main
    create_branch(t, "dev", snapshot_id=1)
    t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
    with pytest.raises(CommitConflictError):
        fast_forward(t, "dev")
    assert t.snapshots.list_ids() == [3]
    with pytest.raises(NotFoundError):
        fast_forward(t, "nope")
