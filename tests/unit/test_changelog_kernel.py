"""The changelog kernel on hand-computed cases, and the lookup file cache's byte budget."""

import numpy as np
import pyarrow as pa
import pytest

from core.kernels.changelog import FileCache, changes, tagged_sort
from core.kernels.merge import MergeEngine
from core.schema import new_table_schema
from core.types import arrow_field, parse_columns

KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


def _engine(options=None):
    schema = new_table_schema(parse_columns("id BIGINT NOT NULL, v INT"), primary_keys=["id"],
                              options={"bucket": "1", **(options or {})})
    return schema, MergeEngine.of(schema)


def _records(schema, rows):
    """rows: (id, v, kind, seq)."""
    fields = [arrow_field(f).with_nullable(True) for f in schema.fields]
    return pa.Table.from_arrays(
        [pa.array([r[0] for r in rows], fields[0].type), pa.array([r[1] for r in rows], fields[1].type),
         pa.array([r[3] for r in rows], pa.int64()), pa.array([KINDS[r[2]] for r in rows], pa.int8())],
        names=["id", "v", "_SEQUENCE_NUMBER", "_VALUE_KIND"])


def _log(table):
    names = {v: k for k, v in KINDS.items()}
    return [(names[k], i, v) for i, v, k in zip(table.column("id").to_pylist(), table.column("v").to_pylist(),
                                                 table.column("_VALUE_KIND").to_pylist())]


def _changes(options, old, new, **kw):
    schema, engine = _engine(options)
    rows, is_old = tagged_sort(_records(schema, old), _records(schema, new), engine)
    return _log(changes(rows, is_old, engine, **kw))


def test_insert_update_delete_and_untouched_keys():
    old = [(1, 10, "+I", 0), (2, 20, "+I", 1), (3, 30, "+I", 2)]
    new = [(1, 11, "+I", 5), (2, None, "-D", 6), (4, 40, "+I", 7)]
    # Key 3 is not touched by the new records: no changelog for it.
    assert _changes({}, old, new) == [("-U", 1, 10), ("+U", 1, 11), ("-D", 2, 20), ("+I", 4, 40)]


def test_delete_of_an_absent_key_and_reinsert_of_a_deleted_key():
    old = [(1, 10, "+I", 0), (1, None, "-D", 1)]
    new = [(1, 12, "+I", 5), (2, None, "-D", 6)]
    assert _changes({}, old, new) == [("+I", 1, 12)]


def test_after_state_is_the_merge_engine_result():
    options = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}
    old = [(1, 10, "+I", 0), (1, 5, "+I", 1)]
    new = [(1, 7, "+I", 5), (1, 3, "-U", 6)]
    assert _changes(options, old, new) == [("-U", 1, 15), ("+U", 1, 19)]


def test_row_deduplicate_drops_unchanged_pairs():
    old = [(1, 10, "+I", 0), (2, 20, "+I", 1)]
    new = [(1, 10, "+I", 5), (2, 21, "+I", 6)]
    assert _changes({}, old, new) == [("-U", 1, 10), ("+U", 1, 10), ("-U", 2, 20), ("+U", 2, 21)]
    assert _changes({}, old, new, row_deduplicate=True) == [("-U", 2, 20), ("+U", 2, 21)]


def test_first_row_only_inserts_new_keys():
    options = {"merge-engine": "first-row"}
    old = [(1, 10, "+I", 0)]
    new = [(1, 99, "+I", 5), (2, 20, "+I", 6)]
    assert _changes(options, old, new) == [("+I", 2, 20)]


def test_file_cache_keeps_within_its_budget_and_evicts_least_recent():
    cache = FileCache()
    table = pa.table({"x": pa.array(np.arange(1000, dtype=np.int64))})  # 8000 bytes
    loads = []

    def load(name):
        def go():
            loads.append(name)
            return table
        return go

    budget = 2 * table.nbytes
    for name in ("a", "b", "a", "c", "a", "b"):
        cache.get((name, 0), load(name), budget)
        assert cache.bytes <= budget
    # a, b load; a hits; c evicts b (a was used more recently); a hits; b loads again.
    assert loads == ["a", "b", "c", "b"]
    big = pa.table({"x": pa.array(np.arange(10_000, dtype=np.int64))})
    assert cache.get(("big", 0), lambda: big, budget) is big
    assert cache.bytes <= budget  # too large to cache: returned, not kept


@pytest.mark.parametrize("size", ["1 kb", "64mb"])
def test_lookup_cache_option_is_parsed(size):
    schema, _ = _engine({"changelog-producer": "lookup", "lookup.cache-max-memory-size": size})
    assert schema.core_options.lookup_cache_bytes == {"1 kb": 1024, "64mb": 64 << 20}[size]


