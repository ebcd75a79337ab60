"""Writers and a cron expire through a JDBC catalog on SQLite lose nothing (issue 47): the
console script finds the catalog in its LAKECTL_CATALOG_* environment, the racing workers
open the table through the same catalog (expire_race_kit.py), and the table ends holding every
write that succeeded, exactly once, still registered."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from expire_race_kit import LAKECTL, TABLE, Lakectl, check_race, expire_race

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
