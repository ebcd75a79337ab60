"""Settings: command-line flags > LAKECTL_* environment > TOML config file > defaults.

The config file is the first of: ``--config PATH``, ``$LAKECTL_CONFIG``, ``./lakectl.toml``,
``~/.config/lakectl/config.toml``. Keys at the top level: ``warehouse``, ``format``.
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

from core.errors import UsageError

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
