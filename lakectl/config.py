"""Settings: command-line flags > LAKECTL_* environment > TOML config file > defaults.

The config file is the first of: ``--config PATH``, ``$LAKECTL_CONFIG``, ``./lakectl.toml``,
``~/.config/lakectl/config.toml``. Keys at the top level: ``warehouse``, ``format``,
``engine``; under ``[spark]``: ``master``, ``threshold`` (e.g. "256mb") and a ``[spark.conf]``
table of Spark settings.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from core.engines import DEFAULT_SPARK_THRESHOLD, EngineSettings, ProgressCallback
from core.errors import UsageError
from core.options import parse_size
from lakectl.params import parse_pairs

DEFAULT_WAREHOUSE = "./warehouse"
FORMATS = ("table", "json", "jsonl", "csv")


def config_path(explicit: str | None) -> Path | None:
    for candidate in (explicit, os.environ.get("LAKECTL_CONFIG")):
        if candidate:
            path = Path(candidate).expanduser()
            if not path.is_file():
                raise UsageError(f"config file {path} does not exist")
            return path
    for path in (Path("lakectl.toml"), Path("~/.config/lakectl/config.toml").expanduser()):
        if path.is_file():
            return path
    return None


def load_config(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"config file {path}: {e}") from e
    except OSError as e:
        raise UsageError(f"cannot read config file {path}: {e.strerror}") from e


@dataclass(slots=True)
class Settings:
    """What the root callback gathered; commands read it through ``resolve``."""

    warehouse: str | None = None
    format: str | None = None
    verbose: int = 0
    config_file: str | None = None
    engine: str | None = None
    master: str | None = None
    spark_conf: list[str] = field(default_factory=list)
    _config: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = load_config(config_path(self.config_file))
        return self._config

    def resolve_warehouse(self, flag: str | None) -> str:
        return (flag or self.warehouse or os.environ.get("LAKECTL_WAREHOUSE")
                or self.config.get("warehouse") or DEFAULT_WAREHOUSE)

    def resolve_format(self, flag: str | None) -> str:
        fmt = flag or self.format or os.environ.get("LAKECTL_FORMAT") or self.config.get("format") or "table"
        if fmt not in FORMATS:
            raise UsageError(f"--format {fmt!r} must be one of {', '.join(FORMATS)}")
        return fmt

    def engine_settings(self, progress: ProgressCallback | None = None) -> EngineSettings:
        """--engine/--master/--spark-conf > LAKECTL_ENGINE/LAKECTL_SPARK_MASTER > config [spark]."""
        spark = self.config.get("spark") or {}
        if not isinstance(spark, dict):
            raise UsageError("config key 'spark' must be a table ([spark])")
        conf = {str(k): str(v) for k, v in (spark.get("conf") or {}).items()}
        conf.update(parse_pairs(self.spark_conf, flag="--spark-conf"))
        threshold = spark.get("threshold", os.environ.get("LAKECTL_SPARK_THRESHOLD"))
        return EngineSettings(
            engine=self.engine or os.environ.get("LAKECTL_ENGINE") or self.config.get("engine") or "auto",
            master=self.master or os.environ.get("LAKECTL_SPARK_MASTER") or spark.get("master"),
            spark_conf=conf,
            spark_threshold=parse_size(str(threshold), "spark threshold") if threshold is not None
            else DEFAULT_SPARK_THRESHOLD,
            progress=progress,
        )
