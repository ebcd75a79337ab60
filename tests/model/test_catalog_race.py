"""Writers and a cron expire through a JDBC catalog on SQLite lose nothing (issue 47): the
console script finds the catalog in its LAKECTL_CATALOG_* environment, the racing workers
open the table through the same catalog (expire_race_kit.py), and the table ends holding every
write that succeeded, exactly once, still registered."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from expire_race_kit import LAKECTL, TABLE, Lakectl, check_race, expire_race, snapshot_ids

pytestmark = pytest.mark.skipif(not LAKECTL.exists(), reason="the lakectl console script is not installed")


@pytest.mark.slow
def test_two_writers_and_an_expire_through_a_jdbc_catalog(tmp_path: Path) -> None:
    uri = f"jdbc:sqlite:{tmp_path / 'catalog.db'}"
    lk = Lakectl(str(tmp_path / "wh"), env={"LAKECTL_CATALOG_METASTORE": "jdbc", "LAKECTL_CATALOG_URI": uri})
    roles = [{"role": "write", "w": 0}, {"role": "write", "w": 1}, {"role": "expire"}, {"role": "scan"}]
    model, figures = expire_race(lk, tmp_path, seconds=15, catalog={"metastore": "jdbc", "uri": uri},
                                 roles=roles)
    print("\n" + figures.line("jdbc race"))
    check_race(lk, model, figures)
    assert figures.runs[("write", 0)] >= 6 and figures.snapshots_expired >= 1, figures.line("jdbc")
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        assert conn.execute("SELECT database_name, table_name FROM paimon_tables").fetchall() == \
            [tuple(TABLE.split("."))]


@pytest.mark.slow
@pytest.mark.rest
def test_two_writers_a_compactor_and_a_reader_through_a_rest_catalog(tmp_path: Path) -> None:
    """The same race through a REST server (pypaimon 1.4.1's mock behind create-if-absent, as
    Java's reference server commits): every commit is a POST the server publishes or refuses,
    a refused one is planned again, nothing is lost or doubled; pypaimon 2.1's RESTCatalog
    reads the table the race left. The cron expire has no REST call (refused, exit 2, nothing
    changed), so the cron role here is a compactor."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rest"))
    from rest_kit import mock_server, pypaimon_read

    with mock_server(tmp_path / "server") as server:
        catalog = {"metastore": "rest", "uri": server.uri, "token.provider": "bear", "token": server.token}
        lk = Lakectl(server.warehouse, env=server.cli_env())
        roles = [{"role": "write", "w": 0}, {"role": "write", "w": 1}, {"role": "compact"}, {"role": "scan"}]
        model, figures = expire_race(lk, tmp_path, seconds=15, catalog=catalog, roles=roles)
        print("\n" + figures.line("rest race"))
        check_race(lk, model, figures)
        assert figures.runs[("write", 0)] >= 8 and figures.retries >= 1, figures.line("rest")  # writes, races
        refused = lk.run("expire", TABLE, "--retain-max", "1", "--older-than", "0s")
        assert refused.returncode == 2 and snapshot_ids(lk) == sorted(snapshot_ids(lk)), refused.stderr
        rows, _ = pypaimon_read(server, TABLE, tmp_path)
        expected = sorted(r for k, r in model.written.items() if k not in model.deleted)
        assert sorted((r["id"], r["v"], r["dt"]) for r in rows) == expected
