"""lakectl through a REST catalog server (pypaimon 1.4.1's mock, tests/rest/launch_mock.py), with
pypaimon 2.1's RESTCatalog as the other client: what one commits through the server the other
reads, a lost race at the server is planned again, what the server cannot do is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from core.catalog import CatalogConfig, open_catalog
from core.catalog.rest import RestCatalog, RestSnapshotCommit
from core.errors import (CatalogAccessError, CatalogUnreachableError, CatalogUnsupportedError, NotFoundError,
                         TableExistsError)
from core.ops.create import parse_columns
from core.schema import new_table_schema
from core.table import Table
from lakectl.errors import exit_code_for
from rest_kit import Server, pypaimon_read, pypaimon_write

pytestmark = [pytest.mark.rest, pytest.mark.interop]


def rest_catalog(server: Server, **options: str) -> RestCatalog:
    cat = open_catalog(CatalogConfig("rest", server.warehouse, server.options(**options)))
    assert isinstance(cat, RestCatalog)
    return cat


def create(cat: RestCatalog, name: str, columns: str, *, pk: tuple[str, ...] = (), part: tuple[str, ...] = (),
           options: dict[str, str] | None = None) -> Table:
    schema = new_table_schema(parse_columns(columns), primary_keys=pk, partition_keys=part, options=options or {})
    return Table(cat.create_table(name, schema))


def rows_of(table: Table) -> list[dict]:
    return table.scan().to_pylist()


def by_key(rows: list[dict], *keys: str) -> list[dict]:
    return sorted(rows, key=lambda r: tuple(r[k] for k in keys))


def files_under(path: str) -> dict[str, int]:
    out = {}
    for root, _, names in os.walk(path):
        for n in names:
            full = os.path.join(root, n)
            out[os.path.relpath(full, path)] = os.path.getsize(full)
    return out


def test_lakectl_creates_writes_compacts_and_pypaimon_reads_it(rest_mock: Server, db: str, tmp_path: Path):
    cat = rest_catalog(rest_mock)
    table = create(cat, f"{db}.orders", "id BIGINT, customer STRING, amount DOUBLE, dt STRING",
                   pk=("id", "dt"), part=("dt",), options={"bucket": "2"})
    # The files go where the server says the table lives (the mock: <data>/<warehouse>/<db>/<table>).
    assert Path(table.path) == rest_mock.data / rest_mock.warehouse / db / "orders"
    assert cat.tables(db) == ["orders"] and db in cat.databases()

    model: dict[tuple, dict] = {}
    batches = [
        [(1, "alice", 10.5, "d1"), (2, "bob", 20.25, "d1"), (3, "carol", 5.0, "d2")],
        [(2, "bob", 22.0, "d1"), (4, "dave", 7.75, "d3")],
    ]
    for batch in batches:
        rows = [dict(zip(("id", "customer", "amount", "dt"), r)) for r in batch]
        table.write(pa.Table.from_pylist(rows, schema=pa.schema([("id", pa.int64()), ("customer", pa.string()),
                                                                 ("amount", pa.float64()), ("dt", pa.string())])))
        model.update({(r["id"], r["dt"]): r for r in rows})
    result = table.compact(full=True)
    assert result.snapshot_id == 3
    expected = by_key(list(model.values()), "id", "dt")

    assert [s.commit_kind for s in table.snapshots.snapshots()] == ["APPEND", "APPEND", "COMPACT"]
    assert by_key(rows_of(table), "id", "dt") == expected
    theirs, meta = pypaimon_read(rest_mock, f"{db}.orders", tmp_path)
    assert by_key(theirs, "id", "dt") == expected
    assert meta["latest_snapshot"] == 3


def test_pypaimon_writes_and_lakectl_reads_and_writes_on(rest_mock: Server, db: str, tmp_path: Path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    first = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    second = [{"id": 2, "name": "B"}, {"id": 3, "name": "c"}]
    pypaimon_write(rest_mock, f"{db}.people", pa.Table.from_pylist(first, schema=schema), tmp_path, create=True,
                   primary_key=["id"], options={"bucket": "1"})
    pypaimon_write(rest_mock, f"{db}.people", pa.Table.from_pylist(second, schema=schema), tmp_path)
    model = {r["id"]: r for r in first + second}

    cat = rest_catalog(rest_mock)
    table = Table(cat.locate(f"{db}.people"))
    assert by_key(rows_of(table), "id") == by_key(list(model.values()), "id")

    mine = [{"id": 3, "name": "C"}, {"id": 4, "name": "d"}]
    table.write(pa.Table.from_pylist(mine, schema=schema))
    model.update({r["id"]: r for r in mine})
    theirs, meta = pypaimon_read(rest_mock, f"{db}.people", tmp_path)
    assert by_key(theirs, "id") == by_key(list(model.values()), "id")
    assert meta["latest_snapshot"] == 3


def test_a_commit_that_loses_the_race_at_the_server_is_planned_again(rest_mock: Server, db: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    cat = rest_catalog(rest_mock)
    table = create(cat, f"{db}.events", "id BIGINT, who STRING", options={"bucket": "-1"})
    schema = pa.schema([("id", pa.int64()), ("who", pa.string())])
    table.write(pa.Table.from_pylist([{"id": 1, "who": "lakectl"}], schema=schema))

    answers: list[bool] = []
    publish = RestSnapshotCommit.publish

    def publish_after_another_writer(self, snapshots, snapshot, *, make_dirs):
        if not answers:  # between lakectl's plan (on snapshot 1) and its POST, pypaimon commits snapshot 2
            pypaimon_write(rest_mock, f"{db}.events", pa.Table.from_pylist([{"id": 2, "who": "pypaimon"}],
                                                                          schema=schema), tmp_path)
        answers.append(publish(self, snapshots, snapshot, make_dirs=make_dirs))
        return answers[-1]

    monkeypatch.setattr(RestSnapshotCommit, "publish", publish_after_another_writer)
    result = table.write(pa.Table.from_pylist([{"id": 3, "who": "lakectl"}], schema=schema))

    assert answers == [False, True]  # the server refused snapshot 2 (taken), then took snapshot 3
    assert result.snapshot_id == 3
    expected = [{"id": 1, "who": "lakectl"}, {"id": 2, "who": "pypaimon"}, {"id": 3, "who": "lakectl"}]
    assert by_key(rows_of(Table(cat.locate(f"{db}.events"))), "id") == expected
    theirs, meta = pypaimon_read(rest_mock, f"{db}.events", tmp_path)
    assert by_key(theirs, "id") == expected and meta["latest_snapshot"] == 3


def test_what_the_server_cannot_do_is_refused_and_changes_nothing(rest_mock: Server, db: str):
    from core.ops.expire import expire_snapshots
    from core.ops.tags import create_tag

    cat = rest_catalog(rest_mock)
    table = create(cat, f"{db}.t", "id BIGINT", options={"snapshot.num-retained.min": "1",
                                                         "snapshot.num-retained.max": "1"})
    for i in range(3):
        table.write(pa.table({"id": pa.array([i], pa.int64())}))
    before = files_under(table.path)

    # expire: the protocol has no call; tags: the mock lacks createTag
    for run, call in [(lambda: expire_snapshots(table, retain_min=1, retain_max=1), "no call"),
                      (lambda: create_tag(table, "keep", snapshot_id=1), "does not implement createTag")]:
        with pytest.raises(CatalogUnsupportedError) as refused:
            run()
        message = str(refused.value)
        assert call in message and "\n" not in message and "Error" not in message
        assert exit_code_for(refused.value) == 2
    assert files_under(table.path) == before
    assert [s.id for s in Table(cat.locate(f"{db}.t")).snapshots.snapshots()] == [1, 2, 3]
    assert sorted(r["id"] for r in rows_of(Table(cat.locate(f"{db}.t")))) == [0, 1, 2]


def test_rollback_goes_through_the_servers_call(rest_mock: Server, db: str, tmp_path: Path):
    from core.ops.rollback import rollback

    cat = rest_catalog(rest_mock)
    table = create(cat, f"{db}.t", "id BIGINT")
    for i in range(3):
        table.write(pa.table({"id": pa.array([i], pa.int64())}))
    result = rollback(table, snapshot_id=2)
    assert result.snapshots_removed == (3,)
    reopened = Table(cat.locate(f"{db}.t"))
    assert reopened.snapshots.latest().id == 2
    assert sorted(r["id"] for r in rows_of(reopened)) == [0, 1]
    theirs, _ = pypaimon_read(rest_mock, f"{db}.t", tmp_path)
    assert sorted(r["id"] for r in theirs) == [0, 1]
    with pytest.raises(NotFoundError) as missing:
        cat.rollback_to(f"{db}.t", snapshot_id=9)
    assert "snapshot 9 does not exist" in str(missing.value) and exit_code_for(missing.value) == 3


def test_names_through_the_server_create_rename_drop(rest_mock: Server, db: str, tmp_path: Path):
    cat = rest_catalog(rest_mock)
    table = create(cat, f"{db}.a", "id BIGINT")
    table.write(pa.table({"id": pa.array([7], pa.int64())}))
    with pytest.raises(TableExistsError):
        create(cat, f"{db}.a", "id BIGINT")
    cat.rename_table(table.location, f"{db}.b")
    # The mock moves the directory and registers the new name, but keeps the old name listed
    # (its rename never forgets the source): only the new name is checked.
    assert "b" in cat.tables(db)
    renamed = Table(cat.locate(f"{db}.b"))
    assert Path(renamed.path) == rest_mock.data / rest_mock.warehouse / db / "b"
    assert [r["id"] for r in rows_of(renamed)] == [7]
    theirs, _ = pypaimon_read(rest_mock, f"{db}.b", tmp_path)
    assert [r["id"] for r in theirs] == [7]
    cat.unregister_table(renamed.location)
    assert "b" not in cat.tables(db)
    with pytest.raises(NotFoundError) as gone:
        cat.locate(f"{db}.b")
    assert exit_code_for(gone.value) == 3
    with pytest.raises(NotFoundError):
        cat.tables(db + "x")


def test_paths_are_refused_on_a_rest_catalog(rest_mock: Server):
    from core.errors import UsageError

    with pytest.raises(UsageError) as refused:
        rest_catalog(rest_mock).locate("/tmp/some/table")
    assert "bypass the server" in str(refused.value)


def test_a_wrong_token_is_one_line_and_exit_7(rest_mock: Server):
    cat = open_catalog(CatalogConfig("rest", rest_mock.warehouse, {**rest_mock.options(), "token": "not-the-token"}))
    with pytest.raises(CatalogAccessError) as refused:
        cat.databases()
    message = str(refused.value)
    assert "refused the token" in message and "HTTP 401" in message and rest_mock.uri in message
    assert "\n" not in message and "not-the-token" not in message
    assert exit_code_for(refused.value) == 7


def test_a_server_that_does_not_answer_is_exit_8():
    import socket

    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        cat = open_catalog(CatalogConfig("rest", "wh", {"uri": f"http://127.0.0.1:{port}", "token": "t"}))
        with pytest.raises(CatalogUnreachableError) as unreachable:
            cat.databases()
    assert exit_code_for(unreachable.value) == 8 and "did not answer" in str(unreachable.value)


def test_the_data_token_is_fetched_from_the_server_and_kept_until_near_expiry(rest_mock: Server, db: str,
                                                                             monkeypatch: pytest.MonkeyPatch):
    import time

    cat = rest_catalog(rest_mock)
    create(cat, f"{db}.t", "id BIGINT")
    token = cat.data_token(db, "t")
    assert token["akId"].startswith("akId")  # the mock's token for a table it has no credentials for
    # the mock's tokens expire in an hour, inside the hour's safety margin: each use fetches anew
    monkeypatch.setattr(time, "time", lambda: 0.0)  # ... unless the clock says the expiry is far off
    cat2 = rest_catalog(rest_mock)
    first = cat2.data_token(db, "t")
    assert cat2.data_token(db, "t") is first
