"""What every CLI test starts from: none of the user's settings (LAKECTL_* variables, a config
file in the home directory or the working directory, NO_COLOR) reaches lakectl, and each test
has a working directory (and so a default ./warehouse) of its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Every LAKECTL_* variable is a setting of lakectl's (lakectl/config.py) or a fault switch,
# except the test harness's own.
HARNESS_VARIABLES = ("LAKECTL_ORACLE_PYTHON", "LAKECTL_JAVA_ORACLE_CLASSES")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [v for v in os.environ if v.startswith("LAKECTL_") and v not in HARNESS_VARIABLES]:
        monkeypatch.delenv(var)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
