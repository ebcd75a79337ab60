"""Small commits (issue 27): the suite's upsert and delete, lakectl's API against pypaimon-rust.

Per N, each repetition builds the suite's table (primary key (id, dt), 8 dt partitions,
bucket=4) in a fresh process of each side, writes the base untimed, then times the upsert
(N/20 updates + N/40 inserts) and the delete (N/40 keys, ``op='-D'``), CPU
(``time.process_time``, every thread) and wall. The two sides alternate which goes first.
pypaimon-rust writes as ``runners/pypaimon_rust_runner.py`` does, in its own virtualenv.

    python bench/small_commits.py [--sizes 200000,1000000] [--repeat 5] [--out FILE.json]

``--stages`` instead runs lakectl's upsert a few times in this process with its write
stages wrapped in ``time.process_time`` (``StageClock``), and prints CPU seconds per stage.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUST_PYTHON = os.environ.get("LAKECTL_BENCH_RUST_PYTHON", "/work/main/.venv-bench-rust/bin/python")
STEPS = ("upsert", "delete")


def timed(fn: Callable[[], Any]) -> dict[str, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    fn()
    return {"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - wall0}


def child_lakectl(data: Path, work: Path) -> dict:
    """In a child process: the suite's table through lakectl's API, base untimed."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE / "runners"))
    from common import BUCKETS, KEY, PARTITION, ROW_KIND, SCHEMA_SQL, load_inputs

    from core.engines import EngineSettings
    from core.ops.create import create
    from core.ops.write import write
    from core.table import Table

    local = EngineSettings(engine="local")
    base, upserts, deletes = load_inputs(str(data))
    t = Table.locate("bench.t", warehouse=str(work / "wh"))
    create(t, SCHEMA_SQL, primary_keys=KEY, partition_keys=[PARTITION], options={"bucket": str(BUCKETS)})
    write(t, base, engine_settings=local)
    return {"upsert": timed(lambda: write(t, upserts, engine_settings=local)),
            "delete": timed(lambda: write(t, deletes, row_kind_column=ROW_KIND, engine_settings=local))}


def child_rust(data: Path, work: Path) -> dict:
    """In a child process of the rust virtualenv: the same through pypaimon-rust."""
    sys.path.insert(0, str(HERE / "runners"))
    from common import COLUMNS, ROW_KIND, load_inputs
    from pypaimon_rust.datafusion import PaimonCatalog, SQLContext
    from pypaimon_rust_runner import DATABASE, batch_write, ddl, with_kind

    base, upserts, deletes = load_inputs(str(data))
    base, upserts = with_kind(base, "+I"), with_kind(upserts, "+I")
    deletes = deletes.select(COLUMNS + [ROW_KIND])
    warehouse = {"warehouse": str(work / "wh")}
    sql = SQLContext()
    sql.register_catalog("paimon", warehouse)
    catalog = PaimonCatalog(warehouse)
    sql.sql(f"CREATE SCHEMA paimon.{DATABASE}")
    sql.sql(ddl())

    def write(rows: Any) -> None:
        batch_write(catalog, rows)

    write(base)
    return {"upsert": timed(lambda: write(upserts)), "delete": timed(lambda: write(deletes))}


