"""Commit-user progress markers (core/commit_user.py) and how StreamWriter keeps and reads them.

The pure part (``resolve_progress``) is checked case by case against what the snapshots and the
marker, as the test sets them up, imply; the writer's part against a real table with real
expiry, with the table's contents as the test's own model expects them.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from core.commit_user import (Committing, CommitUserMarkers, Marker, Walk, marker_file_name, resolve_progress)
from core.errors import CommitConflictError, CorruptMetadataError, InvalidDataError
from core.ops.create import create
from core.ops.expire import expire_snapshots
from core.ops.stream_write import StreamWriter
from core.table import Table


@pytest.fixture
def table(tmp_path) -> Table:
    t = Table.locate("db.events", warehouse=str(tmp_path))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1"})
    return t


def rows(first: int, last: int) -> pa.Table:
    ids = range(first, last + 1)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]})


def table_ids(t: Table) -> list[int]:
    return sorted(t.scan(select=["id"]).column("id").to_pylist())


def expire_all_but_latest(t: Table) -> None:
    expire_snapshots(t, retain_min=1, retain_max=1, older_than="0s")
    assert t.snapshots.earliest_id() == t.snapshots.latest_id()


def others_commit(t: Table, first: int, count: int = 2) -> None:
    for i in range(first, first + count):
        t.write(rows(i, i))


# ---- the marker file ---------------------------------------------------------------------------
def test_a_marker_round_trips_and_names_one_file_per_user(tmp_path):
    markers = CommitUserMarkers(Table.locate("db.x", warehouse=str(tmp_path)).file_io, str(tmp_path / "t"))
    assert markers.read("feed") is None
    written = Marker("feed", 30, 3, Committing(40, 6))
    markers.write(written)
    assert markers.read("feed") == written
    assert json.loads((tmp_path / "t" / "commit-user" / "user-feed").read_text()) == {
        "commitUser": "feed", "commitIdentifier": 30, "snapshotId": 3,
        "committing": {"commitIdentifier": 40, "afterSnapshotId": 6}}
    markers.write(Marker("feed", 40, 7))  # settled: no "committing" key
    assert json.loads((tmp_path / "t" / "commit-user" / "user-feed").read_text()) == {
        "commitUser": "feed", "commitIdentifier": 40, "snapshotId": 7}
    markers.delete("feed")
    markers.delete("feed")  # absent: nothing to do
    assert markers.read("feed") is None


def test_marker_file_names_encode_any_user():
    assert marker_file_name("feed") == "user-feed"
    assert marker_file_name("a/b c") == "user-a%2Fb%20c"
    assert marker_file_name("..") == "user-.."
    long = marker_file_name("x" * 500)
    assert long.startswith("user-sha256-") and len(long) == len("user-sha256-") + 64
    assert marker_file_name("x" * 500) != marker_file_name("x" * 499 + "y")


@pytest.mark.parametrize("text", ["", "{", '{"commitUser": "feed"}', '{"commitUser": "feed", "commitIdentifier": "3", '
                                  '"snapshotId": 1}', '{"commitUser": "feed", "commitIdentifier": 3, "snapshotId": 1, '
                                  '"committing": {"commitIdentifier": 4}}',
                                  '{"commitUser": "other", "commitIdentifier": 3, "snapshotId": 1}'])
def test_a_garbled_or_foreign_marker_is_corrupt_metadata(tmp_path, text):
    markers = CommitUserMarkers(Table.locate("db.x", warehouse=str(tmp_path)).file_io, str(tmp_path))
    (tmp_path / "commit-user").mkdir(exist_ok=True)
    (tmp_path / "commit-user" / "user-feed").write_text(text)
    with pytest.raises(CorruptMetadataError, match="user-feed"):
        markers.read("feed")


# ---- resolve_progress --------------------------------------------------------------------------
def probe_of(snapshots: dict[int, tuple[str, int]]):
    return lambda sid: snapshots.get(sid)


def resolve(marker, walk, snapshots=None):
    return resolve_progress(marker, walk, probe_of(snapshots or {}), commit_user="feed")


def test_the_snapshots_alone_decide_while_nothing_expired():
    p = resolve(None, Walk(20, 5, 5, 9))
    assert (p.identifier, p.snapshot_id, p.unknown) == (20, 5, None)
    p = resolve(None, Walk(None, None, 1, 9))  # every snapshot read, none of feed's: a new user
    assert (p.identifier, p.unknown) == (None, None)
    p = resolve(None, Walk(None, None, 1, 0))  # an empty table
    assert (p.identifier, p.unknown) == (None, None)


def test_no_marker_and_no_snapshot_where_snapshots_expired_is_unknown():
    p = resolve(None, Walk(None, None, 7, 9))
    assert p.identifier is None
    assert "commit user feed" in p.unknown and "before 7 are gone" in p.unknown


def test_the_marker_of_an_expired_commit_counts():
    # Snapshot 3 (feed's 30) expired; 7..9 are others'.
    p = resolve(Marker("feed", 30, 3), Walk(None, None, 7, 9))
    assert (p.identifier, p.snapshot_id, p.unknown, p.stale_marker) == (30, 3, None, False)
    # The later of the two: a snapshot newer than the marker (as a kill before its update leaves it).
    p = resolve(Marker("feed", 30, 3), Walk(40, 8, 8, 9))
    assert (p.identifier, p.snapshot_id) == (40, 8)


def test_a_marker_whose_commit_was_rolled_back_is_ignored():
    # Above the latest: rolled back and nothing re-used the id.
    p = resolve(Marker("feed", 30, 12), Walk(20, 5, 5, 9))
    assert (p.identifier, p.stale_marker, p.unknown) == (20, True, None)
    # Re-used by another commit after the rollback.
    p = resolve(Marker("feed", 30, 6), Walk(20, 5, 5, 9), {6: ("other", 9223372036854775807)})
    assert (p.identifier, p.stale_marker) == (20, True)
    # Still there and feed's: it counts.
    p = resolve(Marker("feed", 30, 6), Walk(30, 6, 6, 9), {6: ("feed", 30)})
    assert (p.identifier, p.stale_marker) == (30, False)


def test_a_position_the_user_gave_counts():
    p = resolve(Marker("feed", 25, None), Walk(None, None, 7, 9))
    assert (p.identifier, p.unknown) == (25, None)


def test_a_commit_in_flight_is_decided_by_the_snapshots_after_it_or_is_unknown():
    in_flight = Marker("feed", 30, 3, Committing(40, 6))
    # Every snapshot after 6 was read and none is feed's: it did not land.
    p = resolve(in_flight, Walk(None, None, 7, 9))
    assert (p.identifier, p.unknown) == (30, None)
    # It landed as snapshot 8.
    p = resolve(in_flight, Walk(40, 8, 8, 9))
    assert (p.identifier, p.unknown) == (40, None)
    # Snapshot 7 expired: it may have been feed's 40.
    p = resolve(in_flight, Walk(None, None, 8, 9))
    assert p.identifier == 30
    assert "committing records up to 40" in p.unknown and "after 6" in p.unknown and "up to 30" in p.unknown


def test_a_marker_of_a_run_that_started_from_nothing_is_no_gap():
    # --reset-progress (or a new user) wrote it before its first commit, which did not land.
    p = resolve(Marker("feed", None, None, Committing(10, 6)), Walk(None, None, 7, 9))
    assert (p.identifier, p.unknown) == (None, None)


# ---- StreamWriter keeps the marker ---------------------------------------------------------------
def test_the_marker_follows_each_commit_and_outlives_the_snapshots(table):
    writer = StreamWriter(table, "feed")
    writer.write_batch(rows(1, 10), 10)
    writer.write_batch(rows(11, 20), 20)
    markers = CommitUserMarkers(table.file_io, table.branch_path)
    assert markers.read("feed") == Marker("feed", 20, 2)
    others_commit(table, 100)
    expire_all_but_latest(table)
    restarted = StreamWriter(table, "feed")
    progress = restarted.lookup_progress()
    assert (progress.identifier, progress.unknown) == (20, None)
    assert restarted.write_batch(rows(1, 10), 10).skipped and restarted.write_batch(rows(11, 20), 20).skipped
    assert restarted.write_batch(rows(21, 30), 30).snapshot_id == 5
    assert markers.read("feed") == Marker("feed", 30, 5)
    assert table_ids(table) == list(range(1, 31)) + [100, 101]


def test_a_commit_that_landed_before_the_marker_caught_up_is_found_or_reported_unknown(table, monkeypatch):
    writer = StreamWriter(table, "feed")
    writer.write_batch(rows(1, 10), 10)

    class Killed(BaseException):
        pass

    def killed_after_the_commit(self):
        raise Killed  # the process dies between the commit and the marker's update

    monkeypatch.setattr(StreamWriter, "_settled", killed_after_the_commit)
    with pytest.raises(Killed):
        writer.write_batch(rows(11, 20), 20)
    monkeypatch.undo()
    markers = CommitUserMarkers(table.file_io, table.branch_path)
    assert markers.read("feed") == Marker("feed", 10, 1, Committing(20, 1))
    # Its snapshot is still there: the restart finds it.
    assert StreamWriter(table, "feed").lookup_progress().identifier == 20
    # Expired: nothing can tell whether records 11..20 are in the table.
    others_commit(table, 100)
    expire_all_but_latest(table)
    progress = StreamWriter(table, "feed").lookup_progress()
    assert progress.identifier == 10 and "committing records up to 20" in progress.unknown


def test_a_refused_batch_leaves_nothing_in_flight(table):
    writer = StreamWriter(table, "feed")
    writer.write_batch(rows(1, 10), 10)
    bad = pa.table({"id": pa.array([None], pa.int64()), "v": ["x"]})  # a null primary key
    with pytest.raises(InvalidDataError):
        writer.write_batch(bad, 11)
    assert CommitUserMarkers(table.file_io, table.branch_path).read("feed") == Marker("feed", 10, 1)


def test_the_marker_never_moves_back_under_a_second_run_of_the_same_user(table):
    first = StreamWriter(table, "feed")
    first.write_batch(rows(1, 10), 10)
    second = StreamWriter(table, "feed")  # started while the first still runs
    second.write_batch(rows(11, 20), 20)
    markers = CommitUserMarkers(table.file_io, table.branch_path)
    assert markers.read("feed") == Marker("feed", 20, 2)
    with pytest.raises(CommitConflictError, match="another run of commit user feed"):
        first.write_batch(rows(11, 20), 20)  # it would write records 11..20 twice
    assert markers.read("feed") == Marker("feed", 20, 2)
    assert table.snapshots.latest_id() == 2
    assert table_ids(table) == list(range(1, 21))


def test_start_over_removes_the_marker_and_ignores_the_snapshots(table):
    writer = StreamWriter(table, "feed")
    writer.write_batch(rows(1, 10), 10)
    again = StreamWriter(table, "feed")
    again.start_over()
    assert CommitUserMarkers(table.file_io, table.branch_path).read("feed") is None
    assert not again.write_batch(rows(1, 10), 10).skipped
    assert CommitUserMarkers(table.file_io, table.branch_path).read("feed") == Marker("feed", 10, 2)


def test_a_rollback_that_removed_the_markers_commit_leaves_the_snapshots_in_charge(table):
    writer = StreamWriter(table, "feed")
    writer.write_batch(rows(1, 10), 10)
    writer.write_batch(rows(11, 20), 20)
    table.rollback(snapshot_id=1, dry_run=False)  # records 11..20 are gone by the rollback's meaning
    # The rollback forgot the marker (its commit was above the target), so an expire of the
    # re-used id 2 can never make it look current; the snapshots say where to resume.
    assert CommitUserMarkers(table.file_io, table.branch_path).read("feed") is None
    restarted = StreamWriter(table, "feed")
    progress = restarted.lookup_progress()
    assert progress.identifier == 10
    assert not restarted.write_batch(rows(11, 20), 20).skipped  # a replay writes them again, as before markers
    assert CommitUserMarkers(table.file_io, table.branch_path).read("feed") == Marker("feed", 20, 2)
    assert table_ids(table) == list(range(1, 21))
