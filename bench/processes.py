"""Running a benchmark's subprocess so that it is over, children included, before the next one.

A PySpark process's JVM outlives it: after the Python process exits, the JVM runs its
shutdown hooks for about two more seconds on a core of its own (measured on the suite's Spark
runner, 2026-11-28). Whatever is timed next shares the machine with it, so a runner that
followed Spark in the suite's rotation was measured on one core. ``run_settled`` starts the
command in a process group of its own and, once the command has exited, waits for every
process of that group (the JVM stays in its Python parent's group) before returning.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

SETTLE_TIMEOUT = 60.0  # seconds a command's leftovers may take to exit before they are killed


def run_settled(cmd: list[str], timeout: float | None = None, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, **kwargs)`` (``capture_output``, ``text``, ``env``, ``cwd``, ``check``)
    that returns only when no process of the command's group is left. On ``timeout`` the whole
    group is killed and ``subprocess.TimeoutExpired`` raised, as ``subprocess.run`` does."""
    check = kwargs.pop("check", False)
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with subprocess.Popen(cmd, start_new_session=True, **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.communicate()
            raise
        finally:
            settle(proc.pid)
    if check and proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd, out, err)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def settle(group: int, timeout: float = SETTLE_TIMEOUT) -> float:
    """Wait until process group ``group`` is empty (killing what is left after ``timeout``
    seconds); returns the seconds waited."""
    start = time.perf_counter()
    while _group_alive(group):
        if time.perf_counter() - start > timeout:
            _kill_group(group)
            break
        time.sleep(0.05)
    return time.perf_counter() - start


def _group_alive(group: int) -> bool:
    """Whether a process of ``group`` still runs. A zombie does not count: one whose parent
    never reaps it (a container without an init) would otherwise hold the wait to its timeout."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # exited while we looked
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
        state, _ppid, pgrp = text[text.rindex(")") + 2:].split(" ", 3)[:3]
        if int(pgrp) == group and state != "Z":
            return True
    return False


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass
