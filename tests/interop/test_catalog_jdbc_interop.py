"""A JDBC catalog on one SQLite file, and on a database of the tests' PostgreSQL server, shared by
lakectl and pypaimon 2.1's ``JdbcCatalog`` (the official library, in its own virtualenv, reaching
PostgreSQL through psycopg): each lists, loads and reads what the other created and
wrote, and lakectl maintains, renames and drops what pypaimon made, in the registry pypaimon
reads. Expected rows are a model of the batches written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle import catalog_steps
from typer.testing import CliRunner

from lakectl.app import app

pytestmark = [pytest.mark.interop]
runner = CliRunner()


_POSTGRES: dict[Path, dict[str, str]] = {}  # tmp_path -> the test's PostgreSQL catalog options


@pytest.fixture(autouse=True, params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Each test on a SQLite file, then on a fresh database of the tests' PostgreSQL server."""
    if request.param == "postgresql":
        _POSTGRES[tmp_path] = request.getfixturevalue("postgres_db").catalog_options()
    yield request.param
    _POSTGRES.pop(tmp_path, None)


def _catalog(tmp_path: Path) -> dict[str, str]:
    if tmp_path in _POSTGRES:
        return {**_POSTGRES[tmp_path], "warehouse": str(tmp_path / "wh")}
    return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "warehouse": str(tmp_path / "wh")}


def _lakectl(tmp_path: Path, *args: Any) -> Any:
    options = [x for k, v in _catalog(tmp_path).items() for x in ("--catalog-option", f"{k}={v}")]
    result = runner.invoke(app, [*options, "-f", "json", *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def _csv(tmp_path: Path, rows: dict[int, str], name: str) -> Path:
    path = tmp_path / name
    path.write_text("id,v\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
    return path


def _batch(rows: dict[int, str]) -> pa.Table:
    return pa.table({"id": pa.array(list(rows), pa.int64()), "v": pa.array(list(rows.values()), pa.string())})


def _rows(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist()))


def test_pypaimon_lists_loads_and_reads_what_lakectl_created_and_wrote(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _lakectl(tmp_path, "create", "shop.orders", "--schema", "id BIGINT, v STRING", "--primary-key", "id",
             "-o", "bucket=2")
    _lakectl(tmp_path, "create", "shop.events", "--schema", "id BIGINT, v STRING")
    _lakectl(tmp_path, "create", "logs.lines", "--schema", "id BIGINT, v STRING")
    model: dict[int, str] = {}
    for i, batch in enumerate(({1: "a", 2: "b", 3: "c"}, {2: "B", 4: "d"}, {1: "A"})):
        _lakectl(tmp_path, "write", "shop.orders", "-i", _csv(tmp_path, batch, f"o{i}.csv"))
        model.update(batch)
    _lakectl(tmp_path, "compact", "shop.orders", "--full")
    _lakectl(tmp_path, "write", "shop.events", "-i", _csv(tmp_path, {5: "e", 6: "f"}, "e.csv"))
    _lakectl(tmp_path, "rename", "shop.events", "shop.events_old")
    got = catalog_steps(_catalog(tmp_path), [
        {"op": "list_databases"},
        {"op": "list_tables", "database": "shop"},
        {"op": "table_path", "table": "shop.orders"},
        {"op": "latest_snapshot", "table": "shop.orders"},
        {"op": "read", "table": "shop.orders"},
        {"op": "read", "table": "shop.events_old"},
        {"op": "exists", "table": "shop.events"},
    ], tmp_path)
    assert got[0] == ["logs", "shop"]
    assert got[1] == ["events_old", "orders"]
    assert Path(got[2]) == tmp_path / "wh" / "shop.db" / "orders"
    assert got[3] == 4
    assert _rows(got[4]) == model
    assert _rows(got[5]) == {5: "e", 6: "f"}
    assert got[6] is False
    _lakectl(tmp_path, "drop", "logs.lines")
    assert catalog_steps(_catalog(tmp_path), [{"op": "list_tables", "database": "logs"}], tmp_path) == [[]]


def test_lakectl_lists_reads_maintains_and_drops_what_pypaimon_created_and_wrote(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    schema = {"fields": [["id", "BIGINT NOT NULL"], ["v", "STRING"]], "primary_keys": ["id"],
              "options": {"bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}}
    batches = [{1: "a", 2: "b"}, {2: "B", 3: "c"}, {4: "d"}, {1: "A"}]
    model: dict[int, str] = {}
    steps: list[dict[str, Any]] = [{"op": "create_database", "name": "db"},
                                   {"op": "create_table", "table": "db.t", "schema": schema},
                                   {"op": "create_table", "table": "db.other", "schema": schema}]
    for batch in batches:
        steps.append({"op": "write", "table": "db.t", "data": _batch(batch)})
        model.update(batch)
    catalog_steps(_catalog(tmp_path), steps, tmp_path)

    assert _lakectl(tmp_path, "list") == [{"database": "db", "table": None}]
    assert _lakectl(tmp_path, "list", "db") == [{"database": "db", "table": "other"},
                                                 {"database": "db", "table": "t"}]
    assert {r["id"]: r["v"] for r in _lakectl(tmp_path, "scan", "db.t")} == model
    assert [s["snapshot_id"] for s in _lakectl(tmp_path, "snapshots", "db.t")] == [4, 3, 2, 1]
    assert _lakectl(tmp_path, "compact", "db.t", "--full")["snapshot_id"] == 5
    report = _lakectl(tmp_path, "maintain", "db.t")
    assert report[0]["status"] == "done" and "expire" in [a["verb"] for a in report[0]["actions"]], report
    snapshots = [s["snapshot_id"] for s in _lakectl(tmp_path, "snapshots", "db.t")]
    assert snapshots == [5]  # compacted, then expired down to snapshot.num-retained.max

    got = catalog_steps(_catalog(tmp_path), [{"op": "read", "table": "db.t"},
                                             {"op": "latest_snapshot", "table": "db.t"}], tmp_path)
    assert _rows(got[0]) == model and got[1] == 5

    _lakectl(tmp_path, "rename", "db.t", "db.t2")
    _lakectl(tmp_path, "drop", "db.other")
    got = catalog_steps(_catalog(tmp_path), [{"op": "list_tables", "database": "db"},
                                             {"op": "read", "table": "db.t2"},
                                             {"op": "exists", "table": "db.other"}], tmp_path)
    assert got[0] == ["t2"] and _rows(got[1]) == model and got[2] is False
    assert not (tmp_path / "wh" / "db.db" / "other").exists()
