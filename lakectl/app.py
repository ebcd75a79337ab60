"""The console entry point (`lakectl = "lakectl.app:main"`, and `python -m lakectl`).

`lakectl --version` alone is answered here, and the plain shapes of read-only listings, of
`write` and of `scan` by lakectl/quick.py (unless LAKECTL_QUICK_PATH=0), before the command tree (lakectl/cli.py) is built: building it imports
Typer, its vendored Click and lakectl's option catalogue, which these lines do not need. Everything else goes to lakectl/cli.py. The names of the command
tree (`app`, `root`, ...) stay importable from here, loaded on first use, because the
installed console script and older callers import them as `lakectl.app.<name>`."""

from __future__ import annotations

import os
import sys
from typing import Any

# numpy's OpenBLAS starts a pool of threads when numpy is imported (~0.12 CPU s per process on
# two cores, measured), and lakectl never calls BLAS: one thread, unless the user says otherwise.
# Set before anything imports numpy; inherited by local Spark's Python workers.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "1")
# Set to 0, every command line goes to the command tree (tests compare both ways).
QUICK_PATH = "LAKECTL_QUICK_PATH"


def main() -> None:
    os.environ.setdefault(*BLAS_THREADS)
    if sys.argv[1:] == ["--version"]:
        from lakectl.version import version_line

        print(version_line())
        return
    if os.environ.get(QUICK_PATH) != "0":
        from lakectl.quick import answer

        if answer(sys.argv[1:]):
            return
    from lakectl.cli import main as run

    run()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # the import system probes __path__ etc.: no reason to build the tree
        raise AttributeError(f"module 'lakectl.app' has no attribute {name!r}")
    from lakectl import cli

    try:
        return getattr(cli, name)
    except AttributeError:
        raise AttributeError(f"module 'lakectl.app' has no attribute {name!r}") from None
