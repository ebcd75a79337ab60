"""Row tracking (Paimon 2.x, ``row-tracking.enabled=true`` on append tables): every row has a
stable ``_ROW_ID``. lakectl's writes give new files their ``first_row_id`` from the snapshot's
``nextRowId`` as Paimon does; pypaimon 2.1 reads the ids, and a model (ids in commit order,
new rows numbered on from the last) says which they must be."""

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
OPTIONS = {"row-tracking.enabled": "true"}


def lakectl(wh: Path, *args: Any, input: str | None = None) -> Result:
    return runner.invoke(app, ["--warehouse", str(wh), "--format", "jsonl", *map(str, args)], input=input,
                         catch_exceptions=False)


def write_jsonl(wh: Path, records: list[dict[str, Any]]) -> None:
    result = lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl",
                     input="".join(json.dumps(r) + "\n" for r in records))
    assert result.exit_code == 0, result.output


def row_ids(path: Path, tmp_path: Path) -> dict[int, int]:
    """id -> _ROW_ID as pypaimon reads them."""
    table, _ = official_read(path, tmp_path, projection=["id", "_ROW_ID"])
    got = dict(zip(table.column("id").to_pylist(), table.column("_ROW_ID").to_pylist()))
    assert len(got) == table.num_rows
    return got


def next_row_id(path: Path) -> int | None:
    snapshot_dir = path / "snapshot"
    latest = (snapshot_dir / "LATEST").read_text().strip()
    return json.loads((snapshot_dir / f"snapshot-{latest}").read_text()).get("nextRowId")


def test_lakectl_writes_continue_pypaimons_row_ids(tmp_path: Path) -> None:
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["id", "INT"], ["v", "STRING"]], "primary_keys": [], "partition_keys": [],
                      "options": OPTIONS, "comment": None},
           "steps": [{"op": "write"}, {"op": "write"}]}
    official_write(job, [pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}),
                         pa.table({"id": pa.array([3], pa.int32()), "v": ["c"]})], tmp_path)
    path, wh = tmp_path / "wh" / "db.db" / "t", tmp_path / "wh"
    assert row_ids(path, tmp_path) == {1: 0, 2: 1, 3: 2}
    assert next_row_id(path) == 3
    write_jsonl(wh, [{"id": 4, "v": "d"}, {"id": 5, "v": "e"}])
    write_jsonl(wh, [{"id": 6, "v": "f"}])
    # The model: rows numbered in commit order, each commit's rows in input order.
    model = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5}
    assert row_ids(path, tmp_path) == model
    assert next_row_id(path) == 6
    # A full compaction rewrites pypaimon's and lakectl's four files into one; every row keeps
    # its id. (Without --full, four tiny files fill no bin of Java's coordinator: nothing to do.)
    compacted = lakectl(wh, "compact", "db.t", "--full")
    assert compacted.exit_code == 0, compacted.output
    report = json.loads(compacted.stdout)
    assert (report["files_before"], report["files_after"]) == (4, 1)
    assert row_ids(path, tmp_path) == model
    assert next_row_id(path) == 6
    # pypaimon writes on after lakectl, from the nextRowId lakectl left.
    job["steps"] = [{"op": "write"}]
    job["existing"] = True
    official_write(job, [pa.table({"id": pa.array([7], pa.int32()), "v": ["g"]})], tmp_path)
    assert row_ids(path, tmp_path)[7] == 6


def test_a_fresh_lakectl_row_tracking_table_reads_in_pypaimon(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    assert lakectl(wh, "create", "db.t", "--schema", "id INT, v STRING",
                   "--option", "row-tracking.enabled=true").exit_code == 0
    write_jsonl(wh, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}])
    write_jsonl(wh, [{"id": 4, "v": "d"}])
    path = wh / "db.db" / "t"
    assert row_ids(path, tmp_path) == {1: 0, 2: 1, 3: 2, 4: 3}
    assert next_row_id(path) == 4
    official, _ = official_read(path, tmp_path)
    assert sorted(official.column("v").to_pylist()) == ["a", "b", "c", "d"]


def test_compaction_keeps_row_ids_across_partitions_and_delete_is_refused(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    assert lakectl(wh, "create", "db.t", "--schema", "id INT, p STRING", "--partition-by", "p",
                   "--option", "row-tracking.enabled=true").exit_code == 0
    # Each commit numbers its two partitions' files one after the other, so a partition's
    # files have gaps between their ids: compaction must not close them.
    for i in range(1, 4):
        write_jsonl(wh, [{"id": i, "p": "a"}, {"id": 10 + i, "p": "b"}])
    path = wh / "db.db" / "t"
    before = row_ids(path, tmp_path)
    assert sorted(before.values()) == list(range(6))
    assert {before[1], before[11]} == {0, 1} and {before[3], before[13]} == {4, 5}
    assert lakectl(wh, "compact", "db.t").exit_code == 0
    assert row_ids(path, tmp_path) == before
    result = lakectl(wh, "delete", "db.t", "--where", "id = 1")
    assert result.exit_code not in (0, None), result.output
    assert "row-tracking.enabled" in result.output and "internal error" not in result.output
    assert row_ids(path, tmp_path) == before
