"""Compaction: the per-bucket kernel and the compact operation on real tables under tmp_path.

Expected rows come from scans taken before compaction (and from a small dict model for the
writes that follow), never from the compaction code itself. File-level checks read the live
manifest entries and the Parquet files directly.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import binary_row
from core.commit import CommitMessage
from core.engines.local import LocalEngine
from core.evolution import SetOption
from core.errors import StalePlanError, UsageError
from core.fileio import join
from core.kernels.compact import compact_bucket
from core.kernels.compact_plan import CompactTask, output_level, pick_files
from core.manifest import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, ManifestEntry, merge_entries, read_entries, sorted_runs
from core.ops.compact import compact, plan
from core.ops.create import create
from core.partition import partition_path
from core.schema import SchemaManager
from core.snapshot import COMPACT
from core.table import Table
from core.types import DataField, parse_type

Row = dict[str, Any]


# ---- helpers -------------------------------------------------------------------------------
def make_table(tmp_path: Path, schema: str, *, name: str = "t", primary_keys: tuple[str, ...] = (),
               partition_keys: tuple[str, ...] = (), options: dict[str, str] | None = None) -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(t, schema, primary_keys=list(primary_keys), partition_keys=list(partition_keys), options=options)
    return t


def live(table: Table) -> list[ManifestEntry]:
    snap = table.latest_snapshot()
    return merge_entries(read_entries(table.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))


def bucket_dir(table: Table, e: ManifestEntry) -> str:
    schema = table.schema
    values = binary_row.decode(e.partition, [f.type for f in schema.partition_fields])
    return join(table.path, partition_path(values, schema.partition_fields,
                                           schema.core_options.partition_default_name), f"bucket-{e.bucket}")


def read_raw(table: Table, e: ManifestEntry) -> pa.Table:
    return pq.read_table(join(bucket_dir(table, e), e.file.file_name))


def rows_by(table: pa.Table, key: tuple[str, ...]) -> list[Row]:
    return sorted(table.to_pylist(), key=lambda r: tuple((r[k] is None, r[k]) for k in key))


def all_scans(table: Table, key: tuple[str, ...]) -> dict[int, list[Row]]:
    return {sid: rows_by(table.scan(snapshot_id=sid), key) for sid in table.snapshots.list_ids()}


def data_files(table: Table) -> set[str]:
    return {str(p.relative_to(table.path)) for p in Path(table.path).rglob("*.parquet")}


def sales(ids: range | list[int], dt: str, tag: str, kind: str | None = None) -> pa.Table:
    data: dict[str, Any] = {"dt": [dt] * len(ids), "id": pa.array(list(ids), pa.int64()),
                            "v": [f"{tag}{i}" for i in ids]}
    if kind is not None:
        data["op"] = [kind] * len(ids)
    return pa.table(data)


@pytest.fixture
def sales_table(tmp_path: Path) -> Table:
    """A partitioned 3-bucket primary-key table with inserts, updates, -U and -D over 4 commits."""
    t = make_table(tmp_path, "dt STRING, id BIGINT, v STRING", primary_keys=("dt", "id"), partition_keys=("dt",),
                   options={"bucket": "3", "write-only": "true"})  # no compaction after writes: tests call it
    t.write(pa.concat_tables([sales(range(40), "d1", "a"), sales(range(20), "d2", "a")]))
    t.write(pa.concat_tables([sales(range(10, 30), "d1", "b", "+U"), sales(range(5), "d2", "b", "+U")]),
            row_kind_column="op")
    t.write(pa.concat_tables([sales([1, 2, 3, 11, 12], "d1", "", "-D"), sales([100, 101], "d1", "", "-D"),
                              sales([7], "d2", "", "-U")]), row_kind_column="op")
    t.write(sales([2, 200], "d1", "c", "+I"), row_kind_column="op")
    return t


KEY = ("dt", "id")


# ---- the kernel ----------------------------------------------------------------------------
def test_a_task_is_small_and_picklable(sales_table: Table) -> None:
    tasks = plan(sales_table).tasks
    assert tasks
    for task in tasks:
        copy = pickle.loads(pickle.dumps(task))
        assert copy == task
        assert set(copy.schemas) == {sales_table.schema.id}
        assert copy.output_level == 5 and copy.bucket_dir.endswith(f"bucket-{task.bucket}")


def test_primary_key_kernel_merges_drops_deletes_and_keeps_sequence_and_kind(sales_table: Table) -> None:
    t = sales_table
    # What each key's winner was before compaction, from the raw files: (seq, kind, v).
    winners: dict[tuple[Any, ...], tuple[int, int, Any]] = {}
    for e in live(t):
        for r in read_raw(t, e).to_pylist():
            k = (r["dt"], r["id"])
            if k not in winners or r["_SEQUENCE_NUMBER"] > winners[k][0]:
                winners[k] = (r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"], r["v"])
    alive = {k: w for k, w in winners.items() if w[1] in (0, 2)}
    assert len(alive) < len(winners), "the fixture must delete some keys"

    seen: dict[tuple[Any, ...], tuple[int, int, Any]] = {}
    for task in plan(t).tasks:
        message = compact_bucket(task, t.file_io)
        assert message.compact_before == task.files and not message.new_files
        assert message.compact_after
        for f in message.compact_after:
            assert (f.level, f.file_source, f.delete_row_count) == (5, FILE_SOURCE_COMPACT, 0)
            data = pq.read_table(join(task.bucket_dir, f.file_name))
            assert data.column_names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id", "v"]
            assert data.column("_KEY_id").to_pylist() == data.column("id").to_pylist()
            assert data.column("id").to_pylist() == sorted(data.column("id").to_pylist())
            assert (f.min_sequence_number, f.max_sequence_number) == (
                min(data.column("_SEQUENCE_NUMBER").to_pylist()), max(data.column("_SEQUENCE_NUMBER").to_pylist()))
            for r in data.to_pylist():
                seen[(r["dt"], r["id"])] = (r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"], r["v"])
    assert seen == alive


def _settled_task(table: Table) -> CompactTask:
    messages = LocalEngine().compact(list(plan(table).tasks), table.file_io)
    one = next(m for m in messages if m.compact_after)
    task = next(t for t in plan(table).tasks if t.bucket == one.bucket and t.partition == one.partition)
    return dataclasses.replace(task, files=one.compact_after)


def test_kernel_leaves_one_delete_free_run_at_the_top_level_alone(sales_table: Table) -> None:
    task = _settled_task(sales_table)
    assert all(f.level == 5 for f in task.files)
    assert pick_files(task.schema, task.files, 5) == ()
    assert compact_bucket(task, sales_table.file_io) == CommitMessage(task.partition, task.bucket, task.total_buckets)
    # A delete row, or a file below the top level, makes the bucket worth rewriting again.
    with_delete = dataclasses.replace(task.files[0], delete_row_count=1)
    assert pick_files(task.schema, (with_delete,), 5) == (with_delete,)
    lower = dataclasses.replace(task.files[0], level=3)
    assert pick_files(task.schema, (lower,), 5) == (lower,)


def test_sorted_runs_and_non_full_picking(sales_table: Table) -> None:
    task = _settled_task(sales_table)
    top = task.files[0]
    l0 = dataclasses.replace(top, level=0, file_name="x")
    assert sorted_runs([top]) == 1 and sorted_runs([top, l0]) == 2 and sorted_runs([l0, l0]) == 2
    assert pick_files(task.schema, [l0], 5, full=False) == ()
    assert pick_files(task.schema, [l0], 5, full=True) == (l0,)
    assert set(pick_files(task.schema, [top, l0], 5, full=False)) == {top, l0}


def test_append_kernel_keeps_rows_order_and_sequence_range(tmp_path: Path) -> None:
    t = make_table(tmp_path, "n INT, s STRING")
    batches = [pa.table({"n": pa.array(range(i * 10, i * 10 + 10), pa.int32()), "s": [f"r{i}"] * 10})
               for i in range(4)]
    for b in batches:
        t.write(b)
    before = live(t)
    (task,) = plan(t).tasks
    assert task.output_level == 0 and len(task.files) == 4
    message = compact_bucket(task, t.file_io)
    (out,) = message.compact_after
    assert (out.level, out.file_source, out.row_count) == (0, FILE_SOURCE_COMPACT, 40)
    assert (out.min_sequence_number, out.max_sequence_number) == (
        min(e.file.min_sequence_number for e in before), max(e.file.max_sequence_number for e in before))
    data = pq.read_table(join(task.bucket_dir, out.file_name))
    assert data.column_names == ["n", "s"]
    assert data.to_pylist() == pa.concat_tables(batches).to_pylist()


def test_append_kernel_keeps_the_range_of_files_that_carry_less_than_one_number_per_row(tmp_path: Path) -> None:
    """pypaimon writes append files with sequence range [0, 0] whatever their row count."""
    t = make_table(tmp_path, "n INT")
    for i in range(3):
        t.write(pa.table({"n": pa.array([i, i], pa.int32())}))
    (task,) = plan(t).tasks
    squeezed = tuple(dataclasses.replace(f, min_sequence_number=0, max_sequence_number=0) for f in task.files)
    (out,) = compact_bucket(dataclasses.replace(task, files=squeezed), t.file_io).compact_after
    assert (out.min_sequence_number, out.max_sequence_number) == (0, 0)


# ---- the operation: primary-key tables -----------------------------------------------------
def test_compaction_keeps_every_snapshot_and_commits_compact(sales_table: Table) -> None:
    t = sales_table
    scans = all_scans(t, KEY)
    rows_before = sum(e.file.row_count for e in live(t))
    files_before = len(live(t))
    previous = t.latest_snapshot()

    result = compact(t)

    snap = t.latest_snapshot()
    assert result.snapshot_id == snap.id == previous.id + 1 and snap.commit_kind == COMPACT
    assert snap.schema_id == t.schema.id
    rows_after = sum(e.file.row_count for e in live(t))
    assert snap.delta_record_count == rows_after - rows_before < 0
    assert snap.total_record_count == rows_after
    assert rows_after == len(scans[previous.id])  # one row per live key: every delete and old version is gone
    assert result.files_before == files_before and result.files_after == len(live(t))
    assert result.buckets_compacted == len({(e.partition, e.bucket) for e in live(t)})
    assert result.bytes_after == sum(e.file.file_size for e in live(t)) and not result.dry_run
    assert rows_by(t.scan(), KEY) == scans[previous.id]
    assert all_scans(t, KEY) == {**scans, snap.id: scans[previous.id]}


def test_output_is_one_sorted_run_per_bucket_at_level_5(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id BIGINT, v STRING", primary_keys=("id",),
                   options={"bucket": "2", "target-file-size": "4kb"})
    for i in range(6):
        ids = list(range(i * 150, i * 150 + 300))  # overlaps the previous write
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"value-{i}-{k}-padding-padding" for k in ids]}))
    expected = rows_by(t.scan(), ("id",))
    compact(t)
    entries = live(t)
    assert rows_by(t.scan(), ("id",)) == expected
    key_types = [f.type for f in t.schema.key_fields]
    for bucket in (0, 1):
        files = [e.file for e in entries if e.bucket == bucket]
        assert len(files) > 1, "target-file-size should roll several files"
        assert all(f.level == 5 and f.delete_row_count == 0 and f.file_source == FILE_SOURCE_COMPACT for f in files)
        ranges = sorted((binary_row.decode(f.min_key, key_types)[0], binary_row.decode(f.max_key, key_types)[0])
                        for f in files)
        for (_, high), (low, _) in zip(ranges, ranges[1:]):
            assert high < low, f"key ranges overlap in bucket {bucket}: {ranges}"
    assert sum(e.file.row_count for e in entries) == len(expected)


def test_deleted_keys_leave_no_record_behind(sales_table: Table) -> None:
    t = sales_table
    compact(t)
    stored = set()
    for e in live(t):
        data = read_raw(t, e)
        assert set(data.column("_VALUE_KIND").to_pylist()) <= {0, 2}
        stored |= {(r["dt"], r["id"]) for r in data.to_pylist()}
    assert stored == {(r["dt"], r["id"]) for r in t.scan().to_pylist()}
    # -D of keys that never existed (d1/100, d1/101), deleted keys (d1/1, d1/3), -U (d2/7).
    for gone in [("d1", 100), ("d1", 101), ("d1", 1), ("d1", 3), ("d2", 7)]:
        assert gone not in stored


def test_a_bucket_whose_keys_are_all_deleted_loses_its_files(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id BIGINT, v STRING", primary_keys=("id",))
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": [None, None], "op": ["-D", "-D"]}),
            row_kind_column="op")
    result = compact(t)
    assert (result.files_before, result.files_after, result.bytes_after) == (2, 0, 0)
    assert live(t) == [] and t.scan().num_rows == 0
    assert t.latest_snapshot().total_record_count == 0
    assert compact(t).snapshot_id is None


def test_second_compaction_is_a_no_op(sales_table: Table) -> None:
    t = sales_table
    compact(t)
    ids = t.snapshots.list_ids()
    result = compact(t)
    assert result.snapshot_id is None and result.buckets_compacted == 0 and result.files_before == 0
    assert t.snapshots.list_ids() == ids


def test_writes_after_compaction_continue_sequence_numbers_and_win(sales_table: Table) -> None:
    t = sales_table
    compact(t)
    top = {(e.partition, e.bucket): e.file.max_sequence_number for e in live(t)}
    model = {(r["dt"], r["id"]): r for r in t.scan().to_pylist()}
    update = pa.concat_tables([sales([0, 4, 20, 39, 500], "d1", "late", "+U"), sales([0, 1], "d2", "", "-D")])
    t.write(update, row_kind_column="op")
    for r in update.to_pylist():
        if r["op"] == "-D":
            model.pop((r["dt"], r["id"]), None)
        else:
            model[(r["dt"], r["id"])] = {"dt": r["dt"], "id": r["id"], "v": r["v"]}
    for e in live(t):
        if e.file.level == 0:
            assert e.file.min_sequence_number > top.get((e.partition, e.bucket), -1)
    assert rows_by(t.scan(), KEY) == rows_by(pa.Table.from_pylist(list(model.values())), KEY)
    # Compacting again folds the new level-0 files into the top level; the result is unchanged.
    compact(t)
    assert all(e.file.level == 5 for e in live(t))
    assert rows_by(t.scan(), KEY) == rows_by(pa.Table.from_pylist(list(model.values())), KEY)


def test_num_levels_option_sets_the_output_level(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id INT, v STRING", primary_keys=("id",), options={"num-levels": "3"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    assert output_level(t.schema) == 2
    compact(t)
    assert [e.file.level for e in live(t)] == [2]
    t2 = make_table(tmp_path, "id INT", name="t2", primary_keys=("id",),
                    options={"num-sorted-run.compaction-trigger": "2"})
    assert output_level(t2.schema) == 2
    with pytest.raises(UsageError, match="num-levels"):
        make_table(tmp_path, "id INT", name="t3", primary_keys=("id",), options={"num-levels": "1"})


def test_compaction_reads_files_of_an_older_schema_by_field_id(tmp_path: Path) -> None:
    """Schema 1 renames v to label and adds score: old files are read by field id, the output is schema 1."""
    t = make_table(tmp_path, "id BIGINT, v STRING", primary_keys=("id",), options={"bucket": "2"})
    t.write(pa.table({"id": pa.array(range(6), pa.int64()), "v": [f"a{i}" for i in range(6)]}))
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": [None, "b2"], "op": ["-D", "+U"]}),
            row_kind_column="op")
    old = t.schema
    renamed = tuple(DataField(f.id, "label" if f.name == "v" else f.name, f.type, f.description) for f in old.fields)
    new = dataclasses.replace(old, id=1, fields=(*renamed, DataField(2, "score", parse_type("INT"))),
                              highest_field_id=2)
    assert SchemaManager(t.file_io, t.path).commit(new)
    t.write(pa.table({"id": pa.array([3, 9], pa.int64()), "label": ["c3", "c9"], "score": pa.array([30, 90], pa.int32())}))
    expected = [{"id": 0, "label": "a0", "score": None}, {"id": 2, "label": "b2", "score": None},
                {"id": 3, "label": "c3", "score": 30}, {"id": 4, "label": "a4", "score": None},
                {"id": 5, "label": "a5", "score": None}, {"id": 9, "label": "c9", "score": 90}]
    assert rows_by(t.scan(), ("id",)) == expected
    tasks = plan(t).tasks
    assert {i for task in tasks for i in task.schemas} == {0, 1}
    compact(t)
    assert rows_by(t.scan(), ("id",)) == expected
    assert t.latest_snapshot().schema_id == 1
    for e in live(t):
        assert e.file.schema_id == 1 and read_raw(t, e).column_names[-3:] == ["id", "label", "score"]


# ---- the operation: append tables ----------------------------------------------------------
def test_append_table_compaction_merges_small_files(tmp_path: Path) -> None:
    t = make_table(tmp_path, "p STRING, n INT, s STRING", partition_keys=("p",))
    for i in range(5):
        t.write(pa.table({"p": ["a", "b"] * 3, "n": pa.array(range(i * 6, i * 6 + 6), pa.int32()),
                          "s": [f"x{i}"] * 6}))
    expected = rows_by(t.scan(), ("p", "n"))
    t.write(pa.table({"p": ["c"], "n": pa.array([99], pa.int32()), "s": ["single"]}))
    expected_all = rows_by(t.scan(), ("p", "n"))
    result = compact(t)
    assert result.buckets_compacted == 2 and result.files_before == 10 and result.files_after == 2
    entries = live(t)
    assert sorted((e.file.level, e.file.file_source) for e in entries) == [
        (0, FILE_SOURCE_APPEND), (0, FILE_SOURCE_COMPACT), (0, FILE_SOURCE_COMPACT)]  # partition c: one file, kept
    assert rows_by(t.scan(), ("p", "n")) == expected_all
    assert [r for r in expected_all if r["p"] != "c"] == expected
    assert t.latest_snapshot().delta_record_count == 0
    assert compact(t).snapshot_id is None


def test_append_compaction_rolls_at_target_file_size_and_then_is_idempotent(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id BIGINT, s STRING", options={"target-file-size": "8kb"})
    for i in range(12):
        ids = range(i * 300, (i + 1) * 300)
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "s": [f"value-{k}-padding-padding-padding" for k in ids]}))
    order = [r["id"] for r in t.scan().to_pylist()]
    assert sorted(order) == list(range(3600))
    files_before = len(live(t))
    result = compact(t)
    assert result.files_before == files_before and 1 < result.files_after < files_before
    files = sorted((e.file for e in live(t)), key=lambda f: f.min_sequence_number)
    assert all(f.file_size >= 4 << 10 for f in files[:-1])
    # Rows keep their order: the files in sequence order hold the ids in write order.
    stored = [r["id"] for f in files for r in pq.read_table(join(t.path, "bucket-0", f.file_name)).to_pylist()]
    assert stored == list(range(3600))
    assert compact(t).snapshot_id is None


def test_append_buckets_with_one_file_or_only_full_files_are_left_alone(tmp_path: Path) -> None:
    t = make_table(tmp_path, "n INT", options={"target-file-size": "1kb", "bucket": "1", "bucket-key": "n"})
    t.write(pa.table({"n": pa.array(range(10), pa.int32())}))
    assert plan(t).tasks == ()
    (task_file,) = [e.file for e in live(t)]
    big = dataclasses.replace(task_file, file_size=1 << 10)
    small = dataclasses.replace(task_file, file_size=100, file_name="small", min_sequence_number=50)
    assert pick_files(t.schema, [big, big], 0) == ()
    assert pick_files(t.schema, [big, small], 0) == ()
    # Paimon 1.0 leaves fewer than three files after the leading full ones alone.
    assert pick_files(t.schema, [big, small, small], 0) == ()
    assert pick_files(t.schema, [big, small, small, small], 0) == (small, small, small)
    unaware = make_table(tmp_path, "n INT", name="u", options={"target-file-size": "1kb"}).schema
    assert unaware.num_buckets == -1 and pick_files(unaware, [big, small, small], 0) == (small, small)


def test_non_full_append_compaction_picks_paimons_window(tmp_path: Path) -> None:
    """Paimon 1.0's window over a bucketed append bucket's files in sequence order (hand-run
    here): taken at compaction.min.file-num files reaching target-file-size together, or at
    compaction.max.file-num files; reaching the target with fewer drops the oldest file."""
    t = make_table(tmp_path, "n INT", options={"bucket": "1", "bucket-key": "n", "target-file-size": "1kb"})
    t.write(pa.table({"n": pa.array(range(10), pa.int32())}))
    (task_file,) = [e.file for e in live(t)]

    def files(*sizes: int) -> list:
        return [dataclasses.replace(task_file, file_name=f"f{i}", file_size=size, min_sequence_number=i,
                                    max_sequence_number=i) for i, size in enumerate(sizes)]

    def picked(fs: list, schema=t.schema) -> list[str]:
        return [f.file_name for f in pick_files(schema, fs, 0, full=False)]

    # Three small files that reach the target together: the default 5 files are not there yet.
    assert picked(files(400, 400, 400)) == []
    # Five small files: the window is full (compaction.max.file-num, 5).
    assert picked(files(*[100] * 7)) == ["f0", "f1", "f2", "f3", "f4"]
    # A full file in the way reaches the target at once: the window starts again after it.
    assert picked(files(100, 1024, 100, 100, 100, 100, 100)) == ["f2", "f3", "f4", "f5", "f6"]
    assert picked(files(100, 1024, 100, 100, 100)) == []
    t.alter([SetOption("compaction.min.file-num", "3")])
    three = Table.open("db.t", warehouse=str(tmp_path / "wh")).schema
    # Three that reach the target: taken; two that reach it drop the oldest and wait.
    assert picked(files(400, 400, 400), three) == ["f0", "f1", "f2"]
    assert picked(files(600, 600, 100), three) == []



def _append_files(t: Table) -> list[list[int]]:
    """The live files of the table's one bucket in sequence order, as the ids each holds."""
    files = sorted((e for e in live(t)), key=lambda e: e.file.min_sequence_number)
    return [read_raw(t, e).column("id").to_pylist() for e in files]


