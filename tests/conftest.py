"""Fixtures every test directory may use: a PostgreSQL server (tests/postgres.py)."""

pytest_plugins = ["tests.postgres"]
