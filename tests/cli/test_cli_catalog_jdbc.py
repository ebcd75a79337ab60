"""Every command through a JDBC catalog on a SQLite file (issue 47): a ``[catalog]`` config of
``metastore = "jdbc"`` makes create, drop, rename, drop-database and list keep Paimon's registry
tables in step with the files, and the data and maintenance commands work on registered tables
only. The registry is read back with sqlite3 itself, the rows against a model of what was
written."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lakectl.app import app
from tests.cli.cli_kit import assert_lakectl_words

REPO = Path(__file__).resolve().parents[2]
LAKECTL = Path(sys.executable).with_name("lakectl")
runner = CliRunner()


def _config(tmp_path: Path, *extra: str) -> Path:
    conf = tmp_path / "lakectl.toml"
    conf.write_text("\n".join(['[catalog]', 'metastore = "jdbc"', 'uri = "jdbc:sqlite:catalog.db"',
                               'warehouse = "wh"', *extra]) + "\n")
    return conf


def registry(tmp_path: Path, key: str = "jdbc") -> list[tuple[str, str]]:
    """(database, table) rows of ``paimon_tables`` for ``key``, read with sqlite3."""
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        return sorted(conn.execute("SELECT database_name, table_name FROM paimon_tables WHERE catalog_key = ?",
                                   (key,)).fetchall())


def database_properties(tmp_path: Path) -> set[tuple[str, str, str]]:
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        return set(conn.execute("SELECT database_name, property_key, property_value FROM paimon_database_properties"))


def invoke(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def ok(*args: Any) -> Any:
    result = invoke("-f", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def fails(code: int, *args: Any) -> str:
    result = invoke(*args)
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert_lakectl_words(lines[0])
    return lines[0]


def _csv(tmp_path: Path, rows: dict[int, str], name: str = "in.csv") -> Path:
    path = tmp_path / name
    path.write_text("id,v\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
    return path


def _scan(table: str, *extra: Any) -> dict[int, str]:
    return {r["id"]: r["v"] for r in ok("scan", table, *extra)}


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    return _config(tmp_path)


# ---- the console script, as a cron job runs it --------------------------------------------------
def _console(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path / "home"))
    return subprocess.run([str(LAKECTL), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def _console_json(tmp_path: Path, *args: str) -> Any:
    done = _console(tmp_path, "-f", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


class _Registry:
    """The catalog database of one test, read with its own driver (sqlite3 or psycopg)."""

    def __init__(self, tmp_path: Path, postgres: Any = None) -> None:
        self.tmp_path, self.postgres = tmp_path, postgres

    def config(self) -> Path:
        if self.postgres is None:
            return _config(self.tmp_path)
        options = {**self.postgres.catalog_options(), "warehouse": "wh"}
        conf = self.tmp_path / "lakectl.toml"
        conf.write_text("[catalog]\n" + "".join(f'"{k}" = "{v}"\n' for k, v in options.items()))
        return conf

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        if self.postgres is None:
            with sqlite3.connect(self.tmp_path / "catalog.db") as conn:
                return conn.execute(sql).fetchall()
        import psycopg

        with psycopg.connect(**self.postgres.connect_kwargs()) as conn:
            return conn.execute(sql).fetchall()

    def tables(self) -> list[tuple[str, str]]:
        return sorted(self.query("SELECT database_name, table_name FROM paimon_tables WHERE catalog_key = 'jdbc'"))

    def database_properties(self) -> set[tuple[str, str, str]]:
        return set(self.query("SELECT database_name, property_key, property_value FROM paimon_database_properties"))


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> _Registry:
    """The catalog database: a SQLite file, or a fresh database on the tests' PostgreSQL server."""
    if request.param == "sqlite":
        return _Registry(tmp_path)
    return _Registry(tmp_path, request.getfixturevalue("postgres_db"))


