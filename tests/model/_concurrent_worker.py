"""Child process for the concurrent-writer tests (``concurrency_kit.py``); not collected.

    python _concurrent_worker.py '<json spec>'

The table is ``spec["table"]`` in ``spec["warehouse"]`` (a local path or s3:// URI, with
``spec["storage_options"]``). Every role waits at a start line (``ready-<name>`` files, then a
``go`` file in ``spec["barrier"]``) and prints one JSON line per event.

Roles:
- ``write``: one commit per entry of ``commits`` (``{"mode", "rows": [[id, v, dt], ...]}``);
  prints ``{"op": i, "snapshot_id", "commit_kind", "retries"}``. With ``rounds`` set, the
  first publish attempt of commit i waits until all ``peers`` writers reached it, so every
  round is a real race for the same snapshot id (all but one must retry).
- ``compact``: full compactions until the ``stop`` file appears (at least ``min_runs``); a
  compaction whose input files another commit removed plans again by itself (core.replan);
  a CommitConflictError that still comes out (overtaken on every try) is counted and the
  compaction started again. Prints ``{"compaction": k, "snapshot_id", "conflicts", "retries"}``.
- ``read``: until ``stop``: the latest snapshot id, then the scan of that snapshot, printed
  as ``{"snapshot_id", "rows": [[id, v], ...]}``; any error ends the process non-zero.

``retries`` counts the commit's lost attempts from core.commit's INFO log lines
("commit attempt N: <reason>"), the figure the tests report; a writer's ``conflicts`` counts
its post-commit compactions that failed (core.ops.maintenance's warnings).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

import pyarrow as pa

from _worker_kit import emit, start_line
from core.errors import CommitConflictError
from core.snapshot import SnapshotManager
from core.table import Table

DEADLINE = 120  # seconds any wait may take


class AttemptCounter(logging.Handler):
    """Counts core.commit's "commit attempt" lines (one per lost attempt)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0
        self.conflicts = 0  # post-commit compactions that failed (core.ops.maintenance warnings)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("commit attempt"):
            self.count += 1
            self.reasons.append(message)
        elif message.startswith("maintenance step compact"):
            self.conflicts += 1
            self.reasons.append(message)


def open_table(spec: dict) -> Table:
    return Table.open(spec["table"], warehouse=spec["warehouse"], storage_options=spec.get("storage_options"))


def round_barrier(spec: dict, i: int) -> None:
    """Wait until all ``peers`` writers reach round ``i``."""
    directory = os.path.join(spec["barrier"], f"round-{i}")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, spec["name"]), "w"):
        pass
    deadline = time.monotonic() + DEADLINE
    while len(os.listdir(directory)) < spec["peers"]:
        if time.monotonic() > deadline:
            raise SystemExit(f"peers did not reach round {i} within {DEADLINE}s")
        time.sleep(0.002)


def write(spec: dict, counter: AttemptCounter) -> None:
    t = open_table(spec)
    hold = {"round": None}
    if spec.get("rounds"):
        real = SnapshotManager.try_publish

        def publish(self, snapshot, **kw):  # type: ignore[no-untyped-def]
            if hold["round"] is not None:
                round_barrier(spec, hold["round"])
                hold["round"] = None  # only the first attempt of a commit waits
            return real(self, snapshot, **kw)

        SnapshotManager.try_publish = publish  # type: ignore[method-assign]
    start_line(spec)
    for i, op in enumerate(spec["commits"]):
        rows = op["rows"]
        data = pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                         "v": pa.array([r[1] for r in rows], pa.string()),
                         "dt": pa.array([r[2] for r in rows], pa.string())})
        hold["round"] = i
        before, conflicts, reasons = counter.count, counter.conflicts, len(counter.reasons)
        result = t.write(data, mode=op["mode"])
        emit({"op": i, "snapshot_id": result.snapshot_id, "commit_kind": result.commit_kind,
              "retries": counter.count - before, "conflicts": counter.conflicts - conflicts,
              "reasons": counter.reasons[reasons:]})


def compact(spec: dict, counter: AttemptCounter) -> None:
    t = open_table(spec)
    start_line(spec)
    stop = os.path.join(spec["barrier"], "stop")
    runs = 0
    deadline = time.monotonic() + DEADLINE
    while (not os.path.exists(stop) or runs < spec.get("min_runs", 1)) and time.monotonic() < deadline:
        conflicts = 0
        before = counter.count
        while True:
            try:
                result = t.compact(full=True)
                break
            except CommitConflictError as e:  # another commit removed our input files: plan again
                conflicts += 1
                counter.reasons.append(f"conflict: {e}")
        runs += 1
        emit({"compaction": runs, "snapshot_id": result.snapshot_id, "conflicts": conflicts,
              "retries": counter.count - before})
        time.sleep(spec.get("pause", 0.0))


def read(spec: dict, counter: AttemptCounter) -> None:
    t = open_table(spec)
    start_line(spec)
    stop = os.path.join(spec["barrier"], "stop")
    while not os.path.exists(stop):
        sid = t.snapshots.latest_id()
        if sid is None:
            continue
        data = t.scan(snapshot_id=sid, select=["id", "v"])
        emit({"snapshot_id": sid, "rows": [list(r) for r in zip(data.column("id").to_pylist(),
                                                                 data.column("v").to_pylist())]})


if __name__ == "__main__":
    job = json.loads(sys.argv[1])
    counter = AttemptCounter()
    for logger in ("core.commit", "core.ops.maintenance"):
        logging.getLogger(logger).addHandler(counter)
        logging.getLogger(logger).setLevel(logging.INFO)
    {"write": write, "compact": compact, "read": read}[job["role"]](job, counter)
