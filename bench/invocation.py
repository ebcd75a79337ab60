"""Benchmark: what one lakectl invocation costs as a whole process (issue 18).

Times whole processes, as a shell script or cron job runs them: ``lakectl --help``,
``lakectl snapshots`` (of a table of one snapshot, and of one of 100 one-row commits, issue 45),
a 1,000-row ``lakectl write`` (Parquet in) and ``lakectl scan --format csv`` of a 1,000-row table, against a bare Python process doing the same file work with pyarrow
(read the Parquet file and write one; read the table's data file and print it as CSV), a bare
Python process reading the snapshot files for ``snapshots`` and printing the version for
``--version``, a bash TAB press (the completion protocol's environment) for a table name and an
option, and an empty ``python -c pass``. Every case runs once per repetition, interleaved, and each figure is
the median; the ratios are against the baseline of the same run. Goals (issue 26): write and scan
within 1.5x of the pyarrow process, ``snapshots`` and ``--version`` within 3x of their bare
process, a TAB press under 0.2 s wall. Processes run with bytecode caches, as an installed
lakectl does; one case shows ``snapshots`` without them.

    python bench/invocation.py [--repeat 9] [--out bench/results-invocation.md] [--before DIR]

``--before DIR`` also times the lakectl commands of another source tree (e.g. ``git archive``
of an older commit unpacked into DIR), in the same interleaved runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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
# The file work of `lakectl snapshots`: list the snapshot directory, read each JSON file,
# print one line per snapshot.
BARE_SNAPSHOTS = ("import json, os, sys; d = sys.argv[1]; "
                  "[print(s['id'], s['schemaId'], s['commitKind'], s['timeMillis'], s.get('totalRecordCount')) "
                  "for s in (json.load(open(os.path.join(d, n))) for n in sorted(os.listdir(d)) "
                  "if n.startswith('snapshot-'))]")
BARE_VERSION = "from importlib.metadata import version; print('lakectl', version('lakectl'))"
# A table a cron writer has kept for a while: 100 one-row commits through lakectl's API (with
# the default options, so its writes also compact: about 125 snapshots), for `snapshots` on a
# realistic history next to the one-snapshot table.
HISTORY_COMMITS = 100
BUILD_HISTORY = ("import sys, pyarrow as pa; from core.table import Table; from core.ops.create import create; "
                 "from core.ops.write import write; t = Table.locate('db.h', warehouse=sys.argv[1]); "
                 "create(t, 'id BIGINT NOT NULL, name STRING, amount DOUBLE, dt STRING', primary_keys=['id'], "
                 "options={'bucket': '1'}); "
                 "[write(t, pa.table({'id': pa.array([i], pa.int64()), 'name': [f'customer-{i}'], 'amount': [1.25 * i], "
                 "'dt': ['2024-01-01']})) for i in range(int(sys.argv[2]))]")


def make_input(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({
        "id": pa.array(range(ROWS), pa.int64()),
        "name": [f"customer-{i % 97}" for i in range(ROWS)],
        "amount": [i * 1.25 for i in range(ROWS)],
        "dt": [f"2024-01-{1 + i % 28:02d}" for i in range(ROWS)],
    }), path)


def python(*args: str, tree: Path = ROOT) -> list[str]:
    """A Python process importing from ``tree`` (every case starts the same way, through env)."""
    return ["env", f"PYTHONPATH={tree}", sys.executable, *args]


def lakectl(*args: str, tree: Path = ROOT) -> list[str]:
    return python("-m", "lakectl", *args, tree=tree)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process. On a shared, loaded machine the CPU time is
    the steadier figure: waiting for a core adds to the wall time only."""
    start, cpu = time.perf_counter(), _cpu()
    # cwd outside any source tree: `python -m` puts the current directory first on sys.path
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    return time.perf_counter() - start, _cpu() - cpu


def complete(words: str, tree: Path = ROOT) -> list[str]:
    """One TAB press in bash: the shell runs lakectl with the words typed so far."""
    cword = len(words.split()) - 1
    # The console script, as the shell calls it (under `python -m` the program name differs and
    # the completion variable would not be _LAKECTL_COMPLETE).
    script = str(Path(sys.executable).with_name("lakectl"))
    return ["env", "_LAKECTL_COMPLETE=complete_bash", f"COMP_WORDS={words}", f"COMP_CWORD={cword}",
            f"PYTHONPATH={tree}", script]


