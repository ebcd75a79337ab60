"""Peak RSS of merging one bucket's two sorted runs, whole-bucket vs streamed in batches.

    python bench/stream_merge_memory.py --rows 120000,600000

Each case runs in its own subprocess (peak RSS from ``os.wait4``). Runs are in-memory key-sorted
tables generated batch by batch in the child, so only the merge holds rows: "whole" concatenates
both runs and merges once (lakectl before the streaming merge), "stream" feeds
``stream_merge.merge_runs`` and drops each merged chunk (as a rolling writer would).
This measures the merge kernel only, not file reading or a scan's materialised result.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import sys, pyarrow as pa, numpy as np
from core.kernels import stream_merge
from core.kernels.merge import MergeEngine
from core.kernels.records import SEQUENCE_NUMBER, VALUE_KIND
mode, rows = sys.argv[1], int(sys.argv[2])
engine = MergeEngine("deduplicate", ("k",))
def run(r, start, stop):
    k = np.arange(start, stop, dtype=np.int64) * 2 + r  # two runs overlap in key range
    return pa.table({"k": k, "v": np.full(len(k), "x" * 40), SEQUENCE_NUMBER: k + r * 10**9,
                     VALUE_KIND: np.zeros(len(k), np.int8)})
def stream(r):
    for s in range(0, rows // 2, 65536):
        yield run(r, s, min(rows // 2, s + 65536))
if mode == "whole":
    out = engine.merge(engine.sorted(pa.concat_tables([t for r in (0, 1) for t in stream(r)])))
    n = out.num_rows
else:
    n = sum(c.num_rows for c in stream_merge.merge_runs(engine, [stream(0), stream(1)]))
assert n == rows, n
"""


def peak_mib(mode: str, rows: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(rows)], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{mode} {rows} failed")
    return usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="120000,600000")
    args = ap.parse_args()
    print("| rows | whole MiB | stream MiB |\n|---:|---:|---:|")
    for rows in [int(r) for r in args.rows.split(",")]:
        print(f"| {rows} | {peak_mib('whole', rows):.0f} | {peak_mib('stream', rows):.0f} |")


if __name__ == "__main__":
    main()
