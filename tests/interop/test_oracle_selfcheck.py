"""The oracle harness round-trips through pypaimon alone.

Tables written by ``official_write`` and read back with ``official_read`` must
match rows computed here independently; if this fails, interop failures say
nothing about lakectl.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle import official_read, official_write

pytestmark = pytest.mark.interop

PK_SCHEMA = pa.schema([
    ("dt", pa.string()),
    ("id", pa.int64()),
    ("name", pa.string()),
    ("amount", pa.float64()),
    ("_rk", pa.string()),
])

Key = tuple[str, int]
Row = dict[str, Any]


def _batch(schema: pa.Schema, rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def _apply(state: dict[Key, Row], rows: list[Row]) -> dict[Key, Row]:
    """Deduplicate merge engine with rowkind.field: the last record per key wins;
    a final -U/-D removes the key."""
    state = dict(state)
    for row in rows:
        key = (row["dt"], row["id"])
        if row["_rk"] in ("+I", "+U"):
            state[key] = row
        else:
            state.pop(key, None)
    return state


def _by_key(table: pa.Table) -> dict[Key, Row]:
    rows = table.to_pylist()
    keyed = {(row["dt"], row["id"]): row for row in rows}
    assert len(keyed) == len(rows), "primary key seen twice in a merged read"
    return keyed


def _multiset(rows: list[Row]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(row.values()) for row in rows)


def _pk_steps() -> list[list[Row]]:
    inserts = [
        {"dt": dt, "id": i, "name": f"n{i}", "amount": i * 1.5, "_rk": "+I"}
        for dt in ("2024-01-01", "2024-01-02")
        for i in range(1, 11)
    ]
    updates = [
        {"dt": "2024-01-01", "id": 3, "name": "n3", "amount": 4.5, "_rk": "-U"},
        {"dt": "2024-01-01", "id": 3, "name": "n3-new", "amount": 300.0, "_rk": "+U"},
        {"dt": "2024-01-02", "id": 7, "name": "n7", "amount": 10.5, "_rk": "-U"},
        {"dt": "2024-01-02", "id": 7, "name": None, "amount": None, "_rk": "+U"},
        {"dt": "2024-01-03", "id": 1, "name": "fresh", "amount": 0.25, "_rk": "+I"},
        {"dt": "2024-01-01", "id": 5, "name": "twice-a", "amount": 1.0, "_rk": "+U"},
        {"dt": "2024-01-01", "id": 5, "name": "twice-b", "amount": 2.0, "_rk": "+U"},
    ]
    deletes = [
        {"dt": "2024-01-01", "id": 1, "name": "n1", "amount": 1.5, "_rk": "-D"},
        {"dt": "2024-01-02", "id": 10, "name": "n10", "amount": 15.0, "_rk": "-D"},
        {"dt": "2024-01-03", "id": 1, "name": "fresh", "amount": 0.25, "_rk": "-D"},
        {"dt": "2024-01-02", "id": 99, "name": "absent", "amount": 0.0, "_rk": "-D"},
    ]
    return [inserts, updates, deletes]


def test_pk_table_inserts_updates_deletes_and_time_travel(tmp_path: Path) -> None:
    steps = _pk_steps()
    job = {
        "warehouse": str(tmp_path / "wh"),
        "table": "db.pk",
        "schema": {
            "fields": [["dt", "STRING"], ["id", "BIGINT"], ["name", "STRING"],
                       ["amount", "DOUBLE"], ["_rk", "STRING"]],
            "primary_keys": ["dt", "id"],
            "partition_keys": ["dt"],
            "options": {"bucket": "2", "rowkind.field": "_rk"},
            "comment": None,
        },
        "steps": [
            {"op": "write", "overwrite": False, "overwrite_partition": None},
            {"op": "tag", "name": "t1"},
            {"op": "write", "overwrite": False, "overwrite_partition": None},
            {"op": "write", "overwrite": False, "overwrite_partition": None},
        ],
    }
    result = official_write(job, [_batch(PK_SCHEMA, rows) for rows in steps], tmp_path)
    assert result["latest_snapshot"] == 3
    assert [s["latest_snapshot"] for s in result["steps"]] == [1, 1, 2, 3]
    table_path = result["table_path"]
    assert Path(table_path) == tmp_path / "wh" / "db.db" / "pk"

    states = [_apply({}, steps[0])]
    states.append(_apply(states[0], steps[1]))
    states.append(_apply(states[1], steps[2]))
    assert len(states[2]) == 18  # sanity check of the model itself

    latest, meta = official_read(table_path, tmp_path)
    assert _by_key(latest) == states[2]
    assert meta["latest_snapshot"] == 3
    assert meta["snapshot"] == 3
    assert meta["rows"] == 18
    assert meta["columns"] == PK_SCHEMA.names
    assert meta["schema"] == [["dt", "STRING NOT NULL"], ["id", "BIGINT NOT NULL"], ["name", "STRING"],
                              ["amount", "DOUBLE"], ["_rk", "STRING"]]

    at_tag, tag_meta = official_read(table_path, tmp_path, tag="t1")
    assert _by_key(at_tag) == states[0]
    assert tag_meta["snapshot"] == 1
    assert tag_meta["latest_snapshot"] == 3

    for snapshot_id, expected in enumerate(states, start=1):
        rows, snap_meta = official_read(table_path, tmp_path, snapshot=snapshot_id)
        assert _by_key(rows) == expected, f"snapshot {snapshot_id}"
        assert snap_meta["snapshot"] == snapshot_id

    projected, proj_meta = official_read(table_path, tmp_path, projection=["id", "name"])
    assert projected.column_names == ["id", "name"]
    assert proj_meta["schema"] == [["id", "BIGINT NOT NULL"], ["name", "STRING"]]
    assert _multiset(projected.to_pylist()) == _multiset(
        [{"id": row["id"], "name": row["name"]} for row in states[2].values()]
    )


APPEND_SCHEMA = pa.schema([("region", pa.string()), ("seq", pa.int32()), ("payload", pa.string())])


def test_append_table_with_overwrite_and_added_column(tmp_path: Path) -> None:
    first = [{"region": r, "seq": i, "payload": f"{r}-{i}"} for r in ("eu", "us") for i in range(5)]
    dup = [{"region": "eu", "seq": 0, "payload": "eu-0"}, {"region": "us", "seq": 9, "payload": None}]
    overwrite = [{"region": "us", "seq": 100, "payload": "replaced"}]
    widened = pa.schema([*APPEND_SCHEMA, ("extra", pa.int64())])
    after_add = [{"region": "eu", "seq": 7, "payload": "late", "extra": 42}]
    job = {
        "warehouse": str(tmp_path / "wh"),
        "table": "db.events",
        "schema": {
            "fields": [["region", "STRING"], ["seq", "INT"], ["payload", "STRING"]],
            "primary_keys": [],
            "partition_keys": ["region"],
            "options": {},
            "comment": None,
        },
        "steps": [
            {"op": "write", "overwrite": False, "overwrite_partition": None},
            {"op": "write", "overwrite": False, "overwrite_partition": None},
            {"op": "write", "overwrite": True, "overwrite_partition": {"region": "us"}},
            {"op": "add_column", "name": "extra", "type": "BIGINT"},
            {"op": "write", "overwrite": False, "overwrite_partition": None},
        ],
    }
    batches = [_batch(APPEND_SCHEMA, first), _batch(APPEND_SCHEMA, dup),
               _batch(APPEND_SCHEMA, overwrite), _batch(widened, after_add)]
    result = official_write(job, batches, tmp_path)
    assert result["latest_snapshot"] == 4
    table_path = result["table_path"]

    def widen(rows: list[Row]) -> list[Row]:
        return [{**row, "extra": row.get("extra")} for row in rows]

    eu_rows = [row for row in first + dup if row["region"] == "eu"]
    expected_latest = widen(eu_rows + overwrite + after_add)
    latest, meta = official_read(table_path, tmp_path)
    assert meta["columns"] == ["region", "seq", "payload", "extra"]
    assert _multiset(latest.to_pylist()) == _multiset(expected_latest)

    # Snapshot 2 predates the added column, so it reads with schema 0.
    at_two, two_meta = official_read(table_path, tmp_path, snapshot=2)
    assert two_meta["columns"] == ["region", "seq", "payload"]
    assert _multiset(at_two.to_pylist()) == _multiset(first + dup)
