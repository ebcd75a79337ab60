"""Engines run the per-bucket kernels: in this process (``local``) or as Spark jobs (``spark``).

``choose_engine`` applies the ``--engine auto|local|spark`` rule: ``auto`` picks Spark only
for data above the threshold, whether or not a master is configured. Only ``core.engines.spark``
imports pyspark, and it is imported only when Spark is chosen, so metadata commands and
small local work never start a JVM.
"""

from __future__ import annotations

import logging
from typing import Any

from core.engines.settings import (DEFAULT_MASTER, DEFAULT_SPARK_THRESHOLD, ENGINES, EngineSettings,
                                   ProgressCallback)

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_MASTER", "DEFAULT_SPARK_THRESHOLD", "ENGINES", "EngineSettings", "ProgressCallback",
           "choose_engine", "engine_choice"]


def choose_engine(settings: EngineSettings | None, data_bytes: int = 0) -> tuple[Any, str]:
    """Return (engine, why it was chosen)."""
    settings = settings or EngineSettings()
    name, why = engine_choice(settings, data_bytes)
    return (_spark(settings, data_bytes) if name == "spark" else _local(settings)), why


def engine_choice(settings: EngineSettings | None, data_bytes: int = 0) -> tuple[str, str]:
    """The name of the engine ``choose_engine`` would pick, and why, without creating it (a dry
    run reports it)."""
    settings = settings or EngineSettings()
    if settings.engine in ("local", "spark"):
        return settings.engine, f"--engine {settings.engine}"
    # auto: size alone decides. A configured master only says where Spark runs when the work
    # is big enough for it; starting a JVM for a small scan costs more than the scan.
    if data_bytes > settings.spark_threshold:
        return "spark", (f"{data_bytes} bytes of data exceed the Spark threshold of {settings.spark_threshold} "
                         f"bytes; Spark on {settings.master or DEFAULT_MASTER}")
    unused = f"; the Spark master {settings.master} is not needed" if settings.master else ""
    return "local", f"{data_bytes} bytes of data are below the Spark threshold of {settings.spark_threshold}{unused}"


def _local(settings: EngineSettings) -> Any:
    from core.engines.local import LocalEngine

    return LocalEngine(progress=settings.progress)


def _spark(settings: EngineSettings, data_bytes: int) -> Any:
    from core.engines.spark import SparkEngine

    return SparkEngine(master=settings.master or DEFAULT_MASTER, conf=dict(settings.spark_conf),
                       progress=settings.progress, data_bytes=data_bytes)
