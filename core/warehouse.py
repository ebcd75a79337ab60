"""Warehouse: where tables live (``<warehouse>/<db>.db/<table>``) and how names resolve.

A table is named ``db.table`` inside the warehouse (a bare ``table`` means database
``default``, as in Paimon), or given by its path or URI directly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ContextManager

from core.errors import NotFoundError, UsageError
from core.fileio import FileIO, check_name_length, join

if TYPE_CHECKING:
    from typing import Protocol

    from core.snapshot import SnapshotCommit

    class Catalog(Protocol):
        """What a location needs of its catalog (``core.catalog.base.Catalog``, which sits
        above this module, is one): named here so that the warehouse does not import it."""

        kind: str
        server_owns_chain: bool

        def snapshot_commit(self, location: TableLocation) -> SnapshotCommit: ...

        def check_registered(self, location: TableLocation, *, has_files: bool) -> None: ...

DEFAULT_DATABASE = "default"

# The commands a REST catalog's table refuses (``TableLocation.refuse_on_server``), each with
# why: the REST protocol has no call for it, or lakectl does not send the one it has. Each
# would otherwise write or delete snapshot, tag, schema or hint files behind the server's back.
_OWNED = "the server owns the snapshot chain"
SERVER_REFUSALS = {
    "expire": f"the REST protocol has no call to expire snapshots; {_OWNED} and expires it itself",
    "expire-changelogs": f"the REST protocol has no call to expire changelogs; {_OWNED}",
    "expire-tags": "the REST protocol has no call to expire tags (deleteTag removes one named tag: "
                   "use `lakectl tag delete`)",
    "remove-orphan-files": "the REST protocol has no call for it, and only the server knows which files its "
                           "commits in flight will reference",
    "clone": "a clone writes the target's schema and snapshot files itself; the REST protocol has no call "
             "to publish a copied history",
    "check --repair": f"repair deletes snapshot and tag files and rewrites hints; {_OWNED} (check without "
                      "--repair reads it)",
    "tag rename": "the REST protocol has no renameTag call",
    "tag create --replace": "the REST protocol has no call to replace a tag (delete it, then create it)",
    "branch create --snapshot-id": "the REST protocol's createBranch starts a branch at a tag or empty; tag "
                                   "the snapshot and create the branch from the tag",
    "rescale": "rescale writes its new bucket count into a schema file it commits with the rewritten "
               "data; lakectl does not split that into alterTable and a commit (which a reader could see "
               "apart)",
}
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")


@dataclass(frozen=True, slots=True)
class TableLocation:
    name: str  # "db.table", or the path when the table was named by path
    path: str
    file_io: FileIO
    # The catalog the table is registered in; None: the filesystem catalog (no registry,
    # snapshots published by create-if-absent), which is also what a table named by path gets.
    catalog: "Catalog | None" = None
    # False: a name the catalog's server does not know yet (a REST table before its create);
    # ``path`` then names nothing, the table does not exist, and ``core.ops.create`` asks the
    # server to create it (the server, not lakectl, chooses where it lives).
    placed: bool = True

    @property
    def identifier(self) -> tuple[str, str] | None:
        """(database, table) of a table named ``db.table``; None for one named by path."""
        if looks_like_path(self.name):
            return None
        db, _, table = self.name.partition(".")
        return db, table

    @property
    def server_owns_chain(self) -> bool:
        """Whether a server publishes this table's snapshots and owns its chain (REST)."""
        return self.catalog is not None and self.catalog.server_owns_chain

    def refuse_on_server(self, verb: str) -> None:
        """Refuse ``verb`` (a key of ``SERVER_REFUSALS``) on a table whose catalog's server owns
        the snapshot chain (REST), before anything is written: exit 2, saying which call is
        missing. Nothing on the catalogs where lakectl writes the chain itself."""
        if self.server_owns_chain:
            from core.errors import CatalogUnsupportedError

            raise CatalogUnsupportedError(f"{verb} is refused on {self.name} (REST catalog): {SERVER_REFUSALS[verb]}")

    def snapshot_commit(self) -> "SnapshotCommit | None":
        """How this table's commits publish a snapshot; None: the filesystem's create-if-absent,
        which ``FileStoreCommit`` does itself (no import of core.catalog on that path)."""
        return None if self.catalog is None else self.catalog.snapshot_commit(self)

    def rewriting_chain(self, what: str) -> ContextManager[None]:
        """What expire, rollback, fast-forward and tag deletion hold while they rewrite the
        chain (``SnapshotCommit.rewriting_chain``); nothing on the filesystem catalog."""
        if self.catalog is None:
            from contextlib import nullcontext

            return nullcontext()
        return self.catalog.snapshot_commit(self).rewriting_chain(what)


def looks_like_path(name: str) -> bool:
    return "://" in name or "/" in name or name.startswith(".") or name.startswith("~")


@dataclass(frozen=True, slots=True)
class Warehouse:
    uri: str
    file_io: FileIO
    storage_options: dict[str, Any] | None = None

    @classmethod
    def open(cls, uri: str, storage_options: dict[str, Any] | None = None) -> "Warehouse":
        file_io = FileIO.for_uri(uri, storage_options)
        return cls(file_io.normalize(uri), file_io, storage_options)

    def locate(self, name: str) -> TableLocation:
        """Resolve ``db.table``, ``table`` or a path to the table's directory."""
        if looks_like_path(name):
            if "://" in name:
                file_io = FileIO.for_uri(name, self.storage_options)
            elif self.file_io.local:
                file_io = self.file_io
            else:  # a bare path is on the local disk, whatever store the warehouse is on
                file_io = FileIO.for_uri(name)
            return TableLocation(name, file_io.normalize(name), file_io)
        parts = name.split(".")
        if len(parts) == 1:
            parts = [DEFAULT_DATABASE, parts[0]]
        if len(parts) != 2 or not all(_NAME.match(p) for p in parts):
            raise UsageError(f"table name {name!r} must be DB.TABLE (letters, digits, _ and -) or a path")
        db, table = parts
        check_name_length("database", db)
        check_name_length("table", table)
        return TableLocation(f"{db}.{table}", join(self.uri, f"{db}.db", table), self.file_io)

    def database_path(self, db: str) -> str:
        if not _NAME.match(db):
            raise UsageError(f"database name {db!r} may hold only letters, digits, _ and -")
        check_name_length("database", db)
        return join(self.uri, f"{db}.db")

    def databases(self) -> list[str]:
        """The databases; a warehouse that does not exist is an error, not an empty list (a
        typo in a cron job's -w must not read as "nothing there"). On an object store the
        warehouse exists once anything is stored under it."""
        self.file_io.refuse_file_in_the_way(self.uri)
        if not self.file_io.exists(self.uri):
            raise NotFoundError(f"warehouse {self.uri} does not exist")
        return sorted(n[:-3] for n in self.file_io.list_names(self.uri) if n.endswith(".db"))

    def tables(self, db: str) -> list[str]:
        path = self.database_path(db)
        self.file_io.refuse_file_in_the_way(path)
        if not self.file_io.exists(path):
            raise NotFoundError(f"database {db} does not exist in {self.uri}")
        out = []
        for name in self.file_io.list_names(path):
            if name.startswith("."):
                continue  # work in progress: a clone being built, a table being dropped
            # schema files, not only a schema/ prefix: some stores (SeaweedFS) keep an
            # emptied prefix as a directory after a drop deleted every object in it
            if self.file_io.list_numbered(join(path, name, "schema"), "schema-"):
                out.append(name)
        return sorted(out)
