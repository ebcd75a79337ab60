"""Automatic tags (tag.automatic-creation) against Java Paimon 1.0 and pypaimon.

Java's batch commits (the oracle's ``write`` step) run Java's TagAutoManager, with the real
clock. Two kinds of check:

* Same steps, two tables: where the outcome does not depend on the wall clock (a seed tag
  far in the past and ``tag.automatic-completion``), lakectl's table gets exactly Java's tags.
* Replay: lakectl's tag step run over a copy of Java's table, with Java's automatic tags
  removed, must recreate them (same names, same snapshots): the same commit times go through
  both implementations, so cases that depend on the current day, hour or minute (daily
  tags, ``tag.creation-delay``) are compared exactly without controlling the clock.

``batch`` mode is Flink's batch sink (BatchWriteGeneratorTagOperator), which the oracle's core
API does not run; tests/unit/test_auto_tags.py checks it against hand-computed tags.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run
from oracle import official_read

from core.evolution import SetOption
from core.ops.alter import alter
from core.ops.auto_tags import auto_tag_after_commit, auto_tag_options, tag_time
from core.ops.create import create
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.slow]

SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string())])
FIELDS = [{"name": "id", "type": "INT"}, {"name": "v", "type": "STRING"}]


def java_table(tmp_path: Path, name: str, options: dict[str, str], seed: str | None, writes: int) -> Path:
    """Java: one write with automatic tags off, the seed tag on snapshot 1, the mode switched
    on (as ALTER TABLE SET), then ``writes`` more writes; each write is one batch commit."""
    path = tmp_path / "java" / "db.db" / name
    mode = options["tag.automatic-creation"]
    steps: list[dict[str, Any]] = [{"op": "write", "rows": [[0, "v0"]]}]
    if seed is not None:
        steps.append({"op": "tag", "name": seed, "snapshot": 1})
    steps.append({"op": "set-option", "key": "tag.automatic-creation", "value": mode})
    steps += [{"op": "write", "rows": [[i, f"v{i}"]]} for i in range(1, writes + 1)]
    created = dict(options, **{"tag.automatic-creation": "none"})
    java_run(path, steps, create={"fields": FIELDS, "options": created})
    return path


def lakectl_table(tmp_path: Path, name: str, options: dict[str, str], seed: str | None, writes: int) -> Table:
    """The same steps with lakectl."""
    wh = str(tmp_path / "lakectl")
    t = Table.locate(f"db.{name}", warehouse=wh)
    create(t, "id INT, v STRING", options=dict(options, **{"tag.automatic-creation": "none"}))
    t = Table.open(f"db.{name}", warehouse=wh)
    t.write(pa.table({"id": [0], "v": ["v0"]}, schema=SCHEMA))
    if seed is not None:
        t.tags.create(seed, t.snapshots.snapshot(1))
    alter(t, [SetOption("tag.automatic-creation", options["tag.automatic-creation"])])
    t = Table.open(f"db.{name}", warehouse=wh)
    for i in range(1, writes + 1):
        t.write(pa.table({"id": [i], "v": [f"v{i}"]}, schema=SCHEMA))
    return t


def tags(t: Table) -> dict[str, int]:
    return {tag.name: tag.snapshot.id for tag in t.tags.tags()}


def replayed(tmp_path: Path, java_path: Path, seed: str | None) -> dict[str, int]:
    """lakectl's tag step over a copy of Java's table with its automatic tags removed and the
    seed put back on snapshot 1 (retention may have retired it)."""
    copy = tmp_path / "replay" / "db.db" / java_path.name
    shutil.copytree(java_path, copy)
    t = Table.open(f"db.{java_path.name}", warehouse=str(tmp_path / "replay"))
    opts = auto_tag_options(t.schema.options)
    for name in t.tags.names():
        if tag_time(name, opts) is not None:
            t.tags.delete(name, check_name=False)
    if seed is not None:
        t.tags.create(seed, t.snapshots.snapshot(1))
    auto_tag_after_commit(t)
    return tags(t)


def test_completion_with_retention_gives_javas_tags(tmp_path: Path) -> None:
    """Clock-independent: the seed tag says the next tag is 2024-01-01 11, every later commit is
    far past it, and completion names one hour per snapshot; at most three are kept (the seed,
    named like an automatic tag, counts and goes first)."""
    options = {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
               "tag.automatic-completion": "true", "tag.num-retained-max": "3"}
    seed = "2024-01-01 10"
    java = Table.open("db.completion", warehouse=str(java_table(tmp_path, "completion", options, seed, 4).parents[1]))
    expected = {"2024-01-01 12": 3, "2024-01-01 13": 4, "2024-01-01 14": 5}  # 10 and 11 retired
    assert tags(java) == expected
    ours = lakectl_table(tmp_path, "completion", options, seed, 4)
    assert tags(ours) == expected
    assert replayed(tmp_path, Path(java.path), seed) == expected

    # Java and pypaimon read lakectl's automatic tags as the snapshots they name.
    for name, sid in expected.items():
        rows, meta = java_read(ours.path, tag=name)
        assert rows == [[i, f"v{i}"] for i in range(sid)], name
        data, _ = official_read(ours.path, tmp_path, tag=name)
        assert sorted(data.select(["id", "v"]).to_pylist(), key=lambda r: r["id"]) == \
            [{"id": i, "v": f"v{i}"} for i in range(sid)], name


def daily_expected(t: Table) -> dict[str, int]:
    """By hand, for the seed 2024-01-01 on s1 and commits s2, s3 today: s2 is past 2024-01-02,
    so it gets the day before its own; s3 only if it fell on a later day than s2 (midnight)."""
    d2, d3 = (dt.datetime.fromtimestamp(t.snapshots.snapshot(i).time_millis / 1000).date() for i in (2, 3))
    out = {"2024-01-01": 1, (d2 - dt.timedelta(days=1)).isoformat(): 2}
    if d3 > d2:
        out[(d3 - dt.timedelta(days=1)).isoformat()] = 3
    return out


def test_daily_tags_match_java_on_the_same_commit_times(tmp_path: Path) -> None:
    options = {"tag.automatic-creation": "process-time", "tag.creation-period": "daily"}
    path = java_table(tmp_path, "daily", options, "2024-01-01", 2)
    java = Table.open("db.daily", warehouse=str(path.parents[1]))
    assert tags(java) == daily_expected(java)
    assert replayed(tmp_path, path, "2024-01-01") == tags(java)
    ours = lakectl_table(tmp_path, "daily", options, "2024-01-01", 2)
    assert tags(ours) == daily_expected(ours)


@pytest.mark.parametrize("delay,seed_hours_back", [("30 min", 2), ("0 ms", 2), ("0 ms", None)])
def test_hourly_tags_and_delay_against_the_current_hour(tmp_path: Path, delay: str,
                                                        seed_hours_back: int | None) -> None:
    """With a seed two hours back, the next tag is the last hour: a commit in this hour is
    tagged with the last hour, but with creation-delay 30 min only from half past. Without a
    seed, every snapshot from the earliest is looked at, and the first is tagged with the hour
    before its own. Which case happens depends on when the test runs, so Java's tags are checked
    by hand for what the clock allows and against lakectl's on the same commit times."""
    hour = dt.datetime.now().replace(minute=0, second=0, microsecond=0)
    seed = None if seed_hours_back is None else (hour - dt.timedelta(hours=seed_hours_back)).strftime("%Y-%m-%d %H")
    options = {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
               "tag.creation-delay": delay}
    path = java_table(tmp_path, "hourly", options, seed, 2)
    java = Table.open("db.hourly", warehouse=str(path.parents[1]))
    got = tags(java)
    t1, t2 = (dt.datetime.fromtimestamp(java.snapshots.snapshot(i).time_millis / 1000) for i in (1, 2))
    if seed is None:
        assert got[(t1 - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H")] == 1
    elif delay == "0 ms" and t2.replace(minute=0, second=0, microsecond=0) == hour:
        assert got == {seed: 1, (hour - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H"): 2}
    elif t2 < hour + dt.timedelta(minutes=30):
        assert got == {seed: 1}
    assert replayed(tmp_path, path, seed) == got


def test_watermark_mode_without_watermarks_creates_no_tags(tmp_path: Path) -> None:
    options = {"tag.automatic-creation": "watermark", "tag.creation-period": "hourly"}
    path = java_table(tmp_path, "wm", options, None, 2)
    assert tags(Table.open("db.wm", warehouse=str(path.parents[1]))) == {}
    assert tags(lakectl_table(tmp_path, "wm", options, None, 2)) == {}


def test_on_a_branch_java_tags_main_and_lakectl_tags_nothing(tmp_path: Path) -> None:
    """Java 1.0's committer on a branch walks the branch's snapshots but writes the tags into
    main's tag/ directory (its TagManager has no branch): main, which has no snapshot, gets the
    tag of the branch's snapshot 1. lakectl creates no automatic tag on a branch."""
    from core.ops.branches import create_branch

    options = {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly"}
    path = tmp_path / "java" / "db.db" / "br"
    java_run(path, [{"op": "create-branch", "name": "b"}, {"op": "write", "rows": [[1, "a"]], "branch": "b"}],
             create={"fields": FIELDS, "options": options})
    java = Table.open("db.br", warehouse=str(path.parents[1]))
    branch_s1 = java.on_branch("b").snapshots.snapshot(1)
    hour_before = (dt.datetime.fromtimestamp(branch_s1.time_millis / 1000) - dt.timedelta(hours=1))
    assert java.snapshots.latest_id() is None
    assert tags(java) == {hour_before.strftime("%Y-%m-%d %H"): 1} and tags(java.on_branch("b")) == {}

    wh = str(tmp_path / "lakectl")
    t = Table.locate("db.br", warehouse=wh)
    create(t, "id INT, v STRING", options=options)
    t = Table.open("db.br", warehouse=wh)
    t.write(pa.table({"id": [0], "v": ["v0"]}, schema=SCHEMA))
    before = tags(t)
    create_branch(t, "b")
    t.on_branch("b").write(pa.table({"id": [1], "v": ["v1"]}, schema=SCHEMA))
    assert tags(t) == before and tags(t.on_branch("b")) == {}


def test_every_commit_expires_tags_past_their_own_ttl_as_java(tmp_path: Path) -> None:
    """Java's commit runs TagTimeExpire whatever tag.automatic-creation says: a tag with a create
    time and its own tagTimeRetained that has passed goes; one without a TTL stays (the table's
    tag.default-time-retained is not read for it), and so does one whose TTL has not passed."""
    wh = str(tmp_path / "lakectl")
    t = Table.locate("db.ttl", warehouse=wh)
    create(t, "id INT, v STRING", options={"tag.default-time-retained": "1 h"})
    t = Table.open("db.ttl", warehouse=wh)
    t.write(pa.table({"id": [0], "v": ["v0"]}, schema=SCHEMA))
    old = dt.datetime.now() - dt.timedelta(days=2)
    s1 = t.snapshots.snapshot(1)
    t.tags.create("old-ttl", s1, time_retained=dt.timedelta(hours=1), create_time=old)
    t.tags.create("old-no-ttl", s1, create_time=old)
    t.tags.create("fresh-ttl", s1, time_retained=dt.timedelta(hours=1))
    copy = tmp_path / "copy" / "db.db" / "ttl"
    shutil.copytree(t.path, copy)

    java_run(copy, [{"op": "write", "rows": [[1, "v1"]]}])
    t.write(pa.table({"id": [1], "v": ["v1"]}, schema=SCHEMA))
    expected = {"old-no-ttl": 1, "fresh-ttl": 1}
    assert tags(Table.open("db.ttl", warehouse=str(tmp_path / "copy"))) == expected
    assert tags(t) == expected
