"""Automatic tags (tag.automatic-creation) on real tables under tmp_path.

Commit times come from a clock the tests set (``core.commit.now_millis``), so no test sleeps.
Every expected tag (name -> snapshot id) is worked out by hand from Java Paimon 1.0's rules
(core/ops/auto_tags.py's docstring), and written next to the case; the Java oracle checks the
same rules in tests/interop/test_auto_tags_interop.py.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest

import core.commit
from core.commit import FileStoreCommit
from core.errors import UnsupportedTableError
from core.ops.auto_tags import (AutoTagOptions, auto_tag_after_commit, auto_tag_options, previous_period,
                                tag_name, tag_time)
from core.evolution import RemoveOption, SetOption
from core.ops.alter import alter
from core.ops.create import create
from core.ops.tags import list_tags
from core.ops.write import write_and_commit
from core.engines import choose_engine
from core.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


class Clock:
    """The commit clock: local naive times, as Java's LocalDateTime in the system zone."""

    def __init__(self) -> None:
        self.now = dt.datetime(2024, 5, 1, 10, 0)

    def millis(self) -> int:
        return int(self.now.timestamp() * 1000)  # a naive datetime is local time


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(core.commit, "now_millis", c.millis)
    return c


def make(tmp_path: Path, **options: str) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", options=options)
    return Table.open("db.t", warehouse=str(tmp_path / "wh"))


def write_at(table: Table, clock: Clock, when: dt.datetime, n: int = 1) -> None:
    clock.now = when
    table.write(pa.table({"id": [n], "v": [f"v{n}"]}, schema=SCHEMA))


def tags(table: Table) -> dict[str, int]:
    return {t.tag: t.snapshot_id for t in list_tags(table)}


def T(day: int, hour: int = 0, minute: int = 0) -> dt.datetime:
    return dt.datetime(2024, 5, day, hour, minute)


# ---- names and periods ----------------------------------------------------------------------

@pytest.mark.parametrize("period,formatter,time,name", [
    ("daily", "with_dashes", T(1, 13, 45), "2024-04-30"),
    ("daily", "without_dashes", T(1, 13, 45), "20240430"),
    ("hourly", "with_dashes", T(1, 13, 45), "2024-05-01 12"),
    ("hourly", "without_dashes", T(1, 0, 5), "20240430 23"),
    ("two-hours", "with_dashes", T(1, 13, 45), "2024-05-01 10"),  # floor to 12:00, minus two hours
    ("two-hours", "without_dashes", T(1, 12, 0), "2024-05-01 10"),  # two-hours always has dashes
])
def test_previous_period_names(period: str, formatter: str, time: dt.datetime, name: str) -> None:
    opts = AutoTagOptions(mode="process-time", period=period, formatter=formatter)
    assert tag_name(previous_period(time, opts), opts) == name
    assert tag_time(name, opts) == previous_period(time, opts)


@pytest.mark.parametrize("period,formatter,name,time", [
    ("daily", "with_dashes", "2024-13-01", dt.datetime(2025, 1, 1)),  # Java parses leniently
    ("daily", "with_dashes", "2024-05-01 07", T(1)),  # the daily handler reads the text before a space
    ("hourly", "with_dashes", "2024-05-01 24", T(2)),
    ("hourly", "without_dashes", "20240501 07", T(1, 7)),
    ("daily", "with_dashes", "day-1", None),
    ("daily", "with_dashes", "batch-write-2024-05-01", None),
    ("hourly", "with_dashes", "2024-05-01", None),
    ("daily", "without_dashes", "2024-05-01", None),
])
def test_which_names_are_auto_tags(period: str, formatter: str, name: str, time: dt.datetime | None) -> None:
    assert tag_time(name, AutoTagOptions(mode="process-time", period=period, formatter=formatter)) == time


# ---- process-time -----------------------------------------------------------------------------

