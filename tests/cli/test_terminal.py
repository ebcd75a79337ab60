"""lakectl in a terminal, as a person runs it: the installed console script in a pseudo-terminal
of 80x24 (and in tmux, when installed). A scan renders a box table that fits; a write of a
CSV of several MB shows a progress bar that ends; Ctrl-C during a write exits 130 and leaves
the table at its last snapshot."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
from typer.testing import CliRunner

from lakectl.app import app

pytestmark = pytest.mark.slow

LAKECTL = shutil.which("lakectl", path=str(Path(sys.executable).parent))
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
HIDE_CURSOR, SHOW_CURSOR = b"\x1b[?25l", b"\x1b[?25h"


@dataclass
class Session:
    output: bytes
    exit_code: int

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.output).decode("utf-8", "replace")


def terminal_env(home: Path) -> dict[str, str]:
    drop = ("LAKECTL_", "NO_COLOR", "TTY_", "FORCE_COLOR", "COLUMNS", "LINES")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(HOME=str(home), TERM="xterm-256color")
    return env


# The child makes the pseudo-terminal its controlling terminal (a new session, TIOCSCTTY), so
# Ctrl-C typed on it reaches lakectl as SIGINT; then it becomes lakectl. (subprocess rather
# than pty.fork: no fork of a threaded test process.)
_CONTROLLING_TTY = ("import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
                    "os.execv(sys.argv[1], sys.argv[1:])")


def in_terminal(args: list[str], cwd: Path, *, on_output: Callable[[bytes, int], bool] | None = None,
                timeout: float = 120, env: dict[str, str] | None = None) -> Session:
    """Run lakectl on a new 80x24 pseudo-terminal, its controlling terminal. ``on_output(everything
    so far, master fd)`` may type keys; once it returns True it is not called again. ``env``:
    variables added to the terminal's clean environment."""
    if LAKECTL is None:
        pytest.skip("the lakectl console script is not installed")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-c", _CONTROLLING_TTY, LAKECTL, *args], stdin=slave, stdout=slave,
                            stderr=slave, cwd=cwd, env={**terminal_env(cwd / "home"), **(env or {})},
                            close_fds=True)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + timeout
    watching = on_output is not None
    try:
        while True:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"lakectl {' '.join(args)} did not finish in {timeout}s: {output[-2000:]!r}")
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: lakectl is gone and the terminal closed
                break
            if not chunk:
                break
            output += chunk
            if watching and on_output(output, master):  # type: ignore[misc]
                watching = False
        code = proc.wait(timeout=timeout)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return Session(output, code)


