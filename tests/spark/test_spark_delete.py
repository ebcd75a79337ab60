"""``delete`` on the Spark engine (local[2], one session for the module): the same table as a
local delete (files, sequence numbers, rows), the rows a Python model keeps (the rows written
minus those the filter matches, computed here with plain Python), and what Java Paimon 1.0 and
pypaimon read afterwards; a primary-key table whose key holds nanoseconds (a key rounded to
microseconds would delete nothing), an append table whose files are rewritten, dry runs, the
``--engine auto`` threshold, the console script, and a standalone cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from cluster import client_env, executor_ran_on_worker, standalone_cluster
from typer.testing import CliRunner

from core.engines import EngineSettings
from core.engines.spark import SparkEngine
from core.manifest import merge_entries, read_entries
from core.ops.create import create
from core.table import Table
from lakectl.app import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from java_oracle import java_read, lakectl_rows  # noqa: E402
from oracle import official_read  # noqa: E402

pytestmark = pytest.mark.spark

SPARK = EngineSettings(engine="spark", master="local[2]")
LOCAL = EngineSettings(engine="local")
WHERE = "amount >= 5 AND dt = 'a'"
BASE_NS = 1_700_000_000_123_456_789  # a TIMESTAMP(9) with sub-microsecond digits


@pytest.fixture(scope="module")
def engine():
    e = SparkEngine(master="local[2]")
    yield e
    e.session.stop()


Row = tuple  # (id, ts nanos or None, v, amount, dt)


def matches(r: Row) -> bool:  # the model of WHERE (a null amount never matches)
    return r[3] is not None and r[3] >= 5 and r[4] == "a"


def pk_batches() -> list[list[Row]]:
    """Inserts, then updates of half of them (same key, new values) and new keys. Every key's
    timestamp has its own nanosecond digits."""
    def ts(i: int) -> int:
        return BASE_NS + i * 1_000_003_007

    first = [(i, ts(i), f"v{i}", None if i % 7 == 0 else i % 10, "a" if i % 2 else "b") for i in range(40)]
    second = [(i, ts(i), f"u{i}", (i * 3) % 10, "a" if i % 2 else "b") for i in range(20, 60)]
    return [first, second]


def append_batches() -> list[list[Row]]:
    """Three writes: a file in partition b with no matching row, files in a whose rows all
    match, files in a with some matching."""
    first = [(i, None, f"v{i}", i % 10, "a" if i % 2 else "b") for i in range(30)]
    doomed = [(100 + i, None, f"d{i}", 9, "a") for i in range(5)]
    untouched = [(200 + i, None, f"k{i}", 1, "b") for i in range(5)]
    return [first, doomed, untouched]


def arrow(rows: list[Row], pk: bool) -> pa.Table:
    cols = {"id": pa.array([r[0] for r in rows], pa.int64())}
    if pk:
        cols["ts"] = pa.array([r[1] for r in rows], pa.timestamp("ns"))
    cols.update({"v": pa.array([r[2] for r in rows], pa.string()), "amount": pa.array([r[3] for r in rows], pa.int32()),
                 "dt": pa.array([r[4] for r in rows], pa.string())})
    return pa.table(cols)


def make(warehouse: Path, name: str, pk: bool) -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(warehouse))
    if pk:
        create(t, "id BIGINT, ts TIMESTAMP(9), v STRING, amount INT, dt STRING", primary_keys=["id", "ts", "dt"],
               partition_keys=["dt"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    else:
        create(t, "id BIGINT, v STRING, amount INT, dt STRING", partition_keys=["dt"])
    t = Table.open(f"db.{name}", warehouse=str(warehouse))
    for b in pk_batches() if pk else append_batches():
        t.write(arrow(b, pk), engine_settings=LOCAL)
    return t


def model_rows(pk: bool) -> list[Row]:
    """The rows the table holds before the delete: the last version of each key, or every row."""
    if not pk:
        return [r for b in append_batches() for r in b]
    state: dict[tuple, Row] = {}
    for b in pk_batches():
        for r in b:
            state[(r[0], r[1], r[4])] = r
    return list(state.values())


def scanned(t: Table, pk: bool) -> Counter:
    data = t.scan(engine_settings=LOCAL)
    ts = data.column("ts").cast(pa.int64()).to_pylist() if pk else [None] * data.num_rows
    return Counter(zip(data.column("id").to_pylist(), ts, *(data.column(c).to_pylist() for c in ("v", "amount", "dt"))))


def layout(t: Table) -> list:
    """The latest snapshot's kind and counts, and its live files without their names."""
    snap = t.snapshots.snapshot(t.snapshots.latest_id())
    entries = merge_entries(read_entries(t.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))
    files = sorted((e.partition, e.bucket, e.file.level, e.file.row_count, e.file.min_sequence_number,
                    e.file.max_sequence_number, e.file.min_key, e.file.max_key, e.file.delete_row_count)
                   for e in entries)
    return [snap.commit_kind, snap.total_record_count, snap.delta_record_count, files]


