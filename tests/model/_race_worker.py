"""Child process for test_commit_race.py (not collected: the name does not start with test_).

    python _race_worker.py '<json spec>'

Every role waits at a start line (``ready-<name>`` files, then a ``go`` file) so that the
processes really race, and prints JSON lines the test checks afterwards.

Roles:
- ``write``: run ``ops`` (each ``{"mode", "rows"}``) against one table, one commit each, and
  print ``{"op": i, "snapshot_id": id, "commit_kind": kind}`` per op.
- ``read``: until the ``stop`` file appears, read the latest snapshot id and scan it, printing
  ``{"snapshot_id": id, "ids": [...]}``; any error ends the process non-zero.
- ``create``: race ``FileIO.try_create`` on ``paths`` with this worker's payload, all ``peers``
  workers meeting at a barrier before each path, and print ``{"path": p, "won": bool}`` per path.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pyarrow as pa

from _worker_kit import emit, start_line
from core.fileio import FileIO
from core.table import Table


def write(spec: dict) -> None:
    t = Table.open(spec["table"], warehouse=spec["warehouse"])
    start_line(spec)
    for i, op in enumerate(spec["ops"]):
        rows = op["rows"]
        data = pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                         "v": pa.array([r[1] for r in rows], pa.string()),
                         "dt": pa.array([r[2] for r in rows], pa.string())})
        result = t.write(data, mode=op["mode"])
        emit({"op": i, "snapshot_id": result.snapshot_id, "commit_kind": result.commit_kind})


def read(spec: dict) -> None:
    t = Table.open(spec["table"], warehouse=spec["warehouse"])
    start_line(spec)
    stop = os.path.join(spec["barrier"], "stop")
    while not os.path.exists(stop):
        snap = t.latest_snapshot()
        if snap is None:
            continue
        ids = t.scan(snapshot_id=snap.id, select=["id"]).column("id").to_pylist()
        emit({"snapshot_id": snap.id, "ids": ids})


def create(spec: dict) -> None:
    io = FileIO.for_uri(spec["dir"])
    payload = spec["name"].encode("utf-8") * 4096  # big enough that a torn write would show
    start_line(spec)
    for i, path in enumerate(spec["paths"]):
        round_barrier(spec, i)
        emit({"path": path, "won": io.try_create(path, payload)})


def round_barrier(spec: dict, i: int) -> None:
    """Wait until all ``peers`` workers reached round ``i``, so every path is really contended."""
    directory = os.path.join(spec["barrier"], f"round-{i}")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, spec["name"]), "w"):
        pass
    deadline = time.monotonic() + 60
    while len(os.listdir(directory)) < spec["peers"]:
        if time.monotonic() > deadline:
            raise SystemExit(f"peers did not reach round {i} within 60 s")


if __name__ == "__main__":
    job = json.loads(sys.argv[1])
    {"write": write, "read": read, "create": create}[job["role"]](job)
