"""Tables written by Paimon 2.x (pypaimon 2.1) that lakectl does not yet fully read or write as
Paimon does: the command must stop with one line naming the option (never "internal error",
never wrong rows), and reads lakectl does allow must equal pypaimon's."""

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


def lakectl(wh: Path, *args: Any, input: str | None = None) -> Result:
    return runner.invoke(app, ["--warehouse", str(wh), "--format", "jsonl", *map(str, args)], input=input,
                         catch_exceptions=False)


def pypaimon_table(tmp_path: Path, options: dict[str, str], primary_keys: list[str]) -> Path:
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["id", "INT NOT NULL"], ["v", "STRING"]], "primary_keys": primary_keys,
                      "partition_keys": [], "options": options, "comment": None},
           "steps": [{"op": "write"}, {"op": "write"}]}
    batches = [pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}),
               pa.table({"id": pa.array([3], pa.int32()), "v": ["c"]})]
    official_write(job, batches, tmp_path)
    return tmp_path / "wh" / "db.db" / "t"


def assert_refused(result: Result, option: str) -> None:
    assert result.exit_code not in (0, None), result.output
    text = result.output
    assert option in text and "internal error" not in text, text


def scanned(result: Result) -> list[tuple[int, str]]:
    assert result.exit_code == 0, result.output
    return sorted((r["id"], r["v"]) for r in map(json.loads, result.stdout.splitlines()) if r)


def test_postpone_bucket_tables_read_as_pypaimon_and_refuse_compact(tmp_path: Path) -> None:
    path = pypaimon_table(tmp_path, {"bucket": "-2"}, ["id"])
    wh = tmp_path / "wh"
    assert any((path / "bucket-postpone").iterdir())  # the rows are written, in the postpone bucket
    expected, _ = official_read(path, tmp_path)
    # Paimon reads only real buckets: nothing until a postpone compaction moves the rows.
    assert expected.num_rows == 0
    assert scanned(lakectl(wh, "scan", "db.t")) == []
    # Reads that would meet the postponed files are refused rather than failing on them.
    assert_refused(lakectl(wh, "lookup", "db.t", "--key", "id=1"), "bucket=-2")
    assert_refused(lakectl(wh, "scan", "db.t", "--incremental-between", "0,2"), "bucket=-2")
    assert_refused(lakectl(wh, "compact", "db.t"), "bucket=-2")
    assert_refused(lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl", input='{"id": 9, "v": "z"}\n'), "bucket=-2")


def test_row_tracking_tables_read_as_pypaimon_before_and_after_compaction(tmp_path: Path) -> None:
    path = pypaimon_table(tmp_path, {"row-tracking.enabled": "true"}, [])
    wh = tmp_path / "wh"
    expected, _ = official_read(path, tmp_path)
    got = scanned(lakectl(wh, "scan", "db.t"))
    assert got == sorted(zip(expected.column("id").to_pylist(), expected.column("v").to_pylist()))
    assert got == [(1, "a"), (2, "b"), (3, "c")]
    # Compaction (test_row_tracking_interop.py checks the _ROW_IDs) leaves the rows as they were.
    assert lakectl(wh, "compact", "db.t").exit_code == 0
    after, _ = official_read(path, tmp_path)
    assert sorted(zip(after.column("id").to_pylist(), after.column("v").to_pylist())) == got


VARIANT = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
VECTOR = pa.list_(pa.field("element", pa.float32()), 3)


def paimon2_table(tmp_path: Path, fields: list[Any], batches: list[pa.Table], *, primary_keys: list[str] = (),
                  options: dict[str, str] | None = None) -> Path:
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": fields, "primary_keys": list(primary_keys), "partition_keys": [],
                      "options": options or {}, "comment": None},
           "steps": [{"op": "write"} for _ in batches]}
    official_write(job, batches, tmp_path)
    return tmp_path / "wh" / "db.db" / "t"


