"""lakectl tag rename, tag create --replace, expire-tags, rollback/tag --timestamp, and the
partitions / buckets / manifests views, through CliRunner on real tables. Expected values come
from the rows the tests wrote, the files on disk and the Avro manifest lists read with
fastavro directly, never from the code under test."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from core.ops.create import create
from core.table import Table
from lakectl.app import app

runner = CliRunner()


def cli(tmp_path: Path, *args: str) -> Result:
    return runner.invoke(app, ["-w", str(tmp_path / "wh"), *args])


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout)


def error(result: Result, code: int, fragment: str) -> None:
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.stderr
    assert result.stdout == ""


# Snapshot k of the `table` fixture holds the rows written by writes 1..k.
WRITES = [[(1, "x")], [(2, "x")], [(3, "y")]]
MODEL = {k: {r for w in WRITES[:k] for r in w} for k in (1, 2, 3)}


@pytest.fixture
def table(tmp_path: Path) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id INT NOT NULL, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "1", "write-only": "true"})
    for rows in WRITES:
        t.write(pa.table({"id": pa.array([r[0] for r in rows], pa.int32()), "dt": [r[1] for r in rows]}))
    return t


def scanned(tmp_path: Path, *flags: str) -> set[tuple[int, str]]:
    return {(r["id"], r["dt"]) for r in ok_json(cli(tmp_path, "scan", "db.t", *flags, "-f", "json"))}


def tag_file(t: Table, name: str) -> Path:
    return Path(t.path) / "tag" / f"tag-{name}"


# ---- tag rename / --replace ----------------------------------------------------------------
def test_tag_rename_moves_the_file_and_keeps_snapshot_create_time_and_ttl(tmp_path: Path, table: Table) -> None:
    made = ok_json(cli(tmp_path, "tag", "create", "db.t", "old", "--snapshot-id", "1", "--time-retained", "2d",
                       "-f", "json"))
    before = tag_file(table, "old").read_text()
    renamed = ok_json(cli(tmp_path, "tag", "rename", "db.t", "old", "new", "-f", "json"))
    assert renamed == {**made, "tag": "new"}
    assert not tag_file(table, "old").exists() and tag_file(table, "new").exists()
    assert tag_file(table, "new").read_text() == before  # copied byte for byte
    assert scanned(tmp_path, "--tag", "new") == MODEL[1]
    error(cli(tmp_path, "scan", "db.t", "--tag", "old"), 3, "tag old")


def test_tag_rename_errors(tmp_path: Path, table: Table) -> None:
    for name, sid in (("a", "1"), ("b", "2")):
        assert cli(tmp_path, "tag", "create", "db.t", name, "--snapshot-id", sid).exit_code == 0
    error(cli(tmp_path, "tag", "rename", "db.t", "a", "b"), 1, "tag b already exists")
    assert json.loads(tag_file(table, "a").read_text())["id"] == 1  # both untouched
    assert json.loads(tag_file(table, "b").read_text())["id"] == 2
    error(cli(tmp_path, "tag", "rename", "db.t", "nope", "c"), 3, "tag nope")
    error(cli(tmp_path, "tag", "rename", "db.t", "a", "12"), 2, "tag name")
    assert not tag_file(table, "c").exists() and not tag_file(table, "12").exists()


def test_a_rename_interrupted_after_writing_the_new_name_finishes_when_run_again(tmp_path: Path, table: Table) -> None:
    assert cli(tmp_path, "tag", "create", "db.t", "a", "--snapshot-id", "2").exit_code == 0
    tag_file(table, "b").write_text(tag_file(table, "a").read_text())  # the crash: new written, old not deleted
    assert ok_json(cli(tmp_path, "tag", "rename", "db.t", "a", "b", "-f", "json"))["snapshot_id"] == 2
    assert not tag_file(table, "a").exists() and scanned(tmp_path, "--tag", "b") == MODEL[2]
    # a different tag under the new name is still refused
    assert cli(tmp_path, "tag", "create", "db.t", "c", "--snapshot-id", "1").exit_code == 0
    error(cli(tmp_path, "tag", "rename", "db.t", "c", "b"), 1, "tag b already exists")


def test_tag_create_replace_repoints_an_existing_tag(tmp_path: Path, table: Table) -> None:
    assert cli(tmp_path, "tag", "create", "db.t", "rel", "--snapshot-id", "1").exit_code == 0
    error(cli(tmp_path, "tag", "create", "db.t", "rel", "--snapshot-id", "3"), 1, "already exists")
    assert scanned(tmp_path, "--tag", "rel") == MODEL[1]
    replaced = ok_json(cli(tmp_path, "tag", "create", "db.t", "rel", "--snapshot-id", "3", "--replace",
                           "--time-retained", "1h", "-f", "json"))
    assert (replaced["snapshot_id"], replaced["time_retained"]) == (3, 3600)
    raw = json.loads(tag_file(table, "rel").read_text())
    assert (raw["id"], raw["tagTimeRetained"]) == (3, 3600.0)
    assert scanned(tmp_path, "--tag", "rel") == MODEL[3]
    # --replace on a name not yet taken is Paimon's replace_tag refusal: exit 3, no tag written
    error(cli(tmp_path, "tag", "create", "db.t", "fresh", "--snapshot-id", "2", "--replace"), 3,
          "tag fresh does not exist")
    assert not tag_file(table, "fresh").exists()


# ---- --timestamp: the latest snapshot at or before T -----------------------------------------
def test_timestamp_names_the_latest_snapshot_at_or_before_it(tmp_path: Path, table: Table) -> None:
    times = {s.id: s.time_millis for s in table.snapshots.snapshots()}
    assert times[1] < times[2] < times[3] or pytest.skip("two snapshots in one millisecond")
    cases = {str(times[1]): 1, str(times[2] - 1): 1, str(times[2]): 2, str(times[3] + 10_000): 3}
    for i, (moment, expected) in enumerate(cases.items()):
        made = ok_json(cli(tmp_path, "tag", "create", "db.t", f"at{i}", "--timestamp", moment, "-f", "json"))
        assert made["snapshot_id"] == expected, moment
        plan = ok_json(cli(tmp_path, "rollback", "db.t", "--timestamp", moment, "--dry-run", "-f", "json"))
        assert plan["target_snapshot_id"] == expected, moment
    early = str(times[1] - 1)
    error(cli(tmp_path, "tag", "create", "db.t", "early", "--timestamp", early), 3, "no snapshot at or before")
    error(cli(tmp_path, "rollback", "db.t", "--timestamp", early), 3, "no snapshot at or before")
    # an ISO time is echoed as typed, not as the epoch millis it became
    for command in (["rollback", "db.t"], ["tag", "create", "db.t", "early"], ["scan", "db.t"]):
        error(cli(tmp_path, *command, "--timestamp", "2020-01-01T00:00:00"), 3,
              "no snapshot at or before 2020-01-01T00:00:00 (")
    done = ok_json(cli(tmp_path, "rollback", "db.t", "--timestamp", str(times[2] - 1), "-f", "json"))
    assert done["target_snapshot_id"] == 1 and table.snapshots.list_ids() == [1]
    assert scanned(tmp_path) == MODEL[1]


# ---- expire-tags ---------------------------------------------------------------------------
def _tag(t: Table, name: str, sid: int, age: dt.timedelta, ttl: dt.timedelta | None) -> None:
    """A tag created ``age`` ago (written through TagManager to set the create time)."""
    t.tags.create(name, t.snapshots.snapshot(sid), time_retained=ttl, create_time=dt.datetime.now() - age)


def test_expire_tags_by_ttl_and_older_than_keeps_what_remaining_snapshots_and_tags_need(
        tmp_path: Path, table: Table) -> None:
    hour, day = dt.timedelta(hours=1), dt.timedelta(days=1)
    _tag(table, "gone-ttl", 1, 2 * hour, hour)        # created 2h ago, kept 1h: expired
    _tag(table, "kept-ttl", 1, 2 * hour, 3 * hour)    # kept 3h: not yet
    _tag(table, "old", 2, 10 * day, None)              # no TTL: only --older-than expires it
    _tag(table, "young", 2, hour, None)
    plan = ok_json(cli(tmp_path, "expire-tags", "db.t", "--dry-run", "-f", "json"))
    assert (plan["table"], plan["branch"], plan["dry_run"]) == ("db.t", "main", True)
    assert [(r["tag"], r["reason"], r["dry_run"]) for r in plan["tags_expired"]] == [("gone-ttl", "time-retained", True)]
    assert tag_file(table, "gone-ttl").exists()

    done = ok_json(cli(tmp_path, "expire-tags", "db.t", "--older-than", "5d", "-f", "json"))
    assert sorted((r["tag"], r["reason"], r["snapshot_id"]) for r in done["tags_expired"]) == [
        ("gone-ttl", "time-retained", 1), ("old", "older-than", 2)]
    assert sorted(p.name for p in (Path(table.path) / "tag").iterdir()) == ["tag-kept-ttl", "tag-young"]
    # nothing due: an object all the same, never a bare []
    assert ok_json(cli(tmp_path, "expire-tags", "db.t", "-f", "json")) == \
        {"table": "db.t", "branch": "main", "tags_expired": [], "dry_run": False}

    # Expire snapshots 1-2 and remove orphans: snapshot 1's files live on through kept-ttl.
    assert cli(tmp_path, "expire", "db.t", "--retain-min", "1", "--retain-max", "1").exit_code == 0
    assert cli(tmp_path, "remove-orphan-files", "db.t", "--older-than", "0s", "--force").exit_code == 0
    assert table.snapshots.list_ids() == [3]
    assert scanned(tmp_path) == MODEL[3]
    assert scanned(tmp_path, "--tag", "kept-ttl") == MODEL[1]
    assert scanned(tmp_path, "--tag", "young") == MODEL[2]

    # The last tag on snapshot 1 goes (created 2h ago); the next orphan sweep keeps what the rest need.
    assert cli(tmp_path, "expire-tags", "db.t", "--older-than", "90m").exit_code == 0
    assert sorted(p.name for p in (Path(table.path) / "tag").iterdir()) == ["tag-young"]
    assert cli(tmp_path, "remove-orphan-files", "db.t", "--older-than", "0s", "--force").exit_code == 0
    assert scanned(tmp_path) == MODEL[3]
    assert scanned(tmp_path, "--tag", "young") == MODEL[2]


def test_expire_tags_uses_the_table_default_time_retained(tmp_path: Path) -> None:
    t = Table.locate("db.d", warehouse=str(tmp_path / "wh"))
    create(t, "id INT", options={"tag.default-time-retained": "1 h"})
    t.write(pa.table({"id": pa.array([1], pa.int32())}))
    _tag(t, "stale", 1, dt.timedelta(hours=2), None)
    _tag(t, "own-ttl", 1, dt.timedelta(hours=2), dt.timedelta(days=1))  # its own TTL wins
    done = ok_json(cli(tmp_path, "expire-tags", "db.d", "-f", "json"))
    assert [(r["tag"], r["time_retained"]) for r in done["tags_expired"]] == [("stale", 3600)]
    assert t.tags.names() == ["own-ttl"]
    # as Paimon's createTag, a tag created without --time-retained stores the default TTL
    made = ok_json(cli(tmp_path, "tag", "create", "db.d", "new", "-f", "json"))
    assert made["time_retained"] == 3600
    assert json.loads(tag_file(t, "new").read_text())["tagTimeRetained"] == 3600.0


def test_expire_tags_errors(tmp_path: Path, table: Table) -> None:
    error(cli(tmp_path, "expire-tags", "db.t", "--older-than", "someday"), 2, "--older-than")
    error(cli(tmp_path, "expire-tags", "db.missing"), 3, "does not exist")


# ---- partitions / buckets / manifests --------------------------------------------------------
@pytest.fixture
def parted(tmp_path: Path) -> Table:
    """db.p: two buckets, partitions a and b; write 1 = ids 1..6 (a, b alternating), write 2 = ids
    7..9 in a. write-only: every file holds exactly the rows of one write in one bucket."""
    t = Table.locate("db.p", warehouse=str(tmp_path / "wh"))
    create(t, "id INT NOT NULL, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    t.write(pa.table({"id": pa.array(range(1, 7), pa.int32()), "dt": ["a", "b"] * 3}))
    t.write(pa.table({"id": pa.array([7, 8, 9], pa.int32()), "dt": ["a"] * 3}))
    return t


def _disk_files(t: Table, files: list[dict[str, Any]]) -> dict[str, Path]:
    """Each listed data file's path on disk: dt=<v>/bucket-<n>/<name>."""
    return {f["file_name"]: Path(t.path) / f"dt={f['partition']['dt']}" / f"bucket-{f['bucket']}" / f["file_name"]
            for f in files}


