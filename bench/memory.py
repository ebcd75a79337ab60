"""Peak memory of the local engine's write and ``scan --output``, as whole ``lakectl`` processes,
for several revisions and ``write-buffer-size`` values, interleaved.

    python bench/memory.py --rows 5000000 --cases 62a9669:256mb,HEAD:256mb,HEAD:64mb,HEAD:16mb \\
        --repeat 3 --out bench/out/memory.md

    python bench/memory.py --bucket-rows 600000,3000000 --repeat 2 --out bench/out/memory-bucket.md

``--bucket-rows`` measures one bucket instead (issue 27): a table with a single bucket and no
partition gets R rows (the base) and then the upsert batch (R/20 updates, R/40 inserts), two
sorted runs; the peaks of ``scan --output`` and ``compact --full`` of that bucket, per R.

Measured like the suite's CLI runner (``bench/runners/lakectl_cli.py``): each step is one
``lakectl --engine local`` process, timed, with its peak RSS from ``os.wait4``; "above idle" is
minus the peak of an idle ``lakectl create``. The floor process reads the input file and writes
it back with pyarrow (``pq.read_table`` + ``pq.write_table``, zstd 1): the same bytes moved
with no table format, as a whole process too. Every revision is a byte-compiled snapshot of
``core/`` and ``lakectl/`` (as the suite's ``--rev``), so work in progress in the checkout does
not leak in. Within each repetition every (revision, buffer) runs once, in a rotated order, and
its times are divided by that repetition's floor; medians over repetitions.
"""

from __future__ import annotations

import argparse
import json
import os
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

from common import BUCKETS, PARTITION, SCHEMA_SQL  # noqa: E402
from suite import machine, snapshot_source, versions  # noqa: E402

LAKECTL = str(Path(sys.executable).parent / "lakectl")
FLOOR = ("import sys, pyarrow.parquet as pq; "
         "pq.write_table(pq.read_table(sys.argv[1]), sys.argv[2], compression='zstd', compression_level=1)")


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(seconds, peak RSS bytes) of one process; raises on failure."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return seconds, usage.ru_maxrss * 1024


def one_run(src: Path, buffer: str, data: Path, work: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONHASHSEED="0", LAKECTL_BENCH_SOURCE=str(src),
               PYTHONPATH=os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])]))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    lk = [LAKECTL, "--warehouse", str(work / "wh"), "--engine", "local", "--format", "json"]
    out: dict[str, Any] = {}
    _, out["idle_rss"] = run(lk + ["create", "bench.t", "--schema", SCHEMA_SQL, "--primary-key", "id,dt",
                                   "--partition-by", PARTITION, "--option", f"bucket={BUCKETS}",
                                   "--option", f"write-buffer-size={buffer}"], env)
    out["write_s"], out["write_rss"] = run(lk + ["write", "bench.t", "--input", str(data / "base.parquet")], env)
    target = str(work / "out.parquet")
    out["scan_s"], out["scan_rss"] = run(lk + ["scan", "bench.t", "--output", target], env)
    os.remove(target)
    shutil.rmtree(work, ignore_errors=True)
    return out


def bucket_run(src: Path, buffer: str, data: Path, work: Path) -> dict[str, Any]:
    """One bucket of two sorted runs: peaks of scanning it and of compacting it fully."""
    env = dict(os.environ, PYTHONHASHSEED="0", LAKECTL_BENCH_SOURCE=str(src),
               PYTHONPATH=os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])]))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    lk = [LAKECTL, "--warehouse", str(work / "wh"), "--engine", "local", "--format", "json"]
    out: dict[str, Any] = {}
    _, out["idle_rss"] = run(lk + ["create", "bench.t", "--schema", SCHEMA_SQL, "--primary-key", "id",
                                   "--option", "bucket=1", "--option", f"write-buffer-size={buffer}"], env)
    for name in ("base", "upserts"):
        run(lk + ["write", "bench.t", "--input", str(data / f"{name}.parquet")], env)
    target = str(work / "out.parquet")
    out["scan_s"], out["scan_rss"] = run(lk + ["scan", "bench.t", "--output", target], env)
    os.remove(target)
    out["compact_s"], out["compact_rss"] = run(lk + ["compact", "bench.t", "--full"], env)
    shutil.rmtree(work, ignore_errors=True)
    return out