@pytest.mark.parametrize("budget, cached", [("1 kb", False), ("64 mb", True)])
def test_lookup_writes_cache_files_within_the_table_budget(tmp_path, budget, cached):
    """A first-row table's writes look the stored keys up through the cache."""
    from core.kernels.changelog import LOOKUP_CACHE
    from core.ops.create import create
    from core.table import Table

    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT NOT NULL, v INT", primary_keys=["id"],
           options={"bucket": "1", "merge-engine": "first-row", "lookup.cache-max-memory-size": budget,
                    "write-only": "true"})
    before = LOOKUP_CACHE.bytes
    for i in range(3):
        t.write(pa.table({"id": pa.array(np.arange(100 * (i + 1)), pa.int64()),
                          "v": pa.array(np.full(100 * (i + 1), i), pa.int32())}))
    grew = LOOKUP_CACHE.bytes - before
    assert (grew > 0) is cached  # a file larger than the budget is read, used and not kept
    # each key keeps the value of the write that brought it first (seen once compacted:
    # batch reads of first-row tables skip level 0)
    t.compact(full=True)
    assert sorted(t.scan().to_pylist(), key=lambda r: r["id"]) == [{"id": k, "v": k // 100} for k in range(300)]


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_overwrite_of_a_whole_table_emits_deletes_for_buckets_it_empties(tmp_path, producer):
    from core.ops.create import create
    from core.table import Table

    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT NOT NULL, v INT", primary_keys=["id"],
           options={"bucket": "4", "changelog-producer": producer, "write-only": "true"})
    t.write(pa.table({"id": pa.array(range(20), pa.int64()), "v": pa.array(range(20), pa.int32())}))
    t.compact(full=True)
    t.write(pa.table({"id": pa.array([3], pa.int64()), "v": pa.array([33], pa.int32())}), mode="overwrite")
    t.compact(full=True)
    state = {}
    # the overwrite's changelog as a follower reading overwrites sees it (streaming-read-overwrite);
    # a batch incremental-between skips OVERWRITE snapshots, as Paimon's does
    from core.ops.changes import changes as read_changes

    for r in read_changes(t, 0, t.latest_snapshot().id, streaming=True).to_pylist():
        if r["_row_kind"] in ("+I", "+U"):
            state[r["id"]] = r["v"]
        else:
            state.pop(r["id"], None)
    assert state == {3: 33} == {r["id"]: r["v"] for r in t.scan().to_pylist()}


def test_lookup_overwrite_changelog_is_not_repeated_by_the_compaction_after_it(tmp_path):
    """A lookup table's write has its changelog written by the compaction after its commit; an
    overwrite carries its own (what it replaced), and the compaction after it adds none."""
    from core.ops.create import create
    from core.table import Table

    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT NOT NULL, v INT", primary_keys=["id"], options={"bucket": "1", "changelog-producer": "lookup"})
    t.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array([1, 2, 3], pa.int32())}))
    first = t.latest_snapshot().id
    assert [s.commit_kind for s in t.snapshots.snapshots()] == ["APPEND", "COMPACT"]
    assert sorted(_rows(t.changes(0, first))) == [("+I", 1, 1), ("+I", 2, 2), ("+I", 3, 3)]
    t.write(pa.table({"id": pa.array([1, 4], pa.int64()), "v": pa.array([10, 4], pa.int32())}), mode="overwrite")
    assert [s.commit_kind for s in t.snapshots.snapshots()][first:] == ["OVERWRITE", "COMPACT"]
    from core.ops.changes import changes as read_changes

    # as a follower reading overwrites sees it; incremental-between skips the OVERWRITE, as Paimon
    assert sorted(_rows(read_changes(t, first, t.latest_snapshot().id, streaming=True))) == \
        [("+I", 4, 4), ("+U", 1, 10), ("-D", 2, 2), ("-D", 3, 3), ("-U", 1, 1)]
    assert _rows(t.changes(first, t.latest_snapshot().id)) == []


def _rows(log):
    return [(r["_row_kind"], r["id"], r["v"]) for r in log.to_pylist()]


def test_force_lookup_aggregation_keeps_every_write_through_its_compactions(tmp_path):
    """force-lookup: reads count a key's newest record above level 0 only (Java's
    LookupMergeFunction), so every compaction folds the older ones into what it writes: a
    sum over many writes stays the sum, whatever the levels."""
    from core.ops.create import create
    from core.table import Table

    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT NOT NULL, v INT", primary_keys=["id"],
           options={"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                    "force-lookup": "true", "num-sorted-run.compaction-trigger": "2"})
    t.write(pa.table({"id": pa.array(range(500), pa.int64()), "v": pa.array(np.ones(500, np.int32))}))
    for i in range(1, 8):
        t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([10 ** (i % 4), 1], pa.int32())}))
    got = {r["id"]: r["v"] for r in t.scan().to_pylist()}
    assert got[1] == 1 + sum(10 ** (i % 4) for i in range(1, 8)) and got[2] == 8 and got[3] == 1
    t.compact(full=True)
    assert {r["id"]: r["v"] for r in t.scan().to_pylist()} == got
