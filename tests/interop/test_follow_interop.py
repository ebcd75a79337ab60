"""Streaming reads against the official reader: pypaimon 2.1's streaming scan follows a table
lakectl writes, and the two share consumer positions in ``consumer/consumer-<id>``."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from core.consumer import ConsumerManager
from core.ops.create import create
from core.ops.follow import follow, resolve_settings
from core.table import Table
from oracle import official_stream

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
from follow_model import as_changes, random_batches, to_arrow  # noqa: E402

pytestmark = pytest.mark.interop


def lakectl_follow(table: Table, count: int, **flags) -> list:
    settings = resolve_settings(table.schema.options, poll_seconds=0.01, **flags)
    return list(follow(table, settings, max_snapshots=count, sleep=lambda _s: None))


def grouped(rows: list[dict]) -> dict[int, list]:
    out: dict[int, list] = {}
    for row in rows:
        out.setdefault(row.pop("_snapshot_id"), []).append(row)
    return {sid: as_changes(r) for sid, r in out.items()}


def test_pypaimon_streams_what_lakectl_follows_and_they_share_consumers(tmp_path: Path) -> None:
    table = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(table, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "2"})
    batches = random_batches(random.Random(5), 6)
    for b in batches[:3]:
        table.write(to_arrow(b), row_kind_column="op")

    # Both start with the latest snapshot in full and agree on it.
    ours = lakectl_follow(table, 1, consumer_id="shared")
    theirs, meta = official_stream(table.path, tmp_path, plans=1)
    assert meta["snapshots"] == [3] and ours[0].snapshot_id == 3 and ours[0].full
    assert grouped(theirs.to_pylist()) == {3: as_changes(ours[0].rows.to_pylist())}
    consumers = ConsumerManager(table.file_io, table.path)
    assert consumers.next_snapshot("shared") == 4

    # pypaimon resumes from the position lakectl recorded and reads the same changes.
    for b in batches[3:5]:
        table.write(to_arrow(b), row_kind_column="op")
    theirs, meta = official_stream(table.path, tmp_path, plans=2, consumer_id="shared")
    assert meta["snapshots"] == [4, 5]
    ours = lakectl_follow(table, 2, mode="from-snapshot", snapshot_id=4)
    assert grouped(theirs.to_pylist()) == {b.snapshot_id: as_changes(b.rows.to_pylist()) for b in ours}
    assert consumers.next_snapshot("shared") == 6  # written by pypaimon, read by lakectl

    # ... and lakectl resumes from the position pypaimon recorded.
    table.write(to_arrow(batches[5]), row_kind_column="op")
    resumed = lakectl_follow(table, 1, consumer_id="shared")
    assert [b.snapshot_id for b in resumed] == [6] and not resumed[0].full
