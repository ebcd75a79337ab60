"""PostgreSQL for the tests: one server per test session (``scripts/postgres.py``: Debian's
binaries, a data directory and socket in a temp directory, 127.0.0.1 on a free port, password
authentication), stopped at the end.

``postgres`` is the server (its own database ``lakectl``); ``postgres_db`` is a fresh database
on it for one test, so that tests sharing the server never see each other's registry rows.
Without PostgreSQL installed the tests using them skip, except in CI (``CI`` set), where a
missing server fails: ``make test`` installs it (``make postgres-packages``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from scripts.postgres import PostgresServer, bin_dir, create_database, start, stop


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI must run `make postgres-packages` (make test does)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    if bin_dir() is None:
        _unavailable("PostgreSQL is not installed (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (make venv)")
    # Not under pytest's basetemp (or a private TMPDIR): as root the server runs as another
    # user, who must be able to reach its directory.
    root = Path(tempfile.mkdtemp(prefix="lakectl-postgres-", dir="/tmp" if os.geteuid() == 0 else None))
    os.chmod(root, 0o755)
    try:
        server = start(root / "pg")
        try:
            yield server
        finally:
            stop(root / "pg")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_db(postgres: PostgresServer) -> PostgresServer:
    """A new, empty database on the session's server."""
    return create_database(postgres, f"t_{uuid.uuid4().hex[:12]}")
