"""What every race worker child shares (imported by the ``_*_worker.py`` scripts, which run as
``python <script>`` so that this directory is on their ``sys.path``).

The start line makes the processes really race: each announces itself with a ``ready-<name>``
file in the barrier directory and waits for the test to drop the ``go`` file.
"""

from __future__ import annotations

import json
import os
import sys
import time


def start_line(spec: dict, timeout: float = 120.0) -> float:
    """Announce this worker and wait for the go signal; the monotonic time it came."""
    barrier = spec["barrier"]
    with open(os.path.join(barrier, f"ready-{spec['name']}"), "w"):
        pass
    go = os.path.join(barrier, "go")
    limit = time.monotonic() + timeout
    while not os.path.exists(go):
        if time.monotonic() > limit:
            raise SystemExit(f"no go signal within {timeout:.0f} s")
        time.sleep(0.002)
    return time.monotonic()


def emit(obj: dict) -> None:
    """One JSON line on stdout, flushed at once so that the test sees it even if we are killed."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
