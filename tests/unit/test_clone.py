"""clone under faults: killed (SIGKILL in a forked child) or failed (an OSError) right before
each of its mutating FileIO operations, the source is untouched and the target is absent, not
a table, or a complete clone; after removing the leftovers a rerun completes."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import LakectlError, NotFoundError, UsageError
from core.fileio import inject_fault
from core.ops.check import check
from core.ops.clone import clone
from core.ops.create import create
from core.table import Table
from fault_lab import _run_forked

LIMIT = 200  # a clone of this small table takes far fewer mutating operations


def source_table(wh: Path) -> tuple[Table, list[dict]]:
    """Partitioned PK table with deletion vectors, two buckets, a compaction: data, index,
    manifest and snapshot files of every kind."""
    t = Table.locate("db.src", warehouse=str(wh))
    create(t, "id BIGINT NOT NULL, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "deletion-vectors.enabled": "true"})
    model: dict[tuple[int, str], str] = {}
    for round_, ids in enumerate([range(12), range(0, 12, 2), range(6, 16)]):
        batch = [(i, f"r{round_}-{i}", "2024-01-0" + str(1 + i % 2)) for i in ids]
        t.write(pa.table({"id": pa.array([b[0] for b in batch], pa.int64()), "v": [b[1] for b in batch],
                          "dt": [b[2] for b in batch]}))
        model.update({(i, dt): v for i, v, dt in batch})
        if round_ == 1:
            t.compact(full=True)
    return t, ordered([{"id": i, "v": v, "dt": dt} for (i, dt), v in model.items()])


def ordered(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["id"], r["dt"]))


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()}


def assert_target_state(target: Path, expected: list[dict]) -> str:
    """The target is absent, not a table, or a complete clone; returns which."""
    if not target.exists():
        return "absent"
    try:
        copy = Table.open(str(target))
    except NotFoundError:
        return "not a table"
    assert ordered(copy.scan().to_pylist()) == expected
    assert check(copy).ok and copy.snapshots.list_ids() == [1]
    return "complete"


def clean(db_dir: Path) -> None:
    """What the docs say to do after an interrupted clone: rm -r its leftovers."""
    for p in db_dir.iterdir():
        if p.name.startswith(".copy.clone-") or p.name == "copy":
            shutil.rmtree(p)


@pytest.mark.parametrize("action", ["kill", "fail"])
def test_clone_interrupted_before_every_mutation(tmp_path: Path, action: str) -> None:
    wh = tmp_path / "wh"
    src, expected = source_table(wh)
    assert ordered(src.scan().to_pylist()) == expected
    src_dir = Path(src.path)
    before = tree(src_dir)
    target = wh / "db.db" / "copy"
    states: set[str] = set()
    for n in range(1, LIMIT):
        if action == "kill":
            def body() -> None:
                with inject_fault("kill", "mutation", n):
                    clone(Table.open("db.src", warehouse=str(wh)), Table.locate("db.copy", warehouse=str(wh)))
            status = _run_forked(body, 60, f"kill:mutation:{n}")
            interrupted = os.WIFSIGNALED(status)
            assert not interrupted or os.WTERMSIG(status) == signal.SIGKILL
            assert interrupted or os.WEXITSTATUS(status) == 0, f"clone failed at n={n} without a fault"
        else:
            try:
                with inject_fault("fail", "mutation", n) as fault:
                    clone(Table.open("db.src", warehouse=str(wh)), Table.locate("db.copy", warehouse=str(wh)))
                interrupted = fault.seen >= n
            except (OSError, LakectlError):
                interrupted = True
        assert tree(src_dir) == before, f"n={n}: the source changed"
        state = assert_target_state(target, expected)
        states.add(state)
        if not interrupted:
            assert state == "complete"
            break
        assert state != "complete" or action == "fail", f"n={n}: killed, yet the clone is complete"
        leftovers = [p.name for p in (wh / "db.db").iterdir() if p.name.startswith(".copy.clone-")]
        if action == "fail":  # an error cleans up after itself; only a kill leaves the staging copy
            # (complete: the failed write was the LATEST hint, which a commit may miss)
            assert state in ("absent", "complete") and not leftovers, f"n={n}: {state}, {leftovers}"
        clean(wh / "db.db")
        # a rerun after the cleanup completes
        clone(Table.open("db.src", warehouse=str(wh)), Table.locate("db.copy", warehouse=str(wh)))
        assert assert_target_state(target, expected) == "complete"
        clean(wh / "db.db")
    else:
        raise AssertionError(f"clone was still interrupted at {LIMIT} mutations")
    assert n > 5 and "absent" in states and "complete" in states
    assert ordered(src.scan().to_pylist()) == expected and check(src).ok


@pytest.mark.parametrize("source, target, says", [
    ("s3://b/wh/db.db/t", "s3://b/wh/db.db/t/copy", "lies inside"),
    ("s3a://b/wh/db.db/t", "s3a://b/wh/db.db/t/branch/x/", "lies inside"),
    ("s3://b/wh/db.db/t", "s3://b/wh", "contains"),
    ("s3://b/wh/db.db/t", "s3://b/", "contains"),
    ("s3://b/wh/db.db/t", "s3a://b/wh/db.db/t/copy", "lies inside"),  # s3a:// is the same store
])
def test_clone_refuses_nested_object_store_paths_before_any_request(source: str, target: str, says: str) -> None:
    """Paths are compared as written (no store is contacted: the endpoint below does not exist)."""
    options = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}
    src = Table.locate(source, storage_options=options)
    dst = Table.locate(target, storage_options=options)
    with pytest.raises(UsageError, match=says):
        clone(src, dst)


def test_clone_between_different_buckets_is_not_nested() -> None:
    from core.ops.clone import _refuse_nesting

    options = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}
    _refuse_nesting(Table.locate("s3://b/wh/db.db/t", storage_options=options),
                    Table.locate("s3://b2/wh/db.db/t/copy", storage_options=options))


def _half_rolled_back(wh: Path):
    """A table of 5 snapshots whose rollback to 2 holds its marker and has removed 5 and 4
    (the explorer's rollback@5-vs-clone: the latest a reader sees is 3, about to go)."""
    from core.rewrite import ROLLBACK, acquire

    t = Table.locate("db.t", warehouse=str(wh))
    create(t, "id BIGINT, v STRING", options={"write-only": "true"})
    for i in range(5):
        t.write(pa.table({"id": pa.array([i], pa.int64()), "v": [f"s{i + 1}"]}))
    marker = acquire(t.file_io, t.snapshots.dir, ROLLBACK, target=2, what="roll back", table=t.name)
    for sid in (5, 4):
        t.file_io.delete(t.snapshots.path(sid))
    return t, marker


def test_clone_of_the_latest_waits_for_a_running_rollback_and_takes_what_it_leaves(tmp_path):
    import threading

    from core.rewrite import finish_rollback, release

    t, marker = _half_rolled_back(tmp_path)

    def finish():
        finish_rollback(t.snapshots, t.tags, 2)
        release(t.file_io, marker)
    threading.Timer(0.5, finish).start()
    result = clone(t, Table.locate("db.c", warehouse=str(tmp_path)))
    assert result.snapshot_id == 2
    rows = Table.open("db.c", warehouse=str(tmp_path)).scan()
    assert sorted(rows.column("v").to_pylist()) == ["s1", "s2"]


def test_clone_next_to_a_rollback_that_does_not_end_is_exit_4(tmp_path, monkeypatch):
    from core.errors import CommitConflictError
    from core import rewrite

    t, _ = _half_rolled_back(tmp_path)
    monkeypatch.setattr(rewrite, "WAIT_SECONDS", 0.3)
    with pytest.raises(CommitConflictError, match="cannot clone db.t: a rollback by .* is rewriting the snapshots of db.t"):
        clone(t, Table.locate("db.c", warehouse=str(tmp_path)))
    assert not (tmp_path / "db.db" / "c").exists()


def test_tag_rename_waits_for_a_running_rollback_and_the_rollback_removes_the_tag(tmp_path):
    """The explorer's rollback@6-vs-tag-rename: a rename of a tag past the rollback's target,
    made while the rollback ran, left the new name on a removed snapshot."""
    import threading

    from core.ops.tags import create_tag, rename_tag
    from core.rewrite import finish_rollback, release

    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING", options={"write-only": "true"})
    for i in range(5):
        t.write(pa.table({"id": pa.array([i], pa.int64()), "v": [f"s{i + 1}"]}))
    create_tag(t, "keep", snapshot_id=3)
    from core.rewrite import ROLLBACK, acquire

    marker = acquire(t.file_io, t.snapshots.dir, ROLLBACK, target=2, what="roll back", table=t.name)
    for sid in (5, 4, 3):
        t.file_io.delete(t.snapshots.path(sid))

    def finish():
        finish_rollback(t.snapshots, t.tags, 2)
        release(t.file_io, marker)
    threading.Timer(0.5, finish).start()
    with pytest.raises(NotFoundError):  # the rollback removed keep while the rename waited
        rename_tag(t, "keep", "kb")
    assert t.tags.names() == []
