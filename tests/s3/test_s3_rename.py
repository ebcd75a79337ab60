"""rename on an s3:// warehouse (a real SeaweedFS): a copy by the store, then a delete.

The renamed table holds the source's rows and history (snapshots, tag, branch) for lakectl,
Java Paimon 1.0 and pypaimon; a failure or a kill before any of the rename's writes leaves the
old table or the new one readable (never neither) and the same rename run again finishes; an
existing target is refused; a commit landing on the source during the copy is in the result.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest
from test_s3_commands import Cli, _sources, isolated  # noqa: F401 - the autouse fixture

from core.errors import CommitConflictError, LakectlError, NotFoundError, RenameInProgressError
from core.fileio import inject_fault
from core.ops.branches import create_branch
from core.ops.check import check
from core.ops.create import create
from core.ops.drop import drop_table
from core.ops.rename import MAX_ROUNDS, rename_table
from core.ops.tags import create_tag
from core.table import Table
from core.warehouse import Warehouse

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from fault_lab import _run_forked  # noqa: E402

pytestmark = pytest.mark.s3

FIRST = [(1, "a", "x"), (2, "b", "x"), (3, "c", "y")]
SECOND = [(2, "b2", "x"), (4, "d", "y")]
EXPECTED = sorted([(1, "a", "x"), (2, "b2", "x"), (3, "c", "y"), (4, "d", "y")])


def _batch(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "v": [r[1] for r in rows],
                     "dt": [r[2] for r in rows]})


def _rows(t: Table, **kw: Any) -> list[tuple]:
    return sorted((r["id"], r["v"], r["dt"]) for r in t.scan(**kw).to_pylist())


def _objects(s3, prefix: str) -> list[str]:
    """The objects under ``prefix`` (SeaweedFS reports an emptied prefix as a directory: not one)."""
    found = s3.fs().find(prefix.split("://", 1)[1] + "/", detail=True)
    return sorted(p for p, info in found.items() if info.get("type") != "directory")


def _source(s3, warehouse: str, name: str = "db.src") -> Table:
    """A partitioned primary-key table: two commits, a tag on the first, a branch from the tag."""
    t = Table.locate(name, warehouse=warehouse, storage_options=s3.storage_options())
    create(t, "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    t.write(_batch(FIRST))
    create_tag(t, "first", snapshot_id=1)
    t.write(_batch(SECOND))
    create_branch(t, "side", tag="first")
    return t


def test_rename_on_s3_copies_rows_and_history(s3, tmp_path: Path) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    src = _source(s3, warehouse)
    objects = _objects(s3, src.path)
    size = sum(s3.fs().size(p) for p in objects)
    dry = cli.json("rename", "db.src", "db.dst", "--dry-run")
    assert (dry["method"], dry["files_copied"], dry["bytes_copied"], dry["dry_run"]) == ("copy", len(objects), size,
                                                                                          True)
    assert _objects(s3, src.path) == objects and _objects(s3, f"{warehouse}/db.db/dst") == []

    out = cli.json("rename", "db.src", "db.dst")
    assert (out["method"], out["files_copied"], out["bytes_copied"], out["files_deleted"], out["rounds"]) == (
        "copy", len(objects), size, len(objects), 1)
    assert _objects(s3, src.path) == []
    dst = Table.open("db.dst", warehouse=warehouse, storage_options=s3.storage_options())
    assert [p.split("/db.db/dst/", 1)[1] for p in _objects(s3, dst.path)] == \
        [p.split("/db.db/src/", 1)[1] for p in objects]
    assert cli.json("list", "db") == [{"database": "db", "table": "dst"}]
    assert _rows(dst) == EXPECTED and _rows(dst, snapshot_id=1) == sorted(FIRST)
    assert _rows(dst, tag="first") == sorted(FIRST) and check(dst).ok
    assert _rows(dst.on_branch("side")) == sorted(FIRST)
    assert [s["snapshot_id"] for s in cli.json("snapshots", "db.dst")] == [2, 1]
    assert cli.invoke("scan", "db.src").exit_code == 3
    # the renamed table takes commits
    dst.write(_batch([(9, "z", "x")]))
    assert _rows(dst) == sorted(EXPECTED + [(9, "z", "x")])


@pytest.mark.interop
@pytest.mark.java
def test_java_and_pypaimon_read_the_renamed_table(s3, tmp_path: Path) -> None:
    from java_oracle import java_read, lakectl_rows
    from oracle import official_read

    warehouse = s3.warehouse()
    _source(s3, warehouse)
    rename_table(Warehouse.open(warehouse, s3.storage_options()), "db.src", "db.dst")
    dst = Table.open("db.dst", warehouse=warehouse, storage_options=s3.storage_options())
    # a local copy in a warehouse's layout: the Java oracle opens a branch as db.t$branch_NAME
    local = tmp_path / "wh" / "db.db" / "dst"
    local.parent.mkdir(parents=True)
    s3.fs().get(dst.path.split("://", 1)[1] + "/", str(local) + "/", recursive=True)

    def pypaimon(**kw: Any) -> list[tuple]:
        data, _ = official_read(local, tmp_path, **kw)
        return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))))

    assert pypaimon() == EXPECTED and pypaimon(snapshot=1) == sorted(FIRST)
    rows, meta = java_read(local)
    assert rows == lakectl_rows(dst.scan()) and meta["latest_snapshot"] == 2
    assert java_read(local, snapshot=1)[0] == lakectl_rows(dst.scan(snapshot_id=1))
    assert java_read(local, tag="first")[0] == lakectl_rows(dst.scan(tag="first"))
    assert java_read(local, branch="side")[0] == lakectl_rows(dst.on_branch("side").scan())


@pytest.mark.interop
@pytest.mark.java
def test_java_and_pypaimon_see_no_table_before_the_schema_files(s3, tmp_path: Path) -> None:
    """A rename stopped right before its first schema file leaves everything else copied; to
    Java Paimon and pypaimon that directory is no table (lakectl names the rerun)."""
    from java_oracle import java_read
    from oracle import official_read

    warehouse, options = s3.warehouse(), s3.storage_options()
    src = _source(s3, warehouse)
    objects = _objects(s3, src.path)
    schemas = [p for p in objects if "/db.db/src/schema/" in p]
    first_schema_copy = 2 + (len(objects) - len(schemas)) + 1  # after the closing marker, RENAMING and every other file
    with inject_fault("fail", "mutation", first_schema_copy):
        with pytest.raises(RenameInProgressError, match="rerun lakectl rename db.src db.dst"):
            rename_table(Warehouse.open(warehouse, options), "db.src", "db.dst")
    copied = _objects(s3, f"{warehouse}/db.db/dst")
    assert len(copied) == len(objects) - len(schemas) + 1  # every other file, and RENAMING
    local = tmp_path / "dst"
    s3.fs().get(f"{warehouse.split('://', 1)[1]}/db.db/dst/", str(local) + "/", recursive=True)
    assert (local / "snapshot").is_dir() and not (local / "schema").exists()
    with pytest.raises(AssertionError, match=r"failed \(exit"):
        java_read(local)
    with pytest.raises(AssertionError, match=r"failed \(exit"):
        official_read(local, tmp_path)
    with pytest.raises(RenameInProgressError):
        Table.open("db.dst", warehouse=warehouse, storage_options=options)
    assert _rows(Table.open("db.src", warehouse=warehouse, storage_options=options)) == EXPECTED


def _state(s3, warehouse: str, src: str, dst: str, *, tag: bool = False) -> str:
    """Which name holds the table for lakectl: "old", "new"; the other must refuse or be absent."""
    options = s3.storage_options()
    readable = []
    for name in (src, dst):
        try:
            t = Table.open(name, warehouse=warehouse, storage_options=options)
        except RenameInProgressError as e:
            assert f"rerun lakectl rename {src} {dst}" in str(e), str(e)
            continue
        except NotFoundError:
            continue
        assert _rows(t) == EXPECTED, name
        assert not tag or _rows(t, tag="first") == sorted(FIRST), name
        readable.append("old" if name == src else "new")
    assert len(readable) == 1, f"readable: {readable}"
    return readable[0]


@pytest.mark.slow
@pytest.mark.parametrize("action", ["fail", "kill"])
def test_rename_interrupted_before_every_write_then_rerun(s3, tmp_path: Path, action: str) -> None:
    """Fault the n-th write (copy, marker, delete) of a rename until the rename runs through;
    each time exactly one name reads as the table, and the rerun finishes. A kill leaves the
    store as it was before the n-th write, so kills go through every n; a failure leaves the
    same store and differs only in the rename's own exception path, so it is tried at every
    third n (1, 4, 7, ...), which keeps the run's time in check."""
    warehouse = s3.warehouse()
    options = s3.storage_options()
    template = _source(s3, warehouse, "db.template")
    fs = s3.fs()
    seen = set()
    for n in range(1, 300, 1 if action == "kill" else 3):
        src, dst = f"db.s{n}", f"db.d{n}"
        fs.copy(template.path.split("://", 1)[1] + "/", f"{warehouse.split('://', 1)[1]}/db.db/s{n}/",
                recursive=True)

        def run() -> None:
            with inject_fault(action, "mutation", n):
                rename_table(Warehouse.open(warehouse, options), src, dst)

        if action == "kill":
            status = _run_forked(run, 120, f"kill:mutation:{n}")
            interrupted = os.WIFSIGNALED(status)
            assert not interrupted or os.WTERMSIG(status) == signal.SIGKILL
            assert interrupted or os.WEXITSTATUS(status) == 0, f"n={n}: exit {status}"
        else:
            try:
                run()
                interrupted = False
            except (OSError, LakectlError):
                interrupted = True
        state = _state(s3, warehouse, src, dst)
        seen.add(state)
        if interrupted:
            result = rename_table(Warehouse.open(warehouse, options), src, dst)  # the rerun finishes
            # The first write is the closing marker (core/busy.py), the second RENAMING: before
            # RENAMING, nothing had begun (a dead rename's closing marker is simply taken over).
            assert result.resumed == (n > 2)
        assert _objects(s3, f"{warehouse}/db.db/s{n}") == []
        renamed = Table.open(dst, warehouse=warehouse, storage_options=options)
        assert renamed.snapshots.list_ids() == [1, 2] and renamed.tags.names() == ["first"]
        if not interrupted:
            assert state == "new" and _state(s3, warehouse, src, dst, tag=True) == "new" and check(renamed).ok
            assert _rows(renamed.on_branch("side")) == sorted(FIRST)
            break
        assert _rows(renamed) == EXPECTED
    else:
        raise AssertionError("the rename was still interrupted after 300 writes")
    assert seen == {"old", "new"}


