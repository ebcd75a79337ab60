"""TIMESTAMP(9) partition columns whose values differ only past the microsecond, both ways
with Java Paimon 1.0: Java names each partition with all nine digits
(``ts=2024-02-29T12%3A00%3A00.123456789``) and keeps them in the partition BinaryRow. lakectl
used to truncate them to microseconds: it looked for a directory Java never wrote ("listed in
a manifest is missing") and could not write such rows at all."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run, sort_rows

from core.ops.create import create
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

STAMPS = ["2024-02-29T12:00:00.123456789", "2024-02-29T12:00:00.123456788", "1999-12-31T23:59:59.000000001",
          "2024-02-29T12:00:00.123456000"]
FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "ts", "type": "TIMESTAMP(9) NOT NULL"},
          {"name": "v", "type": "STRING"}]


def _nanos(text: str) -> int:
    head, frac = text.split(".")
    whole = pa.scalar(head, pa.string()).cast(pa.timestamp("s")).cast(pa.int64()).as_py()
    return whole * 1_000_000_000 + int(frac.ljust(9, "0"))


def _bucket_dirs(table_path: Path) -> list[str]:
    return sorted(str(Path(root).relative_to(table_path)) for root, _, _ in os.walk(table_path)
                  if Path(root).name.startswith("bucket-"))


def test_java_written_nanosecond_partitions_read_filter_and_lookup_exactly(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "db.db" / "t"
    rows = [[i, ts, f"v{i}"] for i, ts in enumerate(STAMPS)]
    java_run(path, [{"op": "write", "rows": rows}],
             create={"fields": FIELDS, "primaryKeys": ["id", "ts"], "partitionKeys": ["ts"],
                     "options": {"bucket": "1"}})
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    java_rows, _ = java_read(path)
    ours = t.scan()
    assert [_nanos(r[1]) for r in sort_rows(java_rows)] == \
        ours.sort_by("id").column("ts").cast(pa.int64()).to_pylist()
    assert len(t.files()) == 4  # four partitions, none merged by a truncated value
    hit = t.scan(where=f"ts = '{STAMPS[0]}'")
    assert hit.column("id").to_pylist() == [0]
    assert t.scan(where=f"ts > '{STAMPS[1]}'").num_rows == 1
    found = t.lookup([{"id": 1, "ts": STAMPS[1]}]).rows
    assert found.column("v").to_pylist() == ["v1"]
    assert t.lookup([{"id": 1, "ts": STAMPS[0]}]).rows.num_rows == 0  # the other partition


def test_lakectl_written_nanosecond_partitions_are_named_and_read_as_java(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    create(Table.locate("db.t", warehouse=str(wh)), "id BIGINT NOT NULL, ts TIMESTAMP(9) NOT NULL, v STRING",
           primary_keys=["id", "ts"], partition_keys=["ts"], options={"bucket": "1"})
    t = Table.open("db.t", warehouse=str(wh))
    t.write(pa.table({"id": pa.array(range(len(STAMPS)), pa.int64()),
                      "ts": pa.array([_nanos(s) for s in STAMPS], pa.timestamp("ns")),
                      "v": [f"v{i}" for i in range(len(STAMPS))]}))
    # the same directories Java writes for these values
    java_path = tmp_path / "java" / "db.db" / "t"
    java_run(java_path, [{"op": "write", "rows": [[i, ts, f"v{i}"] for i, ts in enumerate(STAMPS)]}],
             create={"fields": FIELDS, "primaryKeys": ["id", "ts"], "partitionKeys": ["ts"],
                     "options": {"bucket": "1"}})
    assert _bucket_dirs(Path(t.path)) == _bucket_dirs(java_path)
    java_rows, _ = java_read(t.path)
    assert [(r[0], _nanos(r[1]), r[2]) for r in sort_rows(java_rows)] == \
        [(i, _nanos(s), f"v{i}") for i, s in enumerate(STAMPS)]
