"""Model-based tests of ``sequence.field``: the record of a key with the largest sequence-field
value wins, whatever order the records arrive in, as in Java Paimon.

The reference here re-states Java's order without lakectl's code: the records of a key are
compared by the sequence fields (Java's ``UserDefinedSeqComparator``: nulls first in either
direction, ``sequence.field.sort-order=descending`` flips the non-null values), then by arrival
(``_SEQUENCE_NUMBER``). Folds happen where Paimon folds: each commit folds each key's records
(the write buffer), a full compaction folds each key's stored records and drops -U/-D results,
and a read folds the stored records. A fold of one record is that record (Java's
ReducerMergeFunctionWrapper); the folded record keeps the sequence number of the last record
in the order. Partial-update is not associative under a sequence field (a folded record
carries the newest sequence value with older column values), so the reference keeps each
key's stored records as the files do.

Engines: deduplicate (with -D rows), partial-update (per column the newest non-null value),
aggregation (``sum``; sequence fields keep the newest non-null value, Java's rule). Hypothesis
draws commits of (key, ts, ts2, value) in random arrival order with ties and nulls, and full
compactions; after each step ``scan()`` must equal the reference. Tables are write-only, so no
compaction runs unasked, except the deletion-vector variant whose commits run Java's lookup
compaction (deduplicate only: its fold is associative, so when the fold happens does not
matter).

Partial-update sequence groups (``fields.<seq>.sequence-group``) have their own reference
(``group_fold``), record by record as Java's PartialUpdateMergeFunction, with random row kinds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import UnsupportedTableError, UsageError
from core.ops.create import create
from core.table import Table

KEYS = (1, 2, 3)
TS = (None, 1, 2, 3)  # small pools: ties and nulls are frequent
VALUES = (None, 10, 20, 30, 40)
COMPACT = "compact"
EXAMPLES = int(os.environ.get("LAKECTL_SEQ_MODEL_EXAMPLES", "25"))


# ---- reference -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rec:
    kind: str
    arrival: int  # _SEQUENCE_NUMBER: input order across commits
    ts: int | None
    ts2: int | None
    v: int | None


def _nulls_first(value: int | None, ascending: bool) -> tuple[int, int]:
    """One sequence field's place in the order: null before every value, either direction."""
    if value is None:
        return (0, 0)
    return (1, value if ascending else -value)


@dataclass(frozen=True)
class Reference:
    engine: str
    fields: tuple[str, ...]  # "ts" or "ts", "ts2"
    ascending: bool

    def order(self, r: Rec) -> tuple:
        return tuple(_nulls_first(getattr(r, f), self.ascending) for f in self.fields) + ((r.arrival,),)

    def fold(self, records: Sequence[Rec]) -> Rec:
        ordered = sorted(records, key=self.order)
        if len(ordered) == 1:
            return ordered[0]
        last = ordered[-1]
        if self.engine == "deduplicate":
            return last
        if self.engine == "partial-update":
            newest = {c: next((getattr(r, c) for r in reversed(ordered) if getattr(r, c) is not None), None)
                      for c in ("ts", "ts2", "v")}
            return Rec("+I", last.arrival, newest["ts"], newest["ts2"], newest["v"])
        # aggregation: sum of v; sequence fields (and ts2, by the default function) keep the
        # newest non-null value.
        total = sum(r.v for r in ordered if r.v is not None) if any(r.v is not None for r in ordered) else None
        ts = next((r.ts for r in reversed(ordered) if r.ts is not None), None)
        ts2 = next((r.ts2 for r in reversed(ordered) if r.ts2 is not None), None)
        return Rec("+I", last.arrival, ts, ts2, total)


class Model:
    def __init__(self, ref: Reference, *, merge_on_commit: bool = False) -> None:
        self.ref = ref
        self.stored: dict[int, list[Rec]] = {}
        self.arrival = 0
        self.merge_on_commit = merge_on_commit  # deletion vectors: each commit is compacted

    def write(self, rows: Sequence[tuple[str, int, int | None, int | None, int | None]]) -> None:
        by_key: dict[int, list[Rec]] = {}
        for kind, key, ts, ts2, v in rows:
            by_key.setdefault(key, []).append(Rec(kind, self.arrival, ts, ts2, v))
            self.arrival += 1
        for key, records in by_key.items():
            self.stored.setdefault(key, []).append(self.ref.fold(records))
        if self.merge_on_commit:
            self.compact()

    def compact(self) -> None:
        for key in list(self.stored):
            merged = self.ref.fold(self.stored[key])
            if merged.kind in ("-U", "-D"):
                del self.stored[key]
            else:
                self.stored[key] = [merged]

    def visible(self) -> dict[int, tuple]:
        out = {}
        for key, records in self.stored.items():
            r = self.ref.fold(records)
            if r.kind not in ("-U", "-D"):
                out[key] = (r.ts, r.ts2, r.v)
        return out