def test_daily_tags_follow_commit_times(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time"})
    write_at(t, clock, T(1, 10))  # s1: no tag yet -> tag the day before: 2024-04-30; next 05-01
    assert tags(t) == {"2024-04-30": 1}
    write_at(t, clock, T(1, 23, 59))  # s2: before 05-02 00:00 -> nothing
    write_at(t, clock, T(2, 0, 0))  # s3: at 05-02 00:00 -> 2024-05-01; next 05-02
    write_at(t, clock, T(2, 8))  # s4: nothing
    write_at(t, clock, T(4, 9))  # s5: past 05-03 -> the day before its time, 2024-05-03 (05-02 skipped)
    assert tags(t) == {"2024-04-30": 1, "2024-05-01": 3, "2024-05-03": 5}


def test_automatic_completion_fills_skipped_periods_one_per_snapshot(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time", "tag.automatic-completion": "true"})
    write_at(t, clock, T(1, 10))  # s1 -> 2024-04-30 (no next tag yet)
    write_at(t, clock, T(4, 9))  # s2 -> the next tag, 2024-05-01
    write_at(t, clock, T(4, 10))  # s3: 05-04 10:00 >= 05-03 -> 2024-05-02
    write_at(t, clock, T(4, 11))  # s4: >= 05-04 -> 2024-05-03
    write_at(t, clock, T(4, 12))  # s5: not >= 05-05 -> nothing
    assert tags(t) == {"2024-04-30": 1, "2024-05-01": 2, "2024-05-02": 3, "2024-05-03": 4}


def test_hourly_with_delay(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                          "tag.creation-delay": "10 min"})
    write_at(t, clock, T(1, 10, 5))  # s1 -> 09; next 10:00
    write_at(t, clock, T(1, 11, 5))  # s2: 10:55 < 11:00 -> nothing
    write_at(t, clock, T(1, 11, 15))  # s3: 11:05 >= 11:00 -> 10; next 11:00
    write_at(t, clock, T(1, 12, 9))  # s4: 11:59 < 12:00 -> nothing
    write_at(t, clock, T(1, 12, 10))  # s5: 12:00 >= 12:00 -> 11
    assert tags(t) == {"2024-05-01 09": 1, "2024-05-01 10": 3, "2024-05-01 11": 5}


def test_two_hours_and_daily_without_dashes(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time", "tag.creation-period": "two-hours",
                          "tag.period-formatter": "without_dashes"})
    write_at(t, clock, T(1, 10, 30))  # s1: floor 10:00, minus 2h -> 08; next 10:00
    write_at(t, clock, T(1, 11, 59))  # s2: < 12:00 -> nothing
    write_at(t, clock, T(1, 12, 0))  # s3 -> 10
    assert tags(t) == {"2024-05-01 08": 1, "2024-05-01 10": 3}

    u = Table.locate("db.u", warehouse=str(tmp_path / "wh"))
    create(u, "id BIGINT, v STRING", options={"tag.automatic-creation": "process-time",
                                              "tag.period-formatter": "without_dashes"})
    write_at(u, clock, T(1, 10))
    write_at(u, clock, T(2, 10))
    # A name Java makes that lakectl's `tag create` would refuse (a number): made all the same,
    # and `tag delete` takes it.
    assert tags(u) == {"20240430": 1, "20240501": 2}
    from core.ops.tags import delete_tag

    assert delete_tag(u, "20240430").snapshot_id == 1
    assert tags(u) == {"20240501": 2}


def test_num_retained_max_deletes_oldest_auto_tags_only(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                          "tag.num-retained-max": "2"})
    write_at(t, clock, T(1, 10))  # s1 -> 09
    t.tags.create("keep-me", t.snapshots.snapshot(1))  # a manual tag: not counted, never deleted
    write_at(t, clock, T(1, 11))  # s2 -> 10
    write_at(t, clock, T(1, 12))  # s3 -> 11; three auto tags: 09 goes
    write_at(t, clock, T(1, 13))  # s4 -> 12; 10 goes
    assert tags(t) == {"keep-me": 1, "2024-05-01 11": 3, "2024-05-01 12": 4}


def test_existing_auto_tag_sets_where_creation_resumes(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path)
    write_at(t, clock, T(1, 10))  # s1, mode none: no tag
    t.tags.create("2024-04-20", t.snapshots.snapshot(1))  # looks like an auto tag: next tag 04-21
    alter(t, [SetOption("tag.automatic-creation", "process-time")])
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    write_at(t, clock, T(1, 11))  # s2: 05-01 11:00 >= 04-22 -> the day before, 2024-04-30
    write_at(t, clock, T(1, 12))  # s3: < 05-02 -> nothing
    assert tags(t) == {"2024-04-20": 1, "2024-04-30": 2}