def test_non_full_append_compaction_rewrites_at_most_compaction_max_file_num_files(tmp_path: Path) -> None:
    """Paimon's bucketed append compaction (BucketedAppendCompactManager.pickCompactBefore):
    the files in sequence order, at most compaction.max.file-num of them (5 by default for a
    bucketed table) in one compaction; the rest wait for the next. 12 small files: 5 + 7 -> 1 + 7
    files, then (the merged file first) 5 more -> 1 + 3; a full compaction takes them all."""
    t = make_table(tmp_path, "id BIGINT", options={"bucket": "1", "bucket-key": "id", "write-only": "true"})
    for i in range(12):
        t.write(pa.table({"id": pa.array([i], pa.int64())}))
    rows = sorted(r["id"] for r in t.scan().to_pylist())
    dry = compact(t, full=False, dry_run=True)
    assert dry.files_before == 5 and dry.buckets_compacted == 1
    result = compact(t, full=False)
    assert result.files_before == 5 and result.files_after == 1
    assert _append_files(t) == [[0, 1, 2, 3, 4], *[[i] for i in range(5, 12)]]
    assert sorted(r["id"] for r in t.scan().to_pylist()) == rows
    compact(t, full=False)
    assert _append_files(t) == [[0, 1, 2, 3, 4, 5, 6, 7, 8], [9], [10], [11]]
    assert compact(t, full=True).files_before == 4 and _append_files(t) == [list(range(12))]
    assert sorted(r["id"] for r in t.scan().to_pylist()) == rows


