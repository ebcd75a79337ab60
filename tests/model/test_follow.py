"""``core.ops.follow``: what a follower reads, checked against the change model of
``follow_model`` (built from the batches written, never from lakectl's reads).

The follower's ``sleep`` is scripted: each poll commits the next batch, so every scan mode
is exercised deterministically in one process.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from core.consumer import ConsumerManager
from core.errors import NotFoundError, UsageError
from core.evolution import SetOption
from core.ops.create import create
from core.ops.follow import ChangeBatch, follow, resolve_settings
from core.table import Table
from follow_model import (apply, as_changes, full_rows, lookup_changes, random_batches, stored_records,
                          to_arrow)

SCHEMA = "id BIGINT NOT NULL, v STRING"


def make_table(tmp_path: Path, **options: str) -> Table:
    table = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    opts = {"bucket": "2", **options}
    create(table, SCHEMA, primary_keys=["id"], options=opts)
    return table


def write(table: Table, batch: list) -> int:
    return table.write(to_arrow(batch), row_kind_column="op").snapshot_id


class Script:
    """A follower's sleep that commits the next batch (or runs the next action) per poll."""

    def __init__(self, actions: list[Callable[[], Any]]) -> None:
        self.actions = list(actions)
        self.polls = 0

    def __call__(self, _seconds: float) -> None:
        self.polls += 1
        if self.actions:
            self.actions.pop(0)()

    @property
    def done(self) -> bool:
        return not self.actions


def run(table: Table, batches_after_start: list, *, max_snapshots: int, **flags: Any) -> list[ChangeBatch]:
    script = Script([lambda b=b: write(table, b) for b in batches_after_start])
    settings = resolve_settings(table.schema.options, poll_seconds=0.01, **flags)
    got = list(follow(table, settings, max_snapshots=max_snapshots, sleep=script,
                      should_stop=lambda: script.polls > 50))
    return got


def rows(batch: ChangeBatch) -> list:
    return as_changes(batch.rows.to_pylist())


