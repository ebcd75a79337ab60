"""Streaming writes in-process: StreamWriter's skip rule (per commit user), record streams cut
into batches by rows and by time, input offsets as identifiers, watermarks, bad batches.

Every expectation comes from a model of the input records built by the test (which record
lands in which snapshot, what the table holds), never from lakectl's own output.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import threading
import time

import pyarrow as pa
import pytest

from core.errors import InvalidDataError, UsageError
from core.ops.create import create
from core.ops.stream_write import StreamWriter, write_records
from core.record_stream import RecordReader
from core.table import Table

UTC = dt.timezone.utc


@pytest.fixture
def table(tmp_path) -> Table:
    t = Table.locate("db.events", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING, ts TIMESTAMP(3), dt STRING", primary_keys=["id", "dt"],
           partition_keys=["dt"], options={"bucket": "2"})
    return t


def records(start: int, count: int) -> list[dict]:
    """Records start+1 .. start+count of the stream; event times one second apart."""
    base = dt.datetime(2026, 1, 1, tzinfo=UTC)
    return [{"id": i, "v": f"v{i}", "ts": (base + dt.timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S"),
             "dt": f"d{i % 2}"} for i in range(start + 1, start + count + 1)]


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def arrow(rows: list[dict]) -> pa.Table:
    return pa.table({"id": pa.array([r["id"] for r in rows], pa.int64()), "v": [r["v"] for r in rows],
                     "dt": [r["dt"] for r in rows]})


def table_rows(t: Table, snapshot_id: int | None = None) -> list[tuple]:
    data = t.scan(snapshot_id=snapshot_id, select=["id", "v", "dt"])
    return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))))


def model(rows: list[dict]) -> list[tuple]:
    return sorted((r["id"], r["v"], r["dt"]) for r in rows)


def epoch_millis(row: dict) -> int:
    moment = dt.datetime.strptime(row["ts"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1000


def snapshots(t: Table) -> list:
    return list(t.snapshots.snapshots())


# ---- StreamWriter -----------------------------------------------------------------------------
def test_writer_skips_identifiers_its_commit_user_committed(table):
    a = StreamWriter(table, "user-a")
    assert a.last_committed_identifier() is None
    assert a.write_batch(arrow(records(0, 3)), 5).snapshot_id == 1
    again = a.write_batch(arrow(records(0, 3)), 5)  # re-sent: same identifier
    older = a.write_batch(arrow(records(10, 3)), 4)  # an identifier below the last one
    assert (again.skipped, again.snapshot_id, older.skipped, older.snapshot_id) == (True, None, True, None)
    assert [s.id for s in snapshots(table)] == [1]

    # Another commit user has its own identifiers: 5 is new to it.
    b = StreamWriter(table, "user-b")
    assert b.last_committed_identifier() is None
    result = b.write_batch(arrow(records(20, 2)), 5)
    assert (result.skipped, result.snapshot_id) == (False, 2)
    # A restarted writer of user-a finds its last identifier behind user-b's snapshot.
    restarted = StreamWriter(table, "user-a")
    assert restarted.last_committed_identifier() == 5
    assert restarted.write_batch(arrow(records(0, 3)), 5).skipped
    assert restarted.write_batch(arrow(records(30, 1)), 6).snapshot_id == 3
    got = [(s.commit_user, s.commit_identifier, s.commit_kind) for s in snapshots(table)]
    assert got == [("user-a", 5, "APPEND"), ("user-b", 5, "APPEND"), ("user-a", 6, "APPEND")]
    assert table_rows(table) == model(records(0, 3) + records(20, 2) + records(30, 1))


def test_a_batch_write_in_between_does_not_hide_the_stream_user(table):
    w = StreamWriter(table, "stream")
    w.write_batch(arrow(records(0, 2)), 2)
    table.write(arrow(records(100, 2)))  # a batch write: fresh user, identifier Long.MAX
    assert StreamWriter(table, "stream").last_committed_identifier() == 2


def test_watermark_column_gives_each_snapshot_the_max_rule(table):
    w = StreamWriter(table, "wm", watermark_column="ts")
    batches = [records(10, 3), records(0, 2), records(20, 1)]  # the second holds older events
    expected, newest = [], None
    for n, rows in enumerate(batches, 1):
        data = pa.Table.from_pylist(rows)  # ts as text: cast to TIMESTAMP(3) like the write does
        mark = max(epoch_millis(r) for r in rows)
        newest = mark if newest is None else max(newest, mark)
        expected.append(newest)
        assert w.write_batch(data, n).watermark == newest
    assert [s.watermark for s in snapshots(table)] == expected
    assert expected[1] == expected[0]  # older events do not move the watermark back


def test_bad_watermark_columns_are_usage_errors(table):
    with pytest.raises(UsageError, match="must be a TIMESTAMP"):
        StreamWriter(table, "u", watermark_column="v")
    with pytest.raises(UsageError, match="unknown column"):
        StreamWriter(table, "u", watermark_column="nope")
    with pytest.raises(UsageError, match="commit user"):
        StreamWriter(table, " ")


# ---- record streams -------------------------------------------------------------------------
def test_record_reader_splits_lines_and_csv_records():
    r = RecordReader(io.BytesIO(b'{"a": 1}\r\n\n  \n{"a": 2}\n{"a": 3}'), "jsonl")
    got = []
    while not r.eof:
        got += r.read(0)
    assert got == [b'{"a": 1}', b'{"a": 2}', b'{"a": 3}']

    text = b'id,v\n1,"two\nlines"\n\n2,"say ""hi"""\n3,x\n'
    r = RecordReader(io.BytesIO(text), "csv")
    got = []
    while not r.eof:
        got += r.read(0)
    assert r.header == b"id,v"
    assert got == [b'1,"two\nlines"', b'2,"say ""hi"""', b"3,x"]
    assert r.batch_bytes(got[1:]) == b'id,v\n2,"say ""hi"""\n3,x\n'


