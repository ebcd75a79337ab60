"""The suite's data, generated once per N with a fixed seed (lakectl's .venv: numpy, pyarrow).

base: N rows, ``id`` a permutation of 0..N-1, ``dt`` one of 8 days (``id % 8``; ``days`` picks
another count, 1-9), 6 value
columns (INT, DOUBLE, ~20-char STRING, TIMESTAMP(6), BOOLEAN, DECIMAL(18,4)).
upserts: N/20 updates of existing keys (new values, same dt) and N/40 inserts of new ids
(N..N+N/40-1), shuffled. deletes: N/40 other existing keys, their full base rows plus
``op = '-D'``. Together N/10 change rows.
id range: ``id >= N/2 AND id < N/2 + N/100``, ~1% of the keys, in every partition.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DAYS = np.array([f"2024-01-0{d + 1}" for d in range(9)])
WORDS = np.array([f"customer-{i:011d}" for i in range(1000)])  # 20 characters
EPOCH = np.datetime64("2024-01-01T00:00:00", "us")


def rows(rng: np.random.Generator, ids: np.ndarray, days: int = 8) -> pa.Table:
    n = len(ids)
    return pa.table({
        "id": ids.astype(np.int64),
        "dt": pa.array(DAYS[ids % days]),
        "c_int": rng.integers(-1_000_000, 1_000_000, n, dtype=np.int32),
        "c_double": rng.random(n),
        "c_str": pa.array(WORDS[rng.integers(0, 1000, n)]),
        "c_ts": pa.array(EPOCH + rng.integers(0, 10**12, n).astype("timedelta64[us]")),
        "c_bool": rng.random(n) < 0.5,
        "c_dec": pa.array(rng.integers(-10**9, 10**9, n), pa.int64()).cast(pa.decimal128(19, 0))
        .cast(pa.decimal128(18, 4)),
    })


def generate(n: int, out: Path, seed: int = 7, days: int = 8) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("n") == n and meta.get("seed") == seed and meta.get("days", 8) == days:
            return meta
    rng = np.random.default_rng(seed)
    ids = rng.permutation(n).astype(np.int64)
    base = rows(rng, ids, days)
    n_upd, n_ins, n_del = n // 20, n // 40, n // 40
    chosen = rng.permutation(n)[: n_upd + n_del]  # distinct existing ids
    upd, dele = chosen[:n_upd], chosen[n_upd:]
    ins = n + np.arange(n_ins, dtype=np.int64)
    upserts = rows(rng, rng.permutation(np.concatenate([upd, ins])), days)
    position = np.empty(n, dtype=np.int64)
    position[ids] = np.arange(n)
    deletes = base.take(pa.array(position[dele]))
    deletes = deletes.append_column("op", pa.array(np.full(n_del, "-D")))
    for name, t in (("base", base), ("upserts", upserts), ("deletes", deletes)):
        # row groups of 128Ki rows: a reader may stream the input instead of loading it whole
        pq.write_table(t, out / f"{name}.parquet", compression="zstd", row_group_size=131072)
    lo, hi = n // 2, n // 2 + max(1, n // 100)
    deleted_in_range = int(((dele >= lo) & (dele < hi)).sum())
    meta = {
        "n": n, "seed": seed, "days": days, "range": [lo, hi],
        "rows": {"base": n, "upserts": len(upd) + n_ins, "updates": n_upd, "inserts": n_ins, "deletes": n_del},
        "expected": {"read_latest": n + n_ins - n_del, "read_range": (hi - lo) - deleted_in_range,
                     "read_snapshot1": n, "read_compacted": n + n_ins - n_del},
        "arrow_bytes": {"base": base.nbytes, "upserts": upserts.nbytes, "deletes": deletes.nbytes},
        "file_bytes": {k: (out / f"{k}.parquet").stat().st_size for k in ("base", "upserts", "deletes")},
    }
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta
