"""Benchmark: lakectl writing a primary-key table on Spark local[2] against the bare-Spark floor
of writing the same DataFrame to Parquet, in the same run and the same SparkSession.

    python bench/spark_write.py --rows 5000000 --repeat 3 --out bench/results.md

Rows: id BIGINT key, dt partition with 8 values, 6 value columns (INT, DOUBLE, ~20-char STRING,
TIMESTAMP, BOOLEAN, DECIMAL(18,4)); table: primary key (id, dt), bucket=4, partitioned by dt.
Cases alternate within each repetition; each figure is also given as a ratio to the floor
measured in the same repetition (the machines are shared and noisy). Besides the floor in
lakectl's own session, each repetition times bare PySpark in a process of its own with a
default session (Spark's JVM flags, warmed up by one write), and ``lakectl write --input
input.parquet`` as the CLI runs it (its executors read the file with pyarrow).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.engines.spark import SparkEngine  # noqa: E402
from core.ops.create import create  # noqa: E402
from core.ops.write import write  # noqa: E402
from core.table import Table  # noqa: E402
from core.types import arrow_field  # noqa: E402
from history import prepend_run, run_heading  # noqa: E402  (bench/history.py, beside this script)
from processes import run_settled  # noqa: E402  (bench/processes.py)

SCHEMA = ("id BIGINT, dt STRING, c_int INT, c_double DOUBLE, c_str STRING, c_ts TIMESTAMP(6), "
          "c_bool BOOLEAN, c_dec DECIMAL(18, 4)")


def make_rows(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(n).astype(np.int64)
    days = [f"2024-01-0{d + 1}" for d in range(8)]
    words = np.array([f"customer-{i:011d}" for i in range(1000)])
    base = np.datetime64("2024-01-01T00:00:00", "us")
    return pa.table({
        "id": ids,
        "dt": pa.array(np.array(days)[ids % 8]),
        "c_int": rng.integers(-1_000_000, 1_000_000, n, dtype=np.int32),
        "c_double": rng.random(n),
        "c_str": pa.array(words[rng.integers(0, 1000, n)]),
        "c_ts": pa.array(base + rng.integers(0, 10**12, n).astype("timedelta64[us]")),
        "c_bool": rng.random(n) < 0.5,
        "c_dec": pa.array(rng.integers(-10**9, 10**9, n), pa.int64()).cast(pa.decimal128(19, 0))
        .cast(pa.decimal128(18, 4)),
    })


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system, finished children included) of this process and every
    descendant: the JVM, its Python daemon and workers. On a shared machine wall times swing
    with the other load; the CPU a case spends much less (Linux /proc; 0 elsewhere)."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        children.setdefault(int(fields[1]), []).append(int(entry))
        ticks[int(entry)] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


def timed(fn, cpu: list[float]) -> float:
    """Wall seconds of fn(); its CPU seconds are appended to ``cpu``."""
    start, start_cpu = time.perf_counter(), tree_cpu_seconds()
    fn()
    wall = time.perf_counter() - start
    cpu.append(tree_cpu_seconds() - start_cpu)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--out", default="bench/results-spark.md")
    parser.add_argument("--jvm-flags", help="the session's JVM flags instead of lakectl's choice (both cases use them)")
    parser.add_argument("--bare-once", nargs=2, metavar=("SOURCE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_once:
        bare_once(args.master, *args.bare_once)
        return

    work = Path(tempfile.mkdtemp(prefix="lakectl-bench-"))
    try:
        source = work / "input.parquet"
        pq.write_table(make_rows(args.rows), source, compression="zstd")
        flags = {"spark.driver.extraJavaOptions": args.jvm_flags,
                 "spark.executor.extraJavaOptions": args.jvm_flags} if args.jvm_flags else {}
        engine = SparkEngine(master=args.master, conf=flags)
        spark = engine.session  # started once, outside the timings
        read = lambda: spark.read.parquet(str(source))  # noqa: E731
        read().write.parquet(str(work / "warm-up"))  # JIT warm-up, not counted
        floor_times, transfer_times, lakectl_times, file_times, bare_times = [], [], [], [], []
        cpu: dict[str, list[float]] = {"floor": [], "transfer": [], "lakectl": [], "file": [], "bare": []}
        for rep in range(args.repeat):
            out = work / f"floor-{rep}"
            floor_times.append(timed(lambda: read().write.parquet(str(out)), cpu["floor"]))
            bare = bare_floor(args.master, source, work / f"bare-{rep}")
            bare_times.append(bare["wall"])
            cpu["bare"].append(bare["cpu"])
            transfer_times.append(timed(lambda: read().mapInArrow(_count_rows, "n long").collect(), cpu["transfer"]))
            table = Table.locate(f"bench.t{rep}", warehouse=str(work / "wh"))
            create(table, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
            lakectl_times.append(timed(lambda: write(table, spark.read.parquet(str(source)), engine=engine),
                                       cpu["lakectl"]))
            assert table.latest_snapshot().total_record_count == args.rows
            # What `lakectl --engine spark write t -i input.parquet` runs (write_input), in this session.
            by_file = Table.locate(f"bench.f{rep}", warehouse=str(work / "wh"))
            create(by_file, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
            hint = pa.schema([arrow_field(f) for f in by_file.schema.fields])
            file_times.append(timed(lambda: write(by_file, engine.read_input([str(source)], "parquet", hint),
                                                  engine=engine), cpu["file"]))
            assert by_file.latest_snapshot().total_record_count == args.rows
            print(f"rep {rep + 1}: floor {floor_times[-1]:.2f}s, transfer {transfer_times[-1]:.2f}s, "
                  f"lakectl {lakectl_times[-1]:.2f}s ({lakectl_times[-1] / floor_times[-1]:.2f}x), "
                  f"file {file_times[-1]:.2f}s; CPU s {cpu['floor'][-1]:.2f}, {cpu['transfer'][-1]:.2f}, "
                  f"{cpu['lakectl'][-1]:.2f}, {cpu['file'][-1]:.2f}", flush=True)
        report(args, floor_times, transfer_times, lakectl_times, file_times, bare_times, cpu)
    finally:
        shutil.rmtree(work, ignore_errors=True)


TITLE = "# Spark write benchmark"


def bare_floor(master: str, source: Path, out: Path) -> dict[str, float]:
    """One timed bare-PySpark read + write of ``source`` in a process of its own: a default
    session (Spark's own JVM flags), warmed up by one untimed write."""
    # settled: its JVM exits seconds after it, and would share the machine with the next timing
    proc = run_settled([sys.executable, __file__, "--master", master, "--bare-once", str(source), str(out)],
                       capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bare_once(master: str, source: str, out: str) -> None:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master(master).config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.read.parquet(source).write.parquet(out + "-warm-up")
    cpu: list[float] = []
    wall = timed(lambda: spark.read.parquet(source).write.parquet(out), cpu)
    spark.stop()
    print(json.dumps({"wall": wall, "cpu": cpu[0]}))


def _count_rows(batches):
    """Receives every row in Python as Arrow and does nothing with it: the transfer's cost."""
    for batch in batches:
        yield pa.RecordBatch.from_pydict({"n": [batch.num_rows]}, schema=pa.schema([("n", pa.int64())]))


def report(args: argparse.Namespace, floor: list[float], transfer: list[float], lakectl: list[float],
           by_file: list[float], bare: list[float], cpu: dict[str, list[float]]) -> None:
    import pyspark

    ratios = [lk / fl for lk, fl in zip(lakectl, floor)]
    transfer_ratios = [tr / fl for tr, fl in zip(transfer, floor)]

    def cpu_cells(case: str) -> str:
        per_rep = [c / f for c, f in zip(cpu[case], cpu["floor"])]
        return f"{statistics.median(cpu[case]):.2f} | {statistics.median(per_rep):.2f}"

    lines = [
        run_heading("`bench/spark_write.py` run"),
        "",
        f"On {platform.node()}: {os.cpu_count()} cores, "
        f"{platform.platform()}, Python {platform.python_version()}, pyspark {pyspark.__version__}, "
        f"pyarrow {pa.__version__}.",
        "",
        f"{args.rows:,} rows (id BIGINT key, dt with 8 values, 6 value columns); primary key (id, dt), bucket=4, "
        f"partitioned by dt; Spark {args.master}; {args.repeat} repetitions, cases interleaved; "
        f"JVM flags: {args.jvm_flags or 'lakectl default'}.",
        "",
        "| case | median seconds | median ratio to the floor | median CPU s | median CPU ratio |",
        "|---|---|---|---|---|",
        f"| bare Spark: DataFrame -> Parquet (floor) | {statistics.median(floor):.2f} | 1.00 | {cpu_cells('floor')} |",
        f"| Spark -> Python Arrow transfer alone (mapInArrow doing nothing) | {statistics.median(transfer):.2f} | "
        f"{statistics.median(transfer_ratios):.2f} | {cpu_cells('transfer')} |",
        f"| lakectl write on Spark (PK table, 4 buckets, 8 partitions) | {statistics.median(lakectl):.2f} | "
        f"{statistics.median(ratios):.2f} | {cpu_cells('lakectl')} |",
        f"| lakectl write --input input.parquet on Spark (executors read the file with pyarrow) | "
        f"{statistics.median(by_file):.2f} | {statistics.median([b / f for b, f in zip(by_file, floor)]):.2f} | "
        f"{cpu_cells('file')} |",
        "",
        "Against bare PySpark in a session of its own with Spark's default JVM (another process, "
        "warmed up by one write, timed in the same repetition): what a user compares lakectl with.",
        "",
        "| case | median seconds | median wall ratio | median CPU s | median CPU ratio |",
        "|---|---|---|---|---|",
        f"| bare PySpark, default session: read Parquet -> write Parquet | {statistics.median(bare):.2f} | 1.00 | "
        f"{statistics.median(cpu['bare']):.2f} | 1.00 |",
        f"| lakectl write --input input.parquet (lakectl's session) | {statistics.median(by_file):.2f} | "
        f"{statistics.median([b / f for b, f in zip(by_file, bare)]):.2f} | {statistics.median(cpu['file']):.2f} | "
        f"{statistics.median([b / f for b, f in zip(cpu['file'], cpu['bare'])]):.2f} |",
        f"| lakectl write of a DataFrame (lakectl's session) | {statistics.median(lakectl):.2f} | "
        f"{statistics.median([b / f for b, f in zip(lakectl, bare)]):.2f} | {statistics.median(cpu['lakectl']):.2f} | "
        f"{statistics.median([b / f for b, f in zip(cpu['lakectl'], cpu['bare'])]):.2f} |",
        "",
        "Bare PySpark per repetition (wall s, CPU s): "
        + "; ".join(f"{w:.2f}, {c:.2f}" for w, c in zip(bare, cpu["bare"])),
        "",
        "Per repetition (floor s, transfer s, lakectl s, lakectl ratio): "
        + "; ".join(f"{f:.2f}, {t:.2f}, {lk:.2f}, {r:.2f}" for f, t, lk, r in zip(floor, transfer, lakectl, ratios)),
        "",
        "CPU seconds per repetition (floor, transfer, lakectl, lakectl from the file): "
        + "; ".join(f"{f:.2f}, {t:.2f}, {lk:.2f}, {b:.2f}"
                    for f, t, lk, b in zip(cpu["floor"], cpu["transfer"], cpu["lakectl"], cpu["file"])),
        "",
    ]
    prepend_run(Path(args.out), TITLE, "\n".join(lines))
    print("\n".join(lines))



if __name__ == "__main__":
    main()
