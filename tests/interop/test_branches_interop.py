"""Branches across lakectl, Java Paimon 1.0 (the reference) and pypaimon: both read a branch
as Flink and Spark users address it, by the identifier ``db.t$branch_NAME`` in their
filesystem catalog. They read the branches lakectl creates and writes (at the latest
snapshot, at the branch's own snapshots and tags), also after main expired and lost its
orphans; Java writes through ``db.t$branch_NAME`` on lakectl's branches and its own, and
lakectl reads and extends the branches Java creates. Expected rows come from a dict model of
what was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, java_read_snapshots, java_run, lakectl_rows
from oracle import official_read

from core.ops.branches import create_branch
from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.tags import create_tag, delete_tag
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def write(table: Table, model: dict[int, str], rows: dict[int, str]) -> None:
    table.write(pa.Table.from_pylist([{"id": k, "v": v} for k, v in rows.items()], schema=SCHEMA))
    model.update(rows)


def expected(model: dict[int, str]) -> list[list[Any]]:
    return sorted([[k, v] for k, v in model.items()], key=lambda r: str(r))


def same(rows: list[list[Any]], model: dict[int, str]) -> bool:
    return sorted(rows, key=str) == expected(model)


def test_java_reads_lakectl_branches_after_main_expired(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "2", "write-only": "true"})
    main: dict[int, str] = {}
    write(t, main, {1: "a", 2: "b", 3: "c"})
    at_tag = dict(main)
    create_tag(t, "t1", snapshot_id=1)
    write(t, main, {2: "B", 4: "d"})
    create_branch(t, "dev", tag="t1")
    create_branch(t, "snap2", snapshot_id=2)
    dev, snap2 = dict(at_tag), dict(main)
    write(t.on_branch("dev"), dev, {1: "dev", 9: "z"})
    write(t.on_branch("snap2"), snap2, {5: "e"})
    # Main forgets its history: every file the branches share is DELETEd by main's compaction.
    delete_tag(t, "t1")
    t.compact(full=True)
    write(t, main, {6: "f"})
    t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
    remove_orphan_files(t, older_than="0s", force=True)

    for branch, model in (("dev", dev), ("snap2", snap2)):
        view = t.on_branch(branch)
        rows, meta = java_read(t.path, branch=branch)
        assert same(rows, model), branch
        assert rows == lakectl_rows(view.scan())
        assert meta["latest_snapshot"] == view.snapshots.latest_id()
        # pypaimon too, opening db.t$branch_NAME in its filesystem catalog.
        official, official_meta = official_read(t.path, tmp_path, branch=branch)
        assert lakectl_rows(official) == rows
        assert official_meta["latest_snapshot"] == view.snapshots.latest_id()
    # The branch's own snapshot 1 (main's expired long ago). Not --tag: this Java build looks
    # for a branch's tags in main's tag/ (see the next test).
    rows, _ = java_read(t.path, branch="dev", snapshot=1)
    assert same(rows, at_tag)
    rows, _ = java_read(t.path)
    assert same(rows, main)


def test_java_reads_a_branch_at_its_snapshots_and_writes_through_its_identifier(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    main: dict[int, str] = {}
    write(t, main, {1: "a"})
    main_at_1 = dict(main)
    write(t, main, {2: "b"})
    create_tag(t, "same", snapshot_id=1)
    create_branch(t, "dev")  # starts at main's snapshot 2
    dev_table, dev = t.on_branch("dev"), dict(main)
    states = {2: dict(dev)}
    write(dev_table, dev, {3: "dev 3", 1: "dev"})
    states[3] = dict(dev)
    create_tag(dev_table, "same", snapshot_id=3)  # the name of main's tag, on another snapshot
    create_tag(dev_table, "dev-only", snapshot_id=3)
    write(dev_table, dev, {4: "dev 4"})
    states[4] = dict(dev)
    write(t, main, {9: "main 3"})
    # Java commits through db.t$branch_dev on lakectl's branch; main stays as it was.
    meta = java_run(t.path, [{"op": "write", "rows": [[5, "java"], [2, "B"]], "branch": "dev"}])
    assert meta == {"snapshots": [5]}
    dev.update({5: "java", 2: "B"})
    states[5] = dict(dev)
    assert dev_table.snapshots.latest_id() == 5 and same(lakectl_rows(dev_table.scan()), dev)
    assert same(lakectl_rows(t.scan()), main) and t.snapshots.latest_id() == 3

    java = java_read_snapshots(t.path, sorted(states), branch="dev")
    for sid, model in states.items():
        assert same(java[sid], model), sid
        assert java[sid] == lakectl_rows(dev_table.scan(snapshot_id=sid)), sid
    # A branch's tag is the branch's: lakectl reads it so, and so does pypaimon.
    for tag in ("same", "dev-only"):
        assert same(lakectl_rows(dev_table.scan(tag=tag)), states[3]), tag
        official, _ = official_read(t.path, tmp_path, branch="dev", tag=tag)
        assert same(lakectl_rows(official), states[3]), tag
    # Java 1.0's scan.tag-name on db.t$branch_dev looks in main's tag/ instead
    # (StaticFromTagStartingScanner builds its TagManager without the branch; fixed upstream by
    # apache/paimon#9044): it reads main's tag of that name, and has no branch-only tag.
    rows, _ = java_read(t.path, branch="dev", tag="same")
    assert same(rows, main_at_1)
    with pytest.raises(AssertionError, match="Tag 'dev-only' doesn't exist"):
        java_read(t.path, branch="dev", tag="dev-only")


def test_lakectl_reads_and_extends_java_branches(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "db.db" / "t"
    java_run(path, [
        {"op": "write", "rows": [[1, "a"], [2, "b"]]},
        {"op": "tag", "name": "t1", "snapshot": 1},
        {"op": "write", "rows": [[2, "B"], [3, "c"]]},
        {"op": "create-branch", "name": "dev", "tag": "t1"},
        {"op": "write", "rows": [[1, "dev"], [7, "g"]], "branch": "dev"},
    ], create={"fields": [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
               "primaryKeys": ["id"], "options": {"bucket": "1"}})
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    dev = t.on_branch("dev")
    assert dev.snapshots.list_ids() == [1, 2]
    dev_model = {1: "dev", 2: "b", 7: "g"}
    assert same(lakectl_rows(dev.scan()), dev_model)
    assert same(lakectl_rows(dev.scan(tag="t1")), {1: "a", 2: "b"})
    assert same(lakectl_rows(t.scan()), {1: "a", 2: "B", 3: "c"})
    # lakectl commits on Java's branch; Java reads it, and main is untouched.
    write(dev, dev_model, {2: "lakectl", 8: "h"})
    rows, meta = java_read(path, branch="dev")
    assert same(rows, dev_model) and meta["latest_snapshot"] == 3
    rows, meta = java_read(path)
    assert same(rows, {1: "a", 2: "B", 3: "c"}) and meta["latest_snapshot"] == 2


def test_lakectl_reads_a_java_branch_that_copied_only_its_snapshots_schema(tmp_path: Path) -> None:
    """Java Paimon 1.0 copies only the tagged snapshot's schema into the branch, while its data
    files were written under older schemas too (Java's own reader then fails on the branch:
    it looks for schema-0 in the branch). lakectl reads the ids the branch lacks from main,
    where they were written before the fork and never change."""
    path = tmp_path / "wh" / "db.db" / "t"
    java_run(path, [
        {"op": "write", "rows": [[1, "a"], [2, "b"]]},
        {"op": "set-option", "key": "snapshot.num-retained.min", "value": "5"},
        {"op": "write", "rows": [[3, "c"]]},
        {"op": "tag", "name": "t2", "snapshot": 2},
        {"op": "create-branch", "name": "dev", "tag": "t2"},
    ], create={"fields": [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
               "primaryKeys": ["id"], "options": {"bucket": "1"}})
    assert sorted(p.name for p in (path / "branch" / "branch-dev" / "schema").iterdir()) == ["schema-1"]
    dev = Table.open("db.t", warehouse=str(tmp_path / "wh"), branch="dev")
    model = {1: "a", 2: "b", 3: "c"}
    assert same(lakectl_rows(dev.scan()), model)
    write(dev, model, {4: "d"})
    assert same(lakectl_rows(dev.scan()), model)
    assert dev.schemas.list_ids() == [1]


def test_java_reads_main_after_a_lakectl_fast_forward(tmp_path: Path) -> None:
    from core.ops.branches import fast_forward

    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "2", "write-only": "true"})
    main: dict[int, str] = {}
    write(t, main, {1: "a", 2: "b"})
    create_branch(t, "dev")
    dev = dict(main)
    write(t.on_branch("dev"), dev, {1: "dev", 3: "c"})
    write(t.on_branch("dev"), dev, {4: "d"})
    write(t, main, {9: "main only"})
    fast_forward(t, "dev")
    rows, meta = java_read(t.path)
    assert same(rows, dev) and rows == lakectl_rows(t.scan())
    assert meta["latest_snapshot"] == 3
    rows, _ = java_read(t.path, snapshot=1)
    assert same(rows, {1: "a", 2: "b"})


def test_java_and_pypaimon_read_a_renamed_branch_under_its_new_name(tmp_path: Path) -> None:
    """Java 1.0 has no rename_branch, but reads a branch by its directory's name: after
    ``branch rename`` both readers find the branch's rows and latest snapshot at the new name."""
    from core.ops.branches import rename_branch

    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "2"})
    main: dict[int, str] = {}
    write(t, main, {1: "a", 2: "b"})
    create_branch(t, "dev")
    dev = dict(main)
    write(t.on_branch("dev"), dev, {2: "dev", 3: "c"})
    rename_branch(t, "dev", "qa")
    rows, meta = java_read(t.path, branch="qa")
    assert same(rows, dev) and meta["latest_snapshot"] == 2
    official, official_meta = official_read(t.path, tmp_path, branch="qa")
    assert lakectl_rows(official) == rows and official_meta["latest_snapshot"] == 2
    assert same(java_read(t.path)[0], main)


