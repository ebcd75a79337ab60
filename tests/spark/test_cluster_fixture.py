"""Self-check of ``cluster.standalone_cluster``: a PySpark job in its own process runs Arrow UDFs
on the worker's executor, the master records it as completed, and stopping leaves no process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster import (
    FAST_JVM_OPTS,
    Cluster,
    client_env,
    completed_apps,
    executor_ran_on_worker,
    live_group_members,
    standalone_cluster,
)

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

APP_NAME = "lakectl-cluster-selfcheck"
N_KEYS = 7

_JOB = """
import json, sys
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

master, app_name, n_keys, jvm_opts = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
spark = (SparkSession.builder.master(master).appName(app_name)
         .config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.executor.memory", "512m")
         .config("spark.executor.cores", "1")
         .config("spark.cores.max", "1")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.driver.extraJavaOptions", jvm_opts)
         .config("spark.executor.extraJavaOptions", jvm_opts)
         .getOrCreate())
try:
    def keyed(batches):
        for b in batches:
            ids = b.column("id")  # non-negative, so integer division gives the remainder
            k = pc.subtract(ids, pc.multiply(pc.divide(ids, n_keys), n_keys))
            yield pa.RecordBatch.from_arrays([k, pc.multiply(ids, 2)], names=["k", "v"])

    def summarize(table):
        return pa.table({"k": [table.column("k")[0].as_py()], "n": [table.num_rows],
                         "total": [pc.sum(table.column("v")).as_py()]},
                        schema=pa.schema([("k", pa.int64()), ("n", pa.int64()), ("total", pa.int64())]))

    df = spark.range(1000, numPartitions=4).mapInArrow(keyed, "k long, v long")
    rows = df.groupBy("k").applyInArrow(summarize, "k long, n long, total long").collect()
    print(json.dumps({"app_id": spark.sparkContext.applicationId,
                      "rows": sorted([r.k, r.n, r.total] for r in rows)}))
finally:
    spark.stop()
"""


def run_job(cluster: Cluster, cwd: Path) -> tuple[dict[str, object], str]:
    proc = subprocess.run(
        [sys.executable, "-c", _JOB, cluster.master_url, APP_NAME, str(N_KEYS), FAST_JVM_OPTS],
        env=client_env(cluster), cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"job failed (exit {proc.returncode})\n--- stderr ---\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def wait_for_completed(cluster: Cluster, app_id: str, timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        apps = completed_apps(cluster)
        if any(a.id == app_id for a in apps) or time.monotonic() > deadline:
            return [f"{a.id} {a.name} {a.state}" for a in apps]
        time.sleep(0.25)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_job_runs_on_the_worker_and_cluster_stops(tmp_path: Path) -> None:
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    with standalone_cluster(tmp_path / "cluster") as cluster:
        timings["start"] = time.monotonic() - t0
        assert cluster.master_url.startswith("spark://127.0.0.1:")
        assert alive(cluster.master_pid) and alive(cluster.worker_pid)

        t1 = time.monotonic()
        result, job_stderr = run_job(cluster, tmp_path)
        timings["job"] = time.monotonic() - t1

        expected = sorted([k, len(range(k, 1000, N_KEYS)), sum(2 * i for i in range(k, 1000, N_KEYS))]
                          for k in range(N_KEYS))
        assert result["rows"] == expected
        app_id = result["app_id"]
        assert isinstance(app_id, str) and app_id.startswith("app-")
        completed = wait_for_completed(cluster, app_id)
        assert f"{app_id} {APP_NAME} FINISHED" in completed, completed
        assert executor_ran_on_worker(cluster) == [app_id], sorted(cluster.worker_dir.rglob("*"))
        assert (cluster.worker_dir / app_id / "0" / "stderr").stat().st_size > 0
        master_pid, worker_pid = cluster.master_pid, cluster.worker_pid
        t2 = time.monotonic()
    timings["stop"] = time.monotonic() - t2

    assert not alive(master_pid) and not alive(worker_pid)
    # Each daemon led its own group, which also held the executor and its Python workers.
    assert live_group_members(master_pid) == [] and live_group_members(worker_pid) == []
    print("\ncluster timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))
