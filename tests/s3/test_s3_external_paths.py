"""``data-file.external-paths`` on S3 (a real SeaweedFS): a table whose data files go under two
external prefixes of the same bucket writes, compacts, reads, checks and expires them there,
and nothing lands under the table's own prefix."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from core.manifest import merge_entries, read_entries
from core.ops.check import check
from core.ops.create import create
from core.table import Table

pytestmark = pytest.mark.s3


def data_files(fs: Any, roots: list[str]) -> set[str]:
    """The Parquet objects under the roots, listed afresh (s3fs caches listings)."""
    fs.invalidate_cache()
    return {f"s3://{p}" for r in roots for p in fs.find(r.removeprefix("s3://")) if p.endswith(".parquet")}


def test_external_prefixes_on_s3(s3: Any) -> None:
    wh = s3.warehouse()
    roots = [f"{wh}-ext1", f"{wh}-ext2"]
    opts = s3.storage_options()
    t = Table.locate("db.t", warehouse=wh, storage_options=opts)
    create(t, "k INT NOT NULL, v STRING", primary_keys=["k"],
           options={"bucket": "1", "data-file.external-paths": ",".join(roots),
                    "data-file.external-paths.strategy": "round-robin"})
    t = Table.open("db.t", warehouse=wh, storage_options=opts)
    model: dict[int, str] = {}
    for n in range(4):
        batch = {k: f"w{n}-{k}" for k in range(n * 3, n * 3 + 6)}
        t.write(pa.table({"k": pa.array(list(batch), pa.int32()), "v": list(batch.values())}))
        model.update(batch)
    t.compact(full=True)

    snap = t.latest_snapshot()
    live = merge_entries(read_entries(t.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))
    assert live and all(e.file.external_path.startswith(tuple(f"{r}/bucket-0/" for r in roots)) for e in live)
    fs = s3.fs()
    assert not [p for p in fs.find(t.path.removeprefix("s3://")) if "/bucket-" in p]
    written = data_files(fs, roots)
    assert {e.file.external_path for e in live} <= written
    got = t.scan()
    assert sorted(zip(got.column("k").to_pylist(), got.column("v").to_pylist())) == sorted(model.items())
    assert check(t).ok

    result = t.expire(retain_max=1, retain_min=1, dry_run=False)
    assert result.data_files_deleted == len(written) - len(live)  # all but the compacted files
    after = data_files(fs, roots)
    assert after == {e.file.external_path for e in live}
