"""Shared by every runner: the step recorder and the inputs. Standard library and pyarrow only
(runners run in different virtualenvs: lakectl's, pypaimon's with pyarrow 19, delta-rs's).

A runner is a script ``RUNNER.py --data DIR --work DIR [--verify]``: it loads the generated
Parquet files of ``DIR`` into memory (not timed), runs the steps in order on a fresh table
under ``--work``, and prints one JSON line: ``{"runner", "steps": {step: {...}}, "info"}``.

Per step it records:
- ``seconds``: ``time.perf_counter()`` around the step alone;
- ``peak_rss`` / ``rss_before``: this process's high-water RSS during the step (Linux: the
  peak is reset through ``/proc/self/clear_refs`` before each step, so it is the step's own)
  and the RSS just before it; for whole-process steps (console scripts) the child's
  ``ru_maxrss`` from ``os.wait4`` instead;
- ``rchar``: bytes this process pulled through read()/pread() during the step
  (``/proc/self/io``; counts page-cache hits too, so it measures what was read, not disk I/O);
- ``rows``: rows the step produced (read steps), checked by the driver against the data.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA_SQL = ("id BIGINT, dt STRING, c_int INT, c_double DOUBLE, c_str STRING, c_ts TIMESTAMP(6), "
              "c_bool BOOLEAN, c_dec DECIMAL(18, 4)")
COLUMNS = ["id", "dt", "c_int", "c_double", "c_str", "c_ts", "c_bool", "c_dec"]
KEY = ["id", "dt"]
PARTITION = "dt"
BUCKETS = 4
ROW_KIND = "op"  # the delete batch's row-kind column ("-D"); not a table column (except pypaimon's)

STEPS = ["create", "write_base", "upsert", "delete", "read_latest", "read_range", "read_snapshot1",
         "compact", "read_compacted"]


def _proc_status(field: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    m = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) * 1024 if m else None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rchar() -> int | None:
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        return None
    m = re.search(r"^rchar:\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else None


class Recorder:
    def __init__(self, runner: str) -> None:
        self.runner = runner
        self.steps: dict[str, dict[str, Any]] = {}
        self.info: dict[str, Any] = {}

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        """Time one step; the body may put ``rows`` (or anything else) into the yielded dict."""
        rec: dict[str, Any] = {}
        gc.collect()
        rss_before = _proc_status("VmRSS")
        reset = _reset_peak()
        rchar0 = _rchar()
        cpu0 = time.process_time()
        start = time.perf_counter()
        yield rec
        rec["seconds"] = time.perf_counter() - start
        # CPU of every thread of this process: a multi-threaded writer's wall time hides it
        rec.setdefault("cpu", time.process_time() - cpu0)
        rchar1 = _rchar()
        if rchar0 is not None and rchar1 is not None and "rchar" not in rec:
            rec["rchar"] = rchar1 - rchar0
        if reset and "peak_rss" not in rec:
            rec["peak_rss"] = _proc_status("VmHWM")
            rec["rss_before"] = rss_before
        self.steps[name] = rec
        print(f"[{self.runner}] {name}: {rec['seconds']:.3f}s", file=sys.stderr, flush=True)

    def skip(self, name: str, why: str) -> None:
        self.steps[name] = {"skipped": why}

    def emit(self) -> None:
        print(json.dumps({"runner": self.runner, "steps": self.steps, "info": self.info}))


def parse_args(description: str, extra: Any = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--data", required=True, help="directory with base/upserts/deletes.parquet and meta.json")
    ap.add_argument("--work", required=True, help="scratch directory for this run's table")
    ap.add_argument("--verify", action="store_true", help="also count rows where that costs extra work")
    if extra:
        extra(ap)
    args = ap.parse_args()
    Path(args.work).mkdir(parents=True, exist_ok=True)
    return args


def dist_version(name: str) -> str | None:
    """The installed version of the distribution ``name`` (None if unknown), for the report."""
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:
        return None


def load_meta(data: str) -> dict[str, Any]:
    return json.loads((Path(data) / "meta.json").read_text())


def load_inputs(data: str) -> tuple[pa.Table, pa.Table, pa.Table]:
    """base (N rows), upserts (N/20 updates + N/40 inserts), deletes (N/40 rows, ``op`` = -D)."""
    d = Path(data)
    return (pq.read_table(d / "base.parquet"), pq.read_table(d / "upserts.parquet"),
            pq.read_table(d / "deletes.parquet"))


def range_where(meta: dict[str, Any]) -> str:
    lo, hi = meta["range"]
    return f"id >= {lo} AND id < {hi}"


def checksum(table: pa.Table) -> list[int]:
    """[rows, sum of id, sum of c_int] of a read's result: two readers that return the same
    rows agree on all three, and a stale version of an updated row changes the c_int sum
    (updates draw new values). Sums as Python ints, so no overflow and no float rounding."""
    import pyarrow.compute as pc

    def total(name: str) -> int:
        value = pc.sum(table.column(name).cast(pa.int64())).as_py() if table.num_rows else 0
        return int(value or 0)

    return [table.num_rows, total("id"), total("c_int")]


def read_args(description: str) -> argparse.Namespace:
    """The arguments of a read runner (``bench/peers_read.py``): one query of a table that
    lakectl wrote, timed in this process after imports and setup."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--table", required=True, help="DB.TABLE")
    ap.add_argument("--query", required=True, choices=["range", "lookup", "full", "partition"])
    ap.add_argument("--lo", type=int, help="range: first id")
    ap.add_argument("--hi", type=int, help="range: last id (inclusive, as BETWEEN)")
    ap.add_argument("--keys", default="", help="lookup: comma-separated ids")
    ap.add_argument("--partition", default="", help="partition: COLUMN=VALUE (an integer), one partition's rows")
    ap.add_argument("--calls", type=int, default=1, help="run the query this many times in this process")
    ap.add_argument("--checksum", action="store_true", help="print the result's checksum too")
    return ap.parse_args()


def timed_calls(query: Any, calls: int) -> tuple[pa.Table, list[dict[str, float]]]:
    """Run ``query()`` ``calls`` times: the last result and each call's CPU seconds (every
    thread of this process: ``time.process_time``) and wall seconds."""
    times = []
    result = None
    for _ in range(calls):
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        result = query()
        times.append({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall})
    return result, times


def emit_read(args: argparse.Namespace, result: pa.Table, times: list[dict[str, float]], **info: Any) -> None:
    out: dict[str, Any] = {"rows": result.num_rows, "calls": times, **info}
    if args.checksum:
        out["checksum"] = checksum(result)
    print(json.dumps(out))