def lakectl_json(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


@pytest.mark.parametrize("primary_keys,file_format", [([], "parquet"), (["id"], "parquet"), ([], "avro")],
                         ids=["append", "primary-key", "avro"])
def test_variant_and_vector_columns_read_as_pypaimon_returns_them(tmp_path: Path, primary_keys: list[str],
                                                                  file_format: str) -> None:
    """pypaimon 2.1 stores VARIANT as its encoding (a struct of value and metadata binaries)
    and VECTOR as a fixed-size list; lakectl reads both exactly as pypaimon does, filters by
    the other columns, and refuses writes naming the column."""
    variant = {"value": bytes([0x0C, 0x01]), "metadata": bytes([0x01, 0x00, 0x00])}
    first = pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([variant, None], VARIANT),
                      "e": pa.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.5]], VECTOR)})
    second = pa.table({"id": pa.array([3, 2], pa.int32()), "v": pa.array([None, variant], VARIANT),
                       "e": pa.array([[4.0, 5.0, 6.5], [7.0, 8.0, 9.0]], VECTOR)})
    fields = [["id", "INT NOT NULL"], ["v", "VARIANT"],
              ["e", {"type": "VECTOR", "element": "FLOAT", "length": 3, "nullable": True}]]
    path = paimon2_table(tmp_path, fields, [first, second], primary_keys=primary_keys,
                         options={"file.format": file_format, **({"bucket": "1"} if primary_keys else {})})
    official, _ = official_read(path, tmp_path)
    expected = sorted(official.to_pylist(), key=lambda r: (r["id"], r["e"]))
    # pypaimon's own values, in the JSON text encoding (binaries as base64).
    expected = [{**r, "v": None if r["v"] is None else {k: _b64(x) for k, x in r["v"].items()}} for r in expected]
    assert len(expected) == (3 if primary_keys else 4)
    wh = tmp_path / "wh"
    assert sorted(lakectl_json(lakectl(wh, "scan", "db.t")), key=lambda r: (r["id"], r["e"])) == expected
    assert lakectl_json(lakectl(wh, "scan", "db.t", "--where", "id = 3", "--select", "e")) == [
        {"e": [4.0, 5.0, 6.5]}]
    described = lakectl_json(lakectl(wh, "describe", "db.t"))[0]
    assert [c["type"] for c in described["columns"]] == ["INT", "VARIANT", "VECTOR<FLOAT, 3>"]
    result = lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl", input='{"id": 9}\n')
    assert result.exit_code != 0 and "column v has type VARIANT, a Paimon 2.x type lakectl does not write" \
        in result.output, result.output
    assert official_read(path, tmp_path)[0].num_rows == official.num_rows  # nothing was written


def test_a_blob_column_is_refused_by_reads_that_touch_it_naming_column_and_type(tmp_path: Path) -> None:
    """pypaimon 2.1 keeps BLOB values in .blob files of data-evolution tables: a scan touching
    the column stops naming it; --select of the other columns meets only the table's own
    data-evolution rule (never an internal error)."""
    batch = pa.table({"id": pa.array([1, 2], pa.int32()), "payload": pa.array([b"xyz", None], pa.large_binary())})
    paimon2_table(tmp_path, [["id", "INT"], ["payload", "BLOB"]], [batch],
                  options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    wh = tmp_path / "wh"
    result = lakectl(wh, "scan", "db.t")
    assert result.exit_code not in (0, None), result.output
    assert result.stderr.strip() == ("error: table db.t: column payload has type BLOB, which lakectl does not read "
                                     "(Paimon keeps its values in .blob files); --select the other columns")
    result = lakectl(wh, "scan", "db.t", "--where", "payload IS NULL", "--select", "id")
    assert "column payload has type BLOB" in result.output
    result = lakectl(wh, "scan", "db.t", "--select", "id")
    assert "column payload" not in result.output and "internal error" not in result.output, result.output


@pytest.mark.spark
def test_variant_and_vector_columns_read_the_same_on_spark(tmp_path: Path) -> None:
    from core.engines import EngineSettings
    from core.table import Table

    variant = {"value": bytes([0x0C, 0x01]), "metadata": bytes([0x01, 0x00, 0x00])}
    batch = pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([variant, None], VARIANT),
                      "e": pa.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]], VECTOR)})
    paimon2_table(tmp_path, [["id", "INT NOT NULL"], ["v", "VARIANT"],
                             ["e", {"type": "VECTOR", "element": "FLOAT", "length": 3, "nullable": True}]], [batch])
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    spark = table.scan(engine_settings=EngineSettings(engine="spark", master="local[1]"))
    assert sorted(spark.to_pylist(), key=lambda r: r["id"]) == batch.to_pylist()
    assert sorted(table.scan().to_pylist(), key=lambda r: r["id"]) == batch.to_pylist()