@pytest.mark.interop
@pytest.mark.java
@pytest.mark.parametrize("pk", [True, False], ids=["primary-key-dv-ts9", "append"])
def test_spark_delete_equals_local_delete_the_model_and_the_official_readers(tmp_path: Path, engine: Any,
                                                                               pk: bool) -> None:
    local, spark = make(tmp_path / "wh", "local", pk), make(tmp_path / "wh", "spark", pk)
    before = model_rows(pk)
    doomed = [r for r in before if matches(r)]
    assert 0 < len(doomed) < len(before)
    if pk:  # the doomed keys differ from their microsecond rounding: exactness is tested
        assert all(r[1] % 1000 for r in doomed)

    latest = spark.snapshots.latest_id()
    dry = spark.delete(WHERE, dry_run=True, engine_settings=SPARK)
    dry_local = local.delete(WHERE, dry_run=True, engine_settings=LOCAL)
    assert (dry.engine, dry.dry_run, dry.snapshot_id, dry.rows_deleted) == ("spark", True, None, len(doomed))
    assert (dry.files_rewritten, dry.files_deleted) == (dry_local.files_rewritten, dry_local.files_deleted)
    assert spark.snapshots.latest_id() == local.snapshots.latest_id() == latest  # a dry run commits nothing

    on_spark = spark.delete(WHERE, engine_settings=SPARK)
    on_local = local.delete(WHERE, engine_settings=LOCAL)

    assert (on_spark.engine, on_local.engine) == ("spark", "local")
    assert on_spark.rows_deleted == on_local.rows_deleted == len(doomed)
    assert on_spark.commit_kind == on_local.commit_kind == ("APPEND" if pk else "OVERWRITE")
    assert (on_spark.files_rewritten, on_spark.files_deleted) == (on_local.files_rewritten, on_local.files_deleted)
    if not pk:  # in a, the first write's file is rewritten (some rows stay), the doomed file goes whole
        assert on_spark.files_deleted == dry.files_deleted == 2 and on_spark.files_rewritten == 1
    assert layout(spark) == layout(local)
    expected = Counter(r for r in before if not matches(r))
    assert scanned(spark, pk) == scanned(local, pk) == expected

    # The official readers agree, nanoseconds included.
    columns = ["id", "ts", "v", "amount", "dt"] if pk else ["id", "v", "amount", "dt"]
    want = lakectl_rows(spark.scan(engine_settings=LOCAL).select(columns))
    assert len(want) == len(expected)
    java_rows, meta = java_read(spark.path)
    assert meta["latest_snapshot"] == spark.snapshots.latest_id() and java_rows == want
    official, _ = official_read(spark.path, tmp_path)
    assert lakectl_rows(official.select(columns)) == want


def test_nothing_matching_commits_nothing_on_spark(tmp_path: Path, engine: Any) -> None:
    for pk in (True, False):
        t = make(tmp_path / "wh", f"none_{pk}", pk)
        latest = t.snapshots.latest_id()
        result = t.delete("amount > 100", engine_settings=SPARK)
        assert (result.engine, result.rows_deleted, result.snapshot_id, result.files_deleted) == ("spark", 0, None, 0)
        assert t.snapshots.latest_id() == latest


