"""The oracle virtualenvs: each independent implementation lives in its own (``make oracle``,
``make rest-oracle``, ``make iceberg-oracle``) and runs as a subprocess. Tests find its python
here: the environment variable wins, else ``<repo>/<venv>/bin/python``; without it a test is
skipped locally and fails in CI, which must have set every one up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def venv_python(env_var: str, venv: str, make_target: str, what: str) -> str:
    """The python of ``what``'s venv (``venv`` under the repository, or ``$env_var``)."""
    configured = os.environ.get(env_var)
    candidate = Path(configured) if configured else REPO_ROOT / venv / "bin" / "python"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    if os.environ.get("CI"):
        raise RuntimeError(f"{what} venv missing at {candidate}; CI must run `make {make_target}` first")
    pytest.skip(f"{what} venv missing; run make {make_target}")
