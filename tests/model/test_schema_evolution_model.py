"""Model test of schema evolution: random alter-schema calls (add, drop, rename, widen, comment,
option; one to three changes per call, applied atomically), refused changes, writes and full
compactions, on a partitioned primary-key table and a partitioned append table.

The model tracks columns by field id (id, name, type) and rows as {field id: value written}.
After every operation the table's schema must equal the model's (ids never reused,
``highestFieldId`` never decreasing) and a refused change must leave no schema file. At the
end every snapshot must scan

- in its own schema (``scan(snapshot_id=N)``): the columns it was committed with, and
- in the latest schema (its files read with the latest schema as read schema): dropped
  columns gone, added ones null, renamed ones under the new name, widened ones cast,

and the latest scan must equal the model's current rows. Values are compared by ``repr``,
so a value that was not cast (``7`` where ``7.0`` or ``Decimal('7.00')`` is due) fails.

``test_model_smoke`` runs in the quick loop; the slow ``test_model`` runs more and longer
examples (LAKECTL_MODEL_EXAMPLES / LAKECTL_MODEL_OPS raise them further).
"""

from __future__ import annotations

import copy
import os
import tempfile
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import UsageError
from core.evolution import (AddColumn, DropColumn, RenameColumn, SchemaChange, SetOption, UpdateColumnComment,
                            UpdateColumnType)
from core.ops.create import create
from core.ops.scan import plan, read_batches
from core.table import Table
from core.types import parse_type, to_arrow

# ---- types and values ------------------------------------------------------------------------
ADDABLE = ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(5, 2)", "VARCHAR(3)", "STRING"]
WIDER = {
    "TINYINT": ["SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(5, 0)"],
    "SMALLINT": ["INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(7, 1)"],
    "INT": ["BIGINT", "DOUBLE", "DECIMAL(12, 2)"],
    "BIGINT": ["DECIMAL(20, 0)"],
    "FLOAT": ["DOUBLE"],
    "VARCHAR(3)": ["VARCHAR(8)", "STRING"],
    "VARCHAR(8)": ["STRING"],
}


def wider(type_text: str) -> list[str]:
    if type_text.startswith("DECIMAL"):
        p, s = (int(x) for x in type_text[8:-1].split(","))
        return [f"DECIMAL({p + 2}, {s})", f"DECIMAL({p + 1}, {s + 1})"] if p < 30 else []
    return WIDER.get(type_text, [])


def value_for(type_text: str, k: int) -> Any:
    """A value of the type from a small integer; every value survives any later widening."""
    if type_text in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return k
    if type_text in ("FLOAT", "DOUBLE"):
        return k / 2  # exact in binary
    if type_text.startswith("DECIMAL"):
        scale = int(type_text[8:-1].split(",")[1])
        return Decimal(k) / 4 if scale >= 2 else Decimal(k)
    return str(abs(k) % 100)


def as_type(value: Any, type_text: str) -> Any:
    """What a reader returns for a written value in (a widening of) its type."""
    if value is None:
        return None
    if type_text in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return int(value)
    if type_text in ("FLOAT", "DOUBLE"):
        return float(value)
    if type_text.startswith("DECIMAL"):
        scale = int(type_text[8:-1].split(",")[1])
        return Decimal(value).quantize(Decimal(1).scaleb(-scale))
    return value


# ---- the model -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Col:
    id: int
    name: str
    type: str  # the root type text, as DataType.root_text() prints it
    key: bool = False  # a primary or partition key: never dropped, retyped (or renamed, for dt)


class Model:
    def __init__(self, pk: bool) -> None:
        self.pk = pk
        self.cols = [Col(0, "id", "INT", key=pk), Col(1, "v", "INT"), Col(2, "s", "VARCHAR(3)"),
                     Col(3, "dt", "STRING", key=True)]
        self.highest = 3
        self.names = 0  # counter for fresh names
        self.rows: dict[tuple, dict[int, Any]] | list[dict[int, Any]] = {} if pk else []
        self.states: dict[int, tuple[list[Col], Any]] = {}

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def col(self, name: str) -> Col:
        return next(c for c in self.cols if c.name == name)

    def row_list(self) -> list[dict[int, Any]]:
        return list(self.rows.values()) if self.pk else list(self.rows)

    def write(self, rows: list[dict[int, Any]]) -> None:
        for row in rows:
            if self.pk:
                self.rows[(row[0], row[3])] = row
            else:
                self.rows.append(row)

    def record(self, snapshot_id: int) -> None:
        self.states[snapshot_id] = (list(self.cols), copy.deepcopy(self.rows))


