"""S3 setup mistakes, as a user meets them in a shell: each is one `error:` line saying what is
wrong, with its own exit code (README "Exit codes"), never an `internal error` or a traceback.
Run through the console script (`python -m lakectl`) against the SeaweedFS server on loopback,
which checks signatures; the unreachable endpoint is a closed port on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.s3

REPO = Path(__file__).resolve().parents[2]


def _lakectl(tmp_path: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """lakectl in a clean environment: no LAKECTL_*/AWS_* variables, no user files, only ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAKECTL_", "AWS_")) and k != "PYTHONPATH"}
    home = tmp_path / "home"
    base = {"PYTHONPATH": str(REPO), "HOME": str(home), "AWS_CONFIG_FILE": str(home / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"), "AWS_EC2_METADATA_DISABLED": "true"}
    return subprocess.run([sys.executable, "-m", "lakectl", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**clean, **base, **env})


def _settings(s3, **override: str) -> dict[str, str]:
    return {**s3.env(), **override}


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "internal error" not in lines[0] and "Traceback" not in result.stderr
    return lines[0]


def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def table(s3, tmp_path: Path) -> str:
    """A warehouse in the test bucket holding db.t, made with good settings."""
    warehouse = s3.warehouse()
    made = _lakectl(tmp_path, ["-w", warehouse, "create", "db.t", "-s", "id BIGINT"], s3.env())
    assert made.returncode == 0, made.stderr
    return warehouse


def test_missing_credentials(s3, table: str, tmp_path: Path) -> None:
    env = {k: v for k, v in s3.env().items() if "ACCESS_KEY" not in k}
    result = _lakectl(tmp_path, ["-w", table, "scan", "db.t"], env)
    assert result.returncode == 6
    line = _one_error_line(result)
    assert "no S3 credentials" in line and "s3.access-key-id" in line


@pytest.mark.parametrize("key,secret,code", [("lakectl-test", "not-the-secret", "SignatureDoesNotMatch"),
                                             ("nobody", "whatever", "InvalidAccessKeyId")])
def test_refused_credentials(s3, table: str, tmp_path: Path, key: str, secret: str, code: str) -> None:
    env = _settings(s3, LAKECTL_S3_ACCESS_KEY_ID=key, LAKECTL_S3_SECRET_ACCESS_KEY=secret)
    for args in (["scan", "db.t"], ["list"], ["snapshots", "db.t"]):
        result = _lakectl(tmp_path, ["-w", table, *args], env)
        assert result.returncode == 7, (args, result.stderr)
        line = _one_error_line(result)
        assert line.startswith("error: S3 refused the request") and code in line
        assert secret not in result.stderr


def test_unreachable_endpoint(s3, tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    for extra in ({}, {"LAKECTL_S3_CONNECT_TIMEOUT": "1", "LAKECTL_S3_RETRIES": "0"}):
        env = _settings(s3, LAKECTL_S3_ENDPOINT=endpoint, **extra)
        result = _lakectl(tmp_path, ["-w", f"s3://{s3.bucket}/wh", "scan", "db.t"], env)
        assert result.returncode == 8, result.stderr
        line = _one_error_line(result)
        assert f"cannot reach the S3 endpoint {endpoint}" in line


def test_connect_settings_must_be_numbers(s3, tmp_path: Path) -> None:
    for var, value in (("LAKECTL_S3_CONNECT_TIMEOUT", "soon"), ("LAKECTL_S3_RETRIES", "-1")):
        result = _lakectl(tmp_path, ["-w", f"s3://{s3.bucket}/wh", "list"], _settings(s3, **{var: value}))
        assert result.returncode == 2, result.stderr
        assert value in _one_error_line(result)


def test_missing_bucket(s3, tmp_path: Path) -> None:
    bucket = f"absent-{uuid.uuid4().hex[:10]}"
    for args in (["scan", "db.t"], ["list"], ["snapshots", "db.t"], ["describe", "db.t"]):
        result = _lakectl(tmp_path, ["-w", f"s3://{bucket}/wh", *args], s3.env())
        assert result.returncode == 9, (args, result.stderr)
        line = _one_error_line(result)
        assert line.startswith(f"error: bucket {bucket} does not exist"), line
    assert not s3.fs().exists(bucket)


def test_missing_table_in_existing_bucket_is_still_not_found(s3, table: str, tmp_path: Path) -> None:
    result = _lakectl(tmp_path, ["-w", table, "scan", "db.other"], s3.env())
    assert result.returncode == 3
    assert "table db.other does not exist" in _one_error_line(result)


def test_access_denied_to_valid_credentials_names_the_object(s3, table: str, tmp_path: Path) -> None:
    """A key that may only read: reads work, a write is refused (exit 7) naming what it could not
    write, and nothing is committed."""
    from s3server import READER_KEY, READER_SECRET

    env = _settings(s3, LAKECTL_S3_ACCESS_KEY_ID=READER_KEY, LAKECTL_S3_SECRET_ACCESS_KEY=READER_SECRET)
    assert _lakectl(tmp_path, ["-w", table, "snapshots", "db.t"], env).returncode == 0
    data = tmp_path / "rows.csv"
    data.write_text("id\n1\n")
    result = _lakectl(tmp_path, ["-w", table, "write", "db.t", "-i", str(data)], env)
    assert result.returncode == 7, result.stderr
    line = _one_error_line(result)
    assert line.startswith(f"error: storage: access denied at {table}/db.db/t/") and "AccessDenied" in line, line
    assert READER_SECRET not in result.stderr
    scanned = _lakectl(tmp_path, ["-w", table, "scan", "db.t", "-f", "json"], s3.env())
    assert scanned.returncode == 0 and scanned.stdout.strip() in ("", "[]"), scanned.stdout
