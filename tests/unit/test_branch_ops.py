"""Maintenance on a branch: rollback, expire, consumers, check --repair and clone of one
branch never touch main's history (nor main's of the branch's), and never delete a file that
main, another branch or any tag still reads.

Expected rows come from a model built while writing (a dict keyed by primary key per
snapshot of each branch, and the rows each tag was taken at), never from lakectl reading its
own table; file checks look at the table directory directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from core.errors import CorruptMetadataError, NotFoundError
from core.ops.branches import create_branch
from core.ops.check import check
from core.ops.clone import clone
from core.ops.consumers import list_consumers, reset_consumer
from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.repair import repair
from core.ops.tags import create_tag
from core.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
Rows = dict[int, str]


class Model:
    """{branch: {snapshot id: rows}} and {(branch, tag): rows}, kept as the test writes."""

    def __init__(self) -> None:
        self.snaps: dict[str, dict[int, Rows]] = {}
        self.tags: dict[tuple[str, str], Rows] = {}

    def record(self, table: Table, upserts: Rows) -> None:
        states = self.snaps.setdefault(table.branch, {})
        latest = table.snapshots.latest_id()
        assert latest is not None
        previous = states[max(states)] if states else {}
        states[latest] = {**previous, **upserts}

    def fork(self, name: str, snapshot_id: int) -> None:
        self.snaps[name] = {snapshot_id: dict(self.snaps["main"][snapshot_id])}

    def tag(self, table: Table, name: str, snapshot_id: int) -> None:
        create_tag(table, name, snapshot_id=snapshot_id)
        self.tags[(table.branch, name)] = dict(self.snaps[table.branch][snapshot_id])

    def forget_after(self, branch: str, snapshot_id: int) -> None:
        self.snaps[branch] = {s: r for s, r in self.snaps[branch].items() if s <= snapshot_id}


def write(table: Table, model: Model, upserts: Rows) -> None:
    table.write(pa.Table.from_pylist([{"id": k, "v": v} for k, v in upserts.items()], schema=SCHEMA))
    model.record(table, upserts)


def compact(table: Table, model: Model) -> None:
    table.compact(full=True)
    model.record(table, {})


def rows(table: Table, **at: Any) -> Rows:
    return {r["id"]: r["v"] for r in table.scan(select=["id", "v"], **at).to_pylist()}


def every_state_reads(t: Table, model: Model) -> int:
    """Every listed snapshot and every tag of main and of every branch scans to the model;
    returns how many were read."""
    seen = 0
    for branch, states in model.snaps.items():
        view = t.on_branch(branch)
        for sid in view.snapshots.list_ids():
            assert rows(view, snapshot_id=sid) == states[sid], (branch, sid)
            seen += 1
        for name in view.tags.names():
            assert rows(view, tag=name) == model.tags[(branch, name)], (branch, name)
            seen += 1
    return seen


def table_files(t: Table) -> dict[str, bytes]:
    """Every file under the table but the branch's own metadata directories, by path."""
    root = Path(t.path)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()
            and not str(p.relative_to(root)).startswith("branch/")}


