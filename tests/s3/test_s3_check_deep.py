"""check --deep on an s3:// warehouse (a real SeaweedFS): the files are read through FileIO,
a sound table of several kinds passes, and a data file damaged in place at its size (an
object overwritten with other bytes of the same length) is named."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from test_s3_commands import Cli, _sources, isolated  # noqa: F401 - the autouse fixture

pytestmark = pytest.mark.s3


def _write(cli: Cli, tmp_path: Path, table: str, rows: list[tuple[int, str]]) -> None:
    path = tmp_path / f"in-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text("".join(json.dumps({"id": i, "dt": d}) + "\n" for i, d in rows))
    cli.json("write", table, "-i", path)


def test_check_deep_on_s3(s3, tmp_path: Path) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    warehouse = s3.warehouse()
    cli = Cli(flags, env, warehouse)
    cli.ok("create", "db.keyed", "-s", "id BIGINT, dt STRING", "--primary-key", "id,dt", "--partition-by", "dt")
    cli.ok("create", "db.plain", "-s", "id BIGINT, dt STRING", "-o", "file.format=orc")
    for table in ("db.keyed", "db.plain"):
        _write(cli, tmp_path, table, [(1, "a"), (2, "b"), (3, "a")])
        _write(cli, tmp_path, table, [(1, "a"), (4, "b")])
        body = cli.json("check", table, "--deep")
        assert body["ok"] and body["files_read"] >= 2, body

    fs = s3.fs()
    (target,) = [p for p in fs.find(f"{warehouse.split('://', 1)[1]}/db.db/plain") if "/data-" in p][:1]
    data = bytearray(fs.cat_file(target))
    middle = len(data) // 3  # inside the stripe's data streams (its first bytes are an index a read skips)
    data[middle:middle + 64] = bytes(b ^ 0xFF for b in data[middle:middle + 64])
    fs.pipe_file(target, bytes(data))

    assert cli.json("check", "db.plain")["ok"]  # the sizes are right
    deep = cli.invoke("check", "db.plain", "--deep", "--format", "json")
    assert deep.exit_code == 1
    problems = json.loads(deep.stdout)["problems"]
    assert [(p["kind"], p["path"]) for p in problems] == [("data-file", f"s3://{target}")]
