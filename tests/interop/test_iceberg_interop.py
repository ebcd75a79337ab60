"""Iceberg metadata written beside lakectl's commits (metadata.iceberg.storage, core/iceberg.py),
read by an independent Iceberg reader: pyiceberg 0.12 (``StaticTable.from_metadata``, no
catalog) reads exactly the rows ``lakectl scan`` returns after each write, compaction,
overwrite and delete, on append and primary-key tables, partitioned and not; a primary-key
table shows Iceberg readers its top level only, what its last full compaction wrote, as
Paimon documents. Java Paimon 1.0 writes a table with Iceberg metadata, lakectl goes on
writing and compacting it, and pyiceberg and Java read the result as lakectl scans it. A
write killed between the Paimon publish and the Iceberg metadata leaves the Paimon table at
the new snapshot, and the next commit or ``iceberg-sync`` brings the metadata in step. In
format 3, tables with deletion vectors (32- and 64-bit) read through Iceberg deletion vectors
in Puffin files, primary-key ones with every level but 0."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from iceberg_oracle import assert_only_named_files, iceberg_read, iceberg_scans
from java_oracle import java_read, java_run, lakectl_rows

from core.manifest import live_entries
from core.ops.create import create
from core.table import Table

pytestmark = [pytest.mark.interop]

REPO = Path(__file__).resolve().parents[2]
SCHEMA = ("id INT NOT NULL, big BIGINT, name STRING, amount DECIMAL(12, 3), day DATE, ts TIMESTAMP(6), "
          "flag BOOLEAN, score DOUBLE, dt STRING NOT NULL")


def batch(start: int, n: int, tag: str) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int32()),
        "big": pa.array([i * 10_000_000_000 if i % 4 else None for i in ids], pa.int64()),
        "name": pa.array([f"{tag}-{i}" for i in ids], pa.string()),
        "amount": pa.array([decimal.Decimal(f"{i}.{i % 1000:03d}") if i % 5 else None for i in ids],
                           pa.decimal128(12, 3)),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 1, 12) + dt.timedelta(seconds=i, microseconds=i) for i in ids],
                       pa.timestamp("us")),
        "flag": pa.array([i % 2 == 0 for i in ids], pa.bool_()),
        "score": pa.array([i / 3 for i in ids], pa.float64()),
        "dt": pa.array(["2024-01-01" if i % 3 else "2024-01-02" for i in ids], pa.string()),
    })


def make(tmp_path: Path, name: str, *, primary_key: bool, partitioned: bool,
         options: dict[str, str] | None = None) -> Table:
    warehouse = str(tmp_path / "wh")
    t = Table.locate(f"db.{name}", warehouse=warehouse)
    opts = {"metadata.iceberg.storage": "table-location", **(options or {})}
    if primary_key:
        opts.setdefault("bucket", "2")
    create(t, SCHEMA, primary_keys=(["id", "dt"] if primary_key else []),
           partition_keys=(["dt"] if partitioned else []), options=opts)
    return Table.open(t.name, warehouse=warehouse)


def metadata_dir(t: Table) -> Path:
    return Path(t.path) / "metadata"


def assert_iceberg_reads(t: Table, tmp_path: Path, expected: list | None = None) -> dict:
    """pyiceberg reads the table's current Iceberg snapshot: the latest Paimon snapshot, with
    ``expected`` rows (default: what lakectl scans)."""
    t = Table.open(t.path)
    latest = t.latest_snapshot()
    rows, meta = iceberg_read(metadata_dir(t), tmp_path)
    assert meta["current_snapshot"] == latest.id
    assert meta["refs"] == {"main": latest.id}
    assert rows == (expected if expected is not None else lakectl_rows(t.scan()))
    return meta


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_append_table_reads_as_lakectl_after_each_verb(tmp_path: Path, partitioned: bool) -> None:
    t = make(tmp_path, "events", primary_key=False, partitioned=partitioned)
    for i in range(3):
        t.write(batch(i * 20, 25, f"w{i}"))
        meta = assert_iceberg_reads(t, tmp_path)
    assert [f["name"] for f in meta["schema"]] == [f.name for f in t.schema.fields]
    assert [f["id"] for f in meta["schema"]] == [f.id for f in t.schema.fields]  # Paimon's field ids
    assert [f["name"] for f in meta["partition_spec"]] == (["dt"] if partitioned else [])
    t.compact(full=True)
    assert_iceberg_reads(t, tmp_path)
    t.delete("amount > 30 OR name = 'w0-3'")
    assert_iceberg_reads(t, tmp_path)
    t.write(batch(100, 7, "over"), mode="overwrite")
    meta = assert_iceberg_reads(t, tmp_path)
    if not partitioned:  # the overwrite replaced everything
        assert [r[0] for r in lakectl_rows(Table.open(t.path).scan())] == list(range(100, 107))
    # Older metadata versions are gone (previous-versions-max 0); the manifests they named are
    # kept as long as the current version's history names them.
    assert_only_named_files(metadata_dir(t), [meta["current_snapshot"]])


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_primary_key_table_shows_its_top_level(tmp_path: Path, partitioned: bool) -> None:
    t = make(tmp_path, "orders", primary_key=True, partitioned=partitioned)
    t.write(batch(0, 30, "a"))
    # Level 0 only: Iceberg readers see nothing until a full compaction writes the top level.
    assert_iceberg_reads(t, tmp_path, expected=[])
    t.write(batch(20, 20, "b"))  # updates 20..29
    compacted = t.compact(full=True)
    assert_iceberg_reads(t, tmp_path)
    at_compaction = lakectl_rows(Table.open(t.path).scan())
    t.write(batch(45, 5, "c"))
    t.delete("id < 5")
    # Newer writes sit in level 0: readers still see the last full compaction's rows.
    assert_iceberg_reads(t, tmp_path, expected=at_compaction)
    assert at_compaction == lakectl_rows(Table.open(t.path).scan(snapshot_id=compacted.snapshot_id))
    t.compact(full=True)
    assert_iceberg_reads(t, tmp_path)
    t.write(batch(0, 10, "over"), mode="overwrite")
    t.compact(full=True)
    assert_iceberg_reads(t, tmp_path)


def test_hadoop_catalog_storage(tmp_path: Path) -> None:
    """Also format 3 without deletion vectors: v3 manifests and row lineage, ids never reused."""
    t = make(tmp_path, "hc", primary_key=False, partitioned=True,
             options={"metadata.iceberg.storage": "hadoop-catalog", "metadata.iceberg.manifest-compression": "gzip",
                      "metadata.iceberg.previous-versions-max": "1", "metadata.stats-mode": "counts",
                      "metadata.iceberg.format-version": "3"})
    t.write(batch(0, 10, "a"))
    t.write(batch(10, 10, "b"))
    t.write(batch(20, 10, "c"))
    where = tmp_path / "wh" / "iceberg" / "db" / "hc" / "metadata"
    assert not (Path(t.path) / "metadata").exists()
    assert (where / "version-hint.text").read_text() == "3"
    # The current version and one before it.
    assert sorted(n for n in os.listdir(where) if n.endswith(".json")) == ["v2.metadata.json", "v3.metadata.json"]
    rows, meta = iceberg_read(where, tmp_path)
    assert rows == lakectl_rows(Table.open(t.path).scan())
    assert meta["current_snapshot"] == 3 and meta["format_version"] == 3
    # metadata.stats-mode=counts: null counts, no bounds.
    for file in meta["file_stats"]:
        expected = {name: {"nulls": c["nulls"]} for name, c in expected_file_stats(file, truncate=16).items()}
        assert meta["file_stats"][file] == expected
    old_rows, _ = iceberg_read(where / "v2.metadata.json", tmp_path)
    assert old_rows == lakectl_rows(Table.open(t.path).scan(snapshot_id=2))
    # Each write's manifest takes the ids after the previous one's, once: 10 rows each.
    v2, v3 = (json.loads((where / f"v{n}.metadata.json").read_text()) for n in (2, 3))
    assert [(s["first-row-id"], s["added-rows"]) for s in v3["snapshots"]] == [(0, 10), (10, 10), (20, 10)]
    assert (v2["next-row-id"], v3["next-row-id"]) == (20, 30)


def lakectl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "lakectl", *args], capture_output=True, text=True,
                          env=full_env, timeout=300, check=False)


@pytest.mark.parametrize("option,value,named", [
    ("metadata.iceberg.storage", "hive-catalog", "metadata.iceberg.storage=hive-catalog"),
    ("metadata.iceberg.storage", "rest-catalog", "metadata.iceberg.storage=rest-catalog"),
    ("metadata.iceberg.format-version", "4", "metadata.iceberg.format-version=4"),
    # Deletion vectors need Iceberg format 3: the message names the option that gives it.
    ("deletion-vectors.enabled", "true", "metadata.iceberg.format-version=3"),
    ("metadata.iceberg.uri", "thrift://x:9083", "metadata.iceberg.uri"),
])
def test_unsupported_iceberg_options_refuse_writes(tmp_path: Path, option: str, value: str, named: str) -> None:
    wh = str(tmp_path / "wh")
    extra = [] if option == "metadata.iceberg.storage" else ["-o", "metadata.iceberg.storage=table-location"]
    r = lakectl("create", "db.t", "-w", wh, "-s", "id INT", "-o", f"{option}={value}", *extra)
    assert r.returncode == 0, r.stderr
    data = tmp_path / "in.csv"
    data.write_text("id\n1\n")
    r = lakectl("write", "db.t", "-w", wh, "-i", str(data))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0], r.stderr
    assert not (tmp_path / "wh" / "db.db" / "t" / "snapshot").exists()


def test_deletion_vectors_with_external_paths_refuse_writes(tmp_path: Path) -> None:
    """A vector names its data file by the bucket directory: exposing a file kept under an
    external path would show Iceberg readers its deleted rows, so such a table is refused."""
    wh = str(tmp_path / "wh")
    outside = (tmp_path / "outside").as_uri()
    r = lakectl("create", "db.t", "-w", wh, "-s", "id INT", "--primary-key", "id", "-o", "bucket=1",
                "-o", "metadata.iceberg.storage=table-location", "-o", "metadata.iceberg.format-version=3",
                "-o", "deletion-vectors.enabled=true", "-o", f"data-file.external-paths={outside}",
                "-o", "data-file.external-paths.strategy=round-robin")
    assert r.returncode == 0, r.stderr
    data = tmp_path / "in.csv"
    data.write_text("id\n1\n")
    r = lakectl("write", "db.t", "-w", wh, "-i", str(data))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and "data-file.external-paths with deletion vectors" in lines[0], \
        r.stderr
    assert not (tmp_path / "wh" / "db.db" / "t" / "snapshot").exists()


def test_column_without_iceberg_type_refuses_writes(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    assert lakectl("create", "db.t", "-w", wh, "-s", "id INT, t TIME", "-o",
                   "metadata.iceberg.storage=table-location").returncode == 0
    data = tmp_path / "in.csv"
    data.write_text("id,t\n1,10:00:00\n")
    r = lakectl("write", "db.t", "-w", wh, "-i", str(data))
    assert r.returncode == 1 and "column t of type TIME" in r.stderr, r.stderr


def test_iceberg_sync_after_the_option_is_set(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = Table.locate("db.late", warehouse=wh)
    create(t, SCHEMA, partition_keys=["dt"])
    t = Table.open(t.name, warehouse=wh)
    t.write(batch(0, 12, "a"))
    r = lakectl("iceberg-sync", "db.late", "-w", wh)
    assert r.returncode == 2 and "does not set metadata.iceberg.storage" in r.stderr
    r = lakectl("alter-schema", "db.late", "-w", wh, "--set-option", "metadata.iceberg.storage=table-location")
    assert r.returncode == 0, r.stderr
    r = lakectl("iceberg-sync", "db.late", "-w", wh, "--dry-run", "-f", "json")
    assert r.returncode == 0, r.stderr
    dry = json.loads(r.stdout)
    assert dry["snapshot_id"] == 1 and dry["data_files"] == 2 and dry["record_count"] == 12 and dry["dry_run"]
    assert not metadata_dir(t).exists()
    r = lakectl("iceberg-sync", "db.late", "-w", wh, "-f", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metadata_file"].endswith("/metadata/v1.metadata.json")
    assert_iceberg_reads(t, tmp_path)
    # Again on the same snapshot: the metadata file is replaced, and the manifests it named go.
    before = set(os.listdir(metadata_dir(t)))
    assert lakectl("iceberg-sync", "db.late", "-w", wh).returncode == 0
    assert_only_named_files(metadata_dir(t))
    assert set(os.listdir(metadata_dir(t))) & before == {"v1.metadata.json", "version-hint.text"}
    assert_iceberg_reads(t, tmp_path)


def _iceberg_mutation(trace: Path, where: str) -> int:
    """The number of the first Iceberg metadata mutation (``first``) or of the metadata file's
    write (``metadata-file``: the sync's manifests are written, the version hint not yet)."""
    for line in trace.read_text().splitlines():
        n, _, path = line.split(" ", 2)
        if "/metadata/" in path and (where == "first" or path.endswith(".metadata.json")):
            return int(n)
    raise AssertionError(f"no Iceberg metadata write in the trace:\n{trace.read_text()}")


@pytest.mark.parametrize("killed_at,recover", [("first", "next-commit"), ("first", "iceberg-sync"),
                                               ("metadata-file", "next-commit")])
def test_kill_between_publish_and_iceberg_metadata(tmp_path: Path, killed_at: str, recover: str) -> None:
    wh = str(tmp_path / "wh")
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text("id,name\n1,a\n2,b\n")
    second.write_text("id,name\n3,c\n")
    for name in ("probe", "t"):
        assert lakectl("create", f"db.{name}", "-w", wh, "-s", "id INT, name STRING", "-o",
                       "metadata.iceberg.storage=table-location").returncode == 0
        assert lakectl("write", f"db.{name}", "-w", wh, "-i", str(first)).returncode == 0
    # Where the Iceberg metadata's first write falls among a write's mutations.
    trace = tmp_path / "trace"
    assert lakectl("write", "db.probe", "-w", wh, "-i", str(second),
                   env={"LAKECTL_FAULT_TRACE": str(trace)}).returncode == 0
    n = _iceberg_mutation(trace, killed_at)
    r = lakectl("write", "db.t", "-w", wh, "-i", str(second), env={"LAKECTL_FAULT": f"kill:mutation:{n}"})
    assert r.returncode == -9, r.stderr
    t = Table.open("db.t", warehouse=wh)
    assert t.latest_snapshot().id == 2  # published: Paimon readers read the new snapshot
    assert lakectl_rows(t.scan()) == [[1, "a"], [2, "b"], [3, "c"]]
    stale, meta = iceberg_read(metadata_dir(t), tmp_path)  # the previous version, whole
    assert meta["current_snapshot"] == 1 and stale == [[1, "a"], [2, "b"]]
    if recover == "next-commit":
        third = tmp_path / "c.csv"
        third.write_text("id,name\n4,d\n")
        assert lakectl("write", "db.t", "-w", wh, "-i", str(third)).returncode == 0
    else:
        assert lakectl("iceberg-sync", "db.t", "-w", wh).returncode == 0
    meta = assert_iceberg_reads(t, tmp_path)
    assert meta["snapshots"] == list(range(1, meta["current_snapshot"] + 1))  # the history, none missed


JAVA_FIELDS = [{"name": "id", "type": "INT NOT NULL"}, {"name": "name", "type": "STRING"},
               {"name": "amount", "type": "DECIMAL(10, 2)"}, {"name": "flag", "type": "BOOLEAN"},
               {"name": "day", "type": "DATE"}, {"name": "dt", "type": "STRING NOT NULL"}]


@pytest.mark.java
@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_java_written_iceberg_table_kept_by_lakectl(tmp_path: Path, primary_key: bool) -> None:
    """The 1.0 bundle jar knows Paimon 0.9's switch, metadata.iceberg-compatible (not yet
    metadata.iceberg.storage), and cannot convert timestamps: the table has neither. Its own
    metadata is not readable by pyiceberg (docs/iceberg.md); lakectl's next commit rewrites it."""
    path = tmp_path / "wh" / "db.db" / "j"
    options = {"metadata.iceberg-compatible": "true", "bucket": "1",
               **({} if primary_key else {"bucket-key": "id"})}
    java_run(path, [
        {"op": "write", "rows": [[1, "a", "1.50", True, "2024-01-02", "x"], [2, "b", None, None, None, "y"]]},
        {"op": "write", "rows": [[3, "c", "2.25", False, "2024-01-03", "x"]]},
    ], create={"fields": JAVA_FIELDS, "partitionKeys": ["dt"], "primaryKeys": ["id", "dt"] if primary_key else [],
               "options": options})
    t = Table.open(str(path))
    t.write(pa.table({"id": pa.array([4, 1], pa.int32()), "name": ["d", "a2"],
                      "amount": pa.array([decimal.Decimal("9.99"), None], pa.decimal128(10, 2)),
                      "flag": [True, None], "day": pa.array([dt.date(2024, 2, 1), None], pa.date32()),
                      "dt": ["y", "x"]}))
    t.compact(full=True)
    t = Table.open(str(path))
    expected = lakectl_rows(t.scan())
    rows, meta = iceberg_read(path / "metadata", tmp_path)
    assert rows == expected
    assert meta["current_snapshot"] == t.latest_snapshot().id
    java_rows, _ = java_read(path)
    assert sorted(java_rows, key=json.dumps) == expected
    # Java commits again on top of lakectl's metadata (its callback reads it as its base: the
    # manifest list's partition summaries and the data files' stats maps must be there, the
    # codec one it reads), then lakectl once more; pyiceberg and Java read what lakectl scans.
    java_run(path, [{"op": "write", "rows": [[5, "e", "0.01", None, "2024-03-01", "y"]]},
                    {"op": "compact", "full": True}])
    Table.open(str(path)).write(pa.table({"id": pa.array([6], pa.int32()), "name": ["f"],
                                          "amount": pa.array([None], pa.decimal128(10, 2)), "flag": [False],
                                          "day": pa.array([None], pa.date32()), "dt": ["x"]}))
    # Java's files' stats, as lakectl carries them into the manifest, bound what the files hold.
    _, meta = iceberg_read(path / "metadata", tmp_path)
    for file in meta["files"]:
        assert meta["file_stats"][file] == expected_file_stats(file, truncate=16), file
    Table.open(str(path)).compact(full=True)
    t = Table.open(str(path))
    expected = lakectl_rows(t.scan())
    assert [r[0] for r in expected] == ([1, 2, 3, 4, 5, 6] if primary_key else [1, 1, 2, 3, 4, 5, 6])
    rows, meta = iceberg_read(path / "metadata", tmp_path)
    assert rows == expected and meta["current_snapshot"] == t.latest_snapshot().id
    java_rows, _ = java_read(path)
    assert sorted(java_rows, key=json.dumps) == expected
    # Maintained by lakectl: a tag, then expire down to two snapshots. The metadata keeps the
    # live snapshots and the tag's (a ref), pyiceberg reads each as lakectl does, and Java too.
    from core.ops.tags import create_tag

    create_tag(t, "kept")
    t.write(pa.table({"id": pa.array([7], pa.int32()), "name": ["g"], "amount": pa.array([None], pa.decimal128(10, 2)),
                      "flag": [True], "day": pa.array([None], pa.date32()), "dt": ["y"]}))
    t = Table.open(str(path))
    t.expire(retain_min=2, retain_max=2, older_than="0s", dry_run=False)
    t = Table.open(str(path))
    live = t.snapshots.list_ids()
    assert len(live) == 2
    rows, meta = iceberg_read(path / "metadata", tmp_path, each_snapshot=not primary_key)
    assert sorted(meta["snapshots"]) == live and meta["refs"]["kept"] == live[0]
    # A primary-key table shows its top level: still the tagged full compaction's.
    assert rows == lakectl_rows(t.scan(snapshot_id=live[0] if primary_key else None))
    for sid, read in meta["each"].items():  # an append table: every snapshot reads in full
        assert read["rows"] == lakectl_rows(t.scan(snapshot_id=sid)), sid
    java_rows, _ = java_read(path)
    assert sorted(java_rows, key=json.dumps) == lakectl_rows(t.scan())


def test_columns_added_renamed_and_dropped(tmp_path: Path) -> None:
    """The metadata carries the current schema; files written under older ones are read by
    field id through the name mapping: a renamed column keeps its values, a dropped one is
    skipped, an added one reads as null in older files, a widened one is cast."""
    t = make(tmp_path, "evolving", primary_key=False, partitioned=True)
    t.write(batch(0, 10, "a"))
    wh = str(tmp_path / "wh")
    r = lakectl("alter-schema", "db.evolving", "-w", wh, "--rename-column", "name:label", "--drop-column", "score",
                "--add-column", "note STRING", "--alter-type", "id:BIGINT")
    assert r.returncode == 0, r.stderr
    t = Table.open("db.evolving", warehouse=wh)
    more = batch(10, 5, "b").drop_columns(["score"]).rename_columns(
        ["id", "big", "label", "amount", "day", "ts", "flag", "dt"]).append_column("note", pa.array(["n"] * 5))
    t.write(more.set_column(0, "id", more.column("id").cast(pa.int64())))
    meta = assert_iceberg_reads(t, tmp_path)
    assert [f["name"] for f in meta["schema"]] == ["id", "big", "label", "amount", "day", "ts", "flag", "dt", "note"]
    # Older files' stats are under their schema's ids: the renamed column's bounds prune them.
    # Their manifest was written before the retype and keeps id's 4-byte bounds, which Iceberg
    # readers widen to long (the spec's int-to-long promotion): those files are skipped by id.
    filters = [("label = 'b-12'", 2), ("id >= 12", 2), ("note IS NULL", 2)]
    scans = iceberg_scans(metadata_dir(t), tmp_path, [where for where, _ in filters])
    assert len(scans) == len(filters)
    for (where, count), (rows, files) in zip(filters, scans):
        assert rows == lakectl_rows(t.scan(where=where)) and len(files) == count, where
    t.iceberg_sync()  # the Python API's sync of the same snapshot reads the same
    assert_iceberg_reads(t, tmp_path)
    # Rebuilt under the current schema, the retyped id's old bounds are left out (they are not
    # longs), so the older files are never skipped by id.
    filters[1] = ("id >= 12", 4)
    for (where, count), (rows, files) in zip(filters, iceberg_scans(metadata_dir(t), tmp_path,
                                                                     [where for where, _ in filters])):
        assert rows == lakectl_rows(t.scan(where=where)) and len(files) == count, where


def test_rollback_writes_the_targets_metadata(tmp_path: Path) -> None:
    t = make(tmp_path, "rolled", primary_key=False, partitioned=True)
    for i in range(3):
        t.write(batch(i * 10, 10, f"w{i}"))
    t.rollback(snapshot_id=1, dry_run=False)
    meta = assert_iceberg_reads(t, tmp_path)
    assert meta["current_snapshot"] == 1
    # The removed snapshots' metadata is gone with the manifests only it named.
    assert meta["snapshots"] == [1]
    assert_only_named_files(metadata_dir(t), [1])
    t.write(batch(50, 4, "after"))
    assert assert_iceberg_reads(t, tmp_path)["current_snapshot"] == 2


def test_an_older_snapshots_sync_leaves_a_newer_ones_metadata(tmp_path: Path) -> None:
    """Two writers: the later commit's metadata landed first; the earlier one's sync, arriving
    after, writes nothing rather than turn the version hint back."""
    from core import iceberg

    t = make(tmp_path, "raced", primary_key=False, partitioned=False)
    t.write(batch(0, 5, "a"))
    t.write(batch(5, 5, "b"))
    t = Table.open(t.path)
    first = t.snapshots.snapshot(1)
    result = iceberg.sync(t.file_io, t.path, t.schema, first)
    assert result.skipped and result.snapshot_id == 2
    assert (metadata_dir(t) / "version-hint.text").read_text() == "2"
    assert_iceberg_reads(t, tmp_path)


def test_more_types_and_partition_values(tmp_path: Path) -> None:
    """TINYINT, SMALLINT, FLOAT, TIMESTAMP(3), TIMESTAMP_LTZ, VARBINARY and CHAR read as lakectl
    scans them; partition values of DATE, INT, DECIMAL and TIMESTAMP columns (and nulls) are
    written so that pyiceberg prunes files by them and keeps the right ones."""
    wh = str(tmp_path / "wh")
    t = Table.locate("db.types", warehouse=wh)
    create(t, "a TINYINT, b SMALLINT, f FLOAT, t3 TIMESTAMP(3), tz TIMESTAMP_LTZ(6), bin VARBINARY(10), c CHAR(3), "
              "day DATE, n INT, dec DECIMAL(20, 4), ts TIMESTAMP(6)", partition_keys=["day", "n", "dec", "ts"],
           options={"metadata.iceberg.storage": "table-location"})
    t = Table.open("db.types", warehouse=wh)
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), None]
    t.write(pa.table({
        "a": pa.array([1, None, -3], pa.int8()), "b": pa.array([300, -2, 5], pa.int16()),
        "f": pa.array([1.5, None, -0.25], pa.float32()),
        "t3": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 123000), None, dt.datetime(1969, 12, 31, 23, 59, 59)],
                       pa.timestamp("ms")),
        "tz": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 123456, tzinfo=dt.timezone.utc), None, None],
                       pa.timestamp("us", tz="UTC")),
        "bin": pa.array([b"\x00\x01", None, b""], pa.binary()), "c": ["abc", None, "x"],
        "day": pa.array(days, pa.date32()), "n": pa.array([7, -1, None], pa.int32()),
        "dec": pa.array([decimal.Decimal("12345678901234.5678"), decimal.Decimal("-0.0001"), None],
                        pa.decimal128(20, 4)),
        "ts": pa.array([dt.datetime(2024, 5, 5, 5, 5, 5, 5), dt.datetime(1960, 1, 1), None], pa.timestamp("us")),
    }))
    expected = lakectl_rows(Table.open(t.path).scan())
    rows, _ = iceberg_read(metadata_dir(t), tmp_path)
    assert rows == expected
    # Rows in the normal form: day is column 7, n 8, dec 9, ts 10.
    filters = [("day = '2024-01-02'", lambda r: r[7] == "2024-01-02"), ("n = 7", lambda r: r[8] == 7),
               ("dec = -0.0001", lambda r: r[9] == "-0.0001"),
               ("ts < '2000-01-01T00:00:00'", lambda r: r[10] is not None and r[10] < "2000"),
               ("day IS NULL", lambda r: r[7] is None)]
    scans = iceberg_scans(metadata_dir(t), tmp_path, [where for where, _ in filters])
    assert len(scans) == len(filters)
    for (where, keep), (rows, files) in zip(filters, scans):
        assert rows == [r for r in expected if keep(r)] and len(rows) == 1, where
        assert len(files) == 1, where  # pruned by partition value


