"""Manifest merging at commit time (core/manifest_merge.py), against a model of the live files,
and on real tables written commit by commit."""

import dataclasses

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from core import binary_row
from core.fileio import FileIO
from core.manifest import ADD, DELETE, DataFileMeta, ManifestEntry, ManifestIO, live_entries, merge_entries, \
    read_entries
from core.manifest_merge import MergeRules, fold, merge_manifests
from core.ops.create import create
from core.stats import EMPTY_STATS
from core.table import Table
from core.types import parse_type

PART_TYPES = [parse_type("INT")]


def _file(name: str, level: int = 0) -> DataFileMeta:
    return DataFileMeta(file_name=name, file_size=100, row_count=1, min_key=b"", max_key=b"",
                        key_stats=EMPTY_STATS, value_stats=EMPTY_STATS, min_sequence_number=0,
                        max_sequence_number=0, schema_id=0, level=level)


def _entry(kind: int, part: int, name: str) -> ManifestEntry:
    return ManifestEntry(kind, binary_row.encode([part], PART_TYPES), 0, 1, _file(name))


# A history: each commit ADDs new files, DELETEs live ones, or ADDs back a file it deleted
# earlier (rollback --as-latest does), in partitions 0..3.
commit_steps = st.lists(st.lists(st.tuples(st.sampled_from(["add", "delete", "readd"]), st.integers(0, 3)),
                                 min_size=1, max_size=4), min_size=1, max_size=60)


def _replay(steps, rules, tmp_path):
    mio = ManifestIO(FileIO.for_uri(str(tmp_path)), str(tmp_path), "zstd")
    base, live, gone, counter = [], {}, {}, 0
    for step in steps:
        entries = []
        for action, part in step:
            if action == "add" or (action == "readd" and not gone) or (action == "delete" and not live):
                counter += 1
                e = _entry(ADD, part, f"f{counter}")
                live[e.identifier] = e
            elif action == "delete":
                key = sorted(live)[counter % len(live)]
                e = dataclasses.replace(live.pop(key), kind=DELETE)
                gone[key] = e
            else:
                key = sorted(gone)[counter % len(gone)]
                e = dataclasses.replace(gone.pop(key), kind=ADD)
                live[key] = e
            entries.append(e)
        delta = mio.write_manifest(entries, 0, PART_TYPES)
        base = merge_manifests(mio, base, rules, 0, PART_TYPES, []) + [delta]
        got = merge_entries(e for m in base for e in mio.read_manifest(m.file_name))
        assert sorted(e.identifier for e in got) == sorted(live)
    return base


@settings(max_examples=60, deadline=None)
@given(steps=commit_steps, min_count=st.integers(1, 6), target=st.sampled_from([1, 1500, 4000, 10**9]),
       full=st.sampled_from([1, 3000, 10**9]))
def test_merged_manifests_hold_exactly_the_live_files(tmp_path_factory, steps, min_count, target, full):
    _replay(steps, MergeRules(target, min_count, full), tmp_path_factory.mktemp("m"))


def test_small_manifests_are_merged_once_merge_min_count_of_them_pile_up(tmp_path):
    base = _replay([[("add", 0)]] * 40, MergeRules(8 << 20, 5, 16 << 20), tmp_path)
    # Paimon's minor compaction: at 5 small manifests they become one; so never more than 5.
    assert len(base) <= 5


def test_a_full_compaction_leaves_only_live_adds(tmp_path):
    steps = [[("add", p)] for p in range(4)] + [[("delete", 0)], [("delete", 0)]]
    base = _replay(steps, MergeRules(8 << 20, 100, 1), tmp_path)
    mio = ManifestIO(FileIO.for_uri(str(tmp_path)), str(tmp_path), "zstd")
    merged = [e for m in base[:-1] for e in mio.read_manifest(m.file_name)]
    assert merged and all(e.kind == ADD for e in merged)


