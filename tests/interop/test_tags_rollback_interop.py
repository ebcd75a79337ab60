"""Tags, rollback and orphan removal across lakectl and pypaimon (the official reader/writer).

pypaimon reads lakectl's tags, and the table after a lakectl rollback and after
remove-orphan-files; lakectl reads the tags pypaimon creates and rolls back to them.
Expected rows are the batches each test wrote.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle import official_read, official_write

from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.rollback import rollback
from core.ops.tags import create_tag, list_tags
from core.table import Table

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string()), ("dt", pa.string())])


def batch(i: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "v": f"v{i}", "dt": "a"}, {"id": 1, "v": f"u{i}", "dt": "b"}],
                                schema=SCHEMA)


def canon(data: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["v"], r["dt"]) for r in data.select(["id", "v", "dt"]).to_pylist())


def lakectl_table(tmp_path: Path, writes: int) -> tuple[Table, list[list[tuple[Any, ...]]]]:
    """A PK table written by lakectl; returns it and the expected rows of snapshot i+1."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id INT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    model: dict[tuple[int, str], tuple[Any, ...]] = {}
    states = []
    for i in range(1, writes + 1):
        data = batch(i)
        t.write(data)
        for r in data.to_pylist():
            model[(r["id"], r["dt"])] = (r["id"], r["v"], r["dt"])
        states.append(sorted(model.values()))
    return t, states


def test_pypaimon_reads_lakectl_tags(tmp_path: Path) -> None:
    t, states = lakectl_table(tmp_path, 3)
    create_tag(t, "first", snapshot_id=1, time_retained="1d")
    create_tag(t, "second", snapshot_id=2)
    for name, sid in (("first", 1), ("second", 2)):
        data, meta = official_read(t.path, tmp_path, tag=name)
        assert canon(data) == states[sid - 1], name
    latest, _ = official_read(t.path, tmp_path)
    assert canon(latest) == states[2]


def test_pypaimon_reads_after_rollback_and_orphan_removal(tmp_path: Path) -> None:
    t, states = lakectl_table(tmp_path, 4)
    create_tag(t, "one", snapshot_id=1)
    create_tag(t, "three", snapshot_id=3)
    result = rollback(t, snapshot_id=2)
    assert result.snapshots_removed == (4, 3) and result.tags_removed == ("three",)
    data, meta = official_read(t.path, tmp_path)
    assert canon(data) == states[1] and meta["latest_snapshot"] == 2
    old = time.time() - 2 * 86400
    for p in Path(t.path).rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))
    removed = remove_orphan_files(t, older_than="1d")
    assert removed.files > 0
    data, _ = official_read(t.path, tmp_path)
    assert canon(data) == states[1]
    data, _ = official_read(t.path, tmp_path, snapshot=1)
    assert canon(data) == states[0]
    data, _ = official_read(t.path, tmp_path, tag="one")
    assert canon(data) == states[0]
    # a lakectl write after the rollback continues at snapshot 3, and pypaimon sees it
    t.write(batch(9))
    data, meta = official_read(t.path, tmp_path)
    assert meta["latest_snapshot"] == 3
    assert canon(data) == sorted(set(states[1]) - {(1, "u2", "b")} | {(9, "v9", "a"), (1, "u9", "b")})


def test_lakectl_reads_and_rolls_back_to_pypaimon_tags(tmp_path: Path) -> None:
    job: dict[str, Any] = {
        "warehouse": str(tmp_path / "wh"), "table": "db.p",
        "schema": {"fields": [["id", "INT NOT NULL"], ["v", "STRING"], ["dt", "STRING NOT NULL"]],
                   "primary_keys": ["id", "dt"], "partition_keys": ["dt"], "options": {"bucket": "2"},
                   "comment": None},
        "steps": [{"op": "write", "overwrite": False, "overwrite_partition": None},
                  {"op": "tag", "name": "t1", "snapshot": None},
                  {"op": "write", "overwrite": False, "overwrite_partition": None},
                  {"op": "tag", "name": "t2", "snapshot": None},
                  {"op": "write", "overwrite": False, "overwrite_partition": None}],
    }
    official_write(job, [batch(1), batch(2), batch(3)], tmp_path)
    t = Table.open("db.p", warehouse=str(tmp_path / "wh"))
    expected_t1, _ = official_read(t.path, tmp_path, tag="t1")
    expected_t2, _ = official_read(t.path, tmp_path, tag="t2")
    tags = {i.tag: i for i in list_tags(t)}
    assert sorted(tags) == ["t1", "t2"] and tags["t1"].snapshot_id < tags["t2"].snapshot_id
    assert tags["t1"].time_retained is None  # pypaimon 2.1 writes no tag fields without a TTL
    raw = json.loads(Path(t.tags.path("t1")).read_text())
    assert t.tags.snapshot("t1").to_dict() == {k: v for k, v in raw.items() if not k.startswith("tag")}
    assert canon(t.scan(tag="t1")) == canon(expected_t1)
    assert canon(t.scan(tag="t2")) == canon(expected_t2)
    result = rollback(t, tag="t1")
    assert result.tags_removed == ("t2",)
    data, meta = official_read(t.path, tmp_path)
    assert canon(data) == canon(expected_t1) and meta["latest_snapshot"] == tags["t1"].snapshot_id


