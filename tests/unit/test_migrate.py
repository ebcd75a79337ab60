"""core.ops.migrate from a source on another store (fsspec's in-memory filesystem) into a local
table: files are streamed across (copy), or streamed then deleted (in place)."""

from __future__ import annotations

import io
import sys
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_cli_migrate import rows  # noqa: E402

from core.ops.migrate import migrate  # noqa: E402
from core.table import Table  # noqa: E402

fsspec = pytest.importorskip("fsspec")


@pytest.mark.parametrize("in_place", [False, True], ids=["copy", "in-place"])
@pytest.mark.parametrize("spelling", ["memory://{root}", "memory:///{root}"])
def test_a_source_on_another_store(tmp_path: Path, in_place: bool, spelling: str) -> None:
    fs = fsspec.filesystem("memory")
    root = f"src-{uuid.uuid4().hex}"
    for n, day in enumerate(("2024-01-01", "2024-01-02")):
        buffer = io.BytesIO()
        pq.write_table(rows(n), buffer)
        fs.pipe(f"/{root}/dt={day}/part-0.parquet", buffer.getvalue())
    result = migrate(spelling.format(root=root), Table.locate("db.t", warehouse=str(tmp_path / "wh")),
                     in_place=in_place)
    assert (result.files_added, result.records_added, result.partitions_added) == (2, 6, 2)
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    got = table.scan().sort_by("id").to_pylist()
    assert [(r["id"], r["dt"]) for r in got] == [(0, "2024-01-01"), (1, "2024-01-01"), (1, "2024-01-02"),
                                                 (2, "2024-01-02"), (None, "2024-01-01"), (None, "2024-01-02")]
    assert len(fs.find(f"/{root}")) == (0 if in_place else 2)


def test_a_diff_between_tags_of_a_migrated_table_gives_the_partition_values(tmp_path: Path) -> None:
    """The migrated files lack their Hive partition column: a tag-range diff (read per bucket,
    core.kernels.diff) fills it from each bucket's partition, as a scan does."""
    import pyarrow as pa

    source = tmp_path / "src"
    for n, day in enumerate(("2024-01-01", "2024-01-02")):
        (source / f"dt={day}").mkdir(parents=True)
        pq.write_table(rows(n), source / f"dt={day}" / "part-0.parquet")
    migrate(str(source), Table.locate("db.t", warehouse=str(tmp_path / "wh")), in_place=False)
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    table.tags.create("t1", table.snapshots.latest())
    schema = table.scan().schema
    table.write(pa.Table.from_pylist([{"id": 7, "dt": "2024-01-02"}], schema=pa.schema([schema.field("id"),
                                                                                         schema.field("dt")])))
    table.tags.create("t2", table.snapshots.latest())
    assert [(r["_row_kind"], r["id"], r["dt"]) for r in table.changes("t1", "t2").to_pylist()] == \
        [("+I", 7, "2024-01-02")]
    # snapshot 1 (the migrate itself) read as changes: every migrated row, with its partition
    migrated = [(r["id"], r["dt"]) for r in table.changes(0, 1).to_pylist()]
    assert sorted(migrated, key=repr) == sorted([(r["id"], r["dt"]) for r in table.scan().to_pylist()
                                                 if (r["id"], r["dt"]) != (7, "2024-01-02")], key=repr)
    assert {dt for _, dt in migrated} == {"2024-01-01", "2024-01-02"}
