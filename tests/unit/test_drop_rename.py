"""drop, drop-database and rename under injected faults: a failure at any file operation
leaves the table whole at its old place or gone (never half there), and a rerun completes."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import NotFoundError
from core.fileio import inject_fault
from core.ops.create import create
from core.ops.drop import drop_database, drop_table
from core.ops.rename import rename_table
from core.table import Table
from core.warehouse import Warehouse

ROWS = [(1, "a"), (2, "b"), (3, "a")]


def table(wh: Path, name: str = "db.t") -> Table:
    t = Table.locate(name, warehouse=str(wh))
    create(t, "id BIGINT NOT NULL, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    t.write(pa.table({"id": pa.array([r[0] for r in ROWS], pa.int64()), "dt": [r[1] for r in ROWS]}))
    return t


def rows(t: Table) -> list[tuple]:
    return sorted((r["id"], r["dt"]) for r in t.scan().to_pylist())


def visible(path: Path) -> list[str]:
    return sorted(n for n in os.listdir(path) if not n.startswith("."))


@pytest.mark.parametrize("kind", ["create", "delete", "list", "read"])
def test_drop_fails_whole(tmp_path: Path, kind: str) -> None:
    """Fail the n-th operation of each kind in turn until drop completes unfaulted."""
    for n in range(1, 200):
        wh = tmp_path / f"{kind}-{n}"
        t = table(wh)
        with inject_fault("fail", kind, n) as fault:
            try:
                drop_table(t)
            except OSError:
                pass
        reached = fault.seen >= n
        if os.path.exists(t.path):
            assert rows(Table.open("db.t", warehouse=str(wh))) == sorted(ROWS)  # untouched
        assert Warehouse.open(str(wh)).tables("db") == (["t"] if os.path.exists(t.path) else [])
        drop_table(t, if_exists=True)  # the rerun finishes, including a hidden leftover
        assert os.listdir(wh / "db.db") == []
        if not reached:
            break
    else:
        pytest.fail("drop never completed without reaching the fault")


def test_drop_leftover_is_deleted_by_the_next_drop(tmp_path: Path) -> None:
    t = table(tmp_path / "wh")
    with inject_fault("fail", "delete", 1):
        with pytest.raises(OSError):
            drop_table(t)
    leftovers = os.listdir(tmp_path / "wh" / "db.db")
    assert len(leftovers) == 1 and leftovers[0].startswith(".t.dropping-")
    assert Warehouse.open(str(tmp_path / "wh")).tables("db") == []
    with pytest.raises(NotFoundError):
        Table.open("db.t", warehouse=str(tmp_path / "wh"))
    dry = drop_table(t, if_exists=True, dry_run=True)
    assert not dry.existed and len(os.listdir(tmp_path / "wh" / "db.db")) == 1  # a dry run deletes nothing
    drop_table(t, if_exists=True)
    assert os.listdir(tmp_path / "wh" / "db.db") == []


def test_drop_database_cascade_fails_safely(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    table(wh, "db.a")
    table(wh, "db.b")
    with inject_fault("fail", "delete", 2):
        with pytest.raises(OSError):
            drop_database(Warehouse.open(str(wh)), "db", cascade=True)
    remaining = Warehouse.open(str(wh)).tables("db")
    for name in remaining:
        assert rows(Table.open(f"db.{name}", warehouse=str(wh))) == sorted(ROWS)
    result = drop_database(Warehouse.open(str(wh)), "db", cascade=True)
    assert result.tables == tuple(remaining) and not (wh / "db.db").exists()


def test_rename_failure_leaves_the_old_name(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = table(wh)
    with inject_fault("fail", "create", 1):
        with pytest.raises(OSError):
            rename_table(Warehouse.open(str(wh)), "db.t", "db.u")
    assert visible(wh / "db.db") == ["t"] and rows(t) == sorted(ROWS)
    rename_table(Warehouse.open(str(wh)), "db.t", "db.u")
    assert visible(wh / "db.db") == ["u"] and rows(Table.open("db.u", warehouse=str(wh))) == sorted(ROWS)


def test_table_facade_truncate_and_drop_partitions_dry_run_by_default(tmp_path: Path) -> None:
    t = table(tmp_path / "wh")
    assert t.drop_partitions([{"dt": "a"}]).records_deleted == 2 and t.snapshots.list_ids() == [1]
    assert t.drop_partitions([{"dt": "a"}], dry_run=False).snapshot_id == 2
    assert rows(t) == [(2, "b")]
    assert t.truncate().files_deleted == 1 and t.snapshots.list_ids() == [1, 2]
    assert t.truncate(dry_run=False).snapshot_id == 3 and rows(t) == []