def generate_in_child(rows: int, data: Path) -> dict[str, Any]:
    # In a child process: a child's peak RSS (ru_maxrss) counts the parent's pages it was
    # forked with, so this process stays small.
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); "
                    f"from datagen import generate; generate({rows}, __import__('pathlib').Path({str(data)!r}))"],
                   check=True)
    return json.loads((data / "meta.json").read_text())


def bucket_main(args: argparse.Namespace, cases: list[tuple[str, ...]], sources: dict, work: Path) -> None:
    """``--bucket-rows``: every (size, case) once per repetition, sizes interleaved."""
    sizes = [int(r) for r in args.bucket_rows.split(",") if r.strip()]
    metas = {n: generate_in_child(n, work / f"data-{n}") for n in sizes}
    runs: dict[str, list[dict[str, Any]]] = {f"{rev}|{b}|{n}": [] for rev, b in cases for n in sizes}
    keys = [(rev, b, n) for rev, b in cases for n in sizes]
    for rep in range(args.repeat):
        for rev, b, n in keys[rep % len(keys):] + keys[:rep % len(keys)]:
            r = bucket_run(sources[rev][0], b, work / f"data-{n}", work / "run")
            runs[f"{rev}|{b}|{n}"].append(r)
            print(f"rep {rep + 1} {rev} {b} {n}: scan {r['scan_s']:.2f}s {r['scan_rss'] >> 20} MiB, "
                  f"compact {r['compact_s']:.2f}s {r['compact_rss'] >> 20} MiB", flush=True)
    result = {"bucket_rows": sizes, "metas": {str(n): m for n, m in metas.items()},
              "revs": {r: s[1] for r, s in sources.items()}, "runs": runs, "machine": machine(),
              "versions": versions([]), "args": vars(args)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str))
    out.write_text(render_bucket(result))
    print(out.read_text())


