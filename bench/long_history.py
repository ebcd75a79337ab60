"""Tables that live for years (issue 44): whole-process costs of lakectl's commands on a table
with 100, 1,000 and 10,000 one-row commits behind it, and scan, compact and expire at 2,000
one-row commits against pypaimon-rust's scan of the same table.

One table is written commit by commit through lakectl's API (one row each, primary key, one
bucket, compacting as Paimon's writers do: its history grows, its live files stay few; its
writers' own expire keeps ``--retain-max`` snapshots, 100 by default, as a table that lives for
years keeps a window of them); its directory is copied as it passes each size. Another is written the same way but ``write-only``,
so that no compaction runs: every commit stays a sorted run of its own (what a streaming writer
with compaction elsewhere leaves), for the comparison with pypaimon-rust. Then, interleaved per repetition, each command runs as its own process (the console
script) and its CPU (user + system of the child, every thread) and wall time are recorded:

- ``commit``: ``lakectl write`` of one row (the copy grows by one commit per repetition);
- ``plan``: ``scan --where "id = -1"``, which every file's key range rules out: the planning
  of a read, reading manifests only;
- ``snapshots``: ``snapshots --limit 10``; ``health``; ``maintain --dry-run``;
- at the pypaimon-rust size: the full ``scan -f csv`` (merging every run), ``compact --full`` and
  ``expire --retain-max 100 --retain-min 1 --older-than 0s`` (each on a fresh copy), and
  pypaimon-rust's ``SELECT *`` (``runners/pypaimon_rust_reads.py``, .venv-bench-rust).

Figures are medians; ratios are taken within this run (largest size over smallest, lakectl over
pypaimon-rust), since the machines are shared and noisy.

    python bench/long_history.py --sizes 100,1000,10000 --rust-size 2000 --repeat 3 \
        --out bench/results-history.md
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from history import prepend_run, run_heading  # noqa: E402

LAKECTL = str(Path(sys.executable).parent / "lakectl")
RUST_PYTHON = os.environ.get("LAKECTL_BENCH_RUST_PYTHON", str(REPO / ".venv-bench-rust" / "bin" / "python"))
TITLE = "# Long histories: costs against the number of commits (issue 44)"


def build(root: Path, sizes: list[int], runs: int | None, retain_max: int) -> tuple[dict[int, Path], Path | None]:
    """Warehouses holding db.t after each of ``sizes`` one-row commits (copies of one table
    whose writes compact as Paimon's writers do, so its history grows and its live files do
    not), and one holding db.t after ``runs`` one-row commits of a write-only table (one
    bucket of that many sorted runs)."""
    from core.engines import EngineSettings
    from core.ops.create import create
    from core.ops.write import write
    from core.table import Table

    local = EngineSettings(engine="local")

    def one_row(t: Table, i: int) -> None:
        write(t, pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]}), engine_settings=local)

    out = {}
    work = root / "build"
    t = Table.locate("db.t", warehouse=str(work))
    # retain_max: the writers' own expire keeps that many snapshots, as a table that lives
    # for years does (0: every snapshot stays, all younger than snapshot.time-retained)
    retention = {"snapshot.num-retained.max": str(retain_max)} if retain_max else {}
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1", **retention})
    for i in range(1, max(sizes) + 1):
        one_row(t, i)
        if i in sizes:
            out[i] = root / f"wh-{i}"
            shutil.copytree(work, out[i])
            print(f"built {i} commits", file=sys.stderr, flush=True)
    runs_wh = None
    if runs:
        runs_wh = root / f"runs-{runs}"
        t = Table.locate("db.t", warehouse=str(runs_wh))
        create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
        for i in range(1, runs + 1):
            one_row(t, i)
        print(f"built {runs} sorted runs", file=sys.stderr, flush=True)
    return out, runs_wh


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """CPU (user + system, the child and its threads) and wall seconds of one process. The
    child may write and read bytecode caches as an installed lakectl does (a
    PYTHONDONTWRITEBYTECODE=1 here would compile every module in every process)."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def lakectl(wh: Path, *args: str) -> list[str]:
    return [LAKECTL, "-w", str(wh), *args]


def on_copy(wh: Path, scratch: Path, *args: str) -> tuple[float, float]:
    """A command that changes the table, on a fresh copy (the copy is not timed)."""
    copy = scratch / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(wh, copy)
    return timed(lakectl(copy, *args))


