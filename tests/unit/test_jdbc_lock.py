"""core/catalog/jdbc_lock.py against a model of a lock and against Java's own statements.

- Mutual exclusion (threads, then processes): each holder does a non-atomic read-modify-write
  of shared state (a counter; the next ``snapshot-N`` file, checked for absence and then
  written) and records who is inside; the model is a serial execution: never two holders
  inside at once, every increment and every claimed snapshot kept.
- Expiry: a row older than the expiry stored in it is taken over, a younger one is not, by the
  database's clock in whole seconds (Java's SQL, docs/jdbc-catalog.md).
- Retry schedule and timeout: Java's sleeps (100 ms doubling, capped), hand-computed.
- Release deletes the holder's own row only.
Each on SQLite (sqlite3) and PostgreSQL (psycopg, the session's server from tests/postgres.py).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from core.catalog.jdbc_lock import JdbcLock
from core.errors import CatalogError, LockTimeoutError

REPO = Path(__file__).resolve().parents[2]

# Java 1.0's SqlLiteDistributedLockDialect.getCreateTableSql() with lock-key-max-length 255, as
# `javap -c` prints the constant of the bundle jar the tests run (docs/jdbc-catalog.md).
JAVA_CREATE = ("CREATE TABLE paimon_distributed_locks(lock_id VARCHAR(255) NOT NULL,acquired_at TIMESTAMP "
               "DEFAULT CURRENT_TIMESTAMP NOT NULL,expire_time_seconds BIGINT DEFAULT 0 NOT NULL,PRIMARY KEY "
               "(lock_id))")


def sqlite_connect(path: Path) -> Callable[[], Any]:
    return lambda: sqlite3.connect(path, timeout=30)


def pg_connect(server: Any) -> Callable[[], Any]:
    import psycopg

    kwargs = server.connect_kwargs()
    return lambda: psycopg.connect(**kwargs)


@pytest.fixture(params=["sqlite", "postgresql"])
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    if request.param == "sqlite":
        return sqlite_connect(tmp_path / "catalog.db")
    return pg_connect(request.getfixturevalue("postgres_db"))


def _rows(connect: Callable[[], Any]) -> list[tuple]:
    conn = connect()
    try:
        cur = conn.cursor()
        cur.execute("SELECT lock_id, expire_time_seconds FROM paimon_distributed_locks ORDER BY lock_id")
        return list(cur.fetchall())
    finally:
        conn.close()


def _insert_row(connect: Callable[[], Any], lock_id: str, acquired_at: str | None, expire: int) -> None:
    """A row as another writer (Java) leaves it; ``acquired_at`` None: the database's now."""
    conn = connect()
    try:
        mark = "?" if isinstance(conn, sqlite3.Connection) else "%s"
        cur = conn.cursor()
        if acquired_at is None:
            cur.execute(f"INSERT INTO paimon_distributed_locks (lock_id,expire_time_seconds) VALUES ({mark},{mark})",
                        (lock_id, expire))
        else:
            cur.execute("INSERT INTO paimon_distributed_locks (lock_id,acquired_at,expire_time_seconds) "
                        f"VALUES ({mark},{mark},{mark})", (lock_id, acquired_at, expire))
        conn.commit()
    finally:
        conn.close()


def test_the_table_is_javas_and_the_lock_id_is_catalog_key_database_table(tmp_path: Path) -> None:
    connect = sqlite_connect(tmp_path / "c.db")
    lock = JdbcLock(connect, "my_key", acquire_timeout=3, check_max_sleep=0.1)
    with lock.hold("db", "t") as mine:
        assert mine.lock_id == "my_key.db.t"
        assert _rows(connect) == [("my_key.db.t", 3)]  # expiry = the acquire timeout in seconds
    assert _rows(connect) == []
    conn = connect()
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'paimon_distributed_locks'").fetchone()
    assert sql == JAVA_CREATE


def test_from_options_reads_paimons_keys_and_defaults(tmp_path: Path) -> None:
    connect = sqlite_connect(tmp_path / "c.db")
    default = JdbcLock.from_options(connect, {})
    assert (default.catalog_key, default.acquire_timeout, default.check_max_sleep, default.expire_seconds) == \
        ("jdbc", 480.0, 8.0, 480)
    given = JdbcLock.from_options(connect, {"catalog-key": "k", "lock-acquire-timeout": "1500 ms",
                                            "lock-check-max-sleep": "200ms"})
    # Java stores the timeout's whole seconds: 1500 ms -> 1
    assert (given.catalog_key, given.acquire_timeout, given.check_max_sleep, given.expire_seconds) == \
        ("k", 1.5, 0.2, 1)


def _exclusion_threads(lock: JdbcLock, threads: int, rounds: int) -> None:
    inside: list[int] = []
    overlaps: list[tuple[int, int]] = []
    counter = {"value": 0}
    guard = threading.Lock()

    def worker(n: int) -> None:
        for _ in range(rounds):
            with lock.hold("db", "t"):
                with guard:
                    if inside:
                        overlaps.append((inside[0], n))
                    inside.append(n)
                value = counter["value"]
                time.sleep(0.002)  # widen the read-modify-write window
                counter["value"] = value + 1
                with guard:
                    inside.remove(n)

    workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert overlaps == []
    assert counter["value"] == threads * rounds  # the model: the holds ran one after another


