"""Issue 6's streaming features on an s3:// warehouse (a real SeaweedFS): following with a
consumer, expiration held back by it, a streaming writer's exactly-once skip, and lookups;
checked against the change model of ``tests/model/follow_model.py``."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from core.consumer import ConsumerManager
from core.ops.create import create
from core.ops.stream_write import StreamWriter
from core.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
from follow_model import apply, as_changes, random_batches, stored_records, to_arrow  # noqa: E402

pytestmark = pytest.mark.s3


def test_follow_consumers_stream_writes_and_lookups_on_s3(s3) -> None:
    table = Table.locate("db.t", warehouse=s3.warehouse(), storage_options=s3.storage_options())
    create(table, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "2", "write-only": "true", "snapshot.num-retained.min": "1"})
    batches = random_batches(random.Random(21), 6)
    writer = StreamWriter(table, "s3-stream", row_kind_column="op")
    for n, b in enumerate(batches[:3], start=1):
        assert writer.write_batch(to_arrow(b), identifier=n, watermark=1000 * n).snapshot_id == n
    # A re-sent batch of the same commit user is skipped and writes nothing.
    assert writer.write_batch(to_arrow(batches[2]), identifier=3).skipped
    assert table.snapshots.latest_id() == 3

    seen = list(table.follow(mode="from-snapshot", snapshot_id=1, max_snapshots=2, consumer_id="reader",
                             poll_seconds=0.01))
    consumers = ConsumerManager(table.file_io, table.path)
    assert consumers.next_snapshot("reader") == 3
    for n, b in enumerate(batches[3:], start=4):
        writer.write_batch(to_arrow(b), identifier=n, watermark=1000 * n)
    expired = table.expire(older_than="0s", max_deletes=100, dry_run=False)
    assert expired.snapshots_expired == [1, 2]  # the consumer needs snapshot 3 on
    seen += list(table.follow(max_snapshots=4, consumer_id="reader", poll_seconds=0.01))
    assert [b.snapshot_id for b in seen] == list(range(1, 7))
    assert [as_changes(b.rows.to_pylist()) for b in seen] == [stored_records(b) for b in batches]
    assert [b.watermark for b in seen] == [1000 * n for n in range(1, 7)]

    state: dict[int, str] = {}
    for b in batches:
        apply(state, b)
    keys = sorted(state)[:3] + [999]
    found = table.lookup([f"id={k}" for k in keys])
    assert found.rows.to_pylist() == [{"id": k, "v": state[k]} for k in keys if k in state]
