"""A publish is verified against expire (issue 24): a committer that stalls just before creating
``snapshot-N`` may find the id free because expire retired it; that snapshot is undone and the
commit retried on the real latest, while a legitimate snapshot that an expire retires right
after it landed is never undone (that would commit the rows twice). The stall is simulated in
process by replacing the publish fault point (``core.commit.before_publish``) or the publish
itself; the expectations are the rows written (each exactly once) and the snapshot ids.

Also here: the reader rules (no latest below EARLIEST, no earliest below a gap, LATEST never
moves back) and reads or plans that lose their snapshot to expire (re-planned, not damage)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pytest

import core.commit as commit_module
from core.errors import CommitConflictError, CorruptMetadataError, ExpiredWhileReadingError
from core.ops.create import create
from core.ops.scan import scan_stream
from core.table import Table


def _table(tmp_path: Path, writes: int = 1, **options: str) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", options={"write-only": "true", **options})
    for i in range(writes):
        _write(t, [i])
    return t


def _write(t: Table, ids: list[int], v: str = "x") -> int:
    result = t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}))
    assert result.snapshot_id is not None
    return result.snapshot_id


def _rows(t: Table) -> list[tuple[int, str]]:
    out = t.scan()
    return sorted(zip(out.column("id").to_pylist(), out.column("v").to_pylist()))


def _ids(t: Table) -> list[int]:
    return t.snapshots.list_ids()


def _once(action: Callable[[], None]) -> Callable[[], None]:
    """A before_publish hook that runs ``action`` at the first publish only (the stalled one)."""
    done = []

    def hook() -> None:
        if not done:
            done.append(True)
            action()
    return hook


def _others_commit_then_expire(t: Table, first_id: int, *, expire: Callable[[], None] | None = None) -> Callable[[], None]:
    def action() -> None:
        for k in range(3):
            _write(t, [first_id + k], "other")
        if expire is None:
            t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
        else:
            expire()
    return action


def test_stalled_publish_on_an_expired_id_is_undone_and_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    t = _table(tmp_path, writes=1)  # L = 1
    monkeypatch.setattr(commit_module, "before_publish", _once(_others_commit_then_expire(t, 100)))
    caplog.set_level(logging.INFO, logger="core")
    landed = _write(t, [50], "stalled")
    # L+1 = 2 was free again (expire removed 1..3); the write undid it and landed on 4.
    assert landed == 5 and _ids(t) == [4, 5]
    assert "snapshot-2 was free only because expire had removed it (EARLIEST is 4" in caplog.text
    assert _rows(t) == [(0, "x"), (50, "stalled"), (100, "other"), (101, "other"), (102, "other")]
    assert t.snapshots.latest_hint() == 5
    assert t.snapshots.snapshot(5).delta_record_count == 1


def test_base_gone_without_earliest_is_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An expire that writes EARLIEST last (Java's), caught half way: ids 1..3 gone, no hint yet."""
    t = _table(tmp_path, writes=1)

    def java_like_expire() -> None:
        for sid in (1, 2, 3):
            os.remove(t.snapshots.path(sid))
    monkeypatch.setattr(commit_module, "before_publish",
                        _once(_others_commit_then_expire(t, 100, expire=java_like_expire)))
    landed = _write(t, [50], "stalled")
    assert landed == 5 and _ids(t) == [4, 5] and t.snapshots.earliest_hint() is None
    assert (50, "stalled") in _rows(t)


