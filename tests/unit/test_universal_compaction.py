"""Universal compaction: Paimon's picking rules by hand, and the kernel's non-top outputs
(deletes kept, levels never overlapping, scans unchanged), plus compaction after commit."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from core import binary_row, stats
from core.kernels.compact_plan import UniversalOptions, level_sorted_runs, pick_universal
from core.kernels.data_file import read_file
from core.manifest import DataFileMeta, ManifestEntry, merge_entries, read_entries
from core.ops.compact import FULL_COMPACTION_PROPERTY, compact
from core.ops.create import create
from core.snapshot import COMPACT
from core.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

DEFAULTS = UniversalOptions()  # amp 200 %, ratio 1 %, trigger 5, 6 levels


def meta(name: str, level: int, size: int, seq: int) -> DataFileMeta:
    return DataFileMeta(file_name=name, file_size=size, row_count=1, min_key=b"", max_key=b"",
                        key_stats=stats.EMPTY_STATS, value_stats=stats.EMPTY_STATS, min_sequence_number=seq,
                        max_sequence_number=seq, schema_id=0, level=level)


def bucket(level0: list[int], **levels: int) -> list[DataFileMeta]:
    """Level-0 sizes newest first, then ``L<n>=size`` for one file per higher level."""
    files = [meta(f"l0-{i}", 0, size, 1000 - i) for i, size in enumerate(level0)]
    files += [meta(f"{name}", int(name[1:]), size, 10) for name, size in levels.items()]
    return files


def names(unit) -> set[str]:
    return {f.file_name for f in unit.files}


# ---- the picker, case by case ---------------------------------------------------------------
def test_runs_are_level0_files_newest_first_then_each_level() -> None:
    runs = level_sorted_runs(bucket([1, 2], L5=9, L3=7) + [meta("L3b", 3, 1, 11)])
    assert [(r.level, r.size) for r in runs] == [(0, 1), (0, 2), (3, 8), (5, 9)]


def test_fewer_runs_than_the_trigger_pick_nothing() -> None:
    assert pick_universal(bucket([1, 1, 1, 1]), DEFAULTS) is None
    assert pick_universal(bucket([1, 1, 1], L5=1), DEFAULTS) is None


def test_size_amplification_compacts_everything_to_the_top() -> None:
    # newer runs 4 > 200 % of the oldest (1): everything to level 5, deletes dropped
    unit = pick_universal(bucket([1, 1, 1, 1, 1]), DEFAULTS)
    assert len(unit.files) == 5 and unit.output_level == 5 and unit.drop_deletes


def test_size_amplification_is_strictly_greater_than() -> None:
    # newer = 1 + 1 + 2 + 100 = 104; 104 * 100 > 200 * 52 is false: not amplification...
    unit = pick_universal(bucket([1, 1, 2], L4=100, L5=52), DEFAULTS)
    # ...so size ratio: 1, +1 (2.02 >= 1), +2 (2.02 >= 2), stop at 100: three runs, written below L4
    assert names(unit) == {"l0-0", "l0-1", "l0-2"} and unit.output_level == 3 and not unit.drop_deletes
    # one byte less in the oldest run: 10400 > 10200, everything
    unit = pick_universal(bucket([1, 1, 2], L4=100, L5=51), DEFAULTS)
    assert len(unit.files) == 5 and unit.output_level == 5 and unit.drop_deletes


def test_size_ratio_stops_at_a_bigger_run_and_writes_below_it() -> None:
    unit = pick_universal(bucket([1, 1, 1, 1], L5=100), DEFAULTS)
    assert names(unit) == {"l0-0", "l0-1", "l0-2", "l0-3"}
    assert unit.output_level == 4 and not unit.drop_deletes


def test_size_ratio_of_one_run_picks_nothing_below_the_file_number() -> None:
    # 1 then 10 (> 1.01): one run only; 5 runs is not more than the trigger
    assert pick_universal(bucket([1, 10, 1, 1], L5=1000), DEFAULTS) is None


def test_size_ratio_option_widens_the_pick() -> None:
    wide = UniversalOptions(size_ratio=1000)
    unit = pick_universal(bucket([1, 10, 1, 1], L5=1000), wide)
    # 1, +10 (11 * 1000% covers it), +1, +1, then 1000 > 13 * 11: four level-0 runs to level 4
    assert len(unit.files) == 4 and unit.output_level == 4


def test_file_number_compacts_the_newest_runs_and_never_writes_level_0() -> None:
    # 6 runs > 5: start with the 2 newest (1 + 10), 100 is too big; the next run is level 0,
    # so the pick extends through the level-0 runs to the first level-3 run and writes there.
    unit = pick_universal(bucket([1, 10, 100], L3=1000, L4=10_000, L5=1_000_000), DEFAULTS)
    assert names(unit) == {"l0-0", "l0-1", "l0-2", "L3"}
    assert unit.output_level == 3 and not unit.drop_deletes


def test_file_number_down_to_the_trigger() -> None:
    unit = pick_universal(bucket([1, 1, 1, 1, 1, 1], L5=1_000_000), UniversalOptions(compaction_trigger=3))
    # amp: 6 * 100 vs 200 * 1e6 no; ratio from 1 takes all six level-0 runs, stops at L5
    assert len(unit.files) == 6 and unit.output_level == 4


def test_a_pick_reaching_the_oldest_run_goes_to_the_top_level() -> None:
    unit = pick_universal(bucket([1, 1, 1, 1], L2=3), DEFAULTS)  # 4.04 >= 3: all five runs
    assert len(unit.files) == 5 and unit.output_level == 5 and unit.drop_deletes


def test_num_levels_sets_the_top() -> None:
    unit = pick_universal(bucket([1, 1, 1, 1, 1]), UniversalOptions(num_levels=3))
    assert unit.output_level == 2


# ---- on a real table ------------------------------------------------------------------------
def make(tmp_path: Path, options: dict[str, str]) -> Table:
    t = Table.locate("db.u", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1", **options})
    return t


def batch(ids: list[int], v: str, kinds: list[str] | None = None) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids],
                     "op": kinds or ["+I"] * len(ids)})


def live(t: Table) -> list[ManifestEntry]:
    snap = t.latest_snapshot()
    return merge_entries(read_entries(t.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))


def rows(t: Table, snapshot_id: int | None = None) -> dict[int, str]:
    return {r["id"]: r["v"] for r in t.scan(snapshot_id=snapshot_id).to_pylist()}


def assert_levels_do_not_overlap(t: Table) -> None:
    key_types = [f.type for f in t.schema.fields if f.name == "id"]
    by_level: dict[tuple, list[tuple[int, int]]] = {}
    for e in live(t):
        if e.file.level > 0:
            lo, hi = binary_row.decode(e.file.min_key, key_types)[0], binary_row.decode(e.file.max_key, key_types)[0]
            by_level.setdefault((e.partition, e.bucket, e.file.level), []).append((lo, hi))
    for ranges in by_level.values():
        ranges.sort()
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])), ranges


def kinds_in(t: Table, e: ManifestEntry) -> list[int]:
    path = f"{t.path}/bucket-{e.bucket}/{e.file.file_name}"
    return read_file(path, e.file, t.schema, list(t.schema.fields), t.file_io,
                     system_columns=True).column("_VALUE_KIND").to_pylist()


def deletes_below_top(tmp_path: Path) -> Table:
    """A big run at the top, then four small writes with deletes: universal compaction writes
    them to level 4, keeping the deletes that still hide rows of level 5."""
    t = make(tmp_path, {"write-only": "true"})
    t.write(batch(list(range(20_000)), "base"), row_kind_column="op")  # far bigger than the small runs
    compact(t, full=True)
    for w in range(4):
        t.write(batch([w * 10, w * 10 + 1, 500 + w], f"w{w}-", ["-D", "+U", "+I"]), row_kind_column="op")
    return t


def test_deletes_are_kept_below_the_top_level(tmp_path: Path) -> None:
    t = deletes_below_top(tmp_path)
    before = rows(t)
    result = compact(t, full=False)
    assert result.snapshot_id is not None and result.files_before == 4
    assert rows(t) == before and 0 not in before and 1 in before
    level4 = [e for e in live(t) if e.file.level == 4]
    assert level4 and {e.file.level for e in live(t)} == {4, 5}
    for e in level4:
        kinds = kinds_in(t, e)
        assert e.file.delete_row_count == sum(1 for k in kinds if k in (1, 3)) == 4
    assert_levels_do_not_overlap(t)
    assert compact(t, full=False).snapshot_id is None  # two runs: below the trigger
    compact(t, full=True)
    assert rows(t) == before and all(e.file.delete_row_count == 0 for e in live(t))


@pytest.mark.interop
def test_pypaimon_reads_deletes_kept_below_the_top(tmp_path: Path) -> None:
    from oracle import official_read

    t = deletes_below_top(tmp_path)
    compact(t, full=False)
    assert {e.file.level for e in live(t)} == {4, 5}
    got, _ = official_read(t.path, tmp_path)
    assert {r["id"]: r["v"] for r in got.to_pylist()} == rows(t)


def test_random_writes_and_universal_compactions_keep_every_scan(tmp_path: Path) -> None:
    rng = random.Random(7)
    t = make(tmp_path, {"write-only": "true", "num-sorted-run.compaction-trigger": "3"})
    model: dict[int, str] = {}
    history: dict[int, dict[int, str]] = {}
    for step in range(30):
        ids = rng.sample(range(60), rng.randint(1, 12))
        kinds = [rng.choice(["+I", "+U", "-D"]) for _ in ids]
        t.write(batch(ids, f"s{step}-", kinds), row_kind_column="op")
        for i, k in zip(ids, kinds):
            if k == "-D":
                model.pop(i, None)
            else:
                model[i] = f"s{step}-{i}"
        history[t.latest_snapshot().id] = dict(model)
        if compact(t, full=False).snapshot_id is not None:
            history[t.latest_snapshot().id] = dict(model)
        assert rows(t) == model, f"step {step}"
        assert_levels_do_not_overlap(t)
        top = max(e.file.level for e in live(t))
        assert top <= 3  # num-levels defaults to trigger + 1 = 4
    for sid, expected in history.items():
        assert rows(t, sid) == expected, f"snapshot {sid}"


# ---- after commit ---------------------------------------------------------------------------
def test_a_write_compacts_once_the_bucket_reaches_the_trigger(tmp_path: Path) -> None:
    t = make(tmp_path, {})
    for w in range(4):
        assert t.write(batch([w, 10 + w], "a"), row_kind_column="op").maintenance == ()
    result = t.write(batch([4, 14], "a"), row_kind_column="op")
    assert result.maintenance == ("compact",) and result.snapshot_id == 5
    assert [s.commit_kind for s in t.snapshots.snapshots()] == ["APPEND"] * 5 + [COMPACT]
    assert {e.file.level for e in live(t)} == {5} and len(rows(t)) == 10


def test_write_only_never_compacts(tmp_path: Path) -> None:
    t = make(tmp_path, {"write-only": "true"})
    for w in range(7):
        assert t.write(batch([w], "a"), row_kind_column="op").maintenance == ()
    assert t.latest_snapshot().id == 7


def test_full_compaction_delta_commits(tmp_path: Path) -> None:
    t = Table.locate("db.a", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT", options={"full-compaction.delta-commits": "2"})
    done = [t.write(pa.table({"id": pa.array([i], pa.int64())})).maintenance for i in range(5)]
    assert done == [(), ("compact",), (), ("compact",), ()]
    snaps = t.snapshots.snapshots()
    assert [s.commit_kind for s in snaps] == ["APPEND", "APPEND", COMPACT, "APPEND", "APPEND", COMPACT, "APPEND"]
    assert all((s.properties or {}).get(FULL_COMPACTION_PROPERTY) == "full" for s in snaps if s.commit_kind == COMPACT)
    assert sorted(r["id"] for r in t.scan().to_pylist()) == list(range(5))
