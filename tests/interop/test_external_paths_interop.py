"""``data-file.external-paths`` between lakectl and pypaimon 2.1 (the reference: Java Paimon 1.0
has no such option): lakectl's external files are read by pypaimon, and a table pypaimon
wrote with external paths takes lakectl's appends and compactions, still readable by both.

Expected rows are the data written (a dict model per key); placements are checked against the
layout pypaimon itself used on the same table.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from oracle import official_read, official_write

from core.external_paths import entropy_dirs
from core.manifest import ManifestEntry, merge_entries, read_entries
from core.ops.create import create
from core.table import Table

pytestmark = pytest.mark.interop


def live(table: Table) -> list[ManifestEntry]:
    snap = table.latest_snapshot()
    return merge_entries(read_entries(table.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))


def key_rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(table.column("k").to_pylist(), table.column("p").to_pylist(), table.column("v").to_pylist()))


def ext_options(roots: list[Path], strategy: str = "round-robin") -> dict[str, str]:
    return {"data-file.external-paths": ",".join(f"file://{r}" for r in roots),
            "data-file.external-paths.strategy": strategy}


def batch(keys: range, tag: str) -> pa.Table:
    ks = list(keys)
    return pa.table({"k": pa.array(ks, pa.int32()), "p": [f"p{k % 2}" for k in ks],
                     "v": [f"{tag}{k}" for k in ks]})


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject"])
def test_pypaimon_reads_what_lakectl_wrote_externally(tmp_path: Path, strategy: str) -> None:
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "k INT NOT NULL, p STRING NOT NULL, v STRING", primary_keys=["k", "p"], partition_keys=["p"],
           options={**ext_options(roots, strategy), "bucket": "2", "target-file-size": "1 kb"})
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    model: dict[tuple, str] = {}
    for n, keys in enumerate([range(0, 400), range(200, 500)]):
        data = batch(keys, f"w{n}-")
        t.write(data)
        model.update({(k, p): v for k, p, v in key_rows(data)})
    t.compact(full=True)
    expected = sorted((k, p, v) for (k, p), v in model.items())

    entries = live(t)
    assert entries and all(e.file.external_path for e in entries)
    assert all(any(f for _, _, f in os.walk(r)) for r in roots)  # both roots hold files
    official, _ = official_read(t.path, tmp_path)
    assert key_rows(official) == expected
    assert key_rows(t.scan()) == expected


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject"])
def test_lakectl_appends_to_a_pypaimon_table_with_external_paths(tmp_path: Path, strategy: str) -> None:
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["k", "INT"], ["p", "STRING"], ["v", "STRING"]], "primary_keys": [],
                      "partition_keys": ["p"], "options": ext_options(roots, strategy), "comment": None},
           "steps": [{"op": "write"}]}
    first = batch(range(0, 50), "py")
    official_write(job, [first], tmp_path)
    t = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    theirs = live(t)
    assert theirs and all(e.file.external_path for e in theirs)

    second = batch(range(50, 80), "lk")
    t.write(second)
    ours = [e for e in live(t) if e.file.file_name not in {x.file.file_name for x in theirs}]
    assert ours
    # lakectl spells its paths as pypaimon spelled its own: file:<root>/p=<value>/bucket-0/<file>,
    # with entropy-inject's hash directories (core.external_paths.entropy_dirs) before the file.
    for e in theirs + ours:
        name = e.file.file_name
        within = f"{entropy_dirs(name)}/{name}" if strategy == "entropy-inject" else name
        part = next(p for p in ("p=p0", "p=p1") if f"/{p}/" in e.file.external_path)
        assert e.file.external_path in {f"file:{r}/{part}/bucket-0/{within}" for r in roots}

    expected = sorted(key_rows(first) + key_rows(second))
    official, meta = official_read(t.path, tmp_path)
    assert meta["latest_snapshot"] == 2
    assert key_rows(official) == expected
    assert key_rows(t.scan()) == expected