def render_bucket(result: dict[str, Any]) -> str:
    """Per case and bucket size: the scan's and the full compaction's peak above an idle
    ``lakectl create``, and each as a multiple of the smallest size's."""
    med = statistics.median
    mib = 1 << 20
    sizes = result["bucket_rows"]
    lines = ["| revision | write-buffer-size | rows in the bucket | scan s | scan peak above idle | x smallest "
             "| compact --full s | compact peak above idle | x smallest |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key in dict.fromkeys(k.rsplit("|", 1)[0] for k in result["runs"]):
        rev, buffer = key.split("|")
        above = {n: {m: med(r[f"{m}_rss"] - r["idle_rss"] for r in result["runs"][f"{key}|{n}"])
                     for m in ("scan", "compact")} for n in sizes}
        for n in sizes:
            rs = result["runs"][f"{key}|{n}"]
            rows = n + result["metas"][str(n)]["rows"]["upserts"]
            lines.append(f"| {rev} ({result['revs'][rev]}) | {buffer} | {n:,} + {rows - n:,} | "
                         f"{med(r['scan_s'] for r in rs):.2f} | {above[n]['scan'] / mib:.0f} MiB | "
                         f"{above[n]['scan'] / above[sizes[0]]['scan']:.2f}x | {med(r['compact_s'] for r in rs):.2f} | "
                         f"{above[n]['compact'] / mib:.0f} MiB | {above[n]['compact'] / above[sizes[0]]['compact']:.2f}x |")
    idle = med(r["idle_rss"] for rs in result["runs"].values() for r in rs)
    return "\n".join(lines) + f"\n\nIdle `lakectl create`: {idle / mib:.0f} MiB.\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--cases", default="HEAD:256mb",
                    help="comma-separated REVISION:WRITE-BUFFER-SIZE pairs (the table's write-buffer-size option)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bucket-rows", help="comma-separated sizes of one bucket: measure its scan and full "
                    "compaction instead of the whole-table write and scan")
    ap.add_argument("--out", default="bench/out/memory.md")
    args = ap.parse_args()
    cases = [tuple(c.strip().rsplit(":", 1)) for c in args.cases.split(",") if c.strip()]
    revs = list(dict.fromkeys(rev for rev, _ in cases))
    work = Path(tempfile.mkdtemp(prefix="lakectl-memory-"))
    try:
        sources = {}
        for rev in revs:
            src, sha = snapshot_source(rev, work / f"src-{rev.replace('/', '_')}")
            sources[rev] = (src, sha)
        if args.bucket_rows:
            bucket_main(args, cases, sources, work)
            return
        data = work / "data"
        meta = generate_in_child(args.rows, data)
        runs: dict[str, list[dict[str, Any]]] = {f"{rev}|{b}": [] for rev, b in cases}
        floors = []
        for rep in range(args.repeat):
            order = cases[rep % len(cases):] + cases[:rep % len(cases)]
            floor_s, floor_rss = run([sys.executable, "-c", FLOOR, str(data / "base.parquet"),
                                      str(work / "floor.parquet")], dict(os.environ))
            floors.append({"seconds": floor_s, "rss": floor_rss})
            for rev, b in order:
                r = one_run(sources[rev][0], b, data, work / "run")
                r["write_ratio"] = r["write_s"] / floor_s
                r["scan_ratio"] = r["scan_s"] / floor_s
                runs[f"{rev}|{b}"].append(r)
                print(f"rep {rep + 1} {rev} {b}: write {r['write_s']:.2f}s ({r['write_ratio']:.2f}x) "
                      f"{r['write_rss'] >> 20} MiB, scan {r['scan_s']:.2f}s {r['scan_rss'] >> 20} MiB", flush=True)
        result = {"rows": args.rows, "meta": meta, "revs": {r: s[1] for r, s in sources.items()},
                  "floors": floors, "runs": runs, "machine": machine(),
                  "versions": versions([]), "args": vars(args)}
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str))
        out.write_text(render(result))
        print(f"wrote {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def render(result: dict[str, Any]) -> str:
    med = statistics.median
    mib = 1 << 20
    table_bytes = result["meta"]["arrow_bytes"]["base"]
    lines = [f"N = {result['rows']:,} rows; table in Arrow {table_bytes / mib:.0f} MiB. "
             f"Floor process (read + write the Parquet file with pyarrow): median {med(f['seconds'] for f in result['floors']):.2f} s, "
             f"peak RSS {med(f['rss'] for f in result['floors']) / mib:.0f} MiB.", "",
             "| revision | write-buffer-size | write s (/ floor) | write peak above idle | scan --output s (/ floor) "
             "| scan peak above idle |", "|---|---|---:|---:|---:|---:|"]
    for key, rs in result["runs"].items():
        rev, buffer = key.split("|")
        w_above = med(r["write_rss"] - r["idle_rss"] for r in rs)
        s_above = med(r["scan_rss"] - r["idle_rss"] for r in rs)
        tables = (lambda b: f" ({b / table_bytes:.2f} tables)") if table_bytes else (lambda b: "")
        lines.append(f"| {rev} ({result['revs'][rev]}) | {buffer} | {med(r['write_s'] for r in rs):.2f} "
                     f"({med(r['write_ratio'] for r in rs):.2f}x) | {w_above / mib:.0f} MiB{tables(w_above)} | "
                     f"{med(r['scan_s'] for r in rs):.2f} ({med(r['scan_ratio'] for r in rs):.2f}x) | "
                     f"{s_above / mib:.0f} MiB{tables(s_above)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
