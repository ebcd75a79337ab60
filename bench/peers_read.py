"""Benchmark: lakectl's reads against pypaimon-rust 0.4 (issue 27). CPU and wall seconds.

On a primary-key table that lakectl writes (N rows, ``id`` a random permutation, 4 day
partitions x 4 buckets, then one upsert batch of N/20 updates + N/40 inserts and a delete
batch of N/40 keys: ``bench/datagen.py``), three queries:

- range: ``id BETWEEN lo AND hi``, ~1% of the ids (``scan --where`` / SQL ``WHERE``);
- lookup: 100 random ids, some deleted, some inserted by the upsert (``lookup -k id=..``
  x 100 / SQL ``WHERE id IN (...)``);
- full: the merged read of the latest snapshot (``scan --output x.parquet`` / ``SELECT *``).

Each is run as
- ``lakectl CLI``: the console script, one whole process (results to a Parquet file, or CSV
  on stdout for ``lookup``, which has no ``--output``);
- ``lakectl API``: ``core.ops.scan.scan`` / ``core.ops.lookup.lookup`` in a fresh process
  (``runners/lakectl_reads.py``), the call timed in-process three times: the first call
  (cold: lazy imports, first use of the thread pools) and the median of the other two (warm);
- ``pypaimon-rust``: ``SQLContext.sql`` in .venv-bench-rust (``runners/pypaimon_rust_reads.py``),
  timed the same way, plus one more process with a single call for the whole-process figure.

Before timing, every case runs once and its rows are compared (count, sum of ids, sum of a
value column) with pypaimon-rust's and with the count datagen expects; a difference is
reported, not hidden. Then every case runs once per repetition in a rotated order, and each
figure is the median over repetitions. CPU is user + system of the child (``os.wait4``) for
whole processes and ``time.process_time`` (all threads) in-process.

    python bench/peers_read.py --rows 1000000,5000000 --repeat 3 --out bench/results-peers.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "runners"))

from common import BUCKETS, PARTITION, ROW_KIND, SCHEMA_SQL, checksum  # noqa: E402
from datagen import generate  # noqa: E402
from history import prepend_run, run_heading  # noqa: E402

TITLE = "# lakectl's reads against pypaimon-rust 0.4 (issue 27)"
RUST_PYTHON = ROOT / ".venv-bench-rust" / "bin" / "python"
LAKECTL = str(Path(sys.executable).parent / "lakectl")
TABLE = "bench.t"
DAYS = 4
LOOKUP_KEYS = 100
CALLS = 3  # in-process calls per API/SQL process: one cold, then warm ones
QUERIES = ["range", "lookup", "full"]
IMPLS = ["lakectl CLI", "lakectl API", "pypaimon-rust SQL", "pypaimon-rust process"]


def run(cmd: list[str], env: dict[str, str], stdout: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process, its stdout into ``stdout``; raises on failure."""
    with open(stdout, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} ... failed:\n{err}")
    return wall, usage.ru_utime + usage.ru_stime


class Cases:
    """The command of every (query, implementation) and how to read its result back."""

    def __init__(self, work: Path, meta: dict[str, Any], keys: list[int]) -> None:
        self.work = work
        self.wh = str(work / "wh")
        lo, hi = meta["range"]
        self.lo, self.hi = lo, hi - 1  # BETWEEN is inclusive
        self.keys = keys
        self.out = work / "out.parquet"
        self.stdout = work / "stdout"

    def command(self, query: str, impl: str, verify: bool = False) -> list[str]:
        if impl == "lakectl CLI":
            return self._cli(query)
        runner, python, calls = {
            "lakectl API": ("lakectl_reads.py", sys.executable, CALLS),
            "pypaimon-rust SQL": ("pypaimon_rust_reads.py", str(RUST_PYTHON), CALLS),
            "pypaimon-rust process": ("pypaimon_rust_reads.py", str(RUST_PYTHON), 1),
        }[impl]
        cmd = [python, str(ROOT / "bench" / "runners" / runner), "--warehouse", self.wh, "--table", TABLE,
               "--query", query, "--lo", str(self.lo), "--hi", str(self.hi),
               "--keys", ",".join(map(str, self.keys)), "--calls", str(1 if verify else calls)]
        return cmd + (["--checksum"] if verify else [])

    def _cli(self, query: str) -> list[str]:
        lk = [LAKECTL, "--warehouse", self.wh, "--engine", "local"]
        if query == "lookup":
            return lk + ["lookup", TABLE, "-f", "csv"] + [a for k in self.keys for a in ("-k", f"id={k}")]
        where = ["--where", f"id BETWEEN {self.lo} AND {self.hi}"] if query == "range" else []
        return lk + ["scan", TABLE, *where, "--output", str(self.out)]

    def result(self, query: str, impl: str) -> dict[str, Any]:
        """What the last run of ``impl`` returned: its JSON line, or for the CLI the checksum of
        the file or CSV it wrote."""
        if impl != "lakectl CLI":
            return json.loads(self.stdout.read_text().strip().splitlines()[-1])
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq

        if query == "lookup":
            table = pcsv.read_csv(self.stdout)
        else:
            table = pq.read_table(self.out)
            os.remove(self.out)
        return {"rows": table.num_rows, "checksum": checksum(table)}


