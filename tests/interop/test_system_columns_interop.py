"""Paimon's system columns in ``scan --select`` and ``--where``: ``_ROW_ID`` and
``_SEQUENCE_NUMBER`` of row-tracking tables, as pypaimon 2.1 reads them with the same
projection (Java Paimon 1.0 has no row tracking). Tables written by lakectl and by pypaimon,
after compactions and row-id updates, so that neither column is a plain row number."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle import official_read, official_write
from test_data_evolution_interop import lakectl, rows
from typer.testing import CliRunner

from lakectl.app import app

pytestmark = pytest.mark.interop

runner = CliRunner()
SYSTEM = ["_ROW_ID", "_SEQUENCE_NUMBER"]


def official(path: Path, tmp_path: Path, columns: list[str]) -> list[dict[str, Any]]:
    table, _ = official_read(path, tmp_path, projection=columns)
    assert table.column_names == columns
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def write_jsonl(wh: Path, records: list[dict[str, Any]]) -> None:
    result = lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl",
                     input="".join(json.dumps(r) + "\n" for r in records))
    assert result.exit_code == 0, result.output


def assert_reads_as_pypaimon(wh: Path, path: Path, tmp_path: Path, columns: list[str]) -> list[dict[str, Any]]:
    """lakectl's ``--select`` of ``columns`` and system columns equals pypaimon's projection;
    ``--where _ROW_ID >= N`` keeps pypaimon's rows of those ids; a plain scan shows no system
    column. Returns pypaimon's rows."""
    select = columns + SYSTEM
    expected = official(path, tmp_path, select)
    assert rows(lakectl(wh, "scan", "db.t", "--select", ",".join(select))) == expected
    # In another order, and one system column alone.
    assert rows(lakectl(wh, "scan", "db.t", "--select", "_SEQUENCE_NUMBER,id")) == [
        {"_SEQUENCE_NUMBER": r["_SEQUENCE_NUMBER"], "id": r["id"]} for r in expected]
    ids = sorted(r["_ROW_ID"] for r in expected)
    middle = ids[len(ids) // 2]
    assert rows(lakectl(wh, "scan", "db.t", "--select", ",".join(select), "--where", f"_ROW_ID >= {middle}")) == [
        r for r in expected if r["_ROW_ID"] >= middle]
    newest = max(r["_SEQUENCE_NUMBER"] for r in expected)
    # A condition alone reads the system columns without showing them.
    plain = rows(lakectl(wh, "scan", "db.t", "--where", f"_SEQUENCE_NUMBER = {newest} AND _ROW_ID >= 0"))
    assert [r["id"] for r in plain] == [r["id"] for r in expected if r["_SEQUENCE_NUMBER"] == newest]
    assert all(not set(r) & set(SYSTEM) for r in plain + rows(lakectl(wh, "scan", "db.t")))
    return expected


def test_row_ids_of_pypaimon_and_lakectl_writes_after_compaction_read_as_pypaimon(tmp_path: Path) -> None:
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["id", "INT"], ["v", "STRING"], ["p", "STRING"]], "primary_keys": [],
                      "partition_keys": ["p"], "options": {"row-tracking.enabled": "true"}, "comment": None},
           "steps": [{"op": "write"}, {"op": "write"}]}
    official_write(job, [pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"], "p": ["x", "y", "x"]}),
                         pa.table({"id": pa.array([4], pa.int32()), "v": ["d"], "p": ["y"]})], tmp_path)
    wh, path = tmp_path / "wh", tmp_path / "wh" / "db.db" / "t"
    for i in range(5, 8):
        write_jsonl(wh, [{"id": i, "v": f"v{i}", "p": "x"}, {"id": 10 + i, "v": f"w{i}", "p": "y"}])
    # Compaction rewrites runs of files whose ids follow on; partition y's files have gaps.
    compacted = lakectl(wh, "compact", "db.t", "--full")
    assert compacted.exit_code == 0, compacted.output
    assert json.loads(compacted.stdout)["files_after"] < json.loads(compacted.stdout)["files_before"]
    job["steps"], job["existing"] = [{"op": "write"}], True
    official_write(job, [pa.table({"id": pa.array([20, 21], pa.int32()), "v": ["e", "f"], "p": ["y", "y"]})],
                   tmp_path)
    expected = assert_reads_as_pypaimon(wh, path, tmp_path, ["id", "v"])
    # The ids: every row one, none twice, numbered in commit order (pypaimon's 4, then
    # lakectl's 6, then pypaimon's 2).
    assert sorted(r["_ROW_ID"] for r in expected) == list(range(12))
    by_id = {r["id"]: r for r in expected}
    assert {by_id[20]["_ROW_ID"], by_id[21]["_ROW_ID"]} == {10, 11}
    assert by_id[20]["_SEQUENCE_NUMBER"] > by_id[1]["_SEQUENCE_NUMBER"]