def test_compaction_max_file_num_is_read_per_table_and_bucket_mode(tmp_path: Path) -> None:
    """An explicit compaction.max.file-num (or its older key), else Paimon 1.0's defaults:
    50 for a bucket-unaware append table (bucket=-1), 5 for a bucketed one."""
    t = make_table(tmp_path, "id BIGINT", name="u", options={"write-only": "true"})
    for i in range(7):
        t.write(pa.table({"id": pa.array([i], pa.int64())}))
    # Seven tiny files fill no bin of Java's coordinator (5 files reaching 256 MB, or 50 files).
    assert t.schema.num_buckets == -1 and plan(t, full=False).tasks == ()
    t.alter([SetOption("compaction.max.file-num", "3")])
    t = Table.open("db.u", warehouse=str(tmp_path / "wh"))
    by_size = [e.file for e in sorted(live(t), key=lambda e: (e.file.file_size, e.file.min_sequence_number))]
    expected = [sorted(f.min_sequence_number for f in by_size[i:i + 3]) for i in (0, 3)]  # [6th] waits
    tasks = plan(t, full=False).tasks
    assert all(task.picked for task in tasks)
    assert sorted(sorted(f.min_sequence_number for f in task.files) for task in tasks) == sorted(expected)
    assert [len(task.files) for task in plan(t, full=True).tasks] == [7]  # a full compaction is not capped
    compact(t, full=False)
    left = {f.min_sequence_number for f in by_size[6:]}
    assert sorted(_append_files(t)) == sorted([[by_size[6].min_sequence_number]] + expected) and len(left) == 1
    b = make_table(tmp_path, "id BIGINT", name="b", options={"bucket": "1", "bucket-key": "id",
                                                               "write-only": "true",
                                                               "compaction.early-max.file-num": "2"})
    for i in range(4):
        b.write(pa.table({"id": pa.array([i], pa.int64())}))
    compact(b, full=False)
    assert _append_files(b) == [[0, 1], [2], [3]]