def measure(tables: dict[int, Path], rust_wh: Path | None, repeat: int, scratch: Path) -> dict[str, list]:
    row = scratch / "row.csv"
    row.write_text("id,v\n0,new\n")
    samples: dict[str, list] = {}

    def record(key: str, value: tuple[float, float]) -> None:
        samples.setdefault(key, []).append(value)

    for _ in range(repeat):
        for n, wh in tables.items():
            record(f"commit@{n}", timed(lakectl(wh, "write", "db.t", "-i", str(row))))
            record(f"plan@{n}", timed(lakectl(wh, "scan", "db.t", "--where", "id = -1", "-f", "csv")))
            record(f"snapshots@{n}", timed(lakectl(wh, "snapshots", "db.t", "--limit", "10")))
            record(f"health@{n}", timed(lakectl(wh, "-f", "json", "health", "db.t")))
            record(f"maintain-dry-run@{n}", timed(lakectl(wh, "-f", "json", "maintain", "db.t", "--dry-run")))
        if rust_wh is not None:
            record("scan", timed(lakectl(rust_wh, "scan", "db.t", "-f", "csv")))
            record("compact", on_copy(rust_wh, scratch, "compact", "db.t", "--full"))
            record("expire", on_copy(rust_wh, scratch, "expire", "db.t", "--retain-max", "100", "--retain-min", "1",
                                     "--older-than", "0s"))
            if Path(RUST_PYTHON).exists():
                record("pypaimon-rust scan", timed([RUST_PYTHON, str(REPO / "bench/runners/pypaimon_rust_reads.py"),
                                                    "--warehouse", str(rust_wh), "--table", "db.t",
                                                    "--query", "full"]))
    return samples


def median(values: list[tuple[float, float]], i: int) -> float:
    return statistics.median(v[i] for v in values)


def report(samples: dict[str, list], sizes: list[int], rust_size: int | None, repeat: int, retain_max: int) -> str:
    kept = f"snapshot.num-retained.max {retain_max}" if retain_max else "every snapshot retained"
    rust = f"pypaimon-rust at {rust_size}" if rust_size else "no pypaimon-rust comparison"
    lines = [run_heading(f"sizes {', '.join(map(str, sizes))} ({kept}), {rust}, {repeat} repetitions"),
             "", "Whole processes, medians: CPU s (wall s).", "",
             "| command | " + " | ".join(f"{n} commits" for n in sizes) + f" | {sizes[-1]} / {sizes[0]} (CPU) |",
             "|---|" + "---|" * (len(sizes) + 1)]
    for cmd in ("commit", "plan", "snapshots", "health", "maintain-dry-run"):
        cells = [f"{median(samples[f'{cmd}@{n}'], 0):.3f} ({median(samples[f'{cmd}@{n}'], 1):.3f})" for n in sizes]
        ratio = median(samples[f"{cmd}@{sizes[-1]}"], 0) / median(samples[f"{cmd}@{sizes[0]}"], 0)
        lines.append(f"| `{cmd}` | " + " | ".join(cells) + f" | {ratio:.2f}x |")
    if rust_size is not None:
        rust = samples.get("pypaimon-rust scan")
        lines += ["", f"At {rust_size} one-row commits (one bucket, {rust_size} sorted runs):", "",
                  "| command | CPU s | wall s | CPU / pypaimon-rust scan | wall / pypaimon-rust scan |", "|---|---|---|---|---|"]
        for cmd in ("scan", "compact", "expire", "pypaimon-rust scan"):
            if cmd not in samples:
                continue
            cpu, wall = median(samples[cmd], 0), median(samples[cmd], 1)
            ratios = (f"{cpu / median(rust, 0):.2f}x | {wall / median(rust, 1):.2f}x") if rust else "- | -"
            lines.append(f"| `{cmd}` | {cpu:.3f} | {wall:.3f} | {ratios} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--rust-size", type=int, default=2000, help="0: no comparison with pypaimon-rust")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--retain-max", type=int, default=100,
                    help="snapshot.num-retained.max of the history table (0: keep every snapshot)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rust_size = args.rust_size or None
    with tempfile.TemporaryDirectory(prefix="lakectl-bench-history-") as tmp:
        scratch = Path(tmp)
        tables, runs_wh = build(scratch, sizes, rust_size, args.retain_max)
        samples = measure(tables, runs_wh, args.repeat, scratch)
    text = report(samples, sizes, rust_size, args.repeat, args.retain_max)
    print(text)
    if args.out:
        prepend_run(args.out, TITLE, text)


if __name__ == "__main__":
    main()
