"""clone across filesystems: a local table cloned to S3 (a real SeaweedFS) and the S3 copy
cloned back to a local path read exactly as the source; the S3 copy passes check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import core.fileio as fileio
from core.ops.create import create
from core.table import Table
from lakectl.app import app

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


def test_clone_local_to_s3_and_back(s3: Any, tmp_path: Path) -> None:
    local_wh = tmp_path / "wh"
    src = Table.locate("db.pk", warehouse=str(local_wh))
    create(src, "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "deletion-vectors.enabled": "true"})
    model: dict[tuple[int, str], str] = {}
    for round_, ids in enumerate([range(10), range(0, 10, 3), range(8, 14)]):
        batch = [(i, f"r{round_}-{i}", f"d{i % 2}") for i in ids]
        src.write(pa.table({"id": pa.array([b[0] for b in batch], pa.int64()), "v": [b[1] for b in batch],
                            "dt": [b[2] for b in batch]}))
        model.update({(i, dt): v for i, v, dt in batch})
    expected = sorted([i, v, dt] for (i, dt), v in model.items())
    env = s3.env()
    s3_wh = s3.warehouse()
    out = lakectl(env, "-w", local_wh, "clone", "db.pk", f"{s3_wh}/db.db/copy")
    assert out["snapshot_id"] == src.snapshots.latest_id() and out["files_copied"] > 0
    remote = lakectl(env, "-w", s3_wh, "scan", "db.copy")
    assert sorted([r["id"], r["v"], r["dt"]] for r in remote) == expected
    assert lakectl(env, "-w", s3_wh, "check", "db.copy")["ok"] is True
    assert [s["snapshot_id"] for s in lakectl(env, "-w", s3_wh, "snapshots", "db.copy")] == [1]
    # and back to a local directory given by path
    back = tmp_path / "back" / "pk"
    lakectl(env, "-w", s3_wh, "clone", "db.copy", f"file://{back}")  # a bare path is in the warehouse's store
    again = Table.open(str(back))
    assert sorted([r["id"], r["v"], r["dt"]] for r in again.scan().to_pylist()) == expected
    # the S3 copy is refused as a target now that it exists
    refused = runner.invoke(app, ["-w", str(local_wh), "clone", "db.pk", f"{s3_wh}/db.db/copy"], env=env)
    assert refused.exit_code == 1 and refused.stderr.startswith("error: ")