# ---- partitions, dry run, full and non-full --------------------------------------------------
def test_partition_filter_compacts_only_the_named_partitions(sales_table: Table) -> None:
    t = sales_table
    before = {e.identifier for e in live(t)}
    result = compact(t, partitions=[{"dt": "d2"}])
    after = live(t)
    d2 = binary_row.encode(["d2"], [t.schema.field("dt").type])
    assert all(e.file.level == 0 for e in after if e.partition != d2)
    assert all(e.file.level == 5 for e in after if e.partition == d2)
    assert {e.identifier for e in after if e.partition != d2} <= before
    assert result.buckets_compacted == len({e.bucket for e in after if e.partition == d2})
    assert compact(t, partitions=[{"dt": "nope"}]).snapshot_id is None


def test_partition_specs_are_typed_and_checked(tmp_path: Path) -> None:
    t = make_table(tmp_path, "day DATE, n INT, id INT", primary_keys=("day", "n", "id"), partition_keys=("day", "n"))
    for _ in range(2):
        t.write(pa.table({"day": pa.array([0, 0, 19723], pa.date32()), "n": pa.array([1, 2, 1], pa.int32()),
                          "id": pa.array([1, 1, 1], pa.int32())}))
    assert compact(t, partitions=[{"day": "2024-01-01"}], dry_run=True).buckets_compacted == 1
    assert compact(t, partitions=[{"day": "19723"}], dry_run=True).buckets_compacted == 1  # directory text
    assert compact(t, partitions=[{"day": "1970-01-01", "n": "2"}], dry_run=True).buckets_compacted == 1
    assert compact(t, partitions=[{"n": "1"}, {"n": "2"}], dry_run=True).buckets_compacted == 3
    with pytest.raises(UsageError, match="not a partition column"):
        compact(t, partitions=[{"id": "1"}])
    with pytest.raises(UsageError, match="COLUMN=VALUE"):
        compact(t, partitions=[{}])
    plain = make_table(tmp_path, "id INT", name="plain", primary_keys=("id",))
    with pytest.raises(UsageError, match="not partitioned"):
        compact(plain, partitions=[{"id": "1"}])