def test_a_commit_without_its_tag_is_caught_up_by_the_next(tmp_path: Path, clock: Clock) -> None:
    """A crash after the snapshot commit and before the tag step: the table reads the same, and
    the next commit tags the snapshot that should have been tagged, not itself."""
    t = make(tmp_path, **{"tag.automatic-creation": "process-time"})
    write_at(t, clock, T(1, 10))  # s1 -> 2024-04-30
    # s2 lands at 05-02 09:00 but its process dies before the tag step: a bare commit.
    clock.now = T(2, 9)
    data = pa.table({"id": [2], "v": ["v2"]}, schema=SCHEMA)
    engine, _ = choose_engine(None)
    from core.ops import write as write_module

    real = write_module.after_commit
    write_module.after_commit = lambda *a, **k: []
    try:
        write_and_commit(t, data, engine)
    finally:
        write_module.after_commit = real
    assert tags(t) == {"2024-04-30": 1}
    assert sorted(t.scan().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": "v1"}, {"id": 2, "v": "v2"}]
    write_at(t, clock, T(2, 10), n=3)  # s3: the step now runs over s2 and s3; s2 gets 2024-05-01
    assert tags(t) == {"2024-04-30": 1, "2024-05-01": 2}


def test_snapshots_expired_before_tagging_are_skipped(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    write_at(t, clock, T(1, 10))
    write_at(t, clock, T(2, 10), n=2)  # s1 expired by now
    alter(t, [SetOption("tag.automatic-creation", "process-time")])
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    write_at(t, clock, T(3, 10), n=3)  # s3 (s2 expired by its own commit): from the earliest, s3
    assert tags(t) == {"2024-05-02": 3}


# ---- watermark ----------------------------------------------------------------------------

def test_watermark_mode_uses_the_snapshot_watermark(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "watermark", "tag.creation-period": "hourly",
                          "sink.watermark-time-zone": "+08:00"})
    write_at(t, clock, T(1, 10))  # no watermark: no tag (all lakectl batch writes)
    assert tags(t) == {}
    engine, _ = choose_engine(None)
    data = pa.table({"id": [2], "v": ["v2"]}, schema=SCHEMA)
    # 2024-05-01T02:30Z is 10:30 at +08:00 -> previous hour 09
    wm = int(dt.datetime(2024, 5, 1, 2, 30, tzinfo=dt.timezone.utc).timestamp() * 1000)
    write_and_commit(t, data, engine, commit_user="u", identifier=1, watermark=wm)
    assert tags(t) == {"2024-05-01 09": 2}
    write_and_commit(t, data, engine, commit_user="u", identifier=2, watermark=wm + 3600_000)  # 11:30
    assert tags(t) == {"2024-05-01 09": 2, "2024-05-01 10": 3}


# ---- batch --------------------------------------------------------------------------------

def test_batch_mode_tags_the_latest_snapshot_of_each_day(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "batch", "tag.num-retained-max": "2"})
    write_at(t, clock, T(1, 10))
    assert tags(t) == {"batch-write-2024-05-01": 1}
    write_at(t, clock, T(1, 11), n=2)  # the same day: the tag moves to s2
    assert tags(t) == {"batch-write-2024-05-01": 2}
    t.tags.create("manual", t.snapshots.snapshot(1))  # batch mode's max counts every tag
    write_at(t, clock, T(2, 11), n=3)  # three tags: the oldest snapshot's (manual, s1) goes
    assert tags(t) == {"batch-write-2024-05-01": 2, "batch-write-2024-05-02": 3}
    engine, _ = choose_engine(None)
    clock.now = T(3, 9)
    write_and_commit(t, pa.table({"id": [4], "v": ["x"]}, schema=SCHEMA), engine, commit_user="s", identifier=7)
    assert tags(t) == {"batch-write-2024-05-01": 2, "batch-write-2024-05-02": 3}  # a streaming commit: no tag
    from core.ops.truncate import truncate

    clock.now = T(4, 9)
    truncate(t, dry_run=False)  # not a batch sink's job (Java's truncateTable): no tag either
    assert tags(t) == {"batch-write-2024-05-01": 2, "batch-write-2024-05-02": 3}
    from core.ops.compact import compact

    write_at(t, clock, T(5, 9), n=5)  # s6 -> batch-write-2024-05-05; s2's tag goes (max 2)
    write_at(t, clock, T(5, 9, 30), n=6)  # s7: the tag moves there
    clock.now = T(5, 10)
    assert compact(t).snapshot_id == 8  # a batch compaction job: the tag moves to s8
    assert tags(t) == {"batch-write-2024-05-02": 3, "batch-write-2024-05-05": 8}


# ---- expiration by time, failures, options -------------------------------------------------

