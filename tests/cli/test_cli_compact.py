"""``lakectl compact`` through CliRunner on real tables: JSON output, effects, exit codes."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner, Result

from core.engines.local import LocalEngine
from core.table import Table
from lakectl.app import app

runner = CliRunner()
TABLE = "db.sales"


@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def ok(*args: Any) -> Result:
    result = invoke(*args)
    assert result.exit_code == 0, f"{args}: exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


def as_json(wh: str, *args: Any) -> Any:
    return json.loads(ok("--warehouse", wh, "--format", "json", *args).stdout)


def write_csv(path: Path, rows: list[list[Any]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dt", "id", "v", "op"])
        w.writerows(rows)
    return path


@pytest.fixture
def sales(wh: str, tmp_path: Path) -> str:
    """Two partitions, two buckets, three commits with updates and deletes."""
    ok("--warehouse", wh, "create", TABLE, "--schema", "dt STRING, id BIGINT, v STRING",
       "--primary-key", "dt,id", "--partition-by", "dt", "--option", "bucket=2")
    batches = [
        [[d, i, f"a{i}", "+I"] for d in ("d1", "d2") for i in range(10)],
        [["d1", i, f"b{i}", "+U"] for i in range(5)] + [["d2", 9, "", "-D"]],
        [["d1", 0, "", "-D"], ["d2", 3, "c3", "+U"]],
    ]
    for n, rows in enumerate(batches):
        ok("--warehouse", wh, "write", TABLE, "--input", write_csv(tmp_path / f"b{n}.csv", rows),
           "--row-kind-column", "op")
    return TABLE


def parquet_files(wh: str, under: str = "") -> int:
    return sum(1 for _ in Path(wh, "db.db", "sales", under).rglob("*.parquet"))


def scan_rows(wh: str) -> list[dict[str, Any]]:
    return sorted(as_json(wh, "scan", TABLE), key=lambda r: (r["dt"], r["id"]))


def test_full_compaction_json_result_and_unchanged_rows(wh: str, sales: str) -> None:
    before = scan_rows(wh)
    assert len(before) == 18
    files = parquet_files(wh)
    result = as_json(wh, "compact", sales, "--full")
    assert set(result) == {"table", "branch", "snapshot_id", "buckets_compacted", "files_before", "files_after",
                           "bytes_before", "bytes_after", "dry_run", "engine", "postponed_files"}
    assert result["table"] == TABLE and result["snapshot_id"] == 4 and result["dry_run"] is False
    assert result["engine"] == "local"
    assert result["buckets_compacted"] == 4 and result["files_before"] == files and result["files_after"] == 4
    assert parquet_files(wh) == files + 4
    assert result["bytes_before"] > 0 and result["bytes_after"] > 0
    assert scan_rows(wh) == before
    newest = as_json(wh, "snapshots", sales)[0]
    assert newest["snapshot_id"] == 4 and newest["commit_kind"] == "COMPACT"
    assert newest["total_record_count"] == 18 and newest["delta_record_count"] == 18 - 28  # 20 + 6 + 2 rows written
    # Time travel to before the compaction still works.
    assert len(as_json(wh, "scan", sales, "--snapshot-id", "3")) == 18


def test_second_compaction_reports_nothing_and_commits_nothing(wh: str, sales: str) -> None:
    ok("--warehouse", wh, "compact", sales, "--full")
    again = as_json(wh, "compact", sales, "--full")
    assert again["snapshot_id"] is None and again["buckets_compacted"] == 0 and again["files_before"] == 0
    assert len(as_json(wh, "snapshots", sales)) == 4


def test_dry_run_reports_and_writes_nothing(wh: str, sales: str, tmp_path: Path) -> None:
    files = sorted(Path(wh).rglob("*"))
    result = as_json(wh, "compact", sales, "--full", "--dry-run")
    assert result["dry_run"] is True and result["snapshot_id"] is None
    assert result["buckets_compacted"] == 4 and result["files_before"] == parquet_files(wh)
    assert result["files_after"] is None and result["bytes_after"] is None
    assert sorted(Path(wh).rglob("*")) == files


def test_partition_option(wh: str, sales: str) -> None:
    d1, d2 = parquet_files(wh, "dt=d1"), parquet_files(wh, "dt=d2")
    result = as_json(wh, "compact", sales, "--full", "--partition", "dt=d2")
    assert result["buckets_compacted"] == 2 and result["files_before"] == d2
    rest = as_json(wh, "compact", sales, "--full", "-p", "dt=d1", "-p", "dt=d2")
    assert rest["buckets_compacted"] == 2 and rest["files_before"] == d1


def test_without_full_only_buckets_with_several_runs(wh: str, tmp_path: Path) -> None:
    ok("--warehouse", wh, "create", "db.one", "--schema", "id BIGINT, v STRING", "--primary-key", "id",
       "--option", "num-sorted-run.compaction-trigger=1", "--option", "write-only=true")
    with (tmp_path / "one.csv").open("w") as f:
        f.write("id,v\n1,a\n2,b\n")
    ok("--warehouse", wh, "write", "db.one", "--input", tmp_path / "one.csv")
    assert as_json(wh, "compact", "db.one")["snapshot_id"] is None  # one file: one sorted run
    ok("--warehouse", wh, "write", "db.one", "--input", tmp_path / "one.csv")
    assert as_json(wh, "compact", "db.one")["snapshot_id"] == 3


def test_jsonl_csv_and_table_formats(wh: str, sales: str) -> None:
    line = ok("--warehouse", wh, "--format", "jsonl", "compact", sales, "--full", "--dry-run").stdout
    assert json.loads(line)["dry_run"] is True and line.count("\n") == 1
    out = ok("--warehouse", wh, "--format", "csv", "compact", sales, "--full", "--dry-run").stdout
    (row,) = list(csv.DictReader(out.splitlines()))
    assert row["buckets_compacted"] == "4" and row["files_after"] == ""
    assert "buckets_compacted" in ok("--warehouse", wh, "compact", sales, "--dry-run").stdout.replace(" ", "_")


def _error(result: Result, code: int, fragment: str) -> None:
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and fragment in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("spec, fragment", [
    ("dt", "COLUMN=VALUE"),
    ("=x", "COLUMN=VALUE"),
    ("id=1", "not a partition column"),
])
def test_bad_partition_is_a_usage_error(wh: str, sales: str, spec: str, fragment: str) -> None:
    _error(invoke("--warehouse", wh, "compact", sales, "--partition", spec), 2, fragment)


def test_missing_table_exits_3(wh: str) -> None:
    _error(invoke("--warehouse", wh, "compact", "db.nope", "--full"), 3, "does not exist")


def overwrite_while_compacting(monkeypatch: pytest.MonkeyPatch, wh: str, times: int | None) -> None:
    """An overwrite lands between the compaction's rewrite and its commit, on the first
    ``times`` tries (None: every try)."""
    original = LocalEngine.compact
    tries: list[int] = []

    def compact_then_overwrite(self: LocalEngine, tasks: Any, file_io: Any) -> Any:
        messages = original(self, tasks, file_io)
        tries.append(1)
        if times is None or len(tries) <= times:
            Table.open(TABLE, warehouse=wh).write(pa.table({"dt": ["d1"], "id": [1], "v": ["x"]}), mode="overwrite")
        return messages

    monkeypatch.setattr(LocalEngine, "compact", compact_then_overwrite)


def test_an_overwrite_racing_compact_makes_it_plan_again_and_exit_0(wh: str, sales: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A cron compact overtaken by another commit compacts the new state instead of failing."""
    overwrite_while_compacting(monkeypatch, wh, times=1)
    result = as_json(wh, "compact", sales, "--full")
    kinds = [s["commit_kind"] for s in as_json(wh, "snapshots", sales)]
    assert kinds[:2] == ["COMPACT", "OVERWRITE"]  # newest first
    assert result["snapshot_id"] == as_json(wh, "snapshots", sales)[0]["snapshot_id"]
    rows = {(r["dt"], r["id"]): r["v"] for r in as_json(wh, "scan", sales)}
    assert rows[("d1", 1)] == "x" and len([k for k in rows if k[0] == "d1"]) == 1


def test_a_compact_overtaken_every_time_exits_4_and_leaves_the_table(wh: str, sales: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    ok("--warehouse", wh, "alter-schema", sales, "--set-option", "commit.max-retries=1")
    overwrite_while_compacting(monkeypatch, wh, times=None)
    _error(invoke("--warehouse", wh, "compact", sales, "--full"), 4, "gave up after 2 tries")
    kinds = [s["commit_kind"] for s in as_json(wh, "snapshots", sales)]
    assert kinds[:2] == ["OVERWRITE", "OVERWRITE"] and "COMPACT" not in kinds


def test_help_lists_compact() -> None:
    assert "compact" in ok("--help").stdout
    text = ok("compact", "--help").stdout
    assert "--full" in text and "--partition" in text and "--dry-run" in text
