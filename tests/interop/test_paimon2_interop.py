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


def test_postpone_bucket_tables_read_as_pypaimon(tmp_path: Path) -> None:
    path = pypaimon_table(tmp_path, {"bucket": "-2"}, ["id"])
    wh = tmp_path / "wh"
    assert any((path / "bucket-postpone").iterdir())  # the rows are written, in the postpone bucket
    expected, _ = official_read(path, tmp_path)
    # Paimon reads only real buckets: nothing until a postpone compaction moves the rows
    # (lakectl's write and compaction of these tables: test_postpone_bucket_interop.py).
    assert expected.num_rows == 0
    assert scanned(lakectl(wh, "scan", "db.t")) == []
    # Reads that would meet the postponed files are refused rather than failing on them.
    assert_refused(lakectl(wh, "lookup", "db.t", "--key", "id=1"), "bucket=-2")
    assert_refused(lakectl(wh, "scan", "db.t", "--incremental-between", "0,2"), "bucket=-2")


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


def blob_table(tmp_path: Path) -> Path:
    """A BLOB table as pypaimon 2.1 writes one: two commits whose blob files roll at 60 bytes
    (a row-id range in several .blob files), an update of the BLOB column by row id (newer
    blob files holding placeholders for the rows it leaves) and one of another column."""
    blobs = pa.large_binary()
    batches = [pa.table({"id": pa.array([1, 2, 3], pa.int32()), "payload": pa.array([b"a" * 100, None, b"c" * 50], blobs),
                         "s": ["a", "b", "c"]}),
               pa.table({"id": pa.array([4, 5], pa.int32()), "payload": pa.array([bytes(range(256)), b"e" * 70], blobs),
                         "s": ["d", "e"]}),
               pa.table({"_ROW_ID": pa.array([1, 4], pa.int64()), "payload": pa.array([b"B" * 3, None], blobs)}),
               pa.table({"_ROW_ID": pa.array([0], pa.int64()), "s": ["A"]})]
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["id", "INT"], ["payload", "BLOB"], ["s", "STRING"]], "primary_keys": [],
                      "partition_keys": [], "options": {"row-tracking.enabled": "true", "data-evolution.enabled": "true",
                                                        "blob.target-file-size": "60b"}, "comment": None},
           "steps": [{"op": "write"}, {"op": "write"}, {"op": "update_by_row_id", "columns": ["payload"]},
                     {"op": "update_by_row_id", "columns": ["s"]}]}
    official_write(job, batches, tmp_path)
    return tmp_path / "wh" / "db.db" / "t"


def test_a_blob_table_reads_as_pypaimon_with_and_without_its_blob_column(tmp_path: Path) -> None:
    """pypaimon 2.1 keeps BLOB values in .blob files beside the data files of a row-id range:
    lakectl returns the same bytes (base64 in JSON, as every binary), reads the other columns
    without opening a .blob file, and refuses writes naming the column."""
    path = blob_table(tmp_path)
    wh = tmp_path / "wh"
    blob_files = sorted(path.glob("bucket-0/*.blob"))
    assert len(blob_files) >= 4  # rolled and updated: several per row-id range
    official, _ = official_read(path, tmp_path)
    expected = sorted(official.to_pylist(), key=lambda r: r["id"])
    assert [r["payload"] for r in expected] == [b"a" * 100, b"BBB", b"c" * 50, bytes(range(256)), None]
    as_json = [{**r, "payload": None if r["payload"] is None else _b64(r["payload"])} for r in expected]
    assert sorted(lakectl_json(lakectl(wh, "scan", "db.t")), key=lambda r: r["id"]) == as_json
    assert lakectl_json(lakectl(wh, "scan", "db.t", "--select", "payload,id", "--where", "id >= 4")) == [
        {"payload": r["payload"], "id": r["id"]} for r in as_json if r["id"] >= 4]
    others = sorted(official_read(path, tmp_path, projection=["id", "s"])[0].to_pylist(), key=lambda r: r["id"])
    # check --deep decodes the .blob files too: pypaimon's pass, a damaged byte is named.
    assert lakectl_json(lakectl(wh, "check", "db.t", "--deep"))[0]["problems"] == []
    largest = max(blob_files, key=lambda f: f.stat().st_size)  # its first record holds bytes
    pristine = largest.read_bytes()
    largest.write_bytes(pristine[:5] + bytes([pristine[5] ^ 1]) + pristine[6:])
    result = lakectl(wh, "check", "db.t", "--deep")
    assert result.exit_code not in (0, None)
    problems = json.loads(result.stdout.splitlines()[0])["problems"]
    assert [(p["path"], "CRC" in p["detail"]) for p in problems] == [(str(largest), True)], problems
    largest.write_bytes(pristine)
    # With the .blob files gone, reads of the other columns are unchanged: they never open one.
    for f in blob_files:
        f.rename(f.with_suffix(".moved"))
    assert sorted(lakectl_json(lakectl(wh, "scan", "db.t", "--select", "id,s")), key=lambda r: r["id"]) == others
    assert lakectl_json(lakectl(wh, "scan", "db.t", "--select", "s", "--where", "id = 1")) == [{"s": "A"}]
    result = lakectl(wh, "scan", "db.t")
    assert result.exit_code not in (0, None) and "missing" in result.stderr and ".blob" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for f in blob_files:
        f.with_suffix(".moved").rename(f)
    result = lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl", input='{"id": 9, "s": "z"}\n')
    assert result.exit_code not in (0, None)
    assert result.stderr.strip() == ("error: table db.t: column payload has type BLOB, a Paimon 2.x type lakectl "
                                     "does not write (reads work)")
    assert official_read(path, tmp_path)[0].num_rows == len(expected)  # nothing was written


def test_blob_columns_lakectl_cannot_read_exactly_are_refused_naming_them(tmp_path: Path) -> None:
    """A BLOB inside another type, or one Paimon keeps as descriptors in the data files, is
    not read from .blob files: a read touching it stops naming it; the other columns read."""
    batch = pa.table({"id": pa.array([1, 2], pa.int32()), "payload": pa.array([b"xyz", None], pa.large_binary())})
    path = paimon2_table(tmp_path, [["id", "INT"], ["payload", "BLOB"]], [batch],
                         options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    wh = tmp_path / "wh"
    schema_file = path / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["options"]["blob-descriptor-field"] = "payload"
    schema_file.write_text(json.dumps(schema))
    result = lakectl(wh, "scan", "db.t")
    assert result.exit_code not in (0, None), result.output
    assert result.stderr.strip() == ("error: table db.t: column payload has type BLOB, which lakectl does not read "
                                     "(Paimon keeps its values in .blob files); --select the other columns")
    assert lakectl_json(lakectl(wh, "scan", "db.t", "--select", "id")) == [{"id": 1}, {"id": 2}]


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