def test_rename_refuses_an_existing_target_and_another_renames_copy(s3, tmp_path: Path) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    options = s3.storage_options()
    _source(s3, warehouse, "db.a")
    _source(s3, warehouse, "db.b")
    before = _objects(s3, warehouse)
    taken = cli.invoke("rename", "db.a", "db.b")
    assert taken.exit_code == 1 and "db.b already exists" in taken.stderr and _objects(s3, warehouse) == before

    # a rename of a into c that stopped half-way (after the closing marker, the marker and a few copies)
    with inject_fault("fail", "mutation", 7):
        with pytest.raises(RenameInProgressError, match="rerun lakectl rename db.a db.c"):
            rename_table(Warehouse.open(warehouse, options), "db.a", "db.c")
    for args in (("scan", "db.c"), ("snapshots", "db.c"), ("write", "db.c", "-i", "-")):
        refused = cli.invoke(*args)
        assert refused.exit_code == 1, args
        assert ("error: a rename from db.a into db.c is in progress or failed; rerun lakectl rename db.a db.c"
                in refused.stderr.splitlines()), args
    other = cli.invoke("rename", "db.b", "db.c")
    assert other.exit_code == 1 and "rerun lakectl rename db.a db.c" in other.stderr
    assert cli.invoke("create", "db.c", "-s", "id INT").exit_code == 1
    assert sorted(r["id"] for r in cli.json("scan", "db.a")) == [r[0] for r in EXPECTED]  # the source is intact
    # drop abandons the partial copy (it has no schema files: a rename's marker makes it droppable)
    assert cli.json("drop", "db.c")["files_deleted"] > 0 and _objects(s3, f"{warehouse}/db.db/c") == []
    assert cli.json("rename", "db.a", "db.c")["rounds"] == 1
    assert sorted(r["id"] for r in cli.json("scan", "db.c")) == [r[0] for r in EXPECTED]


