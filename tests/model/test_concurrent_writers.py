"""Concurrent writers on local files: N writer processes each commit M snapshots of their own
keys into one table (``concurrency_kit.py`` runs and checks them), plus compactors and a reader;
and Paimon's conflict rules, forced deterministically in one process by landing another commit
right before a commit publishes its snapshot.

Claims: all N x M commits are there with gapless snapshot ids and every row; writers on
disjoint buckets and writers on one bucket all succeed, retrying lost races (at least N-1 per
round: every round is a real race); compactions racing writes never drop a write's rows, and a
compaction whose input files another commit removed commits nothing on that try, deletes its
rewrites and plans again on the new latest (core.replan); an OVERWRITE deletes what is live
when it lands;
readers only ever see whole snapshots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest

from concurrency_kit import Figures, check_table, race, writer_commits
from core.errors import CommitConflictError
from core.evolution import SetOption
from core.ops.create import create
from core.snapshot import SnapshotManager
from core.table import Table

N, M, ROWS = 4, 8, 3


def _table(root: Path, *, buckets: int | None, partitioned: bool = False, **extra: str) -> Table:
    """A primary-key table with ``buckets`` fixed buckets, or (None) an append table."""
    t = Table.locate("db.t", warehouse=str(root / "wh"))
    keys = (["id", "dt"] if partitioned else ["id"]) if buckets else []
    options = {"write-only": "true", "commit.max-retries": "30", **extra}
    if buckets:
        options["bucket"] = str(buckets)
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=keys, partition_keys=["dt"] if partitioned else [],
           options=options)
    return t


def test_writers_on_disjoint_buckets(tmp_path: Path) -> None:
    """N writers, writer w only writes keys of bucket w: all commit, each round one wins the
    snapshot id and the other N-1 re-plan and retry (never fail)."""
    t = _table(tmp_path, buckets=N)
    writers = {f"w{w}": writer_commits(w, M, ROWS, bucket=(w, N)) for w in range(N)}
    figures = Figures()
    results = race(tmp_path / "barrier", t, writers=writers, rounds=True)
    check_table(t, writers, results, figures)
    per_bucket = [f.bucket for f in t.files()]  # write-only: one level-0 file per commit
    assert sorted(per_bucket) == sorted(list(range(N)) * M), "a writer's keys left its bucket"
    assert figures.retries >= M * (N - 1), figures.reasons
    print("\n" + figures.line("local, disjoint buckets"))


@pytest.mark.parametrize("buckets", [1, None], ids=["pk-one-bucket", "append"])
def test_writers_on_one_bucket_with_compactors_and_a_reader(tmp_path: Path, buckets: int | None) -> None:
    """N writers on the same bucket, two compactors compacting it again and again (so they
    delete each other's inputs) and a reader: every write's rows survive every compaction, the
    compactors' conflicts are re-planned, the reader only sees committed states."""
    t = _table(tmp_path, buckets=buckets)
    writers = {f"w{w}": writer_commits(w, M, ROWS) for w in range(N)}
    figures = Figures()
    results = race(tmp_path / "barrier", t, writers=writers, rounds=True, compactors=2, readers=1)
    check_table(t, writers, results, figures)
    assert figures.retries >= M * (N - 1), figures.reasons
    assert figures.compactions >= 1 and figures.reads >= 1
    print("\n" + figures.line(f"local {'pk' if buckets else 'append'} table, one bucket + 2 compactors + reader"))


def test_writers_that_compact_after_their_commits(tmp_path: Path) -> None:
    """Without write-only each writer runs Paimon's post-commit (universal) compaction of the
    bucket they all share, so compactions race compactions and writes: every write still lands,
    a compaction that lost its inputs only logs a warning, and every level above 0 stays one
    sorted run."""
    t = _table(tmp_path, buckets=1, **{"write-only": "false", "num-sorted-run.compaction-trigger": "3"})
    writers = {f"w{w}": writer_commits(w, M, ROWS) for w in range(N)}
    figures = Figures()
    results = race(tmp_path / "barrier", t, writers=writers, rounds=True, readers=1)
    check_table(t, writers, results, figures, writers_compact=True)
    assert figures.compactions >= 1
    print("\n" + figures.line("local, writers compacting after commit"))


# ---- Paimon's conflict rules, interleaved deterministically ------------------------------------
def _rows(t: Table, snapshot_id: int | None = None) -> dict[int, tuple[int, str, str]]:
    data = t.scan(snapshot_id=snapshot_id, select=["id", "v", "dt"])
    return {i: (i, v, d) for i, v, d in zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt")))}


def _batch(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "v": [r[1] for r in rows],
                     "dt": [r[2] for r in rows]})


def _before_first_publish(monkeypatch: pytest.MonkeyPatch, interloper: Callable[[], Any]) -> list[int]:
    """Run ``interloper`` (another commit, through its own Table object) once, right before the
    next snapshot publish; returns the list of ids the interrupted commit tried."""
    real = SnapshotManager.try_publish
    state = {"armed": True}
    tried: list[int] = []

    def publish(self: SnapshotManager, snapshot: Any, **kw: Any) -> bool:
        if state["armed"]:
            state["armed"] = False
            interloper()
            tried.append(snapshot.id)
            return real(self, snapshot, **kw)
        return real(self, snapshot, **kw)

    monkeypatch.setattr(SnapshotManager, "try_publish", publish)
    return tried


def _seeded(tmp_path: Path) -> tuple[Table, dict[int, tuple[int, str, str]]]:
    t = _table(tmp_path, buckets=2, partitioned=True)
    first = [(i, f"s{i}", "ab"[i % 2]) for i in range(8)]
    t.write(_batch(first))
    t.write(_batch([(i, f"t{i}", "ab"[i % 2]) for i in range(4, 12)]))
    model = {r[0]: r for r in first}
    model.update({i: (i, f"t{i}", "ab"[i % 2]) for i in range(4, 12)})
    assert _rows(t) == model
    return t, model


def test_a_compaction_racing_a_write_keeps_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t, model = _seeded(tmp_path)
    other = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    tried = _before_first_publish(monkeypatch, lambda: other.write(_batch([(100, "new", "a"), (0, "upd", "a")])))
    result = t.compact(full=True)
    model.update({100: (100, "new", "a"), 0: (0, "upd", "a")})
    assert tried == [3] and result.snapshot_id == 4  # lost snapshot-3 to the write, landed as 4
    assert [s.commit_kind for s in t.snapshots.snapshots()] == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    assert _rows(t, 3) == model and _rows(t) == model
    assert any(f.level == 0 for f in t.files()), "the write's file stays live beside the compacted ones"


def test_a_compaction_whose_inputs_another_compaction_removed_plans_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t, model = _seeded(tmp_path)
    other = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    data_files_before = {p.name for p in (tmp_path / "wh").rglob("data-*")}
    _before_first_publish(monkeypatch, lambda: other.compact(full=True, partitions=[{"dt": "a"}]))
    result = t.compact(full=True)  # lost to the other compaction, then planned again: partition b is left
    assert [s.commit_kind for s in t.snapshots.snapshots()] == ["APPEND", "APPEND", "COMPACT", "COMPACT"]
    assert result.snapshot_id == 4 and result.buckets_compacted >= 1
    assert _rows(t, 3) == model and _rows(t) == model and all(f.level > 0 for f in t.files())
    # the lost try's rewritten files are gone again (nothing references them)
    live = {f.file_name for f in t.files()} | {f.file_name for f in t.files(snapshot_id=3)}
    on_disk = {p.name for p in (tmp_path / "wh").rglob("data-*")}
    assert on_disk - data_files_before <= live


def test_a_compaction_racing_an_overwrite_never_brings_back_overwritten_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t, model = _seeded(tmp_path)
    other = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    _before_first_publish(monkeypatch, lambda: other.write(_batch([(500, "o", "a")]), mode="overwrite"))
    result = t.compact(full=True)  # lost to the overwrite, then planned on the overwritten table
    model = {k: r for k, r in model.items() if r[2] != "a"}
    model[500] = (500, "o", "a")
    assert result.snapshot_id == 4 and t.snapshots.snapshot(3).commit_kind == "OVERWRITE"
    assert _rows(t, 3) == model and _rows(t) == model
    assert t.compact(full=True).snapshot_id is None  # nothing left to compact


@pytest.mark.parametrize("first", ["write", "overwrite"])
def test_an_overwrite_racing_a_write_to_its_partition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      first: str) -> None:
    """Whichever lands first, each snapshot equals the commits replayed in id order: an
    overwrite deletes what is live in its partition when it lands (re-planned on retry)."""
    t, model = _seeded(tmp_path)
    other = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    write_rows, overwrite_rows = [(200, "w", "a"), (1, "w1", "b")], [(300, "o", "a")]
    if first == "write":
        _before_first_publish(monkeypatch, lambda: other.write(_batch(write_rows)))
        t.write(_batch(overwrite_rows), mode="overwrite")
        kinds = ["APPEND", "OVERWRITE"]
    else:
        _before_first_publish(monkeypatch, lambda: other.write(_batch(overwrite_rows), mode="overwrite"))
        t.write(_batch(write_rows))
        kinds = ["OVERWRITE", "APPEND"]
    assert [s.commit_kind for s in t.snapshots.snapshots()][2:] == kinds
    for sid, kind in zip((3, 4), kinds):
        if kind == "APPEND":
            model.update({r[0]: r for r in write_rows})
        else:
            model = {k: r for k, r in model.items() if r[2] != "a"}
            model.update({r[0]: r for r in overwrite_rows})
        assert _rows(t, sid) == model, f"snapshot {sid} ({kind})"
    assert (200 in model) == (first == "overwrite")


def test_a_commit_that_keeps_losing_gives_up_with_nothing_committed(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    t, model = _seeded(tmp_path)
    other = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    t.alter([SetOption("commit.max-retries", "2")])
    real = SnapshotManager.try_publish
    landed: list[int] = []
    busy = [False]

    def publish(self: SnapshotManager, snapshot: Any, **kw: Any) -> bool:
        if not busy[0]:  # every attempt of ours: another writer lands first
            busy[0] = True
            try:
                other.write(_batch([(1000 + len(landed), "x", "b")]))
            finally:
                busy[0] = False
            landed.append(snapshot.id)
        return real(self, snapshot, **kw)

    monkeypatch.setattr(SnapshotManager, "try_publish", publish)
    with pytest.raises(CommitConflictError, match="after 3 attempts"):
        t.write(_batch([(999, "never", "a")]))
    monkeypatch.undo()
    assert 999 not in _rows(t)
    assert t.snapshots.list_ids() == list(range(1, 3 + len(landed)))