def lakectl_cases(work: Path, tree: Path) -> dict[str, list[str]]:
    wh = str(work / "wh")
    return {
        "lakectl --help": lakectl("--help", tree=tree),
        "lakectl --version": lakectl("--version", tree=tree),
        "TAB: lakectl scan <table>": complete(f"lakectl -w {wh} scan db.", tree=tree),
        "TAB: lakectl scan --option": complete("lakectl scan --snap", tree=tree),
        "lakectl snapshots": lakectl("-w", wh, "snapshots", "db.s", tree=tree),
        f"lakectl snapshots ({HISTORY_COMMITS} commits)": lakectl("-w", wh, "snapshots", "db.h", tree=tree),
        "lakectl write (1,000 rows)": lakectl("-w", wh, "-q", "write", "db.w", "-i", str(work / "in.parquet"),
                                              tree=tree),
        "lakectl scan --format csv (1,000 rows)": lakectl("-w", wh, "scan", "db.s", "--format", "csv", tree=tree),
    }


def cases(work: Path, before: Path | None) -> dict[str, list[str]]:
    data_file = next((work / "wh" / "db.db" / "s").glob("bucket-*/*.parquet"))
    out = {
        "python -c pass": python("-c", "pass"),
        "pyarrow write (floor)": python("-c", FLOOR_WRITE, str(work / "in.parquet"), str(work / "out.parquet")),
        "pyarrow scan to csv (floor)": python("-c", FLOOR_SCAN, str(data_file)),
        "python reads the snapshots (floor)": python("-c", BARE_SNAPSHOTS, str(work / "wh" / "db.db" / "s" / "snapshot")),
        f"python reads the snapshots ({HISTORY_COMMITS} commits, floor)": python(
            "-c", BARE_SNAPSHOTS, str(work / "wh" / "db.db" / "h" / "snapshot")),
        "python prints the version (floor)": python("-c", BARE_VERSION),
        **lakectl_cases(work, ROOT),
        # The same command without bytecode caches, as in an environment that sets
        # PYTHONDONTWRITEBYTECODE=1 on a fresh tree: every module is compiled in every process.
        # (An empty cache prefix stands for the fresh tree; the variable alone would still read
        # the caches the other cases wrote.)
        "lakectl snapshots, no bytecode cache": ["env", "PYTHONDONTWRITEBYTECODE=1",
                                                 f"PYTHONPYCACHEPREFIX={work / 'no-pycache'}",
                                                 *lakectl_cases(work, ROOT)["lakectl snapshots"]],
    }
    if before is not None:
        out.update({f"before: {name}": cmd for name, cmd in lakectl_cases(work, before).items()})
    return out


RATIOS = (  # (case, baseline, goal)
    ("lakectl write (1,000 rows)", "pyarrow write (floor)", "<= 1.5x"),
    ("lakectl scan --format csv (1,000 rows)", "pyarrow scan to csv (floor)", "<= 1.5x"),
    ("lakectl snapshots", "python reads the snapshots (floor)", "<= 3x"),
    (f"lakectl snapshots ({HISTORY_COMMITS} commits)", f"python reads the snapshots ({HISTORY_COMMITS} commits, floor)",
     "<= 3x"),
    ("lakectl --version", "python prints the version (floor)", "<= 3x"),
    ("lakectl --help", "python -c pass", "< 0.25 s"),
    ("TAB: lakectl scan <table>", "python -c pass", "< 0.2 s wall"),
    ("TAB: lakectl scan --option", "python -c pass", "< 0.2 s wall"),
    ("lakectl snapshots, no bytecode cache", "lakectl snapshots", ""),
)


