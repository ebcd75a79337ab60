"""lakectl maintain on an s3:// warehouse (a real SeaweedFS): the lease is a conditional
create there too, a held table is skipped, a stale lease is taken over, and the tables are
compacted and expired as on local disk."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from test_s3_commands import Cli, _sources, isolated  # noqa: F401 - the autouse fixture

from core import lease as leases
from core.table import Table

pytestmark = pytest.mark.s3


def _write(cli: Cli, tmp_path: Path, table: str, ids: range) -> None:
    path = tmp_path / f"in-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text("".join(json.dumps({"id": i, "v": f"v{i}"}) + "\n" for i in ids))
    cli.json("write", table, "-i", path)


def test_maintain_on_s3_with_the_lease(s3, tmp_path: Path) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()  # a fresh prefix per call
    cli = Cli(flags, env, warehouse)
    for name in ("db.a", "db.b"):
        cli.ok("create", name, "-s", "id BIGINT NOT NULL, v STRING", "--primary-key", "id", "-o", "bucket=1",
               "-o", "write-only=true", "-o", "num-sorted-run.compaction-trigger=3",
               "-o", "snapshot.num-retained.min=1", "-o", "snapshot.num-retained.max=1")
        for i in range(3):
            _write(cli, tmp_path, name, range(i * 2, i * 2 + 3))
    b = Table.open("db.b", warehouse=warehouse, storage_options=s3.storage_options())
    held = leases.acquire(b.file_io, b.path, holder="other-host:1:x", ttl_seconds=600)
    assert held is not None
    assert leases.acquire(b.file_io, b.path, holder="me", ttl_seconds=600) is None

    reports = {r["table"]: r for r in cli.json("maintain")}
    assert reports["db.a"]["status"] == "done"
    assert [a["verb"] for a in reports["db.a"]["actions"]] == ["compact", "expire", "remove-orphan-files"]
    assert reports["db.b"]["status"] == "skipped" and "lease" in reports["db.b"]["reason"]
    assert cli.json("health", "db.a")["max_sorted_runs"] == 1
    assert cli.json("health", "db.b")["max_sorted_runs"] == 3

    # The other run's lease goes stale (as if it crashed an hour ago): the next run takes it over.
    stale_at = held.expires_at + 1
    taken = leases.acquire(b.file_io, b.path, holder="taker", ttl_seconds=1, now=stale_at)
    assert taken is not None and taken.holder == "taker"
    leases.release(b.file_io, held)  # the old holder's late release leaves the taker's lease
    assert json.loads(b.file_io.read_bytes(taken.path))["holder"] == "taker"
    leases.release(b.file_io, taken)
    reports = {r["table"]: r for r in cli.json("maintain", "db.b")}
    assert reports["db.b"]["status"] == "done"
    assert cli.json("health", "db.b")["max_sorted_runs"] == 1
    assert sorted(r["id"] for r in cli.json("scan", "db.b")) == list(range(7))
    assert cli.json("check", "db.b")["ok"]
