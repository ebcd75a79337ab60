"""truncate, drop-partition, drop, drop-database and rename on an s3:// warehouse (a real
SeaweedFS): the same results as on local disk; drop deletes every object of the table (the
schema files last, so a killed drop leaves a table a second drop finishes). rename on S3 (a copy
then a delete) is tested in test_s3_rename.py."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from test_s3_commands import Cli, _sources, isolated  # noqa: F401 - the autouse fixture

from core.fileio import inject_fault
from core.ops.drop import drop_table
from core.table import Table

pytestmark = pytest.mark.s3


def _objects(s3, prefix: str) -> list[str]:
    """The objects under ``prefix`` (SeaweedFS reports an emptied prefix as a directory: not one)."""
    found = s3.fs().find(prefix.split("://", 1)[1], detail=True)
    return sorted(p for p, info in found.items() if info.get("type") != "directory")


def _write(cli: Cli, tmp_path: Path, table: str, rows: list[tuple[int, str]]) -> None:
    path = tmp_path / f"in-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text("".join(json.dumps({"id": i, "dt": d}) + "\n" for i, d in rows))
    cli.json("write", table, "-i", path)


def _ids(cli: Cli, table: str) -> list[int]:
    return sorted(r["id"] for r in cli.json("scan", table))


def test_table_admin_on_s3(s3, tmp_path: Path) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    for name in ("db.t", "db.u"):
        cli.ok("create", name, "-s", "id BIGINT, dt STRING", "--primary-key", "id,dt", "--partition-by", "dt",
               "-o", "bucket=1")
        _write(cli, tmp_path, name, [(1, "a"), (2, "b"), (3, "a")])

    dropped = cli.json("drop-partition", "db.t", "--partition", "dt=a")
    assert dropped["partitions"] == [{"dt": "a"}] and dropped["records_deleted"] == 2
    assert _ids(cli, "db.t") == [2]
    assert cli.json("truncate", "db.t")["snapshot_id"] == 3
    assert _ids(cli, "db.t") == [] and cli.json("check", "db.t")["ok"]

    before = _objects(s3, warehouse)

    table_path = f"{warehouse}/db.db/t"
    count = len(_objects(s3, table_path))
    dry = cli.json("drop", "db.t", "--dry-run")
    assert dry["files_deleted"] == count and _objects(s3, warehouse) == before
    assert cli.json("drop", "db.t")["files_deleted"] == count
    assert _objects(s3, table_path) == []
    assert cli.json("list", "db") == [{"database": "db", "table": "u"}]
    assert cli.invoke("drop", "db.t").exit_code == 3

    refused = cli.invoke("drop-database", "db")
    assert refused.exit_code == 1 and "still holds 1 table(s): u" in refused.stderr
    assert cli.json("drop-database", "db", "--cascade")["tables"] == ["u"]
    assert _objects(s3, f"{warehouse}/db.db") == []


def test_a_failed_drop_on_s3_leaves_a_table_the_next_drop_finishes(s3, tmp_path: Path) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    cli.ok("create", "db.t", "-s", "id BIGINT, dt STRING", "--partition-by", "dt")
    _write(cli, tmp_path, "db.t", [(1, "a"), (2, "b")])
    t = Table.open("db.t", warehouse=warehouse, storage_options=s3.storage_options())
    count = len(_objects(s3, t.path))
    with inject_fault("fail", "delete", 3):
        with pytest.raises(OSError):
            drop_table(t)
    left = _objects(s3, t.path)
    assert len(left) == count - 2 and any("/schema/" in p for p in left)  # schema files go last
    assert t.exists()
    again = drop_table(t)
    assert again.files_deleted == count - 2 and _objects(s3, t.path) == []
