"""A table written by ``write_records`` (lakectl write --stream), read by the official reader.

A CDC stream (inserts, updates, deletes through a row-kind column) is committed in batches,
then partly replayed under the same commit user. pypaimon must read every snapshot as the
test's model of the stream says, decode each snapshot's commit user, identifier (the input
offset) and watermark as the test computed them, and find snapshots by watermark with its
own ``later_or_equal_watermark``.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from oracle import ORACLE_DIR, official_read, oracle_python

from core.ops.create import create
from core.ops.stream_write import write_records
from core.table import Table

pytestmark = pytest.mark.interop

UTC = dt.timezone.utc
BASE = dt.datetime(2026, 3, 1, tzinfo=UTC)


def stream_records() -> list[dict[str, Any]]:
    """30 records: inserts of keys 0..19, then updates and deletes of some of them, event
    times moving forward with a few late ones."""
    out = []
    for i in range(30):
        key = i if i < 20 else (i * 7) % 20
        kind = "+I" if i < 20 else ("-D" if i % 3 == 0 else "+U")
        second = i * 10 - (25 if i % 8 == 5 else 0)  # some events arrive late
        out.append({"id": key, "v": f"v{i}", "dt": f"d{key % 3}", "op": kind,
                    "ts": (BASE + dt.timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S")})
    return out


def epoch_millis(record: dict[str, Any]) -> int:
    moment = dt.datetime.strptime(record["ts"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1000


def state_after(records: list[dict[str, Any]]) -> list[tuple]:
    rows: dict[tuple, tuple] = {}
    for r in records:
        key = (r["id"], r["dt"])
        if r["op"] == "-D":
            rows.pop(key, None)
        else:
            rows[key] = (r["id"], r["v"], r["dt"])
    return sorted(rows.values())


def oracle_snapshots(table_path: str, watermarks: list[int]) -> dict[str, Any]:
    args = [oracle_python(), str(ORACLE_DIR / "paimon_snapshots.py"), table_path]
    for w in watermarks:
        args += ["--watermark", str(w)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_pypaimon_reads_a_stream_written_table(tmp_path: Path) -> None:
    t = Table.locate("db.cdc", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING, ts TIMESTAMP(3), dt STRING, op STRING", primary_keys=["id", "dt"],
           partition_keys=["dt"], options={"bucket": "2"})
    records = stream_records()
    text = "".join(json.dumps(r) + "\n" for r in records).encode()
    # First run: batches of 7 up to record 21 (the producer dies there); then the producer
    # replays the whole stream and the writer cuts batches of 5.
    cut = text.split(b"\n")
    write_records(t, io.BytesIO(b"\n".join(cut[:21]) + b"\n"), commit_user="cdc", commit_rows=7,
                  watermark_column="ts", row_kind_column="op")
    write_records(t, io.BytesIO(text), commit_user="cdc", commit_rows=5, watermark_column="ts",
                  row_kind_column="op")
    # The first run committed 1-7, 8-14, 15-21; of the replay's batches 1-5 .. 16-20 are
    # skipped, 21-25 loses record 21 (committed) and commits 22-25, then 26-30.
    ends = [7, 14, 21, 25, 30]

    ours = [s for s in t.snapshots.snapshots() if s.commit_kind == "APPEND"]
    assert [s.commit_identifier for s in ours] == ends
    expected_marks, mark = [], None
    for end in ends:
        start = max((e for e in ends if e < end), default=0)
        batch_mark = max(epoch_millis(r) for r in records[start:end])
        mark = batch_mark if mark is None else max(mark, batch_mark)
        expected_marks.append(mark)
    assert [s.watermark for s in ours] == expected_marks

    probe = [expected_marks[0], expected_marks[0] + 1, expected_marks[3], expected_marks[-1] + 1]
    decoded = oracle_snapshots(t.path, probe)
    by_id = {s["id"]: s for s in decoded["snapshots"]}
    assert [(by_id[s.id]["commit_user"], by_id[s.id]["commit_identifier"], by_id[s.id]["watermark"])
            for s in ours] == [("cdc", end, m) for end, m in zip(ends, expected_marks)]
    for w in probe:
        first = next((s.id for s in t.snapshots.snapshots() if s.watermark is not None and s.watermark >= w), None)
        assert decoded["later_or_equal_watermark"][str(w)] == first, f"watermark {w}"

    for snap, end in zip(ours, ends):
        data, meta = official_read(t.path, tmp_path, snapshot=snap.id, projection=["id", "v", "dt"])
        got = sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))))
        assert got == state_after(records[:end]), f"snapshot {snap.id} (records 1..{end})"
    data, _ = official_read(t.path, tmp_path, projection=["id", "v", "dt"])
    assert sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt")))) == state_after(records)
