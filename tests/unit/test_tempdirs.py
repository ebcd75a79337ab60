"""The temp-folder sweep (core.tempdirs): spill directories and core archives of dead lakectl
processes are removed once old enough; those of live processes, young ones, other people's
names and anything else are kept; and a real ``lakectl write`` killed mid-write leaves its
spill directory behind, which the next write removes. Every test uses its own temp folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import tempdirs
from core.tempdirs import DEAD_AFTER, UNKNOWN_AFTER, spill_prefix, sweep

REPO = Path(__file__).resolve().parents[2]


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def make(root: Path, name: str, age: float, *, directory: bool = True) -> Path:
    path = root / name
    if directory:
        path.mkdir()
        (path / "spill-0.arrow").write_bytes(b"rows")
    else:
        path.write_bytes(b"zip")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_leftovers_of_dead_processes_go_and_everything_else_stays(tmp_path: Path) -> None:
    dead = dead_pid()
    live = os.getppid()  # the process that started pytest: alive while we run
    old, young = DEAD_AFTER + 60, DEAD_AFTER - 60
    gone = [
        make(tmp_path, f"lakectl-spill-{dead}-abc_123", old),
        make(tmp_path, "lakectl-spill-k2j4h5g6", UNKNOWN_AFTER + 60),  # old style, no pid
        make(tmp_path, f"lakectl-core-{dead}-x1y2z3.zip", old, directory=False),
        make(tmp_path, "lakectl-core-q1w2e3r4.zip", UNKNOWN_AFTER + 60, directory=False),
    ]
    kept = [
        make(tmp_path, f"lakectl-spill-{dead}-young", young),
        make(tmp_path, f"lakectl-spill-{live}-running", old),
        make(tmp_path, f"lakectl-spill-{os.getpid()}-mine", old),
        make(tmp_path, "lakectl-spill-a1b2c3d4", UNKNOWN_AFTER - 60),  # old style, not a day old yet
        make(tmp_path, f"lakectl-spill-{dead}-a-file", old, directory=False),  # not what a spill is
        make(tmp_path, f"lakectl-core-{dead}-x.jar", old, directory=False),
        make(tmp_path, f"other-spill-{dead}-x", old),
        make(tmp_path, f"lakectl-spark-conf-{dead}-x", old),
        make(tmp_path, "lakectl-spill-0-pid-zero", old),  # os.kill(0, 0) would mean our own group
    ]
    removed = sweep(str(tmp_path))
    assert sorted(removed) == sorted(str(p) for p in gone)
    assert not any(p.exists() for p in gone)
    assert all(p.exists() for p in kept)


def test_the_sweep_never_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sweep(str(tmp_path / "no such folder")) == []
    leftover = make(tmp_path, f"lakectl-spill-{dead_pid()}-x", DEAD_AFTER + 60)

    def refuse(path: str) -> None:
        raise PermissionError(13, "denied", path)

    monkeypatch.setattr(tempdirs.shutil, "rmtree", refuse)
    assert sweep(str(tmp_path)) == [] and leftover.exists()


def test_spill_directories_carry_the_pid() -> None:
    assert spill_prefix() == f"lakectl-spill-{os.getpid()}-"


def _lakectl(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k not in ("PYTHONPATH", "TMPDIR")}
    return subprocess.run([sys.executable, "-m", "lakectl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**clean, "PYTHONPATH": str(REPO), "HOME": str(cwd), **env})


@pytest.mark.slow
def test_a_killed_write_leaves_its_spill_directory_and_the_next_write_removes_it(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    wh = str(tmp_path / "wh")
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(f'{{"id": {i}, "v": "value {i}"}}\n' for i in range(5000)))
    created = _lakectl(["-w", wh, "create", "db.t", "-s", "id BIGINT, v STRING", "--primary-key", "id",
                        "-o", "bucket=1", "-o", "write-buffer-size=1 kb"], tmp_path, TMPDIR=str(temp))
    assert created.returncode == 0, created.stderr

    killed = _lakectl(["-w", wh, "write", "db.t", "-i", str(data)], tmp_path, TMPDIR=str(temp),
                      LAKECTL_FAULT="kill:write:1")  # the first data file: rows are spilled by then
    assert killed.returncode == -9, killed.stderr
    (left,) = [p for p in temp.iterdir() if p.name.startswith("lakectl-spill-")]
    assert any(left.iterdir()), "the write spilled nothing: the buffer option did not take"
    pid = int(left.name.split("-")[2])

    assert _lakectl(["-w", wh, "write", "db.t", "-i", str(data)], tmp_path, TMPDIR=str(temp)).returncode == 0
    assert left.exists()  # ten minutes have not passed: the owner might be in another pid namespace
    then = time.time() - DEAD_AFTER - 60
    os.utime(left, (then, then))
    written = _lakectl(["-w", wh, "write", "db.t", "-i", str(data)], tmp_path, TMPDIR=str(temp))
    assert written.returncode == 0, written.stderr
    assert not left.exists(), f"the spill directory of killed pid {pid} is still there"
    assert not [p for p in temp.iterdir() if p.name.startswith("lakectl-spill-")]
