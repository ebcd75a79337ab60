"""Every lakectl command on an s3:// warehouse (a real SeaweedFS that checks signatures), with
the endpoint, region, credentials and path-style addressing from ``LAKECTL_S3_*`` variables,
from the ``[s3]`` table of the TOML config, or from the standard AWS variables; and the
credentials never show: not in any command's output or log (run with -vv), not in an error
message, not in any file of the table."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

import core.fileio as fileio
from core.table import Table
from lakectl.app import app

pytestmark = pytest.mark.s3

runner = CliRunner()
OLD, NEW = "2020-01-01", "2999-01-01"  # partitions: one long expired, one far in the future


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No LAKECTL_*/AWS_* variables or user files; and the S3 defaults the CLI configures for its
    process do not outlive the test."""
    import os

    for var in list(os.environ):
        if var.startswith(("LAKECTL_", "AWS_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "home" / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "home" / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fileio, "_DEFAULT_OPTIONS", {})


def _sources(s3, tmp_path: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """(extra global flags, environment) for each way of giving lakectl the S3 settings."""
    config = tmp_path / "lakectl.toml"
    config.write_text(f"""
[s3]
endpoint = "{s3.endpoint}"
region = "{s3.region}"
access-key-id = "{s3.access_key}"
secret-access-key = "{s3.secret_key}"
path-style = true
""")
    return {
        "lakectl-env": ([], s3.env()),
        "toml": (["--config", str(config)], {}),
        "aws-env": ([], {"AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
                         "AWS_ENDPOINT_URL": s3.endpoint, "AWS_DEFAULT_REGION": s3.region}),
    }


class Cli:
    """Runs lakectl -vv with one source of settings; remembers every byte it printed."""

    def __init__(self, flags: list[str], env: dict[str, str], warehouse: str) -> None:
        self.flags, self.env, self.warehouse = flags, env, warehouse
        self.printed: list[str] = []

    def invoke(self, *args: Any, input: str | None = None) -> Result:
        argv = ["-vv", *self.flags, "--warehouse", self.warehouse, *map(str, args)]
        result = runner.invoke(app, argv, env=self.env, input=input, catch_exceptions=False)
        self.printed += [f"$ lakectl {' '.join(argv)}", result.stdout, result.stderr]
        return result

    def ok(self, *args: Any) -> Result:
        result = self.invoke(*args)
        assert result.exit_code == 0, f"lakectl {args} exited {result.exit_code}\n{result.stdout}\n{result.stderr}"
        return result

    def json(self, *args: Any) -> Any:
        return json.loads(self.ok("--format", "json", *args).stdout)


def _rows(cli: Cli, *args: Any) -> list[tuple]:
    return sorted((r["id"], r["v"], r["dt"]) for r in cli.json("scan", "db.orders", *args))


def _write(cli: Cli, tmp_path: Path, rows: list[tuple[int, str, str]], *extra: str) -> dict:
    path = tmp_path / f"in-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text("".join(json.dumps({"id": i, "v": v, "dt": d}) + "\n" for i, v, d in rows))
    return cli.json("write", "db.orders", "-i", path, *extra)


def every_command(cli: Cli, tmp_path: Path) -> None:
    """create, write, scan (to stdout and to a file, time travel), snapshots, files, describe,
    list, tag, compact, alter-schema, schemas, rollback, expire, expire-partitions,
    remove-orphan-files: each checked against what the test wrote."""
    cli.ok("create", "db.orders", "-s", "id BIGINT, v STRING, dt STRING", "--primary-key", "id,dt",
           "--partition-by", "dt", "-o", "bucket=2", "-o", "snapshot.num-retained.min=1")
    first = [(1, "a", OLD), (2, "b", OLD), (3, "c", NEW)]
    assert _write(cli, tmp_path, first)["snapshot_id"] == 1
    assert _write(cli, tmp_path, [(1, "a2", OLD), (4, "d", NEW)])["snapshot_id"] == 2
    model = {(1, "a2", OLD), (2, "b", OLD), (3, "c", NEW), (4, "d", NEW)}
    assert _rows(cli) == sorted(model)
    assert _rows(cli, "--snapshot-id", "1") == sorted(first)
    cli.ok("scan", "db.orders", "-O", tmp_path / "out.parquet")
    assert pq.read_table(tmp_path / "out.parquet").num_rows == 4

    assert [s["snapshot_id"] for s in cli.json("snapshots", "db.orders")] == [2, 1]
    files = cli.json("files", "db.orders")
    assert sum(f["record_count"] for f in files) == 5 and {f["bucket"] for f in files} <= {0, 1}
    assert "s3://" in json.dumps(cli.json("describe", "db.orders"))
    assert cli.json("list") == [{"database": "db", "table": None}]
    assert cli.json("list", "db") == [{"database": "db", "table": "orders"}]

    cli.ok("tag", "create", "db.orders", "t1", "--snapshot-id", "1")
    assert [t["tag"] for t in cli.json("tag", "list", "db.orders")] == ["t1"]
    assert cli.json("compact", "db.orders", "--full")["snapshot_id"] == 3
    cli.ok("alter-schema", "db.orders", "--add-column", "note STRING")
    assert len(cli.json("schemas", "db.orders")) == 2
    assert _write(cli, tmp_path, [(5, "e", NEW)])["snapshot_id"] == 4
    cli.ok("rollback", "db.orders", "--snapshot-id", "3")
    assert _rows(cli) == sorted(model)
    assert _rows(cli, "--tag", "t1") == sorted(first)

    expired = cli.json("expire", "db.orders", "--retain-max", "1", "--retain-min", "1")
    assert expired["snapshots_expired"] == [1, 2]
    assert _rows(cli, "--tag", "t1") == sorted(first)  # the tag pins snapshot 1's files
    dropped = cli.json("expire-partitions", "db.orders", "--expiration-time", "1d")
    assert dropped["partitions"] == [{"dt": OLD}] and dropped["snapshot_id"] == 4
    model = {r for r in model if r[2] == NEW}
    assert _rows(cli) == sorted(model)
    cli.ok("tag", "delete", "db.orders", "t1")
    orphans = cli.json("remove-orphan-files", "db.orders", "--older-than", "1ms", "--force")
    assert orphans["files_deleted"] >= 1, "the rolled-back snapshot 4's files are orphans"
    assert _rows(cli) == sorted(model)
    picked = cli.json("scan", "db.orders", "--snapshot-id", "3", "--select", "id", "--where", "id > 2")
    assert sorted(r["id"] for r in picked) == [3, 4]


def _stored_bytes(s3, warehouse: str) -> dict[str, bytes]:
    fs = s3.fs()
    root = warehouse.split("://", 1)[1]
    return {path: fs.cat_file(path) for path in fs.find(root)}


def _assert_no_credentials(s3, texts: list[str], files: dict[str, bytes]) -> None:
    secrets = [s3.secret_key]
    for secret in secrets:
        leaked = [t[:200] for t in texts if secret in t]
        assert not leaked, f"the secret was printed: {leaked}"
        in_files = [p for p, data in files.items() if secret.encode() in data]
        assert not in_files, f"the secret is stored in {in_files}"


def a_few_commands(cli: Cli, tmp_path: Path) -> None:
    cli.ok("create", "db.orders", "-s", "id BIGINT, v STRING, dt STRING", "--primary-key", "id,dt",
           "--partition-by", "dt")
    _write(cli, tmp_path, [(3, "c", NEW)])
    _write(cli, tmp_path, [(4, "d", NEW)])
    assert cli.json("compact", "db.orders", "--full")["snapshot_id"] == 3
    assert _rows(cli) == [(3, "c", NEW), (4, "d", NEW)]


@pytest.mark.parametrize("source", ["lakectl-env", "toml", "aws-env"])
def test_every_command_on_s3(s3, tmp_path: Path, source: str) -> None:
    """Every command with the LAKECTL_S3_* variables; create, write, compact and scan with the
    other two sources (the server refuses requests signed with anything else)."""
    flags, env = _sources(s3, tmp_path)[source]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    (every_command if source == "lakectl-env" else a_few_commands)(cli, tmp_path)
    for fmt in ("table", "json"):  # the settings report names the secret's source, never its value
        assert "secret-access-key" in cli.ok("config", "show", "--format", fmt).stdout
    files = _stored_bytes(s3, warehouse)
    assert any("/snapshot/snapshot-" in p for p in files) and any("/data-" in p for p in files)
    _assert_no_credentials(s3, cli.printed, files)
    debug = "\n".join(cli.printed)
    assert "DEBUG" in debug or "INFO" in debug, "-vv logs"
    # the table is a plain s3:// table: the Python API reads it with explicit options
    t = Table.open("db.orders", warehouse=warehouse, storage_options=s3.storage_options())
    assert sorted(t.scan().column("id").to_pylist()) == [3, 4]


def test_errors_never_print_credentials(s3, tmp_path: Path) -> None:
    """Failures at -vv (tracebacks included): a wrong secret, a missing bucket (exit 9), a missing
    table, a store without conditional puts and no lock file."""
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    cli.ok("create", "db.t", "-s", "id BIGINT")

    wrong = Cli(flags, {**env, "LAKECTL_S3_SECRET_ACCESS_KEY": "not-the-secret-" + uuid.uuid4().hex}, warehouse)
    denied = wrong.invoke("scan", "db.t")
    assert denied.exit_code != 0 and "error:" in denied.stderr
    assert "not-the-secret-" not in denied.stdout + denied.stderr
    cli.printed += wrong.printed

    missing = cli.invoke("scan", "db.nope")
    assert missing.exit_code == 3
    no_bucket = Cli(flags, env, f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/wh")
    gone = no_bucket.invoke("scan", "db.t")
    assert gone.exit_code == 9 and "error: bucket no-such-bucket-" in gone.stderr
    cli.printed += no_bucket.printed

    unsafe = Cli(flags, {**env, "LAKECTL_S3_CONDITIONAL_PUT": "false"}, warehouse)
    refused = unsafe.invoke("write", "db.t", "-i", "-", "--input-format", "jsonl", input='{"id": 1}\n')
    assert refused.exit_code == 2 and "lock" in refused.stderr and "no conditional put" in refused.stderr
    stored = _stored_bytes(s3, warehouse)
    assert not [p for p in stored if "/snapshot/" in p or "/manifest/" in p], "a refused commit wrote metadata"
    cli.printed += unsafe.printed
    locked = Cli(flags, {**env, "LAKECTL_S3_CONDITIONAL_PUT": "false",
                         "LAKECTL_S3_LOCK_FILE": str(tmp_path / "commit.lock")}, warehouse)
    assert locked.invoke("write", "db.t", "-i", "-", "--input-format", "jsonl", input='{"id": 1}\n').exit_code == 0
    cli.printed += locked.printed
    _assert_no_credentials(s3, cli.printed, _stored_bytes(s3, warehouse))


class _Stop(Exception):
    pass


@pytest.mark.parametrize("path_style", ["true", "false"])
def test_path_style_setting_reaches_the_s3_client(monkeypatch: pytest.MonkeyPatch, path_style: str) -> None:
    """``path-style`` decides the request URL: https://host/bucket/key rather than
    https://bucket.host/key (botocore's default for AWS itself; for a custom endpoint it picks
    path style anyway). The request is stopped before it leaves, and its URL read."""
    from lakectl.config import Settings

    monkeypatch.setenv("LAKECTL_S3_REGION", "eu-west-1")
    monkeypatch.setenv("LAKECTL_S3_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("LAKECTL_S3_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("LAKECTL_S3_PATH_STYLE", path_style)
    warehouse = Settings().resolve_warehouse("s3://lakectl/wh")
    io = Table.locate("db.t", warehouse=warehouse).file_io
    io.fs.connect()
    urls: list[str] = []

    def capture(request: Any, **_: Any) -> None:
        urls.append(request.url)
        raise _Stop

    io.fs.s3.meta.events.register("before-send.s3", capture)
    with pytest.raises(Exception):
        io.read_bytes("s3://lakectl/wh/db.db/t/snapshot/LATEST")
    expected = ("https://s3.eu-west-1.amazonaws.com/lakectl/wh/" if path_style == "true"
                else "https://lakectl.s3.eu-west-1.amazonaws.com/wh/")
    assert urls and urls[0].startswith(expected), urls


def test_a_table_named_by_its_s3_uri(s3, tmp_path: Path) -> None:
    """`lakectl scan s3://bucket/wh/db.db/t` uses the configured S3 settings too."""
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    cli = Cli(flags, env, s3.warehouse())
    cli.ok("create", "db.t", "-s", "id BIGINT")
    uri = f"{cli.warehouse}/db.db/t"
    assert cli.json("snapshots", uri) == []
    assert cli.invoke("write", uri, "-i", "-", "--input-format", "jsonl", input='{"id": 7}\n').exit_code == 0
    assert cli.json("scan", uri) == [{"id": 7}]


def test_the_api_opens_a_table_by_uri_with_its_storage_options(s3) -> None:
    options = s3.storage_options()
    t = Table.locate("db.t", warehouse=s3.warehouse(), storage_options=options)
    from core.ops.create import create

    create(t, "id BIGINT")
    by_uri = Table.open(t.path, storage_options=options)
    assert by_uri.snapshots.list_ids() == []