def test_expire_and_orphan_removal_leave_the_iceberg_metadata(tmp_path: Path) -> None:
    """The metadata lists the latest snapshot's files only, so expiring older snapshots keeps
    it readable; remove-orphan-files never takes metadata/ for orphans (nothing Paimon names)."""
    t = make(tmp_path, "kept", primary_key=False, partitioned=True)
    for i in range(4):
        t.write(batch(i * 10, 10, f"w{i}"))
    t.delete("id < 15")  # rewrites files: older snapshots hold files the latest does not
    t.expire(retain_max=1, retain_min=1, dry_run=False)
    assert t.snapshots.earliest_id() == t.snapshots.latest_id()
    before = sorted(os.listdir(metadata_dir(t)))
    # Age 0 (force): every unreferenced file is a candidate, the metadata's too were it not kept.
    stray = Path(t.path) / "dt=2024-01-01" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"x")
    result = t.remove_orphan_files(older_than="0s", force=True, dry_run=False)
    assert result.paths == (str(stray),)
    assert sorted(os.listdir(metadata_dir(t))) == before
    assert_iceberg_reads(t, tmp_path)


@pytest.mark.parametrize("storage", ["table-location", "hadoop-catalog"])
def test_rename_and_drop(tmp_path: Path, storage: str) -> None:
    """The metadata names files by absolute path: a rename writes it anew at the new place;
    a drop takes a hadoop-catalog directory with the table."""
    wh = tmp_path / "wh"
    t = make(tmp_path, "before", primary_key=False, partitioned=True, options={"metadata.iceberg.storage": storage})
    t.write(batch(0, 8, "a"))
    t.write(batch(8, 8, "b"))
    r = lakectl("rename", "db.before", "db.after", "-w", str(wh))
    assert r.returncode == 0, r.stderr
    moved = Table.open("db.after", warehouse=str(wh))
    where = (wh / "iceberg" / "db" / "after" / "metadata") if storage == "hadoop-catalog" else metadata_dir(moved)
    rows, meta = iceberg_read(where, tmp_path)
    assert rows == lakectl_rows(moved.scan()) and meta["current_snapshot"] == 2
    assert all(f.startswith(moved.path + "/") for f in meta["files"])
    assert not (wh / "iceberg" / "db" / "before").exists()
    assert meta["snapshots"] == [1, 2]  # the history, written anew at the new place
    assert_only_named_files(where, [2])
    r = lakectl("drop", "db.after", "-w", str(wh))
    assert r.returncode == 0, r.stderr
    assert not (wh / "iceberg" / "db" / "after").exists() and not Path(moved.path).exists()


