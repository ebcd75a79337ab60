"""Deletion vectors (``deletion-vectors.enabled=true``) against Java Paimon 1.0, the reference.

Java writes primary-key tables whose updates and deletes live in deletion vectors (index files
named by each snapshot's index manifest) and whose level-0 files batch reads skip; lakectl
must read exactly what Java reads at every snapshot, and what lakectl writes, compacts and
expires on such a table Java must read the same way and be able to continue.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run, lakectl_rows
from test_java_interop import assert_same_at_every_snapshot, open_table

from core.deletion_vectors import read_index_file
from core.index_manifest import DELETION_VECTORS, live_index_entries
from core.ops.check import check
from core.ops.orphans import remove_orphan_files
from core.ops.tags import create_tag
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

FIELDS = [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"},
          {"name": "n", "type": "BIGINT"}, {"name": "dt", "type": "STRING NOT NULL"}]
SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string()), ("n", pa.int64()), ("dt", pa.string())])


def create_spec(partitioned: bool, **options: str) -> dict[str, Any]:
    return {"fields": FIELDS, "primaryKeys": ["id", "dt"] if partitioned else ["id"],
            "partitionKeys": ["dt"] if partitioned else [],
            "options": {"bucket": "2", "deletion-vectors.enabled": "true", **options}}


def dt_of(i: int, partitioned: bool) -> str:
    return f"d{i % 2}" if partitioned else "d"


def rows(ids: range | list[int], tag: str, partitioned: bool) -> list[list[Any]]:
    return [[i, f"{tag}{i}", i * 10, dt_of(i, partitioned)] for i in ids]


def three_commits(partitioned: bool) -> list[dict[str, Any]]:
    """Inserts; updates and deletes; more inserts (the shape of issue 16)."""
    updates = rows(range(0, 20), "u", partitioned) + rows(range(50, 55), "x", partitioned)
    return [
        {"op": "write", "rows": rows(range(60), "v", partitioned)},
        {"op": "write", "rows": updates, "kinds": ["+U"] * 20 + ["-D"] * 5},
        {"op": "write", "rows": rows(range(60, 79), "n", partitioned)},
    ]


def dv_cardinality(table: Table) -> int:
    """Rows the latest snapshot's deletion vectors delete."""
    snap = table.latest_snapshot()
    total = 0
    for e in live_index_entries(table.file_io, table.path, snap.index_manifest if snap else None):
        if e.index_file.index_type == DELETION_VECTORS:
            total += sum(len(b) for b in read_index_file(table.file_io, table.path, e.index_file).values())
    return total


def range_cardinalities(table: Table) -> list[tuple[int | None, int]]:
    """Per deletion-vector range of the latest snapshot: the cardinality its index manifest
    gives (None where the writer gave none) and its vector's number of positions."""
    out = []
    for e in live_index_entries(table.file_io, table.path, table.latest_snapshot().index_manifest):
        if e.index_file.index_type == DELETION_VECTORS:
            vectors = read_index_file(table.file_io, table.path, e.index_file)
            out += [(r.cardinality, len(vectors[r.data_file])) for r in e.index_file.dv_ranges]
    return out


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_java_dv_table_reads_as_java_at_every_snapshot(tmp_path: Path, partitioned: bool) -> None:
    path = tmp_path / "wh" / "db.db" / "dv"
    java_run(path, three_commits(partitioned), create=create_spec(partitioned))
    table = open_table(path)
    assert dv_cardinality(table) > 0, "the Java table should carry deletion vectors"
    assert_same_at_every_snapshot(table, "Java DV table")
    expected, _ = java_read(path)
    assert len(expected) == 74
    # A filter on a value column: row-group pruning and deletion vectors together.
    assert lakectl_rows(table.scan(where="n >= 300")) == [r for r in expected if r[2] >= 300]
    # The first snapshot is one APPEND of level-0 files only: Java's batch read shows nothing.
    assert table.scan(snapshot_id=1).num_rows == 0


