"""Iceberg history beside a Paimon table (core/iceberg/history.py): one Iceberg snapshot per
live Paimon snapshot, read by pyiceberg 0.12 with time travel at every step of one table's
life (write, compact, delete, overwrite, alter-schema, tag create/delete, expire, rollback,
iceberg-sync). At each step, every snapshot the metadata holds reads as ``lakectl scan
--snapshot-id`` does (a primary-key table: its top level, what the last full compaction
wrote), with that snapshot's columns; tags are refs that read as their snapshots; expired
snapshots are gone from the metadata and no kept version names a file expire deleted; old
metadata files are pruned as ``previous-versions-max`` says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from iceberg_oracle import assert_only_named_files, iceberg_read
from java_oracle import lakectl_rows, sort_rows
from test_iceberg_interop import batch, make

from core.manifest import live_entries
from core.ops.tags import create_tag
from core.schema import SchemaManager
from core.table import Table

pytestmark = [pytest.mark.interop]

REPO = Path(__file__).resolve().parents[2]


def lakectl(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "lakectl", *args], capture_output=True, text=True, env=env,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr


def metadata_dir(t: Table) -> Path:
    return Path(t.path) / "metadata"


def current_version(t: Table) -> int:
    return int((metadata_dir(t) / "version-hint.text").read_text())


def top_level(t: Table, snapshot_id: int) -> tuple[set, bool]:
    """The identifiers of a primary-key table's top-level files at a snapshot, and whether
    every live file is at the top (then the snapshot's scan is exactly the top level)."""
    top = t.schema.core_options.num_levels - 1
    entries = live_entries(t.manifests(), t.snapshots.snapshot(snapshot_id))
    return {e.identifier for e in entries if e.file.level == top}, all(e.file.level == top for e in entries)


# Rows a primary-key table's snapshot showed, by (snapshot id, commit time): once the snapshot
# that wrote its top level is expired, what was computed before still holds.
_SEEN: dict[tuple[str, int, int], list] = {}


def expected_rows(t: Table, snapshot_id: int) -> list:
    """What an Iceberg reader must see at a snapshot: lakectl's scan of it (append table); for a
    primary-key table, the scan of the newest snapshot at or before it whose files were all at
    the top level and the same top-level files (Paimon's rule: only the top level shows)."""
    if not t.schema.has_primary_key:
        return lakectl_rows(t.scan(snapshot_id=snapshot_id))
    key = (t.path, snapshot_id, t.snapshots.snapshot(snapshot_id).time_millis)
    files, _ = top_level(t, snapshot_id)
    if not files:
        return []
    for earlier in range(snapshot_id, t.snapshots.earliest_id() - 1, -1):
        same, whole = top_level(t, earlier)
        if same == files and whole:
            _SEEN[key] = _as_of_schema(t, lakectl_rows(t.scan(snapshot_id=earlier)), earlier, snapshot_id)
            return _SEEN[key]
    assert key in _SEEN, f"no snapshot up to {snapshot_id} shows exactly its top level"
    return _SEEN[key]


def _as_of_schema(t: Table, rows: list, scanned: int, shown: int) -> list:
    """Rows scanned at snapshot ``scanned`` in the columns of snapshot ``shown`` (by field id; a
    column added since reads as null)."""
    manager = SchemaManager(t.file_io, t.path)
    old = [f.id for f in manager.schema(t.snapshots.snapshot(scanned).schema_id).fields]
    new = [f.id for f in manager.schema(t.snapshots.snapshot(shown).schema_id).fields]
    return sort_rows([[r[old.index(i)] if i in old else None for i in new] for r in rows])


def assert_history(t: Table, tmp_path: Path) -> dict:
    """Every live Paimon snapshot is in the current metadata, and reads (time travel) as
    lakectl scans it, with its own columns; no snapshot else is there."""
    t = Table.open(t.path)
    live = list(range(t.snapshots.earliest_id(), t.snapshots.latest_id() + 1))
    _, meta = iceberg_read(metadata_dir(t), tmp_path, each_snapshot=True)
    assert meta["snapshots"] == live
    assert meta["current_snapshot"] == live[-1] and meta["refs"]["main"] == live[-1]
    for sid in live:
        read = meta["each"][sid]
        assert read["rows"] == expected_rows(t, sid), f"snapshot {sid}"
        schema = SchemaManager(t.file_io, t.path).schema(t.snapshots.snapshot(sid).schema_id)
        assert [f["name"] for f in read["schema"]] == [f.name for f in schema.fields], f"snapshot {sid}"
        assert [f["id"] for f in read["schema"]] == [f.id for f in schema.fields], f"snapshot {sid}"
    return meta


def snapshot_columns(meta: dict, sid: int) -> list[str]:
    return [f["name"] for f in meta["each"][sid]["schema"]]


def assert_no_version_names_missing_files(t: Table) -> None:
    """Every data file a kept metadata version lists (any snapshot, any status but DELETED)
    exists: expire's deletions left no version pointing at nothing."""
    import fastavro

    for name in os.listdir(metadata_dir(t)):
        if not name.endswith(".metadata.json"):
            continue
        doc = json.loads((metadata_dir(t) / name).read_text())
        for snap in doc["snapshots"]:
            with open(snap["manifest-list"], "rb") as f:
                manifests = [r["manifest_path"] for r in fastavro.reader(f)]
            for m in manifests:
                with open(m, "rb") as f:
                    for r in fastavro.reader(f):
                        if r["status"] != 2:
                            assert os.path.exists(r["data_file"]["file_path"]), (name, snap["snapshot-id"])


def test_append_table_history_through_every_verb(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    # Manifests merge once there are 3 small ones (Java's options), so merging is in every step.
    t = make(tmp_path, "hist", primary_key=False, partitioned=True,
             options={"metadata.iceberg.previous-versions-max": "1", "metadata.iceberg.compaction.min.file-num": "2",
                      "metadata.iceberg.compaction.max.file-num": "3"})
    t.write(batch(0, 10, "a"))
    t.write(batch(10, 10, "b"))
    assert_history(t, tmp_path)
    t.compact(full=True)  # 3: every file replaced
    t.delete("id < 4")  # 4
    meta = assert_history(t, tmp_path)
    doc = json.loads((metadata_dir(t) / "v4.metadata.json").read_text())
    assert [s["summary"]["operation"] for s in doc["snapshots"]] == ["append", "append", "replace", "overwrite"]
    assert [s.get("parent-snapshot-id") for s in doc["snapshots"]] == [None, 1, 2, 3]
    assert [e["snapshot-id"] for e in doc["snapshot-log"]] == [1, 2, 3, 4]
    assert [Path(e["metadata-file"]).name for e in doc["metadata-log"]] == ["v3.metadata.json"]
    assert_only_named_files(metadata_dir(t), [3, 4])  # previous-versions-max 1

    # Schema evolution: old snapshots keep their columns, the new one has its own.
    lakectl("alter-schema", "db.hist", "-w", wh, "--rename-column", "name:label", "--drop-column", "score",
            "--add-column", "note STRING")
    t = Table.open("db.hist", warehouse=wh)
    t.write(batch(20, 5, "c").drop_columns(["score"]).rename_columns(
        ["id", "big", "label", "amount", "day", "ts", "flag", "dt"]).append_column("note", pa.array(["n"] * 5)))
    meta = assert_history(t, tmp_path)  # 5
    assert "score" in snapshot_columns(meta, 1) and "name" in snapshot_columns(meta, 4)
    assert snapshot_columns(meta, 5)[-1] == "note" and "label" in snapshot_columns(meta, 5)
    doc = json.loads((metadata_dir(t) / "v5.metadata.json").read_text())
    assert [s["schema-id"] for s in doc["schemas"]] == [0, 1] and doc["current-schema-id"] == 1
    assert [s["schema-id"] for s in doc["snapshots"]] == [0, 0, 0, 0, 1]

    # Tags are refs; creating one rewrites the current version in place (no new snapshot).
    lakectl("tag", "create", "db.hist", "t2", "-w", wh, "--snapshot-id", "2")
    t = Table.open("db.hist", warehouse=wh)
    create_tag(t, "t5")
    assert current_version(t) == 5
    rows, meta = iceberg_read(metadata_dir(t), tmp_path)
    assert meta["refs"] == {"main": 5, "t2": 2, "t5": 5}
    tag_rows, _ = iceberg_read(metadata_dir(t), tmp_path, snapshot=meta["refs"]["t2"])
    assert tag_rows == lakectl_rows(t.scan(tag="t2"))
    assert_only_named_files(metadata_dir(t), [4, 5])

    t.write(batch(100, 6, "over").drop_columns(["score"]).rename_columns(
        ["id", "big", "label", "amount", "day", "ts", "flag", "dt"]).append_column("note", pa.array(["o"] * 6)),
        mode="overwrite")  # 6
    meta = assert_history(t, tmp_path)
    assert meta["refs"] == {"main": 6, "t2": 2, "t5": 5}
    lakectl("tag", "delete", "db.hist", "t5", "-w", wh)
    _, meta = iceberg_read(metadata_dir(t), tmp_path)
    assert meta["refs"] == {"main": 6, "t2": 2}

    # Expire: snapshots 1-3 leave the metadata; t2's snapshot is expired in Paimon (the tag
    # keeps its files) and, as in Java Paimon, a ref needs its snapshot in the metadata: gone.
    t = Table.open("db.hist", warehouse=wh)
    t.expire(retain_max=3, retain_min=3, older_than="0s", dry_run=False)
    meta = assert_history(t, tmp_path)
    assert meta["snapshots"] == [4, 5, 6] and meta["refs"] == {"main": 6}
    # v5 (kept by previous-versions-max) named the expired snapshots: deleted with it.
    assert_only_named_files(metadata_dir(t), [6])
    assert_no_version_names_missing_files(t)

    # Rollback to 5: snapshot 6 leaves, v6 goes, v5 is the target's history.
    t.rollback(snapshot_id=5, dry_run=False)
    meta = assert_history(t, tmp_path)
    assert meta["snapshots"] == [4, 5] and current_version(t) == 5
    assert_only_named_files(metadata_dir(t), [5])
    Table.open("db.hist", warehouse=wh).write(batch(200, 3, "d").drop_columns(["score"]).rename_columns(
        ["id", "big", "label", "amount", "day", "ts", "flag", "dt"]).append_column("note", pa.array(["d"] * 3)))
    assert assert_history(t, tmp_path)["snapshots"] == [4, 5, 6]

    # iceberg-sync rebuilds the whole history from the Paimon snapshots.
    lakectl("iceberg-sync", "db.hist", "-w", wh)
    assert assert_history(t, tmp_path)["snapshots"] == [4, 5, 6]
    assert_only_named_files(metadata_dir(t), [5, 6])  # v6 replaced whole; v5 kept, as the option says
    assert_no_version_names_missing_files(t)


def test_primary_key_table_history_shows_each_snapshots_top_level(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = make(tmp_path, "pk", primary_key=True, partitioned=True)
    t.write(batch(0, 20, "a"))  # 1: level 0 only, nothing shows
    t.write(batch(10, 20, "b"))  # 2
    t.compact(full=True)  # 3
    t.write(batch(25, 10, "c"))  # 4: level 0 again; 3's top level shows
    t.delete("id < 5")  # 5
    meta = assert_history(t, tmp_path)
    assert meta["each"][1]["rows"] == [] and meta["each"][5]["rows"] == meta["each"][3]["rows"] != []
    lakectl("alter-schema", "db.pk", "-w", wh, "--add-column", "note STRING")
    t = Table.open("db.pk", warehouse=wh)
    t.write(batch(40, 5, "d").append_column("note", pa.array(["n"] * 5)))  # 6
    t.compact(full=True)  # 7
    meta = assert_history(t, tmp_path)
    assert snapshot_columns(meta, 7)[-1] == "note" and "note" not in snapshot_columns(meta, 5)
    assert_only_named_files(metadata_dir(t))  # previous-versions-max 0: the current version only
    t.expire(retain_max=3, retain_min=3, older_than="0s", dry_run=False)
    assert assert_history(t, tmp_path)["snapshots"] == [5, 6, 7]
    assert_only_named_files(metadata_dir(t))
    assert_no_version_names_missing_files(t)
    t.rollback(snapshot_id=6, dry_run=False)
    assert assert_history(t, tmp_path)["snapshots"] == [5, 6]
    Table.open("db.pk", warehouse=wh).compact(full=True)
    assert assert_history(t, tmp_path)["snapshots"] == [5, 6, 7]
    assert_only_named_files(metadata_dir(t))


def _manifests_of(t: Table, snapshot_id: int) -> list[tuple[str, int]]:
    """The manifests (name, entry statuses) the snapshot's manifest list names, read with fastavro."""
    import fastavro

    doc = json.loads((metadata_dir(t) / f"v{current_version(t)}.metadata.json").read_text())
    snap = next(s for s in doc["snapshots"] if s["snapshot-id"] == snapshot_id)
    out = []
    with open(snap["manifest-list"], "rb") as f:
        for r in fastavro.reader(f):
            with open(r["manifest_path"], "rb") as m:
                out.append((Path(r["manifest_path"]).name, sorted(e["status"] for e in fastavro.reader(m))))
    return out


def test_a_commit_writes_only_the_manifests_it_changed(tmp_path: Path) -> None:
    """Appends add one manifest and reuse the rest; a delete rewrites only the manifest holding
    the file it replaced (the other partition's manifests are ruled out by their partition
    summaries), marking that entry DELETED (status 2) and the rest EXISTING (0)."""
    t = make(tmp_path, "inc", primary_key=False, partitioned=True)
    rows = batch(0, 30, "a")
    first, second = (rows.filter(pa.compute.equal(rows["dt"], day)) for day in ("2024-01-01", "2024-01-02"))
    t.write(first.slice(0, 5))  # 1: dt=01
    t.write(second.slice(0, 5))  # 2: dt=02
    t.write(first.slice(5, 5))  # 3: dt=01
    m1, m2, m3 = (_manifests_of(t, s) for s in (1, 2, 3))
    assert m2[:-1] == m1 and m3[:-1] == m2 and m3[-1][1] == [1]  # one new manifest of ADDED entries
    doomed = second["id"][0].as_py()
    t.delete(f"id = {doomed}")  # 4: replaces the dt=02 file
    m4 = _manifests_of(t, 4)
    assert len(m4) == 4 and m4[0] == m3[0] and m4[2] == m3[2]  # the dt=01 manifests, as they were
    assert m4[1][0] not in {name for name, _ in m3} and m4[1][1] == [2]  # write 2's, rewritten: DELETED
    assert m4[3][1] == [1]  # the rewritten file, ADDED
    assert_history(t, tmp_path)
