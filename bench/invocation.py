"""Benchmark: what one lakectl invocation costs as a whole process (issue 18).

Times whole processes, as a shell script or cron job runs them: ``lakectl --help``,
``lakectl snapshots``, a 1,000-row ``lakectl write`` (Parquet in) and ``lakectl scan --format
csv`` of a 1,000-row table, against a bare Python process doing the same file work with pyarrow
(read the Parquet file and write one; read the table's data file and print it as CSV), and an
empty ``python -c pass``. Every case runs once per repetition, interleaved, and each figure is
the median; the ratios are against the baseline of the same run. Goals from the issue: write and
scan within 1.5x of the pyarrow process, ``--help`` and metadata commands under 0.25 s.

    python bench/invocation.py [--repeat 9] [--out bench/results-invocation.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROWS = 1000

FLOOR_WRITE = "import pyarrow.parquet as pq, sys; pq.write_table(pq.read_table(sys.argv[1]), sys.argv[2])"
FLOOR_SCAN = ("import pyarrow.parquet as pq, pyarrow.csv as pc, sys; "
              "pc.write_csv(pq.read_table(sys.argv[1]), sys.stdout.buffer)")


def make_input(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({
        "id": pa.array(range(ROWS), pa.int64()),
        "name": [f"customer-{i % 97}" for i in range(ROWS)],
        "amount": [i * 1.25 for i in range(ROWS)],
        "dt": [f"2024-01-{1 + i % 28:02d}" for i in range(ROWS)],
    }), path)


def lakectl(*args: str) -> list[str]:
    return [sys.executable, "-m", "lakectl", *args]


def run(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    return time.perf_counter() - start


def cases(work: Path) -> dict[str, list[str]]:
    wh = str(work / "wh")
    data_file = next((work / "wh" / "db.db" / "s").glob("bucket-*/*.parquet"))
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "pyarrow write (floor)": [sys.executable, "-c", FLOOR_WRITE, str(work / "in.parquet"), str(work / "out.parquet")],
        "pyarrow scan to csv (floor)": [sys.executable, "-c", FLOOR_SCAN, str(data_file)],
        "lakectl --help": lakectl("--help"),
        "lakectl snapshots": lakectl("-w", wh, "snapshots", "db.s"),
        "lakectl write (1,000 rows)": lakectl("-w", wh, "-q", "write", "db.w", "-i", str(work / "in.parquet")),
        "lakectl scan --format csv (1,000 rows)": lakectl("-w", wh, "scan", "db.s", "--format", "csv"),
    }


RATIOS = (  # (case, baseline, goal)
    ("lakectl write (1,000 rows)", "pyarrow write (floor)", "<= 1.5x"),
    ("lakectl scan --format csv (1,000 rows)", "pyarrow scan to csv (floor)", "<= 1.5x"),
    ("lakectl --help", "python -c pass", "< 0.25 s"),
    ("lakectl snapshots", "python -c pass", "< 0.25 s"),
)


def measure(repeat: int) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory(prefix="lakectl-invocation-") as tmp:
        work = Path(tmp)
        make_input(work / "in.parquet")
        wh = str(work / "wh")
        for table in ("db.s", "db.w"):
            subprocess.run(lakectl("-w", wh, "-q", "create", table, "--schema",
                                   "id BIGINT NOT NULL, name STRING, amount DOUBLE, dt STRING", "--option",
                                   "bucket=1", "--primary-key", "id"), check=True, env=env)
        subprocess.run(lakectl("-w", wh, "-q", "write", "db.s", "-i", str(work / "in.parquet")), check=True, env=env)
        commands = cases(work)
        for cmd in commands.values():  # warm the page cache and the bytecode caches
            run(cmd, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeat):
            for name, cmd in commands.items():
                times[name].append(run(cmd, env))
    return times


def report(times: dict[str, list[float]], repeat: int) -> str:
    median = {name: statistics.median(ts) for name, ts in times.items()}
    lines = [
        "# Invocation cost: whole lakectl processes against a bare pyarrow process",
        "",
        f"`python bench/invocation.py --repeat {repeat}` (`make bench`); {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} cores, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end. Medians of {repeat} interleaved runs.",
        "",
        "| process | median s | min s |",
        "|---|---:|---:|",
        *(f"| {name} | {median[name]:.3f} | {min(ts):.3f} |" for name, ts in times.items()),
        "",
        "| measure | against | ratio | lakectl s | goal |",
        "|---|---|---:|---:|---|",
        *(f"| {case} | {base} | {median[case] / median[base]:.2f}x | {median[case]:.3f} | {goal} |"
          for case, base, goal in RATIOS),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "results-invocation.md"))
    args = parser.parse_args()
    times = measure(args.repeat)
    text = report(times, args.repeat)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    raw = ROOT / "bench" / "out" / "invocation.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(times, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
