"""Tags, branches and fast-forward through a REST catalog: against our own server written from
the OpenAPI spec (tests/rest/spec_server.py), since pypaimon 1.4.1's mock has no such calls. The
server writes Paimon's files (tag-NAME, branch-NAME/); lakectl's own file readers check them."""

from __future__ import annotations


import pyarrow as pa
import pytest

from core.catalog import CatalogConfig, open_catalog
from core.catalog.rest import RestCatalog, RestSnapshotCommit
from core.errors import BranchExistsError, CatalogUnsupportedError, NotFoundError, TagExistsError
from core.ops.create import parse_columns
from core.schema import new_table_schema
from core.table import Table
from lakectl.errors import exit_code_for
from rest_kit import Server, spec_server

pytestmark = [pytest.mark.rest]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with spec_server(tmp_path_factory.mktemp("rest-spec")) as s:
        yield s


def catalog(server: Server) -> RestCatalog:
    return open_catalog(CatalogConfig("rest", server.warehouse, server.options()))


def table_with_history(cat: RestCatalog, name: str, batches: list[list[int]]) -> Table:
    schema = new_table_schema(parse_columns("id BIGINT"), options={"bucket": "-1"})
    table = Table(cat.create_table(name, schema))
    for batch in batches:
        table.write(pa.table({"id": pa.array(batch, pa.int64())}))
    return table


def ids(rows: list[dict]) -> list[int]:
    return sorted(r["id"] for r in rows)


def test_commits_name_their_base_and_a_stale_base_is_planned_again(server: Server, db: str,
                                                                    monkeypatch: pytest.MonkeyPatch):
    cat = catalog(server)
    table = table_with_history(cat, f"{db}.t", [[1], [2]])
    snapshots = table.snapshots.snapshots()
    # Every snapshot published through the server carries a uuid, the next commit's base.
    assert [s.id for s in snapshots] == [1, 2] and all(s.extra.get("uuid") for s in snapshots)

    # A commit whose base the server no longer has as its latest is refused (the spec server
    # checks baseSnapshotUuid as Java's does): lakectl plans again and lands on top.
    answers: list[bool] = []
    raced: list[bool] = []
    publish = RestSnapshotCommit.publish

    def interleaved(self, snaps, snapshot, *, make_dirs):
        if not raced:
            raced.append(True)
            other = Table(catalog(server).locate(f"{db}.t"))
            other.write(pa.table({"id": pa.array([3], pa.int64())}))  # snapshot 3, through the server
        answers.append(publish(self, snaps, snapshot, make_dirs=make_dirs))
        return answers[-1]

    monkeypatch.setattr(RestSnapshotCommit, "publish", interleaved)
    result = table.write(pa.table({"id": pa.array([4], pa.int64())}))
    monkeypatch.undo()
    assert answers == [True, False, True]  # the other writer's commit, ours refused, ours again
    assert result.snapshot_id == 4
    assert ids(table.scan().to_pylist()) == [1, 2, 3, 4]


def test_tags_through_the_server(server: Server, db: str):
    cat = catalog(server)
    name = f"{db}.t"
    table = table_with_history(cat, name, [[1], [2], [3]])
    cat.create_tag(name, "first", snapshot_id=1)
    cat.create_tag(name, "latest")
    assert cat.list_tags(name) == ["first", "latest"]
    assert cat.get_tag(name, "first")["snapshot"]["id"] == 1
    # lakectl's own tag reader sees what the server wrote
    assert ids(table.scan(tag="first").to_pylist()) == [1]
    assert ids(table.scan(tag="latest").to_pylist()) == [1, 2, 3]
    with pytest.raises(TagExistsError) as taken:
        cat.create_tag(name, "first")
    assert exit_code_for(taken.value) == 1
    with pytest.raises(NotFoundError) as no_snapshot:
        cat.create_tag(name, "x", snapshot_id=99)
    assert "snapshot 99" in str(no_snapshot.value)
    cat.delete_tag(name, "first")
    assert cat.list_tags(name) == ["latest"]
    with pytest.raises(NotFoundError):
        table.scan(tag="first")
    with pytest.raises(NotFoundError):
        cat.delete_tag(name, "first")


def test_lakectl_tag_commands_go_through_the_server(server: Server, db: str):
    from core.ops.tags import create_tag, delete_tag

    cat = catalog(server)
    name = f"{db}.t"
    table = table_with_history(cat, name, [[1], [2]])
    info = create_tag(table, "v1", snapshot_id=1)
    assert info.snapshot_id == 1 and cat.list_tags(name) == ["v1"]  # the server knows it
    with pytest.raises(CatalogUnsupportedError) as refused:
        create_tag(table, "v1", snapshot_id=2, replace=True)
    assert exit_code_for(refused.value) == 2
    delete_tag(table, "v1")
    assert cat.list_tags(name) == []


def test_branches_and_fast_forward_through_the_server(server: Server, db: str):
    cat = catalog(server)
    name = f"{db}.t"
    table = table_with_history(cat, name, [[1], [2]])
    cat.create_tag(name, "base", snapshot_id=1)
    cat.create_branch(name, "dev", from_tag="base")
    assert cat.list_branches(name) == ["dev"]
    with pytest.raises(BranchExistsError):
        cat.create_branch(name, "dev")
    dev = Table(cat.locate(name)).on_branch("dev")
    assert ids(dev.scan().to_pylist()) == [1]
    # a write on the branch is published by the server as the object t$branch_dev
    dev.write(pa.table({"id": pa.array([10], pa.int64())}))
    assert dev.snapshots.latest().id == 2 and ids(dev.scan().to_pylist()) == [1, 10]
    assert ids(table.scan().to_pylist()) == [1, 2]  # main untouched
    cat.fast_forward(name, "dev")
    main = Table(cat.locate(name))
    assert ids(main.scan().to_pylist()) == [1, 10]
    cat.drop_branch(name, "dev")
    assert cat.list_branches(name) == []
    with pytest.raises(NotFoundError):
        cat.drop_branch(name, "dev")


def test_lakectl_branch_commands_go_through_the_server(server: Server, db: str):
    from core.ops.branches import create_branch, delete_branch, fast_forward
    from core.ops.tags import create_tag

    cat = catalog(server)
    name = f"{db}.t"
    table = table_with_history(cat, name, [[1], [2]])
    create_tag(table, "base", snapshot_id=1)
    info = create_branch(table, "dev", tag="base")
    assert cat.list_branches(name) == ["dev"] and info.latest_snapshot_id == 1
    with pytest.raises(CatalogUnsupportedError):
        create_branch(table, "other", snapshot_id=2)
    dev = table.on_branch("dev")
    dev.write(pa.table({"id": pa.array([5], pa.int64())}))
    result = fast_forward(table, "dev")
    assert result.branch == "dev"
    assert ids(Table(cat.locate(name)).scan().to_pylist()) == [1, 5]
    deleted = delete_branch(table, "dev")
    assert deleted.files > 0 and cat.list_branches(name) == []


@pytest.mark.interop
def test_calls_the_mock_lacks_are_refused_naming_them(rest_mock: Server, db: str):
    cat = open_catalog(CatalogConfig("rest", rest_mock.warehouse, rest_mock.options()))
    table_with_history(cat, f"{db}.t", [[1]])
    for run, operation in [(lambda: cat.create_tag(f"{db}.t", "x"), "createTag"),
                           (lambda: cat.list_branches(f"{db}.t"), "listBranches")]:
        with pytest.raises(CatalogUnsupportedError) as refused:
            run()
        assert f"does not implement {operation}" in str(refused.value)
        assert exit_code_for(refused.value) == 2
