"""expire on a full disk: when its journal cannot be written (ENOSPC, EDQUOT) it goes on without
one, in the same order (snapshots oldest first, EARLIEST, then files), so it frees the space a
journaled run would; a kill then leaves only what a rerun and remove-orphan-files clear up.

Simulated with a FileIO whose journal write raises ENOSPC, and, where the machine lets the
tests mount one, on a real tmpfs filled to the last byte (through the console script)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import StorageFullError
from core.fileio import FileIO, inject_fault
from core.ops.check import check
from core.ops.create import create
from core.ops.expire import JOURNAL_PREFIX, expire_snapshots
from core.ops.orphans import remove_orphan_files
from core.table import Table
from fault_lab import _run_forked

WRITES = 5
_ORIGINAL = {name: getattr(FileIO, name) for name in ("write_bytes", "overwrite_hint", "delete")}


def rows_of(i: int) -> list[dict]:
    return [{"id": i * 10 + j, "v": f"w{i}-{j}"} for j in range(3)]


def overwritten_table(wh: Path) -> Table:
    """db.t: WRITES overwrites, so snapshot i holds rows_of(i) and every older file is garbage."""
    t = Table.locate("db.t", warehouse=str(wh))
    create(t, "id INT, v STRING")
    for i in range(1, WRITES + 1):
        t.write(pa.Table.from_pylist(rows_of(i), pa.schema([("id", pa.int32()), ("v", pa.string())])),
                mode="overwrite")
    return Table.open("db.t", warehouse=str(wh))


def tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


def scan(t: Table, **at: int) -> list[dict]:
    return sorted(t.scan(**at).to_pylist(), key=lambda r: r["id"])


@pytest.fixture()
def full_disk(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Journal writes fail with ENOSPC after writing half their bytes (a torn file), and so does
    the first EARLIEST write after that (the disk is full from the first journal on: the
    EARLIEST hints the writers' own expires write while the table is built go through);
    returns the log of deletes and hint writes, in order."""
    events: list[tuple[str, str]] = []
    write_bytes, overwrite_hint, delete = FileIO.write_bytes, FileIO.overwrite_hint, FileIO.delete
    hint_failures: list[int] = []
    armed: list[bool] = []

    def full_write(self: FileIO, path: str, data: bytes) -> None:
        if os.path.basename(path).startswith(JOURNAL_PREFIX):
            write_bytes(self, path, data[: len(data) // 2])
            if not armed:
                armed.append(True)
                hint_failures.append(1)
            raise OSError(errno.ENOSPC, "No space left on device", path)
        write_bytes(self, path, data)

    def full_hint(self: FileIO, path: str, text: str) -> None:
        if path.endswith("EARLIEST") and hint_failures:
            hint_failures.pop()
            raise OSError(errno.ENOSPC, "No space left on device", path)
        events.append(("hint", os.path.basename(path)))
        overwrite_hint(self, path, text)

    def logged_delete(self: FileIO, path: str) -> None:
        events.append(("delete", path))
        delete(self, path)

    monkeypatch.setattr(FileIO, "write_bytes", full_write)
    monkeypatch.setattr(FileIO, "overwrite_hint", full_hint)
    monkeypatch.setattr(FileIO, "delete", logged_delete)
    return events


def test_expire_without_room_for_its_journal_frees_what_a_journaled_run_frees(
        tmp_path: Path, full_disk: list[tuple[str, str]]) -> None:
    reference_wh, full_wh = tmp_path / "reference", tmp_path / "full"
    overwritten_table(reference_wh)
    shutil.copytree(reference_wh, full_wh)
    reference = _expire_with_room(reference_wh)  # the reference run has room for its journal
    full_disk.clear()

    t = Table.open("db.t", warehouse=str(full_wh))
    before = sum(tree(full_wh).values())
    result = expire_snapshots(t, retain_min=1, retain_max=1)

    assert result == reference
    assert result.snapshots_expired == [1, 2, 3, 4] and result.bytes_deleted > 0
    assert tree(full_wh) == tree(reference_wh)  # the same files gone; no journal, torn or whole
    assert before - sum(tree(full_wh).values()) >= result.bytes_deleted
    assert (full_wh / "db.db/t/snapshot/EARLIEST").read_text() == "5"
    assert scan(t) == rows_of(WRITES) and check(t).ok
    # the safe order: snapshots oldest first, then files; EARLIEST (refused at first) after them
    # (the busy and rewrite markers' creates and deletes bracket the run: core/busy.py, core/rewrite.py)
    full_disk[:] = [(kind, path) for kind, path in full_disk
                    if not path.endswith("/snapshot/REWRITE") and "/.lakectl-busy-" not in path]
    deletes = [path for kind, path in full_disk if kind == "delete"]
    journal_deletes = [p for p in deletes if os.path.basename(p).startswith(JOURNAL_PREFIX)]
    assert len(journal_deletes) == 1 and deletes[0] == journal_deletes[0]
    snapshot_deletes = [p for p in deletes[1:] if "/snapshot/snapshot-" in p]
    assert snapshot_deletes == [str(full_wh / f"db.db/t/snapshot/snapshot-{i}") for i in (1, 2, 3, 4)]
    assert deletes[1:5] == snapshot_deletes
    assert full_disk[-1] == ("hint", "EARLIEST")


def _expire_with_room(wh: Path) -> object:
    """The same expire with a journal (the fixture's patches undone for the call)."""
    t = Table.open("db.t", warehouse=str(wh))
    with pytest.MonkeyPatch.context() as mp:
        for name in ("write_bytes", "overwrite_hint", "delete"):
            mp.setattr(FileIO, name, _ORIGINAL[name])
        return expire_snapshots(t, retain_min=1, retain_max=1)


def test_any_other_journal_failure_still_stops_expire_before_it_deletes(tmp_path: Path) -> None:
    t = overwritten_table(tmp_path / "wh")
    before = tree(tmp_path / "wh")
    with inject_fault("fail", "write", 1), pytest.raises(OSError, match="injected fault"):
        expire_snapshots(t, retain_min=1, retain_max=1)
    assert tree(tmp_path / "wh") == before


def test_a_full_disk_error_is_named_and_still_an_oserror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FileIO turns ENOSPC into StorageFullError naming the path; code that treats a failed
    write as an unknown outcome still sees an OSError with its errno."""
    import core.fileio

    fio = FileIO.for_uri(str(tmp_path))
    real_open = open

    def full(path: str, mode: str = "r", *args: object, **kwargs: object) -> object:
        """The disk fills up at the write of the file (a local write opens it with ``open``)."""
        if "w" not in mode:
            return real_open(path, mode, *args, **kwargs)
        raise OSError(errno.ENOSPC, "full")

    monkeypatch.setattr(core.fileio, "open", full, raising=False)
    with pytest.raises(StorageFullError) as caught:
        fio.write_bytes(str(tmp_path / "x"), b"1")
    assert str(caught.value) == f"storage: no space left on device at {tmp_path / 'x'}"
    assert isinstance(caught.value, OSError) and caught.value.errno == errno.ENOSPC


@pytest.mark.parametrize("kill_at", [1, 3, 5, 7, 9, 12])
def test_killed_without_a_journal_leaves_readable_snapshots_and_orphans_only(
        tmp_path: Path, full_disk: list[tuple[str, str]], kill_at: int) -> None:
    """A kill before the n-th delete of a journal-less run: every listed snapshot still reads as
    written; a rerun of expire and remove-orphan-files then leave what one clean run leaves."""
    reference_wh, wh = tmp_path / "reference", tmp_path / "wh"
    overwritten_table(reference_wh)
    shutil.copytree(reference_wh, wh)
    _expire_with_room(reference_wh)
    t = Table.open("db.t", warehouse=str(wh))

    def body() -> None:
        with inject_fault("kill", "delete", kill_at + 1):  # the first delete is the torn journal's
            expire_snapshots(t, retain_min=1, retain_max=1)

    status = _run_forked(body, 60, f"kill at delete {kill_at}")
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    t = Table.open("db.t", warehouse=str(wh))
    listed = t.snapshots.list_ids()
    assert listed[-1] == WRITES and listed == list(range(listed[0], WRITES + 1))
    for sid in listed:
        assert scan(t, snapshot_id=sid) == rows_of(sid)
    _expire_with_room(wh)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(FileIO, "delete", _ORIGINAL["delete"])
        remove_orphan_files(t, older_than="0s", force=True)
    assert tree(wh) == tree(reference_wh)
    assert scan(t) == rows_of(WRITES) and check(t).ok


# ---- a real full filesystem ------------------------------------------------------------------
@pytest.fixture()
def tiny_tmpfs(tmp_path: Path) -> Path:
    """A 3 MiB tmpfs, where the machine lets the tests mount one (root with CAP_SYS_ADMIN)."""
    mount_point = tmp_path / "tmpfs"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


def _fill(directory: Path) -> Path:
    """Fill the filesystem of ``directory`` to the last block; returns the filler file."""
    filler = directory / f"filler-{uuid.uuid4().hex}"
    with open(filler, "wb", buffering=0) as f:
        with pytest.raises(OSError) as full:
            while True:
                f.write(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC
    with open(directory / "one-more", "wb", buffering=0) as f, pytest.raises(OSError):
        f.write(b"\0" * 4096)  # really full: not one more block
    (directory / "one-more").unlink()
    return filler


def _lakectl(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("lakectl")
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=120)


def test_expire_and_remove_orphan_files_free_space_on_a_full_tmpfs(tiny_tmpfs: Path, tmp_path: Path) -> None:
    wh = tiny_tmpfs / "wh"
    t = overwritten_table(wh)
    (wh / "db.db/t/bucket-0/orphan.parquet").write_bytes(b"\1" * 20000)  # a killed write's leftover
    old = 1_000_000_000
    os.utime(wh / "db.db/t/bucket-0/orphan.parquet", (old, old))
    _fill(tiny_tmpfs)
    free_before = shutil.disk_usage(tiny_tmpfs).free
    # a write needs room: it fails with a named storage error
    data = tmp_path / "more.csv"
    data.write_text("id,v\n100,x\n")
    written = _lakectl("write", "db.t", "-w", str(wh), "-i", str(data))
    assert written.returncode == 11, written.stderr
    assert written.stderr.startswith("error: storage: no space left on device at "), written.stderr

    expired = _lakectl("expire", "db.t", "-w", str(wh), "--retain-max", "1", "--retain-min", "1",
                       "--older-than", "0s", "-f", "json")
    assert expired.returncode == 0, expired.stderr
    assert not [p for p in (wh / "db.db/t/snapshot").iterdir() if p.name.startswith(JOURNAL_PREFIX)]
    assert sorted(p.name for p in (wh / "db.db/t/snapshot").iterdir()) == ["EARLIEST", "LATEST", f"snapshot-{WRITES}"]
    assert (wh / "db.db/t/snapshot/EARLIEST").read_text() == str(WRITES)
    freed_by_expire = shutil.disk_usage(tiny_tmpfs).free - free_before
    assert freed_by_expire > 0

    orphans = _lakectl("remove-orphan-files", "db.t", "-w", str(wh), "--older-than", "1d", "-f", "json")
    assert orphans.returncode == 0, orphans.stderr
    assert not (wh / "db.db/t/bucket-0/orphan.parquet").exists()
    assert shutil.disk_usage(tiny_tmpfs).free - free_before >= freed_by_expire + 20000
    assert scan(Table.open("db.t", warehouse=str(wh))) == rows_of(WRITES)
