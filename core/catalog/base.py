"""The catalog contract: where a table's name is registered and how its snapshots are published.

Paimon has four metastores (``metastore`` = ``filesystem``, ``hive``, ``jdbc``, ``rest``). A
catalog answers two questions for lakectl:

* **names**: which databases and tables exist, where a table's files live
  (``Catalog.locate``), and the registry side of create, drop and rename (the filesystem
  catalog has no registry: its directories are the truth, so those calls do nothing);
* **commits**: how a new ``snapshot-N`` becomes the table's (``SnapshotCommit``): a
  create-if-absent of the file on the filesystem (``SnapshotManager.try_publish``), the same
  under Paimon's ``paimon_distributed_locks`` row lock for a JDBC catalog with
  ``lock.enabled``, a POST to the REST server's ``.../commit`` for a REST catalog; and what
  the chain-rewriting commands (expire, rollback, fast-forward, tag deletion) hold while they
  rewrite (``SnapshotCommit.rewriting_chain``).

A ``TableLocation`` whose ``catalog`` is None is on the filesystem catalog; that path imports
nothing from this package (``TableLocation.snapshot_commit`` answers None and ``FileStoreCommit``
then calls ``try_publish`` itself), so the metadata commands of a filesystem warehouse cost what
they did before catalogs existed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, ContextManager

from core.errors import UsageError
from core.snapshot import SnapshotCommit

if TYPE_CHECKING:
    from core.fileio import FileIO
    from core.snapshot import Snapshot, SnapshotManager
    from core.warehouse import TableLocation

METASTORES = ("filesystem", "jdbc", "rest")
# Paimon's metastores lakectl does not speak; named so the refusal can say why.
REFUSED_METASTORES = {"hive": "a Hive metastore client is not part of lakectl"}


@dataclass(frozen=True)
class CatalogConfig:
    """A catalog's settings with Paimon's own keys.

    ``metastore``: ``filesystem`` | ``jdbc`` | ``rest``. ``warehouse``: Paimon's ``warehouse``
    key (``-w PATH`` is the filesystem catalog's, and the JDBC catalog's when the key is not
    given). ``options``: every catalog key as given (``uri``, ``jdbc.user``, ``jdbc.password``,
    ``catalog-key``, ``lock.enabled``, ``lock-acquire-timeout``, ``token.provider``, ``token``,
    ``data-token.enabled``, ...), ``metastore`` and ``warehouse`` included. ``storage_options``:
    fsspec options (S3 endpoint, credentials) from lakectl's settings.
    """

    metastore: str
    warehouse: str | None
    options: dict[str, str] = field(default_factory=dict)
    storage_options: dict[str, Any] | None = None

    def option(self, key: str, default: str | None = None) -> str | None:
        value = self.options.get(key)
        return default if value is None or value == "" else value

    def flag(self, key: str, default: bool = False) -> bool:
        """A boolean catalog option as Java reads one (``true``/``false``, any case)."""
        value = self.option(key)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise UsageError(f"catalog option {key}={value!r} must be true or false")
        return lowered == "true"


class Catalog(ABC):
    """One catalog: names to table locations, the registry, and how commits publish."""

    kind: ClassVar[str]
    # Whether tables are registered apart from their files (jdbc, rest): then a directory the
    # registry does not name is not the catalog's table.
    has_registry: ClassVar[bool] = False
    # Whether a server owns the tables' snapshot chains and creates their schema-0 (rest):
    # then lakectl writes no snapshot, hint or schema file of its own, and a command with no
    # call in the protocol is refused (``TableLocation.refuse_on_server``).
    server_owns_chain: ClassVar[bool] = False
    config: CatalogConfig

    @abstractmethod
    def locate(self, name: str) -> "TableLocation":
        """``db.table``, ``table`` (database ``default``) or a path (paths bypass the registry)
        to the table's location, whether or not the table exists."""

    @abstractmethod
    def databases(self) -> list[str]:
        """The databases, sorted."""

    @abstractmethod
    def tables(self, db: str) -> list[str]:
        """The tables of ``db``, sorted; NotFoundError if there is no such database."""

    @abstractmethod
    def database_exists(self, db: str) -> bool: ...

    @abstractmethod
    def create_database(self, db: str, *, properties: dict[str, str] | None = None,
                        if_not_exists: bool = False) -> None: ...

    @abstractmethod
    def drop_database(self, db: str) -> None:
        """The registry part only: ``core.ops.drop`` removes the files first."""

    @abstractmethod
    def register_table(self, location: "TableLocation") -> None:
        """``core.ops.create`` calls it after the schema file exists."""

    @abstractmethod
    def unregister_table(self, location: "TableLocation") -> None:
        """``core.ops.drop`` calls it."""

    @abstractmethod
    def rename_table(self, old: "TableLocation", new: "TableLocation") -> None:
        """``core.ops.rename`` calls it."""

    @abstractmethod
    def snapshot_commit(self, location: "TableLocation") -> SnapshotCommit: ...

    def is_registered(self, location: "TableLocation") -> bool:
        """Whether the registry names the table (a catalog without one: its files are its
        registration, so True)."""
        return True

    def check_registered(self, location: "TableLocation", *, has_files: bool) -> None:
        """Called by ``TableHandle.open`` (``has_files``: schema files were found at the
        table's path). A catalog with a registry raises NotFoundError, saying which, when the
        table is not registered (a directory the registry does not know is never read as its
        table) or is registered without files (an interrupted create or drop). Nothing for the
        filesystem."""

    @property
    def file_io(self) -> "FileIO":
        """The FileIO of the catalog's warehouse."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections; the catalog is not used after."""

    # ---- shared by the catalogs whose tables live in a filesystem warehouse ------------------
    @property
    def warehouse_uri(self) -> str:
        """Where the catalog's table directories live (for messages and database paths)."""
        raise NotImplementedError

    def database_path(self, db: str) -> str:
        """The directory of ``db``'s tables (``<warehouse>/<db>.db``)."""
        raise NotImplementedError

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PublishByCreate:
    """The filesystem's SnapshotCommit: ``snapshot-N`` created if absent; nothing held while a
    chain is rewritten (the rewrite marker ``snapshot/REWRITE`` is the coordination there)."""

    def publish(self, snapshots: "SnapshotManager", snapshot: "Snapshot", *, make_dirs: bool) -> bool:
        return snapshots.try_publish(snapshot, make_dirs=make_dirs)

    def rewriting_chain(self, what: str) -> ContextManager[None]:
        from contextlib import nullcontext

        return nullcontext()



class OverWarehouse:
    """Mixed into the catalogs whose tables live in a filesystem warehouse (``self.warehouse``:
    the filesystem and JDBC catalogs): where the tables are is the warehouse's answer."""

    warehouse: Any  # core.warehouse.Warehouse

    @property
    def warehouse_uri(self) -> str:
        return self.warehouse.uri

    @property
    def file_io(self) -> "FileIO":
        return self.warehouse.file_io

    def database_path(self, db: str) -> str:
        return self.warehouse.database_path(db)


def refusal(metastore: str) -> str:
    """The message refusing a metastore lakectl does not support."""
    supported = ", ".join(METASTORES)
    why = REFUSED_METASTORES.get(metastore.strip().lower())
    if why:
        return f"metastore {metastore!r} is not supported ({why}); use one of {supported}"
    return f"unknown metastore {metastore!r}; use one of {supported}"


__all__ = ["METASTORES", "Catalog", "CatalogConfig", "PublishByCreate", "SnapshotCommit", "refusal"]