# ---- the table ---------------------------------------------------------------------------------
def make_table(warehouse: str, ref: Reference, extra: dict[str, str] | None = None) -> Table:
    t = Table.locate("db.t", warehouse=warehouse)
    options = {"bucket": "2", "write-only": "true", "sequence.field": ",".join(ref.fields),
               "sequence.field.sort-order": "ascending" if ref.ascending else "descending"}
    if ref.engine != "deduplicate":
        options["merge-engine"] = ref.engine
    if ref.engine == "aggregation":
        options["fields.v.aggregate-function"] = "sum"
    options.update(extra or {})
    create(t, "id BIGINT NOT NULL, ts BIGINT, ts2 INT, v BIGINT", primary_keys=["id"], options=options)
    return Table.open("db.t", warehouse=warehouse)


def arrow(rows: Sequence[tuple]) -> pa.Table:
    return pa.table({"op": pa.array([r[0] for r in rows], pa.string()),
                     "id": pa.array([r[1] for r in rows], pa.int64()),
                     "ts": pa.array([r[2] for r in rows], pa.int64()),
                     "ts2": pa.array([r[3] for r in rows], pa.int32()),
                     "v": pa.array([r[4] for r in rows], pa.int64())})


def scanned(t: Table) -> dict[int, tuple]:
    return {r["id"]: (r["ts"], r["ts2"], r["v"]) for r in t.scan().to_pylist()}


def run(t: Table, model: Model, steps: Sequence[Any]) -> None:
    for n, step in enumerate(steps):
        if step == COMPACT:
            t.compact(full=True)
            model.compact()
        else:
            t.write(arrow(step), row_kind_column="op")
            model.write(step)
        assert scanned(t) == model.visible(), f"after step {n} ({step})"


@st.composite
def scenario(draw: st.DrawFn, kinds: tuple[str, ...]) -> list[Any]:
    row = st.tuples(st.sampled_from(kinds), st.sampled_from(KEYS), st.sampled_from(TS), st.sampled_from(TS),
                    st.sampled_from(VALUES))
    step = st.one_of(st.lists(row, min_size=1, max_size=6), st.just(COMPACT))
    return draw(st.lists(step, min_size=1, max_size=8))


VARIANTS = [
    ("deduplicate", ("ts",), True, ("+I", "+I", "+U", "-D")),
    ("deduplicate", ("ts", "ts2"), False, ("+I", "+U", "-D")),
    ("partial-update", ("ts",), True, ("+I",)),
    ("partial-update", ("ts2", "ts"), False, ("+I",)),
    ("aggregation", ("ts",), True, ("+I",)),
    ("aggregation", ("ts",), False, ("+I",)),
]


@pytest.mark.slow
@pytest.mark.parametrize("engine,fields,ascending,kinds", VARIANTS,
                         ids=[f"{v[0]}-{'+'.join(v[1])}-{'asc' if v[2] else 'desc'}" for v in VARIANTS])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_arrival_orders_scan_to_the_model(tmp_path_factory, engine, fields, ascending, kinds, data) -> None:
    ref = Reference(engine, fields, ascending)
    steps = data.draw(scenario(kinds))
    t = make_table(str(tmp_path_factory.mktemp("wh")), ref)
    run(t, Model(ref), steps)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_deletion_vectors_merge_by_sequence_field(tmp_path_factory, data) -> None:
    ref = Reference("deduplicate", ("ts",), True)
    steps = data.draw(scenario(("+I", "+U", "-D")))
    t = make_table(str(tmp_path_factory.mktemp("wh")), ref,
                   {"deletion-vectors.enabled": "true", "write-only": "false"})
    run(t, Model(ref, merge_on_commit=True), steps)


# ---- fixed cases (hand-computed) ------------------------------------------------------------
def test_the_larger_update_time_wins_across_commits(tmp_path) -> None:
    ref = Reference("deduplicate", ("ts",), True)
    t = make_table(str(tmp_path), ref)
    t.write(arrow([("+I", 1, 5, None, 50), ("+I", 2, 1, None, 10)]), row_kind_column="op")
    t.write(arrow([("+I", 1, 3, None, 30), ("+I", 2, 2, None, 20)]), row_kind_column="op")  # 1 arrives late
    assert scanned(t) == {1: (5, None, 50), 2: (2, None, 20)}
    t.compact(full=True)
    assert scanned(t) == {1: (5, None, 50), 2: (2, None, 20)}