def write_table(work: Path, data: Path, env: dict[str, str]) -> None:
    """The table, written by the lakectl console script (not timed)."""
    lk = [LAKECTL, "--warehouse", str(work / "wh"), "--engine", "local", "-q"]
    steps = [["create", TABLE, "--schema", SCHEMA_SQL, "--primary-key", "id,dt", "--partition-by", PARTITION,
              "--option", f"bucket={BUCKETS}"],
             ["write", TABLE, "--input", str(data / "base.parquet")],
             ["write", TABLE, "--input", str(data / "upserts.parquet")],
             ["write", TABLE, "--input", str(data / "deletes.parquet"), "--row-kind-column", ROW_KIND]]
    for step in steps:
        subprocess.run(lk + step, check=True, env=env, stdout=subprocess.DEVNULL)


def verify(cases: Cases, meta: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Every case once (this also warms the page cache and bytecode caches): rows and checksums,
    and the differences from pypaimon-rust's and from the counts datagen expects."""
    expected = {"range": meta["expected"]["read_range"], "full": meta["expected"]["read_latest"]}
    found: dict[str, dict[str, Any]] = {}
    problems = []
    for query in QUERIES:
        for impl in IMPLS:
            run(cases.command(query, impl, verify=True), env, cases.stdout)
            r = cases.result(query, impl)
            found[f"{query}|{impl}"] = {"rows": r["rows"], "checksum": r["checksum"]}
        reference = found[f"{query}|pypaimon-rust SQL"]["checksum"]
        for impl in IMPLS:
            got = found[f"{query}|{impl}"]["checksum"]
            if got != reference:
                problems.append(f"{query}: {impl} returned {got}, pypaimon-rust {reference} (rows, sum id, sum c_int)")
            if query in expected and got[0] != expected[query]:
                problems.append(f"{query}: {impl} returned {got[0]} rows, datagen expects {expected[query]}")
    return {"results": found, "problems": problems}


def measure(cases: Cases, env: dict[str, str], repeat: int) -> dict[str, list[dict[str, Any]]]:
    keys = [(q, i) for q in QUERIES for i in IMPLS]
    runs: dict[str, list[dict[str, Any]]] = {f"{q}|{i}": [] for q, i in keys}
    for rep in range(repeat):
        shift = rep % len(keys)
        for query, impl in keys[shift:] + keys[:shift]:
            wall, cpu = run(cases.command(query, impl), env, cases.stdout)
            rec: dict[str, Any] = {"wall": wall, "cpu": cpu}
            if impl != "lakectl CLI":
                calls = cases.result(query, impl)["calls"]
                rec["cold"] = calls[0]
                if len(calls) > 1:
                    rec["warm"] = {k: statistics.median(c[k] for c in calls[1:]) for k in ("cpu", "wall")}
            elif cases.out.exists():
                os.remove(cases.out)
            runs[f"{query}|{impl}"].append(rec)
            print(f"rep {rep + 1} {query} {impl}: cpu {cpu:.2f}s wall {wall:.2f}s", file=sys.stderr, flush=True)
    return runs


def rust_version() -> str:
    return subprocess.run([str(RUST_PYTHON), "-c", "from importlib.metadata import version as v; "
                           "print(v('pypaimon-rust'), v('pyarrow'))"],
                          capture_output=True, text=True, check=True).stdout.strip()


def one_size(n: int, repeat: int) -> dict[str, Any]:
    """Write the N-row table, check the readers agree, time them; the raw result."""
    work = Path(tempfile.mkdtemp(prefix="lakectl-peers-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["PYTHONPATH"] = str(ROOT)
    # bytecode cached outside the tree, as an installed lakectl has it
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    try:
        meta = generate(n, work / "data", days=DAYS)
        write_table(work, work / "data", env)
        import numpy as np

        # existing, updated, deleted and newly inserted ids alike
        keys = np.random.default_rng(11).choice(n + n // 40, LOOKUP_KEYS, replace=False)
        cases = Cases(work, meta, [int(k) for k in keys])
        checked = verify(cases, meta, env)
        for p in checked["problems"]:
            print("MISMATCH", p, file=sys.stderr)
        runs = measure(cases, env, repeat)
        return {"rows": n, "repeat": repeat, "meta": meta, "verify": checked, "runs": runs,
                "versions": {"python": platform.python_version(), "pypaimon-rust, pyarrow": rust_version()},
                "load": os.getloadavg(), "cores": os.cpu_count()}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1000000", help="comma-separated table sizes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "results-peers.md"))
    args = ap.parse_args()
    if not RUST_PYTHON.exists():
        raise SystemExit(f"{RUST_PYTHON} is missing: make bench-venvs")
    results = [one_size(int(n), args.repeat) for n in args.rows.split(",") if n.strip()]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    text = "\n".join([run_heading(f"`python bench/peers_read.py --rows {args.rows} --repeat {args.repeat}`"), "",
                      *(render(r) for r in results)])
    prepend_run(out, TITLE, text)
    print(text)
    return 0


def _med(rs: list[dict[str, Any]], *path: str) -> float:
    def get(r: dict[str, Any]) -> float:
        for p in path:
            r = r[p]
        return r  # type: ignore[return-value]
    return statistics.median(get(r) for r in rs)


def render(result: dict[str, Any]) -> str:
    """The tables for one N: per query the whole-process and in-process medians, and lakectl's
    ratios to pypaimon-rust (above 1: lakectl is slower)."""
    runs, n = result["runs"], result["rows"]
    lines = [f"### N = {n:,} rows ({result['meta']['rows']['upserts']:,}-row upsert, "
             f"{result['meta']['rows']['deletes']:,} deletes; {result['repeat']} repetitions)", ""]
    problems = result["verify"]["problems"]
    rows = {q: result["verify"]["results"][f"{q}|pypaimon-rust SQL"]["rows"] for q in QUERIES}
    lines.append("Rows returned: " + ", ".join(f"{q} {rows[q]:,}" for q in QUERIES) + ". "
                 + ("Every implementation returned the same rows (count, sum of ids, sum of c_int)."
                    if not problems else "DIFFERENCES: " + "; ".join(problems)))
    lines += ["", "| query | lakectl CLI CPU / wall | pypaimon-rust process CPU / wall | CLI / rust (CPU) "
              "| lakectl API cold CPU / wall | rust SQL cold CPU / wall | API / rust cold (CPU) "
              "| API warm CPU / wall | rust warm CPU / wall | API / rust warm (CPU, wall) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for q in QUERIES:
        cli, proc = runs[f"{q}|lakectl CLI"], runs[f"{q}|pypaimon-rust process"]
        api, sql = runs[f"{q}|lakectl API"], runs[f"{q}|pypaimon-rust SQL"]
        cells = [f"{_med(cli, 'cpu'):.2f} / {_med(cli, 'wall'):.2f}", f"{_med(proc, 'cpu'):.2f} / {_med(proc, 'wall'):.2f}",
                 f"{_med(cli, 'cpu') / _med(proc, 'cpu'):.2f}x",
                 f"{_med(api, 'cold', 'cpu'):.3f} / {_med(api, 'cold', 'wall'):.3f}",
                 f"{_med(sql, 'cold', 'cpu'):.3f} / {_med(sql, 'cold', 'wall'):.3f}",
                 f"{_med(api, 'cold', 'cpu') / _med(sql, 'cold', 'cpu'):.2f}x",
                 f"{_med(api, 'warm', 'cpu'):.3f} / {_med(api, 'warm', 'wall'):.3f}",
                 f"{_med(sql, 'warm', 'cpu'):.3f} / {_med(sql, 'warm', 'wall'):.3f}",
                 f"{_med(api, 'warm', 'cpu') / _med(sql, 'warm', 'cpu'):.2f}x, "
                 f"{_med(api, 'warm', 'wall') / _med(sql, 'warm', 'wall'):.2f}x"]
        lines.append(f"| {q} | " + " | ".join(cells) + " |")
    lines += ["", f"pypaimon-rust, pyarrow: {result['versions']['pypaimon-rust, pyarrow']}; Python "
              f"{result['versions']['python']}; {result['cores']} cores, load average "
              f"{', '.join(f'{x:.1f}' for x in result['load'])} at the end.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