def test_commit_expires_tags_past_their_own_time_retained(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.default-time-retained": "1 h"})  # mode none: Java expires all the same
    write_at(t, clock, T(1, 10))
    old = dt.datetime.now() - dt.timedelta(hours=2)
    t.tags.create("old-ttl", t.snapshots.snapshot(1), time_retained=dt.timedelta(hours=1), create_time=old)
    t.tags.create("old-no-ttl", t.snapshots.snapshot(1), create_time=old)  # the table default is not read
    t.tags.create("fresh-ttl", t.snapshots.snapshot(1), time_retained=dt.timedelta(hours=1))
    write_at(t, clock, T(1, 11), n=2)
    assert tags(t) == {"old-no-ttl": 1, "fresh-ttl": 1}


def test_auto_tags_carry_the_default_time_retained(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time", "tag.default-time-retained": "7 d"})
    write_at(t, clock, T(1, 10))
    assert t.tags.tag("2024-04-30").time_retained == dt.timedelta(days=7)


def test_tag_failure_never_fails_the_write(tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time"})
    write_at(t, clock, T(1, 10))  # s1 -> 2024-04-30
    t.tags.create("2024-04-29", t.snapshots.snapshot(1))  # two auto tags on one snapshot: Java stops
    with caplog.at_level(logging.WARNING):
        write_at(t, clock, T(3, 10), n=2)
    assert t.latest_snapshot().id == 2
    assert "more than 1 auto-created tags of the same snapshot" in caplog.text
    assert tags(t) == {"2024-04-29": 1, "2024-04-30": 1}


def test_write_only_tables_get_no_tags(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time", "write-only": "true"})
    write_at(t, clock, T(1, 10))
    assert tags(t) == {}


@pytest.mark.parametrize("options,key", [
    ({"tag.automatic-creation": "sometimes"}, "tag.automatic-creation"),
    ({"tag.automatic-creation": "process-time", "tag.creation-period": "weekly"}, "tag.creation-period"),
    ({"tag.automatic-creation": "process-time", "tag.creation-delay": "1 d"}, "tag.creation-delay"),
    ({"tag.automatic-creation": "process-time", "tag.creation-period": "hourly", "tag.creation-delay": "2 h"},
     "tag.creation-delay"),
    ({"tag.num-retained-max": "many"}, "tag.num-retained-max"),
])
def test_options_java_refuses_are_refused_before_writing(tmp_path: Path, clock: Clock, options: dict[str, str],
                                                        key: str) -> None:
    # lakectl refuses these at create and alter; another engine may have written them.
    t = make(tmp_path)
    schema_file = Path(t.path) / "schema" / "schema-0"
    raw = json.loads(schema_file.read_text())
    raw["options"].update(options)
    schema_file.write_text(json.dumps(raw))
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    with pytest.raises(UnsupportedTableError, match=key):
        write_at(t, clock, T(1, 10))
    assert t.latest_snapshot() is None


def test_options_read_case_insensitively_with_java_defaults() -> None:
    assert auto_tag_options({}) == AutoTagOptions()
    opts = auto_tag_options({"tag.automatic-creation": "PROCESS-TIME", "tag.creation-period": "Hourly",
                             "tag.creation-delay": "59 min"})
    assert (opts.mode, opts.period, opts.delay) == ("process-time", "hourly", dt.timedelta(minutes=59))
    # A delay as long as the period is fine where no period is used.
    assert auto_tag_options({"tag.automatic-creation": "batch", "tag.creation-delay": "2 d"}).mode == "batch"


# ---- every commit path ----------------------------------------------------------------------

def test_compact_truncate_and_delete_run_the_step_branches_do_not(tmp_path: Path, clock: Clock) -> None:
    from core.ops.branches import create_branch
    from core.ops.compact import compact
    from core.ops.delete import delete
    from core.ops.truncate import truncate

    t = make(tmp_path, **{"tag.automatic-creation": "process-time"})
    write_at(t, clock, T(1, 10))  # s1 -> 2024-04-30
    write_at(t, clock, T(1, 11), n=2)
    clock.now = T(2, 1)
    compact(t)  # s3 (COMPACT) -> 2024-05-01
    assert tags(t) == {"2024-04-30": 1, "2024-05-01": 3}
    clock.now = T(3, 1)
    delete(t, "id = 1")  # s4 -> 2024-05-02
    assert tags(t)["2024-05-02"] == 4
    clock.now = T(4, 1)
    truncate(t, dry_run=False)  # s5 -> 2024-05-03
    assert tags(t)["2024-05-03"] == 5

    create_branch(t, "b")
    b = t.on_branch("b")
    before = tags(t)
    write_at(b, clock, T(6, 1), n=9)  # Java would put 2024-05-05 -> the branch's s6 into main: none here
    assert tags(b) == {} and tags(t) == before


def test_step_reports_what_it_did(tmp_path: Path, clock: Clock) -> None:
    t = make(tmp_path, **{"tag.automatic-creation": "process-time", "write-only": "true"})
    write_at(t, clock, T(1, 10))
    alter(t, [RemoveOption("write-only")])
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    result = auto_tag_after_commit(t)
    assert result is not None and result.created == (("2024-04-30", 1),) and result.deleted == ()
    assert auto_tag_after_commit(t) is None  # nothing left to do


def test_create_and_alter_refuse_bad_tag_options(tmp_path: Path) -> None:
    from core.errors import UsageError

    with pytest.raises(UsageError, match="tag.creation-period"):
        make(tmp_path, **{"tag.creation-period": "weekly"})
    t = make(tmp_path, **{"tag.automatic-creation": "process-time"})
    with pytest.raises(UsageError, match="tag.creation-delay"):
        alter(t, [SetOption("tag.creation-delay", "1 d")])


# ---- faults between the commit and its tag ---------------------------------------------------

def seeded_daily(tmp_path: Path) -> Table:
    """s1 written with automatic tags off and tagged 2024-01-01 (an automatic tag's name), then
    daily process-time tags switched on: the next commit today is past 2024-01-02, so it is
    tagged with the day before its own."""
    t = make(tmp_path)
    t.write(pa.table({"id": [1], "v": ["v1"]}, schema=SCHEMA))
    t.tags.create("2024-01-01", t.snapshots.snapshot(1))
    alter(t, [SetOption("tag.automatic-creation", "process-time")])
    return Table.open("db.t", warehouse=str(tmp_path / "wh"))


def caught_up(t: Table) -> dict[str, int]:
    """What Java would hold after s2 and s3 (real commit times): s2 gets the day before its own
    day; s3 only if midnight passed between them."""
    d2, d3 = (local_date(t.snapshots.snapshot(i).time_millis) for i in (2, 3))
    out = {"2024-01-01": 1, (d2 - dt.timedelta(days=1)).isoformat(): 2}
    if d3 > d2:
        out[(d3 - dt.timedelta(days=1)).isoformat()] = 3
    return out


def local_date(millis: int) -> dt.date:
    return dt.datetime.fromtimestamp(millis / 1000).date()


def test_killed_between_commit_and_tag(tmp_path: Path) -> None:
    """The write's process is killed right before it creates the tag file (the third create:
    the commit's busy marker is the first, the snapshot the second): the snapshot is there and reads, no tag is; the next write tags
    that snapshot, not its own."""
    import os
    import subprocess
    import sys

    t = seeded_daily(tmp_path)
    (tmp_path / "in.csv").write_text("id,v\n2,v2\n")
    env = dict(os.environ, LAKECTL_FAULT="kill:create:3")
    proc = subprocess.run([sys.executable, "-m", "lakectl", "-w", str(tmp_path / "wh"), "write", "db.t",
                           "-i", str(tmp_path / "in.csv")], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    assert t.snapshots.latest_id() == 2 and tags(t) == {"2024-01-01": 1}
    assert sorted(r["id"] for r in t.scan().to_pylist()) == [1, 2]
    t.write(pa.table({"id": [3], "v": ["v3"]}, schema=SCHEMA))
    assert tags(t) == caught_up(t)


def test_failing_tag_write_leaves_the_commit_and_is_caught_up(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from core.fileio import inject_fault

    t = seeded_daily(tmp_path)
    with caplog.at_level(logging.WARNING), inject_fault("fail", "create", 3):  # marker, snapshot, tag
        result = t.write(pa.table({"id": [2], "v": ["v2"]}, schema=SCHEMA))
    assert result.snapshot_id == 2 and tags(t) == {"2024-01-01": 1}
    assert "injected fault" in caplog.text
    t.write(pa.table({"id": [3], "v": ["v3"]}, schema=SCHEMA))
    assert tags(t) == caught_up(t)


@pytest.mark.parametrize("zone,offset_hours", [("UTC", 0), ("GMT-08:00", -8), ("+08:00", 8), ("UTC+8", 8),
                                               ("Asia/Shanghai", 8)])
def test_watermark_time_zones(zone: str, offset_hours: int) -> None:
    opts = auto_tag_options({"tag.automatic-creation": "watermark", "sink.watermark-time-zone": zone})
    moment = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    assert opts.watermark_zone.utcoffset(moment) == dt.timedelta(hours=offset_hours)


def test_an_unknown_watermark_zone_is_refused() -> None:
    from core.errors import UsageError

    with pytest.raises(UsageError, match="sink.watermark-time-zone"):
        auto_tag_options({"tag.automatic-creation": "watermark", "sink.watermark-time-zone": "Mars/Olympus"})
    assert auto_tag_options({"sink.watermark-time-zone": "Mars/Olympus"}).mode == "none"  # not read then
