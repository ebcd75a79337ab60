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


def top_level(t: Table, snapshot_id: int) -> tuple[object, bool]:
    """What Iceberg readers see of a primary-key table's files at a snapshot, and whether a
    lakectl scan of the snapshot reads exactly that. Without deletion vectors: the top-level
    files (the scan is them when every live file is at the top). With them (format 3): the
    files above level 0 and their vectors (the scan is them when no file is at level 0)."""
    entries = live_entries(t.manifests(), t.snapshots.snapshot(snapshot_id))
    if t.schema.core_options.deletion_vectors_enabled:
        shown = {e.identifier for e in entries if e.file.level > 0}
        return (shown, paimon_vectors(t, snapshot_id)) if shown else set(), all(e.file.level > 0 for e in entries)
    top = t.schema.core_options.num_levels - 1
    return {e.identifier for e in entries if e.file.level == top}, all(e.file.level == top for e in entries)


# Rows a primary-key table's snapshot showed, by (snapshot id, commit time): once the snapshot
# that wrote its top level is expired, what was computed before still holds.
_SEEN: dict[tuple[str, int, int], list] = {}


def expected_rows(t: Table, snapshot_id: int) -> list:
    """What an Iceberg reader must see at a snapshot: lakectl's scan of it (append table); for a
    primary-key table, the scan of the newest snapshot at or before it that shows the same and
    whose scan is exactly what shows (``top_level``: Paimon's rule of what Iceberg readers see)."""
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


# ---- format 3: deletion vectors and row ids in the history ---------------------------------------
def _listed(t: Table, version: int, snapshot_id: int) -> list[dict]:
    """The manifest-list records of a snapshot as metadata version ``version`` lists it, each
    with its manifest's entries under ``entries`` (read with fastavro)."""
    import fastavro

    doc = json.loads((metadata_dir(t) / f"v{version}.metadata.json").read_text())
    snap = next(s for s in doc["snapshots"] if s["snapshot-id"] == snapshot_id)
    with open(snap["manifest-list"], "rb") as f:
        listed = list(fastavro.reader(f))
    for r in listed:
        with open(r["manifest_path"], "rb") as m:
            r["entries"] = list(fastavro.reader(m))
    return listed


def row_ids(t: Table, version: int, snapshot_id: int) -> dict[str, int]:
    """Data file path -> its first row id in a snapshot (Iceberg's spec: its own first_row_id,
    else its manifest's first_row_id plus the rows of the live files before it without one)."""
    out = {}
    for r in _listed(t, version, snapshot_id):
        if r["content"] != 0:
            continue
        assert r["first_row_id"] is not None, r["manifest_path"]
        next_id = r["first_row_id"]
        for e in r["entries"]:
            f = e["data_file"]
            if f["first_row_id"] is None and e["status"] != 2:
                f["first_row_id"], next_id = next_id, next_id + f["record_count"]
            if e["status"] != 2:
                out[f["file_path"]] = f["first_row_id"]
    return out


def live_vectors(t: Table, version: int, snapshot_id: int) -> dict[str, int]:
    """Data file path -> the deleted-row count of its live deletion vector in a snapshot; a
    file has at most one (a replaced vector's entry is DELETED)."""
    out: dict[str, int] = {}
    for r in _listed(t, version, snapshot_id):
        for e in r["entries"] if r["content"] == 1 else []:
            if e["status"] != 2:
                path = e["data_file"]["referenced_data_file"]
                assert path not in out, f"two live vectors of {path}"
                out[path] = e["data_file"]["record_count"]
    return out


def paimon_vectors(t: Table, snapshot_id: int) -> dict[str, int]:
    """Data file path -> deleted-row count of each non-empty vector of the Paimon table."""
    from core.deletion_vectors import read_vector, snapshot_deletion_files

    by_bucket = snapshot_deletion_files(t.file_io, t.path, t.snapshots.snapshot(snapshot_id))
    out = {}
    for (partition, bucket), files in by_bucket.items():
        for name, deletion in files.items():
            if len(bitmap := read_vector(t.file_io, deletion)):
                out[str(Path(t.schema.bucket_dir(t.path, partition, bucket)) / name)] = len(bitmap)
    return out


def assert_format_3_history(t: Table, tmp_path: Path) -> dict:
    """``assert_history`` for a format-3 table with deletion vectors (a primary-key table shows
    every level but 0), and each snapshot's live Iceberg vectors are the Paimon table's vectors
    of that snapshot, one per data file."""
    t = Table.open(t.path)
    version = current_version(t)
    for sid in range(t.snapshots.earliest_id(), t.snapshots.latest_id() + 1):
        assert live_vectors(t, version, sid) == paimon_vectors(t, sid), f"snapshot {sid}"
    meta = assert_history(t, tmp_path)
    assert meta["format_version"] == 3
    return meta


def current_row_ids(t: Table) -> dict[str, int]:
    """``row_ids`` of the current version's current snapshot."""
    version = current_version(t)
    return row_ids(t, version, json.loads((metadata_dir(t) / f"v{version}.metadata.json").read_text())
                   ["current-snapshot-id"])


def assert_row_ids_kept(old: dict[str, int], new: dict[str, int]) -> int:
    """Each file both versions list has the same row id in both; the number of such files."""
    common = old.keys() & new.keys()
    assert {p: old[p] for p in common} == {p: new[p] for p in common}
    return len(common)


