"""lakectl on a real Spark standalone cluster (master + worker on 127.0.0.1), through the console
script: the write and scan run as Spark jobs whose tasks execute on the worker, and the official
reader reads the result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from cluster import client_env, completed_apps, executor_ran_on_worker, standalone_cluster

from core.engines.master_probe import answers_as_spark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from oracle import official_read  # noqa: E402

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.interop, pytest.mark.slow]

LAKECTL = str(Path(sys.executable).with_name("lakectl"))


def _run(args: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run([LAKECTL, *args, "--format", "json"], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, f"{args} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def test_write_and_scan_run_on_the_cluster_and_pypaimon_reads_the_result(tmp_path: Path) -> None:
    rows = pa.table({"id": pa.array(range(200), pa.int64()), "v": [f"v{i}" for i in range(200)],
                     "dt": [f"2024-01-0{i % 3 + 1}" for i in range(200)]})
    changes = pa.table({"op": ["+U", "-D", "+I"], "id": pa.array([1, 2, 500], pa.int64()),
                        "v": ["changed", None, "new"], "dt": ["2024-01-02", "2024-01-03", "2024-01-01"]})
    pacsv.write_csv(rows, tmp_path / "rows.csv")
    # Parquet: the executors read it with pyarrow themselves (ParquetFiles), CSV through Spark's reader.
    pq.write_table(changes, tmp_path / "changes.parquet")
    warehouse = str(tmp_path / "wh")
    with standalone_cluster(tmp_path / "cluster") as cluster:
        env = client_env(cluster, dict(os.environ))
        spark = ["--warehouse", warehouse, "--engine", "spark", "--master", cluster.master_url,
                 "--spark-conf", "spark.executor.memory=512m", "--spark-conf", "spark.cores.max=1"]
        _run(["--warehouse", warehouse, "create", "db.t", "--schema", "id BIGINT, v STRING, dt STRING",
              "--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=2"], env)
        first = _run([*spark, "write", "db.t", "--input", str(tmp_path / "rows.csv")], env)
        second = _run([*spark, "write", "db.t", "--input", str(tmp_path / "changes.parquet"), "--row-kind-column", "op"],
                      env)
        scanned = _run([*spark, "scan", "db.t"], env)
        apps = executor_ran_on_worker(cluster)
        finished = completed_apps(cluster)
        # The check each command made before its JVM started: the master answered as Spark,
        # and logged no failure of it (the probe names an endpoint that does not exist).
        host, port = cluster.master_url.removeprefix("spark://").rsplit(":", 1)
        assert answers_as_spark(host, int(port), 3, 15) is None
        master_logs = "".join(p.read_text(errors="replace") for p in cluster.log_dir.rglob("*master*"))
        assert master_logs and "lakectl-probe" not in master_logs

    assert first["engine"] == second["engine"] == "spark"
    assert (first["snapshot_id"], second["snapshot_id"]) == (1, 2)
    # Three Spark applications (two writes, one scan) ran their tasks on the worker's executors.
    assert len(apps) == 3 and len(finished) == 3
    expected = {(r["dt"], r["id"]): r["v"] for r in rows.to_pylist()}
    expected[("2024-01-02", 1)] = "changed"
    del expected[("2024-01-03", 2)]
    expected[("2024-01-01", 500)] = "new"
    assert {(r["dt"], r["id"]): r["v"] for r in scanned} == expected
    official, meta = official_read(Path(warehouse) / "db.db" / "t", tmp_path)
    assert meta["latest_snapshot"] == 2
    assert {(r["dt"], r["id"]): r["v"] for r in official.to_pylist()} == expected