def test_java_dv_table_after_java_full_compaction_and_expire(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "db.db" / "dv"
    steps = three_commits(True) + [
        {"op": "compact", "full": True},
        {"op": "write", "rows": rows(range(70, 90), "w", True), "kinds": ["+U"] * 5 + ["-D"] * 5 + ["+I"] * 10},
        {"op": "expire", "retain_max": 3, "retain_min": 3},
    ]
    java_run(path, steps, create=create_spec(True))
    table = open_table(path)
    assert assert_same_at_every_snapshot(table, "Java DV table after compaction and expire") == 3


def test_lakectl_compacts_java_dv_table_and_java_continues(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "db.db" / "dv"
    java_run(path, three_commits(True), create=create_spec(True))
    table = open_table(path)
    before, _ = java_read(path)
    result = table.compact(full=True)
    assert result.snapshot_id is not None
    after, meta = java_read(path)
    assert after == before and meta["latest_snapshot"] == result.snapshot_id
    assert dv_cardinality(table) == 0, "a full compaction leaves no deletion vector behind"
    assert_same_at_every_snapshot(table, "lakectl compaction of a Java DV table")
    java_run(path, [{"op": "write", "rows": rows(range(0, 30, 3), "j", True), "kinds": ["+U", "-D"] * 5},
                    {"op": "write", "rows": rows(range(95, 99), "k", True)}])
    assert_same_at_every_snapshot(table, "Java after lakectl compaction")


def test_lakectl_writes_into_java_dv_table(tmp_path: Path) -> None:
    """lakectl's writes to a DV table become visible at once (their buckets are compacted,
    as Java's writers do) and carry the deletion vectors of untouched buckets forward."""
    path = tmp_path / "wh" / "db.db" / "dv"
    java_run(path, three_commits(True), create=create_spec(True))
    table = open_table(path)
    data = pa.table([[1, 3, 100], ["l1", "l3", "l100"], [1, 3, 100], ["d1", "d1", "d0"]], schema=SCHEMA)
    table.write(data)
    expected, _ = java_read(path)
    got = lakectl_rows(table.scan())
    assert got == expected
    assert [1, "l1", 1, "d1"] in got and [100, "l100", 100, "d0"] in got
    assert_same_at_every_snapshot(table, "lakectl write into a Java DV table")
    java_run(path, [{"op": "write", "rows": rows(range(0, 10), "j", True), "kinds": ["-D"] * 10}])
    assert_same_at_every_snapshot(table, "Java after lakectl's write")


def test_java_reads_lakectl_dv_table(tmp_path: Path) -> None:
    """A DV table lakectl made and wrote: Java reads it as lakectl does and writes on."""
    from test_lakectl_to_pypaimon import lakectl_table

    table = lakectl_table(tmp_path, "mine", [("id", "INT"), ("v", "STRING"), ("n", "BIGINT"), ("dt", "STRING")],
                          primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "2", "deletion-vectors.enabled": "true"})
    table.write(pa.table([list(range(30)), [f"a{i}" for i in range(30)], list(range(30)),
                          [f"d{i % 2}" for i in range(30)]], schema=SCHEMA))
    table.write(pa.table([list(range(0, 30, 4)), ["b"] * 8, [None] * 8, [f"d{i % 2}" for i in range(0, 30, 4)]],
                         schema=SCHEMA))
    # lakectl's compaction after each write is Java's lookup compaction: level 0 moves up and
    # the versions it replaces are marked in deletion vectors, older files stay as they are.
    assert dv_cardinality(table) == 8
    assert sorted({f.level for f in table.files()}) == [4, 5]
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["c"] * 3, "n": pa.array([1, 2, 3], pa.int64()),
                          "dt": ["d1", "d0", "d1"], "op": ["-D", "+U", "-D"]}), row_kind_column="op")
    assert dv_cardinality(table) == 11
    # Every range lakectl writes counts its vector's rows (_CARDINALITY), which Java reads past.
    assert all(given == actual for given, actual in range_cardinalities(table))
    assert_same_at_every_snapshot(table, "lakectl DV table")
    java_run(table.path, [{"op": "write", "rows": rows(range(0, 12), "j", True), "kinds": ["+U", "-D"] * 6}])
    assert_same_at_every_snapshot(table, "Java on a lakectl DV table")
    # The oracle (a Java 1.0 snapshot from before the field) rewrites every range without it.
    assert {given for given, _ in range_cardinalities(table)} == {None}
    table.write(pa.table([[5, 7], ["c5", "c7"], [5, 7], ["d1", "d1"]], schema=SCHEMA))
    assert_same_at_every_snapshot(table, "lakectl after Java on a DV table")
    # lakectl's write rewrites the vectors of the bucket it touched, with their cardinality.
    assert any(given is not None for given, _ in range_cardinalities(table))
    assert all(given in (None, actual) for given, actual in range_cardinalities(table))


# ---- maintenance: expire, remove-orphan-files, rollback, check, files ----------------------
def index_files_on_disk(table: Table) -> set[str]:
    directory = Path(table.path) / "index"
    return {p.name for p in directory.iterdir()} if directory.exists() else set()


def index_files_of(table: Table, snapshot_ids: list[int]) -> set[str]:
    names: set[str] = set()
    for sid in snapshot_ids:
        snap = table.snapshots.snapshot(sid)
        names.update(e.index_file.file_name
                     for e in live_index_entries(table.file_io, table.path, snap.index_manifest))
    return names


