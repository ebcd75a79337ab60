"""Writers committing at once on one table of a JDBC catalog with ``lock.enabled``, through
lakectl's console script (the ``[catalog]`` of its config file) and Java Paimon 1.0's
JdbcCatalog, checked against a model: every acknowledged commit's rows are in the table at the
end, no others, and Java and lakectl read the same rows.

- SQLite: a Java writer (its commits under Java's own lock) and two lakectl writers. Java 1.0
  has a lock dialect for SQLite, so the three serialise through ``paimon_distributed_locks``.
- PostgreSQL: Java 1.0 has no PostgreSQL lock (docs/jdbc-catalog.md; its catalog refuses to
  open with the lock), so two lakectl writers and a cron-style expire take the lock, and Java
  reads the result through the same catalog without it.
- On both, with the table's lock held by another writer: lakectl's write, expire and rollback
  give up after ``lock-acquire-timeout`` with exit 4 and change nothing; a write given time
  waits and lands once the holder lets go.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from java_oracle import JavaCatalogProcess, java_catalog, sort_rows

pytestmark = [pytest.mark.slow]
java = pytest.mark.java

REPO = Path(__file__).resolve().parents[2]
LAKECTL = Path(sys.executable).with_name("lakectl")
TABLE = "db.t"


def _config(tmp_path: Path, catalog: dict[str, str]) -> None:
    lines = ["[catalog]"] + [f'"{k}" = "{v}"' for k, v in catalog.items()]
    (tmp_path / "lakectl.toml").write_text("\n".join(lines) + "\n")


def lakectl(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path / "home"), LAKECTL_REWRITE_WAIT_SECONDS="10")
    return subprocess.run([str(LAKECTL), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def lakectl_json(tmp_path: Path, *args: str) -> Any:
    done = lakectl(tmp_path, "-f", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def lakectl_writer(tmp_path: Path, name: str, keys: list[int], acknowledged: dict[int, str],
                   refused: dict[int, str], guard: threading.Lock) -> None:
    """One write per key, each a console-script run; a write is acknowledged by exit 0."""
    for key in keys:
        value = f"{name}-{key}"
        source = tmp_path / f"{name}-{key}.csv"
        source.write_text(f"k,v\n{key},{value}\n")
        done = lakectl(tmp_path, "-f", "json", "write", TABLE, "--input", str(source))
        with guard:
            if done.returncode == 0:
                acknowledged[key] = value
            else:
                # A lost race (exit 4) commits nothing; anything else is a failure of the test.
                assert done.returncode == 4, done.stderr
                refused[key] = value


def _create(tmp_path: Path) -> None:
    # write-only: the writers only append (no compaction after their commits), as Paimon has
    # several writers of one bucket do; two writers compacting one bucket conflict by design
    # (Java's commit fails "Trying to delete file ... which is not previously added").
    done = lakectl(tmp_path, "create", TABLE, "--schema", "k INT NOT NULL, v STRING", "--primary-key", "k",
                   "--option", "bucket=1", "--option", "write-only=true")
    assert done.returncode == 0, done.stderr


def _lakectl_rows(tmp_path: Path) -> list[list[Any]]:
    return sort_rows([[r["k"], r["v"]] for r in lakectl_json(tmp_path, "scan", TABLE)])


@pytest.mark.interop
@java
def test_java_and_two_lakectl_writers_on_sqlite_lose_nothing(tmp_path: Path) -> None:
    catalog = {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "warehouse": str(tmp_path / "wh"),
               "catalog-key": "ck", "lock.enabled": "true", "lock-acquire-timeout": "120s",
               "lock-check-max-sleep": "100ms"}
    _config(tmp_path, catalog)
    _create(tmp_path)  # registers the table; the catalog's first open made the file WAL
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)

    java_batches = [[[1000 + i, f"java-{1000 + i}"]] for i in range(10)]
    writer = JavaCatalogProcess(catalog, [{"op": "writes", "table": TABLE, "batches": java_batches}])
    acknowledged: dict[int, str] = {}
    refused: dict[int, str] = {}
    guard = threading.Lock()
    writers = [threading.Thread(target=lakectl_writer, args=(tmp_path, name, keys, acknowledged, refused, guard))
               for name, keys in (("a", list(range(0, 8))), ("b", list(range(100, 108))))]
    try:
        for w in writers:
            w.start()
        java_done = []
        while (line := writer.next_line()) is not None:
            if "committed" in line:
                java_done.append(line["committed"])
        for w in writers:
            w.join()
        writer.wait()
    finally:
        writer.close()
    for i in java_done:
        acknowledged[java_batches[i][0][0]] = java_batches[i][0][1]
    assert len(java_done) == len(java_batches)
    assert len(acknowledged) >= len(java_batches) + 8  # most lakectl writes landed too
    model = sort_rows([[k, v] for k, v in acknowledged.items()])
    assert _lakectl_rows(tmp_path) == model
    assert java_catalog(catalog, [{"op": "read", "table": TABLE}])[0]["rows"] == model
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        assert conn.execute("SELECT * FROM paimon_distributed_locks").fetchall() == []


@pytest.mark.interop
@java
def test_two_lakectl_writers_and_an_expire_on_postgresql_lose_nothing_and_java_reads_them(
        tmp_path: Path, postgres_db: Any) -> None:
    import psycopg

    catalog = {**postgres_db.catalog_options(), "warehouse": str(tmp_path / "wh"), "catalog-key": "pg",
               "lock.enabled": "true", "lock-acquire-timeout": "120s", "lock-check-max-sleep": "100ms"}
    _config(tmp_path, catalog)
    _create(tmp_path)
    acknowledged: dict[int, str] = {}
    refused: dict[int, str] = {}
    guard = threading.Lock()
    stop = threading.Event()
    expires: list[int] = []

    def cron_expire() -> None:
        while not stop.is_set():
            done = lakectl(tmp_path, "expire", TABLE, "--retain-max", "2", "--retain-min", "1")
            expires.append(done.returncode)
            assert done.returncode in (0, 4), done.stderr

    writers = [threading.Thread(target=lakectl_writer, args=(tmp_path, name, keys, acknowledged, refused, guard))
               for name, keys in (("a", list(range(0, 10))), ("b", list(range(100, 110))))]
    expirer = threading.Thread(target=cron_expire)
    expirer.start()
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    expirer.join()
    assert expires and 0 in expires
    assert len(acknowledged) >= 10
    model = sort_rows([[k, v] for k, v in acknowledged.items()])
    assert _lakectl_rows(tmp_path) == model
    # Java 1.0 reads through the same registry, without the lock it cannot take on PostgreSQL.
    unlocked = {**catalog, "lock.enabled": "false"}
    out = java_catalog(unlocked, [{"op": "list-tables", "database": "db"}, {"op": "read", "table": TABLE}])
    assert out[0]["names"] == ["t"] and out[1]["rows"] == model
    with psycopg.connect(**postgres_db.connect_kwargs()) as conn:
        assert conn.execute("SELECT * FROM paimon_distributed_locks").fetchall() == []
        assert conn.execute("SELECT catalog_key, database_name, table_name FROM paimon_tables").fetchall() == \
            [("pg", "db", "t")]


def _snapshot_ids(tmp_path: Path) -> list[int]:
    directory = tmp_path / "wh" / "db.db" / "t" / "snapshot"
    return sorted(int(p.name.split("-")[1]) for p in directory.glob("snapshot-*"))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_lakectl_commands_wait_for_the_lock_and_give_up_with_exit_4(tmp_path: Path, kind: str,
                                                                    request: pytest.FixtureRequest) -> None:
    from core.catalog.jdbc_lock import JdbcLock

    if kind == "sqlite":
        catalog = {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}"}
        connect: Any = lambda: sqlite3.connect(tmp_path / "catalog.db", timeout=30)  # noqa: E731
    else:
        import psycopg

        server = request.getfixturevalue("postgres_db")
        catalog = server.catalog_options()
        connect = lambda: psycopg.connect(**server.connect_kwargs())  # noqa: E731
    _config(tmp_path, {**catalog, "warehouse": str(tmp_path / "wh"), "catalog-key": "ck", "lock.enabled": "true",
                       "lock-check-max-sleep": "100ms"})
    _create(tmp_path)
    source = tmp_path / "in.csv"
    source.write_text("k,v\n1,a\n")
    for _ in range(2):
        assert lakectl(tmp_path, "write", TABLE, "--input", str(source)).returncode == 0
    lock = JdbcLock(connect, "ck", expire_seconds=600)  # another writer (Java) holding db.t
    with lock.hold("db", "t"):
        for command in (["write", TABLE, "--input", str(source)],
                        ["expire", TABLE, "--retain-max", "1", "--retain-min", "1"],
                        ["rollback", TABLE, "--snapshot-id", "1"]):
            done = lakectl(tmp_path, "--catalog-option", "lock-acquire-timeout=1s", *command)
            assert done.returncode == 4, done.stderr
            assert done.stderr.startswith("error: could not take the JDBC catalog lock ck.db.t within ")
            assert "held since" in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert _snapshot_ids(tmp_path) == [1, 2]  # nothing written, expired or rolled back
        # With time enough, a write waits for the holder and lands once it lets go.
        waiting = subprocess.Popen([str(LAKECTL), "write", TABLE, "--input", str(source)], cwd=tmp_path,
                                   env={**{k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")},
                                        "PYTHONPATH": str(REPO), "HOME": str(tmp_path / "home")},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            waiting.wait(timeout=3)
            pytest.fail(f"the write did not wait for the lock: {waiting.stderr.read() if waiting.stderr else ''}")
        except subprocess.TimeoutExpired:
            pass
        assert _snapshot_ids(tmp_path) == [1, 2]
    _, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert _snapshot_ids(tmp_path) == [1, 2, 3]