def test_commit_rows_cuts_batches_with_input_offsets_as_identifiers(table):
    rows = records(0, 10)
    seen = []
    summary = write_records(table, io.BytesIO(jsonl(rows)), commit_user="s", commit_rows=4,
                            watermark_column="ts", on_batch=seen.append)
    # Batches of 4, 4 and the remaining 2 at end of input; identifier = records read so far.
    assert [b.commit_identifier for b in seen] == [4, 8, 10]
    assert [b.rows for b in seen] == [4, 4, 2]
    snaps = snapshots(table)
    assert [(s.commit_user, s.commit_identifier) for s in snaps] == [("s", 4), ("s", 8), ("s", 10)]
    for snap, end in zip(snaps, (4, 8, 10)):
        assert table_rows(table, snap.id) == model(rows[:end])
        assert snap.watermark == epoch_millis(rows[end - 1])
    assert (summary.batches, summary.rows, summary.commit_identifier, summary.stopped_by) == (3, 10, 10, "eof")
    assert summary.snapshot_id == snaps[-1].id


def test_a_replayed_stream_writes_each_record_once(table):
    rows = records(0, 9)
    write_records(table, io.BytesIO(jsonl(rows[:5])), commit_user="s", commit_rows=3)  # 3, then 2 at EOF
    assert [s.commit_identifier for s in snapshots(table)] == [3, 5]

    # The producer replays everything from the start, with other batch boundaries.
    seen = []
    summary = write_records(table, io.BytesIO(jsonl(rows)), commit_user="s", commit_rows=4, on_batch=seen.append)
    assert [(b.commit_identifier, b.skipped, b.rows) for b in seen] == [(4, True, 0), (8, False, 3), (9, False, 1)]
    assert (summary.rows_skipped, summary.batches_skipped, summary.rows) == (5, 1, 4)
    assert table_rows(table) == model(rows)
    # Record offsets, not row keys, decide: the 3 new rows of batch 8 are records 6..8.
    assert table_rows(table, 3) == model(rows[:8])


