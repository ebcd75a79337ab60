"""The streaming k-way merge (core.kernels.stream_merge) against the whole-bucket merge.

Random runs (each sorted by key, a key at most once per run, as Paimon writes them) are merged
in batches of 1-7 rows and compared with ``engine.merge(engine.sorted(all rows))``, the merge
lakectl did on the whole bucket before; the instrumented counter checks that the rows held at
once follow runs x batch size, not the bucket's rows, and the count of rounds that k runs of
one row each merge in one, not k (the quadratic cost of issue 44)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from core.kernels import stream_merge
from core.kernels.merge import MergeEngine
from core.kernels.records import SEQUENCE_NUMBER, VALUE_KIND, alive
from core.merge_options import FieldAggregate

SCHEMA = pa.schema([("k1", pa.int32()), ("k2", pa.string()), ("v", pa.int64()), ("s", pa.int64()),
                    (SEQUENCE_NUMBER, pa.int64()), (VALUE_KIND, pa.int8())])

ENGINES = {
    "deduplicate": (MergeEngine("deduplicate", ("k1", "k2")), (0, 1, 2, 3)),
    "deduplicate-seq-field": (MergeEngine("deduplicate", ("k1", "k2"), sequence_fields=("s",)), (0, 3)),
    "first-row": (MergeEngine("first-row", ("k1", "k2")), (0,)),
    "partial-update": (MergeEngine("partial-update", ("k1", "k2"), ignore_delete=True), (0, 3)),
    "aggregation": (MergeEngine("aggregation", ("k1", "k2"),
                                aggregates=(FieldAggregate("v", "sum"), FieldAggregate("s", "last_value"))),
                    (0, 1, 2, 3)),
    "partial-update-remove-record-on-delete": (
        MergeEngine("partial-update", ("k1", "k2"), remove_record_on_delete=True, not_null=("k1",)), (0, 1, 2, 3)),
    "aggregation-remove-record-on-delete": (
        MergeEngine("aggregation", ("k1", "k2"), remove_record_on_delete=True,
                    aggregates=(FieldAggregate("v", "first_non_null_value", ignore_retract=True),
                                FieldAggregate("s", "first_value", ignore_retract=True))), (0, 1, 2, 3)),
}


@st.composite
def runs(draw, kinds):
    """2-5 runs over a small key space; sequence numbers unique across the bucket."""
    keys = [(a, b) for a in range(4) for b in ("a", "b", "é")]
    count = draw(st.integers(2, 5))
    seq = iter(draw(st.permutations(range(count * len(keys)))))
    out = []
    for _ in range(count):
        chosen = sorted(draw(st.sets(st.sampled_from(keys), max_size=len(keys))))
        rows = [{"k1": a, "k2": b, "v": draw(st.none() | st.integers(-5, 5)), "s": draw(st.none() | st.integers(0, 3)),
                 SEQUENCE_NUMBER: next(seq), VALUE_KIND: draw(st.sampled_from(kinds))} for a, b in chosen]
        out.append(pa.Table.from_pylist(rows, schema=SCHEMA))
    return out


def _whole(engine: MergeEngine, tables: list[pa.Table]) -> pa.Table:
    return engine.merge(engine.sorted(pa.concat_tables(tables)))


def _streamed(engine: MergeEngine, tables: list[pa.Table], batch_rows: int) -> pa.Table:
    chunks = list(stream_merge.merge_runs(engine, [stream_merge.batches([t], batch_rows) for t in tables]))
    return pa.concat_tables(chunks) if chunks else SCHEMA.empty_table()


@settings(max_examples=60, deadline=None)
@given(st.data(), st.sampled_from(sorted(ENGINES)), st.integers(1, 7))
def test_streaming_merge_equals_whole_bucket_merge(data, name, batch_rows):
    engine, kinds = ENGINES[name]
    tables = data.draw(runs(kinds))
    assert _streamed(engine, tables, batch_rows).to_pylist() == _whole(engine, tables).to_pylist()
    assert stream_merge.peak_rows_held <= 2 * len(tables) * batch_rows  # a batch and the one read ahead


def test_rows_held_follow_batches_not_the_bucket():
    """Three runs of 3000 keys each, merged in batches of 100: never more than 600 rows held
    (each run's batch and the one it reads ahead)."""
    engine = MergeEngine("deduplicate", ("k1", "k2"))
    tables = [pa.Table.from_pylist([{"k1": i, "k2": "x", "v": r, "s": None, SEQUENCE_NUMBER: r * 10_000 + i,
                                     VALUE_KIND: 0} for i in range(r, 9000, 3)], schema=SCHEMA) for r in range(3)]
    merged = _streamed(engine, tables, 100)
    assert merged.column("k1").to_pylist() == list(range(9000))
    assert stream_merge.peak_rows_held <= 600


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 4))
def test_temporal_keys_cut_by_their_integers(data, batch_rows):
    """Nanosecond timestamps (no exact Python datetime) and dates as keys: the frontier compares
    their integers, and the merge equals the whole-bucket merge."""
    schema = pa.schema([("t", pa.timestamp("ns")), ("d", pa.date32()), ("v", pa.int64()),
                        (SEQUENCE_NUMBER, pa.int64()), (VALUE_KIND, pa.int8())])
    engine = MergeEngine("deduplicate", ("t", "d"))
    base = 1_709_208_000_123_456_789  # 2024-02-29T12:00:00.123456789: a datetime would lose digits
    keys = [(base + n, d) for n in (0, 1, 2, 999) for d in (19000, 19001)]
    seq = iter(range(1000))
    tables = []
    for _ in range(data.draw(st.integers(2, 4))):
        chosen = sorted(data.draw(st.sets(st.sampled_from(keys), max_size=len(keys))))
        tables.append(pa.table({"t": pa.array([t for t, _ in chosen], pa.int64()).cast(pa.timestamp("ns")),
                                "d": pa.array([d for _, d in chosen], pa.int32()).cast(pa.date32()),
                                "v": pa.array([next(seq) for _ in chosen], pa.int64()),
                                SEQUENCE_NUMBER: pa.array([next(seq) for _ in chosen], pa.int64()),
                                VALUE_KIND: pa.array([0] * len(chosen), pa.int8())}, schema=schema))
    chunks = list(stream_merge.merge_runs(engine, [stream_merge.batches([t], batch_rows) for t in tables]))
    streamed = pa.concat_tables(chunks) if chunks else schema.empty_table()
    whole = engine.merge(engine.sorted(pa.concat_tables(tables)))
    assert streamed.equals(whole)


