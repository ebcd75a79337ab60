"""Busy and closing markers (core/busy.py): rename and drop wait for a command of several steps,
such a command stands back from a rename or drop, and markers of dead processes stop nobody."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from core import holders, rewrite
from core.busy import BUSY_PREFIX, CLOSING, closing, working
from core.errors import CommitConflictError, TableGoneError
from core.ops.create import create
from core.ops.drop import drop_table
from core.ops.rename import rename_table
from core.table import Table
from core.warehouse import Warehouse


@pytest.fixture
def wh(tmp_path: Path) -> str:
    warehouse = str(tmp_path / "wh")
    create(Table.locate("db.t", warehouse=warehouse), "id BIGINT, v STRING")
    return warehouse


def dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def marker(path: Path, pid: int, what: str) -> None:
    holder = f"{socket.gethostname()}:{pid}:abcd1234"
    path.write_text(json.dumps({"holder": holder, "started": 0.0, "what": what}))


def markers(table_dir: Path) -> list[str]:
    return sorted(p.name for p in table_dir.iterdir() if p.name.startswith(".lakectl-"))


def test_a_live_command_keeps_rename_off_and_a_dead_ones_marker_does_not(wh: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rewrite, "WAIT_SECONDS", 0.2)
    t = Table.open("db.t", warehouse=wh)
    table_dir = Path(t.path)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # a command stopped half-way
    try:
        marker(table_dir / f"{BUSY_PREFIX}live", live.pid, "roll back db.t to snapshot 1")
        with pytest.raises(CommitConflictError, match="'roll back db.t to snapshot 1' by .* is at work on db.t; "
                                                      "nothing was changed"):
            with closing(t.file_io, t.path, "db.t", "rename db.t to db.u", wait_seconds=0.2):
                pass
        with pytest.raises(CommitConflictError, match="cannot rename db.t to db.u: .* is at work on db.t"):
            rename_table(Warehouse.open(wh), "db.t", "db.u")
        assert markers(table_dir) == [f"{BUSY_PREFIX}live"]  # the refused rename left nothing behind
    finally:
        live.kill()
        live.wait()
    # Its process gone, the marker is abandoned: the rename goes through and it does not travel along.
    rename_table(Warehouse.open(wh), "db.t", "db.u")
    assert markers(Path(wh) / "db.db" / "u") == [] and not table_dir.exists()


def test_a_command_stands_back_from_a_live_rename_and_goes_past_a_dead_one(wh: str) -> None:
    t = Table.open("db.t", warehouse=wh)
    table_dir = Path(t.path)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        marker(table_dir / CLOSING, live.pid, "drop db.t")
        with pytest.raises(CommitConflictError, match="cannot expire tags: 'drop db.t' by .* is under way on db.t"):
            with working(t.file_io, t.path, "db.t", "expire tags"):
                raise AssertionError("the body must not run")
        assert markers(table_dir) == [CLOSING]  # its own busy marker is gone again
    finally:
        live.kill()
        live.wait()
    marker(table_dir / CLOSING, dead_pid(), "drop db.t")
    marker(table_dir / f"{BUSY_PREFIX}old", dead_pid(), "delete branch b")
    with working(t.file_io, t.path, "db.t", "expire tags"):
        ours = [n for n in markers(table_dir) if n.startswith(BUSY_PREFIX)]
        assert len(ours) == 1 and ours != [f"{BUSY_PREFIX}old"]  # the dead ones were cleared on the way
    assert markers(table_dir) == []
    assert not holders.HELD  # nothing of ours counts as live after the body


def test_a_command_on_a_table_renamed_away_changes_nothing_anywhere(wh: str) -> None:
    t = Table.open("db.t", warehouse=wh)
    rename_table(Warehouse.open(wh), "db.t", "db.u")
    with pytest.raises(TableGoneError, match="cannot delete branch b: table db.t was renamed or dropped"):
        with working(t.file_io, t.path, "db.t", "delete branch b"):
            raise AssertionError("the body must not run")
    assert not Path(t.path).exists()  # no fresh directory at the old name


def test_a_drop_waits_for_a_live_command_too(wh: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rewrite, "WAIT_SECONDS", 0.2)
    t = Table.open("db.t", warehouse=wh)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        marker(Path(t.path) / f"{BUSY_PREFIX}live", live.pid, "reset consumer c")
        with pytest.raises(CommitConflictError, match="cannot drop db.t: 'reset consumer c' by"):
            drop_table(t)
        with pytest.raises(CommitConflictError, match="cannot rename db.t to db.u: 'reset consumer c' by"):
            rename_table(Warehouse.open(wh), "db.t", "db.u")
        assert Table.open("db.t", warehouse=wh).snapshots.list_ids() == []  # still there, whole
    finally:
        live.kill()
        live.wait()
    drop_table(t)
    assert not Path(t.path).exists() and os.listdir(Path(wh) / "db.db") == []


def test_busy_markers_moved_by_a_local_rename_are_removed(wh: str) -> None:
    """A command that created its busy marker after the rename listed them stands back (it
    reads the closing marker next) or finds the table gone; had the directory taken its marker
    along, a live process's marker would hold off every later rename of the new name."""
    src = Path(wh) / "db.db" / "t"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        io = Warehouse.open(wh).file_io
        with closing(io, str(src), "db.t", "rename db.t to db.u") as held:
            marker(src / f"{BUSY_PREFIX}late", live.pid, "commit")  # created after the listing
            io.rename_dir(str(src), str(src.parent / "u"))
            held.moved_to(str(src.parent / "u"))
        assert not [p for p in (src.parent / "u").iterdir() if p.name.startswith(BUSY_PREFIX) or p.name == CLOSING]
        # ... so the next rename of the new name goes ahead while that process still runs.
        rename_table(Warehouse.open(wh), "db.u", "db.v")
        assert (src.parent / "v" / "schema").is_dir()
    finally:
        live.kill()
        live.wait()


def test_a_commit_stands_back_from_a_running_rename(wh: str) -> None:
    """A commit's busy marker (held from its publish to the end of its checks) and a rename's
    closing marker: a commit that finds the closing marker publishes nothing (exit 4)."""
    import pyarrow as pa

    t = Table.open("db.t", warehouse=wh)
    t.write(pa.table({"id": [1], "v": ["a"]}))
    io = t.file_io
    with closing(io, t.path, "db.t", "rename db.t to db.u"):
        with pytest.raises(CommitConflictError, match="rename db.t to db.u.*nothing was committed"):
            t.write(pa.table({"id": [2], "v": ["b"]}))
    assert t.snapshots.list_ids() == [1]
    assert sorted(r["id"] for r in t.scan().to_pylist()) == [1]
    assert not [n for n in os.listdir(t.path) if n.startswith(BUSY_PREFIX)]
