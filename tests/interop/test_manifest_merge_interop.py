"""Manifests merged at every commit (core/manifest_merge.py), as Java Paimon 1.0 merges them:
the same number of manifests after the same commits, every snapshot of a merged table read
identically by Java and pypaimon, and Java committing on lakectl's merged manifests."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_oracle import java_read, java_read_snapshots, java_run, lakectl_rows
from oracle import official_read

from core.engines import EngineSettings
from core.ops.compact import compact
from core.ops.compact_manifests import compact_manifests
from core.ops.create import create
from core.ops.write import write
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

LOCAL = EngineSettings(engine="local")
FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]


def manifest_count(t: Table) -> int:
    snap = t.latest_snapshot()
    mio = t.manifests()
    return sum(len(mio.read_manifest_list(n)) for n in (snap.base_manifest_list, snap.delta_manifest_list))


def one_row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]})


def test_300_one_row_commits_leave_as_many_manifests_as_java_leaves(tmp_path: Path) -> None:
    options = {"bucket": "1", "write-only": "true"}  # no compaction: only the manifest merge differs
    java_path = tmp_path / "wh" / "db.db" / "java"
    java_run(java_path, [{"op": "write", "rows": [[i, f"v{i}"]]} for i in range(300)],
             create={"fields": FIELDS, "primaryKeys": ["id"], "options": options})
    java = Table.open("db.java", warehouse=str(tmp_path / "wh"))
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options=options)
    for i in range(300):
        write(t, one_row(i), engine_settings=LOCAL)
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    # Java's minor compaction merges 30 small manifests into one: 300 commits leave a handful.
    assert manifest_count(t) == manifest_count(java) <= 31
    rows, _ = java_read(t.path)
    assert rows == lakectl_rows(t.scan())
    assert sorted(r[0] for r in rows) == list(range(300))
    theirs, _ = official_read(t.path, tmp_path)
    assert sorted(theirs.column("id").to_pylist()) == list(range(300))


def test_every_snapshot_of_a_merged_table_reads_the_same_in_java_and_pypaimon(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    # Small rules so that both merges happen within a few commits: a minor merge every 4
    # manifests, and a full one (DELETE entries folded out) once small manifests pass 6 KB.
    create(t, "id BIGINT NOT NULL, v STRING, p INT NOT NULL", primary_keys=["id", "p"], partition_keys=["p"],
           options={"bucket": "2", "manifest.merge-min-count": "4",
                    "manifest.full-compaction-threshold-size": "6 kb", "num-sorted-run.compaction-trigger": "3"})
    for i in range(24):
        batch = pa.table({"id": pa.array([i % 7, i], pa.int64()), "v": [f"a{i}", f"b{i}"],
                          "p": pa.array([i % 3, (i + 1) % 3], pa.int32())})
        write(t, batch, engine_settings=LOCAL)
        if i % 8 == 7:
            compact(t, full=True, engine_settings=LOCAL)
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    ids = t.snapshots.list_ids()
    assert manifest_count(t) < len(ids) / 2
    java = java_read_snapshots(t.path, ids)
    for sid in ids:
        assert java[sid] == lakectl_rows(t.scan(snapshot_id=sid)), sid
    for sid in ids[::7] + ids[-1:]:
        theirs, _ = official_read(t.path, tmp_path, snapshot=sid)
        assert lakectl_rows(theirs.select(["id", "v", "p"])) == java[sid], sid

    # Java commits on lakectl's merged manifests (and merges them its own way); lakectl reads
    # what Java then reads.
    java_run(t.path, [{"op": "write", "rows": [[100 + i, f"j{i}", i % 3] for i in range(3)]},
                      {"op": "compact", "full": True}, {"op": "write", "rows": [[1, "java", 1]]}])
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    rows, meta = java_read(t.path)
    assert meta["latest_snapshot"] == t.snapshots.latest_id()
    assert rows == lakectl_rows(t.scan())


def test_compact_manifests_brings_an_unmerged_table_down_and_java_reads_it_the_same(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    # A writer that never merges, as lakectl was before: merge-min-count past the commit count.
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "2", "manifest.merge-min-count": "1000"})
    for i in range(40):
        write(t, one_row(i % 25), engine_settings=LOCAL)
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    before_rows = lakectl_rows(t.scan())
    assert manifest_count(t) >= 40
    result = compact_manifests(t)
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    assert result.snapshot_id == t.snapshots.latest_id()
    assert manifest_count(t) == result.manifests_after <= 2
    rows, _ = java_read(t.path)
    assert rows == before_rows == lakectl_rows(t.scan())
    theirs, _ = official_read(t.path, tmp_path)
    assert lakectl_rows(theirs.select(["id", "v"])) == before_rows
    # Nothing left to merge: no second snapshot.
    assert compact_manifests(t).snapshot_id is None
    assert Table.open("db.t", warehouse=str(tmp_path / "wh")).snapshots.latest_id() == result.snapshot_id
