"""``write --input 's3://bucket/prefix/*.parquet'`` and an S3 directory: the files a glob or
prefix holds on S3 (through fsspec), hidden and marker files skipped."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from core.table import Table
from lakectl.app import app

pytestmark = pytest.mark.s3


def _put_parquet(fs, path: str, ids: list[int]) -> None:
    buffer = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [str(i) for i in ids]}), buffer)
    fs.pipe(path, buffer.getvalue())


def test_glob_and_prefix_on_s3(s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOME", str(tmp_path))
    base = s3.warehouse() + "/export"
    fs = s3.fs()
    _put_parquet(fs, f"{base}/a.parquet", [1, 2])
    _put_parquet(fs, f"{base}/sub/b.parquet", [3])
    _put_parquet(fs, f"{base}/_temporary/c.parquet", [99])
    fs.pipe(f"{base}/_SUCCESS", b"")
    wh = str(tmp_path / "wh")
    runner = CliRunner()
    for name in ("db.g", "db.d"):
        assert runner.invoke(app, ["-q", "-w", wh, "create", name, "--schema", "id BIGINT, v STRING"]).exit_code == 0
    result = runner.invoke(app, ["-q", "-w", wh, "write", "db.g", "--input", f"{base}/*.parquet"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["-q", "-w", wh, "write", "db.d", "--input", base])
    assert result.exit_code == 0, result.output
    assert sorted(Table.open("db.g", warehouse=wh).scan().column("id").to_pylist()) == [1, 2]
    assert sorted(Table.open("db.d", warehouse=wh).scan().column("id").to_pylist()) == [1, 2, 3]
    nothing = runner.invoke(app, ["-w", wh, "write", "db.g", "--input", f"{base}/none/*.parquet"])
    assert nothing.exit_code == 5 and "no input files match glob" in nothing.output