def expected(cols: list[Col], rows: Any, pk: bool) -> list[str]:
    """The rows a reader returns in ``cols``: by field id, null where a row has no value."""
    values = rows.values() if pk else rows
    return sorted(repr({c.name: as_type(r.get(c.id), c.type) for c in cols}) for r in values)


def actual(table: pa.Table) -> list[str]:
    return sorted(repr(r) for r in table.to_pylist())


# ---- operations --------------------------------------------------------------------------------
KEYS = st.integers(0, 5)
ROW = st.tuples(KEYS, st.sampled_from(["a", "b"]), st.lists(st.one_of(st.none(), st.integers(-100, 100)),
                                                            min_size=12, max_size=12))
SUB = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(ADDABLE), st.integers(0, 20)),
    st.tuples(st.just("drop"), st.integers(0, 20)),
    st.tuples(st.just("rename"), st.integers(-1, 20)),  # -1: field id 0 (the primary key column of pk tables)
    st.tuples(st.just("widen"), st.integers(0, 20), st.integers(0, 5)),
    st.tuples(st.just("comment"), st.integers(0, 20)),
    st.tuples(st.just("option"), st.integers(1, 9)),
)
WRITE = st.tuples(st.just("write"), st.lists(ROW, min_size=1, max_size=5))
ALTER = st.tuples(st.just("alter"), st.lists(SUB, min_size=1, max_size=3))
OPS = st.one_of(
    WRITE, ALTER, WRITE, ALTER,
    st.tuples(st.just("refuse"), st.sampled_from(["drop key", "rename partition", "narrow", "add not null",
                                                  "bucket", "unknown"])),
    st.tuples(st.just("compact")),
)


def _pick(cols: list[Col], i: int) -> Col | None:
    return cols[i % len(cols)] if cols else None


def translate(model: Model, sub: tuple) -> SchemaChange | None:
    """One sub-operation as a schema change against the model's columns, applied to the model;
    None when it does not apply (e.g. nothing left to drop)."""
    kind = sub[0]
    cols = model.cols
    if kind == "add":
        _, type_text, where = sub
        name = model.fresh("c")
        model.highest += 1
        col = Col(model.highest, name, type_text)
        if where % 3 == 0:
            model.cols.insert(0, col)
            return AddColumn(name, parse_type(type_text), first=True)
        if where % 3 == 1:
            after = _pick(cols, where)
            model.cols.insert(cols.index(after) + 1, col)
            return AddColumn(name, parse_type(type_text), after=after.name)
        model.cols.append(col)
        return AddColumn(name, parse_type(type_text))
    if kind == "drop":
        target = _pick([c for c in cols if not c.key], sub[1])
        if target is None or len(cols) == 1:
            return None
        cols.remove(target)
        return DropColumn(target.name)
    if kind == "rename":
        candidates = [c for c in cols if c.name != "dt" and (sub[1] != -1 or c.id == 0)]
        target = _pick(candidates, sub[1])
        if target is None:
            return None
        new = replace(target, name=model.fresh("r"))
        cols[cols.index(target)] = new
        return RenameColumn(target.name, new.name)
    if kind == "widen":
        target = _pick([c for c in cols if not c.key and wider(c.type)], sub[1])
        if target is None:
            return None
        options = wider(target.type)
        new = replace(target, type=options[sub[2] % len(options)])
        cols[cols.index(target)] = new
        return UpdateColumnType(target.name, parse_type(new.type))
    if kind == "comment":
        target = _pick(cols, sub[1])
        return UpdateColumnComment(target.name, f"note {sub[1]}")
    return SetOption("snapshot.num-retained.min", str(sub[1]))


REFUSED = {
    "drop key": lambda m: DropColumn("dt"),
    "rename partition": lambda m: RenameColumn("dt", "day"),
    "narrow": lambda m: UpdateColumnType(m.cols[0].name, parse_type("BOOLEAN")),
    "add not null": lambda m: AddColumn("nn", parse_type("INT NOT NULL")),
    # Options are only guarded once the table has data, as in Paimon.
    "bucket": lambda m: SetOption("bucket", "7") if m.states else SetOption("primary-key", "v"),
    "unknown": lambda m: DropColumn("no_such_column"),
}


def do_write(table: Table, model: Model, batch: list) -> None:
    rows = []
    for k, dt, seeds in batch:
        row: dict[int, Any] = {}
        for i, c in enumerate(model.cols):
            if c.name == "dt" or c.id == 3:
                row[c.id] = dt
            elif c.id == 0 and model.pk:
                row[c.id] = k
            else:
                seed = seeds[i % len(seeds)]
                row[c.id] = None if seed is None else value_for(c.type, seed)
        rows.append(row)
    data = pa.table({c.name: pa.array([r[c.id] for r in rows], to_arrow(parse_type(c.type))) for c in model.cols})
    before = table.snapshots.latest_id() or 0
    table.write(data)
    model.write(rows)
    latest = table.snapshots.latest_id()
    assert latest > before
    for sid in range(before + 1, latest + 1):  # the APPEND, and a COMPACT if the write triggered one
        model.record(sid)