def test_threads_exclude_each_other(connect: Callable[[], Any]) -> None:
    lock = JdbcLock(connect, "jdbc", acquire_timeout=60, check_max_sleep=0.02)
    _exclusion_threads(lock, threads=6, rounds=8)
    assert _rows(connect) == []


_CLAIMER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
spec = json.loads(sys.argv[2])
from core.catalog.jdbc_lock import JdbcLock
if spec["kind"] == "sqlite":
    import sqlite3
    connect = lambda: sqlite3.connect(spec["path"], timeout=30)
else:
    import psycopg
    connect = lambda: psycopg.connect(**spec["kwargs"])
lock = JdbcLock(connect, "jdbc", acquire_timeout=120, check_max_sleep=0.02)
snapshots = Path(spec["dir"])
claimed = []
for _ in range(spec["rounds"]):
    with lock.hold("db", "t"):
        ids = [int(p.name.split("-")[1]) for p in snapshots.iterdir()]
        n = max(ids, default=0) + 1
        target = snapshots / f"snapshot-{n}"
        assert not target.exists()
        time.sleep(0.002)
        target.write_text(spec["name"])   # exists-check then write: safe only under the lock
        claimed.append(n)
print(json.dumps(claimed))
"""


def test_processes_claim_snapshot_files_without_losing_one(connect: Callable[[], Any], tmp_path: Path,
                                                           request: pytest.FixtureRequest) -> None:
    conn = connect()
    if isinstance(conn, sqlite3.Connection):
        spec: dict[str, Any] = {"kind": "sqlite", "path": str(tmp_path / "catalog.db")}
    else:
        spec = {"kind": "postgresql", "kwargs": request.getfixturevalue("postgres_db").connect_kwargs()}
    conn.close()
    snapshots = tmp_path / "snapshot"
    snapshots.mkdir()
    procs = []
    for i in range(4):
        mine = {**spec, "dir": str(snapshots), "rounds": 10, "name": f"p{i}"}
        procs.append(subprocess.Popen([sys.executable, "-c", _CLAIMER, str(REPO), json.dumps(mine)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    claims: dict[str, list[int]] = {}
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        claims[f"p{i}"] = json.loads(out)
    # The model: 40 claims, one file each, each file holding its claimer's name.
    every = sorted(n for ids in claims.values() for n in ids)
    assert every == list(range(1, 41))
    for name, ids in claims.items():
        for n in ids:
            assert (snapshots / f"snapshot-{n}").read_text() == name


def test_an_expired_row_is_taken_over_and_a_live_one_is_not(connect: Callable[[], Any]) -> None:
    lock = JdbcLock(connect, "jdbc", acquire_timeout=1.0, check_max_sleep=0.1)
    lock.create_table()
    # A crashed holder's row, 60 s past its expiry of 10 s: the first attempt deletes it.
    _insert_row(connect, "jdbc.db.old", "2000-01-01 00:00:00", 10)
    started = time.monotonic()
    with lock.hold("db", "old") as mine:
        assert str(mine.acquired_at) > "2000-01-02"
    assert time.monotonic() - started < 1.0  # no retry was needed
    # A live holder with an hour to go: not taken over; the timeout names it.
    _insert_row(connect, "jdbc.db.live", None, 3600)
    with pytest.raises(LockTimeoutError) as info:
        with lock.hold("db", "live"):
            pytest.fail("took a live lock")
    message = str(info.value)
    assert "jdbc.db.live" in message and "held since" in message and "3600 s" in message
    assert "\n" not in message and "Error" not in message
    assert _rows(connect) == [("jdbc.db.live", 3600)]  # the holder's row is untouched


def test_a_row_becomes_free_once_older_than_its_expiry_by_the_database_clock(connect: Callable[[], Any]) -> None:
    lock = JdbcLock(connect, "jdbc", acquire_timeout=30, check_max_sleep=0.1)
    lock.create_table()
    _insert_row(connect, "jdbc.db.t", None, 1)  # a holder that died holding a 1 s expiry
    started = time.monotonic()
    with lock.hold("db", "t"):
        waited = time.monotonic() - started
    # "now - acquired_at > 1" in whole seconds (SQLite) or exactly (PostgreSQL): over 1 s of
    # waiting at least, and not the 30 s timeout.
    assert 1.0 <= waited < 10


def test_the_retry_schedule_is_javas(tmp_path: Path) -> None:
    connect = sqlite_connect(tmp_path / "c.db")
    clock = {"now": 0.0}
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(round(seconds, 6))
        clock["now"] += seconds

    lock = JdbcLock(connect, "jdbc", acquire_timeout=2.0, check_max_sleep=0.5, sleep=sleep,
                    clock=lambda: clock["now"])
    lock.create_table()
    _insert_row(connect, "jdbc.db.t", None, 3600)
    with pytest.raises(LockTimeoutError):
        with lock.hold("db", "t"):
            pass
    # Java: 50 ms doubled before each sleep, capped at the max sleep; give up after the attempt
    # that follows the sleep which carried the time since the first retry past the timeout
    # (0.1+0.2+0.4+0.5+0.5 = 1.7 <= 2.0, +0.5 = 2.2 > 2.0).
    assert sleeps == [0.1, 0.2, 0.4, 0.5, 0.5, 0.5]


def test_release_leaves_a_row_that_took_over(connect: Callable[[], Any], caplog: pytest.LogCaptureFixture) -> None:
    lock = JdbcLock(connect, "jdbc", acquire_timeout=5, check_max_sleep=0.1)
    with caplog.at_level(logging.WARNING, logger="core.catalog.jdbc_lock"):
        with lock.hold("db", "t"):
            # Our row expired and another writer took over (it deleted ours, inserted its own).
            conn = connect()
            cur = conn.cursor()
            cur.execute("DELETE FROM paimon_distributed_locks")
            conn.commit()
            conn.close()
            _insert_row(connect, "jdbc.db.t", "2999-01-01 00:00:00", 77)
    assert _rows(connect) == [("jdbc.db.t", 77)]
    assert any("taken over" in r.getMessage() for r in caplog.records)


def test_locks_of_different_tables_do_not_block_each_other(connect: Callable[[], Any]) -> None:
    lock = JdbcLock(connect, "jdbc", acquire_timeout=0.5, check_max_sleep=0.1)
    other_catalog = JdbcLock(connect, "other", acquire_timeout=0.5, check_max_sleep=0.1)
    with lock.hold("db", "a"), lock.hold("db", "b"), other_catalog.hold("db", "a"):
        assert sorted(r[0] for r in _rows(connect)) == ["jdbc.db.a", "jdbc.db.b", "other.db.a"]


def test_an_unreachable_database_is_one_line_in_lakectls_words(tmp_path: Path) -> None:
    lock = JdbcLock(lambda: sqlite3.connect(tmp_path / "missing-dir" / "c.db"), "jdbc", acquire_timeout=1,
                    check_max_sleep=0.1)
    with pytest.raises(CatalogError) as info:
        with lock.hold("db", "t"):
            pass
    assert str(info.value).startswith("JDBC catalog database: could not connect: ")
    assert "\n" not in str(info.value)


def test_two_processes_may_create_the_table_at_once(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    errors: list[BaseException] = []

    def create() -> None:
        try:
            JdbcLock(sqlite_connect(path), "jdbc", acquire_timeout=1, check_max_sleep=0.1).create_table()
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert os.path.getsize(path) > 0


def _in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` run in another thread (another holder than this one); its result or error."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_a_hold_may_carry_its_own_timeout_which_is_also_its_stored_expiry(tmp_path: Path) -> None:
    connect = sqlite_connect(tmp_path / "c.db")
    lock = JdbcLock(connect, "ck")  # Java's defaults
    assert (lock.acquire_timeout, lock.check_max_sleep, lock.expire_seconds) == (480.0, 8.0, 480)
    with lock.hold("db", "t", 2.5):
        assert _rows(connect) == [("ck.db.t", 2)]
        started = time.monotonic()

        def contend() -> None:
            with lock.hold("db", "t", 0.3):
                pass

        with pytest.raises(LockTimeoutError):
            _in_thread(contend)
        assert time.monotonic() - started < 5  # its own timeout, not the lock's 8 min


def test_a_thread_holding_the_lock_may_take_it_again(connect: Callable[[], Any]) -> None:
    # A commit inside a chain rewrite (rollback as latest, a write in an expire's hold) takes
    # the lock its thread already holds: it goes through, and the row stays until the outer
    # hold ends; another thread still waits.
    lock = JdbcLock(connect, "jdbc", acquire_timeout=0.5, check_max_sleep=0.1, expire_seconds=60)
    with lock.hold("db", "t") as outer:
        with lock.hold("db", "t") as inner:
            assert inner == outer
        assert _rows(connect) == [("jdbc.db.t", 60)]

        def contend() -> None:
            with lock.hold("db", "t"):
                pass

        with pytest.raises(LockTimeoutError):
            _in_thread(contend)
    assert _rows(connect) == []


def test_a_live_holder_keeps_its_row_past_the_expiry(connect: Callable[[], Any]) -> None:
    # The row of a hold longer than its expiry (1 s) is renewed, so a writer that finds it
    # (Java's delete of expired rows) cannot take the lock before the holder lets go.
    lock = JdbcLock(connect, "jdbc", acquire_timeout=30, check_max_sleep=0.05, expire_seconds=1)
    released: dict[str, float] = {}
    inside = threading.Event()

    def holder() -> None:
        with lock.hold("db", "t"):
            inside.set()
            time.sleep(3.5)
            released["at"] = time.monotonic()

    t = threading.Thread(target=holder)
    t.start()
    inside.wait()
    with lock.hold("db", "t"):
        acquired = time.monotonic()
    t.join()
    assert acquired >= released["at"]
