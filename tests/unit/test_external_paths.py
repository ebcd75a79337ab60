"""``data-file.external-paths`` on write (core.external_paths): new data files go under the
external roots, laid out as pypaimon 2.1 lays them out, and every operation that writes,
reads or deletes data files follows each file's ``_EXTERNAL_PATH``.

Expected placements are spelled out by hand from pypaimon's layout (``<root>/<partition
dirs>/bucket-N/<file>``, recorded as ``file:/...``); expected rows come from the data written.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pyarrow as pa
import pytest

from core import external_paths
from core.bucket import murmur3_32
from core.errors import UnsupportedTableError, UsageError
from core.manifest import ManifestEntry, merge_entries, read_entries
from core.ops.check import check
from core.ops.create import create
from core.table import Table


def make_table(tmp_path: Path, schema: str, roots: list[Path], *, strategy: str = "round-robin",
               primary_keys: tuple[str, ...] = (), partition_keys: tuple[str, ...] = (),
               options: dict[str, str] | None = None) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    opts = {"data-file.external-paths": ",".join(f"file://{r}" for r in roots),
            "data-file.external-paths.strategy": strategy, **(options or {})}
    create(t, schema, primary_keys=list(primary_keys), partition_keys=list(partition_keys), options=opts)
    return Table.locate("db.t", warehouse=str(tmp_path / "wh"))


def live(table: Table) -> list[ManifestEntry]:
    snap = table.latest_snapshot()
    return merge_entries(read_entries(table.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))


def files_under(root: Path) -> set[str]:
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names}


def rows(table: pa.Table, *names: str) -> list[tuple]:
    return sorted(zip(*(table.column(n).to_pylist() for n in names)))


# ---- the provider on its own ------------------------------------------------------------------
def test_round_robin_cycles_the_roots_under_the_bucket_layout() -> None:
    opts = {"data-file.external-paths": "file:///a, file:///b,file:///c",
            "data-file.external-paths.strategy": "round-robin"}
    p = external_paths.provider(opts, "dt=1/bucket-2")
    paths = [p.next_path(f"f{i}") for i in range(6)]
    roots = [path.split("/")[1] for path in paths]
    # Three roots in turn from a random start: each twice, never one after itself.
    assert sorted(roots) == ["a", "a", "b", "b", "c", "c"]
    assert roots[:3] == roots[3:] and len(set(roots[:3])) == 3
    assert paths[0] == f"file:/{roots[0]}/dt=1/bucket-2/f0"


def test_specific_fs_keeps_the_roots_of_that_scheme() -> None:
    opts = {"data-file.external-paths": "s3://bkt/x,file:///local,oss://o/y",
            "data-file.external-paths.strategy": "specific-fs",
            "data-file.external-paths.specific-fs": "S3"}
    p = external_paths.provider(opts, "bucket-0")
    assert {p.next_path("f") for _ in range(4)} == {"s3://bkt/x/bucket-0/f"}


def test_weight_robin_draws_by_weight() -> None:
    random.seed(7)
    opts = {"data-file.external-paths": "file:///light,file:///heavy",
            "data-file.external-paths.strategy": "weight-robin",
            "data-file.external-paths.weights": "1,99"}
    p = external_paths.provider(opts, "bucket-0")
    heavy = sum(p.next_path("f").startswith("file:/heavy/") for _ in range(400))
    assert 370 <= heavy < 400  # expected 396; the light root still gets some


def test_murmur3_32_is_the_standard_hash() -> None:
    # Published MurmurHash3_x86_32 vectors (seed 0, as Guava's murmur3_32()): every tail length.
    assert murmur3_32(b"") == 0
    assert murmur3_32(b"hello") == 0x248BFA47
    assert murmur3_32(b"The quick brown fox jumps over the lazy dog") == 0x2E4FF723
    assert murmur3_32(b"aaaa", 0x9747B28C) == 0x5A97808A
    assert murmur3_32(b"abc", 0x9747B28C) == 0xC84A62DD
    assert murmur3_32(b"ab", 0x9747B28C) == 0x74875592
    assert murmur3_32(b"a", 0x9747B28C) == 0x7FA09EA6


def test_entropy_inject_puts_hash_dirs_between_bucket_and_file() -> None:
    opts = {"data-file.external-paths": "s3://b/x,s3://b/y", "data-file.external-paths.strategy": "entropy-inject"}
    p = external_paths.provider(opts, "dt=1/bucket-0")
    name = "data-1b2c-0.parquet"
    bits = format(murmur3_32(name.encode()) & 0xFFFFF, "020b")  # the low 20 bits, hand-cut below
    dirs = f"{bits[0:4]}/{bits[4:8]}/{bits[8:12]}/{bits[12:]}"
    # Starts at the second root, then takes them in turn.
    assert [p.next_path(name) for _ in range(3)] == [
        f"s3://b/y/dt=1/bucket-0/{dirs}/{name}", f"s3://b/x/dt=1/bucket-0/{dirs}/{name}",
        f"s3://b/y/dt=1/bucket-0/{dirs}/{name}"]


def test_none_or_no_paths_keeps_files_in_the_table() -> None:
    assert external_paths.provider({"data-file.external-paths": "file:///a"}, "bucket-0") is None
    assert external_paths.provider({"data-file.external-paths.strategy": "round-robin"}, "bucket-0") is None


@pytest.mark.parametrize("opts, message", [
    ({"data-file.external-paths": "/no/scheme", "data-file.external-paths.strategy": "round-robin"},
     "has no scheme"),
    ({"data-file.external-paths": "file:///a", "data-file.external-paths.strategy": "specific-fs"},
     "needs data-file.external-paths.specific-fs"),
    ({"data-file.external-paths": "file:///a", "data-file.external-paths.strategy": "specific-fs",
      "data-file.external-paths.specific-fs": "s3"}, "no path has the scheme"),
    ({"data-file.external-paths": "file:///a,file:///b", "data-file.external-paths.strategy": "weight-robin",
      "data-file.external-paths.weights": "1"}, "one positive weight per path"),
])
def test_bad_settings_are_refused(opts: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        external_paths.provider(opts, "bucket-0")


# ---- on tables ------------------------------------------------------------------------------------
def test_write_spreads_files_over_both_roots_and_reads_back(tmp_path: Path) -> None:
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    t = make_table(tmp_path, "k INT, p STRING, v STRING", roots, partition_keys=("p",),
                   options={"target-file-size": "1 kb"})
    data = pa.table({"k": list(range(3000)), "p": ["a", "b"] * 1500, "v": ["x" * 20] * 3000})
    t.write(data)

    entries = live(t)
    assert len(entries) > 10
    for e in entries:
        part = "p=a" if e.file.external_path.split("/")[-3] == "p=a" else "p=b"
        root = next(r for r in roots if e.file.external_path.startswith(f"file:{r}/"))
        assert e.file.external_path == f"file:{root}/{part}/bucket-0/{e.file.file_name}"
        assert os.path.isfile(e.file.external_path[len("file:"):])
    # Round robin within each partition's writer: the two roots' counts differ by at most one each.
    on_disk = [files_under(r) for r in roots]
    assert sum(len(f) for f in on_disk) == len(entries)
    for part in ("p=a", "p=b"):
        counts = [sum(f"/{part}/" in f for f in files) for files in on_disk]
        assert abs(counts[0] - counts[1]) <= 1 and min(counts) > 0
    # The table directory holds no data file.
    assert not any("bucket-" in f for f in files_under(Path(t.path)))
    assert rows(t.scan(), "k", "p", "v") == rows(data, "k", "p", "v")
    assert check(t).ok


def test_compaction_output_goes_external(tmp_path: Path) -> None:
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    t = make_table(tmp_path, "k INT NOT NULL, v STRING", roots, primary_keys=("k",), options={"bucket": "1"})
    model: dict[int, str] = {}
    for n in range(3):
        batch = {k: f"v{n}-{k}" for k in range(n * 5, n * 5 + 20)}
        t.write(pa.table({"k": pa.array(list(batch), pa.int32()), "v": list(batch.values())}))
        model.update(batch)
    before = {e.file.file_name for e in live(t)}
    t.compact(full=True)

    after = live(t)
    assert {e.file.file_name for e in after}.isdisjoint(before)  # rewritten, not upgraded
    for e in after:
        assert e.file.external_path is not None
        assert os.path.isfile(e.file.external_path[len("file:"):])
    assert rows(t.scan(), "k", "v") == sorted(model.items())


def test_delete_rewrites_files_externally(tmp_path: Path) -> None:
    roots = [tmp_path / "ext1"]
    t = make_table(tmp_path, "k INT, v STRING", roots)
    t.write(pa.table({"k": list(range(10)), "v": [str(i) for i in range(10)]}))
    before = {e.file.file_name for e in live(t)}
    t.delete("k < 4")
    after = live(t)
    assert {e.file.file_name for e in after}.isdisjoint(before)  # the file was rewritten
    assert all(e.file.external_path == f"file:{roots[0]}/bucket-0/{e.file.file_name}" for e in after)
    # The old file stays (an earlier snapshot reads it) beside the rewritten one.
    assert {os.path.basename(f) for f in files_under(roots[0])} == before | {e.file.file_name for e in after}

    assert rows(t.scan(), "k") == [(k,) for k in range(4, 10)]


def test_expire_removes_the_external_files_of_expired_snapshots_only(tmp_path: Path) -> None:
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    t = make_table(tmp_path, "k INT, v STRING", roots)
    t.write(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    first = {e.file.external_path for e in live(t)}
    t.write(pa.table({"k": [3], "v": ["c"]}), mode="overwrite")
    t.write(pa.table({"k": [4], "v": ["d"]}))
    kept = {e.file.external_path for e in live(t)}
    assert len(first) == 1 and len(kept) == 2 and first.isdisjoint(kept)

    result = t.expire(retain_max=1, retain_min=1, dry_run=False)

    assert result.data_files_deleted == 1
    on_disk = {f"file:{f}" for r in roots for f in files_under(r)}
    assert on_disk == kept  # the overwritten file went, the live ones stayed
    assert rows(t.scan(), "k", "v") == [(3, "c"), (4, "d")]
    assert check(t).ok


def test_unknown_strategy_is_refused_naming_it(tmp_path: Path) -> None:
    t = make_table(tmp_path, "k INT", [tmp_path / "ext"], strategy="hash-mod")
    with pytest.raises(UnsupportedTableError, match="data-file.external-paths.strategy.*hash-mod"):
        t.write(pa.table({"k": [1]}))
    assert rows(t.scan(), "k") == []  # reads are not refused


def test_file_index_sits_beside_its_external_file_and_goes_with_it(tmp_path: Path) -> None:
    """A file index too large for the manifest is ``<file>.index`` beside the data file (Paimon
    resolves it so); a filtered scan reads it there, clone copies it, expire deletes it."""
    roots = [tmp_path / "ext1"]
    t = make_table(tmp_path, "k INT, v STRING", roots,
                   options={"file-index.bloom-filter.columns": "v", "file-index.in-manifest-threshold": "1 b"})
    t.write(pa.table({"k": list(range(100)), "v": [f"s{i}" for i in range(100)]}))
    [entry] = live(t)
    index = entry.file.external_path[len("file:"):] + ".index"
    assert entry.file.extra_files == (entry.file.file_name + ".index",) and os.path.isfile(index)
    assert rows(t.scan(where="v = 's7'"), "k") == [(7,)]

    from core.ops.clone import clone
    target = Table.locate("db.copy", warehouse=str(tmp_path / "wh"))
    clone(t, target)
    copied = Table.locate("db.copy", warehouse=str(tmp_path / "wh"))
    [c] = live(copied)
    assert c.file.external_path is None  # the clone keeps its files in its own directory
    assert os.path.isfile(os.path.join(copied.path, "bucket-0", c.file.file_name + ".index"))
    assert rows(copied.scan(where="v = 's7'"), "k") == [(7,)]

    t.write(pa.table({"k": [1], "v": ["z"]}), mode="overwrite")
    t.expire(retain_max=1, retain_min=1, dry_run=False)
    assert not os.path.exists(index)


def test_a_root_on_another_store_is_refused_before_any_file_is_written(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "k INT", options={"data-file.external-paths": "s3://bucket/ext",
                                "data-file.external-paths.strategy": "round-robin"})
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    with pytest.raises(UsageError, match="not on the table's store"):
        t.write(pa.table({"k": [1]}))
    assert files_under(tmp_path) == files_under(Path(t.path))  # nothing landed anywhere else
    assert not any("bucket-" in f for f in files_under(Path(t.path)))
    assert t.latest_snapshot() is None


def test_changelog_files_go_external_and_expire_with_their_snapshots(tmp_path: Path) -> None:
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    t = make_table(tmp_path, "k INT NOT NULL, v STRING", roots, primary_keys=("k",),
                   options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    t.write(pa.table({"k": pa.array([2], pa.int32()), "v": ["c"]}))
    snaps = list(t.snapshots.snapshots())
    logs = [e for s in snaps for e in read_entries(t.manifests(), [s.changelog_manifest_list])]
    assert len(logs) == 2
    for e in logs:
        assert e.file.file_name.startswith("changelog-")
        assert e.file.external_path in {f"file:{r}/bucket-0/{e.file.file_name}" for r in roots}
        assert os.path.isfile(e.file.external_path[len("file:"):])

    t.expire(retain_max=1, retain_min=1, dry_run=False)
    first_log = logs[0].file.external_path[len("file:"):]
    assert not os.path.exists(first_log)  # snapshot 1's changelog went with it
    assert os.path.isfile(logs[1].file.external_path[len("file:"):])


def test_bad_settings_are_refused_at_create(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    with pytest.raises(UsageError, match="has no scheme"):
        create(t, "k INT", options={"data-file.external-paths": str(tmp_path / "ext"),
                                    "data-file.external-paths.strategy": "round-robin"})
    assert not t.exists()
