"""``lakectl lookup`` through CliRunner on real tables: output formats, the -v report of files
and bytes read, exit codes; and (slow) the issue's proof on a table of a million keys.

Expected rows come from what the tests wrote; expected files from the Parquet data files
(their ``_KEY_`` column's smallest and largest key, the bucket directory holding the key)
and their sizes from the file system, never from lakectl's planner.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from core.table import Table
from lakectl.app import app

runner = CliRunner()
TABLE = "db.users"
REPORT = re.compile(r"INFO core\.ops\.lookup: lookup: found (\d+) of (\d+) keys; read (\d+) of (\d+) files "
                    r"\((\d+) of (\d+) bytes\)")


@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def ok(*args: Any) -> Result:
    result = invoke(*args)
    assert result.exit_code == 0, f"{args}: exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


def report(result: Result) -> tuple[int, ...]:
    match = REPORT.search(result.stderr)
    assert match, f"no lookup report in stderr:\n{result.stderr}"
    return tuple(int(g) for g in match.groups())


# ---- the files a lookup must read, from the data files ------------------------------------
def data_files(wh: str, name: str) -> dict[str, Path]:
    """Every Parquet data file of the table by file name."""
    db, table = name.split(".")
    return {p.name: p for p in (Path(wh) / f"{db}.db" / table).rglob("data-*.parquet")}


def live_names(wh: str) -> set[str]:
    return {r["file_name"] for r in json.loads(ok("-w", wh, "-f", "json", "files", TABLE).stdout)}


def expected_files(wh: str, key: int) -> set[str]:
    """Live files in the bucket directory that holds ``key`` whose _KEY_id range holds it."""
    files = data_files(wh, TABLE)
    live = live_names(wh)
    ranges = {}
    holding = set()
    for name in live:
        column = pq.read_table(files[name], columns=["_KEY_id"]).column("_KEY_id")
        ranges[name] = (pc.min(column).as_py(), pc.max(column).as_py())
        if pc.any(pc.equal(column, key)).as_py():
            holding.add(files[name].parent.name)
    assert len(holding) == 1, f"key {key} lies in bucket directories {holding}"
    return {n for n in live if files[n].parent.name in holding and ranges[n][0] <= key <= ranges[n][1]}


def size_of(wh: str, names: set[str]) -> int:
    files = data_files(wh, TABLE)
    return sum(os.path.getsize(files[n]) for n in names)


# ---- a small table -------------------------------------------------------------------------
@pytest.fixture
def users(wh: str) -> dict[int, dict[str, Any]]:
    """Ids 0..199 in 4 buckets, small files, an update and a delete; returns the model."""
    ok("-w", wh, "create", TABLE, "--schema", "id BIGINT, name STRING, score DOUBLE", "--primary-key", "id",
       "-o", "bucket=4", "-o", "target-file-size=1kb")
    t = Table.open(TABLE, warehouse=wh)
    model = {i: {"id": i, "name": f"u{i}", "score": i / 2} for i in range(200)}
    t.write(pa.Table.from_pylist(list(model.values())))
    t.write(pa.table({"id": [7, 8], "name": ["seven", None], "score": [7.5, None], "op": ["+U", "-D"]}),
            row_kind_column="op")
    model[7] = {"id": 7, "name": "seven", "score": 7.5}
    del model[8]
    return model


def test_json_jsonl_csv_and_table_output(wh: str, users: dict[int, dict[str, Any]]) -> None:
    rows = json.loads(ok("-w", wh, "-f", "json", "lookup", TABLE, "--key", "id=7", "-k", "id=150").stdout)
    assert rows == [users[7], users[150]]
    lines = ok("-w", wh, "-f", "jsonl", "lookup", TABLE, "-k", "id=150", "--select", "name,id").stdout.splitlines()
    assert [json.loads(line) for line in lines] == [{"name": "u150", "id": 150}]
    out = ok("-w", wh, "-f", "csv", "lookup", TABLE, "-k", "id=3").stdout
    assert list(csv.DictReader(io.StringIO(out))) == [{"id": "3", "name": "u3", "score": "1.5"}]
    table = ok("-w", wh, "lookup", TABLE, "-k", "id=42").stdout
    assert "u42" in table and "u41" not in table


def test_keys_not_found_exit_zero(wh: str, users: dict[int, dict[str, Any]]) -> None:
    result = ok("-w", wh, "-f", "json", "-v", "lookup", TABLE, "-k", "id=8", "-k", "id=1000", "-k", "id=5")
    assert json.loads(result.stdout) == [users[5]]
    found, keys, *_ = report(result)
    assert (found, keys) == (1, 3)


def test_verbose_reports_files_and_bytes_read(wh: str, users: dict[int, dict[str, Any]]) -> None:
    live = live_names(wh)
    for key in (0, 7, 99, 150, 199):
        result = ok("-w", wh, "-f", "json", "-v", "lookup", TABLE, "--key", f"id={key}")
        assert json.loads(result.stdout) == [users[key]]
        want = expected_files(wh, key)
        assert want, "the key's rows live somewhere"
        found, keys, read, total, read_bytes, total_bytes = report(result)
        assert (found, keys) == (1, 1)
        assert (read, total) == (len(want), len(live))
        assert (read_bytes, total_bytes) == (size_of(wh, want), size_of(wh, live))
        assert read < total / 4, "a point lookup reads a fraction of the table's files"
    quiet = ok("-w", wh, "-f", "json", "lookup", TABLE, "-k", "id=3")
    assert "lookup:" not in quiet.stderr


def test_snapshot_id_reads_the_past(wh: str, users: dict[int, dict[str, Any]]) -> None:
    past = json.loads(ok("-w", wh, "-f", "json", "lookup", TABLE, "-k", "id=7", "-k", "id=8",
                         "--snapshot-id", 1).stdout)
    assert past == [{"id": 7, "name": "u7", "score": 3.5}, {"id": 8, "name": "u8", "score": 4.0}]


@pytest.mark.parametrize("args, code, message", [
    (["-k", "id=abc"], 2, "'abc' is not a value of column 'id' (BIGINT)"),
    (["-k", "name=u1"], 2, "column 'name' is not a primary-key or partition column"),
    (["-k", "idx=1"], 2, "column 'idx' is not in table"),
    ([], 2, "at least one --key"),
    (["-k", "id=1", "--select", "nope"], 2, "unknown column 'nope'"),
    (["-k", "id=1", "--snapshot-id", "99"], 3, "snapshot 99 does not exist"),
])
def test_exit_codes(wh: str, users: dict[int, dict[str, Any]], args: list[str], code: int, message: str) -> None:
    result = invoke("-w", wh, "lookup", TABLE, *args)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr
    assert result.stdout == ""


def test_missing_table_and_append_table(wh: str) -> None:
    result = invoke("-w", wh, "lookup", "db.nope", "-k", "id=1")
    assert result.exit_code == 3 and "does not exist" in result.stderr
    ok("-w", wh, "create", "db.log", "--schema", "id BIGINT, v STRING")
    result = invoke("-w", wh, "lookup", "db.log", "-k", "id=1")
    assert result.exit_code == 2 and "primary-key table" in result.stderr


PROBE = r"""
import json, sys
from typer.testing import CliRunner
from lakectl.app import app
result = CliRunner().invoke(app, ["-w", sys.argv[1], "-f", "json", "lookup", "db.users", "-k", "id=5"])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))
print(json.dumps([result.exit_code, json.loads(result.stdout), heavy]))
"""


def test_lookup_starts_no_jvm(wh: str, users: dict[int, dict[str, Any]]) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, wh], capture_output=True, text=True, timeout=120, check=True)
    code, rows, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert (code, rows, heavy) == (0, [users[5]], [])


# ---- the proof -----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("target_file_size", [None, "512kb"])
def test_million_keys_after_full_compaction_read_only_the_covering_files(
        wh: str, capsys: pytest.CaptureFixture, target_file_size: str | None) -> None:
    """Default file size: one file per bucket, so a lookup reads 1 of 4; small files: the
    key range picks one of each bucket's files too."""
    n = 1_000_000
    options = ["-o", f"target-file-size={target_file_size}"] if target_file_size else []
    ok("-w", wh, "create", TABLE, "--schema", "id BIGINT, name STRING, score DOUBLE", "--primary-key", "id",
       "-o", "bucket=4", *options)
    t = Table.open(TABLE, warehouse=wh)
    ids = np.random.default_rng(6).permutation(n).astype(np.int64)
    half = n // 2
    for part in (ids[:half], ids[half:]):
        t.write(pa.table({"id": part, "name": pa.array([f"user-{i}" for i in part.tolist()]),
                          "score": part.astype(np.float64) / 3}))
    updated = np.arange(0, n, 1000, dtype=np.int64)  # every thousandth key, written once more
    t.write(pa.table({"id": updated, "name": pa.array([f"new-{i}" for i in updated.tolist()]),
                      "score": -updated.astype(np.float64)}))
    ok("-w", wh, "compact", TABLE, "--full")
    live = live_names(wh)
    if target_file_size is None:
        assert len(live) == 4, "full compaction leaves one file per bucket"
    else:
        assert len(live) >= 16, "the compacted buckets should hold several files each"

    for key in (0, 1, 123_456, 500_000, 999_999):
        started = time.perf_counter()
        result = ok("-w", wh, "-f", "json", "-v", "lookup", TABLE, "--key", f"id={key}")
        elapsed = time.perf_counter() - started
        new = key % 1000 == 0
        assert json.loads(result.stdout) == [{"id": key, "name": f"{'new' if new else 'user'}-{key}",
                                              "score": -float(key) if new else key / 3}]
        want = expected_files(wh, key)
        found, keys, read, total, read_bytes, total_bytes = report(result)
        assert (found, keys, read, total) == (1, 1, len(want), len(live))
        assert (read_bytes, total_bytes) == (size_of(wh, want), size_of(wh, live))
        with capsys.disabled():
            print(f"\n[target-file-size {target_file_size or 'default'}] lookup id={key}: read {read} of {total} "
                  f"files ({read_bytes} of {total_bytes} bytes) in {elapsed:.2f} s")
    several = (3, 4, 5, 999_000)
    result = t.lookup([f"id={k}" for k in several])  # one pass: each file read once
    assert [r["id"] for r in result.rows.to_pylist()] == list(several)
    assert set(result.files) == set().union(*(expected_files(wh, k) for k in several))
    assert result.files_read == len(result.files)