def do_alter(table: Table, model: Model, subs: list) -> None:
    trial = copy.deepcopy(model)
    changes = [c for c in (translate(trial, s) for s in subs) if c is not None]
    if not changes:
        return
    before = table.schemas.list_ids()
    result = table.alter(changes)
    if result.committed:
        assert table.schemas.list_ids() == before + [before[-1] + 1], result
    else:  # e.g. the same comment again: nothing to change, no schema file
        assert result.changes == () and table.schemas.list_ids() == before, result
    model.__dict__.update(trial.__dict__)


def do_refuse(table: Table, model: Model, what: str) -> None:
    before = table.schemas.list_ids()
    with pytest.raises(UsageError):
        table.alter([AddColumn(model.fresh("x"), parse_type("INT")), REFUSED[what](model)])
    assert table.schemas.list_ids() == before


def do_compact(table: Table, model: Model) -> None:
    before = table.snapshots.latest_id()
    table.compact(full=True)
    if table.snapshots.latest_id() != before:
        model.record(table.snapshots.latest_id())


def check_schema(table: Table, model: Model, highest_before: int) -> None:
    schema = table.schema
    assert [(f.id, f.name, f.type.root_text()) for f in schema.fields] == [(c.id, c.name, c.type) for c in model.cols]
    assert schema.highest_field_id == model.highest >= highest_before


def check_snapshots(table: Table, model: Model) -> None:
    latest_schema = table.schema
    assert actual(table.scan()) == expected(model.cols, model.rows, model.pk), "latest"
    for sid, (cols, rows) in model.states.items():
        own = table.scan(snapshot_id=sid)
        assert own.column_names == [c.name for c in cols], f"snapshot {sid} columns"
        assert actual(own) == expected(cols, rows, model.pk), f"snapshot {sid} in its own schema"
        snap = table.snapshots.snapshot(sid)
        mapped = plan(table, snap, read_schema=latest_schema)
        parts = list(read_batches(table, mapped))
        got = sorted(repr(r) for p in parts for r in p.to_pylist())
        assert got == expected(model.cols, rows, model.pk), f"snapshot {sid} in the latest schema"


def run(ops: list, pk: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        table = Table.locate("db.evo", warehouse=tmp)
        options = {"bucket": "2"} if pk else {}
        create(table, "id INT, v INT, s VARCHAR(3), dt STRING", primary_keys=["id", "dt"] if pk else (),
               partition_keys=["dt"], options=options)
        model = Model(pk)
        for op in ops:
            highest = model.highest
            if op[0] == "write":
                do_write(table, model, op[1])
            elif op[0] == "alter":
                do_alter(table, model, op[1])
            elif op[0] == "refuse":
                do_refuse(table, model, op[1])
            else:
                do_compact(table, model)
            check_schema(table, model, highest)
        check_snapshots(table, model)


EXAMPLES = int(os.environ.get("LAKECTL_MODEL_EXAMPLES", "25"))
MAX_OPS = int(os.environ.get("LAKECTL_MODEL_OPS", "14"))
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
@settings(max_examples=6, **_SETTINGS)
@given(ops=st.lists(OPS, min_size=1, max_size=8))
def test_model_smoke(ops: list, pk: bool) -> None:
    run(ops, pk)


@pytest.mark.slow
@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
@settings(max_examples=EXAMPLES, **_SETTINGS)
@given(ops=st.lists(OPS, min_size=4, max_size=MAX_OPS))
def test_model(ops: list, pk: bool) -> None:
    run(ops, pk)


def test_scenario_every_change_kind_between_writes() -> None:
    """A fixed walk through each change kind with writes between, on both table kinds."""
    seeds = [1, None, 3, 4, -5, 6, 7, 8, 9, 10, 11, 12]
    writes = [("write", [(1, "a", seeds), (2, "b", [None] * 12)])]
    ops = [*writes, ("alter", [("add", "TINYINT", 2), ("rename", -1)]), *writes,
           ("alter", [("widen", 0, 0), ("rename", 1), ("drop", 1)]), *writes,
           ("alter", [("add", "DECIMAL(5, 2)", 0), ("widen", 0, 1), ("comment", 0), ("option", 3)]), *writes,
           ("compact",), ("alter", [("widen", 1, 2), ("add", "FLOAT", 1)]), ("refuse", "narrow"), *writes]
    for pk in (True, False):
        run(ops, pk)
