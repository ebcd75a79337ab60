"""Commit protocol: conflicts, overwrite re-planning on retry, and idempotence after an
ambiguous publish."""

import pyarrow as pa
import pytest

from core.commit import CommitMessage, FileStoreCommit, next_watermark
from core.engines.local import LocalEngine
from core.errors import CommitConflictError
from core.fileio import FileIO
from core.manifest import merge_entries, read_entries
from core.ops.create import create
from core.ops.write import plan_job
from core.table import Table


@pytest.fixture
def table(tmp_path):
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "2"})
    return t


def _rows(ids, v="x"):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids]})


def test_compaction_of_a_file_that_is_no_longer_live_conflicts(table):
    table.write(_rows([1, 2, 3]))
    live = table.scan()
    assert live.num_rows == 3
    snap = table.latest_snapshot()
    entries = merge_entries(read_entries(table.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))
    e = entries[0]
    table.write(_rows([1, 2, 3]), mode="overwrite")  # replaces every file
    stale = CommitMessage(e.partition, e.bucket, e.total_buckets, compact_before=(e.file,))
    before = table.snapshots.list_ids()
    with pytest.raises(CommitConflictError, match="no longer live"):
        FileStoreCommit(table.file_io, table.path, table.schema).commit([stale], kind="COMPACT")
    assert table.snapshots.list_ids() == before


class LosesFirstRace(FileIO):
    """Before our first snapshot publish, another writer's overwrite lands."""

    def __init__(self, inner, on_first):
        super().__init__(inner.fs, local=inner.local)
        self.on_first = on_first
        self.calls = 0

    def try_create(self, path, data, **kw):
        if "/snapshot/" in path and self.calls == 0:
            self.calls += 1
            self.on_first()
        return super().try_create(path, data, **kw)


def test_overwrite_replans_against_the_new_latest_snapshot(table):
    table.write(_rows([1, 2]))
    other = Table.locate(table.path)
    racing_io = LosesFirstRace(table.file_io, lambda: other.write(_rows([7, 8], "late")))
    racer = Table(type(table.location)(table.name, table.path, racing_io))
    racer.write(_rows([5]), mode="overwrite")
    # The retry saw snapshot 2 (rows 1, 2, 7, 8) and replaced all of it.
    assert table.scan().to_pylist() == [{"id": 5, "v": "x5"}]
    kinds = [s.commit_kind for s in table.snapshots.snapshots()]
    assert kinds == ["APPEND", "APPEND", "OVERWRITE"]


class AmbiguousPublish(FileIO):
    """The snapshot file is created, but the call reports an error (a lost response)."""

    def __init__(self, inner):
        super().__init__(inner.fs, local=inner.local)
        self.failed = False

    def try_create(self, path, data, **kw):
        created = super().try_create(path, data, **kw)
        if "/snapshot/" in path and not self.failed:
            self.failed = True
            raise OSError("connection reset after write")
        return created


def test_ambiguous_publish_is_not_committed_twice(table):
    io = AmbiguousPublish(table.file_io)
    t = Table(type(table.location)(table.name, table.path, io))
    result = t.write(_rows([1, 2, 3]))
    assert result.snapshot_id == 1
    assert table.snapshots.list_ids() == [1]
    assert sorted(r["id"] for r in table.scan().to_pylist()) == [1, 2, 3]


def test_rowkind_field_option_takes_row_kinds_from_a_table_column(tmp_path):
    t = Table.locate("db.rk", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING, rk STRING", primary_keys=["id"], options={"rowkind.field": "rk"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"], "rk": ["+I", "+I"]}))
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": [None], "rk": ["-D"]}))
    assert t.scan().to_pylist() == [{"id": 2, "v": "b", "rk": "+I"}]


def test_snapshot_watermark_is_the_max_of_the_commit_and_the_latest(table):
    """Paimon's rule: max(new, latest) when both exist, else whichever exists; a commit
    without a watermark carries the latest one forward."""

    def commit(ids, watermark):
        job = plan_job(table, table.schema, None)
        messages, _ = LocalEngine().write(job, _rows(ids), table.file_io)
        return FileStoreCommit(table.file_io, table.path, table.schema).commit(messages, watermark=watermark)

    steps = [(None, None), (1_000, 1_000), (400, 1_000), (None, 1_000), (2_500, 2_500), (-5, 2_500)]
    for i, (given, expected) in enumerate(steps):
        snapshot = commit([i], given)
        assert snapshot.watermark == expected, f"step {i}: watermark {given}"
        assert table.snapshots.snapshot(snapshot.id).watermark == expected  # as stored in snapshot-N
    assert [next_watermark(a, b) for a, b in [(None, None), (3, None), (None, 3), (3, 7), (7, 3)]] == \
        [None, 3, 3, 7, 7]
