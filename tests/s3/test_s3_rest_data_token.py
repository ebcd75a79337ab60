"""A REST catalog's data token on S3 (issue 47): with ``data-token.enabled=true`` lakectl reads
and writes a table's files with the S3 credentials the server hands out (``GET .../token``),
and with nothing of its own.

Our spec server (tests/rest/spec_server.py) places the tables in the SeaweedFS bucket (which
requires its one identity, tests/s3/conftest.py) and answers the token with that identity and
the server's endpoint. The console script runs with no S3 settings and wrong AWS_* keys: a
create, writes, a compaction and scans agree with a model of the rows and leave their files on
S3, and pypaimon 2.1's RESTCatalog reads them with the token too; with the token switched off
the same scan is refused for want of credentials."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rest"))

from rest_kit import Server, pypaimon_read, spec_server  # noqa: E402

pytestmark = [pytest.mark.s3, pytest.mark.rest, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
LAKECTL = Path(sys.executable).with_name("lakectl")
EXIT_NO_CREDENTIALS, EXIT_ACCESS_DENIED, EXIT_UNREACHABLE = 6, 7, 8  # lakectl/errors.py

# Keys botocore would accept, but the S3 server knows no such identity.
WRONG_KEYS = {"AWS_ACCESS_KEY_ID": "not-the-servers-key", "AWS_SECRET_ACCESS_KEY": "not-the-servers-secret"}


def bare_env(home: Path) -> dict[str, str]:
    """This environment without lakectl's settings and the machine's AWS credentials (none in
    the environment, no ~/.aws, no instance metadata)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKECTL_", "AWS_"))}
    env.update(HOME=str(home), AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=str(home / "no-aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(home / "no-aws-creds"))
    return env


def run(server: Server, home: Path, *args: Any, token: bool = True, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """The console script against the REST server, with no S3 settings (``bare_env``)."""
    if not LAKECTL.is_file():
        pytest.skip("the lakectl console script is not installed next to this python")
    base = bare_env(home)
    base.update(PYTHONPATH=str(REPO), **server.cli_env(), LAKECTL_CATALOG_DATA_TOKEN_ENABLED=str(token).lower(),
                **(env or {}))
    return subprocess.run([str(LAKECTL), "-f", "json", *map(str, args)], cwd=home, env=base, capture_output=True,
                          text=True, timeout=300)


def ok(server: Server, home: Path, *args: Any) -> Any:
    done = run(server, home, *args, env=WRONG_KEYS)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def refused(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def csv(home: Path, rows: dict[int, str], name: str) -> Path:
    path = home / name
    path.write_text("id,v\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
    return path


def scan(server: Server, home: Path, table: str) -> dict[int, str]:
    return {r["id"]: r["v"] for r in ok(server, home, "scan", table)}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def test_lakectl_works_on_s3_with_the_data_token_alone(s3, tmp_path: Path, home: Path):
    warehouse = s3.warehouse()
    with spec_server(tmp_path / "rest", s3=s3, s3_warehouse=warehouse) as server:
        name = "db.t"
        ok(server, home, "create", name, "--schema", "id BIGINT, v STRING", "--primary-key", "id", "-o", "bucket=1")
        table_dir = f"{warehouse}/db.db/t"
        fs = s3.fs()
        assert fs.exists(f"{table_dir}/schema/schema-0")  # the server wrote it on S3

        model: dict[int, str] = {}
        for n, rows in enumerate([{1: "a", 2: "b", 3: "c"}, {2: "B", 4: "d"}, {1: "A", 5: "e"}]):
            ok(server, home, "write", name, "-i", csv(home, rows, f"in-{n}.csv"))
            model.update(rows)
            assert scan(server, home, name) == model
        ok(server, home, "compact", name, "--full")
        assert scan(server, home, name) == model

        # Every file is on S3, written with the token: four snapshots the server published, and
        # the data files lakectl wrote beside them.
        assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls(f"{table_dir}/snapshot")) == \
            [f"snapshot-{i}" for i in range(1, 5)]
        assert fs.glob(f"{table_dir}/bucket-0/*.parquet")
        # pypaimon 2.1's RESTCatalog reads the rows with the same token and nothing else.
        rows, meta = pypaimon_read(server, name, tmp_path, catalog_options={"data-token.enabled": "true"},
                                   env={**bare_env(home), **WRONG_KEYS})
        assert {r["id"]: r["v"] for r in rows} == model and meta["latest_snapshot"] == 4

        # Without the token the same scan has no credentials (the endpoint given, so that only
        # the credentials are missing), or only the wrong ones.
        endpoint = {"LAKECTL_S3_ENDPOINT": s3.endpoint, "LAKECTL_S3_PATH_STYLE": "true"}
        line = refused(run(server, home, "scan", name, token=False, env=endpoint), EXIT_NO_CREDENTIALS)
        assert "credential" in line.lower()
        refused(run(server, home, "scan", name, token=False, env={**endpoint, **WRONG_KEYS}), EXIT_ACCESS_DENIED)


def _resolves(host: str) -> bool:
    try:
        socket.getaddrinfo(host, 80)
    except OSError:
        return False
    return True


def test_a_hadoop_style_token_on_a_host_name_with_path_style_access(s3, tmp_path: Path, home: Path):
    """S3A's key names (``fs.s3a.access.key``, ...) work as Paimon's do, and the token's
    ``fs.s3a.path.style.access`` reaches the client: the endpoint is a host name, and with
    path style off the bucket would be its subdomain (``lakectl.localhost``, which does not
    resolve here: the endpoint is unreachable, exit 8)."""
    by_name = s3.endpoint.replace("127.0.0.1", "localhost")
    name, rows = "db.t", {1: "a", 2: "b"}

    def serve(path_style: bool):
        extra = {"fs.s3a.endpoint": by_name, "fs.s3a.path.style.access": str(path_style).lower()}
        return spec_server(tmp_path / f"rest-{path_style}", s3=s3, token_style="hadoop", token_options=extra)

    with serve(True) as server:
        ok(server, home, "create", name, "--schema", "id BIGINT, v STRING", "--primary-key", "id", "-o", "bucket=1")
        ok(server, home, "write", name, "-i", csv(home, rows, "in.csv"))
        assert scan(server, home, name) == rows
    # Virtual-host addressing (path style false, as in S3A) sends the bucket as a subdomain.
    if not _resolves(f"{s3.bucket}.localhost"):
        with serve(False) as server:
            done = run(server, home, "create", name, "--schema", "id BIGINT, v STRING", env=WRONG_KEYS)
            assert f"http://{s3.bucket}.localhost:" in refused(done, EXIT_UNREACHABLE)
