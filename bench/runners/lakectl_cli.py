"""lakectl through its installed console script, each step one whole process (interpreter
start, imports, reading the input file, the work, printing), on the local engine
(``--engine local``: 5M rows would otherwise cross the 256 MiB Spark threshold). Reads write
their rows with ``scan --output FILE.parquet``. Memory per step is the child's peak RSS
(``ru_maxrss`` from ``os.wait4``). Runs in lakectl's .venv; the script is ``.venv/bin/lakectl``
unless ``--lakectl`` names another.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUCKETS, PARTITION, ROW_KIND, SCHEMA_SQL, Recorder, load_meta, parse_args, range_where  # noqa: E402

TABLE = "bench.t"


def run(cmd: list[str]) -> tuple[float, int, float]:
    """Run one process; (seconds, peak RSS bytes, CPU seconds of the child)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit {proc.returncode}:\n{err}")
    return seconds, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    default = str(Path(sys.executable).parent / "lakectl")
    args = parse_args(__doc__.splitlines()[0], lambda ap: ap.add_argument("--lakectl", default=default))
    meta = load_meta(args.data)
    data = Path(args.data)
    work = Path(args.work)
    lk = [args.lakectl, "--warehouse", str(work / "wh"), "--engine", "local", "--format", "json"]
    rec = Recorder("lakectl_cli")

    def step(name: str, *cmd: str, output: str | None = None) -> None:
        with rec.step(name) as r:
            r["seconds_process"], r["peak_rss"], r["cpu"] = run(lk + list(cmd))
            r["rchar"] = None  # the child's reads are not visible from here
        r["rss_before"] = 0
        if output is not None:
            r["rows"] = pq.ParquetFile(output).metadata.num_rows
            os.remove(output)

    step("create", "create", TABLE, "--schema", SCHEMA_SQL, "--primary-key", "id,dt", "--partition-by", PARTITION,
         "--option", f"bucket={BUCKETS}")
    step("write_base", "write", TABLE, "--input", str(data / "base.parquet"))
    step("upsert", "write", TABLE, "--input", str(data / "upserts.parquet"))
    step("delete", "write", TABLE, "--input", str(data / "deletes.parquet"), "--row-kind-column", ROW_KIND)
    out = str(work / "out.parquet")
    step("read_latest", "scan", TABLE, "--output", out, output=out)
    step("read_range", "scan", TABLE, "--where", range_where(meta), "--output", out, output=out)
    step("read_snapshot1", "scan", TABLE, "--snapshot-id", "1", "--output", out, output=out)
    step("compact", "compact", TABLE, "--full")
    step("read_compacted", "scan", TABLE, "--output", out, output=out)
    rec.info["warehouse"] = str(work / "wh")
    rec.info["table"] = TABLE
    rec.emit()


if __name__ == "__main__":
    main()