def lakectl(cwd: Path, *args: Any) -> Any:
    """Set-up and checks in-process, in the JSON format."""
    result = CliRunner().invoke(app, ["-w", str(cwd / "warehouse"), *map(str, args)])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """shop.orders with one snapshot of three rows; returns the working directory."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("LAKECTL_WAREHOUSE", "LAKECTL_FORMAT", "LAKECTL_CONFIG", "LAKECTL_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "orders.csv").write_text("id,customer,amount,dt\n1,alice,10.50,2024-01-01\n"
                                         "2,bob,20.25,2024-01-01\n3,carol,5.00,2024-01-02\n")
    lakectl(tmp_path, "-q", "create", "shop.orders", "--schema", "id BIGINT, customer STRING, amount DECIMAL(10, 2), "
            "dt STRING", "--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=4")
    lakectl(tmp_path, "-q", "write", "shop.orders", "--input", tmp_path / "orders.csv")
    return tmp_path


def big_csv(path: Path, rows: int) -> Path:
    """rows rows over 28 partitions (112 buckets of work): about 37 bytes a row."""
    with path.open("w") as f:
        f.write("id,customer,amount,dt\n")
        f.writelines(f"{i + 10},customer-{i % 977},{(i * 7919) % 100000 / 100:.2f},2024-02-{1 + i % 28:02d}\n"
                     for i in range(rows))
    return path


def test_scan_renders_a_table_that_fits_the_terminal(table: Path) -> None:
    session = in_terminal(["scan", "shop.orders"], table)
    assert session.exit_code == 0, session.text
    text = session.text
    assert "┏" in text and "┃ id ┃ customer ┃ amount ┃ dt" in text and "│ 1  │ alice    │ 10.50  │ 2024-01-01 │" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert b"\x1b[1m" in session.output  # bold headers: a terminal gets styles


def test_write_shows_a_progress_bar_that_ends(table: Path) -> None:
    data = big_csv(table / "big.csv", 300_000)
    assert data.stat().st_size > 5 << 20
    session = in_terminal(["write", "shop.orders", "--input", str(data)], table)
    assert session.exit_code == 0, session.text
    out = session.output
    assert HIDE_CURSOR in out and b"writing buckets" in out and "━".encode() in out
    assert re.search(rb"\d+/112", out)  # done/total of the buckets
    # It ends: the cursor comes back, the bar is erased, and the result follows.
    after = out[out.rindex(SHOW_CURSOR):]
    assert "━".encode() not in after and b"writing buckets" not in after
    result = ANSI.sub(b"", after).decode()
    assert "records_written" in result and "300000" in result and "snapshot_id" in result


def test_ctrl_c_during_a_write_exits_130_and_leaves_the_last_snapshot(table: Path) -> None:
    data = big_csv(table / "big.csv", 600_000)

    def interrupt_while_writing(output: bytes, fd: int) -> bool:
        progress = re.findall(rb"writing buckets.*?(\d+)/(\d+)", output)
        if progress and 0 < int(progress[-1][0]) < int(progress[-1][1]):
            os.write(fd, b"\x03")  # Ctrl-C, as typed: the terminal sends SIGINT to lakectl
            return True
        return False

    session = in_terminal(["write", "shop.orders", "--input", str(data)], table, on_output=interrupt_while_writing)
    assert session.exit_code == 130, f"the write was not interrupted in time?\n{session.text[-2000:]}"
    assert session.text.rstrip().splitlines()[-1] == "error: interrupted"
    assert "Traceback" not in session.text
    assert session.output.rindex(SHOW_CURSOR) > session.output.rindex(HIDE_CURSOR)  # the cursor is back

    snapshots = json.loads(lakectl(table, "-f", "json", "snapshots", "shop.orders").stdout)
    assert [s["snapshot_id"] for s in snapshots] == [1]
    rows = json.loads(lakectl(table, "-f", "json", "scan", "shop.orders").stdout)
    assert sorted(r["id"] for r in rows) == [1, 2, 3]
    # Some bucket files were written before the interrupt: orphans, listed and removable.
    orphans = json.loads(lakectl(table, "-f", "json", "remove-orphan-files", "shop.orders", "--older-than", "0s", "--force",
                                 "--dry-run").stdout)
    assert orphans["files_deleted"] > 0
    assert json.loads(lakectl(table, "-f", "json", "check", "shop.orders").stdout)["ok"] is True


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_scan_in_tmux(table: Path) -> None:
    if LAKECTL is None:
        pytest.skip("the lakectl console script is not installed")
    socket = f"lakectl-test-{uuid.uuid4().hex[:8]}"
    env = terminal_env(table / "home")
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "24", "-s", "t", "-c", str(table),
                    f"{LAKECTL} scan shop.orders; echo exit=$?; sleep 60"], env=env, check=True, timeout=60)
    try:
        pane = ""
        deadline = time.monotonic() + 60
        while "exit=" not in pane and time.monotonic() < deadline:
            time.sleep(0.2)
            pane = subprocess.run([*tmux, "capture-pane", "-p", "-t", "t"], env=env, capture_output=True, text=True,
                                  timeout=60).stdout
        assert "exit=0" in pane, pane
        assert "┃ id ┃ customer ┃ amount ┃ dt" in pane and "│ 3  │ carol    │ 5.00   │ 2024-01-02 │" in pane
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, timeout=60)