def test_data_evolution_updates_read_as_pypaimon(tmp_path: Path) -> None:
    """Row-id updates write files of one column: a range's ids and sequence numbers come from
    its newest file, as pypaimon reads them."""
    def ids(values: list[int]) -> pa.Array:
        return pa.array(values, pa.int64())

    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["id", "INT"], ["v", "STRING"], ["n", "BIGINT"]], "primary_keys": [],
                      "partition_keys": [],
                      "options": {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}, "comment": None},
           "steps": [{"op": "write"}, {"op": "write"}, {"op": "update_by_row_id", "columns": ["v"]},
                     {"op": "update_by_row_id", "columns": ["n"]}]}
    official_write(job, [pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"], "n": ids([1, 2, 3])}),
                         pa.table({"id": pa.array([4, 5], pa.int32()), "v": ["d", "e"], "n": ids([4, 5])}),
                         pa.table({"_ROW_ID": ids([0, 2]), "v": ["A", "C"]}),
                         pa.table({"_ROW_ID": ids([4]), "n": ids([50])})], tmp_path)
    wh, path = tmp_path / "wh", tmp_path / "wh" / "db.db" / "t"
    write_jsonl(wh, [{"id": 6, "v": "f", "n": 6}])
    expected = assert_reads_as_pypaimon(wh, path, tmp_path, ["id", "v", "n"])
    assert [r["_ROW_ID"] for r in expected] == [0, 1, 2, 3, 4, 5]
    # Rows of the first commit show the update's sequence number, rows of the second theirs.
    assert [r["v"] for r in expected] == ["A", "b", "C", "d", "e", "f"]
    assert expected[0]["_SEQUENCE_NUMBER"] == expected[1]["_SEQUENCE_NUMBER"] > expected[5]["_SEQUENCE_NUMBER"] - 3


def test_system_columns_are_refused_where_the_table_has_none(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    assert lakectl(wh, "create", "db.plain", "--schema", "id INT, v STRING").exit_code == 0
    assert lakectl(wh, "create", "db.keyed", "--schema", "id INT NOT NULL, v STRING", "--primary-key", "id",
                   "--option", "bucket=1").exit_code == 0
    assert lakectl(wh, "create", "db.t", "--schema", "id INT, v STRING",
                   "--option", "row-tracking.enabled=true").exit_code == 0
    write_jsonl(wh, [{"id": 1, "v": "a"}])
    cases = [("db.plain", ["--select", "id,_ROW_ID"], "exists only on row-tracking tables"),
             ("db.plain", ["--where", "_SEQUENCE_NUMBER > 0"], "exists only on row-tracking tables"),
             ("db.plain", ["--select", "_VALUE_KIND"], "belongs to primary-key tables"),
             ("db.keyed", ["--select", "id,_SEQUENCE_NUMBER"], "not read from primary-key tables"),
             ("db.keyed", ["--where", "_VALUE_KIND = 0"], "not read from primary-key tables"),
             ("db.t", ["--select", "_ROW_ID", "--engine", "spark"], "read by the local engine only"),
             ("db.t", ["--follow", "--max-snapshots", "1", "--where", "_ROW_ID >= 0"], "batch scans only")]
    for table, args, words in cases:
        result = runner.invoke(app, ["--warehouse", str(wh), "scan", table, *args])
        assert result.exit_code not in (0, None), result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], result.output


def test_pypaimon_returns_no_system_column_of_a_primary_key_table(tmp_path: Path) -> None:
    """Why lakectl refuses ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` of a primary-key table:
    pypaimon 2.1 leaves them out of a projection that names them, so no Paimon reader gives
    an answer lakectl could match."""
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["id", "INT NOT NULL"], ["v", "STRING"]], "primary_keys": ["id"],
                      "partition_keys": [], "options": {"bucket": "1"}, "comment": None},
           "steps": [{"op": "write"}, {"op": "write"}]}
    official_write(job, [pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}),
                         pa.table({"id": pa.array([2], pa.int32()), "v": ["B"]})], tmp_path)
    table, _ = official_read(tmp_path / "wh" / "db.db" / "t", tmp_path,
                             projection=["id", "_SEQUENCE_NUMBER", "_VALUE_KIND"])
    assert table.column_names == ["id"]
    result = runner.invoke(app, ["--warehouse", str(tmp_path / "wh"), "scan", "db.t", "--select", "id,_VALUE_KIND"])
    assert result.exit_code not in (0, None) and "not read from primary-key tables" in result.output
