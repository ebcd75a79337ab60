"""The Spark engine on an s3:// table: pip's pyspark has no s3a, so the Python tasks do every
read and write through lakectl's FileIO, which pickles to the executors with its S3 settings.
Write, scan and compact on Spark (local[2]) through the Python API and through the CLI with
the settings from LAKECTL_S3_* only; the local engine and the Spark engine see the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import core.fileio as fileio
from core.engines import EngineSettings
from core.ops.create import create
from core.table import Table
from lakectl.app import app

pytestmark = [pytest.mark.s3, pytest.mark.spark, pytest.mark.slow]

SPARK = EngineSettings(engine="spark", master="local[2]")
LOCAL = EngineSettings(engine="local")


@pytest.fixture(scope="module")
def spark():
    from core.engines.spark import SparkEngine

    engine = SparkEngine(master="local[2]")
    yield engine
    engine.session.stop()


def _rows(data: pa.Table) -> list[tuple]:
    return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))))


def test_spark_writes_scans_and_compacts_an_s3_table(s3, spark) -> None:
    t = Table.locate("db.t", warehouse=s3.warehouse(), storage_options=s3.storage_options())
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    first = pa.table({"id": pa.array(range(30), pa.int64()), "v": [f"v{i}" for i in range(30)],
                      "dt": ["ab"[i % 2] for i in range(30)]})
    second = pa.table({"id": pa.array(range(20, 40), pa.int64()), "v": [f"u{i}" for i in range(20, 40)],
                       "dt": ["ab"[i % 2] for i in range(20, 40)]})
    assert t.write(first, engine_settings=SPARK).engine == "spark"
    assert t.write(second, engine_settings=SPARK).snapshot_id == 2
    model = {i: (i, f"v{i}", "ab"[i % 2]) for i in range(30)}
    model.update({i: (i, f"u{i}", "ab"[i % 2]) for i in range(20, 40)})
    assert _rows(t.scan(engine_settings=SPARK)) == sorted(model.values())
    assert _rows(t.scan(engine_settings=LOCAL)) == sorted(model.values())

    result = t.compact(full=True, engine_settings=SPARK)
    assert result.snapshot_id == 3 and result.files_before == 8 and result.files_after == 4
    assert all(f.level > 0 for f in t.files())
    assert _rows(t.scan(engine_settings=SPARK)) == sorted(model.values())
    assert _rows(t.scan(snapshot_id=1, engine_settings=SPARK)) == sorted((i, f"v{i}", "ab"[i % 2]) for i in range(30))
    fs = s3.fs()
    data_files = [p for p in fs.find(t.path.split("://", 1)[1]) if "/data-" in p]
    assert len(data_files) == 8 + 4  # everything the executors wrote is on S3


def test_spark_through_the_cli_with_s3_settings_from_the_environment(s3, spark, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI configures the S3 defaults in the driver only; the executors get them from the
    pickled FileIO."""
    monkeypatch.setattr(fileio, "_DEFAULT_OPTIONS", {})
    monkeypatch.chdir(tmp_path)
    warehouse = s3.warehouse()
    runner = CliRunner()

    def lakectl(*args: str) -> str:
        result = runner.invoke(app, ["--warehouse", warehouse, "--engine", "spark", "--master", "local[2]",
                                     "--format", "json", *args], env=s3.env(), catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        assert s3.secret_key not in result.stdout + result.stderr
        return result.stdout

    lakectl("create", "db.c", "-s", "id BIGINT, v STRING", "--primary-key", "id", "-o", "bucket=2")
    for n in range(2):
        path = tmp_path / f"in{n}.jsonl"
        path.write_text("".join(json.dumps({"id": i, "v": f"{n}-{i}"}) + "\n" for i in range(n * 5, n * 5 + 10)))
        assert json.loads(lakectl("write", "db.c", "-i", str(path)))["engine"] == "spark"
    assert json.loads(lakectl("compact", "db.c", "--full"))["snapshot_id"] == 3
    rows = json.loads(lakectl("scan", "db.c"))
    expected = {i: f"0-{i}" for i in range(10)}
    expected.update({i: f"1-{i}" for i in range(5, 15)})
    assert sorted((r["id"], r["v"]) for r in rows) == sorted(expected.items())
