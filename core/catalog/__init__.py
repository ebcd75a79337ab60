"""Catalogs: where tables are registered and how their snapshots are published.

``core.catalog.base`` holds the contract (``CatalogConfig``, ``Catalog``, ``SnapshotCommit``);
one module per metastore kind, imported only when that kind is opened (``open_catalog``), so
a filesystem warehouse's commands never load the JDBC or REST code.
"""

from __future__ import annotations

from core.catalog.base import Catalog, CatalogConfig, SnapshotCommit, refusal
from core.errors import UsageError


def open_catalog(config: CatalogConfig) -> Catalog:
    """The catalog ``config`` describes.

    Raises:
        UsageError: an unknown or unsupported metastore (``hive``), or a kind's missing key.
    """
    kind = config.metastore.strip().lower()
    if kind == "filesystem":
        from core.catalog.filesystem import FilesystemCatalog

        return FilesystemCatalog(config)
    if kind == "jdbc":
        from core.catalog.jdbc import JdbcCatalog

        return JdbcCatalog(config)
    if kind == "rest":
        from core.catalog.rest import RestCatalog  # engineer R's module

        return RestCatalog(config)
    raise UsageError(refusal(config.metastore))



__all__ = ["Catalog", "CatalogConfig", "SnapshotCommit", "open_catalog"]
