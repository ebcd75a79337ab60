"""Benchmark: text at pyarrow's speed (issue 27). CPU seconds of whole processes:

- ``lakectl scan -f csv`` of an N-row table (the suite's 8 columns: BIGINT, STRING, INT,
  DOUBLE, STRING, TIMESTAMP(6), BOOLEAN, DECIMAL(18,4); bench/datagen.py) against a Python
  process reading the table's data files with pyarrow and printing them with
  ``pyarrow.csv.write_csv``;
- ``lakectl scan -f jsonl`` of the same table against the same floor;
- ``lakectl write`` of that table's CSV (what ``scan --output x.csv`` writes) of W rows into an
  empty table of the same schema against ``pyarrow.csv.read_csv`` + ``pyarrow.parquet.write_table``;
- ``lakectl write`` of a W-row CSV into the README's example table (issue 45: what a newcomer
  writes): ``shop.orders`` with ``id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING``,
  primary key ``id, dt``, partitioned by ``dt`` (28 days), ``bucket=2``, appended to a table
  that holds one earlier write of the same rows (a fresh copy per run, not timed), against the
  same pyarrow process on that CSV.

Every case runs once per repetition, interleaved, and each figure is the median. Goal: within
1.5x of the pyarrow process.

    python bench/text.py [--rows 1000000] [--write-rows 200000] [--repeat 5] [--before DIR]
                         [--out bench/results-text.md]

``--before DIR`` also times the lakectl commands of another source tree (``git archive`` of an
older commit unpacked into DIR), in the same interleaved runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history import prepend_run, run_heading  # noqa: E402
from invocation import ROOT, lakectl, python, run  # noqa: E402

TITLE = "# Text at pyarrow's speed: scan -f csv/jsonl and write of a CSV against pyarrow"

SCHEMA = ("id BIGINT NOT NULL, dt STRING, c_int INT, c_double DOUBLE, c_str STRING, c_ts TIMESTAMP(6), "
          "c_bool BOOLEAN, c_dec DECIMAL(18,4)")
FLOOR_SCAN = ("import glob, sys, pyarrow as pa, pyarrow.parquet as pq, pyarrow.csv as pc; "
              "files = sorted(glob.glob(sys.argv[1] + '/bucket-*/*.parquet')); "
              "pc.write_csv(pa.concat_tables([pq.read_table(f) for f in files]), sys.stdout.buffer)")
# The README's example table ("A short session"), as a newcomer creates it.
ORDERS_CREATE = ("--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=2", "--schema",
                 "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING")
ORDERS_DAYS = 28
FLOOR_WRITE = ("import sys, pyarrow.csv as pc, pyarrow.parquet as pq; "
               "pq.write_table(pc.read_csv(sys.argv[1]), sys.argv[2], compression='zstd')")


def make_data(work: Path, rows: int, write_rows: int, env: dict[str, str]) -> None:
    """db.s with ``rows`` rows, its first ``write_rows`` rows as lakectl's CSV, and db.w empty."""
    import numpy as np
    import pyarrow.parquet as pq

    from datagen import rows as generate

    rng = np.random.default_rng(7)
    pq.write_table(generate(rng, rng.permutation(rows).astype(np.int64)), work / "base.parquet")
    wh = str(work / "wh")
    for table in ("db.s", "db.w"):
        subprocess.run(lakectl("-w", wh, "-q", "create", table, "--schema", SCHEMA, "--option", "bucket=-1"),
                       check=True, env=env)
    subprocess.run(lakectl("-w", wh, "-q", "write", "db.s", "-i", str(work / "base.parquet")), check=True, env=env)
    subprocess.run(lakectl("-w", wh, "-q", "scan", "db.s", "--limit", str(write_rows), "--output",
                           str(work / "in.csv")), check=True, env=env)
    # the README's shop.orders: its CSV, and a table holding one earlier write of it (each
    # timed write appends to a fresh copy of that table)
    with open(work / "orders.csv", "w") as fh:
        fh.write("id,customer,amount,dt\n")
        for i in range(write_rows):
            fh.write(f"{i},customer-{i * 7919 % 5000},{i * 37 % 100000 / 100:.2f},2024-01-{1 + i % ORDERS_DAYS:02d}\n")
    orders = str(work / "orders-template")
    subprocess.run(lakectl("-w", orders, "-q", "create", "shop.orders", *ORDERS_CREATE), check=True, env=env)
    subprocess.run(lakectl("-w", orders, "-q", "write", "shop.orders", "-i", str(work / "orders.csv")), check=True,
                   env=env)


