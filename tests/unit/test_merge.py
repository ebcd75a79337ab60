"""The merge kernel's folds with ``remove-record-on-delete`` (core.kernels.merge), record by
record against Paimon's merge functions worked out by hand.

PartialUpdateMergeFunction (Paimon 1.1+, apache/paimon#5077) and AggregateMergeFunction start a
row that a retraction opens from that retraction's NOT NULL columns only (initRow); what that
puts into the folded -D records, and into first_value columns, does not show in a scan of the
model tests' nullable tables, so these tests look at the kernel's output and at NOT NULL tables.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from core.kernels.merge import MergeEngine
from core.kernels.records import DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND
from core.merge_options import FieldAggregate
from core.ops.create import create
from core.table import Table

PU_SCHEMA = pa.schema([("id", pa.int64(), False), ("price", pa.float64()), ("num", pa.int32(), False),
                       ("d", pa.string()), (SEQUENCE_NUMBER, pa.int64()), (VALUE_KIND, pa.int8())])
PU = MergeEngine("partial-update", ("id",), remove_record_on_delete=True, not_null=("id", "num"))


def _rows(schema: pa.Schema, records: list[tuple]) -> pa.Table:
    """(kind, key, values...) records, sequence numbers in list order."""
    names = schema.names[:-2]
    data = [dict(zip(names, rec[1:]), **{SEQUENCE_NUMBER: seq, VALUE_KIND: rec[0]})
            for seq, rec in enumerate(records, 1)]
    return pa.Table.from_pylist(data, schema=schema)


def _folded(engine: MergeEngine, rows: pa.Table) -> dict:
    out = engine.merge(engine.sorted(rows)).to_pylist()
    return {r.pop("id"): tuple(r.values()) for r in out}


def test_partial_update_retractions_start_the_row_from_not_null_columns():
    rows = _rows(PU_SCHEMA, [
        # key 1, -U only: a -D (no insert met) with the first -U's NOT NULL value, the last sequence
        (UPDATE_BEFORE, 1, 7.0, 4, "u"), (UPDATE_BEFORE, 1, 8.0, 5, "v"),
        # key 2, insert then -D: a -D holding only the -D's NOT NULL value
        (INSERT, 2, 1.0, 1, "a"), (DELETE, 2, 9.0, 2, "z"),
        # key 3, a -U after the -D: alive again (the fold met an insert) with the -D's start
        (INSERT, 3, 1.0, 1, "a"), (DELETE, 3, 9.0, 2, "z"), (UPDATE_BEFORE, 3, 8.0, 3, "y"),
        # key 4, a leading -U: inserts overwrite its start
        (UPDATE_BEFORE, 4, 5.0, 6, "w"), (INSERT, 4, 2.0, 7, None),
        # key 5, a -U after the insert changes nothing but the sequence number
        (INSERT, 5, 1.0, 1, "a"), (UPDATE_BEFORE, 5, 3.0, 8, "x"),
    ])
    assert _folded(PU, rows) == {
        1: (None, 4, None, 2, DELETE),
        2: (None, 2, None, 4, DELETE),
        3: (None, 2, None, 7, INSERT),
        4: (2.0, 7, None, 9, INSERT),
        5: (1.0, 1, "a", 11, INSERT),
    }


def test_partial_update_not_null_table_takes_update_before_only_commits(tmp_path: Path):
    """A commit of -U rows only folds to a -D that keeps the NOT NULL column filled (so it can
    be written), hides the key, and restarts it for the next insert."""
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT NOT NULL, num INT NOT NULL, d STRING", primary_keys=["id"],
           options={"bucket": "1", "merge-engine": "partial-update",
                    "partial-update.remove-record-on-delete": "true"})

    def write(*records):
        t.write(pa.table({"id": pa.array([r[1] for r in records], pa.int64()),
                          "num": pa.array([r[2] for r in records], pa.int32()),
                          "d": [r[3] for r in records], "op": [r[0] for r in records]}), row_kind_column="op")

    write(("+I", 1, 1, "a"))
    write(("-U", 1, 4, None), ("-U", 1, 5, None))
    assert t.scan().num_rows == 0
    write(("+I", 1, 6, None))
    assert t.scan().to_pylist() == [{"id": 1, "num": 6, "d": None}]


AGG_SCHEMA = pa.schema([("id", pa.int64(), False), ("f", pa.int32(), False), ("g", pa.int32(), False),
                        (SEQUENCE_NUMBER, pa.int64()), (VALUE_KIND, pa.int8())])
AGG = MergeEngine("aggregation", ("id",), remove_record_on_delete=True,
                  aggregates=(FieldAggregate("f", "first_value", ignore_retract=True, nullable=False),
                              FieldAggregate("g", "first_non_null_value", ignore_retract=True, nullable=False)))


def test_first_value_after_a_seeding_delete():
    """NOT NULL first_value/first_non_null_value columns: a -D starts the row from its values but
    does not initialise the functions, so the first insert after it still wins; functions that
    took a value before the -D keep the -D's start."""
    rows = _rows(AGG_SCHEMA, [
        (DELETE, 1, 2, 5), (INSERT, 1, 3, 6),
        (INSERT, 2, 1, 1), (DELETE, 2, 2, 5), (INSERT, 2, 3, 6),
        (INSERT, 3, 1, 1), (DELETE, 3, 2, 5),
    ])
    assert _folded(AGG, rows) == {1: (3, 6, 2, INSERT), 2: (2, 5, 5, INSERT), 3: (2, 5, 7, DELETE)}


def test_first_value_table_after_a_delete_in_one_commit(tmp_path: Path):
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT NOT NULL, f INT NOT NULL, g INT", primary_keys=["id"],
           options={"bucket": "1", "merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
                    "fields.f.aggregate-function": "first_value", "fields.f.ignore-retract": "true",
                    "fields.g.aggregate-function": "first_non_null_value", "fields.g.ignore-retract": "true"})
    t.write(pa.table({"id": pa.array([1, 1, 2, 2, 2], pa.int64()), "f": pa.array([2, 3, 1, 2, 3], pa.int32()),
                      "g": pa.array([5, 6, 1, 5, 6], pa.int32()), "op": ["-D", "+I", "+I", "-D", "+I"]}),
            row_kind_column="op")
    # Key 1: the insert after the leading -D; key 2: f keeps the -D's NOT NULL value, g (nullable)
    # the empty start, since both functions were initialised before the -D.
    assert t.scan().to_pylist() == [{"id": 1, "f": 3, "g": 6}, {"id": 2, "f": 2, "g": None}]
