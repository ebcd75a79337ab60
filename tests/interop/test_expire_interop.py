"""lakectl expires snapshots, the official reader (pypaimon) reads what is left.

After expiring every snapshot but the last two (with a tag pinning an old one, an OVERWRITE
and a COMPACT in the expired range), pypaimon must read the latest snapshot and the tag
exactly as lakectl read them before expiring: nothing either needs was deleted.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from oracle import official_read

from core.ops.compact import compact
from core.ops.create import create
from core.ops.expire import expire_snapshots
from core.table import Table

pytestmark = pytest.mark.interop


def _rows(ids: list[int], dt: str, tag: str) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.select(["dt", "id", "v"]).to_pylist(), key=lambda r: (r["dt"], r["id"]))


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_pypaimon_reads_latest_and_tag_after_expire(tmp_path: Path, primary_key: bool) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    options = {"bucket": "2", "num-sorted-run.compaction-trigger": "100"}
    if not primary_key:
        # bucket=-1: its full compaction merges two small files, where a bucketed append
        # bucket waits for three (Paimon 1.0), and this test needs a COMPACT snapshot.
        options = {"bucket": "-1"}
    create(t, "dt STRING, id BIGINT NOT NULL, v STRING", primary_keys=["dt", "id"] if primary_key else [],
           partition_keys=["dt"], options=options)
    t.write(_rows([1, 2, 3], "2024-01-01", "a"))
    t.write(_rows([1, 2], "2024-01-02", "b"))
    snap = t.snapshots.snapshot(2)
    assert t.file_io.try_create(t.tags.path("v2"), snap.to_json().encode())  # a tag file = the snapshot JSON
    t.write(_rows([2, 3, 4], "2024-01-01", "c"))
    t.write(_rows([7, 8], "2024-01-01", "d"), mode="overwrite")
    t.write(_rows([8, 9], "2024-01-02", "e"))
    compact(t, full=True)
    t.write(_rows([10], "2024-01-02", "f"))
    latest_before = _sorted(t.scan())
    tag_before = _sorted(t.scan(tag="v2"))

    result = expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100, dry_run=False)
    assert result.snapshots_expired == [1, 2, 3, 4, 5] and result.data_files_deleted > 0
    assert t.snapshots.list_ids() == [6, 7]

    official_latest, _ = official_read(t.path, tmp_path)
    assert _sorted(official_latest) == latest_before == _sorted(t.scan())
    official_tag, _ = official_read(t.path, tmp_path, tag="v2")
    assert _sorted(official_tag) == tag_before == _sorted(t.scan(tag="v2"))
    official_6, _ = official_read(t.path, tmp_path, snapshot=6)
    assert _sorted(official_6) == _sorted(t.scan(snapshot_id=6))
