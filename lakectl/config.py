"""Settings: command-line flags > LAKECTL_* environment > TOML config file > defaults.

The config file is the first of: ``--config PATH``, ``$LAKECTL_CONFIG``, ``./lakectl.toml``,
``~/.config/lakectl/config.toml``. Keys at the top level: ``warehouse``, ``format``,
``engine``; under ``[spark]``: ``master``, ``threshold`` (e.g. "256mb") and a ``[spark.conf]``
table of Spark settings; under ``[s3]``: ``endpoint``, ``region``, ``access-key-id``,
``secret-access-key``, ``session-token``, ``path-style``, ``conditional-put``, ``lock-file``
(each also ``LAKECTL_S3_<KEY>`` in the environment, which wins; unset credentials fall back to
the standard AWS variables and files).
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
from core.fileio import configure as configure_storage, s3_options
from core.options import parse_bool, parse_size
from lakectl.params import parse_pairs

DEFAULT_WAREHOUSE = "./warehouse"
FORMATS = ("table", "json", "jsonl", "csv")
S3_KEYS = ("endpoint", "region", "access-key-id", "secret-access-key", "session-token", "path-style",
           "conditional-put", "lock-file")


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
        """The warehouse URI; also sets the storage defaults (S3 endpoint, credentials) that
        every FileIO of this process starts from."""
        configure_storage("s3", self.s3_options())
        return (flag or self.warehouse or os.environ.get("LAKECTL_WAREHOUSE")
                or self.config.get("warehouse") or DEFAULT_WAREHOUSE)

    def s3_settings(self) -> dict[str, str]:
        """``[s3]`` keys of the config file, overridden by ``LAKECTL_S3_*`` variables."""
        section = self.config.get("s3") or {}
        if not isinstance(section, dict):
            raise UsageError("config key 's3' must be a table ([s3])")
        unknown = sorted(set(section) - set(S3_KEYS))
        if unknown:
            raise UsageError(f"config [s3] has unknown key {unknown[0]!r}; known: {', '.join(S3_KEYS)}")
        out = {k: str(v) for k, v in section.items()}
        for key in S3_KEYS:
            env = os.environ.get("LAKECTL_S3_" + key.upper().replace("-", "_"))
            if env is not None:
                out[key] = env
        return out

    def s3_options(self) -> dict[str, Any]:
        """s3fs options from ``s3_settings``."""
        conf = self.s3_settings()
        flag = {k: parse_bool(conf[k], f"s3 {k}") for k in ("path-style", "conditional-put") if k in conf}
        return s3_options(endpoint=conf.get("endpoint"), region=conf.get("region"),
                          access_key_id=conf.get("access-key-id"), secret_access_key=conf.get("secret-access-key"),
                          session_token=conf.get("session-token"), path_style=flag.get("path-style"),
                          conditional_put=flag.get("conditional-put"), lock_file=conf.get("lock-file"))

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
