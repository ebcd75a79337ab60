"""lakectl compacts, the official reader (pypaimon) reads; pypaimon keeps writing afterwards.

A compacted primary-key bucket is one sorted run at level 5 with no delete rows, which
pypaimon reads without merging (``raw convertible``): overlapping key ranges or a leftover
delete would show up here as duplicate or resurrected keys. Every snapshot, the ones
before the COMPACT included, must read the same in both readers, as the model says.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from oracle import official_read
from test_lakectl_to_pypaimon import (ESCAPED_PARTITIONS, AppendModel, History, KeyedModel, Row, assert_rows,
                                      canonical_rows, lakectl_table)
from test_pypaimon_to_lakectl import (MIXED_FIELDS, MIXED_OPTIONS, OracleHistory, _both_readers_agree, _keys,
                                      _mixed, pypaimon_append)

from core import binary_row
from core.manifest import FILE_SOURCE_COMPACT, ManifestEntry, merge_entries, read_entries
from core.ops.compact import CompactResult
from core.snapshot import COMPACT
from core.table import Table

pytestmark = pytest.mark.interop


def live(table: Table) -> list[ManifestEntry]:
    snap = table.latest_snapshot()
    return merge_entries(read_entries(table.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))


def assert_one_sorted_run_per_bucket(table: Table, level: int = 5) -> int:
    """Every live file sits at ``level`` without deletes, key ranges disjoint per bucket.

    Returns the largest number of files in one bucket.
    """
    key_types = [f.type for f in table.schema.key_fields]
    buckets: dict[tuple[bytes, int], list[tuple[tuple, tuple]]] = {}
    for e in live(table):
        f = e.file
        assert (f.level, f.delete_row_count, f.file_source) == (level, 0, FILE_SOURCE_COMPACT), f
        buckets.setdefault((e.partition, e.bucket), []).append(
            (binary_row.decode(f.min_key, key_types), binary_row.decode(f.max_key, key_types)))
    for ranges in buckets.values():
        ranges.sort()
        for (_, high), (low, _) in zip(ranges, ranges[1:]):
            assert high < low, f"overlapping key ranges in one bucket: {ranges}"
    return max(len(r) for r in buckets.values())


# ---- lakectl writes and compacts, both read, pypaimon continues ------------------------------
class MixedHistory:
    """The MIXED table (rowkind.field _rk) written by both writers, with the rows of every snapshot."""

    def __init__(self, table: Table, tmp_path: Path) -> None:
        self.table = table
        self.tmp_path = tmp_path
        self.model = KeyedModel(["dt", "id"], ["dt"])
        self.states: list[list[Row]] = []

    def _record(self, data: pa.Table | None) -> None:
        if data is not None:
            rows = canonical_rows(data)
            self.model.apply(rows, [row["_rk"] for row in rows])
        self.states.append(self.model.snapshot())

    def lakectl(self, data: pa.Table) -> None:
        assert self.table.write(data).snapshot_id == len(self.states) + 1
        self._record(data)

    def pypaimon(self, data: pa.Table) -> None:
        warehouse = Path(self.table.path).parents[1]
        assert pypaimon_append(warehouse, self.table.name, data, self.tmp_path) == len(self.states) + 1
        self._record(data)

    def compact(self, **kwargs: object) -> CompactResult:
        result = self.table.compact(**kwargs)  # type: ignore[arg-type]
        assert result.snapshot_id == len(self.states) + 1
        assert self.table.latest_snapshot().commit_kind == COMPACT
        self._record(None)
        return result


def test_pypaimon_reads_a_compacted_table_and_continues_it(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "mixed", MIXED_FIELDS, primary_keys=["dt", "id"], partition_keys=["dt"],
                          # write-only: the history counts one snapshot per write (no COMPACT after commit)
                          options={**MIXED_OPTIONS, "target-file-size": "1kb", "write-only": "true"})
    h = MixedHistory(table, tmp_path)
    partitions = ESCAPED_PARTITIONS[:4]
    h.lakectl(_mixed("lakectl", _keys(partitions, range(300))))
    h.lakectl(_mixed("lakectl", _keys(partitions[:2], range(100, 250), "+U") + _keys(["a/b c"], range(50), "-D")
                     + _keys([""], [7, 8], "-U") + _keys(["2024-01-01"], [999, 1000], "-D")))
    h.lakectl(_mixed("lakectl", _keys(["a/b c"], range(40, 60), "+I") + _keys(["2024-01-02"], range(0, 300, 3), "-D")))

    h.compact()
    assert assert_one_sorted_run_per_bucket(table) > 1, "target-file-size should roll several files in a bucket"
    _both_readers_agree(table, h.states, tmp_path)

    # pypaimon continues above the compacted sequence numbers: its updates and deletes win.
    top = {(e.partition, e.bucket): e.file.max_sequence_number for e in live(table)}
    h.pypaimon(_mixed("pypaimon", _keys(["2024-01-01"], range(200, 320), "+U") + _keys([""], range(10), "-D")
                      + _keys(["a/b c"], [41, 42], "-D") + _keys(["new"], [1, 2], "+I")))
    for e in live(table):
        if e.file.level == 0:
            assert e.file.min_sequence_number > top.get((e.partition, e.bucket), -1)
    h.lakectl(_mixed("lakectl", _keys(["2024-01-01"], range(300, 310), "+U") + _keys(["new"], [2], "-D")))
    writers = {(row["dt"], row["id"]): row["writer"] for row in h.states[-1]}
    assert writers[("2024-01-01", 250)] == "pypaimon" and writers[("2024-01-01", 305)] == "lakectl"
    assert ("", 3) not in writers and ("a/b c", 41) not in writers and ("new", 1) in writers

    # A second full compaction folds both writers' level-0 files into level 5 again.
    h.compact()
    assert_one_sorted_run_per_bucket(table)
    assert table.compact().snapshot_id is None
    _both_readers_agree(table, h.states, tmp_path)


def test_compacting_one_partition_leaves_the_others_readable(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "mixed", MIXED_FIELDS, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options=MIXED_OPTIONS)
    h = MixedHistory(table, tmp_path)
    h.lakectl(_mixed("lakectl", _keys(["d1", "d2"], range(40))))
    h.lakectl(_mixed("lakectl", _keys(["d1", "d2"], range(0, 40, 2), "-D") + _keys(["d1", "d2"], [1, 3], "+U")))
    result = h.compact(partitions=[{"dt": "d1"}])
    assert result.buckets_compacted == 4
    levels = {e.file.level for e in live(table) if binary_row.decode(e.partition, [table.schema.field("dt").type])
              == ("d2",)}
    assert levels == {0}
    h.pypaimon(_mixed("pypaimon", _keys(["d1", "d2"], [1, 5, 41], "+U")))
    _both_readers_agree(table, h.states, tmp_path)


# ---- append tables ---------------------------------------------------------------------------
LOG_FIELDS = [("p", "STRING"), ("n", "INT"), ("s", "STRING")]
LOG = pa.schema([("p", pa.string()), ("n", pa.int32()), ("s", pa.string())])


@pytest.mark.parametrize("layout", ["unaware-bucket", "two-buckets"])
def test_append_table_compaction_read_by_pypaimon(tmp_path: Path, layout: str) -> None:
    options = {"bucket": "2", "bucket-key": "n"} if layout == "two-buckets" else {}
    table = lakectl_table(tmp_path, "log", LOG_FIELDS, partition_keys=["p"], options=options)
    h = History(table, AppendModel(["p"]))
    for i in range(4):
        h.write(pa.Table.from_pylist([{"p": p, "n": i * 10 + k, "s": f"w{i}"} for p in ("a", "b", "") for k in range(5)],
                                     schema=LOG))
    result = table.compact()
    assert result.snapshot_id == len(h.states) + 1 and result.files_after < result.files_before
    h.states.append(h.model.snapshot())
    assert {e.file.file_source for e in live(table)} == {FILE_SOURCE_COMPACT}
    h.verify(tmp_path)
    extra = pa.Table.from_pylist([{"p": "a", "n": 99, "s": "pypaimon"}], schema=LOG)
    assert pypaimon_append(Path(table.path).parents[1], table.name, extra, tmp_path) == len(h.states) + 1
    h.model.apply(canonical_rows(extra))
    h.states.append(h.model.snapshot())
    h.verify(tmp_path)


# ---- pypaimon writes (with a schema change), lakectl compacts ---------------------------------
def _both_read_every_snapshot(table: Table, states: Sequence[tuple[list[str], list[Row]]],
                              key: Sequence[str] | None, tmp_path: Path) -> None:
    for snapshot_id, (columns, rows) in enumerate(states, start=1):
        theirs, _ = official_read(table.path, tmp_path, snapshot=snapshot_id)
        assert_rows(theirs, rows, columns=columns, key=key, label=f"pypaimon, snapshot {snapshot_id}")
        assert_rows(table.scan(snapshot_id=snapshot_id), rows, columns=columns, key=key,
                    label=f"lakectl, snapshot {snapshot_id}")
    columns, rows = states[-1]
    theirs, _ = official_read(table.path, tmp_path)
    assert_rows(theirs, rows, columns=columns, key=key, label="pypaimon, latest")


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk-table", "append-table"])
def test_compaction_of_pypaimon_files_across_an_added_column(tmp_path: Path, primary_key: bool) -> None:
    fields = [("id", "INT"), ("name", "STRING"), ("_rk", "STRING")]
    before = pa.schema([("id", pa.int32()), ("name", pa.string()), ("_rk", pa.string())])
    after = pa.schema([*before, ("score", pa.decimal128(12, 3))])
    if primary_key:
        h = OracleHistory(tmp_path, "evolving", fields, KeyedModel(["id"]), primary_keys=["id"],
                          options={"bucket": "2", "rowkind.field": "_rk"})
    else:
        h = OracleHistory(tmp_path, "evolving", fields, AppendModel())
    h.write(pa.Table.from_pylist([{"id": i, "name": f"a{i}", "_rk": "+I"} for i in range(12)], schema=before))
    second = [{"id": 2, "name": "b2", "_rk": "+U"}, {"id": 20, "name": "b20", "_rk": "+I"}]
    if primary_key:
        second += [{"id": 5, "name": None, "_rk": "-D"}, {"id": 6, "name": "a6", "_rk": "-U"}]
    h.write(pa.Table.from_pylist(second, schema=before))
    h.add_column("score", "DECIMAL(12, 3)")
    h.write(pa.Table.from_pylist([{"id": 3, "name": "c3", "_rk": "+U", "score": "1.5"},
                                  {"id": 21, "name": None, "_rk": "+I", "score": "-99.125"}],
                                 schema=pa.schema([*before, ("score", pa.string())])).cast(after))
    table = h.run()
    assert table.schema.id == 1 and {e.file.schema_id for e in live(table)} == {0, 1}

    result = table.compact()
    assert result.snapshot_id == len(h.states) + 1
    h.states.append(h.states[-1])
    assert {e.file.schema_id for e in live(table)} == {1}
    if primary_key:
        assert_one_sorted_run_per_bucket(table)
        ids = {row["id"] for row in h.states[-1][1]}
        assert 5 not in ids and 6 not in ids
    else:
        assert {e.file.level for e in live(table)} == {0}
    _both_read_every_snapshot(table, h.states, h.model.key, tmp_path)