def test_a_null_sequence_value_is_older_than_any_value_in_both_orders(tmp_path) -> None:
    for ascending, warehouse in ((True, tmp_path / "a"), (False, tmp_path / "d")):
        t = make_table(str(warehouse), Reference("deduplicate", ("ts",), ascending))
        # in one commit, the null arrives last; in the next the valued one arrives last
        t.write(arrow([("+I", 1, 2, None, 20), ("+I", 1, None, None, 99)]), row_kind_column="op")
        assert scanned(t) == {1: (2, None, 20)}
        t.write(arrow([("+I", 1, None, None, 98)]), row_kind_column="op")
        assert scanned(t) == {1: (2, None, 20)}


def test_descending_order_keeps_the_smallest_value(tmp_path) -> None:
    t = make_table(str(tmp_path), Reference("deduplicate", ("ts",), False))
    t.write(arrow([("+I", 1, 1, None, 10), ("+I", 1, 3, None, 30)]), row_kind_column="op")
    t.write(arrow([("+I", 1, 2, None, 20)]), row_kind_column="op")
    assert scanned(t) == {1: (1, None, 10)}


def test_an_older_delete_does_not_remove_a_newer_row(tmp_path) -> None:
    t = make_table(str(tmp_path), Reference("deduplicate", ("ts",), True))
    t.write(arrow([("+I", 1, 5, None, 50)]), row_kind_column="op")
    t.write(arrow([("-D", 1, 4, None, 40)]), row_kind_column="op")
    assert scanned(t) == {1: (5, None, 50)}
    t.write(arrow([("-D", 1, 6, None, 50)]), row_kind_column="op")
    assert scanned(t) == {}


def test_partial_update_folds_are_stored_as_java_stores_them(tmp_path) -> None:
    """A folded record carries the newest ts with older column values, so a later record with
    a ts between them loses to the fold (Java's write buffer folds the same way)."""
    ref = Reference("partial-update", ("ts",), True)
    t = make_table(str(tmp_path), ref)
    t.write(arrow([("+I", 1, 5, None, None), ("+I", 1, 3, 7, 30)]), row_kind_column="op")
    assert scanned(t) == {1: (5, 7, 30)}
    t.write(arrow([("+I", 1, 4, 8, 40)]), row_kind_column="op")  # older than the fold (ts 5)
    assert scanned(t) == {1: (5, 7, 30)}


@pytest.mark.parametrize("options,message", [
    ({"sequence.field": "nope"}, "option sequence.field names column 'nope'"),
    ({"sequence.field": "ts,ts"}, "names column 'ts' more than once"),
    ({"sequence.field": "ts", "merge-engine": "first-row"}, "cannot be used with merge-engine=first-row"),
    ({"sequence.field": "ts", "merge-engine": "aggregation", "fields.ts.aggregate-function": "max"},
     "must not have an aggregate function"),
    ({"sequence.field": "ts", "sequence.field.sort-order": "sideways"}, "sequence.field.sort-order=sideways"),
    ({"sequence.field": "arr"}, "nested type"),
])
def test_invalid_sequence_options_are_usage_errors(tmp_path, options, message) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path))
    with pytest.raises(UsageError, match=message.replace(".", r"\.").replace("(", r"\(")):
        create(t, "id BIGINT NOT NULL, ts BIGINT, v BIGINT, arr ARRAY<INT>", primary_keys=["id"],
               options={"bucket": "1", **options})


def test_cross_partition_tables_refuse_sequence_field(tmp_path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path))
    with pytest.raises((UsageError, UnsupportedTableError), match="sequence.field"):
        create(t, "id BIGINT NOT NULL, dt STRING NOT NULL, ts BIGINT", primary_keys=["id"], partition_keys=["dt"],
               options={"sequence.field": "ts"})


# ---- partial-update sequence groups ---------------------------------------------------------
# Columns: k (key), a and b in the group of g (one sequence field), c in the group of (h1, h2)
# (two sequence fields), f in no group. The reference folds record by record as Java's
# PartialUpdateMergeFunction does: a group changes only with a record whose group sequence is
# set and not older than the row's (nulls oldest, fields in order); an insert sets the group's
# columns (nulls too), a retraction nulls them; f takes an insert's non-null value only.
GROUPS = {"g": ("g",), "h": ("h1", "h2")}
MEMBERS = {"a": "g", "b": "g", "c": "h"}
GROUP_COLUMNS = ("a", "b", "g", "c", "h1", "h2", "f")


