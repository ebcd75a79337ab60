"""A bucket-unaware append table (``bucket=-1``) compacted by lakectl and by Java's own
compaction coordinator (UnawareAppendTableCompactionCoordinator, what Flink's and Spark's
compaction jobs run), from two copies of one table: both rewrite exactly the same groups of
files, and Java reads the same rows from either result."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run, sort_rows

from core.engines import EngineSettings
from core.evolution import SetOption
from core.kernels.compact_plan import unaware_small_size
from core.manifest import live_entries
from core.ops.compact import compact
from core.ops.compact_planning import plan
from core.ops.create import create
from core.ops.delete import delete
from core.ops.write import write
from core.table import Table

pytestmark = pytest.mark.interop

LOCAL = EngineSettings(engine="local")


def _table(root: Path, options: dict[str, str], seed: int, then: dict[str, str] | None = None) -> Table:
    """Two partitions of 14 commits each, its files all of different sizes (Java's
    coordinator packs by size and breaks ties in hash order, so equal sizes could be grouped
    either way; only its candidates matter): the first seed from ``seed`` on that gives such a
    table. ``then``: options set after the writes (as ALTER TABLE SET)."""
    for attempt in range(seed, seed + 50):
        shutil.rmtree(root, ignore_errors=True)
        t = Table.locate("db.t", warehouse=str(root / "wh"))
        create(t, "p INT, id BIGINT, s STRING", partition_keys=["p"], options={"bucket": "-1", **options})
        rnd = random.Random(attempt)
        next_id = 0
        for i, n in enumerate(rnd.sample(range(20, 1400), 28)):
            ids = range(next_id, next_id + n)
            next_id += n
            write(t, pa.table({"p": pa.array([i % 2] * n, pa.int32()), "id": pa.array(ids, pa.int64()),
                               "s": [f"row-{k}-" + "x" * rnd.randint(0, 40) for k in ids]}), engine_settings=LOCAL)
        if then:
            t.alter([SetOption(k, v) for k, v in then.items()])
            t = Table.open("db.t", warehouse=str(root / "wh"))
        small = unaware_small_size(t.schema)  # only the coordinator's candidates are packed
        sizes = [e.file.file_size for e in live_entries(t.manifests(), t.latest_snapshot()) if e.file.file_size < small]
        if len(set(sizes)) == len(sizes):
            return t
    raise AssertionError("no seed gave files of distinct sizes")


def _lakectl_rewrites(t: Table) -> set[frozenset[str]]:
    return {frozenset(f.file_name for f in task.files) for task in plan(t, full=False).tasks}


@pytest.mark.parametrize("options, then", [
    ({"target-file-size": "40kb", "compaction.min.file-num": "3"}, None),
    ({"target-file-size": "40kb", "compaction.min.file-num": "2", "compaction.max.file-num": "4"}, None),
    # Written at the default target, then 12 kb: the files past 70% of it are no candidates.
    ({"compaction.min.file-num": "3"}, {"target-file-size": "12kb"}),
], ids=["min-3", "max-4", "few-small"])
def test_lakectl_rewrites_the_files_java_s_coordinator_rewrites(tmp_path: Path, options: dict[str, str],
                                                                then: dict[str, str] | None) -> None:
    t = _table(tmp_path / "lakectl", options, seed=len(options) * 7, then=then)
    java_copy = tmp_path / "java"
    shutil.copytree(tmp_path / "lakectl", java_copy)
    expected = _lakectl_rewrites(t)
    java = java_run(java_copy / "wh" / "db.db" / "t", [{"op": "coordinate"}])
    java_rewrites = {frozenset(names) for names in java["coordinated"][0]}
    assert expected == java_rewrites
    assert expected, "the table was meant to give the coordinator work"
    before = sort_rows(java_read(t.path)[0])
    result = compact(t, full=False, engine_settings=LOCAL)
    assert result.files_before == sum(len(r) for r in expected)
    assert sort_rows(java_read(t.path)[0]) == before == sort_rows(java_read(java_copy / "wh" / "db.db" / "t")[0])


def test_files_with_deletion_vectors_are_rewritten_per_index_file_as_java_does(tmp_path: Path) -> None:
    t = _table(tmp_path / "lakectl", {"target-file-size": "40kb", "compaction.min.file-num": "3",
                                      "deletion-vectors.enabled": "true"}, seed=11)
    # Rows of a few files, big and small, deleted: their files get vectors in one index file per partition.
    delete(t, f"id IN ({', '.join(str(i) for i in range(0, 4000, 97))})", engine_settings=LOCAL)
    java_copy = tmp_path / "java"
    shutil.copytree(tmp_path / "lakectl", java_copy)
    expected = _lakectl_rewrites(t)
    java = java_run(java_copy / "wh" / "db.db" / "t", [{"op": "coordinate"}])
    assert expected == {frozenset(names) for names in java["coordinated"][0]}
    before = sort_rows(java_read(t.path)[0])
    compact(t, full=False, engine_settings=LOCAL)
    assert sort_rows(java_read(t.path)[0]) == before == sort_rows(java_read(java_copy / "wh" / "db.db" / "t")[0])
