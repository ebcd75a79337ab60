"""``core.ops.delete``: each delete against a Python model of the table (the rows written,
minus those the predicate matches, computed here without lakectl), on primary-key tables
(partitioned or not, with deletion vectors, with changelog producers) and append tables
(which files are rewritten, which are untouched), plus the merge engines that refuse."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pytest

from core.engines import EngineSettings
from core.errors import UnsupportedTableError, UsageError
from core.ops.create import create
from core.table import Table

Row = tuple[int, str, int, str]  # id, v, amount, dt
SCHEMA = "id BIGINT, v STRING, amount INT, dt STRING"


def rows_table(rows: list[Row]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                     "v": pa.array([r[1] for r in rows], pa.string()),
                     "amount": pa.array([r[2] for r in rows], pa.int32()),
                     "dt": pa.array([r[3] for r in rows], pa.string())})


def scanned(t: Table) -> Counter:
    data = t.scan(select=["id", "v", "amount", "dt"])
    return Counter(zip(*(data.column(c).to_pylist() for c in ("id", "v", "amount", "dt"))))


def batch(start: int, n: int) -> list[Row]:
    """Rows with amount = id % 10 (amount may be null for id % 7 == 0) over two partitions."""
    return [(i, f"v{i}", None if i % 7 == 0 else i % 10, "a" if i % 2 else "b") for i in range(start, start + n)]


def make(tmp_path: Path, *, pk: bool = True, partitioned: bool = True, options: dict[str, str] | None = None,
         name: str = "t") -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    keys = (["id", "dt"] if partitioned else ["id"]) if pk else []
    create(t, SCHEMA, primary_keys=keys, partition_keys=["dt"] if partitioned else [],
           options={"bucket": "2", **(options or {})} if pk else dict(options or {}))
    return Table.open(f"db.{name}", warehouse=str(tmp_path / "wh"))


# The predicate and the same condition in Python (None never matches, as in SQL).
WHERE = "amount >= 5 AND dt = 'a'"


def matches(r: Row) -> bool:
    return r[2] is not None and r[2] >= 5 and r[3] == "a"


def pk_model(*batches: list[Row]) -> dict[tuple[int, str], Row]:
    state: dict[tuple[int, str], Row] = {}
    for b in batches:
        for r in b:
            state[(r[0], r[3])] = r
    return state


@pytest.mark.parametrize("partitioned", [True, False])
@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}, {"changelog-producer": "input"},
                                     {"changelog-producer": "lookup"}],
                         ids=["plain", "deletion-vectors", "input-changelog", "lookup-changelog"])
def test_primary_key_delete_matches_the_model(tmp_path: Path, partitioned: bool, options: dict[str, str]) -> None:
    t = make(tmp_path, partitioned=partitioned, options=options)
    first = batch(0, 40)
    second = [(i, f"u{i}", (i * 3) % 10, "a" if i % 2 else "b") for i in range(20, 60)]  # updates and new keys
    t.write(rows_table(first))
    t.write(rows_table(second))
    state = pk_model(first, second)
    if not partitioned:  # the key is id alone: the later row of an id wins
        state = {}
        for r in first + second:
            state[(r[0], "")] = r
    expected = Counter(r for r in state.values() if not matches(r))
    doomed = sum(1 for r in state.values() if matches(r))
    assert 0 < doomed < len(state)
    before = t.snapshots.latest_id()

    result = t.delete(WHERE)

    assert result.rows_deleted == doomed
    assert result.snapshot_id == before + 1 and result.commit_kind == "APPEND"
    assert t.snapshots.snapshot(before + 1).commit_kind == "APPEND"
    assert (result.files_rewritten, result.engine) == (0, "local")
    assert scanned(t) == expected
    if options.get("changelog-producer"):
        # The delete's changelog says -D for exactly the deleted rows' keys (with lookup, in the
        # COMPACT snapshot of the compaction after the delete's commit).
        log = t.changes(before, t.snapshots.latest_id())
        deleted = {(i, d) for k, i, d in zip(*(log.column(c).to_pylist() for c in ("_row_kind", "id", "dt")))
                   if k == "-D"}
        assert deleted == {(r[0], r[3]) for r in state.values() if matches(r)}
    # Deleting again finds nothing: no snapshot.
    again = t.delete(WHERE)
    assert (again.rows_deleted, again.snapshot_id) == (0, None)
    assert t.snapshots.latest_id() >= result.snapshot_id


def test_dynamic_bucket_primary_key_table(tmp_path: Path) -> None:
    t = make(tmp_path, options={"bucket": "-1"})
    rows = batch(0, 30)
    t.write(rows_table(rows))
    result = t.delete(WHERE)
    assert result.rows_deleted == sum(1 for r in rows if matches(r))
    assert scanned(t) == Counter(r for r in rows if not matches(r))


def live_names(t: Table) -> set[str]:
    return {f.file_name for f in t.files()}


def test_append_table_rewrites_only_touched_files(tmp_path: Path) -> None:
    t = make(tmp_path, pk=False)
    # Three commits, each one file per partition: the first holds only ids < 10, so
    # "id >= 10 AND ..." cannot touch its files (their stats prune them, but they are checked by name).
    writes = [batch(0, 10), batch(10, 10), [(100, "all", 9, "a"), (101, "all", 8, "a")]]
    names_by_write = []
    for w in writes:
        before = live_names(t)
        t.write(rows_table(w))
        names_by_write.append(live_names(t) - before)
    where = "id >= 10 AND amount >= 5 AND dt = 'a'"
    every = [r for w in writes for r in w]

    def doomed(r: Row) -> bool:
        return r[0] >= 10 and matches(r)

    before_id = t.snapshots.latest_id()
    result = t.delete(where)

    assert scanned(t) == Counter(r for r in every if not doomed(r))
    assert result.rows_deleted == sum(1 for r in every if doomed(r))
    assert (result.snapshot_id, result.commit_kind) == (before_id + 1, "OVERWRITE")
    assert t.snapshots.snapshot(before_id + 1).commit_kind == "OVERWRITE"
    live = live_names(t)
    # The first write's files and the second write's dt='b' file hold no matching row: untouched.
    untouched = names_by_write[0] | {f.file_name for f in t.files(snapshot_id=2) if f.partition == {"dt": "b"}
                                     and f.file_name in names_by_write[1]}
    assert untouched <= live
    touched_second = names_by_write[1] - untouched
    assert len(touched_second) == 1 and not touched_second & live  # rewritten: gone, replaced
    assert not names_by_write[2] & live  # every row matched: deleted without a rewrite
    assert len(live) == len(untouched) + 1  # plus the one rewrite
    assert (result.files_rewritten, result.files_deleted) == (1, 2)


def test_append_table_unpartitioned_with_deletion_vectors(tmp_path: Path) -> None:
    t = make(tmp_path, pk=False, partitioned=False, options={"deletion-vectors.enabled": "true"})
    rows = batch(0, 25)
    t.write(rows_table(rows[:12]))
    t.write(rows_table(rows[12:]))
    result = t.delete("amount >= 5")
    assert scanned(t) == Counter(r for r in rows if not (r[2] is not None and r[2] >= 5))
    assert result.files_rewritten == 2


def test_dry_run_and_no_match_commit_nothing(tmp_path: Path) -> None:
    pk = make(tmp_path, name="pk")
    app = make(tmp_path, pk=False, name="app")
    rows = batch(0, 20)
    for t in (pk, app):
        t.write(rows_table(rows))
        latest = t.snapshots.latest_id()
        dry = t.delete(WHERE, dry_run=True)
        assert dry.dry_run and dry.snapshot_id is None
        assert dry.rows_deleted == sum(1 for r in rows if matches(r))
        none = t.delete("amount > 100")
        assert (none.rows_deleted, none.snapshot_id, none.files_deleted) == (0, None, 0)
        assert t.snapshots.latest_id() == latest
        assert scanned(t) == Counter(rows)


@pytest.mark.parametrize("options, option", [
    ({"merge-engine": "first-row"}, "ignore-delete"),
    ({"merge-engine": "partial-update"}, "partial-update.remove-record-on-delete"),
    ({"merge-engine": "aggregation"}, "aggregation.remove-record-on-delete"),
    ({"ignore-delete": "true"}, "ignore-delete"),
])
def test_merge_engines_that_cannot_delete_refuse(tmp_path: Path, options: dict[str, str], option: str) -> None:
    t = make(tmp_path, options=options)
    t.write(rows_table(batch(0, 10)))
    latest = t.snapshots.latest_id()
    with pytest.raises(UnsupportedTableError, match=option.replace(".", r"\.")) as refused:
        t.delete(WHERE)
    assert t.snapshots.latest_id() == latest
    if options.get("merge-engine") in ("partial-update", "aggregation"):
        # the hint leads to a delete that works, never to ignore-delete's second refusal
        assert "ignore-delete" not in str(refused.value)
        # (the option is immutable once there is data: a table made with it deletes, see below)
        fresh = make(tmp_path, options={**options, option: "true"}, name="fresh")
        fresh.write(rows_table(batch(0, 10)))
        assert fresh.delete(WHERE).rows_deleted == sum(1 for r in batch(0, 10) if matches(r))


@pytest.mark.parametrize("options", [
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true"},
])
def test_merge_engines_with_remove_record_on_delete(tmp_path: Path, options: dict[str, str]) -> None:
    t = make(tmp_path, options=options)
    rows = batch(0, 20)
    t.write(rows_table(rows))
    t.delete(WHERE)
    assert scanned(t) == Counter(r for r in rows if not matches(r))


@pytest.mark.parametrize("call", [
    lambda t: t.delete("  "),
    lambda t: t.delete("nope = 1"),
], ids=["empty", "unknown-column"])
def test_usage_errors(tmp_path: Path, call: Callable[[Table], object]) -> None:
    t = make(tmp_path)
    t.write(rows_table(batch(0, 5)))
    with pytest.raises(UsageError):
        call(t)


def test_spark_is_refused_for_a_dynamic_bucket_table_and_auto_stays_local(tmp_path: Path) -> None:
    """A dynamic-bucket table's -D records are routed by its hash index, in one process, as
    its writes are: --engine spark is a usage error before any Spark, auto deletes locally
    even when the threshold is exceeded."""
    t = make(tmp_path, options={"bucket": "-1"})
    rows = batch(0, 20)
    t.write(rows_table(rows))
    with pytest.raises(UsageError, match="dynamic-bucket table"):
        t.delete(WHERE, engine_settings=EngineSettings(engine="spark"))
    result = t.delete(WHERE, engine_settings=EngineSettings(engine="auto", spark_threshold=0))
    assert result.engine == "local" and result.rows_deleted == sum(map(matches, rows))
    assert scanned(t) == Counter(r for r in rows if not matches(r))


@pytest.mark.parametrize("pk", [True, False], ids=["primary-key", "append"])
def test_a_table_without_snapshots(tmp_path: Path, pk: bool) -> None:
    t = make(tmp_path, pk=pk)
    result = t.delete("id > 0")
    assert (result.rows_deleted, result.snapshot_id, result.files_deleted) == (0, None, 0)
    assert t.snapshots.latest_id() is None


def test_append_delete_runs_the_writers_maintenance(tmp_path: Path) -> None:
    """Not write-only: the snapshot retention options apply after the delete's commit too."""
    t = make(tmp_path, pk=False, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    rows = batch(0, 10)
    t.write(rows_table(rows))
    t.write(rows_table(rows))
    result = t.delete(WHERE)
    assert t.snapshots.list_ids() == [result.snapshot_id]
    assert scanned(t) == Counter({r: 2 for r in rows if not matches(r)})


def test_append_delete_that_loses_to_a_compaction_plans_again_and_leaves_no_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction that lands between the delete's plan and its commit removes a file the
    delete replaces: that try commits nothing and deletes its rewrites (nothing references
    them), and the delete plans again on the compacted table and deletes there."""
    import core.ops.delete as delete_module

    t = make(tmp_path, pk=False)
    rows = batch(0, 20)
    t.write(rows_table(rows[:10]))
    t.write(rows_table(rows[10:]))
    real = delete_module.FileStoreCommit.commit
    tries: list[list[str]] = []

    def compact_first(self, messages, **kwargs):  # the other writer wins the first race
        if kwargs.get("kind") == "COMPACT":
            return real(self, messages, **kwargs)  # the compaction itself
        tries.append([f.file_name for m in messages for f in m.new_files])
        if len(tries) == 1:
            assert Table.open(t.name, warehouse=str(tmp_path / "wh")).compact(full=True).snapshot_id == 3
        return real(self, messages, **kwargs)

    monkeypatch.setattr(delete_module.FileStoreCommit, "commit", compact_first)
    result = t.delete(WHERE)
    on_disk = {p.name for p in (tmp_path / "wh").rglob("*.parquet")}
    assert len(tries) == 2 and tries[0] and not set(tries[0]) & on_disk
    assert result.snapshot_id == 4 and [s.commit_kind for s in t.snapshots.snapshots()][2:] == ["COMPACT", "OVERWRITE"]
    assert result.rows_deleted == sum(1 for r in rows if matches(r))
    assert scanned(t) == Counter(r for r in rows if not matches(r))


def test_a_table_whose_row_kind_is_a_column(tmp_path: Path) -> None:
    """rowkind.field names a table column; the delete's -D records still carry their own kind."""
    t = Table.locate("db.rk", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING, op STRING", primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"})
    t = Table.open("db.rk", warehouse=str(tmp_path / "wh"))
    t.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"], "op": ["+I", "+I", "+I"]}))
    assert t.delete("v = 'b'").rows_deleted == 1
    assert sorted(t.scan().column("id").to_pylist()) == [1, 3]


def test_primary_key_delete_streams_the_matching_rows_through_the_spilling_buffer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The -D records enter the local write split by split (never one table of every matching
    row) and spill past write-buffer-size like any write's rows; the result is the model's."""
    from core.write_buffer import WriteBuffer

    t = make(tmp_path, options={"bucket": "4", "write-buffer-size": "16 kb"})
    rows = batch(0, 4000)
    t.write(rows_table(rows))
    doomed = sum(map(matches, rows))
    added: list[int] = []
    spills: list[int] = []
    real_add, real_spill = WriteBuffer.add, WriteBuffer.spill
    monkeypatch.setattr(WriteBuffer, "add", lambda self, routed: (added.append(routed.rows), real_add(self, routed)))
    monkeypatch.setattr(WriteBuffer, "spill", lambda self: (spills.append(1), real_spill(self)))

    result = t.delete(WHERE)

    assert result.rows_deleted == sum(added) == doomed
    assert len(added) > 1 and max(added) < doomed  # in parts: one per split read
    assert spills  # 16 kb is far below the matching rows' size
    assert scanned(t) == Counter(r for r in rows if not matches(r))
    assert t.delete(WHERE, dry_run=True).rows_deleted == 0
