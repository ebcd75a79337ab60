"""Decoupled changelog retention between lakectl, Java Paimon 1.0 and pypaimon 2.1.

- lakectl expires a decoupled table: Java's streaming read from snapshot 1 (which now lies in
  ``changelog/``) returns what it returned before the expiry, and pypaimon reads the
  retained snapshots as lakectl does.
- Java expires a decoupled table (writing ``changelog-N`` itself): lakectl follows it from
  snapshot 1 as it did before, ``check`` passes, and lakectl's expire-changelogs leaves a
  table Java still streams from the earliest changelog kept.
- lakectl's ``expire-changelogs --delete-all`` (Java 1.0 has no ``expireAll``) on Java's
  changelogs: Java reads every snapshot and streams from the earliest as before, and keeps
  expiring and committing on the table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, java_read_snapshots, java_run
from oracle import official_read

from core.ops.check import check
from core.ops.create import create
from core.ops.expire import expire_snapshots
from core.ops.expire_changelogs import expire_changelogs
from core.ops.follow import follow, plan_start, resolve_settings
from core.ops.orphans import remove_orphan_files
from core.table import Table

pytestmark = pytest.mark.interop

DECOUPLED = {"changelog.num-retained.max": "100", "changelog.time-retained": "1d"}


def _write(t: Table, n: int = 6) -> None:
    for i in range(n):
        t.write(pa.table({"id": pa.array([i % 3, 10 + i], pa.int64()), "v": [f"a{i}", f"b{i}"]}))


def _follow(t: Table, start: int) -> list[tuple[int, list[str]]]:
    settings = resolve_settings(t.schema.options, mode="from-snapshot", snapshot_id=start)
    return [(b.snapshot_id, sorted(map(str, b.rows.to_pylist())))
            for b in follow(t, settings, max_snapshots=1000, should_stop=lambda: True, sleep=lambda s: None)]


def _copy(t: Table, where: Path) -> Table:
    c = Table.locate("db.t", warehouse=str(where / "wh"))
    shutil.copytree(t.path, c.path)
    return c


@pytest.mark.parametrize("producer", ["none", "input"])
def test_java_streams_the_changelogs_lakectl_keeps(tmp_path: Path, producer: str) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "1", "changelog-producer": producer, "num-sorted-run.compaction-trigger": "3",
                    **DECOUPLED})
    _write(t)
    before = _copy(t, tmp_path / "before")
    java_before, _ = java_read(before.path, stream_from=1, with_kind=True)
    assert java_before
    result = expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
    assert result.changelogs_written == result.snapshots_expired and 1 in result.snapshots_expired
    java_after, _ = java_read(t.path, stream_from=1, with_kind=True)
    assert java_after == java_before
    # Java's expire_changelogs on lakectl's changelogs: its rule agrees with lakectl's dry run,
    # and what it leaves lakectl checks and follows.
    plan = expire_changelogs(t, retain_min=1, older_than="0s", max_deletes=100, dry_run=True)
    java_run(t.path, [{"op": "expire", "changelogs": True, "retain_min": 1, "older_than_ms": 0,
                       "changelog_retain_min": 1, "changelog_older_than_ms": 0}])
    left = sorted(int(n.name.split("-")[1]) for n in (Path(t.path) / "changelog").iterdir()
                  if n.name.startswith("changelog-"))
    assert left == [i for i in result.snapshots_expired if i not in plan.changelogs_expired]
    assert check(t).ok
    assert _follow(t, left[0]) == [b for b in _follow(before, 1) if b[0] >= left[0]]
    # pypaimon 2.1 reads the snapshots that are left as lakectl does.
    for sid in t.snapshots.list_ids():
        official, _ = official_read(t.path, tmp_path, snapshot=sid)
        assert sorted(official.select(["id", "v"]).to_pylist(), key=lambda r: r["id"]) == \
            sorted(t.scan(snapshot_id=sid).to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("producer", ["none", "input"])
def test_lakectl_follows_the_changelogs_java_keeps(tmp_path: Path, producer: str) -> None:
    path = tmp_path / "wh" / "db.db" / "t"
    rows = [{"op": "write", "rows": [[i % 3, f"a{i}"], [10 + i, f"b{i}"]]} for i in range(6)]
    java_run(path, rows, create={"fields": [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                                 "partitionKeys": [], "primaryKeys": ["id"],
                                 "options": {"bucket": "1", "changelog-producer": producer, **DECOUPLED}})
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    before = _follow(t, 1)
    assert before
    java_run(path, [{"op": "expire", "retain_max": 2, "retain_min": 1, "older_than_ms": 0,
                     "changelog_retain_max": 100, "changelog_older_than_ms": 86_400_000}])
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    written = sorted(int(n.name.split("-")[1]) for n in (Path(t.path) / "changelog").iterdir()
                     if n.name.startswith("changelog-"))
    assert written and written[0] == 1 and t.snapshots.earliest_id() == written[-1] + 1
    hint: Any = (Path(t.path) / "changelog" / "LATEST").read_text()
    assert int(hint) == written[-1]
    assert _follow(t, 1) == before
    assert check(t).ok and check(t).changelogs == len(written)
    assert remove_orphan_files(t, older_than="0s", force=True).files == 0
    assert _follow(t, 1) == before

    # lakectl's expire-changelogs on Java's changelogs: Java streams from the earliest kept.
    done = expire_changelogs(t, retain_min=1, older_than="0s", max_deletes=100)
    assert done.changelogs_expired == written[:-1]
    first = written[-1]
    assert json.loads((Path(t.path) / "changelog" / f"changelog-{first}").read_text())["id"] == first
    java_rows, _ = java_read(t.path, stream_from=first, with_kind=True)
    assert [kind for kind, *_ in java_rows]  # something to read
    assert _follow(t, first) == [b for b in before if b[0] >= first]
    assert check(t).ok


@pytest.mark.parametrize("producer", ["none", "input"])
def test_java_reads_after_lakectl_deletes_every_changelog(tmp_path: Path, producer: str) -> None:
    path = tmp_path / "wh" / "db.db" / "t"
    rows = [{"op": "write", "rows": [[i % 3, f"a{i}"], [10 + i, f"b{i}"]]} for i in range(6)]
    java_run(path, rows, create={"fields": [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                                 "partitionKeys": [], "primaryKeys": ["id"],
                                 "options": {"bucket": "1", "changelog-producer": producer, **DECOUPLED}})
    java_run(path, [{"op": "expire", "retain_max": 2, "retain_min": 1, "older_than_ms": 0,
                     "changelog_retain_max": 100, "changelog_older_than_ms": 86_400_000}])
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    earliest = t.snapshots.earliest_id()
    java_stream, _ = java_read(t.path, stream_from=earliest, with_kind=True)
    java_snapshots = java_read_snapshots(t.path, t.snapshots.list_ids())
    written = [n.name for n in (Path(t.path) / "changelog").iterdir() if n.name.startswith("changelog-")]
    assert written
    done = expire_changelogs(t, delete_all=True)
    assert len(done.changelogs_expired) == len(written)
    assert list((Path(t.path) / "changelog").iterdir()) == []
    assert check(t).ok
    assert java_read(t.path, stream_from=earliest, with_kind=True)[0] == java_stream
    assert java_read_snapshots(t.path, t.snapshots.list_ids()) == java_snapshots
    # Java keeps writing and expiring (writing new changelogs) on what lakectl left.
    java_run(path, [{"op": "write", "rows": [[50, "z"]]},
                    {"op": "expire", "retain_max": 1, "retain_min": 1, "older_than_ms": 0,
                     "changelog_retain_max": 100, "changelog_older_than_ms": 86_400_000}])
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    assert check(t).ok
    assert sorted(map(tuple, java_read(t.path)[0])) == sorted((r["id"], r["v"]) for r in t.scan().to_pylist())
    assert [n.name for n in (Path(t.path) / "changelog").iterdir() if n.name.startswith("changelog-")]


@pytest.mark.parametrize("producer", ["none", "input"])
def test_from_timestamp_starts_where_java_starts(tmp_path: Path, producer: str) -> None:
    """A streaming read started at a time before the earliest snapshot begins in changelog/,
    for Java (its earlierThanTimeMills searches from the earliest changelog) and lakectl."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "1", "changelog-producer": producer, "num-sorted-run.compaction-trigger": "3",
                    **DECOUPLED})
    _write(t)
    expired = expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100).snapshots_expired
    assert len(expired) >= 3
    changelog = Path(t.path) / "changelog"
    times = {i: json.loads((changelog / f"changelog-{i}").read_text())["timeMillis"] for i in expired}
    times.update({s: t.snapshots.snapshot(s).time_millis for s in t.snapshots.list_ids()})
    latest = max(times)
    ordered = sorted(set(times.values()))
    for millis in [0, ordered[1], ordered[len(ordered) // 2], ordered[-1], ordered[-1] + 1]:
        first = min([i for i, ms in times.items() if ms >= millis], default=latest + 1)
        settings = resolve_settings(t.schema.options, mode="from-timestamp", timestamp_millis=millis)
        assert plan_start(t, settings).next_id == first, millis
        java, _ = java_read(t.path, stream_from_timestamp=millis, with_kind=True)
        if first > latest:
            assert java == [], millis
        else:
            assert java == java_read(t.path, stream_from=first, with_kind=True)[0], millis
            assert java  # the start lies in changelog/ or the snapshots, with changes to read
