"""A benchmark's subprocess is over, children it left behind included, before the next timing
starts (bench/processes.py): the suite's Spark runner leaves its JVM running for seconds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from processes import run_settled  # noqa: E402

# A child that prints, exits at once and leaves a grandchild (detached from its output, as a
# JVM whose parent has exited) that writes ``done`` after a while.
LEAVES_A_CHILD = "(sleep {delay}; echo late > {marker}) >/dev/null 2>&1 & echo out"


def test_returns_only_after_what_the_command_left_running_has_exited(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    result = run_settled(["bash", "-c", LEAVES_A_CHILD.format(delay=0.5, marker=marker)],
                         capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "out\n"
    # the grandchild ran to its end: nothing of the command is left to share the machine
    assert marker.read_text() == "late\n"


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    started = time.perf_counter()
    with pytest.raises(subprocess.TimeoutExpired):
        run_settled(["bash", "-c", LEAVES_A_CHILD.format(delay=3, marker=marker) + "; sleep 30"], timeout=0.5)
    assert time.perf_counter() - started < 10
    time.sleep(3.5)
    assert not marker.exists()  # the grandchild was killed with its parent


def test_check_and_exit_codes_as_subprocess_run() -> None:
    assert run_settled(["bash", "-c", "exit 3"]).returncode == 3
    with pytest.raises(subprocess.CalledProcessError):
        run_settled(["bash", "-c", "exit 3"], check=True)
