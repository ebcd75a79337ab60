"""Where lakectl's local engine spends its time: cProfile of the Python API's write of the base
and of the merged read of the latest snapshot (base + upserts + deletes), on the suite's data.

    python bench/profile_lakectl.py --rows 1000000 --out bench/results-profile.md [--rev HEAD]

Prints and writes the top functions by cumulative time and by own time for each. cProfile adds
overhead to every Python call (C++ work inside pyarrow is one call), so the wall times here are
above the suite's; read the shares, not the seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "runners"))


def top(profile: cProfile.Profile, sort: str, count: int, prefixes: list[str]) -> str:
    buf = io.StringIO()
    stats = pstats.Stats(profile, stream=buf)
    stats.sort_stats(sort).print_stats(count)
    text = buf.getvalue()
    # keep the table, drop pstats' preamble (file list, ordering line)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    out = []
    for line in lines[start:]:
        if line.strip():
            for p in prefixes:
                line = line.replace(p, "")
            out.append(line)
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--out", default="bench/results-profile.md")
    ap.add_argument("--rev", default=None, help="profile core/ as of this git revision (a snapshot)")
    ap.add_argument("--threads", type=int, default=1,
                    help="LAKECTL_LOCAL_THREADS while profiling (cProfile sees only the calling thread, and the "
                         "local engine runs its groups on a thread pool)")
    args = ap.parse_args()
    os.environ["LAKECTL_LOCAL_THREADS"] = str(args.threads)

    work = Path(tempfile.mkdtemp(prefix="lakectl-profile-"))
    try:
        source = ROOT
        sha = subprocess.run(["git", "rev-parse", "--short", args.rev or "HEAD"], cwd=ROOT, capture_output=True,
                             text=True).stdout.strip()
        if args.rev:
            from suite import snapshot_source

            source, sha = snapshot_source(args.rev, work / "src")
        sys.path.insert(0, str(source))
        from common import BUCKETS, KEY, PARTITION, ROW_KIND, SCHEMA_SQL, load_inputs
        from datagen import generate

        from core.engines import EngineSettings
        from core.ops.create import create
        from core.ops.scan import scan
        from core.ops.write import write
        from core.table import Table

        generate(args.rows, work / "data")
        base, upserts, deletes = load_inputs(str(work / "data"))
        local = EngineSettings(engine="local")
        t = Table.locate("bench.t", warehouse=str(work / "wh"))
        create(t, SCHEMA_SQL, primary_keys=KEY, partition_keys=[PARTITION], options={"bucket": str(BUCKETS)})

        sections = []
        prof = cProfile.Profile()
        start = time.perf_counter()
        prof.runcall(write, t, base, engine_settings=local)
        write_s = time.perf_counter() - start
        sections.append(("write of the base", write_s, prof))

        write(t, upserts, engine_settings=local)
        write(t, deletes, row_kind_column=ROW_KIND, engine_settings=local)
        prof = cProfile.Profile()
        start = time.perf_counter()
        rows = prof.runcall(scan, t, engine_settings=local).num_rows
        read_s = time.perf_counter() - start
        sections.append((f"merged read of the latest snapshot ({rows:,} rows from 3 snapshots)", read_s, prof))

        lines = [f"# Profile of lakectl's local engine, N = {args.rows:,} (lakectl {sha})", "",
                 "`python bench/profile_lakectl.py`: cProfile around `core.ops.write.write` of the base (Arrow "
                 "table in memory, `EngineSettings(engine='local')`) and around `core.ops.scan.scan` of the latest "
                 "snapshot after the upsert and delete commits. Same data, table and options as the suite, "
                 f"with LAKECTL_LOCAL_THREADS={args.threads} (cProfile sees only the thread that calls it). "
                 "cProfile slows Python-level calls; the pyarrow C++ work inside one call is not slowed.", ""]
        prefixes = [str(source) + "/", sysconfig.get_paths()["purelib"] + "/", str(ROOT) + "/",
                    os.path.dirname(os.__file__) + "/"]
        for title, secs, p in sections:
            lines += [f"## {title}: {secs:.2f} s under the profiler", "",
                      f"Top {args.top} by cumulative time:", "", "```", top(p, "cumulative", args.top, prefixes), "```", "",
                      f"Top {args.top} by own time (tottime):", "", "```", top(p, "tottime", args.top, prefixes), "```", ""]
        text = "\n".join(lines)
        print(text)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
