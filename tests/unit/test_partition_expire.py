"""Partition expiration: formatters, patterns, limits, dry runs, refusals, the OVERWRITE."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import UsageError
from core.ops.create import create
from core.ops.partitions import (CHECK_HINT, expire_partitions, expire_partitions_after_commit, parse_duration,
                                 strptime_format)
from core.snapshot import OVERWRITE
from core.table import Table

NOW = datetime(2024, 1, 10, 12, 0, 0)


def table(tmp_path: Path, dts: list[str], *, schema: str = "id BIGINT, dt STRING",
          partition_keys: tuple[str, ...] = ("dt",), options: dict[str, str] | None = None,
          rows: dict[str, list] | None = None) -> Table:
    t = Table.locate("db.p", warehouse=str(tmp_path / "wh"))
    create(t, schema, partition_keys=list(partition_keys), options=options)
    t.write(pa.table(rows or {"id": pa.array(range(len(dts)), pa.int64()), "dt": dts}))
    return t


def dts_of(t: Table, snapshot_id: int | None = None) -> set:
    return {r["dt"] for r in t.scan(snapshot_id=snapshot_id).to_pylist()}


@pytest.mark.parametrize("text, expected", [("7d", timedelta(days=7)), ("1 h", timedelta(hours=1)),
                                            ("30min", timedelta(minutes=30)), ("2 days", timedelta(days=2)),
                                            ("100ms", timedelta(milliseconds=100)), ("5000", timedelta(seconds=5))])
def test_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text, "k") == expected


def test_bad_duration() -> None:
    with pytest.raises(UsageError, match="duration"):
        parse_duration("soon", "partition.expiration-time")


@pytest.mark.parametrize("java, py", [("yyyy-MM-dd", "%Y-%m-%d"), ("yyyyMMdd", "%Y%m%d"),
                                      ("yyyy-MM-dd HH:mm:ss", "%Y-%m-%d %H:%M:%S"),
                                      ("yyyy-MM-dd'T'HH", "%Y-%m-%dT%H"), ("yyyy/MM/dd HH:mm:ss.SSS", "%Y/%m/%d %H:%M:%S.%f")])
def test_formatters(java: str, py: str) -> None:
    assert strptime_format(java) == py


def test_unknown_formatter_letter_is_refused() -> None:
    with pytest.raises(UsageError, match="letter"):
        strptime_format("yyyy-ww")


def test_default_expires_old_dates_as_one_overwrite_and_old_snapshots_still_scan(tmp_path: Path) -> None:
    t = table(tmp_path, ["2024-01-01", "2024-01-02", "2024-01-05", "2024-01-09"])
    result = expire_partitions(t, expiration_time="7d", now=NOW)  # before 2024-01-03 12:00
    assert result.partitions == ({"dt": "2024-01-01"}, {"dt": "2024-01-02"})
    assert result.files_deleted == 2 and result.records_deleted == 2 and not result.dry_run
    snap = t.latest_snapshot()
    assert snap.id == result.snapshot_id == 2 and snap.commit_kind == OVERWRITE
    assert dts_of(t) == {"2024-01-05", "2024-01-09"}
    assert dts_of(t, 1) == {"2024-01-01", "2024-01-02", "2024-01-05", "2024-01-09"}
    again = expire_partitions(t, expiration_time="7d", now=NOW)
    assert again.snapshot_id is None and again.partitions == () and t.latest_snapshot().id == 2


def test_option_max_expires_and_dry_run(tmp_path: Path) -> None:
    t = table(tmp_path, ["2024-01-01", "2024-01-02", "2024-01-03"], options={"partition.expiration-time": "2d", "write-only": "true"})
    dry = expire_partitions(t, dry_run=True, now=NOW)
    assert dry.dry_run and dry.snapshot_id is None and dry.partitions == ({"dt": "2024-01-01"}, {"dt": "2024-01-02"},
                                                                            {"dt": "2024-01-03"})
    assert t.latest_snapshot().id == 1
    one = expire_partitions(t, max_expires=1, now=NOW)
    assert one.partitions == ({"dt": "2024-01-01"},) and dts_of(t) == {"2024-01-02", "2024-01-03"}


def test_formatter_and_pattern_over_two_columns(tmp_path: Path) -> None:
    t = table(tmp_path, [], schema="id BIGINT, dt STRING, hr INT", partition_keys=("dt", "hr"),
              options={"partition.timestamp-formatter": "yyyyMMdd HH:mm:ss",
                       "partition.timestamp-pattern": "$dt $hr:00:00"},
              rows={"id": pa.array([1, 2, 3], pa.int64()), "dt": ["20240110", "20240110", "20240109"],
                    "hr": pa.array([1, 11, 23], pa.int32())})
    result = expire_partitions(t, expiration_time="2h", now=NOW)  # before 10:00 on the 10th
    assert result.partitions == ({"dt": "20240109", "hr": "23"}, {"dt": "20240110", "hr": "1"})
    assert [r["hr"] for r in t.scan().to_pylist()] == [11]


def test_unparsable_values_are_refused_before_anything_happens(tmp_path: Path) -> None:
    t = table(tmp_path, ["2024-01-01", "not-a-date"])
    with pytest.raises(UsageError, match="not-a-date.*never expire"):
        expire_partitions(t, expiration_time="1d", now=NOW)
    assert t.latest_snapshot().id == 1
    t2 = table(tmp_path / "b", ["2024-01-01"], options={"partition.timestamp-formatter": "yyyyMMdd"})
    with pytest.raises(UsageError, match="yyyyMMdd"):
        expire_partitions(t2, expiration_time="1d", now=NOW)


def test_refusals(tmp_path: Path) -> None:
    t = table(tmp_path, ["2024-01-01"])
    with pytest.raises(UsageError, match="expiration time"):
        expire_partitions(t, now=NOW)
    t2 = Table.locate("db.flat", warehouse=str(tmp_path / "wh"))
    create(t2, "id BIGINT")
    with pytest.raises(UsageError, match="not partitioned"):
        expire_partitions(t2, expiration_time="1d")
    t3 = table(tmp_path / "c", ["2024-01-01"], options={"partition.timestamp-pattern": "$day"})
    with pytest.raises(UsageError, match="day"):
        expire_partitions(t3, expiration_time="1d", now=NOW)


def test_the_default_partition_never_expires(tmp_path: Path) -> None:
    t = table(tmp_path, [], rows={"id": pa.array([1, 2], pa.int64()), "dt": ["2020-01-01", None]})
    result = expire_partitions(t, expiration_time="1d", now=NOW)
    assert result.partitions == ({"dt": "2020-01-01"},) and dts_of(t) == {None}


def test_after_commit_step_runs_per_check_interval(tmp_path: Path) -> None:
    t = table(tmp_path, ["2000-01-01"], options={"partition.expiration-time": "1d"})
    # the write's own step expired the partition (no hint yet): APPEND then OVERWRITE
    assert [s.commit_kind for s in t.snapshots.snapshots()] == ["APPEND", OVERWRITE]
    assert Path(t.path, CHECK_HINT).exists()
    result = t.write(pa.table({"id": pa.array([5], pa.int64()), "dt": ["2000-01-02"]}))
    assert result.maintenance == ()  # checked less than 1 h ago
    Path(t.path, CHECK_HINT).write_text("0")
    assert expire_partitions_after_commit(t, None).partitions == ({"dt": "2000-01-02"},)
    assert expire_partitions_after_commit(t, None) is None


def test_no_option_no_step(tmp_path: Path) -> None:
    t = table(tmp_path, ["2000-01-01"])
    assert expire_partitions_after_commit(t, None) is None and not Path(t.path, CHECK_HINT).exists()


# ---- partition.expiration-strategy=update-time -----------------------------------------------
def written_at(monkeypatch: pytest.MonkeyPatch, when: datetime) -> None:
    """New data files get ``when`` (local wall-clock) as their _CREATION_TIME."""
    from datetime import timezone

    import core.kernels.write as write_kernel

    millis = int(when.replace(tzinfo=timezone.utc).timestamp() * 1000)  # how Paimon stores local time
    monkeypatch.setattr(write_kernel, "local_wall_clock_millis", lambda: millis)


def regions_of(t: Table) -> dict:
    out: dict = {}
    for r in t.scan().to_pylist():
        out.setdefault(r["region"], set()).add(r["id"])
    return out


def update_time_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: str) -> Table:
    """Regions eu, us and the default partition written on Jan 1st; us written again and asia
    first written on Jan 9th (values that no timestamp formatter reads)."""
    t = Table.locate("db.u", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, region STRING", partition_keys=["region"],
           options={"partition.expiration-strategy": "update-time", "write-only": "true", **options})
    written_at(monkeypatch, datetime(2024, 1, 1, 12, 0))
    t.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["eu", "us", None]}))
    written_at(monkeypatch, datetime(2024, 1, 9, 12, 0))
    t.write(pa.table({"id": pa.array([4, 5], pa.int64()), "region": ["us", "asia"]}))
    return t


def test_update_time_expires_the_partitions_last_written_before_the_cutoff(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    t = update_time_table(tmp_path, monkeypatch)
    dry = expire_partitions(t, expiration_time="7d", dry_run=True, now=NOW)  # before Jan 3rd 12:00
    # Paimon's order: by the values' text; the default partition expires too
    assert dry.partitions == ({"region": "__DEFAULT_PARTITION__"}, {"region": "eu"})
    assert dry.files_deleted == 2 and dry.records_deleted == 2 and t.latest_snapshot().id == 2
    result = expire_partitions(t, expiration_time="7d", now=NOW)
    assert result.partitions == dry.partitions and t.latest_snapshot().commit_kind == OVERWRITE
    assert regions_of(t) == {"us": {2, 4}, "asia": {5}}  # us was written again on the 9th: all of it stays
    assert expire_partitions(t, expiration_time="7d", now=NOW).snapshot_id is None
    # the cutoff is strict: us and asia (last written Jan 9th 12:00) expire once now - 7d passes that
    assert expire_partitions(t, expiration_time="7d", dry_run=True, now=datetime(2024, 1, 16, 11, 59)).partitions == ()
    assert expire_partitions(t, expiration_time="7d", dry_run=True,
                             now=datetime(2024, 1, 16, 12, 1)).partitions == ({"region": "asia"}, {"region": "us"})


def test_update_time_max_num_cuts_in_paimons_order_and_compaction_renews(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    t = update_time_table(tmp_path, monkeypatch, **{"partition.expiration-max-num": "1",
                                                    "partition.expiration-time": "7d"})
    assert expire_partitions(t, now=NOW).partitions == ({"region": "__DEFAULT_PARTITION__"},)
    assert set(regions_of(t)) == {"eu", "us", "asia"}
    # a second file in eu, compacted on the 9th: the compacted file is eu's last update
    written_at(monkeypatch, datetime(2024, 1, 2, 12, 0))
    t.write(pa.table({"id": pa.array([6], pa.int64()), "region": ["eu"]}))
    written_at(monkeypatch, datetime(2024, 1, 9, 12, 0))
    assert t.compact(full=True).snapshot_id is not None
    assert expire_partitions(t, now=NOW).partitions == ()
    assert regions_of(t) == {"eu": {1, 6}, "us": {2, 4}, "asia": {5}}


def test_update_time_needs_no_readable_values_and_unknown_strategies_are_refused(tmp_path: Path) -> None:
    t = Table.locate("db.bad", warehouse=str(tmp_path / "wh"))
    with pytest.raises(UsageError, match="partition.expiration-strategy.*values-time, update-time"):
        create(t, "id BIGINT, dt STRING", partition_keys=["dt"], options={"partition.expiration-strategy": "age"})
    assert not t.exists()
    # Java's enum matches without case; the timestamp options do not apply to update-time
    t2 = table(tmp_path / "b", ["not-a-date"], options={"partition.expiration-strategy": "Update-Time",
                                                         "partition.timestamp-pattern": "$nothing"})
    assert expire_partitions(t2, expiration_time="1d", now=NOW).partitions == ()
    assert expire_partitions(t2, expiration_time="1d", now=datetime.now() + timedelta(days=2)).partitions == (
        {"dt": "not-a-date"},)
    assert dts_of(t2) == set()
