"""The latest schema on an object store costs one LIST when it has not changed (each S3 request
costs milliseconds and a command asks for the latest schema many times), and a schema file
rewritten under the same name (a drop and re-create) is read anew."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from test_s3_commands import Cli, _sources, isolated  # noqa: F401 - the autouse fixture

from core import fileio
from core.table import Table

pytestmark = pytest.mark.s3


@pytest.fixture()
def requests(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Every FileIO operation, by kind ("read", "list", ...), as its fault point sees it."""
    seen: Counter = Counter()
    real = fileio._before

    def counting(operation: str, path: str = "", kind: str = "") -> None:
        seen[operation] += 1
        real(operation, path, kind)

    monkeypatch.setattr(fileio, "_before", counting)
    return seen


def _columns(table: Table) -> list[str]:
    return [f.name for f in table.schema.fields]


def test_an_unchanged_latest_schema_costs_one_listing(s3, tmp_path: Path, requests: Counter) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    cli.ok("create", "db.t", "-s", "id BIGINT, v STRING")
    table = Table.open("db.t", warehouse=warehouse, storage_options=s3.storage_options())
    assert _columns(table) == ["id", "v"]

    requests.clear()
    for _ in range(5):
        assert _columns(table) == ["id", "v"]
    assert dict(requests) == {"list": 5}

    cli.ok("alter-schema", "db.t", "--add-column", "w INT")
    requests.clear()
    assert _columns(table) == ["id", "v", "w"]
    assert requests["read"] == 1

    # Dropped and created again: schema-0 again, other content under the same name.
    cli.ok("drop", "db.t")
    cli.ok("create", "db.t", "-s", "id BIGINT, payload STRING, n INT, m INT")
    assert _columns(table) == ["id", "payload", "n", "m"]
