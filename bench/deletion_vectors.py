"""The cost of reading a deletion-vector table against the same table after full compaction.

    python bench/deletion_vectors.py --rows 1000000 5000000 --repeat 3 > bench/results-dv.md

Per size: a primary-key table (bucket=4, deletion-vectors.enabled) gets N rows, then an
update of 10% of the keys and a delete of 1% (each followed by lakectl's lookup compaction,
which leaves the old versions marked in deletion vectors). The full scan of that table is
timed, then ``compact --full`` (vectors applied and dropped) and the scan again; the floor is
pyarrow reading the same Parquet files without any table logic. Figures are medians of the
repetitions, as ratios to the floor measured in the same repetition.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.ops.create import create  # noqa: E402
from core.table import Table  # noqa: E402


def floor(table: Table) -> float:
    """pyarrow reading every live data file (no merge, no vectors)."""
    start = time.perf_counter()
    for f in table.files():
        part = "/".join(f"{k}={v}" for k, v in f.partition.items())
        pq.read_table(os.path.join(table.path, part, f"bucket-{f.bucket}", f.file_name))
    return time.perf_counter() - start


def timed_scan(table: Table) -> tuple[float, int]:
    start = time.perf_counter()
    rows = table.scan().num_rows
    return time.perf_counter() - start, rows


def one(rows: int, workdir: str) -> dict[str, float]:
    table = Table.locate("db.dv", warehouse=workdir)
    create(table, "id BIGINT, v STRING, n DOUBLE", primary_keys=["id"],
           options={"bucket": "4", "deletion-vectors.enabled": "true"})
    rng = np.random.default_rng(7)
    ids = np.arange(rows, dtype=np.int64)
    table.write(pa.table({"id": ids, "v": pa.array([f"v{i % 1000}" for i in range(rows)]), "n": rng.random(rows)}))
    upd = rng.choice(rows, rows // 10, replace=False)
    table.write(pa.table({"id": upd, "v": pa.array(["u"] * len(upd)), "n": rng.random(len(upd))}))
    dele = rng.choice(rows, rows // 100, replace=False)
    table.write(pa.table({"id": dele, "v": pa.array([None] * len(dele), pa.string()), "n": np.zeros(len(dele)),
                          "op": ["-D"] * len(dele)}), row_kind_column="op")
    deleted = sum(f.deleted_rows for f in table.files())
    dv_floor = floor(table)
    dv_time, dv_rows = timed_scan(table)
    table.compact(full=True)
    full_floor = floor(table)
    full_time, full_rows = timed_scan(table)
    assert dv_rows == full_rows
    return {"rows": dv_rows, "deleted": deleted, "dv_scan": dv_time, "dv_floor": dv_floor,
            "full_scan": full_time, "full_floor": full_floor}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| rows | rows marked deleted | scan with vectors (s) | ratio to floor | scan after full compaction (s) "
          "| ratio to floor | vectors / compacted |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.rows:
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="lakectl-bench-dv-") as wd:
                runs.append(one(n, wd))
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"| {n:,} | {int(med['deleted']):,} | {med['dv_scan']:.2f} | "
              f"{statistics.median(r['dv_scan'] / r['dv_floor'] for r in runs):.2f} | {med['full_scan']:.2f} | "
              f"{statistics.median(r['full_scan'] / r['full_floor'] for r in runs):.2f} | "
              f"{statistics.median(r['dv_scan'] / r['full_scan'] for r in runs):.2f} |", flush=True)


if __name__ == "__main__":
    main()
