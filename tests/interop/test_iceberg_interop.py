"""Iceberg metadata written beside lakectl's commits (metadata.iceberg.storage, core/iceberg.py),
read by an independent Iceberg reader: pyiceberg 0.12 (``StaticTable.from_metadata``, no
catalog) reads exactly the rows ``lakectl scan`` returns after each write, compaction,
overwrite and delete, on append and primary-key tables, partitioned and not; a primary-key
table shows Iceberg readers its top level only, what its last full compaction wrote, as
Paimon documents. Java Paimon 1.0 writes a table with Iceberg metadata, lakectl goes on
writing and compacting it, and pyiceberg and Java read the result as lakectl scans it. A
write killed between the Paimon publish and the Iceberg metadata leaves the Paimon table at
the new snapshot, and the next commit or ``iceberg-sync`` brings the metadata in step."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from iceberg_oracle import iceberg_read
from java_oracle import java_read, java_run, lakectl_rows

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
    # Older metadata versions and the manifests only they name are gone (previous-versions-max 0).
    names = sorted(os.listdir(metadata_dir(t)))
    assert [n for n in names if n.endswith(".metadata.json")] == [f"v{meta['current_snapshot']}.metadata.json"]
    assert len([n for n in names if n.endswith(".avro")]) == 2  # one manifest list, one manifest


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
    t = make(tmp_path, "hc", primary_key=False, partitioned=True,
             options={"metadata.iceberg.storage": "hadoop-catalog", "metadata.iceberg.manifest-compression": "gzip",
                      "metadata.iceberg.previous-versions-max": "1"})
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
    assert meta["current_snapshot"] == 3
    old_rows, _ = iceberg_read(where / "v2.metadata.json", tmp_path)
    assert old_rows == lakectl_rows(Table.open(t.path).scan(snapshot_id=2))


def lakectl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "lakectl", *args], capture_output=True, text=True,
                          env=full_env, timeout=300, check=False)


@pytest.mark.parametrize("option,value,named", [
    ("metadata.iceberg.storage", "hive-catalog", "metadata.iceberg.storage=hive-catalog"),
    ("metadata.iceberg.storage", "rest-catalog", "metadata.iceberg.storage=rest-catalog"),
    ("metadata.iceberg.format-version", "3", "metadata.iceberg.format-version=3"),
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
    assert lakectl("iceberg-sync", "db.late", "-w", wh).returncode == 0
    assert len([n for n in os.listdir(metadata_dir(t)) if n.endswith(".avro")]) == 2
    assert_iceberg_reads(t, tmp_path)


def _first_iceberg_mutation(trace: Path) -> int:
    for line in trace.read_text().splitlines():
        n, _, path = line.split(" ", 2)
        if "/metadata/" in path:
            return int(n)
    raise AssertionError(f"no Iceberg metadata write in the trace:\n{trace.read_text()}")


@pytest.mark.parametrize("recover", ["next-commit", "iceberg-sync"])
def test_kill_between_publish_and_iceberg_metadata(tmp_path: Path, recover: str) -> None:
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
    n = _first_iceberg_mutation(trace)
    r = lakectl("write", "db.t", "-w", wh, "-i", str(second), env={"LAKECTL_FAULT": f"kill:mutation:{n}"})
    assert r.returncode == -9, r.stderr
    t = Table.open("db.t", warehouse=wh)
    assert t.latest_snapshot().id == 2  # published: Paimon readers read the new snapshot
    assert lakectl_rows(t.scan()) == [[1, "a"], [2, "b"], [3, "c"]]
    stale, meta = iceberg_read(metadata_dir(t), tmp_path)
    assert meta["current_snapshot"] == 1 and stale == [[1, "a"], [2, "b"]]
    if recover == "next-commit":
        third = tmp_path / "c.csv"
        third.write_text("id,name\n4,d\n")
        assert lakectl("write", "db.t", "-w", wh, "-i", str(third)).returncode == 0
    else:
        assert lakectl("iceberg-sync", "db.t", "-w", wh).returncode == 0
    assert_iceberg_reads(t, tmp_path)


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
    Table.open(str(path)).compact(full=True)
    t = Table.open(str(path))
    expected = lakectl_rows(t.scan())
    assert [r[0] for r in expected] == ([1, 2, 3, 4, 5, 6] if primary_key else [1, 1, 2, 3, 4, 5, 6])
    rows, meta = iceberg_read(path / "metadata", tmp_path)
    assert rows == expected and meta["current_snapshot"] == t.latest_snapshot().id
    java_rows, _ = java_read(path)
    assert sorted(java_rows, key=json.dumps) == expected


def test_columns_added_renamed_and_dropped(tmp_path: Path) -> None:
    """The metadata carries the current schema; files written under older ones are read by
    field id through the name mapping: a renamed column keeps its values, a dropped one is
    skipped, an added one reads as null in older files."""
    t = make(tmp_path, "evolving", primary_key=False, partitioned=True)
    t.write(batch(0, 10, "a"))
    wh = str(tmp_path / "wh")
    r = lakectl("alter-schema", "db.evolving", "-w", wh, "--rename-column", "name:label", "--drop-column", "score",
                "--add-column", "note STRING")
    assert r.returncode == 0, r.stderr
    t = Table.open("db.evolving", warehouse=wh)
    more = batch(10, 5, "b").drop_columns(["score"]).rename_columns(
        ["id", "big", "label", "amount", "day", "ts", "flag", "dt"]).append_column("note", pa.array(["n"] * 5))
    t.write(more)
    meta = assert_iceberg_reads(t, tmp_path)
    assert [f["name"] for f in meta["schema"]] == ["id", "big", "label", "amount", "day", "ts", "flag", "dt", "note"]
    t.iceberg_sync()  # the Python API's sync of the same snapshot reads the same
    assert_iceberg_reads(t, tmp_path)


def test_rollback_writes_the_targets_metadata(tmp_path: Path) -> None:
    t = make(tmp_path, "rolled", primary_key=False, partitioned=True)
    for i in range(3):
        t.write(batch(i * 10, 10, f"w{i}"))
    t.rollback(snapshot_id=1, dry_run=False)
    meta = assert_iceberg_reads(t, tmp_path)
    assert meta["current_snapshot"] == 1
    # The removed snapshots' metadata is gone with the manifests only it named.
    names = sorted(os.listdir(metadata_dir(t)))
    assert [n for n in names if n.endswith(".json")] == ["v1.metadata.json"]
    assert len([n for n in names if n.endswith(".avro")]) == 2
    t.write(batch(50, 4, "after"))
    assert assert_iceberg_reads(t, tmp_path)["current_snapshot"] == 2


def test_an_older_snapshots_sync_leaves_a_newer_ones_metadata(tmp_path: Path) -> None:
    """Two writers: the later commit's metadata landed first; the earlier one's sync, arriving
    after, writes nothing rather than turn the version hint back."""
    from core import iceberg
    from core.manifest import live_entries

    t = make(tmp_path, "raced", primary_key=False, partitioned=False)
    t.write(batch(0, 5, "a"))
    t.write(batch(5, 5, "b"))
    t = Table.open(t.path)
    first = t.snapshots.snapshot(1)
    result = iceberg.sync(t.file_io, t.path, t.schema, first, live_entries(t.manifests(), first))
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
    for where, keep in [("day = '2024-01-02'", lambda r: r[7] == "2024-01-02"), ("n = 7", lambda r: r[8] == 7),
                        ("dec = -0.0001", lambda r: r[9] == "-0.0001"),
                        ("ts < '2000-01-01T00:00:00'", lambda r: r[10] is not None and r[10] < "2000"),
                        ("day IS NULL", lambda r: r[7] is None)]:
        rows, meta = iceberg_read(metadata_dir(t), tmp_path, row_filter=where)
        assert rows == [r for r in expected if keep(r)] and len(rows) == 1, where
        assert len(meta["files"]) == 1, where  # pruned by partition value


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
    assert len(os.listdir(where)) == 4  # one version: metadata file, hint, list, manifest
    r = lakectl("drop", "db.after", "-w", str(wh))
    assert r.returncode == 0, r.stderr
    assert not (wh / "iceberg" / "db" / "after").exists() and not Path(moved.path).exists()