def test_dry_run_writes_nothing(sales_table: Table) -> None:
    t = sales_table
    files, ids = data_files(t), t.snapshots.list_ids()
    manifests = set(Path(t.path, "manifest").iterdir())
    result = compact(t, dry_run=True)
    assert result.dry_run and result.snapshot_id is None
    assert result.files_before == len(live(t)) and result.bytes_before == sum(e.file.file_size for e in live(t))
    assert result.files_after is None and result.bytes_after is None
    assert result.buckets_compacted == len({(e.partition, e.bucket) for e in live(t)})
    assert data_files(t) == files and t.snapshots.list_ids() == ids
    assert set(Path(t.path, "manifest").iterdir()) == manifests


def test_non_full_compacts_only_buckets_with_several_sorted_runs(tmp_path: Path) -> None:
    # Universal compaction with a trigger of 1 compacts any bucket of more than one run;
    # write-only keeps the writes from compacting on their own.
    t = make_table(tmp_path, "id BIGINT", primary_keys=("id",),
                   options={"bucket": "2", "num-sorted-run.compaction-trigger": "1", "num-levels": "6",
                            "write-only": "true"})
    t.write(pa.table({"id": pa.array([0, 1, 2, 3, 4, 5], pa.int64())}))  # one file per bucket
    assert compact(t, full=False).snapshot_id is None
    bucket_of = {r: e.bucket for e in live(t) for r in read_raw(t, e).column("id").to_pylist()}
    t.write(pa.table({"id": pa.array([0], pa.int64())}))  # a second run in 0's bucket only
    result = compact(t, full=False)
    assert result.buckets_compacted == 1 and result.files_before == 2
    assert {e.bucket: e.file.level for e in live(t)} == {bucket_of[0]: 5, 1 - bucket_of[0]: 0}
    assert compact(t, full=True).buckets_compacted == 1
    assert compact(t, full=False).snapshot_id is None and compact(t).snapshot_id is None


