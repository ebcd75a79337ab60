"""``lakectl clone`` through CliRunner: the copy reads as the source did at the snapshot (and as
a model of the writes says), passes check, and lives on independently of the source."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from typer.testing import CliRunner, Result

from core.evolution import AddColumn
from core.ops.check import check
from core.ops.create import create
from core.ops.tags import create_tag
from core.table import Table
from core.types import parse_type
from lakectl.app import app

runner = CliRunner()


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def rows(table: Table, **at: Any) -> list[dict]:
    return sorted(table.scan(**at).to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


def upsert(table: Table, model: dict[int, str], pairs: dict[int, str]) -> None:
    table.write(pa.table({"id": pa.array(list(pairs), pa.int64()), "v": list(pairs.values())}))
    model.update(pairs)


def as_rows(model: dict[int, str]) -> list[dict]:
    return sorted(({"id": k, "v": v} for k, v in model.items()), key=lambda r: tuple(str(v) for v in r.values()))


def pk_table(wh: Path) -> tuple[Table, dict[int, str]]:
    """A primary-key table with deletion vectors, several snapshots and a full compaction."""
    t = Table.locate("db.pk", warehouse=str(wh))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "2", "deletion-vectors.enabled": "true"})
    model: dict[int, str] = {}
    upsert(t, model, {i: f"a{i}" for i in range(20)})
    upsert(t, model, {i: f"b{i}" for i in range(0, 20, 3)})
    t.compact(full=True)
    upsert(t, model, {i: f"c{i}" for i in range(15, 25)})
    return t, model


def clone_json(wh: Path, *args: Any) -> dict:
    res = invoke("clone", *args, "-w", wh, "--format", "json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_clone_pk_table_with_deletion_vectors_then_both_live_independently(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    src, model = pk_table(wh)
    assert any(f.deleted_rows for f in src.files()), "the fixture should hold deletion vectors"
    latest = src.snapshots.latest_id()
    out = clone_json(wh, "db.pk", "db.copy")
    data_files = {f.file_name for f in src.files()}
    assert out["table"] == "db.pk" and out["target"] == "db.copy" and out["snapshot_id"] == latest
    assert out["files_copied"] >= len(data_files) + 1  # plus the deletion-vector index files
    copy = Table.open("db.copy", warehouse=str(wh))
    assert copy.snapshots.list_ids() == [1] and copy.latest_snapshot().commit_kind == "APPEND"
    assert rows(copy) == rows(src) == as_rows(model)
    assert check(copy).ok
    assert not copy.tags.tags()
    # Writes, compaction and an aggressive expire on the source leave the copy as it was.
    frozen = dict(model)
    upsert(src, model, {i: f"d{i}" for i in range(0, 30, 2)})
    src.compact(full=True)
    assert invoke("expire", "db.pk", "-w", wh, "--retain-max", "1", "--retain-min", "1",
                  "--older-than", "0s").exit_code == 0
    assert src.snapshots.list_ids() == [src.snapshots.latest_id()]
    assert rows(copy) == as_rows(frozen) and check(copy).ok
    # ... and the other way round.
    copy_model = dict(frozen)
    upsert(copy, copy_model, {i: f"e{i}" for i in range(5, 40, 5)})
    copy.compact(full=True)
    assert invoke("expire", "db.copy", "-w", wh, "--retain-max", "1", "--retain-min", "1",
                  "--older-than", "0s").exit_code == 0
    assert copy.snapshots.list_ids() == [copy.snapshots.latest_id()]
    assert rows(src) == as_rows(model) and check(src).ok
    assert rows(copy) == as_rows(copy_model) and check(copy).ok


def append_table(wh: Path) -> tuple[Table, list[list[dict]]]:
    """A partitioned append table across two schema versions; the model is the rows after each
    snapshot (a column added in schema 1 reads as null in the older files)."""
    t = Table.locate("db.events", warehouse=str(wh))
    create(t, "dt STRING, n INT", partition_keys=["dt"], options={"bucket": "-1"})
    history: list[list[dict]] = []
    live: list[dict] = []
    for i, dt in enumerate(["2024-01-01", "2024-01-02", "2024-01-01"]):
        batch = [{"dt": dt, "n": i * 10 + k} for k in range(3)]
        t.write(pa.table({"dt": [r["dt"] for r in batch], "n": pa.array([r["n"] for r in batch], pa.int32())}))
        live = live + batch
        history.append(list(live))
    t.alter([AddColumn("note", parse_type("STRING"))])
    t.write(pa.table({"dt": ["2024-01-03"], "n": pa.array([99], pa.int32()), "note": ["new"]}))
    history = [[{**r, "note": None} for r in h] for h in history]
    history.append(history[-1] + [{"dt": "2024-01-03", "n": 99, "note": "new"}])
    return t, history


def sort_rows(rs: list[dict]) -> list[dict]:
    return sorted(rs, key=lambda r: tuple(str(v) for v in r.values()))


def test_clone_append_table_at_older_snapshot_at_tag_and_to_a_path(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    src, history = append_table(wh)
    assert src.snapshots.list_ids() == [1, 2, 3, 4]
    create_tag(src, "two", snapshot_id=2)
    # an older snapshot: only its files and the schemas up to its own
    out = clone_json(wh, "db.events", "db.old", "--snapshot-id", "2")
    assert out["snapshot_id"] == 2 and out["schemas_copied"] == [0]
    old = Table.open("db.old", warehouse=str(wh))
    assert old.schema.id == 0 and old.schemas.list_ids() == [0]
    want = [{k: v for k, v in r.items() if k != "note"} for r in history[1]]
    source_at_2 = [{k: v for k, v in r.items() if k != "note"} for r in src.scan(snapshot_id=2).to_pylist()]
    assert rows(old) == sort_rows(want) == sort_rows(source_at_2)
    assert check(old).ok
    # a tag, into another warehouse given by path
    other = tmp_path / "elsewhere" / "events_two"
    out = clone_json(wh, "db.events", other, "--tag", "two")
    assert out["snapshot_id"] == 2
    tagged = Table.open(str(other))
    assert sort_rows(tagged.scan().to_pylist()) == sort_rows(want) and check(tagged).ok
    # the latest: files of both schema versions, both schemas copied
    out = clone_json(wh, "db.events", "db.now")
    assert out["snapshot_id"] == 4 and len(out["schemas_copied"]) == 2
    now = Table.open("db.now", warehouse=str(wh))
    assert rows(now) == rows(src) == sort_rows(history[3]) and check(now).ok
    assert now.schemas.list_ids() == [0, 1]
    # expire the source hard: every clone still reads as before
    assert invoke("expire", "db.events", "-w", wh, "--retain-max", "1", "--retain-min", "1",
                  "--older-than", "0s").exit_code == 0
    assert rows(now) == sort_rows(history[3]) and rows(old) == sort_rows(want)


def test_clone_refuses_an_existing_target_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    pk_table(wh)
    dry = clone_json(wh, "db.pk", "db.copy", "--dry-run")
    assert dry["dry_run"] is True and dry["files_copied"] > 0 and dry["bytes_copied"] > 0
    assert not (wh / "db.db" / "copy").exists()
    assert clone_json(wh, "db.pk", "db.copy") == {**dry, "dry_run": False}
    again = invoke("clone", "db.pk", "db.copy", "-w", wh)
    assert again.exit_code == 1 and "already exists" in again.stderr
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file").write_text("x")
    assert invoke("clone", "db.pk", tmp_path / "junk", "-w", wh).exit_code == 1
    assert invoke("clone", "db.pk", "db.x", "-w", wh, "--tag", "nope").exit_code == 3
    assert invoke("clone", "db.pk", "db.x", "-w", wh, "--tag", "a", "--snapshot-id", "1").exit_code == 2
    assert invoke("clone", "db.missing", "db.x", "-w", wh).exit_code == 3
    assert not (wh / "db.db" / "x").exists()
    listing = invoke("list", "db", "-w", wh, "--format", "json")
    assert sorted(r["table"] for r in json.loads(listing.stdout)) == ["copy", "pk"]


def test_clone_of_an_empty_snapshot_and_by_timestamp(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = Table.locate("db.t", warehouse=str(wh))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    first = t.latest_snapshot()
    time.sleep(0.01)  # the next commit gets a later millisecond, so --timestamp can tell them apart
    t.write(pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string())}), mode="overwrite")
    assert t.scan().num_rows == 0 and t.snapshots.latest_id() == 2
    out = clone_json(wh, "db.t", "db.empty")
    assert out["snapshot_id"] == 2 and out["files_copied"] == 0
    empty = Table.open("db.empty", warehouse=str(wh))
    assert empty.snapshots.list_ids() == [1] and empty.scan().num_rows == 0 and check(empty).ok
    # the copy is a table like any other: it takes writes
    empty.write(pa.table({"id": pa.array([7], pa.int64()), "v": ["x"]}))
    assert empty.scan().to_pylist() == [{"id": 7, "v": "x"}] and t.scan().num_rows == 0
    # --timestamp names the latest snapshot at or before it: the first one here
    out = clone_json(wh, "db.t", "db.first", "--timestamp", first.time_millis)
    assert out["snapshot_id"] == 1
    assert rows(Table.open("db.first", warehouse=str(wh))) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


def test_clone_of_a_dynamic_bucket_table_keeps_its_hash_index(tmp_path: Path) -> None:
    """The copy's HASH index sends an updated key back to the bucket that holds it, so the key
    stays unique after writes to the copy."""
    wh = tmp_path / "wh"
    t = Table.locate("db.dyn", warehouse=str(wh))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "-1", "dynamic-bucket.target-row-num": "5"})
    model: dict[int, str] = {}
    upsert(t, model, {i: f"a{i}" for i in range(12)})
    assert len({f.bucket for f in t.files()}) > 1
    clone_json(wh, "db.dyn", "db.copy")
    copy = Table.open("db.copy", warehouse=str(wh))
    assert rows(copy) == as_rows(model) and check(copy).ok
    copy_model = dict(model)
    upsert(copy, copy_model, {i: f"b{i}" for i in range(0, 16, 2)})
    assert rows(copy) == as_rows(copy_model)  # each key once: old ones updated in place
    assert rows(t) == as_rows(model)


def tree_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_clone_refuses_a_target_inside_the_source_and_the_source_inside_the_target(tmp_path: Path) -> None:
    """Usage error (exit 2) before anything is written: the warehouse holds the same files after."""
    wh = tmp_path / "wh"
    pk_table(wh)
    source_dir = wh / "db.db" / "pk"
    (tmp_path / "link").symlink_to(source_dir)  # the same directory under another name
    before = tree_of(tmp_path)
    for target, says in [(source_dir / "copy", "lies inside"), (source_dir / "snapshot" / "x", "lies inside"),
                         (tmp_path / "link" / "copy", "lies inside"), (wh / "db.db" / "pk" / ".." / "pk" / "c", "lies inside"),
                         (wh, "contains"), (wh / "db.db", "contains"), (tmp_path, "contains")]:
        for extra in ([], ["--dry-run"]):
            result = invoke("clone", "db.pk", target, "-w", wh, *extra)
            assert result.exit_code == 2, (target, result.stderr)
            assert result.stderr.startswith("error: clone target") and says in result.stderr, result.stderr
            assert tree_of(tmp_path) == before
    # a sibling whose name merely starts with the source's is not inside it
    assert invoke("clone", "db.pk", wh / "db.db" / "pk2", "-w", wh).exit_code == 0
    assert check(Table.open(str(wh / "db.db" / "pk2"))).ok