@pytest.fixture()
def forked(tmp_path: Path) -> tuple[Table, Model]:
    """Main with three snapshots and a tag; branch ``dev`` forked at main's 2 with two commits
    of its own (3, 4) and a tag on its 3."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    model = Model()
    write(t, model, {1: "a", 2: "b"})
    write(t, model, {2: "b2", 3: "c"})
    model.tag(t, "m2", 2)
    write(t, model, {4: "d"})
    create_branch(t, "dev", snapshot_id=2)
    model.fork("dev", 2)
    dev = t.on_branch("dev")
    write(dev, model, {1: "dev3", 9: "z"})
    model.tag(dev, "d3", 3)
    write(dev, model, {2: "dev4"})
    return t, model


# ---- rollback ------------------------------------------------------------------------------
def test_rollback_on_a_branch_leaves_main_and_every_data_file(forked: tuple[Table, Model]) -> None:
    t, model = forked
    dev = t.on_branch("dev")
    main_before = table_files(t)  # main's metadata and every data and manifest file
    result = dev.rollback(snapshot_id=2, dry_run=False)
    assert (result.branch, result.target_snapshot_id, result.snapshots_removed, result.tags_removed) == \
        ("dev", 2, (4, 3), ("d3",))
    model.forget_after("dev", 2)
    del model.tags[("dev", "d3")]
    assert dev.snapshots.list_ids() == [2] and dev.tags.names() == []
    # Metadata only, and the branch's only: no byte outside branch/ changed, no file went.
    assert table_files(t) == main_before
    assert t.snapshots.list_ids() == [1, 2, 3] and t.tags.names() == ["m2"]
    assert every_state_reads(t, model) == 3 + 1 + 1
    # The data files dev's commits wrote are orphans now (they stay until remove-orphan-files).
    assert remove_orphan_files(t, older_than="0s", force=True).files > 0
    assert every_state_reads(t, model) == 5


def test_rollback_of_main_leaves_the_branch(forked: tuple[Table, Model]) -> None:
    t, model = forked
    dev = t.on_branch("dev")
    before = {p: p.read_bytes() for p in Path(dev.branch_path).rglob("*") if p.is_file()}
    t.rollback(snapshot_id=1, dry_run=False)
    model.forget_after("main", 1)
    del model.tags[("main", "m2")]
    assert {p: p.read_bytes() for p in Path(dev.branch_path).rglob("*") if p.is_file()} == before
    remove_orphan_files(t, older_than="0s", force=True)  # dev's snapshots keep main's old files
    assert every_state_reads(t, model) == 1 + 3 + 1


def test_rollback_on_a_branch_to_its_tag_after_the_snapshot_expired(forked: tuple[Table, Model]) -> None:
    t, model = forked
    dev = t.on_branch("dev")
    write(dev, model, {5: "e"})
    dev.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
    assert dev.snapshots.list_ids() == [5]
    model.forget_after("dev", 5)
    result = dev.rollback(tag="d3", dry_run=False)
    assert result.target_snapshot_id == 3 and dev.snapshots.list_ids() == [3]
    model.snaps["dev"] = {3: model.tags[("dev", "d3")]}
    assert t.snapshots.list_ids() == [1, 2, 3]
    assert every_state_reads(t, model) == 3 + 1 + 1 + 1
    with pytest.raises(NotFoundError):
        dev.rollback(tag="m2", dry_run=False)  # main's tag is not the branch's


# ---- expire --------------------------------------------------------------------------------
def test_expire_on_a_branch_keeps_what_main_and_the_tags_read(forked: tuple[Table, Model]) -> None:
    """dev's full compaction DELETEs files that main's snapshots and both tags hold live, and
    files only dev wrote: expiring dev down to one snapshot deletes only the one no tag holds."""
    t, model = forked
    dev = t.on_branch("dev")
    compact(dev, model)
    write(dev, model, {6: "f"})
    main_reads = {f.file_name for sid in t.snapshots.list_ids() for f in t.files(snapshot_id=sid)}
    tag_reads = {f.file_name for f in dev.files(snapshot_id=3)}  # the tag d3's snapshot
    dev_only = {f.file_name for f in dev.files(snapshot_id=4)} - main_reads - tag_reads
    assert len(dev_only) == 1 and len(tag_reads - main_reads) == 1
    result = dev.expire(retain_min=1, retain_max=1, older_than="0s", max_deletes=100, dry_run=False)
    assert result.branch == "dev" and result.snapshots_expired == [2, 3, 4, 5]
    model.snaps["dev"] = {6: model.snaps["dev"][6]}
    assert dev.snapshots.list_ids() == [6] and t.snapshots.list_ids() == [1, 2, 3]
    # dev's own level-0 file of 4, compacted away, went; every file main or the tag reads stayed.
    on_disk = {p.name for p in Path(t.path).rglob("data-*")}
    assert not dev_only & on_disk and main_reads | tag_reads <= on_disk
    assert every_state_reads(t, model) == 3 + 1 + 1 + 1
    remove_orphan_files(t, older_than="0s", force=True)
    assert every_state_reads(t, model) == 6


def test_expire_on_main_keeps_the_branch_and_its_tag(forked: tuple[Table, Model]) -> None:
    t, model = forked
    compact(t, model)
    write(t, model, {7: "g"})
    t.expire(retain_min=1, retain_max=1, older_than="0s", max_deletes=100, dry_run=False)
    model.snaps["main"] = {5: model.snaps["main"][5]}
    remove_orphan_files(t, older_than="0s", force=True)
    assert t.on_branch("dev").snapshots.list_ids() == [2, 3, 4]
    assert every_state_reads(t, model) == 1 + 1 + 3 + 1


# ---- consumers -----------------------------------------------------------------------------
def test_consumers_are_per_branch_and_hold_back_that_branchs_expire(forked: tuple[Table, Model]) -> None:
    t, model = forked
    dev = t.on_branch("dev")
    change = reset_consumer(dev, "reader", 3)
    assert (change.branch, change.next_snapshot_after) == ("dev", 3)
    # Paimon 1.0's layout: <table>/branch/branch-dev/consumer/consumer-reader.
    path = Path(t.path) / "branch" / "branch-dev" / "consumer" / "consumer-reader"
    assert path.read_text() == '{"nextSnapshot": 3}'
    assert not (Path(t.path) / "consumer").exists()
    assert [c.consumer_id for c in list_consumers(dev)] == ["reader"] and list_consumers(t) == []
    # dev's consumer keeps dev's 3 and 4; main's expire does not care about it.
    dev.expire(retain_min=1, retain_max=10, older_than="0s", dry_run=False)
    assert dev.snapshots.list_ids() == [3, 4]
    t.expire(retain_min=1, retain_max=10, older_than="0s", dry_run=False)
    assert t.snapshots.list_ids() == [3]
    model.snaps["dev"] = {s: r for s, r in model.snaps["dev"].items() if s >= 3}
    model.snaps["main"] = {3: model.snaps["main"][3]}
    assert every_state_reads(t, model) == 1 + 1 + 2 + 1


# ---- check and repair ----------------------------------------------------------------------
def test_check_names_the_branch_and_repair_fixes_a_branchs_hints(forked: tuple[Table, Model]) -> None:
    t, model = forked
    dev_snapshots = Path(t.on_branch("dev").branch_path) / "snapshot"
    (dev_snapshots / "LATEST").write_text("9")
    (dev_snapshots / "EARLIEST").write_text("1")
    main_hint = (Path(t.path) / "snapshot" / "LATEST").read_text()
    found = check(t)
    assert found.ok and sorted((w.branch, w.path.rsplit("/", 1)[-1]) for w in found.warnings) == \
        [("dev", "EARLIEST"), ("dev", "LATEST")]
    dry = repair(t, dry_run=True)
    assert dry.hints_rewritten == [] and [b.branch for b in dry.branches] == ["dev"]
    assert dry.branches[0].hints_rewritten == ["LATEST", "EARLIEST"]
    assert (dev_snapshots / "LATEST").read_text() == "9"
    done = repair(t)
    assert done.ok and done.branches[0].latest_after == 4 and done.branches[0].earliest_after == 2
    assert (dev_snapshots / "LATEST").read_text() == "4" and (dev_snapshots / "EARLIEST").read_text() == "2"
    assert (Path(t.path) / "snapshot" / "LATEST").read_text() == main_hint
    assert check(t).warnings == []
    assert every_state_reads(t, model) == 3 + 1 + 3 + 1


def test_repair_removes_a_branchs_unreadable_snapshot_only(forked: tuple[Table, Model]) -> None:
    """A torn rollback on dev left its newest snapshot naming a manifest list that is gone:
    repair removes that snapshot from dev, nothing of main's."""
    t, model = forked
    dev = t.on_branch("dev")
    lost = dev.snapshots.snapshot(4).delta_manifest_list
    (Path(t.path) / "manifest" / lost).unlink()
    found = check(t)
    assert not found.ok and {(p.kind, p.branch) for p in found.problems} == {("manifest-list", "dev")}
    main_before = sorted(p.name for p in (Path(t.path) / "snapshot").iterdir())
    done = repair(t)
    assert done.ok and done.snapshots_removed == []
    assert [r.snapshot_id for r in done.branches[0].snapshots_removed] == [4]
    assert dev.snapshots.list_ids() == [2, 3] and dev.snapshots.latest_hint() == 3
    assert sorted(p.name for p in (Path(t.path) / "snapshot").iterdir()) == main_before
    model.forget_after("dev", 3)
    assert check(t).ok and every_state_reads(t, model) == 3 + 1 + 2 + 1


