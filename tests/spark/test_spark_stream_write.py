"""Table.write_stream: Spark Structured Streaming into a table, one snapshot per micro-batch,
exactly once across restarts from the same checkpoint.

A file-source query reads JSON files the test drops into a directory, one file per
micro-batch (maxFilesPerTrigger=1, trigger availableNow), so the expected batch ids, rows and
event-time watermarks follow from the files. The table is an append table: a batch committed
twice would show its rows twice.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import pytest

from core.engines.spark import get_session
from core.errors import UsageError
from core.ops.create import create
from core.ops.stream_write import CHECKPOINT_COMMIT_USER, stream_batch_function
from core.table import Table

pytestmark = [pytest.mark.spark, pytest.mark.slow]

UTC = dt.timezone.utc
BASE = dt.datetime(2026, 1, 1, tzinfo=UTC)
DELAY_MS = 10_000  # withWatermark("ts", "10 seconds")


@pytest.fixture(scope="module")
def spark():
    session = get_session("local[2]", {})
    yield session
    session.stop()


def make_table(tmp_path: Path) -> Table:
    t = Table.locate("db.events", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING, ts TIMESTAMP(3)")
    return t


def row(i: int) -> dict:
    return {"id": i, "v": f"v{i}", "ts": (BASE + dt.timedelta(seconds=i)).isoformat()}


def drop(src: Path, name: str, ids: list[int]) -> None:
    """A JSON-lines file appearing atomically (the file source must not see it half written),
    modified a second after the one before it: the source takes files oldest first."""
    tmp = src / f".{name}.tmp"
    tmp.write_text("".join(json.dumps(row(i)) + "\n" for i in ids))
    stamp = time.time() + len(list(src.glob("*.json")))
    os.utime(tmp, (stamp, stamp))
    os.rename(tmp, src / f"{name}.json")


def millis(i: int) -> int:
    return int((BASE + dt.timedelta(seconds=i)).timestamp() * 1000)


def run_query(spark, t: Table, src: Path, checkpoint: Path) -> None:
    stream = (spark.readStream.schema("id BIGINT, v STRING, ts TIMESTAMP").option("maxFilesPerTrigger", 1)
              .json(str(src)).withWatermark("ts", "10 seconds"))
    query = t.write_stream(stream, checkpoint=str(checkpoint), trigger={"availableNow": True}, query_name="events")
    query.awaitTermination(300)
    assert query.exception() is None


def table_ids(t: Table) -> list[int]:
    return sorted(t.scan(select=["id"]).column("id").to_pylist())


def test_each_micro_batch_once_across_restarts(spark, tmp_path):
    t = make_table(tmp_path)
    src, checkpoint = tmp_path / "src", tmp_path / "checkpoint"
    src.mkdir()
    files = [("a", [1, 2, 3]), ("b", [7, 4]), ("c", [5, 6])]  # b holds the newest event of the first run
    for name, ids in files[:2]:
        drop(src, name, ids)
    run_query(spark, t, src, checkpoint)
    drop(src, *files[2])
    run_query(spark, t, src, checkpoint)  # restarted from the same checkpoint

    user = (checkpoint / CHECKPOINT_COMMIT_USER).read_text().strip()
    snaps = list(t.snapshots.snapshots())
    assert [(s.commit_user, s.commit_identifier, s.commit_kind) for s in snaps] == \
        [(user, 0, "APPEND"), (user, 1, "APPEND"), (user, 2, "APPEND")]
    # Each batch: its newest event minus the delay, never below the watermark before it.
    expected, mark = [], None
    for _, ids in files:
        mark = max(m for m in (mark, millis(max(ids)) - DELAY_MS) if m is not None)
        expected.append(mark)
    assert [s.watermark for s in snaps] == expected
    assert expected[2] == expected[1]  # batch c's events are older than b's newest
    assert table_ids(t) == sorted(i for _, ids in files for i in ids)

    # Spark died after our commit of batch 2 but before its own commit log entry: the restarted
    # query runs batch 2 again (same id, same files), then batch 3 for a new file.
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)
    drop(src, "d", [8])
    run_query(spark, t, src, checkpoint)
    snaps = list(t.snapshots.snapshots())
    assert [(s.commit_user, s.commit_identifier) for s in snaps] == [(user, i) for i in range(4)]
    assert table_ids(t) == [1, 2, 3, 4, 5, 6, 7, 8]


def test_a_redelivered_batch_id_commits_nothing(spark, tmp_path):
    t = make_table(tmp_path)
    checkpoint = str(tmp_path / "checkpoint")
    each_batch = stream_batch_function(t, checkpoint)
    batch = spark.createDataFrame([(i, f"v{i}", BASE + dt.timedelta(seconds=i)) for i in (1, 2)],
                                  "id BIGINT, v STRING, ts TIMESTAMP")
    first = each_batch(batch, 5)
    assert (first.snapshot_id, first.rows, first.skipped, first.watermark) == (1, 2, False, None)
    again = each_batch(batch, 5)
    older = each_batch(batch, 4)
    # A restarted query: a new function on the same checkpoint keeps the commit user.
    restarted = stream_batch_function(t, checkpoint)(batch, 5)
    assert [(r.skipped, r.snapshot_id) for r in (again, older, restarted)] == [(True, None)] * 3
    assert len({first.commit_user, again.commit_user, restarted.commit_user}) == 1
    assert t.snapshots.list_ids() == [1]
    assert table_ids(t) == [1, 2]
    with pytest.raises(UsageError, match="streaming DataFrame"):
        t.write_stream(batch, checkpoint=checkpoint)
