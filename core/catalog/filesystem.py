"""The filesystem catalog (Paimon's ``metastore=filesystem``, lakectl's default): the warehouse
directory is the registry. A database is a ``<db>.db`` directory, a table a directory holding
schema files; create, drop and rename act on the files alone (``core.ops``), so the registry
calls here do nothing, and a snapshot is published by creating ``snapshot-N`` if absent.

Its tables' locations carry no catalog (``TableLocation.catalog`` is None), so a command on a
filesystem warehouse runs exactly the code it ran before catalogs existed.
"""

from __future__ import annotations

from core.catalog.base import Catalog, CatalogConfig, OverWarehouse, PublishByCreate, SnapshotCommit
from core.errors import UsageError
from core.warehouse import TableLocation, Warehouse

DEFAULT_WAREHOUSE = "./warehouse"


class FilesystemCatalog(OverWarehouse, Catalog):
    kind = "filesystem"

    def __init__(self, config: CatalogConfig, warehouse: Warehouse | None = None) -> None:
        self.config = config
        self.warehouse = warehouse or Warehouse.open(config.warehouse or DEFAULT_WAREHOUSE, config.storage_options)

    @classmethod
    def of(cls, warehouse: Warehouse) -> "FilesystemCatalog":
        """The filesystem catalog over an open warehouse."""
        return cls(CatalogConfig("filesystem", warehouse.uri, {}, warehouse.storage_options), warehouse)

    def locate(self, name: str) -> TableLocation:
        return self.warehouse.locate(name)

    def databases(self) -> list[str]:
        return self.warehouse.databases()

    def tables(self, db: str) -> list[str]:
        return self.warehouse.tables(db)

    def database_exists(self, db: str) -> bool:
        return self.warehouse.file_io.exists(self.warehouse.database_path(db))

    def create_database(self, db: str, *, properties: dict[str, str] | None = None,
                        if_not_exists: bool = False) -> None:
        # A database directory comes into being with its first table's files (core.ops.create);
        # properties have nowhere to live in a filesystem warehouse.
        if properties:
            raise UsageError("database properties need a catalog with a registry (metastore jdbc or rest)")

    def drop_database(self, db: str) -> None:
        pass

    def register_table(self, location: TableLocation) -> None:
        pass

    def unregister_table(self, location: TableLocation) -> None:
        pass

    def rename_table(self, old: TableLocation, new: TableLocation) -> None:
        pass

    def snapshot_commit(self, location: TableLocation) -> SnapshotCommit:
        return PublishByCreate()


def as_catalog(source: Catalog | Warehouse) -> Catalog:
    """A catalog for operations that take either (the Python API passes a ``Warehouse``; the
    command line, the catalog in effect)."""
    return source if isinstance(source, Catalog) else FilesystemCatalog.of(source)