@pytest.mark.slow
def test_the_lifecycle_through_the_console_script(tmp_path: Path, backend: _Registry) -> None:
    if not LAKECTL.is_file():
        pytest.skip("the lakectl console script is not installed next to this python")
    backend.config()
    registry = lambda _: backend.tables()  # noqa: E731
    database_properties = lambda _: backend.database_properties()  # noqa: E731
    run = lambda *a: _console_json(tmp_path, *a)  # noqa: E731
    run("create", "shop.orders", "--schema", "id BIGINT, v STRING", "--primary-key", "id", "-o", "bucket=1")
    assert registry(tmp_path) == [("shop", "orders")]
    assert ("shop", "location", str(tmp_path / "wh" / "shop.db")) in database_properties(tmp_path)
    model: dict[int, str] = {}
    for i, batch in enumerate(({1: "a", 2: "b"}, {2: "B", 3: "c"}, {4: "d"})):
        run("write", "shop.orders", "-i", str(_csv(tmp_path, batch, f"b{i}.csv")))
        model.update(batch)
    assert {r["id"]: r["v"] for r in run("scan", "shop.orders")} == model
    assert run("compact", "shop.orders", "--full")["snapshot_id"] == 4
    run("tag", "create", "shop.orders", "t2", "--snapshot-id", "2")
    expired = run("expire", "shop.orders", "--retain-min", "1", "--retain-max", "1", "--older-than", "0s")
    assert expired["snapshots_expired"] == [1, 2, 3]
    assert {r["id"]: r["v"] for r in run("scan", "shop.orders", "--tag", "t2")} == {1: "a", 2: "B", 3: "c"}
    run("branch", "create", "shop.orders", "dev", "--tag", "t2")
    assert [b["branch"] for b in run("branch", "list", "shop.orders")] == ["dev"]
    run("rollback", "shop.orders", "--tag", "t2")
    assert {r["id"]: r["v"] for r in run("scan", "shop.orders")} == {1: "a", 2: "B", 3: "c"}
    run("tag", "delete", "shop.orders", "t2")
    run("rename", "shop.orders", "shop.orders_2023")
    assert registry(tmp_path) == [("shop", "orders_2023")]
    assert not (tmp_path / "wh" / "shop.db" / "orders").exists()
    gone = _console(tmp_path, "scan", "shop.orders")
    assert gone.returncode == 3, gone.stderr
    report = run("maintain")
    assert [(r["table"], r["branch"], r["status"]) for r in report] == [("shop.orders_2023", "main", "done"),
                                                                         ("shop.orders_2023", "dev", "done")]
    assert run("list") == [{"database": "shop", "table": None}]
    assert run("list", "shop") == [{"database": "shop", "table": "orders_2023"}]
    run("drop", "shop.orders_2023")
    assert registry(tmp_path) == []
    assert run("list", "shop") == []  # the database stays registered (its properties), empty
    run("drop-database", "shop")
    assert database_properties(tmp_path) == set() and run("list") == []