def test_re_created_base_is_not_our_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stalled committers: the first re-created our base id; ours must still be undone."""
    t = _table(tmp_path, writes=2)  # L = 2: we build on snapshot 2

    def action() -> None:
        for k in range(3):
            _write(t, [100 + k], "other")  # 3, 4, 5
        for sid in (1, 2, 3, 4):  # a Java-like expire: no EARLIEST
            os.remove(t.snapshots.path(sid))
        # another stalled writer re-creates snapshot-2 (not the snapshot-2 we read)
        original = json.loads(Path(t.snapshots.path(5)).read_text())
        Path(t.snapshots.path(2)).write_text(json.dumps({**original, "id": 2, "commitUser": "someone-else"}))
    monkeypatch.setattr(commit_module, "before_publish", _once(action))
    landed = _write(t, [50], "stalled")
    assert landed == 6 and not t.snapshots.exists(3)
    os.remove(t.snapshots.path(2))  # the other stalled writer's undo
    assert _ids(t) == [5, 6] and (50, "stalled") in _rows(t)


def test_publish_after_a_whole_rollback_is_undone_and_lands_on_the_rolled_back_chain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A committer read latest 3, then a rollback to 1 ran from start to end (its marker gone
    again) before the committer created snapshot-4: the id was free, nothing is above it, but
    its base went from the top. Kept, it would stand above a gap with rows of 2 and 3 that the
    rollback (exit 0) took away; it must land on 1 instead."""
    t = _table(tmp_path, writes=3)  # snapshots 1..3 with ids 0, 1, 2
    monkeypatch.setattr(commit_module, "before_publish",
                        _once(lambda: t.rollback(snapshot_id=1, dry_run=False)))
    landed = _write(t, [50], "stalled")
    assert landed == 2 and _ids(t) == [1, 2]
    assert _rows(t) == [(0, "x"), (50, "stalled")]


def test_publish_on_a_base_replaced_from_the_top_is_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a fast-forward leaves it: snapshot-3 is no longer the snapshot-3 the committer read
    (a rollback to 2, then another write). Snapshot-4 on the old 3 would carry the old 3's rows."""
    t = _table(tmp_path, writes=3)

    def action() -> None:
        t.rollback(snapshot_id=2, dry_run=False)
        _write(t, [100], "other")  # the new snapshot-3
    monkeypatch.setattr(commit_module, "before_publish", _once(action))
    landed = _write(t, [50], "stalled")
    assert landed == 4 and _ids(t) == [1, 2, 3, 4]
    assert _rows(t) == [(0, "x"), (1, "x"), (50, "stalled"), (100, "other")]


