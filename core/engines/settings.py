"""What the engines share: the settings of a run (which engine, where Spark runs) and the
progress callback, apart from ``core.engines`` (which chooses and builds an engine) so that
the engines import them without importing the module that imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from core.errors import UsageError

ENGINES = ("auto", "local", "spark")
DEFAULT_MASTER = "local[*]"
DEFAULT_SPARK_THRESHOLD = 256 << 20  # bytes of input or table data above which auto picks Spark

# progress(done, total, description): engines report long work through this; None = silent.
ProgressCallback = Callable[[int, int, str], None]


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """How to run data-moving work; filled from flags, environment and config by the CLI."""

    engine: str = "auto"
    master: str | None = None  # where Spark runs when it runs; None = local[*]. auto still decides by size
    spark_conf: dict[str, str] = field(default_factory=dict)
    spark_threshold: int = DEFAULT_SPARK_THRESHOLD
    progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(f"--engine {self.engine!r} must be one of {', '.join(ENGINES)}")
