"""Java Paimon 1.0 reads a table lakectl repaired (``check --repair``) as the model says: the
latest snapshot, every kept snapshot and a kept tag whose snapshot repair removed.

The table: five commits (the fourth a full compaction), then the data file the second commit
added is deleted, so snapshots 2 and 3 and tag ``t2`` cannot be read; repair keeps 4..5,
drops 1..3 and ``t2``, keeps ``t1``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_oracle import java_read, java_read_snapshots

from core.ops.check import check
from core.ops.create import create
from core.ops.repair import repair
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java, pytest.mark.slow]

WRITES: list[dict[int, str] | str] = [
    {1: "a", 2: "a", 3: "a"},
    {2: "b", 4: "b"},
    {1: "c"},
    "compact",
    {5: "d", 2: "e"},
]


def test_java_reads_a_repaired_table_as_the_model_says(tmp_path: Path) -> None:
    table = Table.locate("db.repaired", warehouse=str(tmp_path / "wh"))
    create(table, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1"})
    state: dict[int, str] = {}
    model: dict[int, list[list[object]]] = {}
    added_by_2: set[Path] = set()
    for sid, write in enumerate(WRITES, 1):
        before = set(Path(table.path).rglob("data-*.parquet"))
        if write == "compact":
            table.compact(full=True)
        else:
            table.write(pa.table({"id": list(write), "v": list(write.values())}))
            state.update(write)
        model[sid] = sorted([k, v] for k, v in state.items())
        if sid == 2:
            added_by_2 = set(Path(table.path).rglob("data-*.parquet")) - before
    table.tags.create("t1", table.snapshots.snapshot(1))
    table.tags.create("t2", table.snapshots.snapshot(2))
    (victim,) = added_by_2
    victim.unlink()

    result = repair(table)
    assert [r.snapshot_id for r in result.snapshots_removed] == [1, 2, 3]
    assert [t.tag for t in result.tags_removed] == ["t2"]
    assert result.ok and check(table).ok

    rows, meta = java_read(table.path)
    assert meta["latest_snapshot"] == 5 and rows == model[5]
    assert java_read_snapshots(table.path, [4, 5]) == {4: model[4], 5: model[5]}
    tagged, _ = java_read(table.path, tag="t1")
    assert tagged == model[1]
