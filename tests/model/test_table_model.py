"""Model-based tests of write/scan/time travel against a plain Python model.

Hypothesis generates a list of operations (insert, upsert, CDC retractions, overwrite, empty
batches) and runs them against a real table in a fresh temp warehouse. The model keeps, per
snapshot id, what a scan must return: for primary-key tables a dict key -> row (deduplicate
merge engine: the last record of a key in input order wins, a final -U/-D removes the key);
for append tables a multiset of rows. After every write we check:

- the latest scan and the scan of *every* earlier snapshot id equal the model at that id;
- a write that commits nothing creates no snapshot;
- snapshot ids are 1..n, commit kinds are the expected APPEND/OVERWRITE, every schema id is 0;
- ``totalRecordCount`` equals the row count of the live files (read from the manifests) and the
  model's count of written records (unmerged, retractions included); ``deltaRecordCount`` is the
  difference to the previous snapshot; ``history()`` lists the same snapshots newest first;
- a few ``where`` filters on the latest snapshot equal the filtered model (file and row-group
  pruning must never drop a file or row group whose newer record of a key hides an older one).

The slow ``test_model`` runs 30 examples of up to 10 operations per table kind; set
LAKECTL_MODEL_EXAMPLES / LAKECTL_MODEL_OPS for a longer hunt. ``test_model_smoke`` and the fixed
``test_scenario`` cases run in the quick loop.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import InvalidDataError, NotFoundError, UsageError
from core.manifest import merge_entries, read_entries
from core.ops.create import create
from core.table import Table

Row = tuple[Any, Any, Any]  # (id, v, dt)
RowOp = tuple[str, int, Any, Any]  # (row kind, id, v, dt)
RETRACT = ("-U", "-D")


# ---- table kinds ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    name: str
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    options: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def pk(self) -> bool:
        return bool(self.primary_keys)

    @property
    def partitioned(self) -> bool:
        return bool(self.partition_keys)

    def key(self, row_id: int, dt: Any) -> tuple:
        return tuple(row_id if k == "id" else dt for k in self.primary_keys)

    def partition(self, dt: Any) -> tuple:
        return (dt,) if self.partitioned else ()


KINDS = {
    k.name: k for k in (
        # write-only: the model counts one snapshot per write; compaction after a commit would
        # add COMPACT snapshots (tests/unit/test_universal_compaction.py covers those).
        Kind("pk_partitioned", ("id", "dt"), ("dt",), {"bucket": "3", "write-only": "true"}),
        Kind("pk_unpartitioned", ("id",), (), {"bucket": "1", "write-only": "true"}),
        # One row per file: merging across many files of one write and of one bucket.
        Kind("pk_partitioned_tiny_files", ("id", "dt"), ("dt",),
             {"bucket": "2", "target-file-size": "1b", "write-only": "true"}),
        # One row per row group: ``where`` skips row groups by their stats, which must never
        # drop a key's newer record and let an older one through.
        Kind("pk_tiny_row_groups", ("id",), (), {"bucket": "1", "parquet.block.size": "1b", "write-only": "true"}),
        Kind("append_partitioned", (), ("dt",)),
        Kind("append_tiny_row_groups", (), (), {"parquet.block.size": "1b"}),
        Kind("append_unpartitioned", (), ()),
        Kind("append_bucketed", (), ("dt",), {"bucket": "2", "bucket-key": "id"}),
    )
}


# ---- operations ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    label: str
    mode: str  # "append" | "overwrite"
    rows: tuple[RowOp, ...]
    op_column: bool  # pass row_kind_column="op"; otherwise every row is +I

    def table(self) -> pa.Table:
        cols = {
            "id": pa.array([r[1] for r in self.rows], pa.int64()),
            "v": pa.array([r[2] for r in self.rows], pa.string()),
            "dt": pa.array([r[3] for r in self.rows], pa.string()),
        }
        if self.op_column:
            cols["op"] = pa.array([r[0] for r in self.rows], pa.string())
        return pa.table(cols)


IDS = st.integers(0, 5)
VALUES = st.sampled_from(["x", "y", "z", "", None, "ü"])


def dts(kind: Kind) -> st.SearchStrategy[Any]:
    if kind.pk and kind.partitioned:
        return st.sampled_from(["a", "b", "c", ""])  # partition keys of a PK are NOT NULL
    return st.sampled_from(["a", "b", None, ""])


@st.composite
def batch(draw: st.DrawFn, kind: Kind, row_kinds: list[str], max_rows: int = 8) -> tuple[RowOp, ...]:
    rows = draw(st.lists(st.tuples(st.sampled_from(row_kinds), IDS, VALUES, dts(kind)), max_size=max_rows))
    # Repeat some keys later in the same batch with other values and kinds: last one wins.
    if rows:
        repeats = draw(st.lists(st.tuples(st.integers(0, len(rows) - 1), st.sampled_from(row_kinds), VALUES),
                                max_size=4))
        for i, rk, v in repeats:
            rows.append((rk, rows[i][1], v, rows[i][3]))
    return tuple(rows)


@st.composite
def operation(draw: st.DrawFn, kind: Kind) -> Op:
    label = draw(st.sampled_from(["insert", "upsert", "cdc", "overwrite", "empty"]))
    if label == "insert":
        return Op(label, "append", draw(batch(kind, ["+I"])), draw(st.booleans()))
    if label == "upsert":
        op_column = draw(st.booleans())
        return Op(label, "append", draw(batch(kind, ["+I", "+U"] if op_column else ["+I"])), op_column)
    if label == "cdc":
        return Op(label, "append", draw(batch(kind, ["-D", "-U", "-D", "+U", "+I"])), True)
    if label == "overwrite":
        return Op(label, "overwrite", draw(batch(kind, ["+I"])), False)
    mode = draw(st.sampled_from(["append", "overwrite"]))
    return Op(label, mode, (), mode == "append" and draw(st.booleans()))


def operations(kind: Kind, max_ops: int) -> st.SearchStrategy[list[Op]]:
    return st.lists(operation(kind), min_size=1, max_size=max_ops)


# ---- the model -----------------------------------------------------------------------------
@dataclass(frozen=True)
class State:
    """What snapshot N must hold: rows, and live record counts per partition (files, unmerged)."""

    rows: Counter  # row -> multiplicity (PK tables: each row once, one row per key)
    records: dict[tuple, int]


@dataclass
class Model:
    kind: Kind
    pk_rows: dict[tuple, Row] = field(default_factory=dict)
    append_rows: Counter = field(default_factory=Counter)
    records: dict[tuple, int] = field(default_factory=dict)

    def state(self) -> State:
        rows = Counter(self.pk_rows.values()) if self.kind.pk else Counter(self.append_rows)
        return State(rows, {p: n for p, n in self.records.items() if n})

    def rejects(self, op: Op) -> bool:
        """Append tables refuse -U/-D rows (InvalidDataError, nothing written)."""
        return not self.kind.pk and any(r[0] in RETRACT for r in op.rows)

    def commits(self, op: Op) -> bool:
        if op.mode == "overwrite" and not self.kind.partitioned and not op.rows:
            # It truncates the table: a snapshot only when it has files to drop (an overwrite
            # that replaces nothing with nothing commits nothing).
            return any(self.records.values())
        return bool(op.rows)

    def apply(self, op: Op) -> None:
        k = self.kind
        if op.mode == "overwrite":
            touched = {k.partition(r[3]) for r in op.rows}
            if k.partitioned:
                self.pk_rows = {key: row for key, row in self.pk_rows.items() if k.partition(row[2]) not in touched}
                self.append_rows = Counter({r: n for r, n in self.append_rows.items()
                                            if k.partition(r[2]) not in touched})
                for p in touched:
                    self.records.pop(p, None)
            else:
                self.pk_rows, self.append_rows, self.records = {}, Counter(), {}
        for rk, row_id, v, dt in op.rows:
            if k.pk:
                key = k.key(row_id, dt)
                if rk in RETRACT:
                    self.pk_rows.pop(key, None)
                else:
                    self.pk_rows[key] = (row_id, v, dt)
            else:
                self.append_rows[(row_id, v, dt)] += 1
        # Records written to files: PK writes fold each key within the batch to one record
        # (deletes included); append writes keep every row.
        written = Counter(k.partition(r[3]) for r in op.rows) if not k.pk else \
            Counter({k.key(r[1], r[3]): k.partition(r[3]) for r in op.rows}.values())
        for p, n in written.items():
            self.records[p] = self.records.get(p, 0) + n


# ---- checks --------------------------------------------------------------------------------
def _sort_key(row: Row) -> tuple:
    return tuple((x is None, "" if x is None else x) for x in row)


def rows_of(table: pa.Table) -> list[Row]:
    assert table.column_names == ["id", "v", "dt"]
    return sorted(zip(*(table.column(c).to_pylist() for c in table.column_names)), key=_sort_key)


def expected_rows(state: State) -> list[Row]:
    return sorted(state.rows.elements(), key=_sort_key)


# Filters on the latest snapshot, with their meaning on a model row (id, v, dt).
FILTERS: list[tuple[str, Callable[[Row], bool]]] = [
    ("id <= 2", lambda r: r[0] <= 2),
    ("id = 3 AND dt = 'b'", lambda r: r[0] == 3 and r[2] == "b"),
    ("dt = 'a'", lambda r: r[2] == "a"),
    ("dt IS NULL", lambda r: r[2] is None),
    ("v = 'x'", lambda r: r[1] == "x"),
    ("v IS NULL OR id > 4", lambda r: r[1] is None or r[0] > 4),
]


def check_table(t: Table, states: list[State], kinds: list[str | None]) -> None:
    """states[i] / kinds[i]: the model and commit kind of snapshot i (index 0 = before any commit)."""
    n = len(states) - 1
    latest = t.latest_snapshot()
    assert (latest.id if latest else 0) == n
    assert t.snapshots.list_ids() == list(range(1, n + 1))
    assert rows_of(t.scan()) == expected_rows(states[-1])
    mio = t.manifests()
    previous_total = 0
    for sid in range(1, n + 1):
        snap = t.snapshots.snapshot(sid)
        assert snap.id == sid
        assert snap.schema_id == 0
        assert snap.commit_kind == kinds[sid], f"snapshot {sid}"
        live = merge_entries(read_entries(mio, [snap.base_manifest_list, snap.delta_manifest_list]))
        assert snap.total_record_count == sum(e.file.row_count for e in live), f"snapshot {sid}"
        assert snap.total_record_count == sum(states[sid].records.values()), f"snapshot {sid}"
        assert snap.delta_record_count == snap.total_record_count - previous_total, f"snapshot {sid}"
        previous_total = snap.total_record_count
        assert rows_of(t.scan(snapshot_id=sid)) == expected_rows(states[sid]), f"time travel to snapshot {sid}"
    for where, keep in FILTERS:
        assert rows_of(t.scan(where=where)) == [r for r in expected_rows(states[-1]) if keep(r)], where
    with pytest.raises(NotFoundError):
        t.scan(snapshot_id=n + 1)
    history = t.history()
    assert [h.snapshot_id for h in history] == list(range(n, 0, -1))
    assert [h.commit_kind for h in history] == kinds[:0:-1]


def _create(kind: Kind, warehouse: str) -> Table:
    t = Table.locate("db.t", warehouse=warehouse)
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=list(kind.primary_keys),
           partition_keys=list(kind.partition_keys), options=dict(kind.options))
    return t


def run(kind: Kind, ops: list[Op]) -> None:
    # A fresh warehouse per example: hypothesis reuses function-scoped fixtures such as tmp_path.
    with tempfile.TemporaryDirectory(prefix="lakectl-model-") as warehouse:
        t = _create(kind, warehouse)
        model = Model(kind)
        states: list[State] = [model.state()]
        kinds: list[str | None] = [None]
        check_table(t, states, kinds)
        for step, op in enumerate(ops):
            try:
                _step(t, model, op, states, kinds)
            except AssertionError as e:
                raise AssertionError(f"step {step} ({op}) of {len(ops)}: {e}") from e


def _step(t: Table, model: Model, op: Op, states: list[State], kinds: list[str | None]) -> None:
    data = op.table()
    row_kind_column = "op" if op.op_column else None
    if model.rejects(op):
        with pytest.raises(InvalidDataError):
            t.write(data, mode=op.mode, row_kind_column=row_kind_column)
    else:
        result = t.write(data, mode=op.mode, row_kind_column=row_kind_column)
        assert result.rows_written == len(op.rows)
        if model.commits(op):
            model.apply(op)
            states.append(model.state())
            kinds.append("OVERWRITE" if op.mode == "overwrite" else "APPEND")
            assert result.snapshot_id == len(states) - 1
            assert result.commit_kind == kinds[-1]
        else:
            assert result.snapshot_id is None and result.commit_kind is None
    check_table(t, states, kinds)


# ---- tests ---------------------------------------------------------------------------------
# Fixed scenarios, run on every kind in the quick loop: one key several times in one batch
# (last in input order wins), retractions of present and absent keys, overwrites and empty batches.
_SAME_KEY_TWICE = [Op("upsert", "append", (("+I", 1, "x", "a"), ("+U", 1, "y", "a"), ("+I", 2, "x", "a"),
                                           ("+U", 1, "z", "a")), True),
                   Op("upsert", "append", (("+I", 1, "q", "a"), ("+I", 1, None, "a")), False)]
_DELETES = [Op("insert", "append", (("+I", 1, "x", "a"), ("+I", 2, "x", "b")), False),
            Op("cdc", "append", (("-D", 1, None, "a"), ("-D", 9, None, "a"), ("-U", 2, "x", "b"),
                                 ("+U", 2, "y", "b")), True),
            Op("cdc", "append", (("+I", 3, "x", "a"), ("-D", 3, None, "a")), True),
            Op("cdc", "append", (("-D", 4, None, "a"), ("+I", 4, "w", "a")), True)]
_OVERWRITES = [Op("insert", "append", (("+I", 1, "x", "a"), ("+I", 2, "x", "b"), ("+I", 3, "x", "")), False),
               Op("overwrite", "overwrite", (("+I", 5, "o", "a"), ("+I", 5, "p", "a")), False),
               Op("empty", "overwrite", (), False),
               Op("empty", "append", (), True),
               Op("empty", "append", (), False),
               Op("overwrite", "overwrite", (("+I", 2, "q", "b"),), False)]


SCENARIOS = {"same_key_in_one_batch": _SAME_KEY_TWICE, "deletes": _DELETES, "overwrites": _OVERWRITES}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("kind_name", list(KINDS))
def test_scenario(kind_name: str, scenario: str) -> None:
    run(KINDS[kind_name], SCENARIOS[scenario])


def test_overwrite_refuses_row_kinds_and_commits_nothing() -> None:
    kind = KINDS["pk_partitioned"]
    op = Op("overwrite", "overwrite", (("+I", 1, "x", "a"),), True)
    with tempfile.TemporaryDirectory(prefix="lakectl-model-") as warehouse:
        t = _create(kind, warehouse)
        with pytest.raises(UsageError):
            t.write(op.table(), mode="overwrite", row_kind_column="op")
        assert t.latest_snapshot() is None


@pytest.mark.parametrize("kind_name", list(KINDS))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_model_smoke(kind_name: str, data: st.DataObject) -> None:
    kind = KINDS[kind_name]
    run(kind, data.draw(operations(kind, 4), label="ops"))


EXAMPLES = int(os.environ.get("LAKECTL_MODEL_EXAMPLES", "30"))
MAX_OPS = int(os.environ.get("LAKECTL_MODEL_OPS", "10"))


@pytest.mark.slow
@pytest.mark.parametrize("kind_name", list(KINDS))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_model(kind_name: str, data: st.DataObject) -> None:
    kind = KINDS[kind_name]
    run(kind, data.draw(operations(kind, MAX_OPS), label="ops"))
