"""The JDBC catalog (Paimon's ``metastore=jdbc``): tables registered as rows of a relational
database, their files in a filesystem warehouse at ``<warehouse>/<db>.db/<table>``, as Java's
``org.apache.paimon.jdbc.JdbcCatalog`` (since 0.8) and pypaimon 2.x's ``JdbcCatalog`` keep them.

The registry is Paimon's own tables, created when absent with Java's DDL (``JdbcUtils``):

* ``paimon_tables (catalog_key, database_name, table_name)``: one row per table;
* ``paimon_database_properties (catalog_key, database_name, property_key, property_value)``: a
  database made by ``create database`` holds ``exists=true`` and ``location``; a database also
  exists while ``paimon_tables`` names it;
* ``paimon_table_properties (catalog_key, database_name, table_name, property_key,
  property_value)``: kept in step on drop and rename (Java fills it only with
  ``sync-all-properties``; lakectl never does);
* ``paimon_distributed_locks`` belongs to the lock (``core.catalog.jdbc_lock``), created there
  when ``lock.enabled``.

``catalog-key`` (default ``jdbc``, as Java's ``JdbcCatalogOptions.CATALOG_KEY``) lets several
catalogs share one database. ``uri`` is the JDBC URL: ``jdbc:sqlite:/path/file.db`` is opened
with Python's sqlite3 (no server), ``jdbc:postgresql://host:port/db`` with psycopg (imported
only then); ``jdbc.user``/``jdbc.password`` and other ``jdbc.*`` keys are the connection's
properties, as Java hands them to its driver.

The order of create, drop and rename, and why a crash leaves nothing a rerun cannot finish, is
in docs/architecture.md ("Catalogs"): files first, then the registry row; a reader is told
clearly about a directory without a row or a row without files (``check_registered``).
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence
from urllib.parse import parse_qs, unquote, urlparse

from core.catalog.base import Catalog, CatalogConfig, OverWarehouse, PublishByCreate
from core.errors import CatalogError, NotFoundError, TableExistsError, UsageError
from core.warehouse import TableLocation, Warehouse, looks_like_path

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from core.catalog.jdbc_lock import JdbcLock

    from core.snapshot import Snapshot, SnapshotManager

log = logging.getLogger(__name__)

DEFAULT_CATALOG_KEY = "jdbc"  # Java's JdbcCatalogOptions.CATALOG_KEY default
DATABASE_EXISTS_PROPERTY = "exists"
DB_LOCATION_PROP = "location"

# Java's JdbcUtils DDL, column for column.
CREATE_CATALOG_TABLE = (
    "CREATE TABLE paimon_tables("
    "catalog_key VARCHAR(255) NOT NULL,"
    "database_name VARCHAR(255) NOT NULL,"
    "table_name VARCHAR(255) NOT NULL,"
    " PRIMARY KEY (catalog_key, database_name, table_name))")
CREATE_DATABASE_PROPERTIES_TABLE = (
    "CREATE TABLE paimon_database_properties("
    "catalog_key VARCHAR(255) NOT NULL,"
    "database_name VARCHAR(255) NOT NULL,"
    "property_key VARCHAR(255),"
    "property_value VARCHAR(1000),"
    "PRIMARY KEY (catalog_key, database_name, property_key))")
CREATE_TABLE_PROPERTIES_TABLE = (
    "CREATE TABLE paimon_table_properties("
    "catalog_key VARCHAR(255) NOT NULL,"
    "database_name VARCHAR(255) NOT NULL,"
    "table_name VARCHAR(255) NOT NULL,"
    "property_key VARCHAR(255) NOT NULL,"
    "property_value VARCHAR(1000),"
    "PRIMARY KEY (catalog_key, database_name, table_name, property_key))")
_REGISTRY_TABLES = (("paimon_tables", CREATE_CATALOG_TABLE),
                    ("paimon_database_properties", CREATE_DATABASE_PROPERTIES_TABLE),
                    ("paimon_table_properties", CREATE_TABLE_PROPERTIES_TABLE))


# ---- connections ----------------------------------------------------------------------------
def shown_uri(uri: str) -> str:
    """The uri for messages: a password in its query string masked."""
    head, sep, query = uri.partition("?")
    if not sep:
        return uri
    parts = [p if not p.lower().startswith(("password=", "pass=")) else p.split("=", 1)[0] + "=****"
             for p in query.split("&")]
    return head + "?" + "&".join(parts)


def connect(uri: str, options: dict[str, str]) -> tuple[Any, str]:
    """A new DB-API connection for ``uri`` and its parameter placeholder (``?`` or ``%s``).

    Raises:
        UsageError: a uri lakectl cannot open (another database kind, a malformed one), or
            PostgreSQL without psycopg installed.
        CatalogError: the database cannot be opened or reached.
    """
    if uri.startswith("jdbc:sqlite:"):
        import sqlite3

        target = uri[len("jdbc:sqlite:"):]
        if not target:
            raise UsageError(f"catalog uri {uri!r} names no SQLite file (jdbc:sqlite:/path/catalog.db)")
        try:
            if target.startswith("file:"):
                conn = sqlite3.connect(target, uri=True, check_same_thread=False, timeout=30)
            else:
                conn = sqlite3.connect(target, check_same_thread=False, timeout=30)
        except sqlite3.Error as e:
            raise CatalogError(f"catalog {uri}: cannot open the SQLite database ({e})") from None
        return conn, "?"
    if uri.startswith("jdbc:postgresql:"):
        try:
            import psycopg  # type: ignore[import-not-found]
        except ImportError:
            raise UsageError(f"catalog {shown_uri(uri)}: PostgreSQL catalogs need psycopg "
                             "(pip install 'psycopg[binary]')") from None
        try:
            conn = psycopg.connect(**_postgres_params(uri, options))
        except psycopg.Error as e:
            raise CatalogError(f"catalog {shown_uri(uri)}: cannot connect ({_first_line(e)})") from None
        return conn, "%s"
    kind = uri.split(":")[1] if uri.startswith("jdbc:") and uri.count(":") >= 2 else None
    if kind:
        raise UsageError(f"catalog uri {shown_uri(uri)}: lakectl speaks jdbc:sqlite: and jdbc:postgresql:, "
                         f"not jdbc:{kind}:")
    raise UsageError(f"catalog uri {shown_uri(uri)!r} is not a JDBC URL (jdbc:sqlite:/path/catalog.db or "
                     "jdbc:postgresql://host:port/database)")


def _postgres_params(uri: str, options: dict[str, str]) -> dict[str, Any]:
    """``jdbc:postgresql://host:port/db?k=v`` and the ``jdbc.*`` keys -> psycopg's keywords
    (``user``, ``password`` and the rest as libpq parameters, the uri's query over the keys)."""
    parsed = urlparse(uri[len("jdbc:"):])
    props = {k[len("jdbc."):]: v for k, v in options.items() if k.startswith("jdbc.") and len(k) > 5}
    props.update({k: v[-1] for k, v in parse_qs(parsed.query).items()})
    params: dict[str, Any] = {"host": parsed.hostname or "localhost", "port": parsed.port or 5432,
                              "dbname": unquote(parsed.path.lstrip("/")) or props.pop("database", "") or "postgres"}
    user = props.pop("user", props.pop("username", None))
    if user:
        params["user"] = user
    password = props.pop("password", None)
    if password:
        params["password"] = password
    props.pop("database", None)
    params.update(props)
    return params


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


class Registry:
    """One connection to the catalog database, shared by the threads of this process (a lock
    around each statement), with the placeholder of its driver."""

    def __init__(self, uri: str, options: dict[str, str]) -> None:
        self.uri = uri
        self.options = options
        self._conn, self._placeholder = connect(uri, options)
        self._lock = threading.RLock()
        self.kind = "sqlite" if uri.startswith("jdbc:sqlite:") else "postgresql"

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _sql(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    def _fail(self, e: BaseException, what: str) -> CatalogError:
        return CatalogError(f"catalog {shown_uri(self.uri)}: {what} failed ({_first_line(e)})")

    def query(self, sql: str, args: Sequence[str] = ()) -> list[tuple]:
        with self._lock:
            try:
                cur = self._conn.cursor()
                try:
                    cur.execute(self._sql(sql), tuple(args))
                    rows = cur.fetchall()
                finally:
                    cur.close()
                self._conn.commit()  # ends the read transaction (PostgreSQL opens one per statement)
                return rows
            except Exception as e:  # noqa: BLE001 - the driver's error, said in lakectl's words
                self._rollback()
                if isinstance(e, CatalogError):
                    raise
                raise self._fail(e, "a query") from None

    @contextmanager
    def transaction(self) -> Iterator[Callable[[str, Sequence[str]], int]]:
        """Statements run through the yielded function commit together (or none do); an
        integrity violation (a primary key taken) is raised as TableExistsError's cause
        ``IntegrityViolation``."""
        with self._lock:
            cur = self._conn.cursor()

            def execute(sql: str, args: Sequence[str] = ()) -> int:
                cur.execute(self._sql(sql), tuple(args))
                return cur.rowcount

            try:
                yield execute
                self._conn.commit()
            except Exception as e:
                self._rollback()
                if _integrity(e):
                    raise IntegrityViolation(_first_line(e)) from None
                if isinstance(e, (CatalogError, UsageError, NotFoundError, TableExistsError)):
                    raise
                raise self._fail(e, "an update") from None
            finally:
                cur.close()

    def _rollback(self) -> None:
        try:
            self._conn.rollback()
        except Exception:  # noqa: BLE001 - the connection is broken: the error before says why
            log.debug("rollback of the catalog connection failed", exc_info=True)

    def table_exists(self, name: str) -> bool:
        if self.kind == "sqlite":
            sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?"
        else:  # as JDBC's DatabaseMetaData.getTables: any schema on the search path
            sql = "SELECT tablename FROM pg_catalog.pg_tables WHERE tablename = ?"
        return bool(self.query(sql, (name,)))


class IntegrityViolation(Exception):
    """A row whose primary key was taken (another process registered the same name first)."""


def _integrity(e: BaseException) -> bool:
    name = type(e).__name__
    return name in ("IntegrityError", "UniqueViolation") or "constraint failed" in str(e) or \
        getattr(e, "sqlstate", None) == "23505"


# ---- the catalog ----------------------------------------------------------------------------
class JdbcCatalog(OverWarehouse, Catalog):
    kind = "jdbc"
    has_registry = True

    def __init__(self, config: CatalogConfig) -> None:
        self.config = config
        uri = config.option("uri")
        if not uri:
            raise UsageError("metastore jdbc needs the catalog key uri (jdbc:sqlite:/path/catalog.db or "
                             "jdbc:postgresql://host:port/database)")
        if not config.warehouse:
            raise UsageError("metastore jdbc needs a warehouse (the catalog key warehouse, or -w PATH)")
        self.uri = uri
        self.catalog_key = config.option("catalog-key", DEFAULT_CATALOG_KEY) or DEFAULT_CATALOG_KEY
        self.warehouse = Warehouse.open(config.warehouse, config.storage_options)
        # Java's default (AbstractCatalog.lockEnabled): on when the warehouse is an object store,
        # so lakectl takes the lock wherever Java writers of the same catalog do.
        self.lock_enabled = config.flag("lock.enabled", not self.warehouse.file_io.local)
        self.registry = Registry(uri, config.options)
        self._lock: JdbcLock | None = None
        try:
            self._create_registry_tables()
            if self.lock_enabled:
                self._open_lock()
        except BaseException:
            self.registry.close()
            raise

    def _open_lock(self) -> None:
        """``paimon_distributed_locks``, created when the catalog opens as Java creates it; on
        SQLite the database is switched to WAL (stored in the file), without which a Java 1.0
        writer that opened the catalog blocks every other writer of the file, and cannot
        commit under its own lock (docs/jdbc-catalog.md)."""
        from core.catalog.jdbc_lock import JdbcLock

        lock_type = self.config.option("lock.type")
        if lock_type is not None and lock_type.strip().lower() != "jdbc":
            # Java would take that factory's lock (hive, zookeeper): lakectl cannot, and a commit
            # under another lock than its Java writers' serialises with nothing.
            raise UsageError(f"catalog option lock.type={lock_type!r}: lakectl takes only the JDBC catalog's own "
                             "lock (lock.type unset or jdbc)")
        self._lock = JdbcLock.from_options(self.connection_factory, self.config.options)
        if self.uri.startswith("jdbc:sqlite:"):
            connection = self.connection_factory()
            try:
                connection.execute("PRAGMA journal_mode=WAL").fetchall()
            except Exception as e:  # noqa: BLE001 - a file WAL cannot live on: the rollback journal stays
                log.warning("catalog %s: could not switch SQLite to WAL (%s)", self.uri, e)
            finally:
                connection.close()
        self._lock.create_table()

    @property
    def lock(self) -> "JdbcLock":
        """The table lock of a catalog with ``lock.enabled``."""
        assert self._lock is not None, "the lock of a catalog without lock.enabled"
        return self._lock

    def _create_registry_tables(self) -> None:
        """Paimon's tables, each created when absent with Java's statement (two processes
        creating one at once: the loser finds it there)."""
        for name, ddl in _REGISTRY_TABLES:
            if self.registry.table_exists(name):
                continue
            try:
                with self.registry.transaction() as execute:
                    execute(ddl, ())
            except (CatalogError, IntegrityViolation):
                if not self.registry.table_exists(name):
                    raise

    def close(self) -> None:
        self.registry.close()

    def __repr__(self) -> str:
        return f"JdbcCatalog({shown_uri(self.uri)}, catalog-key {self.catalog_key})"

    @property
    def description(self) -> str:
        return f"catalog {shown_uri(self.uri)}" + \
            (f" (catalog-key {self.catalog_key})" if self.catalog_key != DEFAULT_CATALOG_KEY else "")

    # ---- where tables live ------------------------------------------------------------------
    def locate(self, name: str) -> TableLocation:
        location = self.warehouse.locate(name)
        if looks_like_path(name):
            return location  # a path bypasses the registry: the filesystem catalog's table
        return TableLocation(location.name, location.path, location.file_io, self)

    # ---- the registry -----------------------------------------------------------------------
    def databases(self) -> list[str]:
        rows = self.registry.query("SELECT DISTINCT database_name FROM paimon_tables WHERE catalog_key = ?",
                                   (self.catalog_key,))
        rows += self.registry.query(
            "SELECT DISTINCT database_name FROM paimon_database_properties WHERE catalog_key = ?",
            (self.catalog_key,))
        return sorted({r[0] for r in rows})

    def database_exists(self, db: str) -> bool:
        if self.registry.query("SELECT database_name FROM paimon_tables WHERE catalog_key = ? AND "
                               "database_name = ? LIMIT 1", (self.catalog_key, db)):
            return True
        return bool(self.registry.query("SELECT database_name FROM paimon_database_properties WHERE "
                                        "catalog_key = ? AND database_name = ? ", (self.catalog_key, db)))

    def tables(self, db: str) -> list[str]:
        if not self.database_exists(db):
            raise NotFoundError(f"database {db} does not exist in {self.description}")
        rows = self.registry.query("SELECT table_name FROM paimon_tables WHERE catalog_key = ? AND "
                                   "database_name = ?", (self.catalog_key, db))
        return sorted(r[0] for r in rows)

    def is_registered(self, location: TableLocation) -> bool:
        db, table = _identifier(location)
        return bool(self.registry.query(
            "SELECT table_name FROM paimon_tables WHERE catalog_key = ? AND database_name = ? AND table_name = ? ",
            (self.catalog_key, db, table)))

    def create_database(self, db: str, *, properties: dict[str, str] | None = None,
                        if_not_exists: bool = False) -> None:
        self.warehouse.database_path(db)  # the name's rules
        if self.database_exists(db):
            if if_not_exists:
                return
            raise TableExistsError(f"database {db} already exists in {self.description}")
        try:
            with self.registry.transaction() as execute:
                self._insert_database(execute, db, properties)
        except IntegrityViolation:
            if not if_not_exists:
                raise TableExistsError(f"database {db} already exists in {self.description}") from None

    def _insert_database(self, execute: Callable[[str, Sequence[str]], int], db: str,
                         properties: dict[str, str] | None) -> None:
        """Java's createDatabaseImpl: ``exists=true``, the properties, ``location`` unless given."""
        props = {DATABASE_EXISTS_PROPERTY: "true", **(properties or {})}
        props.setdefault(DB_LOCATION_PROP, self.warehouse.database_path(db))
        for key, value in props.items():
            execute("INSERT INTO paimon_database_properties (catalog_key, database_name, property_key, "
                    "property_value) VALUES (?,?,?,?)", (self.catalog_key, db, key, value))

    def drop_database(self, db: str) -> None:
        """The registry rows of ``db`` (its tables', its properties'), as Java's dropDatabaseImpl;
        ``core.ops.drop.drop_database`` has removed the files first."""
        with self.registry.transaction() as execute:
            execute("DELETE FROM  paimon_tables WHERE catalog_key = ? AND database_name = ?", (self.catalog_key, db))
            execute("DELETE FROM paimon_database_properties WHERE catalog_key = ? AND database_name = ?",
                    (self.catalog_key, db))
            execute("DELETE FROM paimon_table_properties WHERE catalog_key = ? AND database_name = ?",
                    (self.catalog_key, db))

    def register_table(self, location: TableLocation) -> None:
        """The table's row (and its database's, when the database is not registered yet: lakectl
        creates a database with its first table, on every catalog). Already registered: nothing.

        Raises:
            TableExistsError: another process registered the name meanwhile (its create won).
        """
        db, table = _identifier(location)
        if self.is_registered(location):
            return
        new_database = not self.database_exists(db)
        try:
            with self.registry.transaction() as execute:
                if new_database:
                    self._insert_database(execute, db, None)
                execute("INSERT INTO paimon_tables (catalog_key, database_name, table_name)  VALUES (?,?,?)",
                        (self.catalog_key, db, table))
        except IntegrityViolation:
            if not self.is_registered(location):
                raise
        log.info("registered %s in %s", location.name, self.description)

    def unregister_table(self, location: TableLocation) -> None:
        db, table = _identifier(location)
        with self.registry.transaction() as execute:
            execute("DELETE FROM paimon_tables WHERE catalog_key = ? AND database_name = ? AND table_name = ? ",
                    (self.catalog_key, db, table))
            execute("DELETE FROM paimon_table_properties WHERE catalog_key = ? AND database_name = ? AND "
                    "table_name = ?", (self.catalog_key, db, table))
        log.info("unregistered %s from %s", location.name, self.description)

    def rename_table(self, old: TableLocation, new: TableLocation) -> None:
        """Java's updateTable: the row (and its properties) take the new name.

        Raises:
            TableExistsError: the new name is registered.
            NotFoundError: the old name is not registered.
        """
        (old_db, old_table), (new_db, new_table) = _identifier(old), _identifier(new)
        new_database = not self.database_exists(new_db)
        try:
            with self.registry.transaction() as execute:
                if new_database:
                    self._insert_database(execute, new_db, None)
                updated = execute("UPDATE paimon_tables SET database_name = ? , table_name = ?  WHERE catalog_key = ? "
                                  "AND database_name = ? AND table_name = ? ",
                                  (new_db, new_table, self.catalog_key, old_db, old_table))
                if updated == 0:
                    raise NotFoundError(f"table {old.name} is not registered in {self.description}")
                execute("UPDATE paimon_table_properties SET database_name = ? , table_name = ?  WHERE "
                        "catalog_key = ? AND database_name = ? AND table_name = ? ",
                        (new_db, new_table, self.catalog_key, old_db, old_table))
        except IntegrityViolation:
            raise TableExistsError(f"{new.name} is already registered in {self.description}") from None

    def check_registered(self, location: TableLocation, *, has_files: bool) -> None:
        registered = self.is_registered(location)
        if registered and not has_files:
            raise NotFoundError(
                f"table {location.name} is registered in {self.description} but {location.path} holds no "
                f"schema files (an interrupted create or drop: rerun it, or `lakectl drop {location.name}` "
                "removes the entry)")
        if not registered and has_files:
            raise NotFoundError(
                f"table {location.name} is not registered in {self.description}, though {location.path} holds a "
                "table (an interrupted create or rename: rerun it; or a table of another catalog, which a "
                "command reaches by its path)")

    # ---- commits ----------------------------------------------------------------------------
    def snapshot_commit(self, location: TableLocation) -> "PublishByCreate | LockedCommit":
        if not self.lock_enabled:
            return PublishByCreate()
        return LockedCommit(self, _identifier(location))

    def connection_factory(self) -> Any:
        """A new DB-API connection to the catalog database (the lock keeps its own)."""
        return connect(self.uri, self.config.options)[0]


class LockedCommit:
    """``lock.enabled``: a snapshot is published, and a chain rewritten, while this process
    holds the table's row in ``paimon_distributed_locks``, as Java's commit does under its
    catalog lock (``core.catalog.jdbc_lock``)."""

    def __init__(self, catalog: JdbcCatalog, identifier: tuple[str, str]) -> None:
        self.catalog = catalog
        self.database, self.table = identifier

    def _held(self) -> "AbstractContextManager[Any]":
        # Paimon's paimon_distributed_locks row of <catalog-key>.<db>.<table>, as Java takes it
        # around its commit (core/catalog/jdbc_lock.py, docs/jdbc-catalog.md).
        return self.catalog.lock.hold(self.database, self.table)

    def publish(self, snapshots: "SnapshotManager", snapshot: "Snapshot", *, make_dirs: bool) -> bool:
        with self._held():
            # Java's RenamingSnapshotCommit under the lock: the file must not exist, then it is written.
            return snapshots.try_publish(snapshot, make_dirs=make_dirs)

    @contextmanager
    def rewriting_chain(self, what: str) -> Iterator[None]:
        with self._held():
            yield


def _identifier(location: TableLocation) -> tuple[str, str]:
    identifier = location.identifier
    if identifier is None:
        raise UsageError(f"{location.name} is a path; the catalog registers tables by DB.TABLE name")
    return identifier


__all__ = ["DEFAULT_CATALOG_KEY", "JdbcCatalog", "LockedCommit", "connect"]