def test_fold_keeps_a_delete_whose_add_came_earlier_before_the_file_is_added_back():
    a = _entry(ADD, 0, "a")
    d = dataclasses.replace(a, kind=DELETE)
    assert fold([d, a]) == [d, a]
    assert fold([a, d]) == []
    assert fold([a, d, a]) == [a]


def _rows(i):
    return pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]})


def test_a_table_written_commit_by_commit_keeps_its_manifest_list_short(tmp_path):
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1", "write-only": "true",
                                                              "manifest.merge-min-count": "6"})
    for i in range(40):
        t.write(_rows(i))
    t = Table.locate(t.path)
    snap = t.latest_snapshot()
    mio = t.manifests()
    lists = [mio.read_manifest_list(n) for n in (snap.base_manifest_list, snap.delta_manifest_list)]
    assert sum(len(x) for x in lists) <= 7  # at most 6 in the base, one delta
    assert sorted(t.scan().column("id").to_pylist()) == list(range(40))
    assert len(live_entries(mio, snap)) == 40  # one file per write: no compaction ran
    assert len(read_entries(mio, [snap.base_manifest_list])) < 40 + 1


@pytest.mark.parametrize("sid", [10, 25, 39])
def test_every_snapshot_of_a_merged_table_reads_as_written(tmp_path, sid):
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING", options={"bucket": "-1", "write-only": "true", "manifest.merge-min-count": "4"})
    for i in range(40):
        t.write(_rows(i))
    t = Table.locate(t.path)
    assert sorted(t.scan(snapshot_id=sid).column("id").to_pylist()) == list(range(sid))


def test_health_recommends_compact_manifests_for_an_unmerged_table_and_maintain_runs_it(tmp_path):
    from core.health import measure
    from core.metrics import render
    from core.evolution import RemoveOption
    from core.ops.maintain import Policy, maintain_table, recommendations

    t = Table.locate("db.t", warehouse=str(tmp_path))
    # Written as a writer that never merges leaves it; then the option goes back to Paimon's 30.
    create(t, "id BIGINT, v STRING", options={"bucket": "-1", "write-only": "true", "manifest.merge-min-count": "999"})
    for i in range(40):
        t.write(_rows(i))
    t = Table.open("db.t", warehouse=str(tmp_path))
    assert measure(t).small_manifests == 40
    assert "compact-manifests" not in [r.command.split()[1] for r in recommendations(t, measure(t))]
    t.alter([RemoveOption("manifest.merge-min-count")])
    t = Table.open("db.t", warehouse=str(tmp_path))
    h = measure(t)
    assert [r.command for r in recommendations(t, h) if "manifests" in r.command] == ["lakectl compact-manifests db.t"]
    rep = maintain_table(t, Policy(skip_verbs=frozenset({"compact", "remove-orphan-files"})))
    assert rep.status == "done", rep.reason
    done = next(a for a in rep.actions if a.verb == "compact-manifests")
    assert done.detail["manifests_before"] == 40 and done.detail["manifests_after"] == 1
    t = Table.open("db.t", warehouse=str(tmp_path))
    assert measure(t).manifests == 1
    assert sorted(t.scan().column("id").to_pylist()) == list(range(40))
    # quiet after one run, and the metric says so
    assert not [r for r in recommendations(t, measure(t)) if "manifests" in r.command]
    rep.health = measure(t)
    assert b'lakectl_table_manifests{table="db.t"} 1.0' in render([rep])


