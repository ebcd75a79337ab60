"""truncate, drop-partition and rename by lakectl; Java Paimon 1.0 (the reference) and pypaimon
(the official Python reader) read the result exactly as lakectl does and as the test expects.

Expected rows are hand-computed from the batches written; both oracles also read the snapshot
before the OVERWRITE, whose files truncate and drop-partition leave on disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, lakectl_rows
from oracle import official_read

from core.ops.create import create
from core.ops.rename import rename_table
from core.ops.truncate import drop_partitions, truncate
from core.table import Table
from core.warehouse import Warehouse

pytestmark = [pytest.mark.interop, pytest.mark.java]

FIRST = [("a", 1, 1, "x"), ("a", 2, 2, "y"), ("b", 1, 3, "z")]
SECOND = [("a", 1, 1, "x2"), ("b", 2, 4, "w"), ("c", 1, 5, "v")]


def batch(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table({"dt": [r[0] for r in rows], "hr": pa.array([r[1] for r in rows], pa.int32()),
                     "id": pa.array([r[2] for r in rows], pa.int64()), "v": [r[3] for r in rows]})


def written(tmp_path: Path, primary_key: bool) -> tuple[Table, list[tuple[Any, ...]]]:
    """Two commits into (dt, hr) partitions; returns the table and its rows after both."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    options = {"bucket": "2"} if primary_key else {"bucket": "2", "bucket-key": "id"}
    create(t, "dt STRING NOT NULL, hr INT NOT NULL, id BIGINT NOT NULL, v STRING",
           primary_keys=["dt", "hr", "id"] if primary_key else [], partition_keys=["dt", "hr"], options=options)
    t.write(batch(FIRST))
    t.write(batch(SECOND))
    if primary_key:  # ("a", 1, 1) was updated by the second write
        rows = sorted([r for r in FIRST if r[:3] != ("a", 1, 1)] + SECOND)
    else:
        rows = sorted(FIRST + SECOND)
    return t, rows


def lakectl_scan(t: Table, **kw: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in ("dt", "hr", "id", "v")) for r in t.scan(**kw).to_pylist())


def pypaimon_rows(t: Table, tmp_path: Path, **kw: Any) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    data, meta = official_read(t.path, tmp_path, **kw)
    return sorted(tuple(r[c] for c in ("dt", "hr", "id", "v")) for r in data.to_pylist()), meta


def assert_oracles_read(t: Table, tmp_path: Path, expected: list[tuple[Any, ...]], snapshot: int | None = None) -> None:
    assert lakectl_scan(t, snapshot_id=snapshot) == expected
    rows, meta = pypaimon_rows(t, tmp_path, **({"snapshot": snapshot} if snapshot else {}))
    assert rows == expected
    java_rows, java_meta = java_read(t.path, snapshot=snapshot)
    assert java_rows == lakectl_rows(t.scan(snapshot_id=snapshot))
    if snapshot is None:
        assert meta["latest_snapshot"] == java_meta["latest_snapshot"] == t.snapshots.latest_id()


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_oracles_read_a_truncated_table(tmp_path: Path, primary_key: bool) -> None:
    t, before = written(tmp_path, primary_key)
    result = truncate(t)
    assert result.snapshot_id == 3 and result.records_deleted == 6  # file rows: an update is still two rows
    assert_oracles_read(t, tmp_path, [])
    assert_oracles_read(t, tmp_path, before, snapshot=2)  # the files stay for expire
    # and the table takes writes after it, which both oracles see
    t.write(batch([("z", 9, 9, "after")]))
    assert_oracles_read(t, tmp_path, [("z", 9, 9, "after")])


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_oracles_read_a_table_after_drop_partition(tmp_path: Path, primary_key: bool) -> None:
    t, before = written(tmp_path, primary_key)
    result = drop_partitions(t, [{"dt": "a", "hr": "1"}, {"dt": "c", "hr": "1"}])
    assert result.snapshot_id == 3 and not result.missing
    expected = [r for r in before if r[:2] not in (("a", 1), ("c", 1))]
    assert expected == sorted([("a", 2, 2, "y"), ("b", 1, 3, "z"), ("b", 2, 4, "w")])
    assert_oracles_read(t, tmp_path, expected)
    assert_oracles_read(t, tmp_path, before, snapshot=2)


def test_oracles_read_a_renamed_table(tmp_path: Path) -> None:
    t, before = written(tmp_path, primary_key=True)
    wh = Warehouse.open(str(tmp_path / "wh"))
    result = rename_table(wh, "db.t", "db.renamed")
    assert not Path(t.path).exists()
    renamed = Table.open("db.renamed", warehouse=str(tmp_path / "wh"))
    assert renamed.path == result.new_path
    assert_oracles_read(renamed, tmp_path, before)
    assert_oracles_read(renamed, tmp_path, sorted(FIRST), snapshot=1)
