"""Paimon's JDBC catalog lock: one row per table in ``paimon_distributed_locks``, taken and
released exactly as Java Paimon's ``JdbcCatalogLock`` does, so that lakectl and Java writers
configured with ``lock.enabled`` on the same catalog serialise their commits.

The facts this module reproduces (table DDL, lock id, the expired-row delete and the insert of
each attempt, the stored expiry, the retry schedule, the release) are written down, with where
Java's source says them, in docs/jdbc-catalog.md. In short: the lock id is
``<catalog-key>.<database>.<table>``; an attempt deletes the id's row if it is older than the
expiry stored in it, then inserts the id's row (the primary key refuses a second holder); the
first attempt is immediate, the next ones follow sleeps of 100 ms, 200 ms, ... up to
``lock-check-max-sleep``, until ``lock-acquire-timeout`` has passed; the holder deletes its row.

The connection is any DB-API one: ``sqlite3`` (paramstyle ``?``) or psycopg 3 (``%s``), used in
autocommit as Java's JDBC connections are, one per ``hold``. The database clock decides
expiry (``CURRENT_TIMESTAMP`` in the row, ``now`` in the delete), never this process's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from core.errors import CatalogError, LakectlError, LockTimeoutError
from core.option_parsing import duration_millis

logger = logging.getLogger(__name__)

TABLE = "paimon_distributed_locks"
# Java's defaults (CatalogOptions.LOCK_ACQUIRE_TIMEOUT, LOCK_CHECK_MAX_SLEEP,
# JdbcCatalogOptions.LOCK_KEY_MAX_LENGTH).
DEFAULT_ACQUIRE_TIMEOUT = "8 min"
DEFAULT_CHECK_MAX_SLEEP = "8 s"
DEFAULT_LOCK_KEY_MAX_LENGTH = 255
DEFAULT_ACQUIRE_TIMEOUT_SECONDS = 480.0
DEFAULT_CHECK_MAX_SLEEP_SECONDS = 8.0
_FIRST_SLEEP_SECONDS = 0.05  # doubled before the first sleep: Java sleeps 100 ms first

_CREATE = (f"CREATE TABLE {TABLE}(lock_id VARCHAR(%d) NOT NULL,"
           "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,"
           "expire_time_seconds BIGINT DEFAULT 0 NOT NULL,PRIMARY KEY (lock_id))")
_ACQUIRE = f"INSERT INTO {TABLE} (lock_id,expire_time_seconds) VALUES (?,?)"
_RELEASE_OWN = f"DELETE FROM {TABLE} WHERE lock_id = ? AND acquired_at = ?"
_HOLDER = f"SELECT acquired_at, expire_time_seconds FROM {TABLE} WHERE lock_id = ?"
_RENEW = f"UPDATE {TABLE} SET acquired_at = CURRENT_TIMESTAMP WHERE lock_id = ? AND acquired_at = ?"
# Each dialect's "row older than its expiry" (Java's getTryReleaseTimedOutLock).
_EXPIRED = {
    "sqlite": "strftime('%s', 'now') - strftime('%s', acquired_at) > expire_time_seconds",
    "mysql": "TIMESTAMPDIFF(SECOND, acquired_at, NOW()) > expire_time_seconds",
    "postgresql": "EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > expire_time_seconds",
}
_EXISTS = {
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
    "mysql": "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?",
    "postgresql": "SELECT 1 WHERE to_regclass(?) IS NOT NULL",
}
_PARAMSTYLE = {"sqlite": "?", "mysql": "%s", "postgresql": "%s"}


@dataclass(frozen=True)
class LockHolder:
    """The row holding a lock id: when it was taken (the database's clock, as stored) and
    after how many seconds it may be taken over."""

    lock_id: str
    acquired_at: Any
    expire_seconds: int


def dialect_of(connection: Any) -> str:
    """``sqlite`` or ``postgresql`` from the DB-API connection's driver module."""
    module = type(connection).__module__
    if module.startswith("sqlite3"):
        return "sqlite"
    if module.startswith("psycopg"):
        return "postgresql"
    raise ValueError(f"no lock dialect for connections of {module}")


def _is_integrity_error(error: BaseException) -> bool:
    # DB-API names the class the same in every driver (sqlite3.IntegrityError,
    # psycopg.errors.UniqueViolation < psycopg.IntegrityError).
    return any(cls.__name__ == "IntegrityError" for cls in type(error).__mro__)


def _is_busy(error: BaseException, dialect: str) -> bool:
    # SQLite serialises writers: an attempt that meets another connection's write after the
    # busy timeout is not acquired (Java counts every insert error so), and is retried.
    return dialect == "sqlite" and "locked" in str(error).lower()


def _is_db_error(error: BaseException) -> bool:
    return any(cls.__name__ in ("DatabaseError", "InterfaceError") for cls in type(error).__mro__)


class JdbcLock:
    """Paimon's ``paimon_distributed_locks`` row lock for one catalog.

    Args:
        connect: opens a new DB-API connection to the catalog's database (sqlite3 or psycopg);
            each ``hold`` opens one and closes it.
        catalog_key: the catalog's ``catalog-key`` (Java's default ``jdbc``).
        acquire_timeout: seconds to keep trying (``lock-acquire-timeout``; Java's 8 min).
        check_max_sleep: the longest sleep between attempts, seconds (``lock-check-max-sleep``;
            Java's 8 s).
        expire_seconds: the expiry stored in the row; Java stores the acquire timeout in whole
            seconds, which is the default.
        dialect: ``sqlite``, ``postgresql`` or ``mysql``; by default from the connection's driver.
        lock_key_max_length: ``lock-key-max-length``, the ``VARCHAR`` length of ``lock_id``.
    """

    def __init__(self, connect: Callable[[], Any], catalog_key: str = "jdbc", *,
                 acquire_timeout: float = DEFAULT_ACQUIRE_TIMEOUT_SECONDS,
                 check_max_sleep: float = DEFAULT_CHECK_MAX_SLEEP_SECONDS, expire_seconds: int | None = None,
                 dialect: str | None = None,
                 lock_key_max_length: int = DEFAULT_LOCK_KEY_MAX_LENGTH,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self._connect = connect
        self.catalog_key = catalog_key
        self.acquire_timeout = acquire_timeout
        self.check_max_sleep = check_max_sleep
        self._expire_given = expire_seconds
        self.expire_seconds = int(acquire_timeout) if expire_seconds is None else expire_seconds
        self._dialect = dialect
        self._key_length = lock_key_max_length
        self._sleep = sleep
        self._clock = clock
        self._table_ready = False

    @classmethod
    def from_options(cls, connect: Callable[[], Any], options: dict[str, str], **kwargs: Any) -> "JdbcLock":
        """The lock a catalog's options describe, with Java's defaults: ``catalog-key``
        (``jdbc``), ``lock-acquire-timeout`` (8 min), ``lock-check-max-sleep`` (8 s),
        ``lock-key-max-length`` (255)."""
        timeout_ms = duration_millis(options.get("lock-acquire-timeout") or DEFAULT_ACQUIRE_TIMEOUT,
                                     "catalog option lock-acquire-timeout")
        sleep_ms = duration_millis(options.get("lock-check-max-sleep") or DEFAULT_CHECK_MAX_SLEEP,
                                   "catalog option lock-check-max-sleep")
        length = options.get("lock-key-max-length")
        return cls(connect, options.get("catalog-key") or "jdbc", acquire_timeout=timeout_ms / 1000,
                   check_max_sleep=sleep_ms / 1000, expire_seconds=timeout_ms // 1000,
                   lock_key_max_length=int(length) if length else DEFAULT_LOCK_KEY_MAX_LENGTH, **kwargs)

    def lock_id(self, database: str, table: str) -> str:
        """Java's ``<catalog-key>.<database>.<table>``."""
        return f"{self.catalog_key}.{database}.{table}"

    # ---- the table ------------------------------------------------------------------------
    def create_table(self) -> None:
        """Create ``paimon_distributed_locks`` unless it exists (Java does so when a catalog with
        the lock enabled opens); safe next to another process doing the same."""
        connection = self._open()
        try:
            self._create_table(connection)
        finally:
            connection.close()

    def _create_table(self, connection: Any) -> None:
        if self._table_ready:
            return
        dialect = self._dialect_for(connection)
        if not self._table_exists(connection, dialect):
            try:
                self._execute(connection, dialect, _CREATE % self._key_length)
            except Exception as error:
                # Another process created it between the check and the create.
                if not (_is_db_error(error) and self._table_exists(connection, dialect)):
                    raise self._database_error("create the lock table", error) from error
        self._table_ready = True

    def _table_exists(self, connection: Any, dialect: str) -> bool:
        return bool(self._fetch(connection, dialect, _EXISTS[dialect], (TABLE,)))

    # ---- hold -------------------------------------------------------------------------------
    @contextmanager
    def hold(self, database: str, table: str, acquire_timeout: float | None = None) -> Iterator[LockHolder]:
        """Hold the lock of ``database.table`` for the ``with`` block.

        Args:
            acquire_timeout: this hold's timeout in seconds instead of the lock's (and, unless
                the lock was given ``expire_seconds``, its whole seconds as the stored expiry,
                as Java stores its timeout).

        Yields:
            This holder's row (its ``acquired_at`` as the database stored it).

        Raises:
            LockTimeoutError: not acquired within ``acquire_timeout``; the message names the
                lock id and the row that held it.
            CatalogError: the database failed a statement (not a held lock).
        """
        lock_id = self.lock_id(database, table)
        held = _held_here()
        if lock_id in held:
            # This thread holds it already (a commit inside a chain rewrite): Java's lock is not
            # reentrant, but waiting here for our own row would only time out.
            held[lock_id][1] += 1
            try:
                yield held[lock_id][0].current
            finally:
                held[lock_id][1] -= 1
            return
        timeout = self.acquire_timeout if acquire_timeout is None else acquire_timeout
        expire = self._expire_given if self._expire_given is not None else (
            self.expire_seconds if acquire_timeout is None else int(acquire_timeout))
        connection = self._open()
        try:
            self._create_table(connection)
            renewal = _Renewal(self, self._acquire(connection, lock_id, timeout, expire))
            held[lock_id] = [renewal, 1]
            try:
                renewal.start()
                yield renewal.current
            finally:
                del held[lock_id]
                renewal.stop()
                self._release(connection, renewal.current)
        finally:
            connection.close()

    def holder(self, database: str, table: str) -> LockHolder | None:
        """The row holding ``database.table``'s lock now, or None."""
        connection = self._open()
        try:
            return self._holder(connection, self._dialect_for(connection), self.lock_id(database, table))
        finally:
            connection.close()

    def _acquire(self, connection: Any, lock_id: str, timeout: float, expire: int) -> LockHolder:
        # Java's JdbcCatalogLock.lock: try at once; then sleep (doubling from 100 ms, capped),
        # try, and stop once the time since the retries began exceeds the timeout.
        dialect = self._dialect_for(connection)
        mine = self._attempt(connection, dialect, lock_id, expire)
        next_sleep = _FIRST_SLEEP_SECONDS
        started = self._clock()
        while mine is None:
            next_sleep = min(next_sleep * 2, self.check_max_sleep)
            self._sleep(next_sleep)
            mine = self._attempt(connection, dialect, lock_id, expire)
            if mine is None and self._clock() - started > timeout:
                raise LockTimeoutError(self._timeout_message(connection, dialect, lock_id, self._clock() - started))
        logger.debug("took the JDBC catalog lock %s", lock_id)
        return mine

    def _attempt(self, connection: Any, dialect: str, lock_id: str, expire: int) -> LockHolder | None:
        try:
            self._execute(connection, dialect, f"DELETE FROM {TABLE} WHERE {_EXPIRED[dialect]} and lock_id = ?",
                          (lock_id,))
            self._execute(connection, dialect, _ACQUIRE, (lock_id, expire))
        except Exception as error:
            if _is_integrity_error(error) or _is_busy(error, dialect):
                return None
            if _is_db_error(error):
                raise self._database_error(f"take the lock {lock_id}", error) from error
            raise
        row = self._holder(connection, dialect, lock_id)
        if row is None:  # our row expired and was taken over at once: only with expiry 0
            return None
        return row

    def _release(self, connection: Any, mine: LockHolder) -> None:
        # Java deletes the id's row whoever holds it; lakectl deletes its own row only, so a
        # holder that overstayed its expiry does not free the lock of the one who took it over.
        # A failure here is logged, not raised: the locked work is done (a published snapshot
        # must not be reported as failed), and the row expires after expire_seconds.
        dialect = self._dialect_for(connection)
        try:
            deleted = self._execute(connection, dialect, _RELEASE_OWN, (mine.lock_id, mine.acquired_at))
        except Exception as error:
            if not _is_db_error(error):
                raise
            logger.warning("could not release the JDBC catalog lock %s (%s); it expires %d s after %s",
                           mine.lock_id, error, mine.expire_seconds, mine.acquired_at)
            return
        if deleted == 0:
            logger.warning("the JDBC catalog lock %s taken at %s had expired (after %d s) and was taken over "
                           "before it was released", mine.lock_id, mine.acquired_at, mine.expire_seconds)

    def _renew(self, connection: Any, mine: LockHolder) -> LockHolder | None:
        """Move our row's ``acquired_at`` to now; None if the row is no longer ours."""
        dialect = self._dialect_for(connection)
        if self._execute(connection, dialect, _RENEW, (mine.lock_id, mine.acquired_at)) == 0:
            return None
        return self._holder(connection, dialect, mine.lock_id)

    def _holder(self, connection: Any, dialect: str, lock_id: str) -> LockHolder | None:
        rows = self._fetch(connection, dialect, _HOLDER, (lock_id,))
        if not rows:
            return None
        acquired_at, expire = rows[0]
        return LockHolder(lock_id, acquired_at, int(expire))

    def _timeout_message(self, connection: Any, dialect: str, lock_id: str, waited: float) -> str:
        try:
            holder = self._holder(connection, dialect, lock_id)
        except Exception:  # the message is best effort; the timeout is the error
            logger.debug("could not read the holder of %s", lock_id, exc_info=True)
            holder = None
        held = (f"held since {holder.acquired_at} (database clock), which may be taken over after "
                f"{holder.expire_seconds} s" if holder is not None else "held by others throughout, free now")
        return (f"could not take the JDBC catalog lock {lock_id} within {waited:.1f} s "
                f"(lock-acquire-timeout): {held}; nothing was committed")

    # ---- DB-API plumbing --------------------------------------------------------------------
    def _open(self) -> Any:
        try:
            connection = self._connect()
        except Exception as error:
            if _is_db_error(error):
                raise self._database_error("connect", error) from error
            raise
        dialect = self._dialect_for(connection)
        if dialect == "sqlite":
            connection.isolation_level = None  # autocommit: each statement its own transaction
        else:
            connection.autocommit = True
        return connection

    def _dialect_for(self, connection: Any) -> str:
        if self._dialect is None:
            self._dialect = dialect_of(connection)
        return self._dialect

    @staticmethod
    def _sql(dialect: str, sql: str) -> str:
        # The statements are written with "?"; "%" in them (SQLite's strftime) is doubled
        # for the drivers whose paramstyle is "%s".
        if _PARAMSTYLE[dialect] == "?":
            return sql
        return sql.replace("%", "%%").replace("?", "%s")

    def _execute(self, connection: Any, dialect: str, sql: str, args: tuple = ()) -> int:
        cursor = connection.cursor()
        try:
            cursor.execute(self._sql(dialect, sql), args)
            return int(cursor.rowcount)
        finally:
            cursor.close()

    def _fetch(self, connection: Any, dialect: str, sql: str, args: tuple) -> list[tuple]:
        cursor = connection.cursor()
        try:
            cursor.execute(self._sql(dialect, sql), args)
            return list(cursor.fetchall())
        finally:
            cursor.close()

    @staticmethod
    def _database_error(what: str, error: BaseException) -> CatalogError:
        detail = " ".join(str(error).split()) or type(error).__name__
        return CatalogError(f"JDBC catalog database: could not {what}: {detail}")


_HELD = threading.local()


def _held_here() -> dict[str, list[Any]]:
    """The lock ids this thread holds: ``[renewal, depth]`` each."""
    held = getattr(_HELD, "ids", None)
    if held is None:
        held = _HELD.ids = {}
    return held


class _Renewal:
    """Keeps a held row young while its holder works: every third of its expiry, the row's
    ``acquired_at`` moves to now (only while it is still ours). Java never renews; to a Java
    writer the row is simply a recent one. So a long chain rewrite (an expire of thousands of
    snapshots) is not taken over halfway by a writer that finds the row past its expiry, while
    the row of a holder that died still expires after ``expire_seconds``."""

    def __init__(self, lock: JdbcLock, mine: LockHolder) -> None:
        self._lock = lock
        self.current = mine
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.current.expire_seconds < 1:
            return  # an expiry of 0 lets any later second take the row; nothing to keep
        self._thread = threading.Thread(target=self._run, name=f"jdbc-lock-renewal {self.current.lock_id}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        interval = min(max(self.current.expire_seconds / 3, 0.2), 60.0)
        connection = None
        try:
            while not self._stopped.wait(interval):
                try:
                    if connection is None:
                        connection = self._lock._open()
                    renewed = self._lock._renew(connection, self.current)
                except LakectlError as error:
                    logger.warning("could not renew the JDBC catalog lock %s (%s); retrying", self.current.lock_id,
                                   error)
                    continue
                except Exception as error:  # a dropped connection: open another one next time
                    if not _is_db_error(error):
                        raise
                    logger.warning("could not renew the JDBC catalog lock %s (%s); retrying", self.current.lock_id,
                                   error)
                    connection = _closed(connection)
                    continue
                if renewed is None:
                    logger.warning("the JDBC catalog lock %s was taken over while held (its row expired)",
                                   self.current.lock_id)
                    return
                self.current = renewed
        finally:
            _closed(connection)


def _closed(connection: Any) -> None:
    if connection is not None:
        try:
            connection.close()
        except Exception:  # closing a broken connection: nothing left to do
            logger.debug("closing a lock connection failed", exc_info=True)
    return None


__all__ = ["DEFAULT_ACQUIRE_TIMEOUT", "DEFAULT_CHECK_MAX_SLEEP", "TABLE", "JdbcLock", "LockHolder", "dialect_of"]
