"""Test-side access to the REST catalog servers and to pypaimon 2.1's REST client.

- ``mock_server``: pypaimon 1.4.1's mock ``RESTCatalogServer`` (``tests/rest/launch_mock.py``)
  in its own virtualenv (``make rest-oracle``; ``LAKECTL_REST_PYTHON`` or ``.venv-rest``), as
  a subprocess on 127.0.0.1 with its own data directory and bearer token.
- ``spec_server``: our own minimal server of the calls the mock lacks (``spec_server.py``),
  likewise a subprocess.
- ``pypaimon_read`` / ``pypaimon_write``: pypaimon 2.1's ``RESTCatalog`` in the oracle venv.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa

REPO_ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO_ROOT / "tests" / "interop"))

from oracle import oracle_python  # noqa: E402
from tests.venvs import venv_python  # noqa: E402

_TIMEOUT_SECONDS = 300


def rest_python() -> str:
    """The REST mock's python (``LAKECTL_REST_PYTHON`` or ``.venv-rest``)."""
    return venv_python("LAKECTL_REST_PYTHON", ".venv-rest", "rest-oracle", "REST mock")


@dataclass(frozen=True)
class Server:
    uri: str
    warehouse: str
    token: str
    data: Path
    prefix: str | None

    def options(self, **extra: str) -> dict[str, str]:
        return {"uri": self.uri, "token.provider": "bear", "token": self.token, **extra}

    def cli_env(self) -> dict[str, str]:
        """The environment that points the lakectl console script at this server."""
        return {"LAKECTL_CATALOG_METASTORE": "rest", "LAKECTL_CATALOG_URI": self.uri,
                "LAKECTL_CATALOG_WAREHOUSE": self.warehouse, "LAKECTL_CATALOG_TOKEN_PROVIDER": "bear",
                "LAKECTL_CATALOG_TOKEN": self.token}


@contextmanager
def _serve(cmd: list[str], token: str, data: Path) -> Iterator[Server]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line:
            proc.wait(timeout=10)
            raise RuntimeError(f"REST server did not start: {' '.join(cmd)}\n{proc.stderr.read() if proc.stderr else ''}")
        info = json.loads(line)
        yield Server(info["uri"], info["warehouse"], token, data, info.get("prefix"))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@contextmanager
def mock_server(data: Path, *, token: str = "lakectl-test-token", warehouse: str = "wh") -> Iterator[Server]:
    with _serve([rest_python(), str(HERE / "launch_mock.py"), "--data", str(data), "--warehouse", warehouse,
                 "--token", token], token, data) as server:
        yield server


@contextmanager
def spec_server(data: Path, *, token: str = "lakectl-test-token", warehouse: str = "wh", s3=None,
                s3_warehouse: str | None = None, token_style: str = "paimon",
                token_options: dict[str, str] | None = None) -> Iterator[Server]:
    """Our own server, on lakectl's python (it imports nothing of lakectl or pypaimon). With
    ``s3`` (tests/s3/s3server.py's S3Server) and ``s3_warehouse`` (``s3://BUCKET/PREFIX``) it
    places new tables there and hands out the server's credentials as their data token (under
    Paimon's key names, or ``token_style="hadoop"``: S3A's), with ``token_options`` added."""
    cmd = [sys.executable, str(HERE / "spec_server.py"), "--data", str(data), "--warehouse", warehouse,
           "--token", token]
    if s3 is not None:
        cmd += ["--s3-warehouse", s3_warehouse or s3.warehouse(), "--s3-endpoint", s3.endpoint,
                "--s3-access-key", s3.access_key, "--s3-secret-key", s3.secret_key, "--s3-region", s3.region, "--token-style", token_style]
        cmd += [arg for k, v in (token_options or {}).items() for arg in ("--token-option", f"{k}={v}")]
    with _serve(cmd, token, data) as server:
        yield server


def _pypaimon(action: str, server: Server, table: str, file: Path, *extra: str,
              env: dict[str, str] | None = None) -> dict:
    cmd = [oracle_python(), str(HERE / "pypaimon_rest.py"), action, server.uri, server.warehouse, server.token,
           table, str(file), *extra]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False, env=env)
    assert result.returncode == 0, f"pypaimon {action} failed: {' '.join(cmd)}\n{result.stderr}\n{result.stdout}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def pypaimon_read(server: Server, table: str, tmp: Path, *, catalog_options: dict[str, str] | None = None,
                  env: dict[str, str] | None = None) -> tuple[list[dict], dict]:
    """pypaimon's rows of the table (``catalog_options`` added to its catalog's; ``env``: the
    subprocess's whole environment, else this one's)."""
    out = tmp / f"pypaimon-read-{len(list(tmp.glob('pypaimon-read-*')))}.arrow"
    extra = [arg for k, v in (catalog_options or {}).items() for arg in ("--catalog-option", f"{k}={v}")]
    meta = _pypaimon("read", server, table, out, *extra, env=env)
    with pa.memory_map(str(out)) as source:
        return pa.ipc.open_file(source).read_all().to_pylist(), meta


def pypaimon_write(server: Server, table: str, data: pa.Table, tmp: Path, *, create: bool = False,
                   primary_key: list[str] | None = None, partition_key: list[str] | None = None,
                   options: dict[str, str] | None = None) -> dict:
    file = tmp / f"pypaimon-write-{len(list(tmp.glob('pypaimon-write-*')))}.arrow"
    with pa.OSFile(str(file), "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
        writer.write_table(data)
    extra = []
    if create:
        extra.append("--create")
        if primary_key:
            extra += ["--primary-key", ",".join(primary_key)]
        if partition_key:
            extra += ["--partition-key", ",".join(partition_key)]
        for k, v in (options or {}).items():
            extra += ["--option", f"{k}={v}"]
    return _pypaimon("write", server, table, file, *extra)
