"""check(deep=True) and the schema's own consistency: a table every scan or write fails on is
never called sound. Each damage is made by hand; the expectation is the file that was damaged,
and that the damage matters is shown by the read or write that fails on it."""

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from core.ops.check import check
from core.ops.create import create
from core.ops.repair import repair
from core.table import Table


def _table(tmp_path: Path, name: str = "db.t") -> Table:
    return Table.locate(name, warehouse=str(tmp_path / "wh"))


def _damage(path: Path, start: int, length: int = 64) -> None:
    """Invert ``length`` bytes of ``path`` from ``start`` in place: same size, other bytes."""
    data = bytearray(path.read_bytes())
    end = min(start + length, len(data))
    data[start:end] = bytes(b ^ 0xFF for b in data[start:end])
    path.write_bytes(bytes(data))


def _data_files(t: Table, suffix: str) -> list[Path]:
    return sorted(p for p in Path(t.path).rglob(f"data-*.{suffix}"))


def _tree(path: str) -> dict[str, bytes]:
    return {os.path.join(root, n): Path(root, n).read_bytes() for root, _, names in os.walk(path) for n in names}


# Where each format's rows are: past Parquet's "PAR1" magic the first column chunk starts; an ORC
# stripe begins with index streams a read skips, its data streams lie further on; an Avro file's
# header holds the schema, its last block ends 16 bytes (the sync marker) before the end.
_BODY = {"parquet": lambda size: 4, "orc": lambda size: size // 3, "avro": lambda size: size - 16 - 24}


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_a_data_file_damaged_at_its_size_passes_check_but_not_check_deep(tmp_path, fmt):
    t = _table(tmp_path)
    create(t, "id BIGINT, v STRING", options={"file.format": fmt})
    t.write(pa.table({"id": list(range(200)), "v": [f"value {i}" for i in range(200)]}))
    (target,) = _data_files(t, fmt)
    size = target.stat().st_size
    _damage(target, _BODY[fmt](size), 24 if fmt == "avro" else 64)
    assert target.stat().st_size == size
    # The damage matters: every scan fails on it. (Not always with a LakectlError: a damaged
    # zstd stream of an ORC file raises pyarrow's ArrowException, which the read kernel lets
    # through as an internal error.)
    with pytest.raises(Exception):
        t.scan()

    assert check(t).ok  # sizes and metadata are all in order
    before = _tree(t.path)
    result = check(t, deep=True)
    assert not result.ok
    assert [(p.kind, p.path) for p in result.problems] == [("data-file", str(target))]
    assert "cannot be decoded" in result.problems[0].detail
    assert _tree(t.path) == before  # a deep check never writes either


def test_a_changelog_file_damaged_at_its_size_is_found_by_check_deep(tmp_path):
    t = _table(tmp_path)
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    (target,) = sorted(Path(t.path).rglob("changelog-*.parquet"))
    _damage(target, 4)
    assert check(t).ok
    result = check(t, deep=True)
    assert [(p.kind, p.path) for p in result.problems] == [("changelog-file", str(target))]


def test_a_damaged_file_only_an_old_snapshot_and_a_tag_keep_is_found(tmp_path):
    """Every snapshot and tag is walked, not only the latest: rolling back to the tag would
    bring the damaged file back."""
    t = _table(tmp_path)
    create(t, "id BIGINT, v STRING")
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.tags.create("first", t.snapshots.snapshot(1))
    t.write(pa.table({"id": [3], "v": ["c"]}), mode="overwrite")
    (old,) = [p for p in _data_files(t, "parquet") if p.name in {f.file.file_name for f in _live(t, 1)}]
    _damage(old, 4)
    assert t.scan().num_rows == 1  # the latest does not read it
    result = check(t, deep=True)
    assert [(p.kind, p.path) for p in result.problems] == [("data-file", str(old))]


def _live(t: Table, snapshot_id: int):
    from core.manifest import merge_entries

    snap = t.snapshots.snapshot(snapshot_id)
    mio = t.manifests()
    entries = [e for name in (snap.base_manifest_list, snap.delta_manifest_list) if name
               for m in mio.read_manifest_list(name) for e in mio.read_manifest(m.file_name)]
    return merge_entries(entries)


def test_a_hash_index_file_damaged_at_its_size_is_found_by_check_deep(tmp_path):
    """A dynamic-bucket table's HASH index tells the next write which bucket each key is in.
    With a hash damaged, an upsert of that key lands in a second bucket: the key is read twice."""
    t = _table(tmp_path)
    # bucket -1: dynamic; a bucket takes 3 keys, so a key unknown to bucket 0's full index goes to bucket 1
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"dynamic-bucket.target-row-num": "3"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    (index_file,) = sorted(Path(t.path, "index").iterdir())
    assert index_file.stat().st_size == 12  # three int32 hashes
    _damage(index_file, 0, 12)
    assert check(t).ok
    result = check(t, deep=True)
    assert [(p.kind, p.path) for p in result.problems] == [("index-file", str(index_file))]
    assert "lacks the hashes of 3 key(s)" in result.problems[0].detail
    # What the damage does: the next upsert of key 1 goes to a new bucket, key 1 is read twice.
    t.write(pa.table({"id": [1], "v": ["z"]}))
    assert sorted(t.scan().column("id").to_pylist()) == [1, 1, 2, 3]


def test_a_hash_index_with_another_count_than_recorded_is_reported(tmp_path):
    t = _table(tmp_path)
    create(t, "id BIGINT, v STRING", primary_keys=["id"])
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    (index_file,) = sorted(Path(t.path, "index").iterdir())
    assert check(t, deep=True).ok  # untouched: the count is right
    from core.ops.check_deep import hash_index_problem
    from core.index_manifest import HASH_INDEX, IndexFileMeta

    meta = IndexFileMeta(HASH_INDEX, index_file.name, 12, 4)  # an index manifest claiming 4 hashes
    assert hash_index_problem(t.file_io, t.path, meta) == "holds 3 hashes, the index manifest records 4"


def test_a_deletion_vector_file_damaged_at_its_size_is_reported(tmp_path):
    """Deletion-vector files are decoded, checksums and all, by the plain check (and so by --deep)."""
    t = _table(tmp_path)
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write(pa.table({"id": [2], "v": ["z"]}))
    t.compact(full=False)
    files = sorted(Path(t.path, "index").iterdir())
    assert files, "the table has a deletion vector"
    target = files[-1]
    _damage(target, target.stat().st_size - 6, 2)  # inside the last vector's bitmap
    for deep in (False, True):
        result = check(t, deep=deep)
        assert ("index-file", str(target)) in [(p.kind, p.path) for p in result.problems], result.problems


def _edit_schema(t: Table, **changes) -> Path:
    path = Path(t.path, "schema", "schema-0")
    obj = json.loads(path.read_text())
    for key, value in changes.items():
        if key == "options":
            obj["options"].update(value)
        else:
            obj[key] = value
    path.write_text(json.dumps(obj, indent=2))
    return path


@pytest.mark.parametrize("edit, detail", [
    ({"primaryKeys": ["id", "gone"]}, "names primary key column gone, which is not among its fields (id, v)"),
    ({"partitionKeys": ["gone"]}, "names partition column gone, which is not among its fields (id, v)"),
    ({"options": {"bucket": "2", "bucket-key": "gone"}}, "option bucket-key names column gone"),
    ({"options": {"bucket": "two"}}, "option bucket='two' must be an integer"),
    ({"options": {"target-file-size": "big"}}, "option target-file-size='big' is not a size"),
    ({"highestFieldId": 0}, "has field id 1 above its highestFieldId 0"),
    ({"fields": [{"id": 0, "name": "id", "type": "BIGINT NOT NULL"}, {"id": 0, "name": "v", "type": "STRING"}]},
     "gives field id 0 to two fields"),
])
def test_a_schema_that_contradicts_itself_is_reported_by_check(tmp_path, edit, detail):
    t = _table(tmp_path)
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    path = _edit_schema(t, **edit)
    result = check(t)
    assert not result.ok
    assert [p.kind for p in result.problems] == ["schema"] and result.problems[0].path == str(path)
    assert detail in result.problems[0].detail, result.problems[0].detail


def test_a_primary_key_naming_a_missing_column_fails_every_write_and_check_says_so(tmp_path):
    """The case of issue 43: every write fails on the table (the independent expectation), and
    check, which said ok, reports the schema; repair keeps every snapshot and leaves it."""
    t = _table(tmp_path)
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    path = _edit_schema(t, primaryKeys=["key"])
    with pytest.raises(Exception):
        t.write(pa.table({"id": [3], "v": ["c"]}))
    result = check(t)
    assert [(p.kind, p.path) for p in result.problems] == [("schema", str(path))]
    fixed = repair(t)
    assert fixed.snapshots_removed == [] and not fixed.ok
    assert [(p.kind, p.path) for p in fixed.problems_left] == [("schema", str(path))]
    assert t.snapshots.list_ids() == [1]


def test_a_partition_key_naming_a_missing_column_is_reported_not_raised(tmp_path):
    """The data files' directories cannot be worked out then: check names the schema, does not
    crash, and does not call the snapshots unreadable (repair would remove them)."""
    t = _table(tmp_path)
    create(t, "id BIGINT, dt STRING", partition_keys=["dt"])
    t.write(pa.table({"id": [1], "dt": ["2024-01-01"]}))
    path = _edit_schema(t, partitionKeys=["day"])
    for deep in (False, True):
        result = check(t, deep=deep)
        assert [(p.kind, p.path) for p in result.problems] == [("schema", str(path))]


@pytest.mark.slow
def test_healthy_tables_of_every_kind_pass_check_deep(tmp_path):
    """Formats, a partitioned append table, fixed and dynamic buckets, deletion vectors,
    changelog files, deletes, compactions, tags and a branch: --deep reads every file the
    history keeps and finds nothing."""
    tables = []
    for name, columns, keys, parts, options in [
        ("db.plain_orc", "id BIGINT, v STRING", [], [], {"file.format": "orc"}),
        ("db.plain_avro", "id BIGINT, v STRING", [], [], {"file.format": "avro"}),
        ("db.parted", "id BIGINT, v STRING, dt STRING", [], ["dt"], {}),
        ("db.pk_fixed", "id BIGINT, v STRING, dt STRING", ["id", "dt"], ["dt"],
         {"bucket": "2", "changelog-producer": "input"}),
        ("db.pk_dynamic", "id BIGINT, v STRING, dt STRING", ["id", "dt"], ["dt"], {}),
        ("db.pk_dv", "id BIGINT, v STRING", ["id"], [], {"bucket": "2", "deletion-vectors.enabled": "true"}),
        ("db.pk_avro", "id BIGINT, v STRING", ["id"], [], {"bucket": "1", "file.format": "avro"}),
    ]:
        t = _table(tmp_path, name)
        create(t, columns, primary_keys=keys, partition_keys=parts, options=options)
        has_dt = "dt" in columns

        def rows(ids, v, t=t, has_dt=has_dt):
            data = {"id": ids, "v": [f"{v}{i}" for i in ids]}
            if has_dt:
                data["dt"] = ["2024-01-0" + str(1 + i % 2) for i in ids]
            return pa.table(data)

        t.write(rows(list(range(50)), "a"))
        t.tags.create("first", t.snapshots.snapshot(1))
        t.write(rows(list(range(25, 75)), "b"))
        t.delete("id < 5")
        t.compact(full=False)
        t.write(rows(list(range(70, 90)), "c"))
        tables.append(t)
    from core.ops.branches import create_branch

    create_branch(tables[-2], "dev", tag="first")
    tables[-2].on_branch("dev").write(pa.table({"id": [1000], "v": ["d"]}))
    for t in tables:
        result = check(t, deep=True)
        assert result.ok, (t.name, result.problems)
        on_disk = [p for p in Path(t.path).rglob("*") if p.name.startswith(("data-", "changelog-"))]
        assert result.files_read >= len(on_disk) > 0  # every data file (HASH files come on top)
