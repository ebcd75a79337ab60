"""The settings of a new lakectl SparkSession (``core.engines.spark.session_settings``) and the
data size that reaches them from ``choose_engine``: no JVM is started here.

Expectations are the measured choices of bench/results-spark.md (2026-11-27): C1-only JIT
below the bulk size (a cold session costs far less), the JVM's tiered compilation above it,
Spark's own shuffle compression off for local masters only (lakectl shuffles lz4 Arrow)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from core.engines import EngineSettings, choose_engine  # noqa: E402
from core.engines.spark import BULK_BYTES, session_settings  # noqa: E402

C1_ONLY = "-XX:TieredStopAtLevel=1"


def _settings(master: str = "local[2]", conf: dict[str, str] | None = None, data_bytes: int = 0) -> dict[str, str]:
    return session_settings(master, conf or {}, data_bytes, "/usr/bin/python3")


@pytest.mark.parametrize("data_bytes, c1_only", [(0, True), (BULK_BYTES, True), (BULK_BYTES + 1, False),
                                                 (10 * BULK_BYTES, False)])
def test_jit_follows_the_data_size(data_bytes: int, c1_only: bool) -> None:
    settings = _settings(data_bytes=data_bytes)
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        assert (C1_ONLY in settings[key].split()) is c1_only
        assert "-XX:+UseSerialGC" in settings[key].split()


def test_shuffle_compression_is_off_only_for_local_masters() -> None:
    assert _settings("local[2]")["spark.shuffle.compress"] == "false"
    assert _settings("local[*]")["spark.shuffle.compress"] == "false"
    assert "spark.shuffle.compress" not in _settings("spark://10.0.0.5:7077")
    assert "spark.shuffle.compress" not in _settings("yarn")


def test_the_users_conf_wins() -> None:
    conf = {"spark.shuffle.compress": "true", "spark.driver.extraJavaOptions": "-Xss4m"}
    settings = _settings("local[2]", conf, data_bytes=10 * BULK_BYTES)
    assert settings["spark.shuffle.compress"] == "true"
    assert settings["spark.driver.extraJavaOptions"] == "-Xss4m"
    assert C1_ONLY not in settings["spark.executor.extraJavaOptions"]  # not named by the user: lakectl's


def test_choose_engine_hands_the_data_size_to_the_spark_engine() -> None:
    engine, _ = choose_engine(EngineSettings(engine="spark", master="local[2]"), data_bytes=BULK_BYTES + 5)
    assert engine.data_bytes == BULK_BYTES + 5
    engine, _ = choose_engine(EngineSettings(engine="spark", master="local[2]"))
    assert engine.data_bytes == 0
    assert engine._session is None  # choosing starts no JVM


@pytest.mark.parametrize("master", ["local[2]", "spark://10.0.0.5:7077"])
def test_executors_start_numpy_with_one_blas_thread_unless_the_user_says_otherwise(master: str) -> None:
    assert _settings(master)["spark.executorEnv.OPENBLAS_NUM_THREADS"] == "1"
    assert _settings(master, {"spark.executorEnv.OPENBLAS_NUM_THREADS": "4"})[
        "spark.executorEnv.OPENBLAS_NUM_THREADS"] == "4"
