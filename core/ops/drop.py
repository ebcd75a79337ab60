"""Drop a table or a database: remove its directory and every file in it, as Paimon's
filesystem catalog does. Nothing is kept for time travel; this cannot be undone.

Safety: only a directory with a ``schema/`` holding schema files is dropped as a table, so a
mistyped name or path cannot delete an arbitrary directory; or one holding a rename's marker
(``RENAMING``/``RENAMED``, ``core/renaming.py``): the partial copy or the leftover of a rename
on an object store that stopped half-way.

Crash safety: on local disk the table's directory is first renamed (atomically) to a hidden
``.NAME.dropping-UUID`` next to it, so the table disappears at once and whole; the files are
deleted after (a drop that dies in between leaves that hidden directory, which ``list`` does
not show and the next ``drop`` of the same name deletes). On an object store, where there is no rename, the files are deleted with the
``schema/`` files last: a drop that dies half-way leaves a (damaged) table that a second
``drop`` finishes, never an unrecognisable directory that ``drop`` would refuse.

Through a catalog with a registry (JDBC) the files go first and the table's row after, so a
drop that dies in between leaves a registered name without files: every command says so, and
the same ``drop`` run again removes the row. A directory the registry does not name is not
dropped by name (it may be another catalog's table); by its path it is.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.busy import closing, is_marker
from core.errors import DatabaseNotEmptyError, LakectlError, NotFoundError, UsageError
from core.fileio import FileIO, FileStatus, join
from core.renaming import MARKERS, marker_names
from core.table_handle import TableHandle

if TYPE_CHECKING:
    from core.catalog.base import Catalog
    from core.warehouse import Warehouse

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DropTableResult:
    table: str
    path: str
    existed: bool  # False: --if-exists on a missing table, nothing done
    files_deleted: int  # or that would be, on a dry run
    bytes_deleted: int
    dry_run: bool


@dataclass(frozen=True, slots=True)
class DropDatabaseResult:
    database: str
    path: str
    existed: bool
    tables: tuple[str, ...]  # tables dropped (or to drop) with the database
    files_deleted: int
    bytes_deleted: int
    dry_run: bool


def drop_table(table: TableHandle, *, if_exists: bool = False, dry_run: bool = False) -> DropTableResult:
    """Remove the table's directory and all its files.

    Raises:
        NotFoundError: nothing at the table's path (unless ``if_exists``).
        UsageError: the path exists but holds no Paimon schema; nothing is deleted.
    """
    catalog = table.location.catalog
    if catalog is not None and catalog.server_owns_chain:
        return _drop_on_server(table, if_exists=if_exists, dry_run=dry_run)
    io = table.file_io
    if io.local and not dry_run:
        _finish_crashed_drops(io, table.path)
    if catalog is not None:
        registered = catalog.is_registered(table.location)
        if not registered and table.exists():
            catalog.check_registered(table.location, has_files=True)  # says why it is not dropped
        if registered and not table.exists() and not io.walk(table.path):
            # An interrupted drop (or create): the row alone is left.
            if not dry_run:
                catalog.unregister_table(table.location)
            return DropTableResult(table.name, table.path, True, 0, 0, dry_run)
    leftover = False
    if not table.exists():
        # files, not empty directories (an object store may keep those); a rename's marker
        # (core/renaming.py) makes the rest a rename's partial copy or leftover, safe to drop
        if io.walk(table.path):
            if not marker_names(io, table.path):
                raise UsageError(f"{table.path} is not a Paimon table (no schema files in schema/); "
                                 "refusing to delete it")
            leftover = True
        elif if_exists:
            return DropTableResult(table.name, table.path, False, 0, 0, dry_run)
        else:
            raise NotFoundError(f"table {table.name} does not exist (looked in {table.path})")
    if dry_run:
        files = io.walk(table.path)
        return DropTableResult(table.name, table.path, True, len(files), sum(f.size for f in files), dry_run)
    options = {} if leftover else _options_if_readable(table)
    # Once no command of several steps is at work on it (core/busy.py).
    with closing(io, table.path, table.name, f"drop {table.name}"):
        # The table's files; the markers of commands (ours among them) go with the directory.
        files = [f for f in io.walk(table.path) if not _command_marker(table.path, f.path)]
        _remove_table_dir(io, table.path, files)
    if any(k.startswith("metadata.iceberg") for k in options):
        from core import iceberg

        iceberg.after_drop(io, table.path, options)
    if catalog is not None:
        catalog.unregister_table(table.location)  # after the files: see the module's docstring
    result = DropTableResult(table.name, table.path, True, len(files), sum(f.size for f in files), dry_run)
    log.info("dropped %s %s (%d files)", "the rename leftover" if leftover else "table", table.name, len(files))
    return result


def _drop_on_server(table: TableHandle, *, if_exists: bool, dry_run: bool) -> DropTableResult:
    """A REST table: the server's dropTable alone. The server owns the table's files (it keeps
    or deletes them as its own policy says), so lakectl deletes none and counts none."""
    if not table.location.placed:
        if if_exists:
            return DropTableResult(table.name, table.path, False, 0, 0, dry_run)
        raise NotFoundError(f"table {table.name} does not exist in the REST catalog")
    assert table.location.catalog is not None
    if not dry_run:
        table.location.catalog.unregister_table(table.location)
    return DropTableResult(table.name, table.path, True, 0, 0, dry_run)


def _options_if_readable(table: TableHandle) -> dict[str, str]:
    """The table's options, or none when its schema cannot be read: a drop deletes a damaged
    table all the same (only a hadoop-catalog Iceberg directory is then left behind)."""
    try:
        return dict(table.schema.options)
    except LakectlError:
        return {}


def _remove_table_dir(io: FileIO, path: str, files: list[FileStatus]) -> None:
    if io.local:
        parent, prefix = _tombstone_prefix(path)
        tombstone = join(parent, f"{prefix}{uuid.uuid4().hex[:12]}")
        try:
            io.rename_dir(path, tombstone)  # the table is gone from here on, whole
        except FileNotFoundError:  # dropped or renamed by another command since we looked
            raise NotFoundError(f"table at {path} no longer exists (dropped or renamed meanwhile); "
                                "nothing was dropped") from None
        io.delete_tree(tombstone)
        return
    schema_prefix = join(path, "schema") + "/"
    markers = {join(path, name) for name in MARKERS}
    # Schema files last: until they go, this is still a table a second drop may finish; a
    # rename's marker after them, so that a rename's leftover stays one until its end. The
    # drop's own closing marker goes with the directory, last, so that no command of several
    # steps starts meanwhile.
    for f in sorted(files, key=lambda f: (f.path in markers, f.path.startswith(schema_prefix))):
        io.delete(f.path)
    io.delete_tree(path)  # directory markers some stores keep (SeaweedFS shows the emptied prefix)


def _command_marker(table_path: str, path: str) -> bool:
    """Is ``path`` a busy or closing marker at the top of the table directory (core/busy.py)?"""
    parent, name = path.split("://", 1)[-1].rsplit("/", 1)
    return is_marker(name) and parent == table_path.split("://", 1)[-1].rstrip("/")


def _tombstone_prefix(path: str) -> tuple[str, str]:
    parent, name = path.rsplit("/", 1)
    return parent, f".{name}.dropping-"


def _finish_crashed_drops(io: FileIO, path: str) -> None:
    """Delete what a drop of this table that died after its rename left behind."""
    parent, prefix = _tombstone_prefix(path)
    for name in io.list_names(parent):
        if name.startswith(prefix):
            log.info("deleting %s, left by an interrupted drop", join(parent, name))
            io.delete_tree(join(parent, name))


def drop_database(catalog: Catalog | Warehouse, database: str, *, cascade: bool = False, if_exists: bool = False,
                  dry_run: bool = False) -> DropDatabaseResult:
    """Remove ``DATABASE.db`` with everything in it, then the database's registry rows (a
    catalog with a registry): each table as ``drop_table`` does, files before rows.

    Raises:
        NotFoundError: no such database (unless ``if_exists``).
        DatabaseNotEmptyError: it holds tables and ``cascade`` is not given; nothing is deleted.
    """
    from core.catalog.filesystem import as_catalog

    catalog = as_catalog(catalog)
    if catalog.server_owns_chain:
        return _drop_database_on_server(catalog, database, cascade=cascade, if_exists=if_exists, dry_run=dry_run)
    path = catalog.database_path(database)
    io = catalog.file_io
    tables = _tables_to_drop(catalog, database, cascade=cascade, if_exists=if_exists)
    if tables is None:
        return DropDatabaseResult(database, path, False, (), 0, 0, dry_run)
    files = io.walk(path) if io.exists(path) else []
    # Through a registry, a table directory the catalog does not name is another catalog's (or
    # a rename's): it stays, and so does the database directory holding it.
    kept = _unregistered_tables(catalog, database, tables)
    files = [f for f in files if not any(f.path.startswith(k + "/") for k in kept)]
    result = DropDatabaseResult(database, path, True, tables, len(files), sum(f.size for f in files), dry_run)
    if dry_run:
        return result
    # Each table as drop does (whole, schema last), then whatever else the directory holds.
    for name in tables:
        drop_table(TableHandle(catalog.locate(f"{database}.{name}")))
    if kept:
        for f in io.walk(path):
            if not any(f.path.startswith(k + "/") for k in kept):
                io.delete(f.path)
        log.warning("kept %s: tables the catalog does not register", ", ".join(kept))
    else:
        if not io.local:  # file by file: an object store's recursive delete is a batch call with no fault hook
            for f in io.walk(path):
                io.delete(f.path)
        io.delete_tree(path)
    catalog.drop_database(database)  # the registry's rows, after the files
    log.info("dropped database %s (%d tables)", database, len(tables))
    return result


def _drop_database_on_server(catalog: Catalog, database: str, *, cascade: bool, if_exists: bool,
                             dry_run: bool) -> DropDatabaseResult:
    """A REST catalog's database: each table's dropTable, then dropDatabase (the server owns
    the files, as for one table)."""
    where = f"{catalog.warehouse_uri}"
    tables = _tables_to_drop(catalog, database, cascade=cascade, if_exists=if_exists)
    if tables is None:
        return DropDatabaseResult(database, where, False, (), 0, 0, dry_run)
    if not dry_run:
        for name in tables:
            catalog.unregister_table(catalog.locate(f"{database}.{name}"))
        catalog.drop_database(database)
    return DropDatabaseResult(database, where, True, tables, 0, 0, dry_run)


def _tables_to_drop(catalog: Catalog, database: str, *, cascade: bool, if_exists: bool) -> tuple[str, ...] | None:
    """The tables dropping ``database`` drops; None when it does not exist and ``if_exists``.

    Raises:
        NotFoundError: no such database (unless ``if_exists``).
        DatabaseNotEmptyError: it holds tables and ``cascade`` is not given.
    """
    if not catalog.database_exists(database):
        if if_exists:
            return None
        where = f"the REST catalog at {catalog.warehouse_uri}" if catalog.server_owns_chain else catalog.warehouse_uri
        raise NotFoundError(f"database {database} does not exist in {where}")
    tables = tuple(catalog.tables(database))
    if tables and not cascade:
        shown = ", ".join(tables[:10]) + (f" and {len(tables) - 10} more" if len(tables) > 10 else "")
        raise DatabaseNotEmptyError(f"database {database} still holds {len(tables)} table(s): {shown}; "
                                    "drop them first or pass --cascade")
    return tables


def _unregistered_tables(catalog: Catalog, database: str, registered: tuple[str, ...]) -> list[str]:
    """The paths of table directories in ``database`` that a catalog with a registry does not
    name (none on the filesystem catalog, whose directories are its registry)."""
    if not catalog.has_registry:
        return []
    from core.warehouse import Warehouse

    path = catalog.database_path(database)
    if not catalog.file_io.exists(path):
        return []
    on_disk = Warehouse(catalog.warehouse_uri, catalog.file_io).tables(database)
    return [join(path, name) for name in on_disk if name not in registered]


__all__ = ["DropDatabaseResult", "DropTableResult", "drop_database", "drop_table"]