def test_input_offset_places_a_resent_tail(table):
    rows = records(0, 8)
    write_records(table, io.BytesIO(jsonl(rows[:6])), commit_user="s", commit_rows=3)
    # The producer re-sends its last batch (records 4..6) and what follows.
    seen = []
    write_records(table, io.BytesIO(jsonl(rows[3:])), commit_user="s", commit_rows=3, input_offset=3,
                  on_batch=seen.append)
    assert [(b.commit_identifier, b.skipped) for b in seen] == [(6, True), (8, False)]
    assert table_rows(table) == model(rows)
    # Without the offset the same tail would count from record 1 and be dropped as committed.
    seen.clear()
    write_records(table, io.BytesIO(jsonl(records(100, 2))), commit_user="s", commit_rows=5, on_batch=seen.append)
    assert [(b.commit_identifier, b.skipped) for b in seen] == [(2, True)]


def test_csv_stream(table):
    text = b'id,v,ts,dt\n1,"a, b",2026-01-01 00:00:01,d1\n2,"multi\nline",2026-01-01 00:00:02,d0\n3,c,,d1\n'
    write_records(table, io.BytesIO(text), fmt="csv", commit_user="c", commit_rows=2)
    assert [s.commit_identifier for s in snapshots(table)] == [2, 3]
    assert table_rows(table) == [(1, "a, b", "d1"), (2, "multi\nline", "d0"), (3, "c", "d1")]


def test_a_bad_batch_commits_nothing_of_itself_and_keeps_the_earlier_ones(table):
    rows = records(0, 6)
    text = jsonl(rows[:3]) + b'{"id": "not a number", "v": "x", "dt": "d1"}\n' + jsonl(rows[3:])
    seen = []
    with pytest.raises(InvalidDataError, match=r"stdin \(records 4 to 6\)"):
        write_records(table, io.BytesIO(text), commit_user="s", commit_rows=3, on_batch=seen.append)
    assert [s.commit_identifier for s in snapshots(table)] == [3]
    assert table_rows(table) == model(rows[:3])
    assert len(seen) == 1


def test_bad_batch_sizes_are_usage_errors(table):
    for kwargs in ({"commit_rows": 0}, {"commit_interval": 0.0}, {}, {"commit_rows": 1, "input_offset": -1}):
        with pytest.raises(UsageError):
            write_records(table, io.BytesIO(b""), commit_user="s", **kwargs)
    with pytest.raises(UsageError, match="jsonl or csv"):
        write_records(table, io.BytesIO(b""), fmt="parquet", commit_user="s", commit_rows=1)


def test_commit_interval_commits_while_the_input_is_idle(table):
    """A pipe that stays open and silent: the batch read so far is committed on time."""
    read_fd, write_fd = os.pipe()
    rows = records(0, 5)
    outcome: dict = {}

    def run() -> None:
        with os.fdopen(read_fd, "rb", buffering=0) as source:
            outcome["summary"] = write_records(table, source, commit_user="t", commit_interval=0.3)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        os.write(write_fd, jsonl(rows[:3]))
        deadline = time.monotonic() + 20
        while table.snapshots.latest_id() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        first = table.latest_snapshot()
        assert first is not None, "no commit while the pipe was open and idle"
        assert first.commit_identifier == 3 and table_rows(table) == model(rows[:3])
        os.write(write_fd, jsonl(rows[3:]))
    finally:
        os.close(write_fd)
        worker.join(30)
    assert not worker.is_alive()
    assert table_rows(table) == model(rows)
    assert table.latest_snapshot().commit_identifier == 5
    assert outcome["summary"].rows == 5


def test_a_stop_request_commits_what_was_read(table):
    read_fd, write_fd = os.pipe()
    stop = threading.Event()
    rows = records(0, 4)
    outcome: dict = {}

    def run() -> None:
        with os.fdopen(read_fd, "rb", buffering=0) as source:
            outcome["summary"] = write_records(table, source, commit_user="t", commit_rows=100, stop=stop)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        os.write(write_fd, jsonl(rows) + b'{"id": 99, "v": "half a')  # an unfinished line is no record
        time.sleep(0.5)
        stop.set()
        worker.join(30)
    finally:
        os.close(write_fd)
    assert not worker.is_alive()
    summary = outcome["summary"]
    assert (summary.stopped_by, summary.rows, summary.commit_identifier) == ("signal", 4, 4)
    assert table_rows(table) == model(rows)
