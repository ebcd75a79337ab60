"""migrate with the source on S3 (a real SeaweedFS): into a table in the same bucket, copied
(the store's CopyObject) or moved in place (copy, then delete), and into a local table
(streamed); each reads as pyarrow reads the source."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import core.fileio as fileio
from lakectl.app import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_cli_migrate import normal, rows  # noqa: E402

pytestmark = pytest.mark.s3

runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for var in list(os.environ):
        if var.startswith(("LAKECTL_", "AWS_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fileio, "_DEFAULT_OPTIONS", {})


def lakectl(env: dict[str, str], *args: Any) -> Any:
    result = runner.invoke(app, [*map(str, args), "--format", "json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


def _source(s3: Any, prefix: str) -> tuple[str, list[dict[str, Any]]]:
    """Two Hive partitions of Parquet files under ``prefix`` in the bucket, and their rows
    with the partition column as a string."""
    fs = s3.fs()
    expected = []
    for n, day in enumerate(("2024-01-01", "2024-01-02")):
        table = rows(n)
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        fs.pipe(f"{s3.bucket}/{prefix}/dt={day}/part-0.parquet", buffer.getvalue())
        expected += [{**r, "dt": day} for r in table.to_pylist()]
    return f"s3://{s3.bucket}/{prefix}", normal(expected)


@pytest.mark.parametrize("in_place", [False, True], ids=["copy", "in-place"])
def test_from_s3_into_a_table_in_the_same_bucket(s3: Any, in_place: bool) -> None:
    env = s3.env()
    wh = s3.warehouse()
    prefix = wh.split("/", 3)[3] + "-src"
    source, expected = _source(s3, prefix)
    out = lakectl(env, "-w", wh, "migrate", source, "db.t", *(["--in-place"] if in_place else []))
    assert (out["files_added"], out["records_added"], out["mode"]) == (2, 6, "move" if in_place else "copy")
    assert normal(lakectl(env, "-w", wh, "scan", "db.t")) == expected
    # data files left (SeaweedFS, a filer, may keep the emptied directory itself as an entry)
    left = [p for p in s3.fs().find(f"{s3.bucket}/{prefix}") if p.endswith(".parquet")]
    assert len(left) == (0 if in_place else 2)
    assert lakectl(env, "-w", wh, "check", "db.t")["ok"] is True


def test_from_s3_into_a_local_table(s3: Any, tmp_path: Path) -> None:
    env = s3.env()
    source, expected = _source(s3, s3.warehouse().split("/", 3)[3] + "-src")
    lakectl(env, "-w", tmp_path / "wh", "migrate", source, "db.t", "--in-place")
    assert normal(lakectl(env, "-w", tmp_path / "wh", "scan", "db.t")) == expected
