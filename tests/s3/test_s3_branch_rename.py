"""branch rename on an s3:// warehouse (a real SeaweedFS): the branch's files copied by the store,
then the old directory deleted (core/ops/branch_rename.py).

The renamed branch holds the old one's rows, snapshots and tag for lakectl and Java Paimon 1.0;
a kill before any of the rename's writes leaves exactly one of the two names a whole branch
with those rows, and the same rename run again finishes; a commit to the old name that lands
before the rename's last look is in the result, one after it is refused (exit 4) and kept out.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from test_s3_commands import Cli, _sources, isolated  # noqa: F401 - the autouse fixture
from test_s3_rename import _batch, _objects, _rows

import core.ops.branch_rename as branch_rename
from core.branch import LEFTOVER, WHOLE, branch_state
from core.errors import CommitConflictError
from core.fileio import inject_fault
from core.ops.branches import create_branch, rename_branch
from core.ops.check import check
from core.ops.create import create
from core.ops.tags import create_tag
from core.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from fault_lab import _run_forked  # noqa: E402

pytestmark = pytest.mark.s3

FIRST = [(1, "a", "x"), (2, "b", "x"), (3, "c", "y")]
ON_BRANCH = [(2, "b-side", "x"), (5, "e", "y")]
MAIN_LATER = [(4, "d", "y")]
SIDE = sorted([(1, "a", "x"), (2, "b-side", "x"), (3, "c", "y"), (5, "e", "y")])


def _table(s3, warehouse: str, name: str = "db.t") -> Table:
    """A partitioned primary-key table; branch ``side`` from tag ``first``, with a commit and a
    tag of its own; main moves on."""
    t = Table.locate(name, warehouse=warehouse, storage_options=s3.storage_options())
    create(t, "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    t.write(_batch(FIRST))
    create_tag(t, "first", snapshot_id=1)
    create_branch(t, "side", tag="first")
    side = t.on_branch("side")
    side.write(_batch(ON_BRANCH))
    create_tag(side, "side-tag", snapshot_id=2)
    t.write(_batch(MAIN_LATER))
    return t


def _holder(t: Table, old: str, new: str) -> str:
    """The one name that is a whole branch reading the side branch's rows; the other must be a
    leftover or absent (never both whole, never neither)."""
    whole = [n for n in (old, new) if branch_state(t, n) == WHOLE]
    assert len(whole) == 1, f"whole: {whole}"
    b = t.on_branch(whole[0])
    assert _rows(b) == SIDE and b.snapshots.list_ids() == [1, 2] and b.tags.names() == ["first", "side-tag"]
    return whole[0]


@pytest.mark.java
def test_branch_rename_on_s3_moves_the_branch(s3, tmp_path: Path) -> None:
    from java_oracle import java_read, lakectl_rows

    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    t = _table(s3, warehouse)
    old_dir = f"{t.path}/branch/branch-side"
    before = [p.split("/branch-side/", 1)[1] for p in _objects(s3, old_dir)]
    main_before = _rows(t)
    dry = cli.json("branch", "rename", "db.t", "side", "renamed", "--dry-run")
    assert dry["dry_run"] and [p.split("/branch-side/", 1)[1] for p in _objects(s3, old_dir)] == before

    out = cli.json("branch", "rename", "db.t", "side", "renamed")
    assert (out["branch"], out["new_name"], out["dry_run"]) == ("side", "renamed", False)
    assert _objects(s3, old_dir) == []
    assert [p.split("/branch-renamed/", 1)[1] for p in _objects(s3, f"{t.path}/branch/branch-renamed")] == before
    assert [b["branch"] for b in cli.json("branch", "list", "db.t")] == ["renamed"]
    renamed = t.on_branch("renamed")
    assert _rows(renamed) == SIDE and _rows(renamed, tag="side-tag") == SIDE and _rows(t) == main_before
    assert check(t).ok
    assert cli.invoke("scan", "db.t", "--branch", "side").exit_code == 3
    renamed.write(_batch([(9, "z", "x")]))  # the branch takes commits under its new name
    assert _rows(renamed) == sorted(SIDE + [(9, "z", "x")])
    # Java Paimon reads it under its new name, from a local copy in a warehouse's layout
    local = tmp_path / "wh" / "db.db" / "t"
    local.parent.mkdir(parents=True)
    s3.fs().get(t.path.split("://", 1)[1] + "/", str(local) + "/", recursive=True)
    assert java_read(local, branch="renamed")[0] == lakectl_rows(renamed.scan())


@pytest.mark.slow
def test_branch_rename_killed_before_every_write_then_rerun(s3) -> None:
    """Kill the rename before its n-th write (marker, copy, delete) for every n until it runs
    through: each time exactly one name is the whole branch, and the rerun finishes."""
    warehouse = s3.warehouse()
    options = s3.storage_options()
    seen = set()
    for n in range(1, 200):
        t = _table(s3, warehouse, f"db.k{n}")

        def run() -> None:
            with inject_fault("kill", "mutation", n):
                rename_branch(Table.open(f"db.k{n}", warehouse=warehouse, storage_options=options), "side", "moved")

        status = _run_forked(run, 120, f"kill:mutation:{n}")
        interrupted = os.WIFSIGNALED(status)
        assert not interrupted or os.WTERMSIG(status) == signal.SIGKILL
        assert interrupted or os.WEXITSTATUS(status) == 0, f"n={n}: exit {status}"
        seen.add(_holder(t, "side", "moved"))
        # killed at the very end (an emptied prefix's removal) there is nothing left to rerun
        if interrupted and _objects(s3, f"{t.path}/branch/branch-side"):
            rename_branch(Table.open(f"db.k{n}", warehouse=warehouse, storage_options=options), "side", "moved")
        assert _holder(t, "side", "moved") == "moved"
        assert _objects(s3, f"{t.path}/branch/branch-side") == [] and check(t).ok
        if not interrupted:
            break
    else:
        raise AssertionError("the rename was still interrupted after 200 writes")
    assert seen == {"side", "moved"}


def test_a_commit_before_the_last_look_is_copied_one_after_is_refused(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = s3.warehouse()
    options = s3.storage_options()
    t = _table(s3, warehouse)
    writer = Table.open("db.t", warehouse=warehouse, storage_options=options).on_branch("side")
    original_copy, original_changed = branch_rename.copy_until_stable, branch_rename.source_changed
    refused = []

    def copy_then_commit(*args: Any, **kw: Any):  # type: ignore[no-untyped-def]
        copied = original_copy(*args, **kw)
        if copied is not None and not refused:  # after the rounds held still, before RENAMED
            writer.write(_batch([(7, "before-marker", "y")]))
            refused.append(None)
        return copied

    def commit_then_look(*args: Any, **kw: Any) -> bool:
        # RENAMED is there now: this commit must take itself back (exit 4), nothing of it kept
        with pytest.raises(CommitConflictError, match="branch side of db.t is being renamed"):
            writer.write(_batch([(8, "after-marker", "y")]))
        refused.append("after")
        return original_changed(*args, **kw)

    monkeypatch.setattr(branch_rename, "copy_until_stable", copy_then_commit)
    monkeypatch.setattr(branch_rename, "source_changed", commit_then_look)
    rename_branch(t, "side", "moved")
    assert refused == [None, "after"]
    moved = t.on_branch("moved")
    assert _rows(moved) == sorted(SIDE + [(7, "before-marker", "y")]) and moved.snapshots.list_ids() == [1, 2, 3]
    assert branch_state(t, "side") != WHOLE and _objects(s3, f"{t.path}/branch/branch-side") == []
    assert check(t).ok


def test_a_leftover_target_of_another_kind_is_refused_and_the_old_name_stays(s3, tmp_path: Path) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    t = _table(s3, warehouse)
    # a branch create of "moved" killed half-way (its UNFINISHED marker and a snapshot only)
    t.file_io.write_bytes(f"{t.path}/branch/branch-moved/UNFINISHED", b'{"command": "branch create"}')
    assert branch_state(t, "moved") == LEFTOVER
    refused = cli.invoke("branch", "rename", "db.t", "side", "moved")
    assert refused.exit_code == 1 and "lakectl branch delete db.t moved" in refused.stderr
    assert _holder(t, "side", "moved") == "side"
    assert cli.json("branch", "delete", "db.t", "moved")["leftover"]
    cli.json("branch", "rename", "db.t", "side", "moved")
    assert _holder(t, "side", "moved") == "moved"