def _not_older(mine: tuple, theirs: tuple) -> bool:
    for x, y in zip(mine, theirs):
        if x is None and y is None:
            continue
        if x is None or y is None:
            return y is None
        if x != y:
            return x > y
    return True


def group_fold(records: Sequence[tuple[str, dict]]) -> tuple[str, dict]:
    """records: (kind, values) in arrival order; a single record passes as it is."""
    if len(records) == 1:
        return records[0]
    row = dict.fromkeys(GROUP_COLUMNS)
    for kind, values in records:
        retract = kind in ("-U", "-D")
        for group, fields in GROUPS.items():
            mine = tuple(values[f] for f in fields)
            if all(v is None for v in mine) or not _not_older(mine, tuple(row[f] for f in fields)):
                continue
            for f in fields:
                row[f] = values[f]
            for column, owner in MEMBERS.items():
                if owner == group:
                    row[column] = None if retract else values[column]
        if not retract and values["f"] is not None:
            row["f"] = values["f"]
    return "+I", row


def group_table(warehouse: str) -> Table:
    t = Table.locate("db.t", warehouse=warehouse)
    create(t, "k INT NOT NULL, a INT, b INT, g INT, c INT, h1 INT, h2 INT, f INT", primary_keys=["k"],
           options={"bucket": "1", "write-only": "true", "merge-engine": "partial-update",
                    "fields.g.sequence-group": "a,b", "fields.h1,h2.sequence-group": "c"})
    return Table.open("db.t", warehouse=warehouse)


@st.composite
def group_scenario(draw: st.DrawFn) -> list[Any]:
    small = st.sampled_from((None, 1, 2, 3))
    record = st.tuples(st.sampled_from(("+I", "+I", "+U", "-U", "-D")), st.sampled_from((1, 2)),
                       st.fixed_dictionaries({c: small for c in GROUP_COLUMNS}))
    step = st.one_of(st.lists(record, min_size=1, max_size=5), st.just(COMPACT))
    return draw(st.lists(step, min_size=1, max_size=6))


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_sequence_groups_scan_to_the_record_by_record_reference(tmp_path_factory, data) -> None:
    steps = data.draw(group_scenario())
    t = group_table(str(tmp_path_factory.mktemp("wh")))
    stored: dict[int, list[tuple[str, dict]]] = {}
    for n, step in enumerate(steps):
        if step == COMPACT:
            t.compact(full=True)
            for key in list(stored):
                kind, row = group_fold(stored[key])
                if kind in ("-U", "-D"):
                    del stored[key]
                else:
                    stored[key] = [(kind, row)]
        else:
            t.write(pa.table({"op": [r[0] for r in step], "k": pa.array([r[1] for r in step], pa.int32()),
                              **{c: pa.array([r[2][c] for r in step], pa.int32()) for c in GROUP_COLUMNS}}),
                    row_kind_column="op")
            by_key: dict[int, list] = {}
            for kind, key, values in step:
                by_key.setdefault(key, []).append((kind, values))
            for key, records in by_key.items():
                stored.setdefault(key, []).append(group_fold(records))
        expected = {}
        for key, records in stored.items():
            kind, row = group_fold(records)
            if kind not in ("-U", "-D"):
                expected[key] = row
        got = {r.pop("k"): r for r in t.scan().to_pylist()}
        assert got == expected, f"after step {n} ({step})"


@pytest.mark.parametrize("options,message", [
    ({"fields.nope.sequence-group": "v"}, "sequence field 'nope'"),
    ({"fields.ts.sequence-group": "nope"}, "column 'nope'"),
    ({"fields.ts.sequence-group": "v", "fields.ts2.sequence-group": "v"}, "already in the sequence group"),
    ({"fields.ts.sequence-group": "v", "partial-update.remove-record-on-delete": "true"}, "cannot be used together"),
    ({"fields.ts.sequence-group": "v", "partial-update.remove-record-on-sequence-group": "v"},
     "must be a sequence field"),
])
def test_invalid_sequence_groups_are_usage_errors(tmp_path, options, message) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path))
    with pytest.raises(UsageError, match=message):
        create(t, "id BIGINT NOT NULL, ts BIGINT, ts2 BIGINT, v BIGINT", primary_keys=["id"],
               options={"bucket": "1", "merge-engine": "partial-update", **options})
