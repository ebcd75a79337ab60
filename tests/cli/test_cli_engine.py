"""Engine choice from the command line: flags, environment, config; -v says which and why."""

import json

import pytest
from typer.testing import CliRunner

from lakectl.app import app

runner = CliRunner()


@pytest.fixture
def table(tmp_path):
    wh = str(tmp_path / "wh")
    r = runner.invoke(app, ["-w", wh, "create", "db.t", "--schema", "id BIGINT, v STRING", "--primary-key", "id",
                            "-o", "bucket=2"])
    assert r.exit_code == 0, r.stderr
    (tmp_path / "rows.csv").write_text("id,v\n1,a\n2,b\n")
    return wh, str(tmp_path / "rows.csv")


def test_verbose_names_the_engine_and_the_reason(table):
    wh, rows = table
    r = runner.invoke(app, ["-v", "-w", wh, "--engine", "local", "write", "db.t", "--input", rows])
    assert r.exit_code == 0 and "engine: local (--engine local)" in r.stderr
    r = runner.invoke(app, ["-v", "-w", wh, "write", "db.t", "--input", rows])
    assert r.exit_code == 0 and "engine: local (" in r.stderr and "below the Spark threshold" in r.stderr
    r = runner.invoke(app, ["-v", "-w", wh, "scan", "db.t", "-f", "json"])
    assert r.exit_code == 0 and "engine: local (" in r.stderr
    assert sorted(row["id"] for row in json.loads(r.stdout)) == [1, 2]


def test_bad_engine_is_a_usage_error(table):
    wh, rows = table
    r = runner.invoke(app, ["-w", wh, "--engine", "flink", "write", "db.t", "--input", rows])
    assert r.exit_code == 2 and "--engine 'flink'" in r.stderr
    r = runner.invoke(app, ["-w", wh, "--spark-conf", "novalue", "--engine", "local", "write", "db.t", "--input", rows])
    assert r.exit_code == 2 and "KEY=VALUE" in r.stderr


def test_threshold_from_config_sends_small_work_to_spark_only_when_exceeded(table, tmp_path, monkeypatch):
    wh, rows = table
    config = tmp_path / "lakectl.toml"
    config.write_text('engine = "auto"\n[spark]\nthreshold = "1mb"\n[spark.conf]\n"spark.executor.memory" = "512m"\n')
    r = runner.invoke(app, ["-v", "-w", wh, "--config", str(config), "write", "db.t", "--input", rows])
    assert r.exit_code == 0 and "below the Spark threshold of 1048576" in r.stderr
    monkeypatch.setenv("LAKECTL_ENGINE", "local")
    config.write_text('engine = "spark"\n')
    r = runner.invoke(app, ["-v", "-w", wh, "--config", str(config), "write", "db.t", "--input", rows])
    assert r.exit_code == 0 and "engine: local (--engine local)" in r.stderr  # env beats config


