"""The console entry keeps numpy's OpenBLAS from starting its thread pool (lakectl never calls
BLAS; the pool cost ~0.12 CPU s per process on two cores): the threads of a process that
entered through ``lakectl.app.main`` and then imported numpy, counted in /proc, against a
process that imported numpy alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THREADS = "print(len(os.listdir('/proc/self/task')))"
ENTERED = ("import os, sys; sys.argv = ['lakectl', '--version']; from lakectl.app import main; main(); "
           "import numpy; " + THREADS)
NUMPY_ALONE = "import os, numpy; " + THREADS

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2,
                                reason="counts threads in /proc; OpenBLAS starts no pool on one core")


def threads(code: str, **env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_"))}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, "PYTHONPATH": str(ROOT), **env},
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1])


def test_numpy_after_the_console_entry_runs_on_one_thread() -> None:
    assert threads(NUMPY_ALONE) > 1  # the pool this guards against
    assert threads(ENTERED) == 1


def test_a_blas_thread_count_the_user_set_is_kept() -> None:
    assert threads(ENTERED, OPENBLAS_NUM_THREADS="2") == threads(NUMPY_ALONE, OPENBLAS_NUM_THREADS="2") > 1
