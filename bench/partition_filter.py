"""A filter on one partition of many (issue 44): ``lakectl scan --where "p = X"`` on a table of
2,000 partitions and 20,000 data files, against pypaimon-rust's ``SELECT * ... WHERE p = X``.

The table is what a cron writer leaves: ten commits, each writing one row to every partition
(so every commit's manifest spans all partitions, and the table has ten files per partition),
written through lakectl's API on the in-process path. Each query is its own process (the
console script; the rust runner in .venv-bench-rust), interleaved per repetition; its CPU (user
+ system of the child, every thread) and wall time are recorded, medians reported with the
ratio lakectl / pypaimon-rust from this run.

    python bench/partition_filter.py --partitions 2000 --commits 10 --repeat 5 \
        --out bench/results-partition-filter.md [--before DIR]

``--before DIR`` also times the scan of another source tree (``git archive`` of an older commit
unpacked into DIR, run as ``python -m lakectl`` with DIR on PYTHONPATH) in the same runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from history import prepend_run, run_heading  # noqa: E402
from long_history import LAKECTL, RUST_PYTHON, timed  # noqa: E402

TITLE = "# A filter on one partition of many (issue 44)"
# The floor under lakectl's figure: a process that imports what the scan imports and exits
# (Python, pyarrow with numpy, Typer, lakectl's modules), measured in the same run.
STARTUP = "lakectl's imports alone"
STARTUP_IMPORTS = ("import os; from lakectl.app import BLAS_THREADS; os.environ.setdefault(*BLAS_THREADS); "
                   "from core import pandas_probe; pandas_probe.install(); "  # as lakectl.cli.main does
                   "import lakectl.cli, lakectl.commands.scan, core.ops.scan, core.engines.local")


def timed_in(cwd: str, argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    here = os.getcwd()
    os.chdir(cwd)
    try:
        return timed(argv, env)
    finally:
        os.chdir(here)


def build(warehouse: Path, partitions: int, commits: int) -> None:
    from core.engines import EngineSettings
    from core.ops.create import create
    from core.ops.write import write
    from core.table import Table

    t = Table.locate("db.t", warehouse=str(warehouse))
    create(t, "p INT, id BIGINT, v STRING", partition_keys=["p"], options={"bucket": "1", "bucket-key": "id"})
    for c in range(commits):
        ids = pa.array(range(c * partitions, (c + 1) * partitions), pa.int64())
        write(t, pa.table({"p": pa.array(range(partitions), pa.int32()), "id": ids,
                           "v": [f"c{c}"] * partitions}), engine_settings=EngineSettings(engine="local"))
        print(f"commit {c + 1}/{commits}", file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--before", type=Path, help="another source tree whose scan to time as well")
    args = ap.parse_args()
    target = args.partitions // 2 + 7
    samples: dict[str, list[tuple[float, float]]] = {"lakectl": [], STARTUP: [], "pypaimon-rust": []}
    if args.before:
        samples["before: lakectl"] = []
        before_env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                      "PYTHONPATH": str(args.before.resolve())}
    with tempfile.TemporaryDirectory(prefix="lakectl-bench-partition-") as tmp:
        wh = Path(tmp) / "wh"
        build(wh, args.partitions, args.commits)
        for _ in range(args.repeat):
            samples["lakectl"].append(timed([LAKECTL, "-w", str(wh), "scan", "db.t", "--where", f"p = {target}",
                                             "-f", "csv"]))
            samples[STARTUP].append(timed([sys.executable, "-c", STARTUP_IMPORTS]))
            if args.before:
                # cwd outside any source tree: `python -m` puts the current directory first on sys.path
                samples["before: lakectl"].append(timed_in(tmp, [sys.executable, "-m", "lakectl", "-w", str(wh), "scan",
                                                                 "db.t", "--where", f"p = {target}", "-f", "csv"],
                                                          before_env))
            samples["pypaimon-rust"].append(timed([RUST_PYTHON, str(REPO / "bench/runners/pypaimon_rust_reads.py"),
                                                   "--warehouse", str(wh), "--table", "db.t", "--query", "partition",
                                                   "--partition", f"p={target}"]))
    rust_cpu = statistics.median(v[0] for v in samples["pypaimon-rust"])
    rust_wall = statistics.median(v[1] for v in samples["pypaimon-rust"])
    lines = [run_heading(f"{args.partitions} partitions, {args.commits} commits "
                         f"({args.partitions * args.commits} files), {args.repeat} repetitions"), "",
             "Whole processes, medians.", "",
             "| reader | CPU s | wall s | CPU / pypaimon-rust | wall / pypaimon-rust |", "|---|---|---|---|---|"]
    for name, values in samples.items():
        cpu, wall = statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)
        lines.append(f"| {name} | {cpu:.3f} | {wall:.3f} | {cpu / rust_cpu:.2f}x | {wall / rust_wall:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        prepend_run(args.out, TITLE, text)


if __name__ == "__main__":
    main()
