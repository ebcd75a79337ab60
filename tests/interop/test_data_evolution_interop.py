"""Data-evolution tables (Paimon 2.x, ``data-evolution.enabled=true``) written by pypaimon 2.1:
whole rows, then columns rewritten by row id (``update_by_arrow_with_row_id``: files holding
one column of a row-id range). lakectl must read them as pypaimon does, and a model of the
updates says what that is; lakectl's appends stay readable (and updatable) by pypaimon;
delete without deletion vectors is refused naming the option (compaction, and delete with
them: test_data_evolution_compact_interop.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle import official_read, official_write
from typer.testing import CliRunner, Result

from lakectl.app import app

pytestmark = pytest.mark.interop

runner = CliRunner()
OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def lakectl(wh: Path, *args: Any, input: str | None = None) -> Result:
    return runner.invoke(app, ["--warehouse", str(wh), "--format", "jsonl", *map(str, args)], input=input,
                         catch_exceptions=False)


def rows(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return sorted((json.loads(line) for line in result.stdout.splitlines() if line), key=lambda r: r["id"])


def ids(values: list[int]) -> pa.Array:
    return pa.array(values, pa.int64())


def evolved_table(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """pypaimon writes two commits of rows (row ids 0-2 and 3-4), rewrites columns by row id
    in several rounds, adds a column and writes a third commit; returns the table and the
    rows a model of those steps expects, by id."""
    steps = [{"op": "write"}, {"op": "write"},
             {"op": "update_by_row_id", "columns": ["a"]},
             {"op": "update_by_row_id", "columns": ["b"]},
             {"op": "update_by_row_id", "columns": ["a"]},
             {"op": "add_column", "name": "c", "type": "STRING"},
             {"op": "write"},
             {"op": "update_by_row_id", "columns": ["c"]}]
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["id", "INT"], ["a", "STRING"], ["b", "BIGINT"]], "primary_keys": [],
                      "partition_keys": [], "options": OPTIONS, "comment": None},
           "steps": steps}
    batches = [
        pa.table({"id": pa.array([1, 2, 3], pa.int32()), "a": ["x", "y", "z"], "b": ids([10, 20, 30])}),
        pa.table({"id": pa.array([4, 5], pa.int32()), "a": ["p", "q"], "b": ids([40, 50])}),
        pa.table({"_ROW_ID": ids([0, 2, 3]), "a": ["X", "Z", "P"]}),     # a of rows in both files
        pa.table({"_ROW_ID": ids([1, 4]), "b": ids([200, 500])}),        # b only
        pa.table({"_ROW_ID": ids([0]), "a": ["X2"]}),                     # a again: the newest wins
        pa.table({"id": pa.array([6], pa.int32()), "a": ["r"], "b": ids([60]), "c": ["c6"]}),
        pa.table({"_ROW_ID": ids([1, 5]), "c": ["c2", "C6"]}),          # c where no file held it
    ]
    official_write(job, batches, tmp_path)
    # The model: each update replaces the column of those row ids (row id = insertion order).
    model = {1: ("X2", 10, None), 2: ("y", 200, "c2"), 3: ("Z", 30, None), 4: ("P", 40, None),
             5: ("q", 500, None), 6: ("r", 60, "C6")}
    expected = [{"id": k, "a": a, "b": b, "c": c} for k, (a, b, c) in sorted(model.items())]
    return tmp_path / "wh" / "db.db" / "t", expected


def test_a_data_evolution_table_reads_as_pypaimon_and_the_model(tmp_path: Path) -> None:
    path, expected = evolved_table(tmp_path)
    wh = tmp_path / "wh"
    official, _ = official_read(path, tmp_path)
    assert sorted(official.to_pylist(), key=lambda r: r["id"]) == expected
    assert rows(lakectl(wh, "scan", "db.t")) == expected
    # Filters see the merged values: a file's own stats (b=20 in the first commit's file)
    # must not decide, nor skip a file whose siblings hold the matching column.
    assert rows(lakectl(wh, "scan", "db.t", "--where", "b = 200")) == [expected[1]]
    assert rows(lakectl(wh, "scan", "db.t", "--where", "b = 20")) == []
    assert rows(lakectl(wh, "scan", "db.t", "--where", "c = 'c2'")) == [expected[1]]
    # An earlier snapshot reads as pypaimon reads it there (after the first a-update: snapshot 3).
    official3, _ = official_read(path, tmp_path, snapshot=3)
    got3 = rows(lakectl(wh, "scan", "db.t", "--snapshot-id", 3))
    assert got3 == sorted(official3.to_pylist(), key=lambda r: r["id"])
    assert [r["a"] for r in got3] == ["X", "y", "Z", "P", "q"]


def test_lakectl_appends_to_a_data_evolution_table_and_pypaimon_updates_them(tmp_path: Path) -> None:
    path, expected = evolved_table(tmp_path)
    wh = tmp_path / "wh"
    result = lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl",
                     input='{"id": 7, "a": "s", "b": 70, "c": "c7"}\n{"id": 8, "a": "t", "b": 80}\n')
    assert result.exit_code == 0, result.output
    # The commit numbers the new rows on from nextRowId: 6 rows so far (ids 0-5), so 6 and 7.
    model = expected + [{"id": 7, "a": "s", "b": 70, "c": "c7"}, {"id": 8, "a": "t", "b": 80, "c": None}]
    ids_read, _ = official_read(path, tmp_path, projection=["id", "_ROW_ID"])
    assert dict(zip(ids_read.column("id").to_pylist(), ids_read.column("_ROW_ID").to_pylist()))[8] == 7
    official, _ = official_read(path, tmp_path)
    assert sorted(official.to_pylist(), key=lambda r: r["id"]) == model
    assert rows(lakectl(wh, "scan", "db.t")) == model
    # pypaimon rewrites a column of lakectl's rows by their row ids; both read the update.
    job = {"warehouse": str(wh), "table": "db.t", "existing": True,
           "schema": {"fields": [["id", "INT"], ["a", "STRING"], ["b", "BIGINT"]], "primary_keys": [],
                      "partition_keys": [], "options": OPTIONS, "comment": None},
           "steps": [{"op": "update_by_row_id", "columns": ["b"]}]}
    official_write(job, [pa.table({"_ROW_ID": ids([6, 7]), "b": ids([700, 800])})], tmp_path)
    model[6]["b"], model[7]["b"] = 700, 800
    official, _ = official_read(path, tmp_path)
    assert sorted(official.to_pylist(), key=lambda r: r["id"]) == model
    assert rows(lakectl(wh, "scan", "db.t")) == model


def test_delete_and_incremental_reads_are_refused(tmp_path: Path) -> None:
    path, expected = evolved_table(tmp_path)
    wh = tmp_path / "wh"
    # An update commit's files hold one column of old rows: read alone they would be rows of
    # nulls, so incremental reads are refused rather than answered wrongly.
    for result in (lakectl(wh, "delete", "db.t", "--where", "id = 1"),
                   lakectl(wh, "scan", "db.t", "--incremental-between", "2,4"),
                   lakectl(wh, "scan", "db.t", "--follow", "--max-snapshots", "1")):
        assert result.exit_code not in (0, None), result.output
        assert "data-evolution.enabled" in result.output and "internal error" not in result.output
    # Nothing was written: both readers still see the same rows.
    assert rows(lakectl(wh, "scan", "db.t")) == expected
    official, _ = official_read(path, tmp_path)
    assert sorted(official.to_pylist(), key=lambda r: r["id"]) == expected
