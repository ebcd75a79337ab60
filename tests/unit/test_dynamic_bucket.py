"""Dynamic bucket mode without Java: the assigner's rules, the HASH index files and index
manifests a write leaves, and the shapes lakectl refuses (``core.dynamic_bucket``).
The interop tests hold all of it to Java Paimon itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from core import binary_row
from core.bucket import bucket_of, hash_bytes, hash_codes
from core.commit import FileStoreCommit, IndexChanges
from core.dynamic_bucket import DynamicBucketAssigner, _PartitionIndex, read_hash_index
from core.errors import CommitConflictError, UnsupportedTableError, UsageError
from core.index_manifest import HASH_INDEX, IndexManifestIO, combine
from core.manifest import ADD, DELETE
from core.ops.create import create
from core.table import Table
from core.types import parse_type


def table_of(tmp_path: Path, *, partitioned: bool = False, target: int = 3, name: str = "d") -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(t, "k INT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["k", "dt"] if partitioned else ["k"],
           partition_keys=["dt"] if partitioned else [], options={"dynamic-bucket.target-row-num": str(target)})
    return t


def batch(keys: list[int], tag: str = "v", dt: str = "x") -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int32()), "v": [f"{tag}{k}" for k in keys], "dt": [dt] * len(keys)})


def index_of(t: Table) -> dict[tuple[bytes, int], list[int]]:
    imio = IndexManifestIO(t.file_io, t.path)
    return {(e.partition, e.bucket): read_hash_index(t.file_io, imio.index_path(e.index_file.file_name)).tolist()
            for e in imio.read(t.latest_snapshot().index_manifest)}


def key_hash(k: int) -> int:
    return hash_bytes(binary_row.row_bytes([k], [parse_type("INT NOT NULL")]))


def test_hash_codes_are_java_binary_row_hashes_and_fixed_buckets_follow_from_them():
    keys = [0, 1, -5, 2**31 - 1, 77]
    types = [parse_type("INT")]
    codes = hash_codes([pa.array(keys, pa.int32())], types).tolist()
    assert codes == [key_hash(k) for k in keys]
    assert [abs(h) % 7 for h in codes] == [bucket_of([k], types, 7) for k in keys]


def test_new_keys_fill_buckets_in_order_up_to_the_target_then_open_the_next():
    index = _PartitionIndex(np.zeros(0, np.int32), np.zeros(0, np.int32), {0: 3, 1: 1, 3: 2})
    # bucket 0 is full; 1 takes 2 more, 3 takes 1, then new buckets 2 and 4 (smallest unused ids).
    assert index.allocate(7, 3).tolist() == [1, 1, 3, 2, 2, 2, 4]
    assert index.counts == {0: 3, 1: 3, 3: 3, 2: 3, 4: 1}


def test_a_write_keeps_each_key_in_its_bucket_and_writes_the_hash_index(tmp_path):
    t = table_of(tmp_path)
    assert t.schema.num_buckets == -1 and "bucket" not in t.schema.options
    t.write(batch([5, 1, 5, 2, 3, 4, 6]))  # 6 distinct keys, target 3: buckets 0 and 1 in arrival order
    first = index_of(t)
    empty = binary_row.encode([], [])
    assert sorted(first) == [(empty, 0), (empty, 1)]
    # (a file's order is free: Java writes its hash set's iteration order)
    assert sorted(first[(empty, 0)]) == sorted(key_hash(k) for k in (5, 1, 2))
    assert sorted(first[(empty, 1)]) == sorted(key_hash(k) for k in (3, 4, 6))
    t.write(batch([4, 1]))  # known keys only: the index manifest is kept as it is
    assert index_of(t) == first
    assert t.snapshots.snapshot(2).index_manifest == t.snapshots.snapshot(1).index_manifest
    t.write(batch([9, 2]))  # a new key: bucket 2 opens, only its file is new
    after = index_of(t)
    assert after[(empty, 2)] == [key_hash(9)] and after[(empty, 0)] == first[(empty, 0)]
    assert sorted(t.scan().column("k").to_pylist()) == [1, 2, 3, 4, 5, 6, 9]
    placed = {(f.bucket, f.file_name) for f in t.files()}
    assert {b for b, _ in placed} == {0, 1, 2}


def test_partitions_have_their_own_index(tmp_path):
    t = table_of(tmp_path, partitioned=True, target=2)
    t.write(pa.concat_tables([batch([1, 2, 3], dt="a"), batch([1, 2], dt="b")]))
    buckets = {(t.schema.partition_values(p)[0], b): len(h) for (p, b), h in index_of(t).items()}
    assert buckets == {("a", 0): 2, ("a", 1): 1, ("b", 0): 2}


def test_compaction_keeps_the_index(tmp_path):
    t = table_of(tmp_path)
    t.write(batch(list(range(10))))
    t.write(batch(list(range(5, 12))))
    before = t.latest_snapshot().index_manifest
    t.compact(full=True)
    assert t.latest_snapshot().commit_kind == "COMPACT" and t.latest_snapshot().index_manifest == before
    assert sorted(t.scan().column("k").to_pylist()) == list(range(12))


def test_overwrite_replaces_the_index_of_the_partitions_it_replaces(tmp_path):
    t = table_of(tmp_path, partitioned=True, target=2)
    t.write(pa.concat_tables([batch([1, 2, 3, 4], dt="a"), batch([1, 2, 3], dt="b")]))
    t.write(batch([7], dt="a"), mode="overwrite")
    got = {(t.schema.partition_values(p)[0], b): h for (p, b), h in index_of(t).items()}
    assert got[("a", 0)] == [key_hash(7)] and ("a", 1) not in got
    assert len(got[("b", 0)]) == 2 and len(got[("b", 1)]) == 1


def test_a_concurrent_writer_that_changed_the_index_is_a_conflict(tmp_path):
    """Buckets assigned from an index another commit has since extended could put a key in
    two buckets: the commit refuses to land."""
    from core.engines.local import LocalEngine
    from core.ops.write import plan_job

    t = table_of(tmp_path)
    t.write(batch([1]))
    job = plan_job(t, t.schema, None)
    messages, _ = LocalEngine().write(job, batch([5]), t.file_io)
    t.write(batch([2, 3, 4]))  # another writer places new keys meanwhile
    index = IndexChanges(tuple(job.assigner.index_changes()), job.assigner.planned_on)
    with pytest.raises(CommitConflictError, match="bucket index"):
        FileStoreCommit(t.file_io, t.path, t.schema).commit(messages, index=index)
    assert t.snapshots.latest_id() == 2


def test_cross_partition_tables_are_created_as_java_does_but_not_written(tmp_path):
    t = Table.locate("db.x", warehouse=str(tmp_path / "wh"))
    create(t, "k INT NOT NULL, dt STRING NOT NULL", primary_keys=["k"], partition_keys=["dt"])
    assert t.schema.num_buckets == -1
    with pytest.raises(UnsupportedTableError, match="cross-partition"):
        t.write(pa.table({"k": pa.array([1], pa.int32()), "dt": ["a"]}))
    assert t.latest_snapshot() is None


def test_too_many_buckets_is_refused_naming_the_option(tmp_path):
    index = _PartitionIndex(np.zeros(0, np.int32), np.zeros(0, np.int32), {})
    with pytest.raises(UsageError, match="dynamic-bucket.target-row-num"):
        index.allocate(40000, 1)


def test_index_manifest_merge_is_javas():
    def entry(kind, bucket, name, part=b"p"):
        from core.index_manifest import IndexFileMeta, IndexManifestEntry
        return IndexManifestEntry(kind, part, bucket, IndexFileMeta(HASH_INDEX, name, 4, 1))

    previous = [entry(ADD, 0, "a"), entry(ADD, 1, "b"), entry(ADD, 0, "c", b"q")]
    merged = combine(previous, [entry(ADD, 1, "b2"), entry(DELETE, 0, "c", b"q"), entry(ADD, 2, "d")])
    assert sorted((e.partition, e.bucket, e.index_file.file_name) for e in merged) == [
        (b"p", 0, "a"), (b"p", 1, "b2"), (b"p", 2, "d")]
    assert all(e.kind == ADD for e in merged)


def test_assigner_reads_only_the_partitions_a_write_touches(tmp_path):
    t = table_of(tmp_path, partitioned=True)
    t.write(pa.concat_tables([batch([1, 2], dt="a"), batch([3], dt="b")]))
    imio = IndexManifestIO(t.file_io, t.path)
    assigner = DynamicBucketAssigner(t.file_io, t.path, t.schema, imio.read(t.latest_snapshot().index_manifest))
    rows = batch([2, 5], dt="a")
    assert assigner.bucket_column(rows).tolist() == [0, 0]
    assert len(assigner._partitions) == 1


def test_stream_batches_extend_the_index_batch_after_batch(tmp_path):
    from core.ops.stream_write import StreamWriter

    t = table_of(tmp_path, partitioned=True, target=2)
    writer = StreamWriter(t, "feed")
    for identifier, keys in enumerate([[1, 2, 3], [3, 4], [1, 5, 6]], start=1):
        assert writer.write_batch(batch(keys, tag=f"b{identifier}-", dt="a"), identifier).snapshot_id == identifier
    got = sorted(zip(t.scan().column("k").to_pylist(), t.scan().column("v").to_pylist()))
    assert got == [(1, "b3-1"), (2, "b1-2"), (3, "b2-3"), (4, "b2-4"), (5, "b3-5"), (6, "b3-6")]
    sizes = sorted(len(h) for h in index_of(t).values())
    assert sizes == [2, 2, 2]  # six keys, target 2: three buckets, each key in one