def test_format_3_primary_key_history_with_deletion_vectors(tmp_path: Path) -> None:
    """A primary-key table with deletion vectors in format 3: every snapshot reads as lakectl
    scans it with its own vectors (replaced ones DELETED); a file keeps its row ids from
    version to version although its manifest is rewritten; Puffin files go with the versions
    naming them."""
    wh = str(tmp_path / "wh")
    t = make(tmp_path, "pk3", primary_key=True, partitioned=True,
             options={"metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true",
                      "metadata.iceberg.previous-versions-max": "1", "metadata.iceberg.compaction.min.file-num": "2",
                      "metadata.iceberg.compaction.max.file-num": "3"})
    # A write commits twice here: its level-0 file, then the lookup compaction's.
    t.write(batch(0, 30, "a"))  # 1, 2
    t.write(batch(20, 20, "b"))  # 3, 4: vectors on the first write's files
    assert_format_3_history(t, tmp_path)
    before = current_row_ids(t)
    t.delete("id < 5 OR name = 'b-33'")  # 5, 6: those vectors replaced, more added
    assert_format_3_history(t, tmp_path)
    assert assert_row_ids_kept(before, current_row_ids(t)) > 0
    doc = json.loads((metadata_dir(t) / "v6.metadata.json").read_text())
    # The first compaction's 30 rows take ids 0..29; each later snapshot's after those handed out before.
    assert [(s["first-row-id"], s["added-rows"]) for s in doc["snapshots"][:2]] == [(0, 0), (0, 30)]
    assert [s["first-row-id"] for s in doc["snapshots"][1:]] == [
        s["first-row-id"] + s["added-rows"] for s in doc["snapshots"][:-1]]
    assert doc["next-row-id"] == doc["snapshots"][-1]["first-row-id"] + doc["snapshots"][-1]["added-rows"]
    assert_only_named_files(metadata_dir(t), [5, 6])
    t.compact()
    before = current_row_ids(t)
    t.write(batch(50, 5, "c"))
    t = Table.open(t.path)
    latest = t.snapshots.latest_id()
    assert_format_3_history(t, tmp_path)
    assert assert_row_ids_kept(before, current_row_ids(t)) > 0
    create_tag(t, "kept", snapshot_id=latest - 1)
    t = Table.open(t.path)
    t.expire(retain_max=2, retain_min=2, older_than="0s", dry_run=False)
    meta = assert_format_3_history(t, tmp_path)
    assert meta["snapshots"] == [latest - 1, latest] and meta["refs"] == {"main": latest, "kept": latest - 1}
    # The previous version named expired snapshots: gone, and with it the Puffin files only it named.
    assert_only_named_files(metadata_dir(t), [latest])
    assert_no_version_names_missing_files(t)
    t.rollback(snapshot_id=latest - 1, dry_run=False)
    Table.open(t.path).compact(full=True)  # no vectors left
    assert assert_format_3_history(t, tmp_path)["snapshots"] == [latest - 1, latest]
    assert live_vectors(t, latest, latest) == {}
    lakectl("iceberg-sync", "db.pk3", "-w", wh)  # rebuilt
    assert_format_3_history(t, tmp_path)
    assert_only_named_files(metadata_dir(t), [latest - 1, latest])


def test_format_3_append_history_with_deletion_vectors(tmp_path: Path) -> None:
    """An append table's vectors (committed as Java's DELETE commits them): a snapshot that
    changes one file's vector writes a Puffin file of that vector alone, the replaced entry
    DELETED, the other partition's delete manifest reused; every snapshot reads as lakectl
    scans it."""
    from pyroaring import BitMap

    from core.commit import CommitMessage, FileStoreCommit
    from core.deletion_vectors import write_index_file

    t = make(tmp_path, "app3", primary_key=False, partitioned=True,
             options={"metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true",
                      "metadata.iceberg.previous-versions-max": "5"})
    t.write(batch(0, 30, "a"))  # 1

    def commit_vectors(positions: dict[bytes, list[int]]) -> None:
        table = Table.open(t.path)
        entries = live_entries(table.manifests(), table.latest_snapshot())
        FileStoreCommit(table.file_io, table.path, table.schema).commit([
            CommitMessage(e.partition, e.bucket, e.total_buckets, new_index_files=(
                write_index_file(table.file_io, table.path, {e.file.file_name: BitMap(positions[e.partition])}),))
            for e in entries if e.partition in positions])

    t = Table.open(t.path)
    parts = sorted({e.partition for e in live_entries(t.manifests(), t.latest_snapshot())})
    commit_vectors({parts[0]: [0, 2], parts[1]: [1]})  # 2: both files get vectors
    commit_vectors({parts[0]: [0, 2, 3]})  # 3: one vector replaced
    assert_format_3_history(t, tmp_path)
    deletes3 = [r for r in _listed(t, 3, 3) if r["content"] == 1]
    assert sorted(r["added_snapshot_id"] for r in deletes3) == [3, 3]  # snapshot 2's rewritten, and the new one
    rewritten = next(r for r in deletes3 if r["deleted_files_count"])
    assert sorted(e["status"] for e in rewritten["entries"]) == [0, 2]
    new = next(r for r in deletes3 if r["added_files_count"])
    assert [e["data_file"]["record_count"] for e in new["entries"]] == [3]
    summary = json.loads((metadata_dir(t) / "v3.metadata.json").read_text())["snapshots"][-1]["summary"]
    assert (summary["total-delete-files"], summary["total-position-deletes"]) == ("2", "4")  # [0, 2, 3] and [1]
    t.write(batch(30, 6, "b"))  # 4: vectors unchanged, delete manifests reused
    assert [r["manifest_path"] for r in _listed(t, 4, 4) if r["content"] == 1] == \
        [r["manifest_path"] for r in deletes3]
    assert assert_row_ids_kept(row_ids(t, 3, 3), row_ids(t, 4, 4)) == 2
    t.delete("id >= 33 OR name = 'a-4'")  # 5
    t.compact(full=True)  # 6
    assert_format_3_history(t, tmp_path)
    assert live_vectors(t, 6, 6) == {}
