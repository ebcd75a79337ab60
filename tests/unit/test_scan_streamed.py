"""``scan --output`` receives a split part by part as the merge (or the file reader) produces it,
never the whole split at once, and the parts concatenate to exactly what the whole-split read
returns (``read_split``, the independent expectation, and a dict model of the upserts)."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.engines.local import LocalEngine
from core.kernels import read as read_kernel
from core.kernels import stream_merge
from core.ops import scan as scan_op
from core.ops.create import create
from core.ops.write import write
from core.table import Table

N = 30_000


def _two_runs(tmp_path: Path, bucket: str = "1", **options: str) -> tuple[Table, dict[int, str]]:
    """One bucket (or a few) holding two sorted runs: a base and an upsert, and the model."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": bucket, **options})
    model = {i: f"base-{i}" for i in range(N)}
    write(t, pa.table({"id": pa.array(range(N), pa.int64()), "v": [model[i] for i in range(N)]}))
    upserts = list(range(0, N, 7)) + list(range(N, N + 500))
    model.update({i: f"new-{i}" for i in upserts})
    write(t, pa.table({"id": pa.array(upserts, pa.int64()), "v": [f"new-{i}" for i in upserts]}))
    return t, model


@pytest.mark.parametrize("threads", ["1", "2"])
def test_output_gets_a_merged_split_in_parts_in_key_order(tmp_path: Path, monkeypatch, threads: str) -> None:
    monkeypatch.setenv("LAKECTL_LOCAL_THREADS", threads)
    monkeypatch.setattr(stream_merge, "BATCH_ROWS", 4096)
    t, model = _two_runs(tmp_path)
    received: list[int] = []
    real = scan_op.write_output_parts

    def recording(parts, schema, path, json_value=None):
        def seen():
            for part in parts:
                received.append(part.num_rows)
                yield part
        return real(seen(), schema, path, json_value)

    monkeypatch.setattr(scan_op, "write_output_parts", recording)
    out = tmp_path / "out.parquet"
    result = scan_op.scan_to_output(t, str(out))
    assert result.rows == len(model)
    assert len(received) > 3 and max(received) < len(model)  # never the whole split at once
    rows = pq.read_table(out).to_pylist()
    assert rows == [{"id": k, "v": model[k]} for k in sorted(model)]


@pytest.mark.parametrize("bucket", ["1", "3"])
def test_parts_concatenate_to_the_whole_split_read(tmp_path: Path, monkeypatch, bucket: str) -> None:
    """Merged splits (two runs), sorted runs after a full compaction, and append splits."""
    monkeypatch.setattr(stream_merge, "BATCH_ROWS", 2048)
    monkeypatch.setenv("LAKECTL_LOCAL_THREADS", "2")
    t, _ = _two_runs(tmp_path, bucket)
    plans = [scan_op.prepare(t).plan]
    t.compact(full=True)
    plans.append(scan_op.prepare(Table.locate("db.t", warehouse=str(tmp_path / "wh"))).plan)
    a = Table.locate("db.a", warehouse=str(tmp_path / "wh"))
    create(a, "id BIGINT, v STRING", options={"bucket": bucket, "bucket-key": "id"})
    for start in (0, N):
        write(a, pa.table({"id": pa.array(range(start, start + N), pa.int64()), "v": ["x"] * N}))
    plans.append(scan_op.prepare(a).plan)
    for plan, table in zip(plans, (t, t, a)):
        whole = [read_kernel.read_split(s, plan.read_schema, plan.schemas, table.file_io) for s in plan.splits]
        parts = list(LocalEngine().read_parts(plan.splits, plan.read_schema, plan.schemas, table.file_io))
        assert pa.concat_tables(parts).to_pylist() == pa.concat_tables(whole).to_pylist()
        assert len(parts) >= len(plan.splits)


def test_a_limit_stops_the_readers(tmp_path: Path, monkeypatch) -> None:
    """Closing the parts early (``--limit``) returns: workers waiting on a full queue give up."""
    monkeypatch.setattr(stream_merge, "BATCH_ROWS", 1024)
    monkeypatch.setenv("LAKECTL_LOCAL_THREADS", "2")
    t, model = _two_runs(tmp_path, "4")
    rows = scan_op.scan(t, limit=10)
    assert rows.num_rows == 10
    assert all(model[r["id"]] == r["v"] for r in rows.to_pylist())
