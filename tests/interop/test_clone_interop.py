"""Clones read by Java Paimon 1.0 and pypaimon exactly as the source at the cloned snapshot,
and Java can go on writing into a clone without touching the source."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run, lakectl_rows
from oracle import official_read
from test_deletion_vectors_interop import create_spec, rows, three_commits
from test_java_interop import open_table

from core.evolution import AddColumn
from core.ops.check import check
from core.ops.clone import clone
from core.ops.create import create
from core.table import Table
from core.types import parse_type

pytestmark = [pytest.mark.interop, pytest.mark.java]


def test_clone_of_a_java_dv_table_reads_as_the_source_in_java(tmp_path: Path) -> None:
    src_path = tmp_path / "wh" / "db.db" / "dv"
    java_run(src_path, three_commits(True), create=create_spec(True))
    src = open_table(src_path)
    for snapshot_id in (2, 3):
        copy_path = tmp_path / "wh" / "db.db" / f"copy{snapshot_id}"
        result = clone(src, Table.locate(f"db.copy{snapshot_id}", warehouse=str(tmp_path / "wh")),
                       snapshot_id=snapshot_id)
        assert result.snapshot_id == snapshot_id
        expected, _ = java_read(src_path, snapshot=snapshot_id)
        assert expected, "the source snapshot should hold rows"
        got, meta = java_read(copy_path)
        assert got == expected and meta["latest_snapshot"] == 1
        assert lakectl_rows(open_table(copy_path).scan()) == expected
    # Java writes and compacts the clone; the source reads as before, in Java and in lakectl.
    before, _ = java_read(src_path)
    copy_path = tmp_path / "wh" / "db.db" / "copy3"
    java_run(copy_path, [{"op": "write", "rows": rows(range(0, 10), "j", True)}, {"op": "compact", "full": True}])
    after_copy, _ = java_read(copy_path)
    assert [r for r in after_copy if r[1].startswith("j")] and after_copy != before
    assert java_read(src_path)[0] == before and lakectl_rows(src.scan()) == before
    assert check(open_table(copy_path)).ok and check(src).ok


@pytest.mark.parametrize("primary_key", [False, True], ids=["append-table", "pk-table"])
def test_clone_reads_as_the_source_in_pypaimon_and_java(tmp_path: Path, primary_key: bool) -> None:
    wh = tmp_path / "wh"
    src = Table.locate("db.src", warehouse=str(wh))
    create(src, "id INT NOT NULL, v STRING, dt STRING NOT NULL", partition_keys=["dt"],
           primary_keys=["id", "dt"] if primary_key else (),
           options={"bucket": "2" if primary_key else "-1"})
    for i in range(3):
        ids = list(range(i * 4, i * 4 + 6))
        src.write(pa.table({"id": pa.array(ids, pa.int32()), "v": [f"w{i}-{n}" for n in ids],
                            "dt": [f"d{n % 2}" for n in ids]}))
    src.alter([AddColumn("note", parse_type("STRING"))])
    src.write(pa.table({"id": pa.array([1, 100], pa.int32()), "v": ["x", "y"], "dt": ["d1", "d0"],
                        "note": ["n1", "n2"]}))
    target = Table.locate("db.copy", warehouse=str(wh))
    assert len(clone(src, target).schemas_copied) == 2
    ours, _ = official_read(src.path, tmp_path)
    theirs, meta = official_read(target.path, tmp_path)
    assert lakectl_rows(theirs) == lakectl_rows(ours) == lakectl_rows(src.scan())
    assert meta["latest_snapshot"] == 1
    assert java_read(target.path)[0] == java_read(src.path)[0] == lakectl_rows(src.scan())
