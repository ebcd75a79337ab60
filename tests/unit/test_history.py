"""``lakectl snapshots`` (core.ops.history): newest first; with ``--limit N`` it reads N snapshot
files and never lists snapshot/ (issue 44: the cost of the newest few must not grow with the
table's history)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from core.ops.create import create
from core.ops.expire import expire_snapshots
from core.snapshot import SnapshotManager
from core.table import Table


def table_with(tmp_path: Path, commits: int) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1"})
    for i in range(commits):
        t.write(pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]}))
    return t


def test_limit_reads_only_the_newest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = table_with(tmp_path, 9)
    latest = t.snapshots.latest_id()
    full = t.history()
    everything = [h.snapshot_id for h in full]
    assert everything == list(range(latest, 0, -1))  # one listing, every snapshot, newest first

    reads: list[int] = []
    original = SnapshotManager.snapshot

    def counting(self: SnapshotManager, sid: int):  # type: ignore[no-untyped-def]
        reads.append(sid)
        return original(self, sid)

    def no_listing(self: SnapshotManager) -> list[int]:
        raise AssertionError("snapshots --limit listed snapshot/")

    monkeypatch.setattr(SnapshotManager, "snapshot", counting)
    monkeypatch.setattr(SnapshotManager, "list_ids", no_listing)
    newest = t.history(limit=4)
    assert [h.snapshot_id for h in newest] == everything[:4]
    assert reads == everything[:4]
    assert newest == full[:4]
    assert newest[0].total_record_count == 9  # nine keys, whatever the compactions in between


def test_limit_past_the_earliest_stops_there(tmp_path: Path) -> None:
    t = table_with(tmp_path, 8)
    expire_snapshots(t, retain_min=3, older_than="0s", max_deletes=100)
    latest = t.snapshots.latest_id()
    assert [h.snapshot_id for h in t.history(limit=50)] == [latest, latest - 1, latest - 2]
    assert [h.snapshot_id for h in t.history()] == [latest, latest - 1, latest - 2]