def many_dv_commits(path: Path) -> None:
    steps = three_commits(False)
    for round_ in range(3):
        steps.append({"op": "write", "rows": rows(range(round_ * 7, round_ * 7 + 14), f"r{round_}-", False),
                      "kinds": ["+U"] * 10 + ["-D"] * 4})
    java_run(path, steps, create=create_spec(False))


def test_lakectl_expire_deletes_only_unneeded_index_files(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "db.db" / "dv"
    many_dv_commits(path)
    table = open_table(path)
    create_tag(table, "keep", snapshot_id=6)
    before = index_files_on_disk(table)
    tagged, _ = java_read(path, tag="keep")
    result = table.expire(retain_max=2, retain_min=2, older_than="0s", max_deletes=100, dry_run=False)
    assert result.snapshots_expired
    retained = table.snapshots.list_ids()
    assert len(retained) == 2
    needed = index_files_of(table, retained) | {
        e.index_file.file_name for e in live_index_entries(table.file_io, table.path,
                                                           table.tags.snapshot("keep").index_manifest)}
    on_disk = index_files_on_disk(table)
    assert needed <= on_disk, "expire deleted an index file a retained snapshot or tag needs"
    assert on_disk == needed, "expire left index files no retained snapshot or tag needs"
    assert on_disk < before and result.index_files_deleted > 0
    assert_same_at_every_snapshot(table, "Java DV table after lakectl expire")
    assert lakectl_rows(table.scan(tag="keep")) == tagged == java_read(path, tag="keep")[0]
    assert check(table).ok


def test_orphans_rollback_check_and_files_on_java_dv_table(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "db.db" / "dv"
    many_dv_commits(path)
    table = open_table(path)
    stray = Path(table.path) / "index" / "index-stray-0"
    stray.write_bytes(b"\x01")
    os.utime(stray, (0, 0))
    before = index_files_on_disk(table)
    removed = remove_orphan_files(table, older_than="0s", force=True)
    assert [Path(p).name for p in removed.paths] == ["index-stray-0"]
    assert index_files_on_disk(table) == before - {"index-stray-0"}
    assert_same_at_every_snapshot(table, "after remove-orphan-files")
    # files: the rows each file's deletion vector deletes.
    files = table.files()
    assert any(f.deleted_rows for f in files)
    assert sum(f.row_count - f.deleted_rows for f in files if f.level > 0) == len(java_read(path)[0])
    # check verifies index manifests and index files.
    assert check(table).ok
    # rollback to an older snapshot: its deletion vectors come back with it.
    target = table.snapshots.list_ids()[-3]
    expected, _ = java_read(path, snapshot=target)
    table.rollback(snapshot_id=target, dry_run=False)
    got, meta = java_read(path)
    assert meta["latest_snapshot"] == target and got == expected == lakectl_rows(table.scan())
    assert check(table).ok
    # A broken index file is a problem check names.
    victim = sorted(index_files_of(table, [target]))[0]
    (Path(table.path) / "index" / victim).write_bytes(b"\x01garbage")
    problems = check(table).problems
    assert any(p.kind == "index-file" and victim in p.path for p in problems)


@pytest.mark.spark
def test_spark_engine_reads_and_compacts_java_dv_table(tmp_path: Path) -> None:
    """The Spark path ships each split's deletion vectors to the executors."""
    from core.engines import EngineSettings
    from core.engines.spark import SparkEngine
    from core.ops.compact import compact

    path = tmp_path / "wh" / "db.db" / "dv"
    java_run(path, three_commits(True), create=create_spec(True))
    table = open_table(path)
    expected, _ = java_read(path)
    engine = SparkEngine(master="local[2]")
    try:
        spark = EngineSettings(engine="spark", master="local[2]")
        assert lakectl_rows(table.scan(engine_settings=spark)) == expected
        frame = table.to_spark(engine_settings=spark).toPandas()
        assert len(frame) == len(expected)
        compact(table, full=True, engine=engine)
    finally:
        engine.session.stop()
    assert java_read(path)[0] == expected == lakectl_rows(table.scan())


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_deletion_vectors_of_append_tables(tmp_path: Path, bucket: str) -> None:
    """Append tables carry deletion vectors too (Java's DELETE on them writes some): a vector
    lakectl writes is read by Java and by lakectl alike, and compaction applies and drops it."""
    from pyroaring import BitMap
    from test_lakectl_to_pypaimon import lakectl_table

    from core.commit import CommitMessage, FileStoreCommit
    from core.deletion_vectors import write_index_file
    from core.manifest import live_entries

    options = {"bucket": bucket, "deletion-vectors.enabled": "true"}
    if bucket != "-1":
        options["bucket-key"] = "id"
    table = lakectl_table(tmp_path, "app", [("id", "INT"), ("v", "STRING"), ("n", "BIGINT"), ("dt", "STRING")],
                          options=options)
    batch = pa.table([list(range(20)), [f"a{i}" for i in range(20)], list(range(20)), ["d"] * 20], schema=SCHEMA)
    table.write(batch)
    target = table.files()[0]
    meta = write_index_file(table.file_io, table.path, {target.file_name: BitMap([0, 3, 5])})
    entry = next(e for e in live_entries(table.manifests(), table.latest_snapshot())
                 if e.file.file_name == target.file_name)
    FileStoreCommit(table.file_io, table.path, table.schema).commit(
        [CommitMessage(entry.partition, entry.bucket, entry.total_buckets, new_index_files=(meta,))])
    expected, _ = java_read(table.path)
    assert len(expected) == 17
    assert lakectl_rows(table.scan()) == expected
    assert [f.deleted_rows for f in table.files() if f.file_name == target.file_name] == [3]
    assert check(table).ok
    table.write(pa.table([[100, 101], ["x", "y"], [1, 2], ["d", "d"]], schema=SCHEMA))
    table.compact(full=True)
    live_names = {f.file_name for f in table.files()}
    assert dv_cardinality(table) == (3 if target.file_name in live_names else 0)
    assert java_read(table.path)[0] == lakectl_rows(table.scan())
    assert len(lakectl_rows(table.scan())) == 19


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_incremental_between_on_java_dv_table(tmp_path: Path, producer: str) -> None:
    """Java's incremental-between is a batch scan: with deletion vectors it skips level-0
    files, so without a changelog producer no APPEND shows; with the lookup producer the
    changelog files of the compactions are read. (Java's batch read drops -U/-D rows.)"""
    path = tmp_path / "wh" / "db.db" / "dv"
    java_run(path, three_commits(False), create=create_spec(False, **{"changelog-producer": producer}))
    table = open_table(path)
    latest = table.snapshots.latest_id()
    # Java 1.0 fails reading a changelog range that spans two lookup compactions: one each.
    ranges = [(0, 2), (1, 2), (2, 4), (4, latest)] + ([(0, latest)] if producer == "none" else [])
    for start, end in ranges:
        expected, _ = java_read(path, incremental_between=(start, end), with_kind=True)
        got = [r for r in lakectl_rows(table.changes(start, end)) if r[0] in ("+I", "+U")]
        assert got == expected, f"incremental-between {start},{end}"
        if producer == "none":
            assert got == []


def test_deletion_vectors_turned_off_read_as_java_reads(tmp_path: Path) -> None:
    """With deletion-vectors.enabled set back to false Java ignores the vectors (and reads
    level 0 again): lakectl reads the same, and refuses to compact, naming the option."""
    from core.errors import UsageError

    path = tmp_path / "wh" / "db.db" / "dv"
    java_run(path, three_commits(False) + [{"op": "set-option", "key": "deletion-vectors.enabled", "value": "false"}],
             create=create_spec(False))
    table = open_table(path)
    expected, _ = java_read(path)
    assert len(expected) == 75  # a deleted key whose -D went into a vector is back
    assert lakectl_rows(table.scan()) == expected
    with pytest.raises(UsageError, match="deletion-vectors.enabled"):
        table.compact(full=True)


def test_lookup_changelog_of_lakectl_dv_table_reads_as_java(tmp_path: Path) -> None:
    """With deletion vectors the lookup producer's changelog comes from the lookup compaction
    after each write, at the level it compacts to, as Java's: Java's incremental read (which
    skips level 0) and lakectl's agree, on lakectl's commits and on Java's in between."""
    from test_lakectl_to_pypaimon import lakectl_table

    table = lakectl_table(tmp_path, "lk", [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                          options={"bucket": "1", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"})
    schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
    table.write(pa.table([list(range(10)), [f"a{i}" for i in range(10)]], schema=schema))
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["b", "b", None], "op": ["+U", "+U", "-D"]}),
                row_kind_column="op")
    java_run(table.path, [{"op": "write", "rows": [[4, "j"], [5, None]], "kinds": ["+U", "-D"]}])
    table.write(pa.table({"id": pa.array([4, 6], pa.int32()), "v": ["c", "c"]}, schema=schema))
    latest = table.snapshots.latest_id()
    assert latest == 8
    for start in range(latest):
        expected, _ = java_read(table.path, incremental_between=(start, start + 1), with_kind=True)
        got = [r for r in lakectl_rows(table.changes(start, start + 1)) if r[0] in ("+I", "+U")]
        assert got == expected, f"incremental-between {start},{start + 1}"
    changes = lakectl_rows(table.changes(2, 4))
    assert ["-D", 3, "a3"] in changes and ["+U", 1, "b"] in changes and ["-U", 1, "a1"] in changes
    assert java_read(table.path)[0] == lakectl_rows(table.scan())
