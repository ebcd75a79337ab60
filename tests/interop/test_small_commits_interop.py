"""Data file stats of lakectl's small commits (taken from the Parquet footer where exact, else
computed) as Java Paimon 1.0 prunes by them: Java's filtered read of a file's own min or max
value of a column must still return every row holding it (a wrong bound drops the file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from java_oracle import java_read, normal

from core.commit import base_entries
from core.engines import EngineSettings
from core.fileio import join
from core.ops.create import create
from core.ops.write import write
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

LOCAL = EngineSettings(engine="local")
SCHEMA = "id BIGINT, i INT, s STRING, d DOUBLE, ts TIMESTAMP(6), dec DECIMAL(18, 4)"


def batch(ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "i": pa.array(rng.integers(-10**6, 10**6, n).astype(np.int32), mask=rng.random(n) < 0.1),
        "s": pa.array([f"s{x:05d}" for x in rng.integers(0, 10**5, n)]),
        "d": pa.array(np.abs(rng.normal(size=n)) * np.where(rng.random(n) < 0.1, 0.0, 1.0)),
        "ts": pa.array(rng.integers(0, 10**15, n), pa.int64()).cast(pa.timestamp("us")),
        "dec": pa.array(rng.integers(-10**9, 10**9, n), pa.int64()).cast(pa.decimal128(19, 0)).cast(
            pa.decimal128(18, 4)),
    })


def file_bounds(t: Table) -> list[pa.Table]:
    """Each live data file's rows, as pyarrow reads them."""
    entries = base_entries(t.manifests(), t.latest_snapshot(), t.snapshots)
    return [pq.read_table(join(t.schema.bucket_dir(t.path, e.partition, e.bucket), e.file.file_name))
            for e in entries]


@pytest.mark.parametrize("primary_key", [False, True])
def test_java_filters_on_each_files_own_bounds_find_every_row(tmp_path: Path, primary_key: bool) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    layout = {"primary_keys": ["id"], "options": {"bucket": "2"}} if primary_key else \
        {"options": {"bucket": "2", "bucket-key": "id"}}
    create(t, SCHEMA, **layout)
    ids = np.random.default_rng(3).permutation(900)
    for k, part in enumerate(np.array_split(ids, 3)):  # three small commits
        write(t, batch(part, k), engine_settings=LOCAL)
    arrow_types = {f.name: f.type for f in t.scan().schema}
    everything, meta = java_read(t.path)
    assert len(everything) == 900
    files = file_bounds(t)
    # Value columns prune files only in append tables (a key's older version could return);
    # the key column prunes both.
    columns = ["id"] if primary_key else ["id", "i", "s", "d", "ts", "dec"]
    for column in columns:
        index = meta["columns"].index(column)
        # one file's minimum and another file's maximum: the bounds a wrong stat would miss
        lo = pc.min_max(files[0].column(column))["min"].as_py()
        hi = pc.min_max(files[-1].column(column))["max"].as_py()
        for value in (lo, hi):
            wanted = normal(value, arrow_types[column])
            rows, _ = java_read(t.path, equal=(column, wanted))
            assert rows == [r for r in everything if r[index] == wanted], (column, value)
            assert rows, (column, value)