@pytest.mark.parametrize("options", [{"branch-merge.enabled": "true"},
                                     {"branch-merge.enabled": "true", "row-tracking.enabled": "true"}],
                         ids=["branch-merge", "branch-merge+row-tracking"])
def test_java_and_pypaimon_read_the_target_of_a_branch_merge(tmp_path: Path, options: dict[str, str]) -> None:
    """Java 1.0 has no merge_branch (nor the option, which it keeps and ignores), but reads the
    target after ``branch merge`` as a plain append table: the target's rows and the rows only
    the source had, each once, also after a second merge (which adds nothing) and a Java write."""
    from core.ops.merge_branch import merge_branch

    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", options=options)
    main: dict[int, str] = {}
    write(t, main, {1: "a", 2: "b"})
    create_branch(t, "dev")
    dev = dict(main)
    write(t.on_branch("dev"), dev, {3: "dev", 4: "dev"})
    write(t, main, {5: "main"})
    assert merge_branch(t, "dev").snapshot_id == 3
    assert merge_branch(t, "dev").snapshot_id is None
    merged = {**main, **dev}
    rows, meta = java_read(t.path)
    assert same(rows, merged) and meta["latest_snapshot"] == 3
    official, official_meta = official_read(t.path, tmp_path)
    assert lakectl_rows(official) == rows and official_meta["latest_snapshot"] == 3
    assert same(java_read(t.path, branch="dev")[0], dev)  # the source keeps its own
    if "row-tracking.enabled" not in options:  # Java 1.0 does not number rows: it writes on plain tables only
        java_run(t.path, [{"op": "write", "rows": [[6, "java"]]}])
        assert same(java_read(t.path)[0], {**merged, 6: "java"})
        # Java's write is an APPEND too: main merges back into dev with it
        assert merge_branch(t, "main", into="dev").files_added == 2
        assert same(java_read(t.path, branch="dev")[0], {**merged, 6: "java"})
