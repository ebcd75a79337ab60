"""The benchmark suite of issue 10: lakectl against a pyarrow floor, pypaimon, pypaimon-rust, delta-rs and Spark.

    python bench/suite.py --sizes 200000,1000000,5000000 --repeat 3 --out bench/results.md

For each N it generates the data once (``bench/datagen.py``: a base of N rows, N/20 updates +
N/40 inserts, N/40 deletes; fixed seed), then in every repetition runs every runner once, in
a rotated order (interleaved: repetition r of every runner before repetition r+1 of any).
Each runner is a subprocess under its own virtualenv's python (``bench/runners/*.py``; the next
one starts once every process of the last has exited, ``bench/processes.py``) that
loads the inputs into memory, runs the steps on a fresh table and prints its timings as JSON
(see ``bench/runners/common.py``). Every figure is reported as the median over repetitions
and as the median of its ratio to the step's baseline measured in the same repetition: the
floor (pyarrow alone) for the local runners, bare Spark for lakectl on Spark.

pypaimon is slow, so it runs under a time budget: every repetition while its projected run
(its last measured run scaled linearly in N) fits ``--slow-budget`` seconds, only the first
repetition while it fits twice that, otherwise not at all; the results say which.

Then, on the lakectl CLI's table of the N closest to 1M, the metadata commands are timed as
whole processes and checked for not importing pyspark or pyarrow.compute.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "runners"))

from datagen import generate  # noqa: E402
from processes import run_settled  # noqa: E402

RUNNERS = ["floor", "lakectl_api", "lakectl_cli", "pypaimon", "pypaimon_rust", "deltalake", "spark"]
# what a runner subprocess reports: "spark" reports two
REPORTED = {"spark": ["spark_bare", "lakectl_spark"]}
TABLE = "bench.t"


# ---- environments ---------------------------------------------------------------------------
def python_for(runner: str) -> Path:
    if runner == "pypaimon":
        configured = os.environ.get("LAKECTL_ORACLE_PYTHON")
        return Path(configured) if configured else ROOT / ".venv-oracle" / "bin" / "python"
    if runner == "deltalake":
        return ROOT / ".venv-bench-delta" / "bin" / "python"
    if runner == "pypaimon_rust":
        configured = os.environ.get("LAKECTL_BENCH_RUST_PYTHON")  # e.g. from a git worktree: the venv is elsewhere
        return Path(configured) if configured else ROOT / ".venv-bench-rust" / "bin" / "python"
    return Path(sys.executable)


def script_for(runner: str) -> Path:
    scripts = {"pypaimon": "pypaimon_runner.py", "pypaimon_rust": "pypaimon_rust_runner.py",
               "deltalake": "deltalake_runner.py", "spark": "spark_runner.py"}
    return BENCH / "runners" / scripts.get(runner, f"{runner}.py")


def version_in(python: Path, code: str) -> str | None:
    try:
        out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


# ---- running --------------------------------------------------------------------------------
def run_runner(runner: str, data: Path, work: Path, verify: bool, timeout: float) -> dict[str, Any]:
    """One runner subprocess; {reported runner: {"steps", "info"}}, or {"error": ...}."""
    cmd = [str(python_for(runner)), str(script_for(runner)), "--data", str(data), "--work", str(work)]
    if verify:
        cmd.append("--verify")
    env = child_env(runner)
    start = time.perf_counter()
    try:
        # settled: the next runner starts on a machine this one (and its JVM) has left
        proc = run_settled(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(work.parent))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - start
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        return {"error": f"exit {proc.returncode}: {tail}"}
    out = json.loads(lines[-1])
    if "results" in out:
        res = out["results"]
        for r in res.values():
            r.setdefault("info", {}).update(out.get("info", {}))
            r["info"]["process_seconds"] = wall
        return res
    out["info"]["process_seconds"] = wall
    return {out["runner"]: {"steps": out["steps"], "info": out["info"]}}


SOURCE: Path | None = None  # a snapshot of --rev's core/ and lakectl/, or None for this checkout


def child_env(runner: str = "lakectl") -> dict[str, str]:
    """Environment of a subprocess: with --rev, lakectl's runners import the snapshot first."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    if SOURCE is not None and runner not in ("pypaimon", "pypaimon_rust", "deltalake"):
        env["LAKECTL_BENCH_SOURCE"] = str(SOURCE)
        env["PYTHONPATH"] = os.pathsep.join([str(SOURCE), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def snapshot_source(rev: str, into: Path) -> tuple[Path, str]:
    """``git archive`` core/ and lakectl/ of ``rev`` into ``into``, byte-compiled (as pip would);
    returns the directory and the commit's short sha."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, "core", "lakectl"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into)], check=True)
    return into, sha


def run_total(result: dict[str, Any]) -> float:
    return sum(s.get("seconds", 0) for r in result.values() if isinstance(r, dict) and "steps" in r
               for s in r["steps"].values())


# ---- metadata commands ----------------------------------------------------------------------
IMPORT_CHECK = """
import contextlib, io, json, sys
from lakectl.app import app
args = json.loads(sys.argv[1])
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    try:
        app(args, standalone_mode=False)
    except SystemExit:
        pass
print(json.dumps({m: m in sys.modules for m in ("pyspark", "pyarrow.compute", "pyarrow", "pandas", "numpy")}))
"""


def metadata_bench(warehouse: str, repeat: int) -> dict[str, Any]:
    lakectl = str(Path(sys.executable).parent / "lakectl")
    base = [lakectl, "--warehouse", warehouse]
    commands = {
        "snapshots": ["snapshots", TABLE],
        "describe": ["describe", TABLE],
        "expire --dry-run": ["expire", TABLE, "--dry-run"],
    }
    references = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import pyarrow'": [sys.executable, "-c", "import pyarrow"],
        "lakectl --version": [lakectl, "--version"],
    }
    times: dict[str, list[float]] = {k: [] for k in (*commands, *references)}
    cwd = str(Path(warehouse).parent)  # not the checkout: `python -c` puts the cwd first on sys.path
    for _ in range(repeat):
        for name, cmd in [*((k, base + v) for k, v in commands.items()), *references.items()]:
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), cwd=cwd)
            times[name].append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr}")
    imports = {}
    for name, args in commands.items():
        proc = subprocess.run([sys.executable, "-c", IMPORT_CHECK, json.dumps(["--warehouse", warehouse] + args)],
                              capture_output=True, text=True, env=child_env(), cwd=cwd)
        imports[name] = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else \
            {"error": proc.stderr[-500:]}
    # where a metadata command's start-up goes: the slowest imports, cumulative (-X importtime)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "lakectl", "--warehouse", warehouse,
                           "snapshots", TABLE], capture_output=True, text=True, env=child_env(), cwd=cwd)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2][1:]
            rows.append((len(name) - len(name.lstrip()), name.strip(), int(parts[1])))
    rows.sort(key=lambda r: -r[2])
    import_times = [(name, depth // 2, cum) for depth, name, cum in rows[:15]]
    return {"times": times, "commands": list(commands), "references": list(references), "imports": imports,
            "repeat": repeat, "import_times_us": import_times[:12]}


# ---- the driver -----------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200000,1000000,5000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runners", default=",".join(RUNNERS), help=f"comma-separated, of {','.join(RUNNERS)}")
    ap.add_argument("--out", default="bench/results.md")
    ap.add_argument("--json", default=None, help="raw results (default: --out with .json)")
    ap.add_argument("--slow-runners", default="pypaimon")
    ap.add_argument("--slow-budget", type=float, default=150.0,
                    help="seconds a slow runner's run may be projected to take and still run every repetition")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per runner subprocess")
    ap.add_argument("--metadata-rows", type=int, default=1_000_000,
                    help="time the metadata commands on the CLI table of the size closest to this")
    ap.add_argument("--metadata-repeat", type=int, default=5)
    ap.add_argument("--rev", default=None,
                    help="benchmark core/ and lakectl/ as of this git revision (a byte-compiled snapshot), "
                         "not the working tree, which others may be editing")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a new temp dir, removed)")
    args = ap.parse_args()

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    runners = [r.strip() for r in args.runners.split(",") if r.strip()]
    unknown = set(runners) - set(RUNNERS)
    if unknown:
        ap.error(f"unknown runners {sorted(unknown)}; known: {RUNNERS}")
    if "floor" not in runners and any(r != "spark" for r in runners):
        runners.insert(0, "floor")  # the baseline of every local runner
    slow = {r.strip() for r in args.slow_runners.split(",") if r.strip()}
    notes: list[str] = []
    for r in list(runners):
        if not python_for(r).exists():
            notes.append(f"{r}: skipped, no interpreter at {python_for(r)} (run `make bench-venvs`)")
            runners.remove(r)
    meta_n = min(sizes, key=lambda n: abs(n - args.metadata_rows))

    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="lakectl-suite-"))
    work.mkdir(parents=True, exist_ok=True)
    global SOURCE
    if args.rev:
        SOURCE, sha = snapshot_source(args.rev, work / "src")
        print(f"benchmarking lakectl at {args.rev} ({sha}) from {SOURCE}", flush=True)
    started = time.time()
    results: dict[str, Any] = {"sizes": {}, "notes": notes, "machine": machine(), "versions": versions(runners, args.rev),
                               "args": vars(args)}
    last_slow: dict[str, tuple[int, float]] = {}  # runner -> (N, seconds of its last run)
    try:
        for n in sizes:
            t0 = time.perf_counter()
            data = work / f"data-{n}"
            meta = generate(n, data)
            print(f"== N={n:,}: data in {time.perf_counter() - t0:.1f}s", flush=True)
            per_n: dict[str, Any] = {"meta": meta, "reps": [], "notes": [], "load_before": os.getloadavg()}
            plan = {}
            for r in runners:
                plan[r] = args.repeat
                if r in slow and r in last_slow:
                    n0, secs = last_slow[r]
                    projected = secs * n / n0
                    if projected > 2 * args.slow_budget:
                        plan[r] = 0
                        per_n["notes"].append(f"{r} not run: projected {projected:.0f} s per run "
                                              f"(> 2 x budget {args.slow_budget:.0f} s)")
                    elif projected > args.slow_budget:
                        plan[r] = 1
                        per_n["notes"].append(f"{r} run once (first repetition only): projected {projected:.0f} s "
                                              f"per run (> budget {args.slow_budget:.0f} s)")
            for rep in range(args.repeat):
                order = runners[rep % len(runners):] + runners[:rep % len(runners)]
                rep_results: dict[str, Any] = {}
                for r in order:
                    if rep >= plan[r]:
                        continue
                    rwork = work / f"{r}-{n}-{rep}"
                    t1 = time.perf_counter()
                    res = run_runner(r, data, rwork, verify=rep == 0, timeout=args.timeout)
                    secs = time.perf_counter() - t1
                    if "error" in res:
                        print(f"   rep {rep + 1} {r}: ERROR {res['error']}", flush=True)
                        oneline = " / ".join(res["error"].splitlines()[-3:])[:400]
                        per_n["notes"].append(f"{r} failed in repetition {rep + 1}: {oneline}")
                        for name in REPORTED.get(r, [r]):
                            rep_results[name] = None
                    else:
                        rep_results.update(res)
                        if r in slow:
                            last_slow[r] = (n, run_total(res))
                        summary = ", ".join(f"{name} {run_total({name: v}):.1f}s" for name, v in res.items())
                        print(f"   rep {rep + 1} {r}: {summary} (process {secs:.1f}s)", flush=True)
                    keep = r == "lakectl_cli" and n == meta_n and rep == min(plan[r], args.repeat) - 1
                    if not keep:
                        shutil.rmtree(rwork, ignore_errors=True)
                per_n["reps"].append(rep_results)
            check_rows(per_n)
            if n == meta_n and "lakectl_cli" in runners:
                last = next((rep["lakectl_cli"] for rep in reversed(per_n["reps"]) if rep.get("lakectl_cli")), None)
                if last:
                    per_n["metadata"] = metadata_bench(last["info"]["warehouse"], args.metadata_repeat)
            for p in work.glob(f"lakectl_cli-{n}-*"):
                shutil.rmtree(p, ignore_errors=True)
            shutil.rmtree(data, ignore_errors=True)
            per_n["load_after"] = os.getloadavg()  # the machine is shared: how busy it was
            results["sizes"][str(n)] = per_n
            results["elapsed_seconds"] = time.time() - started
            results["finished"] = dt.datetime.now().isoformat(timespec="seconds")
            write_outputs(results, args)  # after every N: a partial report survives a later failure
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"done in {(time.time() - started) / 60:.1f} min; wrote {args.out}")


def check_rows(per_n: dict[str, Any]) -> None:
    """Every read step of every runner must return the rows the data implies."""
    expected = per_n["meta"]["expected"]
    for i, rep in enumerate(per_n["reps"]):
        for name, run in rep.items():
            if not run:
                continue
            for step, want in expected.items():
                got = (run["steps"].get(step) or {}).get("rows")
                if got is not None and got != want:
                    per_n["notes"].append(f"ROW COUNT MISMATCH: {name} {step} returned {got} rows, expected {want} "
                                          f"(repetition {i + 1})")


# ---- environment description ----------------------------------------------------------------
def machine() -> dict[str, Any]:
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {"host": platform.node(), "cpus": os.cpu_count(), "cpu_model": model, "memory_bytes": mem,
            "platform": platform.platform(), "python": platform.python_version()}


def versions(runners: list[str], rev: str | None = None) -> dict[str, Any]:
    import pyarrow

    v: dict[str, Any] = {"python": platform.python_version(), "pyarrow (lakectl, floor)": pyarrow.__version__}
    try:
        from importlib.metadata import version

        v["pyspark"] = version("pyspark")
        v["lakectl"] = version("lakectl")
    except Exception:
        pass
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", rev or "HEAD"], cwd=ROOT, capture_output=True, text=True)
        if rev:
            v["lakectl git sha"] = f"{sha.stdout.strip()} (snapshot of {rev}, byte-compiled)"
        else:
            dirty = subprocess.run(["git", "status", "--porcelain", "--", "core", "lakectl"], cwd=ROOT,
                                   capture_output=True, text=True)
            v["lakectl git sha"] = sha.stdout.strip() + (" + uncommitted changes to core/ or lakectl/ (working tree)"
                                                         if dirty.stdout.strip() else " (working tree)")
    except OSError:
        pass
    if "pypaimon" in runners:
        v["pypaimon"] = version_in(python_for("pypaimon"), "from importlib.metadata import version as v; "
                                   "print(v('pypaimon'))")
        v["pyarrow (pypaimon venv)"] = version_in(python_for("pypaimon"), "import pyarrow; print(pyarrow.__version__)")
    if "pypaimon_rust" in runners:
        v["pypaimon-rust"] = version_in(python_for("pypaimon_rust"), "from importlib.metadata import version as v; "
                                        "print(v('pypaimon-rust'))")
        v["pyarrow (pypaimon-rust venv)"] = version_in(python_for("pypaimon_rust"),
                                                       "import pyarrow; print(pyarrow.__version__)")
    if "deltalake" in runners:
        v["deltalake"] = version_in(python_for("deltalake"), "import deltalake; print(deltalake.__version__)")
        v["pyarrow (deltalake venv)"] = version_in(python_for("deltalake"),
                                                   "import pyarrow; print(pyarrow.__version__)")
    v["java"] = (subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines() or [""])[0] \
        if shutil.which("java") else None
    return v


# ---- the report -----------------------------------------------------------------------------
def write_outputs(results: dict[str, Any], args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path = Path(args.json) if args.json else out.with_suffix(".json")
    json_path.write_text(json.dumps(results, indent=1, default=str))
    from report import render  # noqa: E402  (bench/report.py)

    out.write_text(render(results))


if __name__ == "__main__":
    main()