def test_base_expired_with_a_stray_below_earliest_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot below EARLIEST (a killed committer's re-created id, left for check --repair)
    does not make an expired base look cut from the top: ours, built on the retired base and
    then the newest, stands."""
    t = _table(tmp_path, writes=4)
    stray = Path(t.snapshots.path(1)).read_text()

    def publish_then_expire(self, snapshot, **kw):  # type: ignore[no-untyped-def]
        published = original(self, snapshot, **kw)
        t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)  # retires 1..4, keeps ours
        Path(t.snapshots.path(1)).write_text(stray)
        return published
    original = type(t.snapshots).try_publish
    monkeypatch.setattr(type(t.snapshots), "try_publish", publish_then_expire)
    landed = _write(t, [50], "stalled")
    monkeypatch.undo()
    assert landed == 5 and _ids(t) == [1, 5] and t.snapshots.earliest_hint() == 5
    assert (50, "stalled") in _rows(t)


def test_snapshot_1_listed_by_an_expire_journal_is_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path, writes=0)

    def action() -> None:
        for k in range(3):
            _write(t, [100 + k], "other")  # 1, 2, 3
        journal = {"expired": [1, 2], "end": 3, "end_user": "u", "end_time_millis": 0, "files": []}
        Path(t.snapshots.dir, ".expire-3-test.json").write_text(json.dumps(journal))
        for sid in (1, 2):  # an expire killed before EARLIEST (as one that writes it last)
            os.remove(t.snapshots.path(sid))
    monkeypatch.setattr(commit_module, "before_publish", _once(action))
    landed = _write(t, [50], "stalled")
    assert landed == 4 and _ids(t) == [3, 4]
    assert _rows(t) == [(50, "stalled"), (100, "other"), (101, "other"), (102, "other")]


def test_unknown_outcome_on_an_expired_id_is_found_verified_and_undone(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The publish lands but raises (a lost response); the retry finds our snapshot, sees the
    id had been retired, undoes it and commits on the real latest."""
    t = _table(tmp_path, writes=1)
    monkeypatch.setattr(commit_module, "before_publish", _once(_others_commit_then_expire(t, 100)))
    real = type(t.snapshots).try_publish
    calls = []

    def publish_then_fail(self, snapshot, **kw):  # type: ignore[no-untyped-def]
        landed = real(self, snapshot, **kw)
        calls.append(snapshot.id)
        if len(calls) == 1:
            raise OSError("response lost")
        return landed
    monkeypatch.setattr(type(t.snapshots), "try_publish", publish_then_fail)
    landed = _write(t, [50], "stalled")
    assert calls[0] == 2 and landed == 5 and _ids(t) == [4, 5]
    assert sorted(r for r in _rows(t) if r[1] == "stalled") == [(50, "stalled")]


def test_legitimate_snapshot_expired_right_after_it_landed_is_kept(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Stall between publish and verification: others commit on ours and expire retires it."""
    t = _table(tmp_path, writes=1)
    real = type(t.snapshots).try_publish
    done = []

    def publish_then_race(self, snapshot, **kw):  # type: ignore[no-untyped-def]
        landed = real(self, snapshot, **kw)
        if not done:
            done.append(snapshot.id)
            _others_commit_then_expire(t, 100)()
        return landed
    monkeypatch.setattr(type(t.snapshots), "try_publish", publish_then_race)
    landed = _write(t, [50], "ours")
    assert landed == 2 and done == [2] and _ids(t) == [5]
    assert _rows(t) == [(0, "x"), (50, "ours"), (100, "other"), (101, "other"), (102, "other")]  # once


@pytest.mark.parametrize("merge_min_count", ["30", "1"])
def test_legitimate_snapshot_an_expire_is_retiring_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           merge_min_count: str) -> None:
    """EARLIEST above ours and our base gone, but ours not yet: the successor built on it tells,
    also when its commit merged our manifests into new ones (manifest.merge-min-count 1)."""
    t = _table(tmp_path, writes=1, **{"manifest.merge-min-count": merge_min_count})
    real = type(t.snapshots).try_publish
    done = []

    def publish_then_race(self, snapshot, **kw):  # type: ignore[no-untyped-def]
        landed = real(self, snapshot, **kw)
        if not done:
            done.append(snapshot.id)
            _write(t, [100], "other")  # 3, built on our 2
            _write(t, [101], "other")  # 4
            t.snapshots.write_earliest_hint(4)  # an expire of 1..3, half way: 1 retired
            os.remove(t.snapshots.path(1))
        return landed
    monkeypatch.setattr(type(t.snapshots), "try_publish", publish_then_race)
    assert _write(t, [50], "ours") == 2
    assert _ids(t) == [2, 3, 4] and _rows(t) == [(0, "x"), (50, "ours"), (100, "other"), (101, "other")]


# ---- readers ----------------------------------------------------------------------------
def test_readers_skip_a_re_created_id(tmp_path: Path) -> None:
    """A re-created snapshot-2 below EARLIEST and below a gap (its writer not yet undone)."""
    t = _table(tmp_path, writes=5)
    t.expire(retain_min=2, retain_max=2, older_than="0s", dry_run=False)  # 4, 5 left; EARLIEST 4
    Path(t.snapshots.path(2)).write_text(json.dumps({**json.loads(Path(t.snapshots.path(4)).read_text()), "id": 2}))
    t.file_io.overwrite_hint(os.path.join(t.snapshots.dir, "LATEST"), "2")  # a stale hint naming it
    assert t.snapshots.latest_id() == 5  # the hint names an id below EARLIEST: listed instead
    t.snapshots.write_earliest_hint(3)  # stale: snapshot-3 is gone, so the listing decides
    assert t.snapshots.earliest_id() == 4  # the contiguous run ending at the newest, not 2
    t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
    assert t.snapshots.exists(2)  # never expired: not part of the run (left to its writer's undo)
    assert t.snapshots.list_ids() == [2, 5]


def test_latest_hint_never_moves_back(tmp_path: Path) -> None:
    t = _table(tmp_path, writes=3)
    t.snapshots.write_latest_hint(2)
    assert t.snapshots.latest_hint() == 3
    t.rollback(snapshot_id=2, dry_run=False)
    assert t.snapshots.latest_hint() == 2 and t.snapshots.latest_id() == 2


def test_rollback_below_an_early_earliest_hint_lowers_it(tmp_path: Path) -> None:
    """An expire killed after writing EARLIEST (it writes it first) and before retiring."""
    t = _table(tmp_path, writes=4)
    t.snapshots.write_earliest_hint(4)
    t.rollback(snapshot_id=2, dry_run=False)
    assert t.snapshots.earliest_hint() == 1
    assert _write(t, [9], "after") == 3 and (9, "after") in _rows(t)


# ---- reads and plans that lose their snapshot to expire ----------------------------------
def _overwrite_then_expire(t: Table) -> None:
    t.write(pa.table({"id": pa.array([7], pa.int64()), "v": ["new"]}), mode="overwrite")
    t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)


def test_scan_of_the_latest_replans_when_its_snapshot_is_expired_before_reading(tmp_path: Path) -> None:
    t = _table(tmp_path, writes=1)
    stream = scan_stream(t)  # planned on snapshot 1
    _overwrite_then_expire(t)  # snapshot 1 and its data file are gone
    rows = pa.concat_tables(list(stream.parts))
    assert rows.column("id").to_pylist() == [7]


def test_scan_with_a_gone_data_file_of_a_live_snapshot_is_damage(tmp_path: Path) -> None:
    t = _table(tmp_path, writes=1)
    stream = scan_stream(t)
    for f in Path(t.path).rglob("data-*"):
        f.unlink()
    with pytest.raises(CorruptMetadataError, match="listed in a manifest is missing"):
        list(stream.parts)


def test_travel_scan_of_an_expired_snapshot_is_exit_4_not_damage(tmp_path: Path) -> None:
    t = _table(tmp_path, writes=1)
    stream = scan_stream(t, snapshot_id=1)
    _overwrite_then_expire(t)
    with pytest.raises(ExpiredWhileReadingError, match="expired by a concurrent expire"):
        list(stream.parts)


def test_commit_on_a_base_expired_while_reading_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base's manifest list vanishes with the base (expire) between reading LATEST and the
    list: a retry on the new latest, not 'cannot commit ... check --repair'."""
    t = _table(tmp_path, writes=1)
    real = commit_module.FileStoreCommit._base_manifests
    done = []

    def expire_first(self, latest):  # type: ignore[no-untyped-def]
        if not done and latest is not None:
            done.append(latest.id)
            _overwrite_then_expire(t)
        return real(self, latest)
    monkeypatch.setattr(commit_module.FileStoreCommit, "_base_manifests", expire_first)
    assert _write(t, [8], "late") == 3 and done == [1]
    assert _rows(t) == [(7, "new"), (8, "late")]


def test_commit_gives_up_with_exit_4_naming_expire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path, writes=1, **{"commit.max-retries": "2"})
    real = commit_module.FileStoreCommit._base_manifests
    inside = []

    def always_expired(self, latest):  # type: ignore[no-untyped-def]
        if not inside:  # the overwrite below commits too
            inside.append(True)
            try:
                _overwrite_then_expire(t)
            finally:
                inside.clear()
        return real(self, latest)
    monkeypatch.setattr(commit_module.FileStoreCommit, "_base_manifests", always_expired)
    with pytest.raises(CommitConflictError, match="a concurrent expire removed the snapshot it built on 3 times"):
        _write(t, [8], "late")


# ---- the stall point -----------------------------------------------------------------------
def test_stall_publish_holds_the_commit_until_the_stall_file_is_deleted(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``stall:publish:1`` stops right before the create of snapshot-N (nothing published yet)
    and goes on once the test deletes the file; ``publish`` is counted apart from ``any``."""
    import threading
    import time

    from core import fileio
    from core.fileio import inject_fault

    t = _table(tmp_path, writes=1)
    stall = tmp_path / "stall"
    monkeypatch.setenv("LAKECTL_STALL_FILE", str(stall))
    seen_while_stalled: list[list[int]] = []

    def release() -> None:
        deadline = time.monotonic() + 30
        while not stall.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen_while_stalled.append(_ids(t))
        stall.unlink()
    helper = threading.Thread(target=release)
    helper.start()
    with inject_fault("stall", "publish", 1) as fault:
        landed = _write(t, [5], "held")
    helper.join()
    assert seen_while_stalled == [[1]] and landed == 2 and fault.seen == 1
    # A publish is also a create, so kill|fail:any:N and :create:N still count it once (their
    # op numbering is unchanged); only a fault on "publish" sees the publish point itself.
    with inject_fault("fail", "any", 10**9) as anything:
        fileio.before_publish()
    with inject_fault("fail", "publish", 10**9) as publishes:
        fileio.before_publish()
        t.file_io.exists(t.snapshots.path(1))
    assert anything.seen == 0 and publishes.seen == 1


def _first_call_runs(module: object, name: str, action: Callable[[], None], monkeypatch: pytest.MonkeyPatch) -> list:
    """Replace ``module.name`` so that its first call runs ``action`` (a concurrent expire) first."""
    real = getattr(module, name)
    calls: list = []

    def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
        if not calls:
            calls.append(True)
            action()
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, wrapped)
    return calls


def _commit_then_expire(t: Table) -> Callable[[], None]:
    def action() -> None:
        _write(t, [77], "meanwhile")
        t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)  # the planned snapshot's lists go
    return action


def test_compaction_replans_when_its_snapshot_is_expired_while_planning(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import core.ops.compact_planning as compact_module  # where the plan reads the base

    t = _table(tmp_path, writes=3)
    calls = _first_call_runs(compact_module, "base_entries", _commit_then_expire(t), monkeypatch)
    result = t.compact()
    assert calls and result.snapshot_id == 5 and result.files_before == 4 and result.files_after == 1
    assert _rows(t) == [(0, "x"), (1, "x"), (2, "x"), (77, "meanwhile")]


def test_delete_replans_when_its_snapshot_is_expired_while_planning(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import core.ops.scan as scan_module

    t = _table(tmp_path, writes=2)
    calls = _first_call_runs(scan_module, "_live_entries", _commit_then_expire(t), monkeypatch)
    result = t.delete("id = 0")
    assert calls and result.rows_deleted == 1 and result.snapshot_id == 4
    assert _rows(t) == [(1, "x"), (77, "meanwhile")]


def test_truncate_replans_when_its_snapshot_is_expired_while_planning(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The files truncate counts (and decides nothing-to-do from) come from the new latest."""
    import core.commit as commit_module

    t = _table(tmp_path, writes=2)
    calls = _first_call_runs(commit_module, "live_entries", _commit_then_expire(t), monkeypatch)
    result = t.truncate(dry_run=False)
    assert calls and result.snapshot_id == 4 and (result.files_deleted, result.records_deleted) == (3, 3)
    assert _rows(t) == []


def test_drop_partition_replans_when_its_snapshot_is_expired_while_planning(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import core.commit as commit_module

    t = Table.locate("db.p", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING, dt STRING", partition_keys=["dt"], options={"write-only": "true"})

    def write(ids: list[int], dt: str) -> None:
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": ["x"] * len(ids), "dt": [dt] * len(ids)}))

    write([1], "a")
    write([2], "b")

    def meanwhile() -> None:
        write([3], "a")  # lands in the partition being dropped after the plan began
        t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)

    calls = _first_call_runs(commit_module, "live_entries", meanwhile, monkeypatch)
    result = t.drop_partitions([{"dt": "a"}], dry_run=False)
    assert calls and result.snapshot_id == 4 and (result.files_deleted, result.records_deleted) == (2, 2)
    out = t.scan()
    assert out.column("id").to_pylist() == [2]


def test_first_row_write_whose_lookup_files_expire_under_its_kernels_is_exit_4(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A first-row write's kernels read the bucket's live files after the plan; when a
    concurrent overwrite + expire removed them, the input is already consumed: the write
    stops with the lost-race error (exit 4), commits nothing, and the table reads as before."""
    import core.ops.write as write_module
    from core.errors import ExpiredWhileReadingError

    t = Table.locate("db.f", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"write-only": "true", "merge-engine": "first-row", "bucket": "1"})
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["first"]}))
    real, done = write_module.plan_job, []

    def plan_then_expire(*args, **kwargs):  # type: ignore[no-untyped-def]
        job = real(*args, **kwargs)
        if not done:
            done.append(True)
            t.write(pa.table({"id": pa.array([7], pa.int64()), "v": ["new"]}), mode="overwrite")
            t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
        return job
    monkeypatch.setattr(write_module, "plan_job", plan_then_expire)
    with pytest.raises(ExpiredWhileReadingError, match="concurrent expire"):
        t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["second"]}))
    assert t.snapshots.list_ids() == [2] and t.snapshots.snapshot(2).commit_kind == "OVERWRITE"
    t.compact(full=True)  # first-row batch reads skip level 0: compact to see the rows
    assert t.scan().column("id").to_pylist() == [7]


@pytest.mark.parametrize("action", ["delete", "write"])
def test_an_attempt_that_landed_and_was_expired_before_its_check_is_not_committed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str) -> None:
    """The CI race of 2026-11-27: a delete's snapshot lands, another writer commits, and an
    expire with retain 1 retires it before the committer reads it back (state unknown). The
    retry must see that its own new files are live: committing again would conflict with its
    own replacement (and the delete would then remove the files the table now references), or
    add a write's rows twice."""
    from core.ops.check import check

    wh = str(tmp_path / "wh")
    t = Table.locate("db.t", warehouse=wh)
    create(t, "id BIGINT, v STRING", options={"write-only": "true"})
    t.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    real = commit_module.FileStoreCommit._illegitimate
    calls = []

    def landed_then_expired(self, snapshot, latest):
        if not calls:
            calls.append(snapshot.id)
            other = Table.open("db.t", warehouse=wh)
            other.write(pa.table({"id": pa.array([9], pa.int64()), "v": ["z"]}))
            other.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
            assert not other.snapshots.exists(snapshot.id)  # ours is gone before it was read back
            raise OSError("reading the new snapshot back failed")
        return real(self, snapshot, latest)

    monkeypatch.setattr(commit_module.FileStoreCommit, "_illegitimate", landed_then_expired)
    if action == "delete":
        t.delete("id = 2")
        expected = [(1, "a"), (3, "c"), (9, "z")]
    else:
        t.write(pa.table({"id": pa.array([5], pa.int64()), "v": ["e"]}))
        expected = [(1, "a"), (2, "b"), (3, "c"), (5, "e"), (9, "z")]
    monkeypatch.undo()
    assert calls
    assert sorted((r["id"], r["v"]) for r in t.scan().to_pylist()) == expected
    assert check(Table.open("db.t", warehouse=wh)).ok


def test_a_re_created_id_right_below_earliest_is_not_retired_under_its_committer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race of 2026-12-03. Our write stalls before publishing snapshot-2 on base 1; others
    commit 2 and 3 and an expire retires 1 and 2 (EARLIEST 3). Our publish re-creates 2, right
    below EARLIEST with no gap. An expire that ran before our check took that 2 for the earliest
    and retired it; finding its snapshot gone, the write counted itself landed and expired, and
    its rows were lost although it exited 0. Now the expire leaves it and the write undoes it."""
    t = _table(tmp_path, writes=1)  # L = 1
    monkeypatch.setattr(commit_module, "before_publish", _once(lambda: (
        _write(t, [100], "other"), _write(t, [101], "other"),
        t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False))))
    real = commit_module.FileStoreCommit._illegitimate
    expired_before_check: list[list[int]] = []

    def expire_then_check(self, snapshot, latest):  # type: ignore[no-untyped-def]
        if not expired_before_check and t.snapshots.earliest_hint() == 3:  # ours, not the others' checks
            assert t.snapshots.list_ids() == [2, 3]
            expired_before_check.append(t.expire(retain_min=1, retain_max=1, older_than="0s",
                                                 dry_run=False).snapshots_expired)
        return real(self, snapshot, latest)
    monkeypatch.setattr(commit_module.FileStoreCommit, "_illegitimate", expire_then_check)
    landed = _write(t, [50], "stalled")
    assert expired_before_check == [[]]  # nothing due: 2 is below EARLIEST, not the earliest
    assert landed == 4 and _ids(t) == [3, 4]
    assert _rows(t) == [(0, "x"), (50, "stalled"), (100, "other"), (101, "other")]


def test_a_killed_expire_finished_later_leaves_an_id_re_created_since(tmp_path: Path) -> None:
    """A killed expire's journal retires 1 and 2; it had removed both when a stalled committer
    re-created 2. The next expire finishes the journal but leaves that 2 (newer than the
    journal's end) to its committer's undo."""
    t = _table(tmp_path, writes=3)
    end = t.snapshots.snapshot(3)
    journal = {"expired": [1, 2], "end": 3, "end_user": end.commit_user, "end_time_millis": end.time_millis,
               "files": []}
    Path(t.snapshots.dir, ".expire-3-test.json").write_text(json.dumps(journal))
    t.snapshots.write_earliest_hint(3)
    os.remove(t.snapshots.path(1))
    original_2 = json.loads(Path(t.snapshots.path(2)).read_text())
    Path(t.snapshots.path(2)).write_text(json.dumps({**original_2, "commitUser": "stalled",
                                                     "timeMillis": end.time_millis + 1000}))
    t.expire(retain_min=5, retain_max=5, older_than="0s", dry_run=False)
    assert _ids(t) == [2, 3] and not list(Path(t.snapshots.dir).glob(".expire-*"))
    # The same journal with the planned snapshot-2 still there retires it.
    Path(t.snapshots.path(2)).write_text(json.dumps(original_2))
    Path(t.snapshots.dir, ".expire-3-test.json").write_text(json.dumps(journal))
    t.expire(retain_min=5, retain_max=5, older_than="0s", dry_run=False)
    assert _ids(t) == [3]


def test_an_expire_between_the_verification_reads_does_not_undo_a_legitimate_snapshot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Our write lands as snapshot-3 on its base 2, the latest. Right after the verification's
    first read (of EARLIEST, or of the base), an expire (retain 1) writes EARLIEST 3 and retires
    1 and 2. The snapshot is legitimate whatever the reads saw: when EARLIEST was read first (no
    hint yet) and the base then found gone, it was undone, which deleted the only snapshot left
    and with it every row the table had."""
    t = _table(tmp_path, writes=2)  # snapshots 1, 2
    manager, committer = type(t.snapshots), commit_module.FileStoreCommit
    real_hint, real_base = manager.earliest_hint, committer._still_there
    raced: list[list[int]] = []

    def expire_once() -> None:
        if not raced:
            other = Table.open("db.t", warehouse=str(tmp_path / "wh"))
            raced.append(other.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False).snapshots_expired)

    def hint_then_expire(self):  # type: ignore[no-untyped-def]
        hint = real_hint(self)
        if self.exists(3):  # the verification of our snapshot-3
            expire_once()
        return hint

    def base_then_expire(self, base):  # type: ignore[no-untyped-def]
        there = real_base(self, base)
        if base.id == 2:
            expire_once()
        return there
    monkeypatch.setattr(manager, "earliest_hint", hint_then_expire)
    monkeypatch.setattr(committer, "_still_there", base_then_expire)
    landed = _write(t, [50], "ours")
    monkeypatch.undo()
    assert raced == [[1, 2]]
    assert landed == 3 and _ids(t) == [3]
    assert _rows(t) == [(0, "x"), (1, "x"), (50, "ours")]


def test_a_legitimate_latest_whose_base_an_expire_writing_earliest_last_removes_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same with an expire that writes EARLIEST last (Java's): it removed 1 and 2 right
    after our snapshot-3 landed and has not written the hint yet. Ours is the newest, so it
    stands (a re-created id never is: the expire's end lies above it)."""
    t = _table(tmp_path, writes=2)
    real = type(t.snapshots).try_publish
    done: list[int] = []

    def publish_then_java_expire(self, snapshot, **kw):  # type: ignore[no-untyped-def]
        landed = real(self, snapshot, **kw)
        if not done:
            done.append(snapshot.id)
            for sid in (1, 2):
                os.remove(t.snapshots.path(sid))
        return landed
    monkeypatch.setattr(type(t.snapshots), "try_publish", publish_then_java_expire)
    assert _write(t, [50], "ours") == 3
    monkeypatch.undo()
    assert done == [3] and _ids(t) == [3] and t.snapshots.earliest_hint() is None
    assert (50, "ours") in _rows(t)


def test_a_successor_landing_between_the_chain_checks_keeps_a_legitimate_snapshot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Our snapshot-2 landed; an expire retired its base right after. The verification finds no
    snapshot-3, then lists the directory - and another writer's snapshot-3, built on ours,
    landed in between. Ours is in the chain: taking the listing's id above ours for a gap
    undid it under the snapshot built on it."""
    t = _table(tmp_path, writes=1)
    manager = type(t.snapshots)
    real_publish, real_list = manager.try_publish, manager.list_ids
    state: list[str] = []

    def publish_then_expire_base(self, snapshot, **kw):  # type: ignore[no-untyped-def]
        landed = real_publish(self, snapshot, **kw)
        if not state:
            state.append("published")
            os.remove(self.path(1))  # an expire that writes EARLIEST last retired our base
        return landed

    def list_after_a_successor(self):  # type: ignore[no-untyped-def]
        if state == ["published"]:
            state.append("successor")
            Table.open("db.t", warehouse=str(tmp_path / "wh")).write(
                pa.table({"id": pa.array([100], pa.int64()), "v": ["other"]}))
        return real_list(self)
    monkeypatch.setattr(manager, "try_publish", publish_then_expire_base)
    monkeypatch.setattr(manager, "list_ids", list_after_a_successor)
    landed = _write(t, [50], "ours")
    monkeypatch.undo()
    assert state == ["published", "successor"]
    assert landed == 2 and _ids(t) == [2, 3]
    assert _rows(t) == [(0, "x"), (50, "ours"), (100, "other")]


# ---- commits planned on one state: overtaken, they plan again (FileStoreCommit.planned_on) ----
def test_rollback_as_latest_overtaken_by_a_write_plans_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its deletes and adds are the difference between the latest it read and the target: a write
    landing first must not survive inside a snapshot that says "the target's contents" (the
    stall explorer's append flavor found it re-based over a branch merge)."""
    t = _table(tmp_path, writes=3)
    monkeypatch.setattr(commit_module, "before_publish", _once(lambda: _write(t, [100], "late")))
    result = t.rollback(snapshot_id=1, dry_run=False, as_latest=True)
    assert result.new_snapshot_id == 5 and _ids(t) == [1, 2, 3, 4, 5]
    assert _rows(t) == [(0, "x")]  # snapshot 1's rows: the late write (4) was before the rollback


def test_branch_merge_overtaken_by_an_overwrite_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The merge checked a pure-append main when it planned; a truncate (OVERWRITE) landing before
    its commit breaks that, so it plans again and refuses instead of putting the branch's rows on
    top of the truncate."""
    from core.errors import UsageError
    from core.ops.branches import create_branch
    from core.ops.merge_branch import merge_branch

    t = _table(tmp_path, writes=1)
    create_branch(t, "b", snapshot_id=1)
    _write(t.on_branch("b"), [7], "branch")
    monkeypatch.setattr(commit_module, "before_publish", _once(lambda: t.truncate(dry_run=False)))
    with pytest.raises(UsageError, match="snapshot 2 of branch main is OVERWRITE"):
        merge_branch(t, "b")
    assert _rows(t) == [] and [s.commit_kind for s in t.snapshots.snapshots()] == ["APPEND", "OVERWRITE"]
