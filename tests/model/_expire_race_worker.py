"""Child process for expire_race_kit.py (not collected: the name does not start with test_).

    python _expire_race_worker.py '<json spec>'

One role of the race, looping through the core API until ``deadline`` (epoch seconds): each
operation prints one JSON line ``{"op", "code", "rows"?, "deleted"?, "snapshot_id"?,
"expired"?, "retries", "expire_races", "error"?}``, where ``code`` is the exit code the CLI
would have given (lakectl.errors.exit_code_for) and the retry counts come from the INFO lines
core logs on each lost attempt. Roles: ``write`` (3 new keys of writer ``w`` per commit),
``compact`` (partition dt=w), ``expire`` (retain 1, older than 0s), ``delete`` (the seed keys
one by one), ``scan`` (the latest snapshot, every id once). Every worker waits at a start line
(``ready-<name>`` files in ``barrier``, then ``go``) and runs ``seconds`` from there, so the
roles really overlap however long their imports took.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter

import pyarrow as pa

from _worker_kit import emit, start_line
from core.table import Table
from lakectl.errors import exit_code_for

RETRY_MARKS = ("lost, retrying", "lost a race against expire")
EXPIRE_MARKS = ("free only because expire had removed it", "expired by a concurrent expire",
                "went away while it was read")


class Tally(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def take(self) -> dict[str, int]:
        lines, self.lines = self.lines, []
        return {"retries": sum(m in line for line in lines for m in RETRY_MARKS),
                "expire_races": sum(m in line for line in lines for m in EXPIRE_MARKS)}


def operations(spec: dict, t: Table):
    role = spec["role"]
    if role == "write":
        w, i = spec["w"], 0
        while True:
            rows = [(1_000_000 * (w + 1) + 10 * i + j, f"w{w}-{i}", "w") for j in range(3)]
            i += 1
            yield lambda rows=rows: {"rows": rows, "snapshot_id": t.write(pa.table(
                {"id": pa.array([r[0] for r in rows], pa.int64()), "v": [r[1] for r in rows],
                 "dt": [r[2] for r in rows]})).snapshot_id}
    elif role == "compact":
        while True:
            yield lambda: {"snapshot_id": t.compact(partitions=[{"dt": "w"}]).snapshot_id}
    elif role == "expire":
        while True:
            yield lambda: {"expired": t.expire(retain_min=1, retain_max=1, older_than="0s",
                                               dry_run=False).snapshots_expired}
    elif role == "delete":
        for key in range(1, spec["seeds"] + 1):
            yield lambda key=key: {"deleted": key, "snapshot_id": t.delete(f"id = {key}").snapshot_id}
    elif role == "scan":
        while True:
            def read() -> dict:
                ids = t.scan(select=["id"]).column("id").to_pylist()
                twice = sorted(k for k, n in Counter(ids).items() if n > 1)
                return {"rows_seen": len(ids), "twice": twice[:5]}
            yield read


def main(spec: dict) -> None:
    tally = Tally()
    for name in ("core", "lakectl"):
        logger = logging.getLogger(name)
        logger.addHandler(tally)
        logger.setLevel(logging.INFO)
    if spec.get("catalog"):  # through a catalog (its keys, Paimon's), the warehouse its own
        from core.catalog import CatalogConfig, open_catalog

        options = {**spec["catalog"], "warehouse": spec["warehouse"]}
        catalog = open_catalog(CatalogConfig(options["metastore"], spec["warehouse"], options,
                                             spec.get("storage_options")))
        t = Table.open(spec["table"], catalog=catalog)
    else:
        t = Table.open(spec["table"], warehouse=spec["warehouse"], storage_options=spec.get("storage_options"))
    deadline = start_line(spec) + spec["seconds"]
    for op in operations(spec, t):
        if time.monotonic() >= deadline:
            return
        try:
            out = {"code": 0, **op()}
        except Exception as e:  # the CLI's boundary: every error becomes its exit code
            out = {"code": exit_code_for(e), "error": f"{type(e).__name__}: {e}"}
        emit({"op": spec["role"], **out, **tally.take()})


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