def test_a_leftover_of_the_source_is_removed_by_the_rerun_or_by_drop(s3) -> None:
    warehouse = s3.warehouse()
    options = s3.storage_options()
    for finish in ("rerun", "drop"):
        src = _source(s3, warehouse, f"db.{finish}")
        count = len(_objects(s3, src.path))
        # writes: RENAMING, the copies, RENAMED; deletes: RENAMING, then the source's schema file
        # and two more of its files before the fault
        with inject_fault("fail", "delete", 4):
            with pytest.raises(RenameInProgressError):
                rename_table(Warehouse.open(warehouse, options), f"db.{finish}", f"db.{finish}_new")
        left = _objects(s3, src.path)
        assert 0 < len(left) < count and not any(f"/db.db/{finish}/schema/" in p for p in left)
        assert any(p.endswith("/RENAMED") for p in left)
        assert _rows(Table.open(f"db.{finish}_new", warehouse=warehouse, storage_options=options)) == EXPECTED
        # the table has its new name: the old one does not exist (exit 3), and the message names the rerun
        with pytest.raises(NotFoundError, match=f"renamed to db.{finish}_new .* lakectl rename db.{finish} "
                                                f"db.{finish}_new finishes it"):
            Table.open(f"db.{finish}", warehouse=warehouse, storage_options=options)
        if finish == "rerun":
            again = rename_table(Warehouse.open(warehouse, options), f"db.{finish}", f"db.{finish}_new")
            assert again.resumed and again.files_deleted == len(left) - 1 and again.files_copied == 0  # not RENAMED
        else:
            assert drop_table(Table.locate(f"db.{finish}", warehouse=warehouse, storage_options=options)
                              ).files_deleted == len(left)
        assert _objects(s3, src.path) == []
        assert _rows(Table.open(f"db.{finish}_new", warehouse=warehouse, storage_options=options)) == EXPECTED


