"""Maintenance on a branch against Java Paimon 1.0 (the reference) and pypaimon: after
lakectl rolls a branch back and expires a branch (and removes orphans), Java and pypaimon
read main and the branch as the model says, and every snapshot each still lists. Expected
rows come from a dict model of what was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, lakectl_rows
from oracle import official_read

from core.ops.branches import create_branch
from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.tags import create_tag
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def write(table: Table, states: dict[int, dict[int, str]], rows: dict[int, str]) -> None:
    table.write(pa.Table.from_pylist([{"id": k, "v": v} for k, v in rows.items()], schema=SCHEMA))
    previous = states[max(states)] if states else {}
    states[table.snapshots.latest_id()] = {**previous, **rows}


def same(rows: list[list[Any]], model: dict[int, str]) -> bool:
    return sorted(rows, key=str) == sorted([[k, v] for k, v in model.items()], key=str)


def test_java_and_pypaimon_read_main_and_branches_after_branch_rollback_and_expire(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "2", "write-only": "true"})
    main: dict[int, dict[int, str]] = {}
    write(t, main, {1: "a", 2: "b", 3: "c"})
    write(t, main, {2: "B", 4: "d"})
    create_tag(t, "m2", snapshot_id=2)
    # Two branches forked at main's 2, each with commits of its own.
    branches: dict[str, dict[int, dict[int, str]]] = {}
    for name in ("rb", "ex"):
        create_branch(t, name, snapshot_id=2)
        branches[name] = {2: dict(main[2])}
    rb, ex = t.on_branch("rb"), t.on_branch("ex")
    write(rb, branches["rb"], {1: "rb3", 5: "e"})
    write(rb, branches["rb"], {6: "f"})
    write(ex, branches["ex"], {3: "ex3", 7: "g"})
    write(ex, branches["ex"], {8: "h"})
    ex.compact(full=True)  # DELETEs main's files (main still reads them) and ex's own
    branches["ex"][5] = dict(branches["ex"][4])
    write(ex, branches["ex"], {9: "i"})
    write(t, main, {10: "j"})

    assert rb.rollback(snapshot_id=3, dry_run=False).snapshots_removed == (4,)
    del branches["rb"][4]
    assert ex.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False).snapshots_expired == [2, 3, 4, 5]
    branches["ex"] = {6: branches["ex"][6]}
    remove_orphan_files(t, older_than="0s", force=True)

    assert t.snapshots.list_ids() == [1, 2, 3]
    for sid, model in main.items():
        rows, meta = java_read(t.path, snapshot=sid)
        assert same(rows, model), ("main", sid)
        assert rows == lakectl_rows(t.scan(snapshot_id=sid))
    for name, states in branches.items():
        view = t.on_branch(name)
        assert view.snapshots.list_ids() == sorted(states)
        for sid, model in states.items():
            rows, meta = java_read(t.path, branch=name, snapshot=sid)
            assert same(rows, model), (name, sid)
        rows, meta = java_read(t.path, branch=name)
        assert same(rows, states[max(states)]) and meta["latest_snapshot"] == max(states), name
        official, official_meta = official_read(t.path, tmp_path, branch=name)
        assert lakectl_rows(official) == rows and official_meta["latest_snapshot"] == max(states), name
    rows, _ = java_read(t.path, tag="m2")
    assert same(rows, main[2])
