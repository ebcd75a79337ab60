"""``Table.read_stream``: Spark Structured Streaming reads a table's commits, checked against
the change model of ``tests/model/follow_model.py`` (built from the written batches)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from core.consumer import ConsumerManager
from core.engines import EngineSettings
from core.engines.spark import SparkEngine
from core.ops.create import create
from core.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
from follow_model import full_rows, lookup_changes, random_batches, stored_records, to_arrow  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK = EngineSettings(engine="spark", master="local[2]")


@pytest.fixture(scope="module")
def engine():
    e = SparkEngine(master="local[2]")
    yield e
    e.session.stop()


def keyed_table(tmp_path: Path, name: str, **options: str) -> Table:
    table = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(table, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "2", **options})
    return table


def write_batches(table: Table, batches: list, state: dict[int, str]) -> list[tuple]:
    """Commit each batch; the changes a lookup producer reports for them, in order (``state``
    follows along)."""
    changes: list[tuple] = []
    for b in batches:
        table.write(to_arrow(b), row_kind_column="op")
        changes += lookup_changes(state, b)
    return changes


def run_available(table: Table, checkpoint: Path, **flags) -> list[list[tuple]]:
    """Run the stream until it has read every committed snapshot; the rows of each micro-batch."""
    batches: list[list[tuple]] = []

    def sink(df, _batch_id: int) -> None:
        rows = df.toArrow().to_pylist()
        if rows:
            batches.append(sorted((r["_row_kind"], r["id"], r["v"]) for r in rows))

    stream = table.read_stream(engine_settings=SPARK, **flags)
    query = (stream.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    return batches


def test_spark_stream_reads_the_latest_in_full_then_each_commit_once(tmp_path: Path, engine) -> None:
    table = keyed_table(tmp_path, "t", **{"changelog-producer": "lookup"})
    batches = random_batches(random.Random(3), 6)
    state: dict[int, str] = {}
    write_batches(table, batches[:3], state)
    checkpoint = tmp_path / "checkpoint"

    first = run_available(table, checkpoint, consumer_id="spark-job")
    assert first == [sorted(full_rows(state))]
    consumers = ConsumerManager(table.file_io, table.path)
    # Spark tells a source a batch is done when it starts the next one, so the consumer
    # trails the query by one micro-batch: it never claims what was not processed.
    assert consumers.next_snapshot("spark-job") in (None, 4)

    expected = write_batches(table, batches[3:], state)
    second = run_available(table, checkpoint, consumer_id="spark-job")  # the checkpoint resumes the query
    assert [row for batch in second for row in batch] == sorted(expected)
    assert consumers.next_snapshot("spark-job") in (4, 7)
    assert run_available(table, checkpoint, consumer_id="spark-job") == []  # nothing is read twice


def test_spark_stream_from_snapshot(tmp_path: Path, engine) -> None:
    table = keyed_table(tmp_path, "u", **{"changelog-producer": "lookup"})
    batches = random_batches(random.Random(4), 4)
    state: dict[int, str] = {}
    write_batches(table, batches[:2], state)
    expected = write_batches(table, batches[2:], state)  # snapshots 3 and 4
    got = run_available(table, tmp_path / "ckpt", mode="from-snapshot", snapshot_id=3)
    assert [row for batch in got for row in batch] == sorted(expected)


def test_spark_stream_compacted_full_waits_for_a_compaction(tmp_path: Path, engine) -> None:
    table = keyed_table(tmp_path, "c", **{"write-only": "true"})
    batches = random_batches(random.Random(6), 3)
    state: dict[int, str] = {}
    write_batches(table, batches[:2], state)
    checkpoint = tmp_path / "ckpt"
    assert run_available(table, checkpoint, mode="compacted-full") == []  # no compaction yet
    table.compact(full=True)
    expected = sorted(full_rows(state))
    table.write(to_arrow(batches[2]), row_kind_column="op")
    got = run_available(table, checkpoint, mode="compacted-full")
    # The compacted state in full, then the APPEND after it (no producer: its stored records).
    assert sorted(row for batch in got for row in batch) == sorted(expected + stored_records(batches[2]))