def _committing(t: Table, times: int) -> Callable[[int, int, str], None]:
    """A progress callback that commits one row on ``t`` when a copy round has copied its data
    files (the call where done == total), in each of the first ``times`` rounds: a writer
    committing while the rename copies."""
    calls = []

    def progress(done: int, total: int, what: str) -> None:
        if done == total and len(calls) < times:
            calls.append(done)
            t.write(_batch([(100 + len(calls), f"during{len(calls)}", "z")]))

    return progress


def test_a_commit_during_the_copy_is_copied_too(s3) -> None:
    warehouse = s3.warehouse()
    options = s3.storage_options()
    src = _source(s3, warehouse)
    writer = Table.open("db.src", warehouse=warehouse, storage_options=options)
    result = rename_table(Warehouse.open(warehouse, options), "db.src", "db.dst", progress=_committing(writer, 1))
    assert result.rounds == 2  # the second round copied the commit the first one missed
    dst = Table.open("db.dst", warehouse=warehouse, storage_options=options)
    assert _rows(dst) == sorted(EXPECTED + [(101, "during1", "z")]) and dst.snapshots.list_ids() == [1, 2, 3]
    assert check(dst).ok and _objects(s3, src.path) == []
    # the listings the rounds compare carry each object's ETag: a hint rewritten within the
    # second (LastModified's resolution) with as many bytes still reads as changed
    assert all(f.etag for f in dst.file_io.walk(dst.path))


def test_a_source_that_never_holds_still_is_left_intact(s3) -> None:
    warehouse = s3.warehouse()
    options = s3.storage_options()
    src = _source(s3, warehouse)
    writer = Table.open("db.src", warehouse=warehouse, storage_options=options)
    with pytest.raises(CommitConflictError, match="kept changing"):
        rename_table(Warehouse.open(warehouse, options), "db.src", "db.dst", progress=_committing(writer, 100))
    assert _objects(s3, f"{warehouse}/db.db/dst") == []
    during = [(100 + i, f"during{i}", "z") for i in range(1, MAX_ROUNDS + 1)]
    assert _rows(Table.open("db.src", warehouse=warehouse, storage_options=options)) == sorted(EXPECTED + during)
