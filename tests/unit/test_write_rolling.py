"""The rolling writer compaction feeds chunk by chunk cuts the same files as the one-shot writer."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.kernels import rolling_writer, write
from core.ops.create import create
from core.table import Table


def _rows(n: int) -> pa.Table:
    # already in file order: keys rising, each once, as the merge emits them
    return pa.table({"id": pa.array(range(n), pa.int64()), "v": [f"value-{i:06d}" for i in range(n)],
                     "_SEQUENCE_NUMBER": pa.array(range(n), pa.int64()),
                     "_VALUE_KIND": pa.array([0] * n, pa.int8())})


@pytest.mark.parametrize("chunk_rows", [1, 7, 500, 5000])
def test_streamed_writer_cuts_the_same_files_as_write_files(tmp_path: Path, monkeypatch, chunk_rows: int) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1", "target-file-size": "8 kb"})
    monkeypatch.setattr(write, "SIZE_SAMPLE_ROWS", 300)  # small sample so sizing happens mid-stream
    rows = _rows(3000)
    one_dir, streamed_dir = tmp_path / "one", tmp_path / "streamed"
    one_dir.mkdir(), streamed_dir.mkdir()
    expected = write.write_files(rows, t.schema, str(one_dir), t.file_io, level=5, measure_size=True)
    chunks = (rows.slice(s, chunk_rows) for s in range(0, rows.num_rows, chunk_rows))
    got = rolling_writer.write_files_streamed(chunks, t.schema, str(streamed_dir), t.file_io, level=5, file_source=1)
    assert len(expected) > 3  # the target really rolls files
    assert [m.row_count for m in got] == [m.row_count for m in expected]
    for e, g in zip(expected, got):
        assert (pq.read_table(streamed_dir / g.file_name).to_pylist()
                == pq.read_table(one_dir / e.file_name).to_pylist())
        assert (g.min_key, g.max_key, g.level) == (e.min_key, e.max_key, 5)