def test_a_branch_without_a_readable_snapshot_is_left_and_reported(forked: tuple[Table, Model]) -> None:
    t, model = forked
    dev = t.on_branch("dev")
    for sid in dev.snapshots.list_ids():
        Path(dev.snapshots.path(sid)).write_text("{not json")
    done = repair(t)
    assert not done.ok and done.problems_left == []
    assert [(p.kind, p.branch) for p in done.branches[0].problems_left] == [("branch", "dev")]
    assert "none of its 3 snapshots can be read" in done.branches[0].problems_left[0].detail
    assert dev.snapshots.list_ids() == [2, 3, 4]  # nothing changed on the branch
    with pytest.raises(CorruptMetadataError):
        repair(dev)  # the branch's own view refuses, as main's does


# ---- clone ---------------------------------------------------------------------------------
def test_clone_of_a_branch_and_of_a_branch_that_inherits_main_schemas(forked: tuple[Table, Model]) -> None:
    from core.evolution import AddColumn
    from core.types import parse_type

    t, model = forked
    dev = t.on_branch("dev")
    copy = Table.locate("db.copy", warehouse=str(Path(t.path).parents[1]))
    result = clone(dev, copy, tag="d3")
    assert (result.branch, result.snapshot_id) == ("dev", 3)
    assert rows(copy) == model.tags[("dev", "d3")]
    # A branch made as Java Paimon 1.0 makes it: only its snapshot's schema (1) copied, while
    # its data files were written under main's schema 0.
    t.alter([AddColumn("note", parse_type("STRING"))])
    t.write(pa.table({"id": pa.array([5], pa.int64()), "v": ["e"], "note": ["n"]}))
    model.record(t, {5: "e"})
    create_branch(t, "java")
    java = t.on_branch("java")
    (Path(java.branch_path) / "schema" / "schema-0").unlink()
    copy2 = Table.locate("db.copy2", warehouse=str(Path(t.path).parents[1]))
    assert len(clone(java, copy2).schemas_copied) == 2
    assert sorted(p.name for p in (Path(copy2.path) / "schema").iterdir()) == ["schema-0", "schema-1"]
    assert rows(copy2) == model.snaps["main"][4]
    assert check(copy2).ok
