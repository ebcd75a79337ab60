"""Java Paimon 1.0's JdbcCatalog (the bundle jar's ``org.apache.paimon.jdbc.JdbcCatalog``, with
Debian's SQLite and PostgreSQL JDBC drivers) against the facts of docs/jdbc-catalog.md and
against lakectl's lock (core/catalog/jdbc_lock.py).

- What Java leaves in the registry and the warehouse when it creates, writes, renames and
  drops through the catalog, read back with sqlite3/psycopg and lakectl's own reader.
- Java 1.0 on PostgreSQL: works without the lock, refuses to open with ``lock.enabled``.
- The lock: Java's commit waits while lakectl holds the table's lock id (the row lakectl
  inserted, with lakectl's expiry), and lands once it is released; and while Java commits in
  a loop and lakectl takes the lock over and over, no Java snapshot ever appears inside one
  of lakectl's holds.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from java_oracle import JavaCatalogProcess, java_catalog, lakectl_rows, sort_rows

from core.catalog.jdbc_lock import JdbcLock
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

FIELDS = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}]
CREATE = {"fields": FIELDS, "primaryKeys": ["k"], "options": {"bucket": "1"}}
# Java's expiry is its lock-acquire-timeout in seconds; lakectl's holds here store another
# value, so a row tells whose it is.
JAVA_TIMEOUT_SECONDS = 120
LAKECTL_EXPIRE_SECONDS = 121


def sqlite_catalog(tmp_path: Path, *, lock: bool, key: str = "ck") -> dict[str, str]:
    return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "warehouse": str(tmp_path / "wh"),
            "catalog-key": key, "lock.enabled": str(lock).lower(),
            "lock-acquire-timeout": f"{JAVA_TIMEOUT_SECONDS}s", "lock-check-max-sleep": "100ms"}


def query(connect: Callable[[], Any], sql: str) -> list[tuple]:
    conn = connect()
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return sorted(tuple(r) for r in cur.fetchall())
    finally:
        conn.close()


def lakectl_read(path: Path) -> list[list[Any]]:
    return lakectl_rows(Table.open(str(path)).scan())


def snapshot_files(table: Path) -> list[str]:
    directory = table / "snapshot"
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("snapshot-")) if directory.is_dir() else []


def _registry_and_files_after_java(connect: Callable[[], Any], catalog: dict[str, str], warehouse: Path) -> None:
    key = catalog["catalog-key"]
    out = java_catalog(catalog, [
        {"op": "create-database", "name": "db"},
        {"op": "create-table", "table": "db.t", "create": CREATE},
        {"op": "write", "table": "db.t", "rows": [[1, "a"], [2, "b"]]},
        {"op": "write", "table": "db.t", "rows": [[2, "B"], [3, "c"]]},
        {"op": "read", "table": "db.t"},
        {"op": "list-tables", "database": "db"},
    ])
    model = sort_rows([[1, "a"], [2, "B"], [3, "c"]])  # a primary-key table: the last value per key
    assert out[4]["rows"] == model and out[4]["snapshot"] == 2
    assert out[5]["names"] == ["t"]
    table = warehouse / "db.db" / "t"
    # The registry: one table row, the database's two property rows (docs/jdbc-catalog.md).
    assert query(connect, "SELECT catalog_key, database_name, table_name FROM paimon_tables") == [(key, "db", "t")]
    assert query(connect, "SELECT catalog_key, database_name, property_key, property_value "
                          "FROM paimon_database_properties") == \
        [(key, "db", "exists", "true"), (key, "db", "location", str(warehouse / "db.db"))]
    # The files: the table under <warehouse>/<db>.db/<table>, as lakectl reads it.
    assert snapshot_files(table) == ["snapshot-1", "snapshot-2"]
    assert lakectl_read(table) == model

    out = java_catalog(catalog, [{"op": "rename-table", "from": "db.t", "to": "db.u"},
                                 {"op": "list-tables", "database": "db"}, {"op": "read", "table": "db.u"}])
    assert out[1]["names"] == ["u"] and out[2]["rows"] == model
    assert query(connect, "SELECT table_name FROM paimon_tables") == [("u",)]
    assert not table.exists() and lakectl_read(warehouse / "db.db" / "u") == model

    java_catalog(catalog, [{"op": "drop-table", "table": "db.u"}])
    assert query(connect, "SELECT table_name FROM paimon_tables") == []
    assert not (warehouse / "db.db" / "u").exists()


def test_java_jdbc_catalog_on_sqlite_leaves_the_registry_and_files_the_facts_say(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path, lock=True)
    connect = lambda: sqlite3.connect(tmp_path / "catalog.db")  # noqa: E731
    _registry_and_files_after_java(connect, catalog, tmp_path / "wh")
    # lock.enabled made Java create the lock table, Java's text; no row is left behind.
    (ddl,) = query(connect, "SELECT sql FROM sqlite_master WHERE name = 'paimon_distributed_locks'")[0]
    assert ddl.startswith("CREATE TABLE paimon_distributed_locks(lock_id VARCHAR(255) NOT NULL,")
    assert query(connect, "SELECT * FROM paimon_distributed_locks") == []


def test_java_jdbc_catalog_on_postgresql_without_the_lock(tmp_path: Path, postgres_db: Any) -> None:
    import psycopg

    catalog = {**postgres_db.catalog_options(), "warehouse": str(tmp_path / "wh"), "catalog-key": "pg",
               "lock.enabled": "false"}
    _registry_and_files_after_java(lambda: psycopg.connect(**postgres_db.connect_kwargs()), catalog, tmp_path / "wh")


def test_java_1_0_refuses_the_lock_on_postgresql(tmp_path: Path, postgres_db: Any) -> None:
    # docs/jdbc-catalog.md: Java 1.0's lock dialects are SQLite and MySQL only; PostgreSQL's
    # came in 1.1. The catalog does not open, so no Java 1.0 writer runs unlocked beside a
    # locked lakectl on PostgreSQL by accident.
    catalog = {**postgres_db.catalog_options(), "warehouse": str(tmp_path / "wh"), "lock.enabled": "true"}
    with pytest.raises(AssertionError, match="No enum constant .*JdbcProtocol.POSTGRESQL"):
        java_catalog(catalog, [{"op": "list-databases"}])


def _java_table(tmp_path: Path, catalog: dict[str, str], *, wal: bool = True) -> Path:
    if wal:
        # docs/jdbc-catalog.md: Java 1.0 leaves a read statement open on the catalog's own
        # connection when the catalog's tables exist as it opens; in SQLite's rollback journal
        # that blocks every other writer (its own lock's connection, lakectl), in WAL it does not.
        sqlite3.connect(tmp_path / "catalog.db").execute("PRAGMA journal_mode=WAL").fetchall()
    java_catalog(catalog, [{"op": "create-database", "name": "db"},
                           {"op": "create-table", "table": "db.t", "create": CREATE}])
    return tmp_path / "wh" / "db.db" / "t"


def test_java_1_0_cannot_commit_under_its_lock_on_an_existing_sqlite_catalog_in_rollback_journal(
        tmp_path: Path) -> None:
    # The fact behind WAL (docs/jdbc-catalog.md): a second JVM opens the catalog, finds its
    # tables, leaves DatabaseMetaData.getTables' result open (a SHARED lock), and its own lock's
    # delete of expired rows, on another connection, waits for it until SQLITE_BUSY.
    catalog = sqlite_catalog(tmp_path, lock=True)
    table = _java_table(tmp_path, catalog, wal=False)
    with pytest.raises(AssertionError, match="SQLITE_BUSY"):
        java_catalog(catalog, [{"op": "write", "table": "db.t", "rows": [[1, "a"]]}])
    assert snapshot_files(table) == []
    # The same in WAL: the commit lands.
    sqlite3.connect(tmp_path / "catalog.db").execute("PRAGMA journal_mode=WAL").fetchall()
    assert java_catalog(catalog, [{"op": "write", "table": "db.t", "rows": [[1, "a"]]}])[0]["snapshot"] == 1


def test_java_commit_waits_while_lakectl_holds_the_lock(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path, lock=True)
    table = _java_table(tmp_path, catalog)
    lock = JdbcLock(lambda: sqlite3.connect(tmp_path / "catalog.db", timeout=30), "ck",
                    acquire_timeout=60, check_max_sleep=0.1, expire_seconds=LAKECTL_EXPIRE_SECONDS)
    java = JavaCatalogProcess(catalog, [{"op": "writes", "table": "db.t", "batches": [[[1, "a"]], [[2, "b"]]]}])
    try:
        with lock.hold("db", "t") as mine:
            assert mine.lock_id == "ck.db.t"
            assert java.next_line() == {"attempt": 0}
            # Java has written its data files and now waits for the lock to publish snapshot-1.
            # Give it time enough to have committed many times over were it not waiting.
            time.sleep(3)
            assert snapshot_files(table) == []
            assert java.process.poll() is None
            assert lock.holder("db", "t") == mine
        assert java.next_line() == {"committed": 0, "snapshot": 1}, java.stderr()
        assert java.next_line() == {"attempt": 1}
        assert java.next_line() == {"committed": 1, "snapshot": 2}
        java.wait()
    finally:
        java.close()
    assert lakectl_read(table) == [[1, "a"], [2, "b"]]


def test_java_writer_and_lakectl_holds_never_overlap(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path, lock=True)
    table = _java_table(tmp_path, catalog)
    connect = lambda: sqlite3.connect(tmp_path / "catalog.db", timeout=30)  # noqa: E731
    lock = JdbcLock(connect, "ck", acquire_timeout=120, check_max_sleep=0.05, expire_seconds=LAKECTL_EXPIRE_SECONDS)
    commits = 12
    batches = [[[i, f"java-{i}"]] for i in range(commits)]
    java = JavaCatalogProcess(catalog, [{"op": "writes", "table": "db.t", "batches": batches}])
    holds = overlaps = 0
    try:
        done = threading.Event()

        def follow() -> None:
            while (line := java.next_line()) is not None:
                if line.get("op") == "writes":
                    done.set()
            done.set()

        follower = threading.Thread(target=follow)
        follower.start()
        while not done.is_set():
            with lock.hold("db", "t"):
                before = snapshot_files(table)
                time.sleep(0.15)
                if snapshot_files(table) != before:
                    overlaps += 1
                holds += 1
            time.sleep(0.05)
        follower.join()
        java.wait()
    finally:
        java.close()
    assert overlaps == 0
    assert holds > commits  # lakectl held the lock again and again while Java committed
    # Every commit landed once, ids without gaps (Java's compactions add COMPACT snapshots).
    ids = sorted(int(n.split("-")[1]) for n in snapshot_files(table))
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= commits
    assert lakectl_read(table) == sort_rows([[i, f"java-{i}"] for i in range(commits)])


def _lakectl_through(catalog: dict[str, str], tmp_path: Path, *args: Any) -> Any:
    """lakectl's console entry (in process) with ``catalog`` as ``--catalog-option``s, JSON out."""
    import json

    from typer.testing import CliRunner

    from lakectl.app import app

    options = [x for k, v in catalog.items() for x in ("--catalog-option", f"{k}={v}")]
    result = CliRunner().invoke(app, [*options, "-f", "json", *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_lakectl_and_java_work_on_each_others_tables_through_one_catalog(tmp_path: Path, kind: str,
                                                                          request: pytest.FixtureRequest) -> None:
    """Both ways through one JDBC catalog (no lock: Java 1.0 has none on PostgreSQL): Java lists
    and reads what lakectl created, wrote and compacted; lakectl lists, reads, writes, compacts,
    renames and drops what Java created and wrote, and Java sees each of those. The expected
    rows are a model of the batches (a primary-key table: the last value per key)."""
    if kind == "sqlite":
        catalog = sqlite_catalog(tmp_path, lock=False, key="both")
    else:
        pg = request.getfixturevalue("postgres_db")
        catalog = {**pg.catalog_options(), "warehouse": str(tmp_path / "wh"), "catalog-key": "both"}
    csv = tmp_path / "in.csv"

    def lakectl_write(table: str, rows: dict[int, str]) -> None:
        csv.write_text("k,v\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
        _lakectl_through(catalog, tmp_path, "write", table, "-i", csv)

    # lakectl creates and writes; Java lists and reads.
    _lakectl_through(catalog, tmp_path, "create", "db.ours", "--schema", "k INT NOT NULL, v STRING",
                     "--primary-key", "k", "-o", "bucket=1")
    ours: dict[int, str] = {}
    for batch in ({1: "a", 2: "b"}, {2: "B", 3: "c"}):
        lakectl_write("db.ours", batch)
        ours.update(batch)
    assert _lakectl_through(catalog, tmp_path, "compact", "db.ours", "--full")["snapshot_id"] == 3
    out = java_catalog(catalog, [{"op": "list-databases"}, {"op": "list-tables", "database": "db"},
                                 {"op": "read", "table": "db.ours"},
                                 {"op": "create-table", "table": "db.theirs", "create": CREATE},
                                 {"op": "write", "table": "db.theirs", "rows": [[10, "x"], [11, "y"]]},
                                 {"op": "write", "table": "db.ours", "rows": [[4, "java"]]}])
    # Java 1.0 lists a database once per registry table it appears in (properties and tables),
    # its own doing: a database Java created and filled lists twice as well.
    assert set(out[0]["names"]) == {"db"} and out[1]["names"] == ["ours"]
    assert out[2]["rows"] == sort_rows([[k, v] for k, v in ours.items()]) and out[2]["snapshot"] == 3
    ours[4] = "java"

    # lakectl lists, reads, writes and compacts what Java made; Java reads the result.
    assert _lakectl_through(catalog, tmp_path, "list", "db") == [{"database": "db", "table": "ours"},
                                                                  {"database": "db", "table": "theirs"}]
    theirs = {10: "x", 11: "y"}
    got = {r["k"]: r["v"] for r in _lakectl_through(catalog, tmp_path, "scan", "db.theirs")}
    assert got == theirs
    assert {r["k"]: r["v"] for r in _lakectl_through(catalog, tmp_path, "scan", "db.ours")} == ours
    lakectl_write("db.theirs", {11: "Y", 12: "z"})
    theirs.update({11: "Y", 12: "z"})
    assert _lakectl_through(catalog, tmp_path, "compact", "db.theirs", "--full")["snapshot_id"] == 3
    _lakectl_through(catalog, tmp_path, "rename", "db.theirs", "db.renamed")
    _lakectl_through(catalog, tmp_path, "drop", "db.ours")
    out = java_catalog(catalog, [{"op": "list-tables", "database": "db"}, {"op": "read", "table": "db.renamed"},
                                 {"op": "write", "table": "db.renamed", "rows": [[13, "java"]]},
                                 {"op": "read", "table": "db.renamed"}])
    assert out[0]["names"] == ["renamed"]
    assert out[1]["rows"] == sort_rows([[k, v] for k, v in theirs.items()]) and out[1]["snapshot"] == 3
    theirs[13] = "java"
    assert out[3]["rows"] == sort_rows([[k, v] for k, v in theirs.items()]) and out[3]["snapshot"] == 4
    assert {r["k"]: r["v"] for r in _lakectl_through(catalog, tmp_path, "scan", "db.renamed")} == theirs
    assert not (tmp_path / "wh" / "db.db" / "ours").exists()