def _creation(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


def test_partitions_and_buckets_match_the_rows_written_and_the_files_on_disk(tmp_path: Path, parted: Table) -> None:
    files = ok_json(cli(tmp_path, "files", "db.p", "-f", "json"))
    paths = _disk_files(parted, files)
    per_partition: dict[str, list[dict[str, Any]]] = defaultdict(list)
    per_bucket: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for f in files:
        per_partition[f["partition"]["dt"]].append(f)
        per_bucket[(f["partition"]["dt"], f["bucket"])].append(f)

    got = ok_json(cli(tmp_path, "partitions", "db.p", "-f", "json"))
    assert [r["partition"] for r in got] == [{"dt": "a"}, {"dt": "b"}]
    assert {r["partition"]["dt"]: r["record_count"] for r in got} == {"a": 6, "b": 3}  # rows written
    for r in got:
        mine = per_partition[r["partition"]["dt"]]
        assert r["file_count"] == len(mine)
        assert r["file_size_in_bytes"] == sum(os.path.getsize(paths[f["file_name"]]) for f in mine)
        newest_mtime = max(os.path.getmtime(paths[f["file_name"]]) for f in mine)
        assert abs(_creation(r["last_update_time"]) - newest_mtime) < 5

    buckets = ok_json(cli(tmp_path, "buckets", "db.p", "-f", "json"))
    assert [(r["partition"]["dt"], r["bucket"]) for r in buckets] == sorted(per_bucket)
    assert sum(r["record_count"] for r in buckets) == 9
    for r in buckets:
        mine = per_bucket[(r["partition"]["dt"], r["bucket"])]
        assert r["file_count"] == len(mine)
        assert r["record_count"] == sum(pq.read_metadata(paths[f["file_name"]]).num_rows for f in mine)
        assert r["file_size_in_bytes"] == sum(os.path.getsize(paths[f["file_name"]]) for f in mine)

    only_b = ok_json(cli(tmp_path, "buckets", "db.p", "--partition", "dt=b", "-f", "json"))
    assert only_b == [r for r in buckets if r["partition"] == {"dt": "b"}]
    assert ok_json(cli(tmp_path, "partitions", "db.p", "-p", "dt=b", "-f", "json")) == got[1:]
    assert ok_json(cli(tmp_path, "partitions", "db.p", "--limit", "1", "-f", "json")) == got[:1]
    # as of snapshot 1 (also by tag): ids 1..6 only
    assert cli(tmp_path, "tag", "create", "db.p", "first", "--snapshot-id", "1").exit_code == 0
    for flags in (["--snapshot-id", "1"], ["--tag", "first"]):
        first = ok_json(cli(tmp_path, "partitions", "db.p", *flags, "-f", "json"))
        assert {r["partition"]["dt"]: r["record_count"] for r in first} == {"a": 3, "b": 3}
    csv = cli(tmp_path, "partitions", "db.p", "-f", "csv")
    assert csv.exit_code == 0 and csv.stdout.splitlines()[0] == \
        "table,branch,partition,record_count,file_size_in_bytes,file_count,last_update_time"


def test_manifests_match_the_avro_manifest_lists(tmp_path: Path, parted: Table) -> None:
    def read_list(name: str) -> list[dict[str, Any]]:
        with open(Path(parted.path) / "manifest" / name, "rb") as f:
            return list(fastavro.reader(f))

    for sid in (1, 2):
        snap = json.loads((Path(parted.path) / "snapshot" / f"snapshot-{sid}").read_text())
        expected = [(m["_FILE_NAME"], os.path.getsize(Path(parted.path) / "manifest" / m["_FILE_NAME"]),
                     m["_NUM_ADDED_FILES"], m["_NUM_DELETED_FILES"], m["_SCHEMA_ID"], which)
                    for which, key in (("base", "baseManifestList"), ("delta", "deltaManifestList"))
                    for m in read_list(snap[key])]
        got = ok_json(cli(tmp_path, "manifests", "db.p", "--snapshot-id", str(sid), "-f", "json"))
        assert [(r["file_name"], r["file_size"], r["num_added_files"], r["num_deleted_files"], r["schema_id"],
                 r["manifest_list"]) for r in got] == expected
    latest = ok_json(cli(tmp_path, "manifests", "db.p", "-f", "json"))
    # snapshot 2's delta added write 2's files: partition a only, one file per bucket it hit
    new_files = {f["file_name"] for f in ok_json(cli(tmp_path, "files", "db.p", "-f", "json"))} - \
        {f["file_name"] for f in ok_json(cli(tmp_path, "files", "db.p", "--snapshot-id", "1", "-f", "json"))}
    assert sum(r["num_added_files"] for r in latest if r["manifest_list"] == "delta") == len(new_files)
    assert sum(r["num_added_files"] for r in latest) == len(ok_json(cli(tmp_path, "files", "db.p", "-f", "json")))


def test_views_errors_and_empty_table(tmp_path: Path) -> None:
    t = Table.locate("db.e", warehouse=str(tmp_path / "wh"))
    create(t, "id INT")
    for command in ("partitions", "buckets", "manifests"):
        assert ok_json(cli(tmp_path, command, "db.e", "-f", "json")) == []
        error(cli(tmp_path, command, "db.missing"), 3, "does not exist")
        error(cli(tmp_path, command, "db.e", "--snapshot-id", "7"), 3, "snapshot 7")
    error(cli(tmp_path, "partitions", "db.e", "--partition", "dt=a"), 2, "partition")
    error(cli(tmp_path, "partitions", "db.e", "--limit", "-1"), 2, "--limit")


def test_files_only_an_expired_tag_held_are_reclaimed_and_nothing_else(tmp_path: Path) -> None:
    """s1 = A (tagged 'gone', TTL passed), s2 = overwrite with B (tagged 'kept'), s3 = B + C.
    After expire (keeping s3), expire-tags and remove-orphan-files, A's files are gone from
    disk and s3 and 'kept' still read as the model says."""
    t = Table.locate("db.o", warehouse=str(tmp_path / "wh"))
    create(t, "id INT NOT NULL, dt STRING NOT NULL", partition_keys=["dt"], options={"bucket": "-1"})

    def rows(ids: range, part: str) -> pa.Table:
        return pa.table({"id": pa.array(list(ids), pa.int32()), "dt": [part] * len(ids)})

    model_a = {(i, "a") for i in range(0, 5)}
    model_b = {(i, "a") for i in range(10, 15)}
    model_c = {(i, "b") for i in range(20, 23)}
    t.write(rows(range(0, 5), "a"))
    t.write(rows(range(10, 15), "a"), mode="overwrite")
    assert cli(tmp_path, "tag", "create", "db.o", "kept", "--snapshot-id", "2").exit_code == 0
    t.write(rows(range(20, 23), "b"))
    # Tagged after the writes: a commit deletes tags past their TTL, as Java's does.
    _tag(t, "gone", 1, dt.timedelta(days=2), dt.timedelta(days=1))
    a_files = _disk_files(t, ok_json(cli(tmp_path, "files", "db.o", "--tag", "gone", "-f", "json")))
    later_files = _disk_files(t, ok_json(cli(tmp_path, "files", "db.o", "-f", "json")))
    assert a_files and not set(a_files) & set(later_files)

    assert cli(tmp_path, "expire", "db.o", "--retain-min", "1", "--retain-max", "1").exit_code == 0
    assert cli(tmp_path, "remove-orphan-files", "db.o", "--older-than", "0s", "--force").exit_code == 0
    assert all(p.exists() for p in a_files.values())  # still tagged
    assert scanned_table(tmp_path, "db.o", "--tag", "gone") == model_a

    assert [r["tag"] for r in ok_json(cli(tmp_path, "expire-tags", "db.o", "-f", "json"))["tags_expired"]] == ["gone"]
    assert all(p.exists() for p in a_files.values())  # tag files only: data waits for the sweep
    assert cli(tmp_path, "remove-orphan-files", "db.o", "--older-than", "0s", "--force").exit_code == 0
    assert not any(p.exists() for p in a_files.values())
    assert all(p.exists() for p in later_files.values())
    assert scanned_table(tmp_path, "db.o") == model_b | model_c
    assert scanned_table(tmp_path, "db.o", "--tag", "kept") == model_b
    assert cli(tmp_path, "check", "db.o").exit_code == 0


def scanned_table(tmp_path: Path, name: str, *flags: str) -> set[tuple[int, str]]:
    return {(r["id"], r["dt"]) for r in ok_json(cli(tmp_path, "scan", name, *flags, "-f", "json"))}