def test_create_registers_after_the_schema_and_refuses_a_taken_name(tmp_path: Path, conf: Path) -> None:
    ok("create", "db.t", "--schema", "id BIGINT, v STRING", "--primary-key", "id")
    assert registry(tmp_path) == [("db", "t")]
    assert (tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0").is_file()
    assert "already exists" in fails(1, "create", "db.t", "--schema", "id BIGINT")
    assert ok("create", "db.t", "--schema", "id BIGINT", "--if-not-exists")["created"] is False
    # another catalog key in the same database file: its own registry
    ok("--catalog-option", "catalog-key=other", "create", "db.t2", "--schema", "id BIGINT")
    assert registry(tmp_path, "other") == [("db", "t2")] and registry(tmp_path) == [("db", "t")]
    assert ok("list", "db") == [{"database": "db", "table": "t"}]


def test_a_directory_the_registry_does_not_name_is_reported_never_read(tmp_path: Path, conf: Path) -> None:
    # a table of the same warehouse made through the filesystem catalog
    ok("--catalog-option", "metastore=filesystem", "create", "db.loose", "--schema", "id BIGINT, v STRING")
    ok("--catalog-option", "metastore=filesystem", "write", "db.loose", "-i", _csv(tmp_path, {1: "x"}))
    for args in (["scan", "db.loose"], ["snapshots", "db.loose"], ["write", "db.loose", "-i", tmp_path / "in.csv"],
                 ["expire", "db.loose"], ["drop", "db.loose"]):
        line = fails(3, *args)
        assert "is not registered in catalog" in line and "reaches by its path" in line, line
    fails(1, "create", "db.loose", "--schema", "id BIGINT")  # not adopted either
    assert registry(tmp_path) == []
    # by its path it is the filesystem catalog's table
    assert _scan(str(tmp_path / "wh" / "db.db" / "loose")) == {1: "x"}
    # drop-database keeps what the catalog does not register
    ok("create", "db.t", "--schema", "id BIGINT")
    ok("drop-database", "db", "--cascade")
    assert registry(tmp_path) == [] and (tmp_path / "wh" / "db.db" / "loose" / "schema").is_dir()
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


def test_an_interrupted_create_is_finished_by_running_it_again(tmp_path: Path, conf: Path) -> None:
    """Schema first, then the row: a create killed in between leaves an unregistered table that
    the same create registers (a different one is refused)."""
    schema = ["--schema", "id BIGINT, v STRING", "--primary-key", "id"]
    ok("--catalog-option", "metastore=filesystem", "create", "db.t", *schema)  # the files alone
    assert "not registered" in fails(3, "scan", "db.t")
    line = fails(1, "create", "db.t", "--schema", "id BIGINT")
    assert "not the one asked for" in line
    assert ok("create", "db.t", *schema)["created"] is True
    assert registry(tmp_path) == [("db", "t")]
    ok("write", "db.t", "-i", _csv(tmp_path, {7: "q"}))
    assert _scan("db.t") == {7: "q"}


def test_an_interrupted_drop_and_rename_are_finished_by_running_them_again(tmp_path: Path, conf: Path) -> None:
    """Files first, then the row: a drop killed in between leaves a registered name without files
    (reported, and removed by the same drop); a rename, the old row and the new directory (the
    same rename moves the row)."""
    import shutil

    ok("create", "db.t", "--schema", "id BIGINT, v STRING")
    ok("write", "db.t", "-i", _csv(tmp_path, {1: "a"}))
    ok("create", "db.u", "--schema", "id BIGINT, v STRING")
    shutil.rmtree(tmp_path / "wh" / "db.db" / "u")  # a drop killed after its files
    line = fails(3, "scan", "db.u")
    assert "registered in catalog" in line and "holds no schema files" in line
    assert ok("drop", "db.u")["existed"] is True
    assert registry(tmp_path) == [("db", "t")]
    (tmp_path / "wh" / "db.db" / "t").rename(tmp_path / "wh" / "db.db" / "r")  # a rename killed after its files
    fails(3, "scan", "db.t")
    fails(3, "scan", "db.r")
    assert ok("rename", "db.t", "db.r")["resumed"] is True
    assert registry(tmp_path) == [("db", "r")] and _scan("db.r") == {1: "a"}


def test_rename_and_drop_keep_the_registry_and_refuse_what_java_refuses(tmp_path: Path, conf: Path) -> None:
    ok("create", "db.t", "--schema", "id BIGINT, v STRING")
    ok("create", "db.u", "--schema", "id BIGINT")
    assert "already registered" in fails(1, "rename", "db.t", "db.u")
    assert "database other does not exist" in fails(3, "rename", "db.t", "other.t")
    assert "does not exist" in fails(3, "rename", "db.nope", "db.x")
    assert registry(tmp_path) == [("db", "t"), ("db", "u")]
    ok("rename", "db.t", "db.v")
    assert registry(tmp_path) == [("db", "u"), ("db", "v")]
    assert ok("drop", "db.gone", "--if-exists")["existed"] is False
    fails(3, "drop", "db.gone")
    assert "holds 2 table(s)" in fails(1, "drop-database", "db")
    assert ok("drop-database", "db", "--cascade")["tables"] == ["u", "v"]
    assert registry(tmp_path) == [] and not (tmp_path / "wh" / "db.db").exists()


def test_data_and_maintenance_commands_on_a_registered_table(tmp_path: Path, conf: Path) -> None:
    ok("create", "db.t", "--schema", "id BIGINT, v STRING", "--primary-key", "id", "-o", "bucket=2")
    model: dict[int, str] = {}
    for batch in ({1: "a", 2: "b"}, {3: "c"}, {1: "A"}):
        ok("write", "db.t", "-i", _csv(tmp_path, batch))
        model.update(batch)
    assert _scan("db.t") == model
    ok("delete", "db.t", "--where", "id = 3")
    del model[3]
    assert ok("compact", "db.t", "--full")["snapshot_id"] == 5
    assert _scan("db.t") == model
    assert [s["snapshot_id"] for s in ok("snapshots", "db.t")] == [5, 4, 3, 2, 1]
    ok("rollback", "db.t", "--snapshot-id", "3")
    assert _scan("db.t") == {1: "A", 2: "b", 3: "c"}
    assert ok("describe", "db.t")["latest_snapshot_id"] == 3
    assert ok("check", "db.t")["problems"] == []
    ok("clone", "db.t", "db.copy")
    assert registry(tmp_path) == [("db", "copy"), ("db", "t")]
    assert _scan("db.copy") == {1: "A", 2: "b", 3: "c"}
    ok("write", "db.new", "-i", _csv(tmp_path, {9: "z"}), "--auto-create")
    assert ("db", "new") in registry(tmp_path)


def test_completion_offers_the_registrys_names(tmp_path: Path, conf: Path) -> None:
    ok("create", "db.t", "--schema", "id BIGINT")
    ok("create", "db.t2", "--schema", "id BIGINT")
    ok("--catalog-option", "metastore=filesystem", "create", "db.loose", "--schema", "id BIGINT")
    line = "lakectl scan db."
    result = runner.invoke(app, [], prog_name="lakectl", env={
        "_LAKECTL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": "2"})
    assert result.exit_code == 0, result.output
    assert [w for w in result.stdout.splitlines() if w] == ["db.t", "db.t2"]


def test_config_show_names_the_catalog_and_masks_its_password(tmp_path: Path) -> None:
    _config(tmp_path, 'jdbc.user = "alice"', 'jdbc.password = "pw-9f3"')
    rows = {r["key"]: (r["value"], r["source"]) for r in ok("config", "show")}
    assert rows["catalog.metastore"] == ("jdbc", "config file")
    assert rows["catalog.uri"] == (f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "config file")
    assert rows["catalog.warehouse"] == (str(tmp_path / "wh"), "config file")
    assert rows["catalog.jdbc.user"] == ("alice", "config file")
    assert rows["catalog.jdbc.password"] == ("****", "config file")
    assert "pw-9f3" not in invoke("config", "show").stdout


def test_an_unusable_catalog_is_one_line_with_its_exit_code(tmp_path: Path) -> None:
    assert "use one of filesystem, jdbc, rest" in fails(2, "--catalog-option", "metastore=hive", "list")
    assert "needs the catalog key uri" in fails(2, "--catalog-option", "metastore=jdbc", "scan", "db.t")
    line = fails(2, "--catalog-option", "metastore=jdbc", "--catalog-option", "uri=jdbc:mysql://h/db", "list")
    assert "not jdbc:mysql:" in line
    line = fails(1, "--catalog-option", "metastore=jdbc", "--catalog-option",
                 f"uri=jdbc:sqlite:{tmp_path / 'no' / 'such' / 'dir.db'}", "list")
    assert "cannot open the SQLite database" in line


def test_catalog_options_after_the_command_and_in_the_environment(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    uri = f"uri=jdbc:sqlite:{tmp_path / 'catalog.db'}"
    ok("create", "db.t", "--schema", "id BIGINT", "-w", tmp_path / "wh", "--catalog-option", "metastore=jdbc",
       "--catalog-option", uri)
    assert registry(tmp_path) == [("db", "t")]
    monkeypatch.setenv("LAKECTL_CATALOG_METASTORE", "jdbc")
    monkeypatch.setenv("LAKECTL_CATALOG_URI", uri.split("=", 1)[1])
    assert ok("list", "db", "-w", tmp_path / "wh") == [{"database": "db", "table": "t"}]