def test_dynamic_bucket_tables_are_written_locally(tmp_path):
    """A primary-key table without a bucket option is in dynamic bucket mode: auto picks the
    local engine even with a Spark master given, --engine spark is refused before any Spark."""
    wh = str(tmp_path / "wh")
    r = runner.invoke(app, ["-w", wh, "create", "db.d", "--schema", "id BIGINT, v STRING", "--primary-key", "id"])
    assert r.exit_code == 0, r.stderr
    rows = tmp_path / "rows.csv"
    rows.write_text("id,v\n1,a\n2,b\n")
    r = runner.invoke(app, ["-v", "-w", wh, "--master", "local[2]", "write", "db.d", "--input", str(rows), "-f", "json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["engine"] == "local" and "dynamic bucket mode" in r.stderr
    r = runner.invoke(app, ["-w", wh, "--engine", "spark", "write", "db.d", "--input", str(rows)])
    assert r.exit_code == 2 and "dynamic-bucket table" in r.stderr and "--engine local" in r.stderr


@pytest.mark.spark
def test_spark_engine_from_the_command_line(table):
    wh, rows = table
    r = runner.invoke(app, ["-v", "-w", wh, "--engine", "spark", "--master", "local[2]", "write", "db.t",
                            "--input", rows, "-f", "json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["engine"] == "spark" and "engine: spark (--engine spark)" in r.stderr
    r = runner.invoke(app, ["-w", wh, "--engine", "spark", "scan", "db.t", "-f", "json", "--where", "id > 1"])
    assert r.exit_code == 0 and json.loads(r.stdout) == [{"id": 2, "v": "b"}]


@pytest.mark.spark
def test_bad_input_on_spark_exits_5_with_the_local_message(table, tmp_path):
    wh, _ = table
    bad = tmp_path / "bad.csv"
    bad.write_text("id,v\n,a\n")
    for engine in ("local", "spark"):
        r = runner.invoke(app, ["-w", wh, "--engine", engine, "write", "db.t", "--input", str(bad)])
        assert r.exit_code == 5, (engine, r.stderr)
        assert r.stderr.strip().splitlines() == ["error: null in primary key column 'id' (input row 1)"]
    r = runner.invoke(app, ["-w", wh, "snapshots", "db.t", "-f", "json"])
    assert json.loads(r.stdout) == []


def test_no_progress_bar_off_a_terminal():
    from lakectl.output import Output

    with Output("json").progress() as progress:
        assert progress is None  # CliRunner's stderr is not a terminal


# A Spark master nothing listens on: any attempt to start Spark against it fails, so a command
# that succeeds with it configured cannot have started Spark.
DEAD_MASTER = "spark://127.0.0.1:1"


def _master_sources(tmp_path):
    """(global flags, environment) for each way of configuring a Spark master."""
    config = tmp_path / "lakectl.toml"
    config.write_text(f'[profiles.cluster.spark]\nmaster = "{DEAD_MASTER}"\n')
    return {"flag": (["--master", DEAD_MASTER], {}),
            "env": ([], {"LAKECTL_SPARK_MASTER": DEAD_MASTER}),
            "profile": (["--config", str(config), "--profile", "cluster"], {})}


@pytest.mark.parametrize("source", ["flag", "env", "profile"])
def test_auto_runs_small_work_locally_even_with_a_master(table, tmp_path, source):
    """--engine auto decides by size alone: with a master configured (flag, environment or
    profile), a small write, scan and compact run in-process and say so in -v and in JSON."""
    wh, rows = table
    flags, env = _master_sources(tmp_path)[source]

    def run(*args):
        r = runner.invoke(app, ["-v", "-w", wh, *flags, *args], env=env)
        assert r.exit_code == 0, (args, r.stderr)
        assert "engine: local (" in r.stderr and f"the Spark master {DEAD_MASTER} is not needed" in r.stderr
        return r

    assert json.loads(run("write", "db.t", "--input", rows, "-f", "json").stdout)["engine"] == "local"
    assert json.loads(run("write", "db.t", "--input", rows, "-f", "json").stdout)["engine"] == "local"
    found = json.loads(run("scan", "db.t", "--where", "id = 2", "-f", "json").stdout)
    assert found == [{"id": 2, "v": "b"}]
    out = tmp_path / f"out-{source}.parquet"
    summary = json.loads(run("scan", "db.t", "--output", str(out), "-f", "json").stdout)
    assert summary["engine"] == "local" and summary["records_written"] == 2
    dry = json.loads(run("compact", "db.t", "--full", "--dry-run", "-f", "json").stdout)
    assert dry["engine"] == "local" and dry["buckets_compacted"] >= 1
    done = json.loads(run("compact", "db.t", "--full", "-f", "json").stdout)
    assert done["engine"] == "local" and done["snapshot_id"] == 3


def test_compact_with_nothing_to_do_names_no_engine(table):
    wh, _ = table
    r = runner.invoke(app, ["-w", wh, "compact", "db.t", "--full", "-f", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["engine"] is None


@pytest.mark.spark
@pytest.mark.slow
def test_engine_spark_with_a_dead_master_tries_to_reach_it(table):
    """The same small scan with --engine spark does go for Spark, and stops at the dead master
    with exit 10 (checked before a JVM starts)."""
    from pyspark.sql import SparkSession

    wh, rows = table
    # A session is per process and lakectl reuses an active one (as inside a Spark application):
    # one left by an earlier test file of this pytest worker would answer instead of the master.
    if SparkSession.getActiveSession() is not None:
        SparkSession.getActiveSession().stop()
    assert runner.invoke(app, ["-w", wh, "--engine", "local", "write", "db.t", "--input", rows]).exit_code == 0
    r = runner.invoke(app, ["-v", "-w", wh, "--engine", "spark", "--master", DEAD_MASTER, "scan", "db.t",
                            "--where", "id = 2"])
    assert r.exit_code == 10 and "engine: spark (--engine spark)" in r.stderr
    assert f"error: no Spark master answers at {DEAD_MASTER}" in r.stderr