@pytest.mark.java
@pytest.mark.slow
def test_java_and_pypaimon_read_renamed_replaced_and_surviving_expired_tags(tmp_path: Path) -> None:
    """lakectl renames a tag, re-points another with --replace and expires a third; then expire
    and remove-orphan-files run: Java Paimon and pypaimon read every remaining tag as the model
    says, and find the renamed and expired names gone."""
    import datetime as dt

    from java_oracle import java_read

    from core.ops.tags import expire_tags, rename_tag

    t, states = lakectl_table(tmp_path, 4)
    create_tag(t, "draft", snapshot_id=1)
    create_tag(t, "moving", snapshot_id=1)
    t.tags.create("stale", t.snapshots.snapshot(2), time_retained=dt.timedelta(hours=1),
                  create_time=dt.datetime.now() - dt.timedelta(days=1))
    rename_tag(t, "draft", "release")
    create_tag(t, "moving", snapshot_id=3, replace=True)
    assert [e.tag for e in expire_tags(t)] == ["stale"]
    t.expire(retain_min=1, retain_max=1, max_deletes=1000, dry_run=False)
    old = time.time() - 2 * 86400
    for p in Path(t.path).rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))
    remove_orphan_files(t, older_than="1d")

    def as_lists(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
        return sorted([list(r) for r in rows])

    assert sorted(t.tags.names()) == ["moving", "release"]
    for name, sid in (("release", 1), ("moving", 3)):
        rows, _ = java_read(t.path, tag=name)
        assert rows == as_lists(states[sid - 1]), name
        data, _ = official_read(t.path, tmp_path, tag=name)
        assert canon(data) == states[sid - 1], name
    rows, meta = java_read(t.path)
    assert rows == as_lists(states[3]) and meta["latest_snapshot"] == 4
    for gone in ("draft", "stale"):
        with pytest.raises(Exception):
            java_read(t.path, tag=gone)


@pytest.mark.java
@pytest.mark.slow
def test_java_reads_its_own_tag_after_lakectl_renames_and_replaces_it(tmp_path: Path) -> None:
    """Java writes two snapshots and tags the first; lakectl renames that tag and replaces a
    second one of Java's; Java reads both under their new names and snapshots, and
    lakectl's partitions/buckets views agree with the rows Java reads."""
    from java_oracle import java_read, java_run

    from core.ops.table_stats import bucket_stats, partition_stats
    from core.ops.tags import rename_tag

    path = tmp_path / "wh" / "db.db" / "j"
    first = [[1, "v1", "a"], [2, "v2", "b"]]
    second = [[3, "v3", "a"]]
    java_run(path, [{"op": "write", "rows": first}, {"op": "tag", "name": "java-tag", "snapshot": 1},
                    {"op": "tag", "name": "java-other", "snapshot": 1}, {"op": "write", "rows": second}],
             create={"fields": [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"},
                                {"name": "dt", "type": "STRING NOT NULL"}],
                     "primaryKeys": ["id", "dt"], "partitionKeys": ["dt"], "options": {"bucket": "1"}})
    t = Table.open(str(path))
    raw = Path(t.tags.path("java-tag")).read_bytes()
    rename_tag(t, "java-tag", "renamed")
    assert Path(t.tags.path("renamed")).read_bytes() == raw and not t.tags.exists("java-tag")
    create_tag(t, "java-other", snapshot_id=2, replace=True)
    rows, _ = java_read(path, tag="renamed")
    assert rows == sorted(first)
    rows, _ = java_read(path, tag="java-other")
    assert rows == sorted(first + second)
    by_partition = {p.partition["dt"]: p.record_count for p in partition_stats(t)}
    assert by_partition == {"a": 2, "b": 1}  # Java's rows per partition, one file per row batch
    assert sum(b.file_count for b in bucket_stats(t)) == 3