def lakectl_cases(work: Path, tree: Path, rows: int, write_rows: int) -> dict[str, list[str]]:
    wh = str(work / "wh")
    return {
        f"lakectl scan -f csv ({rows:,} rows)": lakectl("-w", wh, "scan", "db.s", "-f", "csv", tree=tree),
        f"lakectl scan -f jsonl ({rows:,} rows)": lakectl("-w", wh, "scan", "db.s", "-f", "jsonl", tree=tree),
        # overwrite: every repetition writes the same rows into a table of the same size
        f"lakectl write csv ({write_rows:,} rows)": lakectl("-w", wh, "-q", "write", "db.w", "--mode", "overwrite",
                                                            "-i", str(work / "in.csv"), tree=tree),
        f"lakectl write csv into shop.orders ({write_rows:,} rows)": lakectl(
            "-w", str(work / "orders-wh"), "-q", "write", "shop.orders", "-i", str(work / "orders.csv"), tree=tree),
    }


def cases(work: Path, before: Path | None, rows: int, write_rows: int) -> dict[str, list[str]]:
    out = {
        f"pyarrow read + write_csv ({rows:,} rows, floor)": python("-c", FLOOR_SCAN, str(work / "wh" / "db.db" / "s")),
        f"pyarrow read_csv + write_table ({write_rows:,} rows, floor)": python(
            "-c", FLOOR_WRITE, str(work / "in.csv"), str(work / "floor.parquet")),
        f"pyarrow read_csv + write_table of shop.orders' CSV ({write_rows:,} rows, floor)": python(
            "-c", FLOOR_WRITE, str(work / "orders.csv"), str(work / "floor-orders.parquet")),
        **lakectl_cases(work, ROOT, rows, write_rows),
    }
    if before is not None:
        out.update({f"before: {name}": cmd for name, cmd in lakectl_cases(work, before, rows, write_rows).items()})
    return out


def ratios(rows: int, write_rows: int, times: dict) -> list[tuple[str, str]]:
    scan_floor = f"pyarrow read + write_csv ({rows:,} rows, floor)"
    write_floor = f"pyarrow read_csv + write_table ({write_rows:,} rows, floor)"
    orders_floor = f"pyarrow read_csv + write_table of shop.orders' CSV ({write_rows:,} rows, floor)"
    pairs = []
    for prefix in ("", "before: "):
        pairs += [(f"{prefix}lakectl scan -f csv ({rows:,} rows)", scan_floor),
                  (f"{prefix}lakectl scan -f jsonl ({rows:,} rows)", scan_floor),
                  (f"{prefix}lakectl write csv ({write_rows:,} rows)", write_floor),
                  (f"{prefix}lakectl write csv into shop.orders ({write_rows:,} rows)", orders_floor)]
    return [(case, base) for case, base in pairs if case in times]


def report(times: dict[str, list[tuple[float, float]]], args: argparse.Namespace) -> str:
    cpu = {name: statistics.median(t[1] for t in ts) for name, ts in times.items()}
    wall = {name: statistics.median(t[0] for t in ts) for name, ts in times.items()}
    command = f"python bench/text.py --rows {args.rows} --write-rows {args.write_rows} --repeat {args.repeat}"
    if args.before:
        command += " --before DIR"
    lines = [
        run_heading(f"`{command}`"),
        "",
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end. Medians of {args.repeat} "
        "interleaved runs of whole processes, every one with OPENBLAS_NUM_THREADS=1 (as lakectl sets for itself); "
        "the ratios compare CPU time (user + system).",
        "",
        "| process | CPU s (median) | CPU s (min) | wall s (median) |",
        "|---|---:|---:|---:|",
        *(f"| {name} | {cpu[name]:.2f} | {min(t[1] for t in ts):.2f} | {wall[name]:.2f} |"
          for name, ts in times.items()),
        "",
        "| measure | against | ratio (CPU) | goal |",
        "|---|---|---:|---|",
        *(f"| {case} | {base} | {cpu[case] / cpu[base]:.2f}x | <= 1.5x |" for case, base in ratios(
            args.rows, args.write_rows, times)),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--write-rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another source tree whose lakectl to time as well")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "results-text.md"))
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory(prefix="lakectl-text-") as tmp:
        work = Path(tmp)
        # bytecode cached (outside the source trees), as an installed lakectl has it: without
        # it every process compiles the modules it imports again
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        # The floors run as lakectl runs (lakectl/app.py): numpy's OpenBLAS with one thread.
        # Without it the pyarrow process alone starts OpenBLAS's pool of threads when pyarrow
        # imports numpy, ~0.08 CPU s on two cores, which flattered every ratio before issue 45.
        env["OPENBLAS_NUM_THREADS"] = "1"
        make_data(work, args.rows, args.write_rows, env)
        commands = cases(work, args.before, args.rows, args.write_rows)
        def fresh_orders() -> None:  # the appended-to table as it was, before each write into it
            shutil.rmtree(work / "orders-wh", ignore_errors=True)
            shutil.copytree(work / "orders-template", work / "orders-wh")

        for name, cmd in commands.items():  # warm the page cache and the bytecode caches
            if "into shop.orders" in name:
                fresh_orders()
            run(cmd, env, work)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                if "into shop.orders" in name:
                    fresh_orders()
                times[name].append(run(cmd, env, work))
    text = report(times, args)
    print(text)
    out = Path(args.out)
    prepend_run(out, TITLE, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
