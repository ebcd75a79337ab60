"""A command that moves data raises glibc's malloc thresholds (lakectl/heap.py), so that the
arrays it frees are reused rather than faulted in again: minor page faults of a fixed churn of
arrays (five 256 KiB arrays, allocated, touched and freed 100 times) counted in a process
after a lakectl command, against the same churn in a process left at glibc's defaults."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHURN = ("import resource, numpy as np\n"
         "r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
         "for _ in range(100):\n"
         "    arrays = [np.ones(32 << 10) for _ in range(5)]\n"
         "    del arrays\n"
         "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)\n")
PAGES = 100 * 5 * (256 << 10) // 4096  # what the churn faults when every array gets fresh pages

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc thresholds")


def faults(before_churn: str, **env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", before_churn + "\n" + CHURN],
                         env={**clean, "PYTHONPATH": str(ROOT), **env},
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1])


def after_command(args: list[str]) -> str:
    """Python that runs ``lakectl <args>`` through the console entry, in this process."""
    return ("import sys\nfrom lakectl.app import main\n"
            f"sys.argv = ['lakectl', *{args!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n")


def test_a_data_command_keeps_freed_memory(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    subprocess.run([sys.executable, "-m", "lakectl", "--warehouse", wh, "-q", "create", "db.t", "--schema", "a INT"],
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True)
    default = faults("")
    assert default > PAGES // 2  # the churn this guards against
    assert faults(after_command(["--warehouse", wh, "-q", "scan", "db.t", "-f", "json"])) < PAGES // 10


def test_a_metadata_command_leaves_malloc_alone(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    assert faults(after_command(["--warehouse", wh, "-q", "create", "db.t", "--schema", "a INT"])) > PAGES // 2


def test_thresholds_the_user_set_are_kept() -> None:
    keep = "from lakectl.heap import keep_freed_memory\nkeep_freed_memory()"
    assert faults(keep) < PAGES // 10
    assert faults(keep, MALLOC_TRIM_THRESHOLD_="131072") > PAGES // 2
    assert faults(keep, GLIBC_TUNABLES="glibc.malloc.trim_threshold=131072") > PAGES // 2