# ---- what each snapshot contributes -----------------------------------------------------
@pytest.mark.parametrize("producer", ["none", "lookup"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_committed_change_once_in_order(tmp_path: Path, producer: str, seed: int) -> None:
    rng = random.Random(seed)
    table = make_table(tmp_path, **{"changelog-producer": producer, "num-sorted-run.compaction-trigger": "3"})
    batches = random_batches(rng, 8)
    state: dict[int, str] = {}
    expected = []
    for b in batches:
        expected.append(lookup_changes(state, b) if producer == "lookup" else stored_records(b))
    # A lookup batch that changes nothing (deletes of absent keys) commits no changelog and
    # gives the follower nothing to read, as in Paimon.
    expected = [e for e in expected if e or producer == "none"]
    got = run(table, batches, max_snapshots=len(expected), mode="from-snapshot", snapshot_id=1)
    # none: the writes' APPEND snapshots (the COMPACT ones of auto-compaction are skipped);
    # lookup: the COMPACT snapshots after each write, which carry its changelog (as Java's)
    producing = [s.id for s in table.snapshots.snapshots()
                 if (s.commit_kind == "APPEND" and producer == "none")
                 or (s.commit_kind == "COMPACT" and s.changelog_manifest_list)]
    assert [b.snapshot_id for b in got] == producing
    assert any(s.commit_kind == "COMPACT" for s in table.snapshots.snapshots())
    assert [rows(b) for b in got] == expected
    assert not any(b.full for b in got)


def test_latest_full_reads_the_latest_in_full_then_changes(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"changelog-producer": "lookup"})
    rng = random.Random(7)
    first, later = random_batches(rng, 3), random_batches(rng, 2)
    state: dict[int, str] = {}
    for b in first:
        write(table, b)
        apply(state, b)
    expected = [full_rows(state)] + [lookup_changes(state, b) for b in later]
    latest = table.snapshots.latest_id()  # the compaction after the third write
    got = run(table, later, max_snapshots=3)  # scan.mode default = latest-full
    assert [b.full for b in got] == [True, False, False]
    assert got[0].snapshot_id == latest
    assert [rows(b) for b in got] == expected


def test_latest_reads_only_what_commits_after_start(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    rng = random.Random(8)
    for b in random_batches(rng, 2):
        write(table, b)
    later = random_batches(rng, 2)
    got = run(table, later, max_snapshots=2, mode="latest")
    assert [b.snapshot_id for b in got] == [3, 4]
    assert [rows(b) for b in got] == [stored_records(b) for b in later]


def test_from_snapshot_full(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    rng = random.Random(9)
    batches = random_batches(rng, 3)
    state: dict[int, str] = {}
    for b in batches:
        write(table, b)
    apply(state, batches[0])
    got = run(table, [], max_snapshots=3, mode="from-snapshot-full", snapshot_id=1)
    assert [(b.snapshot_id, b.full) for b in got] == [(1, True), (2, False), (3, False)]
    assert rows(got[0]) == full_rows(state)
    assert [rows(b) for b in got[1:]] == [stored_records(b) for b in batches[1:]]


def test_from_timestamp_starts_at_the_first_snapshot_committed_at_or_after(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    rng = random.Random(10)
    batches = random_batches(rng, 3)
    write(table, batches[0])
    time.sleep(0.02)
    middle = int(time.time() * 1000)
    time.sleep(0.02)
    for b in batches[1:]:
        write(table, b)
    assert table.snapshots.snapshot(1).time_millis < middle <= table.snapshots.snapshot(2).time_millis
    got = run(table, [], max_snapshots=2, mode="from-timestamp", timestamp_millis=middle)
    assert [b.snapshot_id for b in got] == [2, 3]
    assert [rows(b) for b in got] == [stored_records(b) for b in batches[1:]]


def test_compacted_full_waits_for_a_compaction(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"write-only": "true"})
    rng = random.Random(11)
    batches = random_batches(rng, 3)
    state: dict[int, str] = {}
    write(table, batches[0])
    apply(state, batches[0])

    def compact_then_write() -> None:
        table.compact(full=True)
        write(table, batches[2])

    script = Script([lambda: write(table, batches[1]), compact_then_write])
    apply(state, batches[1])
    settings = resolve_settings(table.schema.options, mode="compacted-full", poll_seconds=0.01)
    got = list(follow(table, settings, max_snapshots=2, sleep=script))
    assert [(b.snapshot_id, b.commit_kind, b.full) for b in got] == [(3, "COMPACT", True), (4, "APPEND", False)]
    assert rows(got[0]) == full_rows(state)
    assert rows(got[1]) == stored_records(batches[2])


def test_overwrite_is_skipped_unless_streaming_read_overwrite(tmp_path: Path) -> None:
    for read_overwrite in ("false", "true"):
        table = make_table(tmp_path / read_overwrite, **{"streaming-read-overwrite": read_overwrite})
        write(table, [("+I", 1, "a")])
        table.write(to_arrow([("+I", 2, "b")]).drop_columns(["op"]), mode="overwrite")
        write(table, [("+I", 3, "c")])
        got = run(table, [], max_snapshots=3 if read_overwrite == "true" else 2, mode="from-snapshot", snapshot_id=1)
        expected = [1, 2, 3] if read_overwrite == "true" else [1, 3]
        assert [b.snapshot_id for b in got] == expected


def test_select_and_where_apply_to_every_batch(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    write(table, [("+I", 1, "a"), ("+I", 2, "b")])
    settings = resolve_settings(table.schema.options, poll_seconds=0.01)
    script = Script([lambda: write(table, [("+I", 3, "c"), ("+I", 4, "d")])])
    got = list(follow(table, settings, max_snapshots=2, select=["v"], where="id IN (2, 4)", sleep=script))
    assert [b.rows.to_pylist() for b in got] == [[{"_row_kind": "+I", "v": "b"}], [{"_row_kind": "+I", "v": "d"}]]


def test_table_options_are_the_defaults(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    for b in random_batches(random.Random(12), 3):
        write(table, b)
    table.alter([SetOption("scan.mode", "from-snapshot"), SetOption("scan.snapshot-id", "2"),
                 SetOption("continuous.discovery-interval", "10 ms")])
    settings = resolve_settings(table.schema.options)
    assert (settings.mode, settings.snapshot_id, settings.poll_seconds) == ("from-snapshot", 2, 0.01)
    flags_win = resolve_settings(table.schema.options, mode="latest", poll_seconds=2.0)
    assert (flags_win.mode, flags_win.poll_seconds) == ("latest", 2.0)
    # A batch scan of a table whose options name a snapshot reads that snapshot, as in Paimon.
    assert table.scan().num_rows == Table.open("db.t", warehouse=str(tmp_path / "wh")).scan(snapshot_id=2).num_rows


@pytest.mark.parametrize("flags, message", [
    ({"mode": "incremental"}, "scan mode 'incremental' is not supported"),
    ({"mode": "from-snapshot"}, "needs a snapshot id"),
    ({"mode": "from-timestamp"}, "needs a time"),
    ({"consumer_id": "a/b"}, "consumer id"),
    ({"poll_seconds": 0}, "poll interval must be positive"),
])
def test_bad_settings_are_usage_errors(tmp_path: Path, flags: dict, message: str) -> None:
    table = make_table(tmp_path)
    with pytest.raises(UsageError, match=message):
        resolve_settings(table.schema.options, **flags)


def test_a_start_that_expired_is_not_found(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    for b in random_batches(random.Random(13), 4):
        write(table, b)
    table.expire(retain_min=2, older_than="0s", dry_run=False)
    assert table.snapshots.earliest_id() == 3
    with pytest.raises(NotFoundError, match="snapshot 1 .* has expired"):
        list(follow(table, resolve_settings(table.schema.options, mode="from-snapshot", snapshot_id=1),
                    max_snapshots=1))


# ---- consumers ------------------------------------------------------------------------
def consume(table: Table, consumer: str, count: int, actions: list[Callable[[], Any]] | None = None,
            **flags: Any) -> Iterator[ChangeBatch]:
    settings = resolve_settings(table.schema.options, consumer_id=consumer, poll_seconds=0.01, **flags)
    script = Script(actions or [])
    return follow(table, settings, max_snapshots=count, sleep=script, should_stop=lambda: script.polls > 50)


def test_consumer_position_moves_only_past_finished_batches(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    for b in random_batches(random.Random(14), 3):
        write(table, b)
    consumers = ConsumerManager(table.file_io, table.path)
    stream = consume(table, "c1", 3, mode="from-snapshot", snapshot_id=1)
    first = next(stream)
    assert first.snapshot_id == 1 and consumers.next_snapshot("c1") == 1
    second = next(stream)  # asking for the next batch means the first one is done
    assert second.snapshot_id == 2 and consumers.next_snapshot("c1") == 2
    stream.close()  # the caller stopped while handling snapshot 2: it is read again on restart
    resumed = next(consume(table, "c1", 1, mode="latest"))  # the recorded position wins over the mode
    assert resumed.snapshot_id == 2


def test_expire_keeps_what_a_consumer_still_needs_and_it_resumes_without_a_gap(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "0s",
                                    "write-only": "true"})
    batches = random_batches(random.Random(15), 8)
    for b in batches[:3]:
        write(table, b)
    seen = list(consume(table, "slow", 2, mode="from-snapshot", snapshot_id=1))
    assert [b.snapshot_id for b in seen] == [1, 2]
    assert ConsumerManager(table.file_io, table.path).next_snapshot("slow") == 3
    for b in batches[3:]:
        write(table, b)
    result = table.expire(older_than="0s", max_deletes=100, dry_run=False)
    # Paimon's rule: expire nothing from the consumer's nextSnapshot on.
    assert result.snapshots_expired == [1, 2]
    assert table.snapshots.earliest_id() == 3
    seen += list(consume(table, "slow", 6))
    assert [b.snapshot_id for b in seen] == list(range(1, 9))
    assert [rows(b) for b in seen] == [stored_records(b) for b in batches]
    # Without the consumer the same expiration goes down to the newest snapshot.
    ConsumerManager(table.file_io, table.path).delete("slow")
    assert table.expire(older_than="0s", max_deletes=100, dry_run=False).snapshots_expired == list(range(3, 8))


def test_consumer_expiration_time(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "0s",
                                    "consumer.expiration-time": "1h", "write-only": "true"})
    for b in random_batches(random.Random(16), 4):
        write(table, b)
    consumers = ConsumerManager(table.file_io, table.path)
    consumers.record("stale", 1)
    consumers.record("fresh", 3)
    two_hours_ago = time.time() - 7200
    os.utime(consumers.path("stale"), (two_hours_ago, two_hours_ago))
    dry = table.expire(older_than="0s", dry_run=True)
    assert dry.consumers_expired == ["stale"] and dry.snapshots_expired == [1, 2]
    assert consumers.next_snapshot("stale") == 1  # a dry run deletes nothing
    real = table.expire(older_than="0s", dry_run=False)
    assert real.consumers_expired == ["stale"] and real.snapshots_expired == [1, 2]
    assert consumers.next_snapshot("stale") is None and consumers.next_snapshot("fresh") == 3


def test_resuming_a_consumer_whose_position_expired_is_not_found(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    for b in random_batches(random.Random(17), 4):
        write(table, b)
    table.expire(retain_min=1, older_than="0s", dry_run=False)
    ConsumerManager(table.file_io, table.path).record("late", 2)
    with pytest.raises(NotFoundError, match="consumer late's next snapshot 2"):
        next(consume(table, "late", 1))


def test_consumer_ignore_progress(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"consumer.ignore-progress": "true"})
    for b in random_batches(random.Random(18), 3):
        write(table, b)
    ConsumerManager(table.file_io, table.path).record("c", 2)
    got = next(consume(table, "c", 1))
    assert got.full and got.snapshot_id == 3


# ---- bounded watermark ------------------------------------------------------------------
def test_bounded_watermark_stops_at_the_first_snapshot_past_it(tmp_path: Path) -> None:
    from core.ops.stream_write import StreamWriter

    table = make_table(tmp_path, **{"write-only": "true"})
    writer = StreamWriter(table, "stream-1", row_kind_column="op")
    watermarks = [1000, 2000, 1500, 3000, 4000]  # a late batch cannot move the watermark back
    batches = random_batches(random.Random(19), len(watermarks))
    for n, (b, w) in enumerate(zip(batches, watermarks), start=1):
        writer.write_batch(to_arrow(b), identifier=n, watermark=w)
    assert [s.watermark for s in table.snapshots.snapshots()] == [1000, 2000, 2000, 3000, 4000]
    for bound, readable in ((2000, 3), (2999, 3), (3000, 4), (999, 0)):
        settings = resolve_settings(table.schema.options, mode="from-snapshot", snapshot_id=1,
                                    bounded_watermark=bound, poll_seconds=0.01)
        got = list(follow(table, settings, sleep=lambda _s: pytest.fail("a bounded follow must not wait")))
        assert [b.snapshot_id for b in got] == list(range(1, readable + 1))
        assert [rows(b) for b in got] == [stored_records(b) for b in batches[:readable]]
    # The table option is the default bound, as Paimon's scan.bounded.watermark.
    table.alter([SetOption("scan.bounded.watermark", "2500")])
    settings = resolve_settings(table.schema.options, mode="from-snapshot", snapshot_id=1, poll_seconds=0.01)
    assert [b.snapshot_id for b in follow(table, settings)] == [1, 2, 3]


def test_table_follow_is_the_python_api(tmp_path: Path) -> None:
    table = make_table(tmp_path)
    batches = random_batches(random.Random(20), 3)
    for b in batches:
        write(table, b)
    got = list(table.follow(mode="from-snapshot", snapshot_id=2, max_snapshots=2, consumer_id="py"))
    assert [rows(b) for b in got] == [stored_records(b) for b in batches[1:]]
    assert ConsumerManager(table.file_io, table.path).next_snapshot("py") == 4
