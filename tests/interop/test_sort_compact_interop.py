"""Java Paimon 1.0 and pypaimon 2.1 read an append table after lakectl's sort compaction
(``compact --order-by``) as lakectl does and as written: an unaware-bucket table by each
strategy, and a fixed-bucket one (sorted within its buckets)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from java_oracle import java_read, lakectl_rows
from oracle import official_read

from core.ops.compact import compact
from core.ops.create import create
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java, pytest.mark.slow]


@pytest.mark.parametrize("strategy,options", [("order", {"bucket": "-1"}), ("zorder", {"bucket": "-1"}),
                                              ("hilbert", {"bucket": "2", "bucket-key": "id"})])
def test_java_and_pypaimon_read_a_sort_compacted_table(tmp_path: Path, strategy: str, options: dict) -> None:
    table = Table.locate("db.e", warehouse=str(tmp_path / "wh"))
    create(table, "id BIGINT, x INT, y DOUBLE, s STRING", options=options)
    rng = np.random.default_rng(5)
    batches = []
    for w in range(3):
        n = 300
        batch = pa.table({"id": pa.array(np.arange(w * n, (w + 1) * n), pa.int64()),
                          "x": pa.array(rng.integers(-100, 100, n), pa.int32()), "y": rng.random(n),
                          "s": [f"s{v}" for v in rng.integers(0, 50, n)]})
        table.write(batch)
        batches.append(batch)
    result = compact(table, order=(strategy, ("x", "y")))
    assert result.snapshot_id is not None
    expected = lakectl_rows(pa.concat_tables(batches))
    assert lakectl_rows(table.scan()) == expected
    rows, meta = java_read(table.path)
    assert rows == expected and meta["latest_snapshot"] == result.snapshot_id
    official, _ = official_read(table.path, tmp_path)
    assert lakectl_rows(official.select(["id", "x", "y", "s"])) == expected