def measure(repeat: int, before: Path | None) -> dict[str, list[tuple[float, float]]]:
    # As an installed lakectl runs: bytecode caches written on the first run and used after
    # (a PYTHONDONTWRITEBYTECODE=1 in this environment would compile every module every time).
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    # every process as lakectl runs (lakectl/app.py): numpy's OpenBLAS with one thread, so
    # that the pyarrow floors do not pay for starting its pool of threads (~0.08 CPU s)
    env["OPENBLAS_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory(prefix="lakectl-invocation-") as tmp:
        work = Path(tmp)
        make_input(work / "in.parquet")
        wh = str(work / "wh")
        for table in ("db.s", "db.w"):
            subprocess.run(lakectl("-w", wh, "-q", "create", table, "--schema",
                                   "id BIGINT NOT NULL, name STRING, amount DOUBLE, dt STRING", "--option",
                                   "bucket=1", "--primary-key", "id"), check=True, env=env)
        subprocess.run(lakectl("-w", wh, "-q", "write", "db.s", "-i", str(work / "in.parquet")), check=True, env=env)
        subprocess.run(python("-c", BUILD_HISTORY, wh, str(HISTORY_COMMITS)), check=True, env=env, cwd=work)
        commands = cases(work, before)
        for cmd in commands.values():  # warm the page cache and the bytecode caches
            run(cmd, env, work)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(repeat):
            for name, cmd in commands.items():
                times[name].append(run(cmd, env, work))
    return times


def report(times: dict[str, list[tuple[float, float]]], repeat: int) -> str:
    wall = {name: statistics.median(t[0] for t in ts) for name, ts in times.items()}
    median = {name: statistics.median(t[1] for t in ts) for name, ts in times.items()}  # CPU
    ratios = list(RATIOS)
    ratios += [(f"before: {case}", base, "") for case, base, _ in RATIOS if f"before: {case}" in times]
    ratios += [(case, f"before: {case}", "") for case, _, _ in RATIOS if f"before: {case}" in times]
    lines = [
        "# Invocation cost: whole lakectl processes against a bare pyarrow process",
        "",
        f"`python bench/invocation.py --repeat {repeat}` (`make bench`); {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} cores, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end. Medians of {repeat} interleaved runs; "
        "the ratios compare CPU time (user + system) of the whole process, steadier than wall time "
        "on a loaded machine.",
        "",
        "| process | CPU s (median) | CPU s (min) | wall s (median) |",
        "|---|---:|---:|---:|",
        *(f"| {name} | {median[name]:.3f} | {min(t[1] for t in ts):.3f} | {wall[name]:.3f} |"
          for name, ts in times.items()),
        "",
        "| measure | against | ratio (CPU) | lakectl CPU s | lakectl wall s | goal | met |",
        "|---|---|---:|---:|---:|---|---|",
        *(f"| {case} | {base} | {median[case] / median[base]:.2f}x | {median[case]:.3f} | {wall[case]:.3f} | {goal} "
          f"| {met(goal, median[case] / median[base], median[case], wall[case])} |"
          for case, base, goal in ratios),
        "",
        WHY_EARLIER_FIGURES,
        "",
    ]
    return "\n".join(lines)


def met(goal: str, ratio: float, cpu: float, wall: float) -> str:
    """Whether a goal of RATIOS holds: "<= 1.5x" on the CPU ratio, "< 0.25 s" on CPU seconds,
    "< 0.2 s wall" on wall seconds."""
    if not goal:
        return ""
    bound = float(goal.split()[1].rstrip("x"))
    value = ratio if goal.endswith("x") else wall if goal.endswith("wall") else cpu
    return "yes" if value <= bound else "no"


WHY_EARLIER_FIGURES = (
    "Why issue 26's figures (`snapshots` 0.58 s, a 1,000-row `write` 1.48 s) were several times these: "
    "they were taken in an environment that sets `PYTHONDONTWRITEBYTECODE=1` (the development machines do), "
    "where no bytecode cache is ever written and every process compiles every module it imports. An "
    "installed lakectl, or a fresh clone after its first run, reads the caches; the last row is the "
    "same `snapshots` with the caches kept out, the cost a no-cache environment pays in every run. "
    "`lakectl snapshots` is answered without building the command tree (lakectl/quick.py), so it "
    "imports neither Typer nor any data library."
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "results-invocation.md"))
    parser.add_argument("--before", type=Path, help="another source tree whose lakectl to time as well")
    args = parser.parse_args()
    times = measure(args.repeat, args.before)
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