INT_KEY = pa.schema([("id", pa.int64()), ("v", pa.int64()), (SEQUENCE_NUMBER, pa.int64()), (VALUE_KIND, pa.int8())])


@st.composite
def int_key_runs(draw):
    """2-5 runs over ids 0..11; sequence numbers drawn from a small range, so records of a key
    in different runs may tie (files pypaimon writes carry one number for all rows)."""
    out = []
    for _ in range(draw(st.integers(2, 5))):
        ids = sorted(draw(st.sets(st.integers(0, 11), max_size=12)))
        out.append(pa.Table.from_pylist(
            [{"id": i, "v": draw(st.integers(-5, 5)), SEQUENCE_NUMBER: draw(st.integers(0, 6)),
              VALUE_KIND: draw(st.sampled_from((0, 1, 2, 3)))} for i in ids], schema=INT_KEY))
    return out


@settings(max_examples=80, deadline=None)
@given(st.data(), st.integers(1, 7), st.sampled_from(["deduplicate", "deduplicate-ignore-delete", "aggregation"]))
def test_alive_only_equals_the_alive_records_of_the_whole_merge(data, batch_rows, name):
    """``alive_only`` (a deduplicate merge on one integer key picks the newest records by
    numpy, the other engines merge and filter) against ``records.alive`` of the whole-bucket
    merge, also when sequence numbers tie and with a column subset."""
    engine = {"deduplicate": MergeEngine("deduplicate", ("id",)),
              "deduplicate-ignore-delete": MergeEngine("deduplicate", ("id",), ignore_delete=True),
              "aggregation": MergeEngine("aggregation", ("id",), aggregates=(FieldAggregate("v", "sum"),))}[name]
    tables = data.draw(int_key_runs())
    whole = alive(engine.merge(engine.sorted(pa.concat_tables(tables))))
    for columns in (None, ["v", "id"]):
        chunks = list(stream_merge.merge_runs(engine, [stream_merge.batches([t], batch_rows) for t in tables],
                                              alive_only=True, columns=columns))
        expected = whole if columns is None else whole.select(columns)
        streamed = pa.concat_tables(chunks) if chunks else expected.schema.empty_table()
        assert streamed.to_pylist() == expected.to_pylist()


def test_newest_alive_record_by_hand():
    """Key 1: +I seq 1, +U seq 5 (newest, kept); key 2: +I seq 2 then -D seq 4 (gone);
    key 3: +I seq 3 in both runs (a tie: the record later in the input is kept, as by a stable sort)."""
    first = pa.Table.from_pylist([{"id": 1, "v": 10, SEQUENCE_NUMBER: 1, VALUE_KIND: 0},
                                  {"id": 2, "v": 20, SEQUENCE_NUMBER: 2, VALUE_KIND: 0},
                                  {"id": 3, "v": 30, SEQUENCE_NUMBER: 3, VALUE_KIND: 0}], schema=INT_KEY)
    second = pa.Table.from_pylist([{"id": 1, "v": 11, SEQUENCE_NUMBER: 5, VALUE_KIND: 2},
                                   {"id": 2, "v": 21, SEQUENCE_NUMBER: 4, VALUE_KIND: 3},
                                   {"id": 3, "v": 31, SEQUENCE_NUMBER: 3, VALUE_KIND: 0}], schema=INT_KEY)
    out = MergeEngine("deduplicate", ("id",)).merged_alive(pa.concat_tables([second, first]), ["id", "v"])
    assert out.to_pylist() == [{"id": 1, "v": 11}, {"id": 3, "v": 30}]


def test_one_row_runs_merge_in_one_round():
    """2,000 one-row commits: 2,000 runs of one batch each. None bounds the frontier, so one
    chunk holds them all (each round used to release only the smallest key: 2,000 rounds)."""
    engine = MergeEngine("deduplicate", ("k1", "k2"))
    order = [(i * 7919) % 2000 for i in range(2000)]
    tables = [pa.Table.from_pylist([{"k1": k, "k2": "x", "v": n, "s": None, SEQUENCE_NUMBER: n, VALUE_KIND: 0}],
                                   schema=SCHEMA) for n, k in enumerate(order)]
    chunks = list(stream_merge.merge_runs(engine, [stream_merge.batches([t], 100) for t in tables]))
    assert len(chunks) == 1
    assert pa.concat_tables(chunks).to_pylist() == _whole(engine, tables).to_pylist()
