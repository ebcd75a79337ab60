"""The order in which a rename on an object store copies a table's metadata (core/ops/rename.py),
against a hand-written expectation: data first; tags, branches (their schema files last),
consumers, changelog and snapshot files, numbered files ascending before their hints; the
table's schema files last, the latest first. And the marker check costs nothing on local disk."""

from __future__ import annotations

from pathlib import Path

from core.fileio import FileIO, inject_fault
from core.ops.rename import _copy_order, _rank
from core.renaming import RENAMING, RenameMarker, refuse_renaming


def test_metadata_copy_order() -> None:
    files = ["schema/schema-0", "snapshot/LATEST", "snapshot/snapshot-10", "snapshot/snapshot-9", "schema/schema-2",
             "tag/tag-release", "branch/branch-b/schema/schema-0", "branch/branch-b/snapshot/snapshot-1",
             "consumer/consumer-c1", "snapshot/EARLIEST", "changelog/changelog-3", "schema/schema-1"]
    assert sorted(files, key=_copy_order) == [
        "tag/tag-release",
        "branch/branch-b/snapshot/snapshot-1", "branch/branch-b/schema/schema-0",
        "consumer/consumer-c1",
        "changelog/changelog-3",
        "snapshot/snapshot-9", "snapshot/snapshot-10", "snapshot/EARLIEST", "snapshot/LATEST",
        "schema/schema-2", "schema/schema-1", "schema/schema-0",
    ]
    # data, manifest, index and statistics files have unique names and go first, in any order
    for data in ("dt=a/bucket-0/data-1.parquet", "manifest/manifest-list-1", "index/index-1", "statistics/s-1",
                 "bucket-0/data-2.orc"):
        assert _rank(data) == 0


def test_the_marker_check_is_free_on_local_disk(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    table = tmp_path / "db.db" / "t"
    table.mkdir(parents=True)
    (table / RENAMING).write_bytes(RenameMarker("db.s", "/x", "db.t", str(table), 1).to_json())
    with inject_fault("fail", "any", 1) as fault:  # any file operation would fail
        refuse_renaming(io, str(table), "db.t")  # local renames are atomic: no marker is looked for
    assert fault.seen == 0
