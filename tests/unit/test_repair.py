"""check --repair: a table damaged by hand is made sound again by removing only snapshot and
tag files (and rewriting hints), never a file a kept snapshot or tag needs.

The expectations come from a model built while writing (the rows of every snapshot, the data
files each commit added), not from lakectl reading its own table: after a repair every listed
snapshot and tag scans to the model's rows, ``check`` passes, the only files gone are the
removed snapshot and tag files, and a dry run reports the same and changes no byte.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import CorruptMetadataError
from core.evolution import AddColumn
from core.fileio import inject_fault
from core.ops.check import check
from core.ops.create import create
from core.ops.repair import repair
from core.table import Table
from core.types import parse_type

# The writes of the model table, one per snapshot; "compact" is a full compaction.
WRITES: list[dict[int, str] | str] = [
    {1: "a", 2: "a", 3: "a", 4: "a"},
    {3: "b", 4: "b", 5: "b", 6: "b"},
    {1: "c"},
    "compact",
    {7: "d", 8: "d"},
    {2: "e"},
]
TAGS = {"t1": 1, "t2": 2, "t5": 5}


@dataclasses.dataclass
class Built:
    table: Table
    rows: dict[int, list[tuple[int, str]]]  # snapshot id -> the rows it should scan to
    added: dict[int, set[Path]]  # snapshot id -> the data files its commit added


def _data_files(table: Table) -> set[Path]:
    return set(Path(table.path).rglob("data-*.parquet"))


def build(root: Path, *, expire_first_two: bool = False) -> Built:
    table = Table.locate("db.t", warehouse=str(root / "wh"))
    create(table, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1"})
    state: dict[int, str] = {}
    rows, added = {}, {}
    for sid, write in enumerate(WRITES, 1):
        before = _data_files(table)
        if write == "compact":
            table.compact(full=True)
        else:
            table.write(pa.table({"id": list(write), "v": list(write.values())}))
            state.update(write)
        assert table.snapshots.list_ids()[-1] == sid
        rows[sid] = sorted(state.items())
        added[sid] = _data_files(table) - before
    for name, sid in TAGS.items():
        table.tags.create(name, table.snapshots.snapshot(sid))
    if expire_first_two:
        table.expire(retain_max=4, retain_min=1, dry_run=False)
        assert table.snapshots.list_ids() == [3, 4, 5, 6]
    return Built(table, rows, added)


def _tree(path: str) -> dict[str, bytes]:
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            out[p] = Path(p).read_bytes()
    return out


def _scan(table: Table, **at) -> list[tuple[int, str]]:
    data = table.scan(**at)
    return sorted(zip(data.column("id").to_pylist(), data.column("v").to_pylist()))


def _damage(built: Built, how: str) -> None:
    t = built.table
    if how == "data-file-of-2":  # only snapshots 2 and 3 (and tag t2) need it: 4 compacted it away
        (victim,) = built.added[2]
        victim.unlink()
    elif how == "latest-manifest-list":
        Path(t.path, "manifest", t.snapshots.snapshot(6).delta_manifest_list).unlink()
    elif how == "garbled-snapshot-2":
        Path(t.snapshots.path(2)).write_text('{"id": 2, "schemaId"')
    elif how == "garbled-snapshot-4":
        Path(t.snapshots.path(4)).write_text("not json")
    elif how == "broken-tag":
        Path(t.tags.path("t5")).write_text("{")
    elif how == "stale-latest":
        Path(t.snapshots.dir, "LATEST").write_text("9")
    else:
        raise AssertionError(how)


# damage -> (removed snapshot ids and their reason's start, removed tags, earliest, latest, hints)
CASES = {
    "data-file-of-2": ({1: "older than unreadable snapshot 3", 2: "unreadable: data-file", 3: "unreadable: data-file"},
                       {"t2": "unreadable: data-file"}, 4, 6, ["EARLIEST"]),
    "latest-manifest-list": ({6: "unreadable: manifest-list"}, {}, 1, 5, ["LATEST"]),
    "garbled-snapshot-2": ({1: "older than unreadable snapshot 2", 2: "unreadable: snapshot"}, {}, 3, 6,
                           ["EARLIEST"]),
    "broken-tag": ({}, {"t5": "unreadable: tag"}, 1, 6, []),
    "stale-latest": ({}, {}, 1, 6, ["LATEST"]),
}


def _assert_repaired(built: Built, kept_tags: set[str]) -> None:
    t = built.table
    ids = t.snapshots.list_ids()
    assert ids == list(range(ids[0], ids[-1] + 1))
    for sid in ids:
        assert _scan(t, snapshot_id=sid) == built.rows[sid], sid
    assert set(t.tags.names()) == kept_tags
    for name in kept_tags:
        assert _scan(t, tag=name) == built.rows[TAGS[name]], name
    after = check(t)
    assert after.ok and not after.problems and not after.warnings, (after.problems, after.warnings)
    assert t.snapshots.latest_id() == ids[-1] and t.snapshots.earliest_id() == ids[0]


def _removed_paths(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return set(before) - set(after)


@pytest.mark.parametrize("damage", sorted(CASES))
def test_repair_keeps_the_readable_run_and_removes_only_metadata(tmp_path: Path, damage: str) -> None:
    built = build(tmp_path)
    t = built.table
    _damage(built, damage)
    removed, tags_removed, earliest, latest, hints = CASES[damage]

    before = _tree(t.path)
    dry = repair(t, dry_run=True)
    assert _tree(t.path) == before  # a dry run changes no byte
    result = repair(t)
    assert dataclasses.replace(dry, dry_run=False) == result and dry.dry_run and not result.dry_run

    assert [r.snapshot_id for r in result.snapshots_removed] == \
        [s for s in sorted(removed, reverse=True) if s > latest] + [s for s in sorted(removed) if s < earliest]
    for r in result.snapshots_removed:
        assert r.reason.startswith(removed[r.snapshot_id]), r
    assert {r.tag: r.reason for r in result.tags_removed}.keys() == tags_removed.keys()
    for r in result.tags_removed:
        assert r.reason.startswith(tags_removed[r.tag]), r
    assert (result.earliest_after, result.latest_after) == (earliest, latest)
    assert result.hints_rewritten == hints
    assert result.ok and result.problems_left == []

    # Only the removed snapshot and tag files went; hints are the only files rewritten.
    after = _tree(t.path)
    gone = {t.snapshots.path(s) for s in removed} | {t.tags.path(n) for n in tags_removed}
    assert _removed_paths(before, after) == gone
    changed = {p for p in after if p in before and after[p] != before[p]}
    assert changed <= {os.path.join(t.snapshots.dir, h) for h in ("LATEST", "EARLIEST")}
    assert all(not p.startswith(t.snapshots.dir) or p in after
               for p in before if p.endswith(".json"))  # expire journals are not touched
    _assert_repaired(built, set(TAGS) - set(tags_removed))

    again = repair(t)  # a repaired table needs nothing more
    assert (again.snapshots_removed, again.tags_removed, again.hints_rewritten, again.ok) == ([], [], [], True)


def test_repair_after_expire_rewrites_earliest_and_keeps_tags_of_removed_snapshots(tmp_path: Path) -> None:
    built = build(tmp_path, expire_first_two=True)
    t = built.table
    _damage(built, "garbled-snapshot-4")
    result = repair(t)
    assert [(r.snapshot_id, r.reason.split(":")[0]) for r in result.snapshots_removed] == \
        [(3, "older than unreadable snapshot 4"), (4, "unreadable")]
    assert (result.earliest_after, result.latest_after, result.hints_rewritten) == (5, 6, ["EARLIEST"])
    assert Path(t.snapshots.dir, "EARLIEST").read_text().strip() == "5"
    # t1 and t2 point at snapshots expired or removed, yet are whole: they stay and still read.
    _assert_repaired(built, set(TAGS))


def test_a_leftover_expire_journal_is_left_alone(tmp_path: Path) -> None:
    built = build(tmp_path)
    journal = Path(built.table.snapshots.dir, ".expire-9-leftover.json")
    journal.write_text("{}")
    _damage(built, "latest-manifest-list")
    assert repair(built.table).latest_after == 5
    assert journal.read_text() == "{}"


def test_no_readable_snapshot_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    t = Table.locate("db.one", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}))
    next(iter(_data_files(t))).unlink()
    before = _tree(t.path)
    for dry_run in (True, False):
        with pytest.raises(CorruptMetadataError, match="none of its 1 snapshots can be read"):
            repair(t, dry_run=dry_run)
    assert _tree(t.path) == before


def test_an_empty_table_is_sound_and_left_as_it_is(tmp_path: Path) -> None:
    t = Table.locate("db.empty", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT", primary_keys=["id"], options={"bucket": "1"})
    before = _tree(t.path)
    result = repair(t)
    assert result.ok and result.snapshots_removed == [] and result.latest_after is None
    assert _tree(t.path) == before


def test_a_broken_schema_no_snapshot_uses_is_left_as_a_problem(tmp_path: Path) -> None:
    t = Table.locate("db.evolved", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT", primary_keys=["id"], options={"bucket": "1"})
    t.alter([AddColumn("v", parse_type("STRING"))])  # schema 1; every snapshot below uses it
    t.write(pa.table({"id": [1], "v": ["a"]}))
    stray = Path(t.path, "schema", "schema-0")
    stray.write_text("{")
    result = repair(t)
    assert result.snapshots_removed == [] and not result.ok
    assert [(p.kind, p.path) for p in result.problems_left] == [("schema", str(stray))]
    assert stray.read_text() == "{"


def test_a_repair_stopped_at_any_change_leaves_a_contiguous_run_and_a_rerun_finishes(tmp_path: Path) -> None:
    """Stopped before each of its changes (an injected failure, as a kill would stop it), the
    listed snapshots stay contiguous and include every snapshot the full repair keeps; a rerun
    then ends where an uninterrupted repair does."""
    template = build(tmp_path / "template")
    _damage(template, "data-file-of-2")
    _damage(template, "latest-manifest-list")  # something to remove at both ends
    wh = Path(template.table.path).parents[1]
    mutations = 1
    while True:
        clone = tmp_path / f"run{mutations}"
        shutil.copytree(wh, clone)
        t = Table.open("db.t", warehouse=str(clone))
        try:
            with inject_fault("fail", "mutation", mutations) as fault:
                repair(t)
        except OSError:
            ids = t.snapshots.list_ids()
            assert ids == list(range(ids[0], ids[-1] + 1)) and {4, 5} <= set(ids), (mutations, ids)
            result = repair(t)
            assert (result.earliest_after, result.latest_after, result.ok) == (4, 5, True)
            mutations += 1
            continue
        # Ran to the end: every change was tried once above. The last mutation, the busy
        # marker's delete on the way out, fails without failing the repair (core/busy.py).
        assert fault.seen == mutations
        break
    assert mutations - 1 == 8  # the busy marker, then the changes: snapshots 6, 1, 2, 3, tag t2 and the two hints
    built = Built(t, template.rows, template.added)
    _assert_repaired(built, set(TAGS) - {"t2"})
