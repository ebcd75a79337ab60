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