STATS_SCHEMA = ("id INT NOT NULL, big BIGINT, name STRING, amount DECIMAL(12, 3), wide DECIMAL(28, 6), "
                "tiny DECIMAL(3, 2), day DATE, ts TIMESTAMP(6), ms TIMESTAMP(3), tz TIMESTAMP_LTZ(6), flag BOOLEAN, "
                "score DOUBLE, ratio FLOAT, bin BYTES, small TINYINT, short SMALLINT")
FRUITS = ["apple", "berry", "cherry", "damson"]


def stats_batch(k: int) -> pa.Table:
    """Ten rows of write ``k`` (one file), each column's range apart from the other writes':
    write 2's scores hold a NaN, write 3's ``big`` is all null, write 0's partly."""
    ids = list(range(k * 10, k * 10 + 10))
    base = dt.datetime(2024, 1, 1) + dt.timedelta(days=30 * k)
    return pa.table({
        "id": pa.array(ids, pa.int32()),
        "big": pa.array([None if k == 3 or (k == 0 and i % 4 == 0) else -i * 10_000_000_000 for i in ids],
                        pa.int64()),
        "name": pa.array([f"{FRUITS[k]}-{i}" for i in ids]),
        "amount": pa.array([decimal.Decimal(f"{i - 20}.{i:03d}") for i in ids], pa.decimal128(12, 3)),
        "wide": pa.array([decimal.Decimal(f"{(i - 15) * 10**19}.{i:06d}") if i % 3 else None for i in ids],
                         pa.decimal128(28, 6)),
        "tiny": pa.array([decimal.Decimal(f"{(i - 20) / 10:.2f}") for i in ids], pa.decimal128(3, 2)),
        "day": pa.array([(base + dt.timedelta(days=i % 10)).date() for i in ids], pa.date32()),
        "ts": pa.array([base + dt.timedelta(hours=i, microseconds=i) for i in ids], pa.timestamp("us")),
        # across the epoch: negative microseconds too
        "ms": pa.array([dt.datetime(1969, 12, 31, 23, 59, 59, 850_000) + dt.timedelta(milliseconds=10 * i)
                        for i in ids], pa.timestamp("ms")),
        "tz": pa.array([(base + dt.timedelta(minutes=i)).replace(tzinfo=dt.timezone.utc) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "flag": pa.array([k % 2 == 1] * 10, pa.bool_()),
        "score": pa.array([float("nan") if k == 2 and i % 5 == 0 else i * 1.5 - 20 for i in ids], pa.float64()),
        "ratio": pa.array([i / 7 for i in ids], pa.float32()),
        "bin": pa.array([bytes([i, 255 - i]) for i in ids], pa.binary()),
        "small": pa.array([i - 20 for i in ids], pa.int8()),
        "short": pa.array([i * 300 - 6000 for i in ids], pa.int16()),
    })


def _iceberg_value(value: Any, arrow_type: pa.DataType) -> Any:
    """A pyarrow value as tests/oracle/iceberg_read.py prints a decoded Iceberg bound: dates
    as days and timestamps as microseconds since the epoch, decimals as strings."""
    if pa.types.is_timestamp(arrow_type):
        return value
    if pa.types.is_date(arrow_type):
        return (value - dt.date(1970, 1, 1)).days
    if pa.types.is_decimal(arrow_type):
        return str(value)
    return value


def expected_file_stats(path: str, truncate: int) -> dict[str, dict[str, Any]]:
    """Each column's null count and bounds, computed here from the Parquet file's rows: the
    exact min and max, strings cut to ``truncate`` code points (the upper one's last code point
    raised by one, so that it still bounds), no bounds for binaries, nested columns (their null
    count is of the column's own nulls), a column holding a NaN or only nulls."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    out: dict[str, dict[str, Any]] = {}
    for name in table.column_names:
        if name.startswith("_"):  # a primary-key file's own columns: no Iceberg field
            continue
        column = table.column(name)
        entry: dict[str, Any] = {"nulls": column.null_count}
        has_nan = pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py()
        if not (pa.types.is_binary(column.type) or pa.types.is_nested(column.type) or has_nan
                or column.null_count == len(column)):
            kind = pa.int64() if pa.types.is_timestamp(column.type) else column.type
            lo, hi = (pc.min(column.cast(kind)).as_py(), pc.max(column.cast(kind)).as_py())
            if pa.types.is_timestamp(column.type) and column.type.unit == "ms":
                lo, hi = lo * 1000, hi * 1000
            if pa.types.is_string(column.type):
                lo = lo[:truncate]
                hi = hi if len(hi) <= truncate else hi[:truncate - 1] + chr(ord(hi[truncate - 1]) + 1)
            entry["lower"], entry["upper"] = _iceberg_value(lo, column.type), _iceberg_value(hi, column.type)
        out[name] = entry
    return out


def test_column_stats_bound_each_file_and_prune_scans(tmp_path: Path) -> None:
    """Each data file's null counts and bounds, from Paimon's value stats, decode in pyiceberg
    to what the file holds (strings truncated as metadata.stats-mode says; no bounds where a
    NaN, only nulls or binary order leave none); pyiceberg's row filters then skip the files
    the bounds rule out and return the rows ``lakectl scan --where`` returns."""
    wh = str(tmp_path / "wh")
    t = Table.locate("db.stats", warehouse=wh)
    create(t, STATS_SCHEMA, options={"metadata.iceberg.storage": "table-location",
                                     "metadata.stats-mode": "truncate(5)"})
    t = Table.open("db.stats", warehouse=wh)
    for k in range(4):
        t.write(stats_batch(k))
    t = Table.open(t.path)
    rows, meta = iceberg_read(metadata_dir(t), tmp_path)
    assert rows == lakectl_rows(t.scan())
    assert len(meta["files"]) == 4
    for path in meta["files"]:
        assert meta["file_stats"][path] == expected_file_stats(path, truncate=5), path
    files_of = {k: next(p for p in meta["files"] if meta["file_stats"][p]["id"]["lower"] == k * 10) for k in range(4)}
    filters = [
        ("id >= 12 AND id < 15", [1]),
        ("name = 'cherry-25'", [2]),  # 'cherr' <= 'cherry-25' <= 'chers'
        ("amount > 10.500", [3]),  # pyiceberg takes decimals at the column's scale
        ("wide < 0", [0, 1]),
        ("tiny <= -1.50", [0]),
        ("day >= '2024-03-01'", [2, 3]),
        ("ts < '2024-01-02T00:00:00'", [0]),
        ("ms > '1970-01-01T00:00:00.100'", [2, 3]),
        ("tz >= '2024-03-31T00:05:00+00:00'", [3]),
        ("flag = true", [1, 3]),
        ("score < 0", [0, 1, 2]),  # write 2 holds a NaN: no bounds, never skipped
        ("ratio < 1.0", [0]),
        ("small = -15", [0]),
        ("short >= 3000", [3]),
        ("big IS NULL", [0, 3]),  # null counts of 0 rule the others out
        # write 3's all-null column has no bounds (nor value counts, which Paimon does not write)
        ("big < -250000000000", [2, 3]),
    ]
    scans = iceberg_scans(metadata_dir(t), tmp_path, [where for where, _ in filters])
    assert len(scans) == len(filters)
    for (where, writes), (rows, files) in zip(filters, scans):
        assert sorted(files) == sorted(files_of[k] for k in writes), where
        assert rows == lakectl_rows(t.scan(where=where)), where


NESTED_SCHEMA = ("id INT NOT NULL, s ROW<a INT, b ROW<c STRING, d DECIMAL(5, 2)>>, tags ARRAY<STRING>, "
                 "pts ARRAY<ROW<x INT, y DOUBLE>>, m MAP<STRING, ARRAY<INT>>, mm MAP<INT, ROW<v STRING>>, "
                 "grid ARRAY<ARRAY<BIGINT>>, note STRING")


def nested_batch(ids: list[int], tag: str) -> pa.Table:
    """Rows with nested values: null and empty lists and maps, null elements, map values and
    row fields. pyiceberg 0.12 reads a null list or map of rows as an empty one (it rebuilds
    them without their validity: apache/iceberg-python#3833), so ``pts`` and ``mm`` are never
    null themselves."""
    def pick(i: int, *choices: Any) -> Any:
        return choices[i % len(choices)]

    return pa.table({
        "id": pa.array(ids, pa.int32()),
        "s": pa.array([pick(i, {"a": i, "b": {"c": f"{tag}{i}", "d": decimal.Decimal(f"{i}.25")}}, None,
                            {"a": None, "b": None}, {"a": -i, "b": {"c": None, "d": None}}) for i in ids],
                      pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string()),
                                                                     ("d", pa.decimal128(5, 2))]))])),
        "tags": pa.array([pick(i, [f"{tag}{i}", None], [], None, [tag]) for i in ids], pa.list_(pa.string())),
        "pts": pa.array([pick(i, [{"x": i, "y": i / 4}, None], [], [{"x": None, "y": float(i)}]) for i in ids],
                        pa.list_(pa.struct([("x", pa.int32()), ("y", pa.float64())]))),
        "m": pa.array([pick(i, [(f"k{i}", [i, None]), ("e", [])], None, [], [("n", None)]) for i in ids],
                      pa.map_(pa.string(), pa.list_(pa.int32()))),
        "mm": pa.array([pick(i, [(i, {"v": tag})], [], [(1, None), (2, {"v": None})]) for i in ids],
                       pa.map_(pa.int32(), pa.struct([("v", pa.string())]))),
        "grid": pa.array([pick(i, [[i, None], [], None], None, []) for i in ids], pa.list_(pa.list_(pa.int64()))),
        "note": pa.array([f"{tag}-{i}" for i in ids]),
    })


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_nested_columns(tmp_path: Path, primary_key: bool) -> None:
    """ROW, ARRAY and MAP columns are Iceberg structs, lists and maps under Paimon's ids (row
    fields keep theirs; elements, keys and values get the ids Paimon derives from the column's
    id and depth): pyiceberg reads them, through the name mapping, as lakectl scans them, and
    prunes files by the other columns' stats."""
    wh = str(tmp_path / "wh")
    t = Table.locate("db.nested", warehouse=wh)
    create(t, NESTED_SCHEMA, primary_keys=["id"] if primary_key else [],
           options={"metadata.iceberg.storage": "table-location", "bucket": "1" if primary_key else "-1"})
    t = Table.open("db.nested", warehouse=wh)
    t.write(nested_batch(list(range(0, 8)), "a"))
    t.write(nested_batch(list(range(8, 16)), "b"))
    if primary_key:
        t.write(nested_batch([1, 2, 9], "u"))  # updates: the merged rows are what readers see
        t.compact(full=True)
    t = Table.open(t.path)
    expected = lakectl_rows(t.scan())
    assert any(r[0] in (1, 2, 9) and r[-1].startswith("u-") for r in expected) == primary_key
    rows, meta = iceberg_read(metadata_dir(t), tmp_path)
    assert rows == expected
    for path in meta["files"]:  # a primary-key file's value columns have stats, its key and system columns none
        assert meta["file_stats"][path] == expected_file_stats(path, truncate=16), path
    metadata = json.loads((metadata_dir(t) / f"v{t.latest_snapshot().id}.metadata.json").read_text())
    fields = {f["name"]: f for f in metadata["schemas"][0]["fields"]}
    base = 536870911  # Paimon's ids for nested fields: base +/- 1024 * column id +/- depth
    assert [f["id"] for f in fields["s"]["type"]["fields"]] == [8, 9]
    assert [f["id"] for f in fields["s"]["type"]["fields"][1]["type"]["fields"]] == [10, 11]
    assert fields["tags"]["type"]["element-id"] == base + 2 * 1024 + 1
    assert fields["pts"]["type"]["element"]["fields"][0]["id"] == 12
    m = fields["m"]["type"]
    assert (m["key-id"], m["value-id"]) == (base - 4 * 1024 - 1, base + 4 * 1024 + 1)
    assert m["value"]["element-id"] == base + 4 * 1024 + 2
    assert fields["grid"]["type"]["element"]["element-id"] == base + 6 * 1024 + 2
    assert metadata["last-column-id"] == base + 6 * 1024 + 2
    # The files of one write hold ids 0-7; those of the other 8-15 (the compaction keeps them apart
    # in a primary-key table only by chance, so there only the rows are compared).
    rows, meta = iceberg_read(metadata_dir(t), tmp_path, row_filter="id >= 8 AND note IS NOT NULL")
    assert rows == lakectl_rows(t.scan(where="id >= 8 AND note IS NOT NULL"))
    if not primary_key:
        assert len(meta["files"]) == 1


def _puffins(t: Table) -> list[str]:
    return sorted(n for n in os.listdir(metadata_dir(t)) if n.endswith(".puffin"))


def _live_vectors(t: Table) -> list[str]:
    """The data files the current snapshot's live deletion vectors are of (its delete manifests'
    entries but those it DELETED, read with fastavro)."""
    import fastavro

    doc = json.loads((metadata_dir(t) / f"v{(metadata_dir(t) / 'version-hint.text').read_text()}.metadata.json")
                     .read_text())
    snap = next(s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"])
    with open(snap["manifest-list"], "rb") as f:
        deletes = [r["manifest_path"] for r in fastavro.reader(f) if r["content"] == 1]
    out = []
    for path in deletes:
        with open(path, "rb") as f:
            out += [e["data_file"]["referenced_data_file"] for e in fastavro.reader(f) if e["status"] != 2]
    return out


def join_path(t: Table, entry: Any) -> str:
    return str(Path(t.schema.bucket_dir(t.path, entry.partition, entry.bucket)) / entry.file.file_name)


def test_primary_key_deletion_vectors_in_format_3(tmp_path: Path) -> None:
    """A primary-key table with deletion vectors (64-bit, as Java needs them for Iceberg) shows
    Iceberg readers every level but 0, as Paimon's batch reads do, each file minus the rows its
    vector deletes: pyiceberg reads what lakectl scans after writes, compactions and a delete."""
    t = make(tmp_path, "pkdv", primary_key=True, partitioned=True,
             options={"metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true",
                      "deletion-vectors.bitmap64": "true"})
    t.write(batch(0, 30, "a"))
    assert_iceberg_reads(t, tmp_path)
    # Updates 20..29: the write's lookup compaction puts the new rows in a level below the top
    # and marks the old ones in the top level's vectors; Iceberg readers see both levels.
    t.write(batch(20, 20, "b"))
    meta = assert_iceberg_reads(t, tmp_path)
    t = Table.open(t.path)
    levels = {join_path(t, e): e.file.level for e in live_entries(t.manifests(), t.latest_snapshot())}
    assert sorted({levels[f] for f in meta["files"]}) == [4, 5] and len(meta["files"]) == len(levels)
    assert len(lakectl_rows(t.scan())) == 40
    assert meta["format_version"] == 3 and len(_puffins(t)) == 1  # snapshot 2's vectors
    # The table's own vectors are 64-bit (Iceberg's magic after the length).
    index = [p for p in (Path(t.path) / "index").iterdir() if p.name.startswith("index-")]
    assert index and all(p.read_bytes()[5:9] == bytes([0xD1, 0xD3, 0x39, 0x64]) for p in index)
    t.compact()
    assert_iceberg_reads(t, tmp_path)
    t.delete("id < 5 OR name = 'b-33'")
    t.compact()
    assert_iceberg_reads(t, tmp_path)
    assert sorted(r[0] for r in lakectl_rows(Table.open(t.path).scan())) == [i for i in range(5, 40) if i != 33]
    t.compact(full=True)  # one file per bucket, no vectors left
    assert_iceberg_reads(t, tmp_path)
    assert _live_vectors(t) == []
    assert_only_named_files(metadata_dir(t))  # earlier snapshots' Puffin files stay while they are kept


def test_append_deletion_vectors_in_format_3(tmp_path: Path) -> None:
    """An append table's vectors (Java's DELETE writes them; committed here as it commits them),
    one 32-bit and one 64-bit, reach Iceberg readers as Puffin deletion vectors; a rewriting
    delete and a full compaction then read as lakectl scans them."""
    from pyroaring import BitMap

    from core.commit import CommitMessage, FileStoreCommit
    from core.deletion_vectors import write_index_file

    t = make(tmp_path, "appdv", primary_key=False, partitioned=True,
             options={"metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true"})
    t.write(batch(0, 30, "a"))
    t = Table.open(t.path)
    entries = sorted(live_entries(t.manifests(), t.latest_snapshot()), key=lambda e: e.partition)
    assert len(entries) == 2  # one file per partition
    messages = [CommitMessage(e.partition, e.bucket, e.total_buckets, new_index_files=(
        write_index_file(t.file_io, t.path, {e.file.file_name: BitMap(positions)}, bitmap64=wide),))
        for e, positions, wide in zip(entries, ([0, 2], [1]), (False, True))]
    FileStoreCommit(t.file_io, t.path, t.schema).commit(messages)
    meta = assert_iceberg_reads(t, tmp_path)
    assert len(lakectl_rows(Table.open(t.path).scan())) == 27 and len(_puffins(t)) == 1
    assert len(meta["files"]) == 2
    t.write(batch(30, 6, "b"))
    assert_iceberg_reads(t, tmp_path)
    t.delete("id >= 33 OR name = 'a-4'")
    assert_iceberg_reads(t, tmp_path)
    t.compact(full=True)
    assert_iceberg_reads(t, tmp_path)