def test_table_without_snapshots_has_nothing_to_compact(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id INT", primary_keys=("id",))
    assert compact(t) == compact(t, dry_run=False)
    assert compact(t).snapshot_id is None and t.snapshots.list_ids() == []
    assert t.compact(dry_run=True).dry_run


# ---- concurrency -----------------------------------------------------------------------------
class InterferingEngine(LocalEngine):
    """Runs the compaction kernels, then lets another writer commit before ours does (on the
    first ``times`` compactions; None: on every one)."""

    def __init__(self, interfere: Any, times: int | None = None) -> None:
        super().__init__()
        self.interfere = interfere
        self.times = times
        self.written: list[list[str]] = []  # each try's rewritten files

    def compact(self, tasks: Any, file_io: Any) -> list[CommitMessage]:
        messages = super().compact(tasks, file_io)
        self.written.append([join(task.bucket_dir, f.file_name) for task, m in zip(tasks, messages)
                             for f in m.compact_after])
        if self.times is None or len(self.written) <= self.times:
            self.interfere()
        return messages


def overwrite_d1(t: Table) -> Callable[[], Any]:
    replacement = sales(range(3), "d1", "new")
    return lambda: Table.open(t.name, warehouse=str(Path(t.path).parents[1])).write(replacement, mode="overwrite")


def test_overwrite_between_plan_and_commit_makes_the_compaction_plan_again(sales_table: Table) -> None:
    """The overwrite replaced d1's input files: the compaction removes what it wrote, plans on
    the overwritten table and compacts that (what a cron compact started a moment later does)."""
    t = sales_table
    engine = InterferingEngine(overwrite_d1(t), times=1)
    ids = t.snapshots.list_ids()
    result = compact(t, engine=engine)
    assert [s.commit_kind for s in t.snapshots.snapshots()][len(ids):] == ["OVERWRITE", "COMPACT"]
    assert result.snapshot_id == t.latest_snapshot().id
    first, second = engine.written
    assert first and not any(Path(p).exists() for p in first), "the lost try's output is removed"
    assert second and all(Path(p).exists() for p in second)
    # the model: d1 is the overwrite's three rows, d2 as the writes left it
    expected = {("d1", i): f"new{i}" for i in range(3)}
    expected.update({("d2", i): "b" + str(i) if i < 5 else f"a{i}" for i in range(20) if i != 7})
    assert {(r["dt"], r["id"]): r["v"] for r in t.scan().to_pylist()} == expected
    assert all(e.file.level > 0 for e in live(t))  # everything compacted, d1 included


def test_a_compaction_overtaken_every_time_gives_up_and_changes_nothing(sales_table: Table) -> None:
    t = sales_table
    t.alter([SetOption("commit.max-retries", "2")])
    engine = InterferingEngine(overwrite_d1(t))
    ids = t.snapshots.list_ids()
    with pytest.raises(StalePlanError, match="gave up after 3 tries.*no longer live"):
        compact(t, engine=engine)
    assert [s.commit_kind for s in t.snapshots.snapshots()][len(ids):] == ["OVERWRITE"] * 3
    assert len(engine.written) == 3 and not any(Path(p).exists() for w in engine.written for p in w)
    assert {(r["dt"], r["id"], r["v"]) for r in t.scan().to_pylist() if r["dt"] == "d1"} == {
        ("d1", i, f"new{i}") for i in range(3)}
    # The table can still be compacted afterwards.
    expected = rows_by(t.scan(), KEY)
    assert compact(t).snapshot_id is not None and rows_by(t.scan(), KEY) == expected


def test_a_writers_compaction_after_commit_does_not_plan_again(sales_table: Table) -> None:
    t = sales_table
    engine = InterferingEngine(overwrite_d1(t), times=1)
    with pytest.raises(StalePlanError, match="no longer live"):
        compact(t, engine=engine, replan=False)
    assert len(engine.written) == 1 and not any(Path(p).exists() for p in engine.written[0])
    assert t.latest_snapshot().commit_kind == "OVERWRITE"


def test_append_between_plan_and_commit_lands_on_top_of_the_compaction(sales_table: Table) -> None:
    t = sales_table
    engine = InterferingEngine(lambda: Table.open(t.name, warehouse=str(Path(t.path).parents[1])).write(
        sales([0, 5, 6], "d1", "racer", "+U"), row_kind_column="op"))
    result = compact(t, engine=engine)
    kinds = [s.commit_kind for s in t.snapshots.snapshots()]
    assert kinds[-2:] == ["APPEND", "COMPACT"] and result.snapshot_id == t.latest_snapshot().id
    rows = {(r["dt"], r["id"]): r["v"] for r in t.scan().to_pylist()}
    assert rows[("d1", 0)] == "racer0" and rows[("d1", 5)] == "racer5"


def test_a_compaction_by_someone_else_first_leaves_nothing_to_do(sales_table: Table) -> None:
    """Another full compaction landed first: planning again finds every bucket compacted, so
    this one commits nothing and says so (no error: the table is as the caller wanted)."""
    t = sales_table
    engine = InterferingEngine(lambda: compact(Table.open(t.name, warehouse=str(Path(t.path).parents[1]))))
    ids = t.snapshots.list_ids()
    result = compact(t, engine=engine)
    assert result.snapshot_id is None and result.buckets_compacted == 0
    assert [s.commit_kind for s in t.snapshots.snapshots()][len(ids):] == [COMPACT]
    assert len(engine.written) == 1 and not any(Path(p).exists() for p in engine.written[0])
    assert compact(t).snapshot_id is None


# ---- first-row: level 0 is not merged state -------------------------------------------------
def test_first_row_level0_is_hidden_until_compacted_and_commits_compact_it(tmp_path: Path) -> None:
    """Paimon's batch scan leaves out a first-row table's level-0 files (its writers look keys
    up in the older levels, so level 0 may hold keys that are not first). With write-only a
    write stays invisible until compacted; without it the commit compacts the written buckets."""
    schema = "dt STRING, id BIGINT NOT NULL, v STRING"
    quiet = make_table(tmp_path, schema, name="quiet", primary_keys=("id",),
                       options={"bucket": "2", "merge-engine": "first-row", "write-only": "true"})
    quiet.write(sales(range(4), "d1", "a"))
    assert quiet.scan().num_rows == 0
    assert {e.file.level for e in live(quiet)} == {0}
    compact(quiet, full=True)
    quiet.write(sales(range(2, 6), "d1", "b"))  # 2, 3 are not first; 4, 5 are new but on level 0
    assert rows_by(quiet.scan(), ("id",)) == rows_by(sales(range(4), "d1", "a"), ("id",))

    busy = make_table(tmp_path, schema, name="busy", primary_keys=("id",),
                      options={"bucket": "2", "merge-engine": "first-row"})
    busy.write(sales(range(4), "d1", "a"))
    busy.write(sales(range(2, 6), "d1", "b"))
    expected = rows_by(pa.concat_tables([sales(range(4), "d1", "a"), sales(range(4, 6), "d1", "b")]), ("id",))
    assert rows_by(busy.scan(), ("id",)) == expected
    assert all(e.file.level > 0 for e in live(busy))
    kinds = [busy.snapshots.snapshot(s).commit_kind for s in busy.snapshots.list_ids()]
    assert kinds == ["APPEND", COMPACT, "APPEND", COMPACT]
