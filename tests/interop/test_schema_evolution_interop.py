"""Schema evolution across implementations.

- lakectl evolves a table one change kind at a time (add with a position, drop, rename,
  rename of a primary key column, each widening, comment, option, NOT NULL), writing after
  each change; pypaimon then reads every snapshot (in the schema it was committed with) and the
  latest (old files in the new schema), and so does lakectl, both held to expectations kept
  here by column name.
- pypaimon evolves a table through its catalog's ``alter_table`` (add, rename, drop, widen,
  options) with writes between; lakectl reads every snapshot, describes pypaimon's schema
  history by field id, evolves the table further, and pypaimon reads the result.
- a schema file written by hand per the spec (rename, drop, widen, add a nested ROW, ids
  from ``highestFieldId``) is read by lakectl and by pypaimon.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest
from oracle import official_read, official_write
from test_lakectl_to_pypaimon import assert_rows, canonical_rows

from core.evolution import (AddColumn, DropColumn, RenameColumn, SchemaChange, SetOption, UpdateColumnComment,
                            UpdateColumnNullability, UpdateColumnType)
from core.ops.create import create
from core.table import Table
from core.types import parse_type

pytestmark = pytest.mark.interop

Row = dict[str, Any]


class Expected:
    """Rows by column name: a primary-key table keeps the last row per (key, dt), an append
    table every row. ``migrate`` rewrites stored rows the way a change shows old data."""

    def __init__(self, key: str | None) -> None:
        self.key = key
        self.rows: list[Row] = []

    def write(self, rows: list[Row]) -> None:
        for row in rows:
            if self.key is not None:
                self.rows = [r for r in self.rows if (r[self.key], r["dt"]) != (row[self.key], row["dt"])]
            self.rows.append(row)

    def migrate(self, fn: Callable[[Row], Row]) -> None:
        self.rows = [fn(dict(r)) for r in self.rows]


def _renamed(old: str, new: str) -> Callable[[Row], Row]:
    return lambda r: {(new if k == old else k): v for k, v in r.items()}


def _cast(column: str, fn: Callable[[Any], Any]) -> Callable[[Row], Row]:
    return lambda r: {**r, column: None if r[column] is None else fn(r[column])}


def _dropped(column: str) -> Callable[[Row], Row]:
    return lambda r: {k: v for k, v in r.items() if k != column}


def _added(column: str) -> Callable[[Row], Row]:
    return lambda r: {**r, column: None}


def _nanos(*args: int) -> int:
    return int(dt.datetime(*args, tzinfo=dt.timezone.utc).timestamp()) * 1_000_000_000


# Each step: (label, changes, how old rows now read, the columns after it).
BASE = ["id", "v", "f", "d", "s", "b", "ts", "dt"]
STEPS: list[tuple[str, list[SchemaChange], Callable[[Row], Row], list[str]]] = [
    ("add after", [AddColumn("n", parse_type("VARCHAR(2)"), after="v")], _added("n"),
     ["id", "v", "n", "f", "d", "s", "b", "ts", "dt"]),
    ("add first", [AddColumn("m", parse_type("INT"), first=True)], _added("m"),
     ["m", "id", "v", "n", "f", "d", "s", "b", "ts", "dt"]),
    ("drop", [DropColumn("s")], _dropped("s"), ["m", "id", "v", "n", "f", "d", "b", "ts", "dt"]),
    ("rename", [RenameColumn("v", "qty")], _renamed("v", "qty"), ["m", "id", "qty", "n", "f", "d", "b", "ts", "dt"]),
    ("int widenings", [UpdateColumnType("qty", parse_type("BIGINT")), UpdateColumnType("b", parse_type("SMALLINT"))],
     lambda r: r, ["m", "id", "qty", "n", "f", "d", "b", "ts", "dt"]),
    ("float, decimal, varchar", [UpdateColumnType("f", parse_type("DOUBLE")),
                                 UpdateColumnType("d", parse_type("DECIMAL(8, 3)")),
                                 UpdateColumnType("n", parse_type("VARCHAR(10)"))],
     _cast("d", lambda x: x.quantize(Decimal("0.001"))), ["m", "id", "qty", "n", "f", "d", "b", "ts", "dt"]),
    ("to double and decimal", [UpdateColumnType("b", parse_type("DOUBLE")),
                               UpdateColumnType("m", parse_type("DECIMAL(12, 2)"))],
     lambda r: _cast("m", lambda x: Decimal(x).quantize(Decimal("0.01")))(_cast("b", float)(r)),
     ["m", "id", "qty", "n", "f", "d", "b", "ts", "dt"]),
    ("timestamp digits", [UpdateColumnType("ts", parse_type("TIMESTAMP(6)"))], lambda r: r,
     ["m", "id", "qty", "n", "f", "d", "b", "ts", "dt"]),
    ("rename key", [RenameColumn("id", "key")], _renamed("id", "key"),
     ["m", "key", "qty", "n", "f", "d", "b", "ts", "dt"]),
    ("comment, option, not null", [UpdateColumnComment("qty", "how many"), SetOption("snapshot.num-retained.min", "3"),
                                   UpdateColumnNullability("f", False)], lambda r: r,
     ["m", "key", "qty", "n", "f", "d", "b", "ts", "dt"]),
]

ARROW = {"m": pa.int32(), "id": pa.int32(), "key": pa.int32(), "v": pa.int32(), "qty": pa.int32(), "n": pa.string(),
         "note": pa.string(),
         "f": pa.float32(), "d": pa.decimal128(5, 2), "s": pa.string(), "b": pa.int8(), "ts": pa.timestamp("ms"),
         "dt": pa.string()}


def _batch(step: int, columns: list[str], key: str) -> tuple[pa.Table, list[Row]]:
    """Rows written after ``step`` changes: keys step and 1 (an update), values from ``step``."""
    rows = []
    for k in (step, 1):
        row: Row = {c: None for c in columns}
        row.update({key: k, "dt": "x" if k % 2 else "y", "f": k + 0.5})
        for name, value in (("qty", k * 10), ("v", k * 10), ("d", Decimal(k) / 4), ("b", k), ("m", -k),
                            ("n", f"n{k}"[:2]), ("note", f"n{k}"[:2]), ("s", "s"),
                            ("ts", dt.datetime(2024, 1, 1 + k, 3, 4, 5))):
            if name in row:
                row[name] = value
        rows.append(row)
    data = pa.table({c: pa.array([r[c] for r in rows], ARROW[c]) for c in columns})
    return data, canonical_rows(data)


def _evolve_with_lakectl(tmp_path: Path, pk: bool) -> tuple[Table, list[tuple[list[str], list[Row]]], str | None]:
    """The table after every STEP and a write after each; the (columns, rows) of every snapshot."""
    t = Table.locate(f"db.{'pk' if pk else 'append'}", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, v INT, f FLOAT, d DECIMAL(5, 2), s VARCHAR(3), b TINYINT, ts TIMESTAMP(3), dt STRING",
           primary_keys=["id", "dt"] if pk else (), partition_keys=["dt"], options={"bucket": "2"} if pk else {})
    key = "id"
    expected = Expected("id" if pk else None)
    states: list[tuple[list[str], list[Row]]] = []

    def write(columns: list[str], step: int) -> None:
        data, rows = _batch(step, columns, key)
        before = t.snapshots.latest_id() or 0
        t.write(data)
        expected.write(rows)
        for _ in range(before, t.snapshots.latest_id()):  # an automatic compaction adds a snapshot
            states.append((list(columns), copy.deepcopy(expected.rows)))

    write(BASE, 0)
    renamed: dict[str, str] = {}  # the append table renames n where the pk table renames its key
    for i, (label, changes, migrate, columns) in enumerate(STEPS, start=1):
        if label == "rename key":
            if pk:
                key = expected.key = "key"
            else:
                changes, migrate, renamed = [RenameColumn("n", "note")], _renamed("n", "note"), {"n": "note", "key": "id"}
        columns = [renamed.get(c, c) for c in columns]
        assert t.alter(changes).committed, label
        expected.migrate(migrate)
        write(columns, i)
    before = t.snapshots.latest_id()
    t.compact(full=True)  # every older file rewritten in the latest schema
    if t.snapshots.latest_id() != before:
        states.append(states[-1])
    return t, states, key if pk else None


@pytest.mark.parametrize("pk", [True, False], ids=["pk-table", "append-table"])
def test_pypaimon_reads_every_snapshot_of_a_table_lakectl_evolved(tmp_path: Path, pk: bool) -> None:
    t, states, key = _evolve_with_lakectl(tmp_path, pk)
    assert len(t.schemas.list_ids()) == len(STEPS) + 1 and len(states) == t.snapshots.latest_id() > len(STEPS)
    keys = [key, "dt"] if key else None
    latest_columns, latest_rows = states[-1]
    got, meta = official_read(t.path, tmp_path)
    assert_rows(got, latest_rows, columns=latest_columns, key=keys, label="pypaimon, latest")
    assert dict(meta["schema"])["f"] == "DOUBLE NOT NULL"
    assert_rows(t.scan(), latest_rows, columns=latest_columns, key=keys, label="lakectl, latest")
    for sid, (columns, rows) in enumerate(states, start=1):
        snapshot_key = [c for c in (key, "id") if c in columns][:1] + ["dt"] if key else None
        got, meta = official_read(t.path, tmp_path, snapshot=sid)
        assert_rows(got, rows, columns=columns, key=snapshot_key, label=f"pypaimon, snapshot {sid}")
        assert_rows(t.scan(snapshot_id=sid), rows, columns=columns, key=snapshot_key, label=f"lakectl, snapshot {sid}")


def test_pypaimon_reads_old_files_right_after_an_alter(tmp_path: Path) -> None:
    """No write after the change: only old files, read in the new schema by both readers."""
    t = Table.locate("db.fresh", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, v INT, s STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([5, None], pa.int32()), "s": ["a", "b"],
                      "dt": ["x", "y"]}))
    t.alter([RenameColumn("v", "w"), UpdateColumnType("w", parse_type("DECIMAL(11, 1)")), DropColumn("s"),
             AddColumn("z", parse_type("ROW<p INT, q STRING>"), first=True)])
    expected = [{"z": None, "id": 1, "w": Decimal("5.0"), "dt": "x"}, {"z": None, "id": 2, "w": None, "dt": "y"}]
    got, _ = official_read(t.path, tmp_path)
    assert_rows(got, expected, columns=["z", "id", "w", "dt"], key=["id"], label="pypaimon")
    assert_rows(t.scan(), expected, columns=["z", "id", "w", "dt"], key=["id"], label="lakectl")


# ---- pypaimon evolves, lakectl reads ------------------------------------------------------------
def _pypaimon_job(tmp_path: Path, pk: bool) -> tuple[dict[str, Any], list[pa.Table]]:
    schema = pa.schema([("id", pa.int32()), ("v", pa.int32()), ("f", pa.float32()), ("s", pa.string()),
                        ("dt", pa.string())])
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.evolved",
           "schema": {"fields": [["id", "INT"], ["v", "INT"], ["f", "FLOAT"], ["s", "STRING"], ["dt", "STRING"]],
                      "primary_keys": ["id", "dt"] if pk else [], "partition_keys": ["dt"],
                      "options": {"bucket": "2"} if pk else {}},
           "steps": [{"op": "write"},
                     {"op": "rename_column", "from": "v", "to": "qty"},
                     {"op": "write"},
                     {"op": "update_column_type", "name": "qty", "type": "BIGINT"},
                     {"op": "update_column_type", "name": "f", "type": "DOUBLE"},
                     {"op": "drop_column", "name": "s"},
                     {"op": "add_column", "name": "note", "type": "STRING"},
                     {"op": "set_option", "key": "snapshot.num-retained.min", "value": "4"},
                     {"op": "write"}]}
    batches = [
        pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([10, None], pa.int32()),
                  "f": pa.array([1.5, 2.5], pa.float32()), "s": ["a", "b"], "dt": ["x", "y"]}, schema=schema),
        pa.table({"id": pa.array([2, 3], pa.int32()), "qty": pa.array([20, 30], pa.int32()),
                  "f": pa.array([None, 3.5], pa.float32()), "s": ["c", None], "dt": ["y", "x"]}),
        pa.table({"id": pa.array([1, 4], pa.int32()), "qty": pa.array([2**40, 40], pa.int64()),
                  "f": pa.array([0.25, 4.5], pa.float64()), "note": ["n1", None], "dt": ["x", "y"]}),
    ]
    return job, batches


@pytest.mark.parametrize("pk", [True, False], ids=["pk-table", "append-table"])
def test_lakectl_reads_and_evolves_a_table_pypaimon_evolved(tmp_path: Path, pk: bool) -> None:
    job, batches = _pypaimon_job(tmp_path, pk)
    official_write(job, batches, tmp_path)
    t = Table.open("db.evolved", warehouse=str(tmp_path / "wh"))
    assert t.schemas.list_ids() == [0, 1, 2, 3, 4, 5, 6]
    key = ["id", "dt"] if pk else None
    s1 = [{"id": 1, "v": 10, "f": 1.5, "s": "a", "dt": "x"}, {"id": 2, "v": None, "f": 2.5, "s": "b", "dt": "y"}]
    assert_rows(t.scan(snapshot_id=1), s1, columns=["id", "v", "f", "s", "dt"], key=key, label="snapshot 1")
    second = [{"id": 2, "qty": 20, "f": None, "s": "c", "dt": "y"}, {"id": 3, "qty": 30, "f": 3.5, "s": None, "dt": "x"}]
    s2 = [_renamed("v", "qty")(r) for r in s1 if not pk or r["id"] != 2] + second
    assert_rows(t.scan(snapshot_id=2), s2, columns=["id", "qty", "f", "s", "dt"], key=key, label="snapshot 2")
    third = [{"id": 1, "qty": 2**40, "f": 0.25, "dt": "x", "note": "n1"}, {"id": 4, "qty": 40, "f": 4.5, "dt": "y",
                                                                          "note": None}]
    s3 = [{**_dropped("s")(r), "note": None} for r in s2 if not pk or r["id"] != 1] + third
    columns = ["id", "qty", "f", "dt", "note"]
    assert_rows(t.scan(snapshot_id=3), s3, columns=columns, key=key, label="snapshot 3")
    assert_rows(t.scan(), s3, columns=columns, key=key, label="latest")

    changes = [h.changes for h in reversed(t.schema_history())]
    assert changes[1:] == [("rename column v to qty",), ("change type of qty from INT to BIGINT",),
                           ("change type of f from FLOAT to DOUBLE",), ("drop column s",), ("add column note STRING",),
                           ("set option snapshot.num-retained.min=4",)]

    # lakectl evolves it further and writes; pypaimon reads every version.
    t.alter([RenameColumn("qty", "amount"), AddColumn("flag", parse_type("BOOLEAN"), after="id"),
             UpdateColumnType("amount", parse_type("DECIMAL(22, 2)"))])
    t.write(pa.table({"id": pa.array([5], pa.int32()), "flag": [True], "amount": [Decimal("1.50")], "f": [5.5],
                      "dt": ["x"], "note": ["n5"]}))
    latest = [{"id": r["id"], "flag": None, "amount": None if r["qty"] is None else Decimal(r["qty"]).quantize(
        Decimal("0.01")), "f": r["f"], "dt": r["dt"], "note": r["note"]} for r in s3]
    latest.append({"id": 5, "flag": True, "amount": Decimal("1.50"), "f": 5.5, "dt": "x", "note": "n5"})
    columns = ["id", "flag", "amount", "f", "dt", "note"]
    got, _ = official_read(t.path, tmp_path)
    assert_rows(got, latest, columns=columns, key=key, label="pypaimon, after lakectl's alter")
    assert_rows(t.scan(), latest, columns=columns, key=key, label="lakectl, after its alter")
    got, _ = official_read(t.path, tmp_path, snapshot=2)
    assert_rows(got, s2, columns=["id", "qty", "f", "s", "dt"], key=key, label="pypaimon, snapshot 2")


# ---- a schema file written by hand per the spec ------------------------------------------------
def test_a_hand_written_schema_file_is_read_by_both(tmp_path: Path) -> None:
    t = Table.locate("db.hand", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, price INT, tag STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "price": pa.array([7, None], pa.int32()), "tag": ["a", "b"], "dt": ["x", "x"]}))
    schema0 = json.loads((Path(t.path) / "schema" / "schema-0").read_text())
    # spec §2.2: rename keeps the id, drop leaves highestFieldId, a type change keeps the id, an
    # added column (a ROW here) takes highestFieldId + 1 and its nested fields the next ids.
    schema1 = {
        "version": 3, "id": 1, "highestFieldId": 6, "partitionKeys": ["dt"], "primaryKeys": ["id", "dt"],
        "options": schema0["options"], "comment": None, "timeMillis": schema0["timeMillis"] + 1,
        "fields": [
            {"id": 0, "name": "id", "type": "BIGINT NOT NULL"},
            {"id": 1, "name": "cost", "type": "BIGINT", "description": "in cents"},
            {"id": 3, "name": "dt", "type": "STRING NOT NULL"},
            {"id": 4, "name": "extra", "type": {"type": "ROW", "fields": [{"id": 5, "name": "a", "type": "INT"},
                                                                          {"id": 6, "name": "b", "type": "STRING"}]}},
        ],
    }
    (Path(t.path) / "schema" / "schema-1").write_text(json.dumps(schema1, indent=2))
    columns = ["id", "cost", "dt", "extra"]
    old = [{"id": 1, "cost": 7, "dt": "x", "extra": None}, {"id": 2, "cost": None, "dt": "x", "extra": None}]
    assert_rows(t.scan(), old, columns=columns, key=["id"], label="lakectl, old files in schema-1")
    got, _ = official_read(t.path, tmp_path)
    assert_rows(got, old, columns=columns, key=["id"], label="pypaimon, old files in schema-1")
    assert [h.changes for h in t.schema_history(limit=1)] == [(
        "drop column tag", "rename column price to cost", "change type of cost from INT to BIGINT",
        "comment on cost: 'in cents'", "add column extra ROW<a INT, b STRING>")]
    t.alter([AddColumn("more", parse_type("INT"))])
    assert t.schema.field("more").id == 7  # after the hand-written highestFieldId
    t.write(pa.table({"id": [2], "cost": [9], "dt": ["x"], "extra": [{"a": 1, "b": "z"}], "more": pa.array([3], pa.int32())}))
    rows = [{**old[0], "more": None}, {"id": 2, "cost": 9, "dt": "x", "extra": {"a": 1, "b": "z"}, "more": 3}]
    got, _ = official_read(t.path, tmp_path)
    assert_rows(got, rows, columns=[*columns, "more"], key=["id"], label="pypaimon, after lakectl wrote")
    assert_rows(t.scan(), rows, columns=[*columns, "more"], key=["id"], label="lakectl, after it wrote")
