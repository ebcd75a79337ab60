"""Automatic tags on an s3:// warehouse (a real SeaweedFS): process-time and batch mode tags
as on local disk (batch mode's retention orders tags of one snapshot by the objects' times)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

import pytest
from test_s3_commands import Cli, _sources, isolated  # noqa: F401 - the autouse fixture

pytestmark = pytest.mark.s3


def _write(cli: Cli, tmp_path: Path, table: str, rows: list[int]) -> dict:
    path = tmp_path / f"in-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text("".join(json.dumps({"id": i}) + "\n" for i in rows))
    return cli.json("write", table, "-i", path)


def test_automatic_tags_on_s3(s3, tmp_path: Path) -> None:
    flags, env = _sources(s3, tmp_path)["lakectl-env"]
    cli = Cli(flags, env, s3.warehouse())
    cli.ok("create", "db.p", "-s", "id BIGINT", "-o", "tag.automatic-creation=process-time",
           "-o", "tag.creation-period=hourly")
    cli.ok("create", "db.b", "-s", "id BIGINT", "-o", "tag.automatic-creation=batch", "-o", "tag.num-retained-max=1")
    first = _write(cli, tmp_path, "db.p", [1])
    assert first["maintenance"] == ["tags"]
    listed = cli.json("tag", "list", "db.p")
    commit = dt.datetime.fromisoformat(listed[0]["commit_time"]).astimezone().replace(tzinfo=None)
    assert [(t["tag"], t["snapshot_id"]) for t in listed] == \
        [((commit - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H"), 1)]

    _write(cli, tmp_path, "db.b", [1])
    cli.ok("tag", "create", "db.b", "manual", "--snapshot-id", "1")
    _write(cli, tmp_path, "db.b", [2])  # the day's tag moves to s2; max 1: the manual tag (s1) goes
    listed = cli.json("tag", "list", "db.b")
    day = dt.datetime.fromisoformat(listed[0]["commit_time"]).astimezone().strftime("%Y-%m-%d")
    assert [(t["tag"], t["snapshot_id"]) for t in listed] == [(f"batch-write-{day}", 2)]