def test_a_conflict_after_a_spark_rewrite_deletes_the_executors_files(tmp_path: Path, engine: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction lands between the Spark rewrite and the commit: that try commits nothing,
    the driver deletes the files the executors wrote, and the delete plans again on the
    compacted table."""
    import core.ops.delete as delete_module
    t = make(tmp_path / "wh", "race", pk=False)
    real = delete_module.FileStoreCommit.commit
    tries: list[list[str]] = []

    def compact_first(self, messages, **kwargs):  # the other writer wins the first race
        if kwargs.get("kind") == "COMPACT":
            return real(self, messages, **kwargs)  # the compaction itself
        tries.append([f.file_name for m in messages for f in m.new_files])
        if len(tries) == 1:
            Table.open(t.name, warehouse=str(tmp_path / "wh")).compact(full=True, engine_settings=LOCAL)
        return real(self, messages, **kwargs)

    monkeypatch.setattr(delete_module.FileStoreCommit, "commit", compact_first)
    t.delete(WHERE, engine_settings=SPARK)
    assert len(tries) == 2 and tries[0]
    assert not any(p.name in tries[0] for p in (tmp_path / "wh").rglob("*.parquet"))
    assert [s.commit_kind for s in t.snapshots.snapshots()][-2:] == ["COMPACT", "OVERWRITE"]
    assert scanned(t, False) == Counter(r for r in model_rows(False) if not matches(r))


def test_engine_auto_picks_spark_above_the_threshold(tmp_path: Path, engine: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidate files' size decides: above LAKECTL_SPARK_THRESHOLD, Spark; -v says why.
    Pruning counts: a filter on a partition without files leaves nothing to exceed it."""
    make(tmp_path / "wh", "auto", pk=True)
    runner = CliRunner()
    monkeypatch.setenv("LAKECTL_SPARK_THRESHOLD", "1kb")
    monkeypatch.delenv("LAKECTL_ENGINE", raising=False)

    def delete(where: str, *extra: str) -> tuple[dict, str]:
        r = runner.invoke(app, ["-v", "-w", str(tmp_path / "wh"), "-f", "json", "delete", "db.auto", "--where", where,
                                *extra], catch_exceptions=False)
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout), r.stderr

    summary, log = delete("dt = 'none'", "--dry-run")
    assert summary["engine"] == "local" and "0 bytes of data are below the Spark threshold of 1024" in log
    summary, log = delete(WHERE, "--dry-run")
    assert summary["engine"] == "spark" and "exceed the Spark threshold of 1024 bytes" in log
    summary, _ = delete(WHERE)
    assert (summary["engine"], summary["records_deleted"], summary["commit_kind"]) == \
        ("spark", sum(map(matches, model_rows(True))), "APPEND")


def console_env(tmp_path: Path) -> dict[str, str]:
    """The parent's environment minus lakectl settings; this checkout's code first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return env


def lakectl(env: dict[str, str], *args: str) -> dict:
    script = Path(sys.executable).with_name("lakectl")
    proc = subprocess.run([str(script), *args, "--format", "json"], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_console_script_deletes_on_spark(tmp_path: Path, engine: Any) -> None:
    """``lakectl --engine spark --format json delete`` in its own process (its own JVM)."""
    t = make(tmp_path / "wh", "cli", pk=False)
    summary = lakectl(console_env(tmp_path), "--warehouse", str(tmp_path / "wh"), "--engine", "spark", "--master",
                      "local[1]", "delete", "db.cli", "--where", WHERE)
    doomed = sum(map(matches, model_rows(False)))
    assert summary == {"table": "db.cli", "branch": "main", "snapshot_id": 4, "commit_kind": "OVERWRITE",
                       "records_deleted": doomed, "files_rewritten": 1, "files_deleted": 2, "engine": "spark", "dry_run": False}
    assert scanned(t, False) == Counter(r for r in model_rows(False) if not matches(r))


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.interop
def test_delete_on_a_standalone_cluster(tmp_path: Path) -> None:
    """Both delete paths as Spark applications whose tasks run on a real worker (which has
    only the shipped core archive of this checkout); pypaimon reads the model afterwards."""
    warehouse = tmp_path / "wh"
    tables = {"pk": make(warehouse, "pk", pk=True), "app": make(warehouse, "app", pk=False)}
    with standalone_cluster(tmp_path / "cluster") as cluster:
        env = client_env(cluster, console_env(tmp_path))
        spark = ["--warehouse", str(warehouse), "--engine", "spark", "--master", cluster.master_url,
                 "--spark-conf", "spark.executor.memory=512m", "--spark-conf", "spark.cores.max=1"]
        summaries = {name: lakectl(env, *spark, "delete", f"db.{name}", "--where", WHERE) for name in tables}
        apps = executor_ran_on_worker(cluster)

    assert len(apps) == 2  # one application per delete, each with an executor on the worker
    for name, t in tables.items():
        pk = name == "pk"
        summary = summaries[name]
        assert (summary["engine"], summary["commit_kind"]) == ("spark", "APPEND" if pk else "OVERWRITE")
        assert summary["records_deleted"] == sum(map(matches, model_rows(pk)))
        expected = Counter(r for r in model_rows(pk) if not matches(r))
        assert scanned(t, pk) == expected
        columns = ["id", "ts", "v", "amount", "dt"] if pk else ["id", "v", "amount", "dt"]
        official, _ = official_read(t.path, tmp_path)
        assert lakectl_rows(official.select(columns)) == lakectl_rows(t.scan(engine_settings=LOCAL).select(columns))
