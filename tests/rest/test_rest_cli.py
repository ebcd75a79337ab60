"""The REST catalog through the lakectl console script (issue 47), as a cron job or a user runs
it: ``LAKECTL_CATALOG_*`` (or ``--catalog-option``) names the server, every command goes to it.

Against pypaimon 1.4.1's mock server (tests/rest/launch_mock.py): create, write, scan, compact,
delete, truncate, drop, rename, rollback, checked against a model of the rows and read back by
pypaimon 2.1's RESTCatalog; the snapshot files on disk are the mock's reduced copies (it drops
``uuid`` and the list sizes, docs/rest-catalog.md), so the server, not lakectl, wrote them. Tags
and branches against our spec server (tests/rest/spec_server.py), which the mock lacks. Each
refused command exits 2 with one line and leaves every file of the table as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rest_kit import Server, pypaimon_read, spec_server

pytestmark = [pytest.mark.rest]

REPO = Path(__file__).resolve().parents[2]
LAKECTL = Path(sys.executable).with_name("lakectl")


def run(server: Server, cwd: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    """The console script with the server named by LAKECTL_CATALOG_* (nothing else of the
    environment's lakectl settings)."""
    if not LAKECTL.is_file():
        pytest.skip("the lakectl console script is not installed next to this python")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(PYTHONPATH=str(REPO), HOME=str(cwd / "home"), **server.cli_env())
    return subprocess.run([str(LAKECTL), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def ok(server: Server, cwd: Path, *args: Any) -> Any:
    done = run(server, cwd, "-f", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def refused(server: Server, cwd: Path, *args: Any, code: int = 2) -> str:
    done = run(server, cwd, "-f", "json", *args)
    assert done.returncode == code, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def csv(cwd: Path, rows: dict[int, str], name: str) -> Path:
    path = cwd / name
    path.write_text("id,v\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
    return path


def scan(server: Server, cwd: Path, table: str, *extra: Any) -> dict[int, str]:
    return {r["id"]: r["v"] for r in ok(server, cwd, "scan", table, *extra)}


def files_under(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_size for p in sorted(path.rglob("*")) if p.is_file()}


def snapshot_files(table_dir: Path) -> list[dict]:
    snap = table_dir / "snapshot"
    ids = sorted(int(p.name.split("-")[1]) for p in snap.glob("snapshot-*"))
    return [json.loads((snap / f"snapshot-{i}").read_text()) for i in ids]


def test_a_table_lives_and_changes_through_the_server(rest_mock: Server, db: str, tmp_path: Path):
    name = f"{db}.t"
    created = ok(rest_mock, tmp_path, "create", name, "--schema", "id BIGINT, v STRING", "--primary-key", "id",
                 "-o", "bucket=1")
    # The path is the server's answer (the mock keeps <data>/<warehouse>/<db>/<table>), and the
    # server wrote schema-0 there.
    table_dir = rest_mock.data / rest_mock.warehouse / db / "t"
    assert created["created"] and Path(created["path"]) == table_dir
    assert sorted(p.name for p in (table_dir / "schema").iterdir()) == ["schema-0"]
    assert ok(rest_mock, tmp_path, "list", db) == [{"database": db, "table": "t"}]

    model: dict[int, str] = {}
    for i, batch in enumerate([{1: "a", 2: "b", 3: "c"}, {2: "B", 4: "d"}]):
        ok(rest_mock, tmp_path, "write", name, "--input", csv(tmp_path, batch, f"in{i}.csv"))
        model.update(batch)
        assert scan(rest_mock, tmp_path, name) == model
    assert ok(rest_mock, tmp_path, "compact", name, "--full")["snapshot_id"] == 3
    assert ok(rest_mock, tmp_path, "delete", name, "--where", "id = 3")["snapshot_id"] == 4
    del model[3]
    assert scan(rest_mock, tmp_path, name) == model

    # pypaimon 2.1's RESTCatalog reads what the console script committed through the server.
    theirs, meta = pypaimon_read(rest_mock, name, tmp_path)
    assert {r["id"]: r["v"] for r in theirs} == model and meta["latest_snapshot"] == 4

    # Every snapshot file is the mock's reduced copy of what lakectl POSTed: lakectl's own
    # snapshots carry a uuid and the manifest lists' sizes, which the mock drops.
    snaps = snapshot_files(table_dir)
    assert [s["commitKind"] for s in snaps] == ["APPEND", "APPEND", "COMPACT", "APPEND"]  # the delete: -D rows
    assert all("uuid" not in s and "deltaManifestListSize" not in s for s in snaps)

    assert ok(rest_mock, tmp_path, "truncate", name)["snapshot_id"] == 5
    assert scan(rest_mock, tmp_path, name) == {}
    theirs, meta = pypaimon_read(rest_mock, name, tmp_path)
    assert theirs == [] and meta["latest_snapshot"] == 5


def test_write_auto_create_creates_through_the_server(rest_mock: Server, db: str, tmp_path: Path):
    name = f"{db}.auto"
    result = ok(rest_mock, tmp_path, "write", name, "--input", csv(tmp_path, {7: "x", 8: "y"}, "a.csv"),
                "--auto-create")
    assert result["snapshot_id"] == 1
    table_dir = rest_mock.data / rest_mock.warehouse / db / "auto"
    assert (table_dir / "schema" / "schema-0").is_file()  # where the server put it
    assert ok(rest_mock, tmp_path, "list", db) == [{"database": db, "table": "auto"}]
    theirs, _ = pypaimon_read(rest_mock, name, tmp_path)
    assert sorted((r["id"], r["v"]) for r in theirs) == [(7, "x"), (8, "y")]


def test_a_table_named_by_path_is_refused(rest_mock: Server, db: str, tmp_path: Path):
    ok(rest_mock, tmp_path, "create", f"{db}.t", "--schema", "id BIGINT, v STRING")
    table_dir = rest_mock.data / rest_mock.warehouse / db / "t"
    line = refused(rest_mock, tmp_path, "scan", table_dir)
    assert "is a path" in line and "bypass the server" in line
    refused(rest_mock, tmp_path, "write", table_dir, "--input", csv(tmp_path, {1: "a"}, "p.csv"))
    assert not (table_dir / "snapshot").exists()


REFUSED = [
    (["expire", "{t}"], "no call to expire snapshots"),
    (["expire-changelogs", "{t}"], "no call to expire changelogs"),
    (["expire-tags", "{t}"], "no call to expire tags"),
    (["remove-orphan-files", "{t}"], "no call for it"),
    (["check", "{t}", "--repair"], "server owns the snapshot chain"),
    (["tag", "rename", "{t}", "first", "second"], "no renameTag call"),
    (["rescale", "{t}", "--buckets", "2"], "does not split that into alterTable"),
    (["clone", "{t}", "{db}.copy"], "no call to publish a copied history"),
]


@pytest.fixture(scope="module")
def busy_table(rest_mock: Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """A table with three snapshots; the refusal tests must leave every one of its files."""
    cwd = tmp_path_factory.mktemp("rest-cli-refusals")
    db = "refusals"
    ok(rest_mock, cwd, "create", f"{db}.t", "--schema", "id BIGINT, v STRING", "--primary-key", "id",
       "-o", "bucket=1", "-o", "snapshot.num-retained.min=1", "-o", "snapshot.num-retained.max=1")
    for i in range(3):
        ok(rest_mock, cwd, "write", f"{db}.t", "--input", csv(cwd, {i: str(i)}, f"r{i}.csv"))
    return db, cwd, rest_mock.data / rest_mock.warehouse / db / "t"


@pytest.mark.parametrize("args, why", REFUSED, ids=[" ".join(a[:2]) for a, _ in REFUSED])
def test_what_has_no_rest_call_is_refused_before_anything_is_written(rest_mock: Server, busy_table, args, why):
    db, cwd, table_dir = busy_table
    table = f"{db}.t"
    before = files_under(table_dir)
    line = refused(rest_mock, cwd, *[a.format(t=table, db=db) for a in args])
    assert why in line and "REST catalog" in line, line
    assert files_under(table_dir) == before  # the chain, its hints and every other file as they were
    assert ok(rest_mock, cwd, "list", db) == [{"database": db, "table": "t"}]  # no clone target either


def test_a_write_expires_nothing_under_a_rest_catalog(rest_mock: Server, busy_table):
    # snapshot.num-retained.max=1: on a filesystem the writer would expire snapshots 1..N-1
    # after its commit; under a REST catalog the server owns the chain, and all stay.
    db, cwd, table_dir = busy_table
    ids = [s["id"] for s in snapshot_files(table_dir)]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 3


def test_maintain_reports_the_refused_verbs_as_not_run(rest_mock: Server, busy_table):
    db, cwd, table_dir = busy_table
    before = {k: v for k, v in files_under(table_dir).items() if k.startswith(("snapshot/", "tag/"))}
    reports = ok(rest_mock, cwd, "maintain", f"{db}.t")
    assert [r["status"] for r in reports] == ["done"]
    skipped = {a["verb"]: a for a in reports[0]["actions"] if not a["done"]}
    assert set(skipped) == {"expire", "expire-tags", "remove-orphan-files"}
    assert all(a["error"].startswith("not run: ") for a in skipped.values())
    after = {k: v for k, v in files_under(table_dir).items() if k.startswith(("snapshot/", "tag/"))}
    assert after == before


def test_rename_drop_and_drop_database_go_through_the_server(rest_mock: Server, db: str, tmp_path: Path):
    ok(rest_mock, tmp_path, "create", f"{db}.a", "--schema", "id BIGINT, v STRING")
    ok(rest_mock, tmp_path, "write", f"{db}.a", "--input", csv(tmp_path, {1: "one"}, "a.csv"))
    ok(rest_mock, tmp_path, "create", f"{db}.keep", "--schema", "id BIGINT, v STRING")

    renamed = ok(rest_mock, tmp_path, "rename", f"{db}.a", f"{db}.b")
    # The mock moves the directory itself; the new path is its answer.
    assert Path(renamed["new_path"]) == rest_mock.data / rest_mock.warehouse / db / "b"
    assert {"database": db, "table": "b"} in ok(rest_mock, tmp_path, "list", db)
    assert scan(rest_mock, tmp_path, f"{db}.b") == {1: "one"}
    theirs, _ = pypaimon_read(rest_mock, f"{db}.b", tmp_path)
    assert [(r["id"], r["v"]) for r in theirs] == [(1, "one")]

    ok(rest_mock, tmp_path, "drop", f"{db}.b")
    listed = ok(rest_mock, tmp_path, "list", db)
    assert {"database": db, "table": "b"} not in listed and {"database": db, "table": "keep"} in listed
    assert "does not exist" in refused(rest_mock, tmp_path, "scan", f"{db}.b", code=3)
    assert ok(rest_mock, tmp_path, "drop", f"{db}.b", "--if-exists")["existed"] is False

    ok(rest_mock, tmp_path, "drop-database", db, "--cascade")
    assert db not in {r["database"] for r in ok(rest_mock, tmp_path, "list") or []}


def test_rollback_goes_through_the_server(rest_mock: Server, db: str, tmp_path: Path):
    name = f"{db}.t"
    ok(rest_mock, tmp_path, "create", name, "--schema", "id BIGINT, v STRING", "--primary-key", "id",
       "-o", "bucket=1")
    states = []
    model: dict[int, str] = {}
    for i, batch in enumerate([{1: "a"}, {2: "b"}, {1: "A", 3: "c"}]):
        ok(rest_mock, tmp_path, "write", name, "--input", csv(tmp_path, batch, f"w{i}.csv"))
        model.update(batch)
        states.append(dict(model))
    result = ok(rest_mock, tmp_path, "rollback", name, "--snapshot-id", 2)
    assert result["target_snapshot_id"] == 2
    assert scan(rest_mock, tmp_path, name) == states[1]
    theirs, meta = pypaimon_read(rest_mock, name, tmp_path)
    assert {r["id"]: r["v"] for r in theirs} == states[1] and meta["latest_snapshot"] == 2
    assert "does not exist" in refused(rest_mock, tmp_path, "rollback", name, "--snapshot-id", 9, code=3)


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory):
    with spec_server(tmp_path_factory.mktemp("rest-cli-spec")) as s:
        yield s


def test_tags_and_branches_go_through_the_server(spec: Server, db: str, tmp_path: Path):
    name = f"{db}.t"
    ok(spec, tmp_path, "create", name, "--schema", "id BIGINT, v STRING", "-o", "bucket=-1")
    table_dir = spec.data / spec.warehouse / f"{db}.db" / "t"
    for i in range(3):
        ok(spec, tmp_path, "write", name, "--input", csv(tmp_path, {i: str(i)}, f"s{i}.csv"))
    # The spec server writes no LATEST hint, and lakectl under a REST catalog writes none either.
    assert sorted(p.name for p in (table_dir / "snapshot").iterdir()) == ["snapshot-1", "snapshot-2", "snapshot-3"]

    assert ok(spec, tmp_path, "tag", "create", name, "first", "--snapshot-id", 1)["snapshot_id"] == 1
    assert (table_dir / "tag" / "tag-first").is_file()  # written by the server's createTag
    assert [t["tag"] for t in ok(spec, tmp_path, "tag", "list", name)] == ["first"]
    assert scan(spec, tmp_path, name, "--tag", "first") == {0: "0"}

    ok(spec, tmp_path, "branch", "create", name, "b", "--tag", "first")
    assert (table_dir / "branch" / "branch-b" / "snapshot" / "snapshot-1").is_file()
    tag_file = (table_dir / "tag" / "tag-first").read_bytes()
    assert "createBranch starts a branch at a tag" in refused(spec, tmp_path, "branch", "create", name, "c",
                                                              "--snapshot-id", 2)
    assert "no call to replace a tag" in refused(spec, tmp_path, "tag", "create", name, "first", "--snapshot-id", 2,
                                                 "--replace")
    assert (table_dir / "tag" / "tag-first").read_bytes() == tag_file  # nothing written by either
    assert not (table_dir / "branch" / "branch-c").exists()
    ok(spec, tmp_path, "write", name, "--branch", "b", "--input", csv(tmp_path, {10: "ten"}, "b.csv"))
    assert scan(spec, tmp_path, name, "--branch", "b") == {0: "0", 10: "ten"}

    ok(spec, tmp_path, "branch", "rename", name, "b", "renamed")  # the server's renameBranch
    assert not (table_dir / "branch" / "branch-b").exists()
    assert scan(spec, tmp_path, name, "--branch", "renamed") == {0: "0", 10: "ten"}
    ok(spec, tmp_path, "branch", "create", name, "other", "--tag", "first")
    assert "already exists" in refused(spec, tmp_path, "branch", "rename", name, "renamed", "other", code=1)
    ok(spec, tmp_path, "branch", "delete", name, "other")
    ok(spec, tmp_path, "branch", "rename", name, "renamed", "b")

    ok(spec, tmp_path, "branch", "fast-forward", name, "b")  # the server's forwardBranch moves main
    assert scan(spec, tmp_path, name) == {0: "0", 10: "ten"}

    ok(spec, tmp_path, "tag", "delete", name, "first")
    assert not (table_dir / "tag" / "tag-first").exists()
    ok(spec, tmp_path, "branch", "delete", name, "b")
    assert not (table_dir / "branch" / "branch-b").exists()
    assert ok(spec, tmp_path, "branch", "list", name) == []


def test_a_snapshot_the_server_accepted_is_never_checked_on_disk_or_undone(rest_mock: Server, db: str,
                                                                           monkeypatch: pytest.MonkeyPatch):
    """In process: the checks after a filesystem publish (each of which undoes ``snapshot-N``
    when it finds a reason) are made to find one every time; under a REST catalog none of them
    runs and nothing is undone, so the write lands once, on the first attempt."""
    import pyarrow as pa

    from core.catalog import CatalogConfig, open_catalog
    from core.commit import FileStoreCommit
    from core.ops.create import parse_columns
    from core.schema import new_table_schema
    from core.table import Table

    undone: list[int] = []
    monkeypatch.setattr(FileStoreCommit, "_illegitimate", lambda self, snap, base: "retired by an expire")
    monkeypatch.setattr(FileStoreCommit, "_table_still_there", lambda self: False)
    monkeypatch.setattr(FileStoreCommit, "_renamed_away", lambda self: True)
    monkeypatch.setattr(FileStoreCommit, "_missing_new_file", lambda self, messages: "data-x.parquet")
    monkeypatch.setattr(FileStoreCommit, "_undo", lambda self, snap: undone.append(snap.id))
    cat = open_catalog(CatalogConfig("rest", rest_mock.warehouse, rest_mock.options()))
    table = Table(cat.create_table(f"{db}.t", new_table_schema(parse_columns("id BIGINT"), options={"bucket": "-1"})))
    result = table.write(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert result.snapshot_id == 1 and undone == []
    assert sorted(r["id"] for r in table.scan().to_pylist()) == [1, 2]


def test_the_config_file_and_catalog_options_name_the_server(rest_mock: Server, db: str, tmp_path: Path):
    """``[catalog]`` in ./lakectl.toml names the server (its ``warehouse`` a name, not a path
    beside the file); ``--catalog-option`` gives the token (a wrong one is exit 7, before
    anything is created)."""
    if not LAKECTL.is_file():
        pytest.skip("the lakectl console script is not installed next to this python")
    (tmp_path / "lakectl.toml").write_text(
        f'[catalog]\nmetastore = "rest"\nuri = "{rest_mock.uri}"\nwarehouse = "{rest_mock.warehouse}"\n'
        'token.provider = "bear"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path / "home"))

    def console(*args: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(LAKECTL), *map(str, args)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)

    wrong = console("--catalog-option", "token=wrong", "-f", "json", "create", f"{db}.t", "--schema", "id BIGINT")
    assert wrong.returncode == 7 and "refused the token" in wrong.stderr, wrong.stderr
    done = console("--catalog-option", f"token={rest_mock.token}", "-f", "json", "create", f"{db}.t",
                   "--schema", "id BIGINT")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["path"] == str(rest_mock.data / rest_mock.warehouse / db / "t")
    # the table exists once, the one create that got through made it
    elsewhere = tmp_path / "elsewhere"  # no lakectl.toml: the environment names the server
    elsewhere.mkdir()
    assert ok(rest_mock, elsewhere, "list", db) == [{"database": db, "table": "t"}]


def test_alter_schema_goes_through_the_server(rest_mock: Server, db: str, tmp_path: Path):
    """alterTable: lakectl checks the changes as on a filesystem, the server applies them and
    writes schema-1 (the mock through pypaimon's own schema manager); lakectl and pypaimon 2.1
    read the rows in the new schema."""
    name = f"{db}.t"
    ok(rest_mock, tmp_path, "create", name, "--schema", "id BIGINT, v STRING", "--primary-key", "id",
       "-o", "bucket=1")
    ok(rest_mock, tmp_path, "write", name, "--input", csv(tmp_path, {1: "a", 2: "b"}, "a.csv"))
    table_dir = rest_mock.data / rest_mock.warehouse / db / "t"
    result = ok(rest_mock, tmp_path, "alter-schema", name, "--add-column", "n INT", "--rename-column", "v:w",
                "--set-option", "snapshot.num-retained.min=3")
    assert (result["previous_schema_id"], result["schema_id"], result["committed"]) == (0, 1, True)
    schema = json.loads((table_dir / "schema" / "schema-1").read_text())
    assert [f["name"] for f in schema["fields"]] == ["id", "w", "n"]
    assert schema["options"]["snapshot.num-retained.min"] == "3"
    expected = [{"id": 1, "w": "a", "n": None}, {"id": 2, "w": "b", "n": None}]
    assert sorted(ok(rest_mock, tmp_path, "scan", name), key=lambda r: r["id"]) == expected
    theirs, _ = pypaimon_read(rest_mock, name, tmp_path)
    assert sorted(theirs, key=lambda r: r["id"]) == expected
    # what lakectl refuses is refused before the server hears of it
    assert "primary key" in refused(rest_mock, tmp_path, "alter-schema", name, "--drop-column", "id")
    assert sorted(p.name for p in (table_dir / "schema").iterdir()) == ["schema-0", "schema-1"]


def test_completion_offers_the_servers_table_names(rest_mock: Server, db: str, tmp_path: Path):
    """`lakectl scan <db>.<TAB>` lists the tables the server names, as a shell's completion asks."""
    for name in ("orders", "order_lines"):
        ok(rest_mock, tmp_path, "create", f"{db}.{name}", "--schema", "id BIGINT")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path / "home"), **rest_mock.cli_env(),
               _LAKECTL_COMPLETE="complete_bash", COMP_WORDS=f"lakectl scan {db}.", COMP_CWORD="2")
    done = subprocess.run([str(LAKECTL)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(w for w in done.stdout.splitlines() if w) == [f"{db}.order_lines", f"{db}.orders"]