def run_child(side: str, data: Path) -> dict:
    python = sys.executable if side == "lakectl" else RUST_PYTHON
    with tempfile.TemporaryDirectory(prefix="small-commits-") as work:
        out = subprocess.run([python, __file__, "--child", side, "--data", str(data), "--work", work],
                             check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(n: int, repeat: int, data_root: Path) -> dict:
    sys.path.insert(0, str(HERE))
    from datagen import generate

    data = data_root / str(n)
    generate(n, data)
    runs: dict[str, list[dict]] = {"lakectl": [], "rust": []}
    load_before = os.getloadavg()
    for rep in range(repeat):
        order = ("lakectl", "rust") if rep % 2 == 0 else ("rust", "lakectl")
        for side in order:
            runs[side].append(run_child(side, data))
    load_after = os.getloadavg()
    summary = {}
    for step in STEPS:
        row = {}
        for side, results in runs.items():
            for k in ("cpu", "wall"):
                row[f"{side}_{k}"] = statistics.median(r[step][k] for r in results)
        for k in ("cpu", "wall"):
            # the ratio within each repetition, then the median: the load drifts between repetitions
            row[f"ratio_{k}"] = statistics.median(a[step][k] / b[step][k]
                                                  for a, b in zip(runs["lakectl"], runs["rust"]))
        summary[step] = row
    return {"n": n, "repeat": repeat, "load_before": load_before, "load_after": load_after,
            "summary": summary, "runs": runs}


def render(result: dict) -> str:
    la, lb = result["load_before"], result["load_after"]
    lines = [f"N = {result['n']:,}, {result['repeat']} repetitions; load average before "
             f"{la[0]:.1f}, {la[1]:.1f}, {la[2]:.1f}, after {lb[0]:.1f}, {lb[1]:.1f}, {lb[2]:.1f}", "",
             "| step | lakectl CPU s | rust CPU s | CPU ratio | lakectl wall s | rust wall s | wall ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for step, r in result["summary"].items():
        lines.append(f"| {step} | {r['lakectl_cpu']:.3f} | {r['rust_cpu']:.3f} | {r['ratio_cpu']:.2f}x | "
                     f"{r['lakectl_wall']:.3f} | {r['rust_wall']:.3f} | {r['ratio_wall']:.2f}x |")
    return "\n".join(lines)


# (module, attribute) of the write's stages, each timed inclusively (nested ones overlap)
STAGES = [
    ("core.ops.write", "plan_job"), ("core.rows", "prepare_rows"), ("core.write_buffer", "route"),
    ("core.engines.local", "_key_order"), ("core.kernels.write", "write_bucket"),
    ("core.kernels.merge", "MergeEngine.sorted"), ("core.kernels.merge", "MergeEngine.merge"),
    ("core.kernels.write", "write_files"), ("core.kernels.write", "write_file"),
    ("core.kernels.write", "file_table"), ("core.stats", "compute"), ("core.kernels.write", "encode_with_footer"), ("core.stats", "footer_stats"),
    ("core.binary_row", "encode"), ("core.fileio", "FileIO.write_bytes"), ("core.commit", "FileStoreCommit.commit"),
    ("core.manifest", "ManifestIO.write_manifest"), ("core.manifest", "ManifestIO.write_manifest_list"),
    ("core.ops.write", "after_commit"), ("core.ops.compact", "compact_after_commit"),
    ("core.ops.expire", "expire_snapshots"), ("core.snapshot", "SnapshotManager.try_publish"),
]


def _clock_stages(totals: dict[str, float]) -> None:
    """Wrap each of STAGES so that its CPU seconds add up in ``totals`` (single-threaded runs:
    ``process_time`` counts every thread)."""
    import functools
    import importlib

    for module_name, attr in STAGES:
        owner = importlib.import_module(module_name)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        fn = getattr(owner, name, None)
        if fn is None:
            continue

        def wrapped(*a: Any, __fn: Callable[..., Any] = fn, __key: str = f"{module_name}.{attr}", **k: Any) -> Any:
            t0 = time.process_time()
            try:
                return __fn(*a, **k)
            finally:
                totals[__key] = totals.get(__key, 0.0) + time.process_time() - t0
        setattr(owner, name, functools.wraps(fn)(wrapped))


def stages(n: int, data_root: Path, repeat: int) -> None:
    """lakectl's upsert and delete in this process on one thread, CPU per write stage
    (summed over the upsert and the delete), median over ``repeat`` fresh tables."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    from datagen import generate

    os.environ["LAKECTL_LOCAL_THREADS"] = "1"
    data = data_root / str(n)
    generate(n, data)
    clock: dict[str, float] = {}
    _clock_stages(clock)
    totals: dict[str, list[float]] = {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="small-commits-") as work:
            sys.path.insert(0, str(HERE / "runners"))
            from common import BUCKETS, KEY, PARTITION, ROW_KIND, SCHEMA_SQL, load_inputs
            from core.engines import EngineSettings
            from core.ops.create import create
            from core.ops.write import write
            from core.table import Table

            local = EngineSettings(engine="local")
            base, upserts, deletes = load_inputs(str(data))
            t = Table.locate("bench.t", warehouse=str(Path(work) / "wh"))
            create(t, SCHEMA_SQL, primary_keys=KEY, partition_keys=[PARTITION], options={"bucket": str(BUCKETS)})
            write(t, base, engine_settings=local)
            clock.clear()
            up = timed(lambda: write(t, upserts, engine_settings=local))
            de = timed(lambda: write(t, deletes, row_kind_column=ROW_KIND, engine_settings=local))
        totals.setdefault("(upsert total)", []).append(up["cpu"])
        totals.setdefault("(delete total)", []).append(de["cpu"])
        for name, seconds in clock.items():
            totals.setdefault(name, []).append(seconds)
    print(f"N = {n:,}: CPU s, upsert + delete, one thread, median of {repeat}")
    for name, values in sorted(totals.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  {name:50s} {statistics.median(values):.4f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="200000,1000000")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--data-root", default=str(Path(tempfile.gettempdir()) / "lakectl-bench-data"))
    p.add_argument("--out")
    p.add_argument("--stages", action="store_true")
    p.add_argument("--child", choices=("lakectl", "rust"))
    p.add_argument("--data")
    p.add_argument("--work")
    a = p.parse_args()
    if a.child:
        fn = child_lakectl if a.child == "lakectl" else child_rust
        print(json.dumps(fn(Path(a.data), Path(a.work))))
        return
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.stages:
        for n in sizes:
            stages(n, Path(a.data_root), a.repeat)
        return
    results = [measure(n, a.repeat, Path(a.data_root)) for n in sizes]
    for r in results:
        print(render(r) + "\n")
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