def test_a_partition_filter_reads_only_the_manifests_whose_partition_range_can_hold_it(tmp_path, monkeypatch):
    """Merged manifests are written in partition order and split at the target size, so each
    covers a narrow partition range; a scan on one partition skips the others unread."""
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, p INT", partition_keys=["p"],
           options={"bucket": "-1", "write-only": "true", "manifest.merge-min-count": "4",
                    "manifest.target-file-size": "3 kb", "manifest.full-compaction-threshold-size": "1 b"})
    for i in range(40):  # 8 partitions, written in turn: every commit's manifest is one partition
        t.write(pa.table({"id": pa.array([i], pa.int64()), "p": pa.array([i % 8], pa.int32())}))
    t = Table.open("db.t", warehouse=str(tmp_path))
    read = []
    real = ManifestIO.read_manifest
    monkeypatch.setattr(ManifestIO, "read_manifest",
                        lambda self, name, *filters: read.append(name) or real(self, name, *filters))
    everything = t.scan()
    all_manifests = len(set(read))
    read.clear()
    one = t.scan(where="p = 3")
    assert sorted(one.column("id").to_pylist()) == [i for i in range(40) if i % 8 == 3]
    assert 0 < len(set(read)) < all_manifests, (len(set(read)), all_manifests)
    assert everything.num_rows == 40


def test_a_partition_filter_makes_entries_of_that_partition_only(tmp_path, monkeypatch):
    """Every commit's manifest spans all 120 partitions (several Avro blocks each), so no
    manifest is skipped; the entries of other partitions are dropped before they are made,
    and the rows equal the full scan's rows of that partition (an overwrite's DELETE entries
    included)."""
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, p INT", partition_keys=["p"], options={"bucket": "-1", "write-only": "true"})
    parts = pa.array(range(120), pa.int32())
    for c in range(3):
        t.write(pa.table({"id": pa.array(range(c * 120, (c + 1) * 120), pa.int64()), "p": parts}))
    # a dynamic partition overwrite (Paimon's default): p=17 alone is replaced
    t.write(pa.table({"id": pa.array([-17], pa.int64()), "p": pa.array([17], pa.int32())}), mode="overwrite")
    everything = t.scan()
    expected = sorted(i for i, p in zip(everything.column("id").to_pylist(), everything.column("p").to_pylist())
                      if p == 17)
    assert expected == [-17] and everything.num_rows == 3 * 120 - 3 + 1
    made = []
    real = ManifestEntry.from_avro
    monkeypatch.setattr(ManifestEntry, "from_avro", staticmethod(lambda r: made.append(1) or real(r)))
    one = t.scan(where="p = 17")
    assert sorted(one.column("id").to_pylist()) == expected
    assert len(made) == 3 + 3 + 1  # three ADDs of p=17, the overwrite's three DELETEs and its ADD


def test_compact_manifests_reports_its_commit_when_a_rename_moved_the_table_after_it(tmp_path, monkeypatch):
    """The explorer's compact-manifests@5-vs-rename: stalled after publishing its snapshot, a
    rename moves the table; the commit has landed, so the command reports it (it read its new
    manifest list back and failed on the missing file, exit 1)."""
    import os

    from core.ops.compact_manifests import compact_manifests
    from core.snapshot import SnapshotManager

    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING", options={"bucket": "-1", "write-only": "true", "manifest.merge-min-count": "999"})
    for i in range(12):
        t.write(_rows(i))
    t = Table.open("db.t", warehouse=str(tmp_path))
    moved = str(tmp_path / "db.db" / "u")
    real = SnapshotManager.write_latest_hint

    def rename_first(self, sid):  # the rename runs between the publish and the hint
        if os.path.isdir(t.path):
            os.rename(t.path, moved)
        return real(self, sid)

    monkeypatch.setattr(SnapshotManager, "write_latest_hint", rename_first)
    result = compact_manifests(t)
    monkeypatch.undo()
    u = Table.open("db.u", warehouse=str(tmp_path))
    snap = u.latest_snapshot()
    assert result.snapshot_id == snap.id and snap.commit_kind == "COMPACT"
    assert result.manifests_before == 12  # one per write: eleven in the base list, the last delta
    assert result.manifests_after == len(u.manifests().read_manifest_list(snap.base_manifest_list)) == 1
    assert sorted(u.scan().column("id").to_pylist()) == list(range(12))
