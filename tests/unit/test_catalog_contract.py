"""The catalog contract (core/catalog/base.py): a table opened through a catalog publishes its
snapshots through the catalog's SnapshotCommit and rewrites its chain inside the catalog's
``rewriting_chain``; the filesystem catalog behaves as the warehouse always did."""

from __future__ import annotations

from contextlib import contextmanager

import pyarrow as pa
import pytest

from core.catalog import CatalogConfig, open_catalog
from core.catalog.base import PublishByCreate
from core.catalog.filesystem import FilesystemCatalog
from core.errors import UsageError
from core.ops.create import create
from core.ops.tags import create_tag, delete_tag
from core.table import Table
from core.warehouse import TableLocation


class Recording(PublishByCreate):
    """Publishes as the filesystem does, recording each publish and each chain rewrite, and
    whether a publish ever happened inside a rewrite."""

    def __init__(self, lose_first: bool = False) -> None:
        self.published: list[int] = []
        self.rewrites: list[str] = []
        self.inside = False
        self.published_inside = False
        self.lose_first = lose_first

    def publish(self, snapshots, snapshot, *, make_dirs):
        if self.lose_first:
            self.lose_first = False
            return False  # as if another committer had taken the id
        self.published_inside |= self.inside
        landed = super().publish(snapshots, snapshot, make_dirs=make_dirs)
        if landed:
            self.published.append(snapshot.id)
        return landed

    @contextmanager
    def rewriting_chain(self, what):
        self.rewrites.append(what)
        self.inside = True
        try:
            yield
        finally:
            self.inside = False


class RecordingCatalog(FilesystemCatalog):
    """The filesystem catalog whose locations name it, so that commits go through ``commit``."""

    def __init__(self, warehouse: str, commit: Recording) -> None:
        super().__init__(CatalogConfig("filesystem", warehouse, {}))
        self.commit = commit

    def locate(self, name: str) -> TableLocation:
        loc = super().locate(name)
        return TableLocation(loc.name, loc.path, loc.file_io, self)

    def snapshot_commit(self, location):
        return self.commit


def _rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]})


def _table(tmp_path, commit: Recording) -> Table:
    catalog = RecordingCatalog(str(tmp_path / "wh"), commit)
    create(Table.locate("db.t", catalog=catalog), "id BIGINT, v STRING", primary_keys=["id"],
           options={"bucket": "1"})
    return Table.open("db.t", catalog=catalog)


def test_commits_publish_through_the_catalogs_snapshot_commit(tmp_path):
    commit = Recording()
    t = _table(tmp_path, commit)
    for i in range(3):
        t.write(_rows([i, i + 10]))
    t.compact(full=True)
    assert commit.published == t.snapshots.list_ids() == [1, 2, 3, 4]
    assert sorted(t.scan().column("id").to_pylist()) == [0, 1, 2, 10, 11, 12]


def test_a_publish_the_catalog_refuses_is_retried_and_lands_once(tmp_path):
    commit = Recording(lose_first=True)
    t = _table(tmp_path, commit)
    t.write(_rows([1, 2]))
    assert commit.published == [1]
    assert t.scan().num_rows == 2


def test_chain_rewrites_hold_the_catalogs_rewriting_chain(tmp_path):
    commit = Recording()
    t = _table(tmp_path, commit)
    for i in range(4):
        t.write(_rows([i]))
    create_tag(t, "t1", snapshot_id=2)
    t.rollback(snapshot_id=3, dry_run=False)
    delete_tag(t, "t1")
    t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)
    assert commit.rewrites == ["rollback", "delete tag t1", "expire snapshots"]
    assert not commit.published_inside
    assert t.snapshots.list_ids() == [3]


def test_the_filesystem_catalog_is_the_warehouse(tmp_path):
    wh = str(tmp_path / "wh")
    catalog = open_catalog(CatalogConfig("filesystem", wh, {}))
    assert catalog.kind == "filesystem"
    t = Table.locate("db.t", catalog=catalog)
    plain = Table.locate("db.t", warehouse=wh).location
    assert (t.location.name, t.location.path) == (plain.name, plain.path)
    assert t.location.catalog is None and t.location.snapshot_commit() is None
    create(t, "id BIGINT", primary_keys=[], options={})
    assert catalog.databases() == ["db"] and catalog.tables("db") == ["t"]


@pytest.mark.parametrize("metastore, words", [("hive", "not supported"), ("glue", "unknown metastore")])
def test_unsupported_metastores_are_refused_naming_the_supported_kinds(metastore, words):
    with pytest.raises(UsageError, match=f"{words}.*filesystem, jdbc, rest"):
        open_catalog(CatalogConfig(metastore, "/tmp/x", {}))
