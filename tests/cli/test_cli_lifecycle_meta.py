"""lakectl tag / rollback / files / remove-orphan-files through CliRunner on real tables:
JSON output, exit codes and one-line errors on stderr."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner, Result

from core.ops.create import create
from core.table import Table
from lakectl.app import app

runner = CliRunner()


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """db.t with three snapshots of rows id=1, 1..2, 1..3."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id INT NOT NULL, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "1", "write-only": "true"})
    for i in (1, 2, 3):
        t.write(pa.table({"id": pa.array([i], pa.int32()), "dt": ["x" if i < 3 else "y"]}))
    return t


def cli(tmp_path: Path, *args: str) -> Result:
    return runner.invoke(app, ["-w", str(tmp_path / "wh"), *args])


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout)


def error(result: Result, code: int, fragment: str) -> None:
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.stderr
    assert result.stdout == ""


def ids(t: Table) -> list[int]:
    return t.snapshots.list_ids()


def test_tag_create_list_delete(tmp_path: Path, table: Table) -> None:
    made = ok_json(cli(tmp_path, "tag", "create", "db.t", "v1", "--snapshot-id", "1", "--time-retained", "7d",
                       "-f", "json"))
    assert (made["table"], made["branch"], made["tag"], made["snapshot_id"], made["time_retained"], made["record_count"]) \
        == ("db.t", "main", "v1", 1, 604800, 1)
    latest = ok_json(cli(tmp_path, "tag", "create", "db.t", "now", "-f", "json"))
    assert latest["snapshot_id"] == 3 and latest["time_retained"] is None
    listed = ok_json(cli(tmp_path, "tag", "list", "db.t", "-f", "json"))
    assert [(r["tag"], r["snapshot_id"]) for r in listed] == [("now", 3), ("v1", 1)]
    assert set(listed[0]) == {"table", "branch", "tag", "snapshot_id", "schema_id", "commit_time", "create_time", "time_retained",
                              "record_count"}
    scanned = ok_json(cli(tmp_path, "scan", "db.t", "--tag", "v1", "-f", "json"))
    assert scanned == [{"id": 1, "dt": "x"}]
    assert ok_json(cli(tmp_path, "tag", "delete", "db.t", "v1", "-f", "json"))["tag"] == "v1"
    assert [r["tag"] for r in ok_json(cli(tmp_path, "tag", "list", "db.t", "-f", "json"))] == ["now"]
    assert cli(tmp_path, "tag", "list", "db.t").exit_code == 0  # rich table smoke test


def test_tag_errors(tmp_path: Path, table: Table) -> None:
    assert cli(tmp_path, "tag", "create", "db.t", "v1").exit_code == 0
    error(cli(tmp_path, "tag", "create", "db.t", "v1"), 1, "already exists")
    error(cli(tmp_path, "tag", "create", "db.t", "v9", "--snapshot-id", "9"), 3, "snapshot 9")
    error(cli(tmp_path, "tag", "create", "db.t", "a/b"), 2, "tag name")
    error(cli(tmp_path, "tag", "create", "db.t", "v2", "--time-retained", "forever"), 2, "--time-retained")
    error(cli(tmp_path, "tag", "delete", "db.t", "nope"), 3, "tag nope")
    error(cli(tmp_path, "tag", "list", "db.missing"), 3, "does not exist")
    assert cli(tmp_path, "tag").exit_code == 2  # no subcommand: usage


def test_rollback(tmp_path: Path, table: Table) -> None:
    assert cli(tmp_path, "tag", "create", "db.t", "late", "--snapshot-id", "3").exit_code == 0
    assert cli(tmp_path, "tag", "create", "db.t", "early", "--snapshot-id", "1").exit_code == 0
    preview = ok_json(cli(tmp_path, "rollback", "db.t", "--snapshot-id", "1", "--dry-run", "-f", "json"))
    assert preview == {"table": "db.t", "branch": "main", "target_snapshot_id": 1, "snapshots_removed": [3, 2],
                       "tags_removed": ["late"], "dry_run": True, "as_latest": False, "new_snapshot_id": None}
    assert ids(table) == [1, 2, 3]
    error(cli(tmp_path, "rollback", "db.t", "--snapshot-id", "1", "--if-latest", "2"), 4, "latest snapshot is 3")
    error(cli(tmp_path, "rollback", "db.t", "--snapshot-id", "7"), 3, "snapshot 7 does not exist: the latest snapshot is 3")
    error(cli(tmp_path, "rollback", "db.t"), 2, "exactly one of --snapshot-id, --timestamp or --tag")
    error(cli(tmp_path, "rollback", "db.t", "--tag", "nope"), 3, "tag nope")
    done = ok_json(cli(tmp_path, "rollback", "db.t", "--snapshot-id", "2", "--if-latest", "3", "-f", "json"))
    assert done["snapshots_removed"] == [3] and done["tags_removed"] == ["late"] and not done["dry_run"]
    assert ok_json(cli(tmp_path, "scan", "db.t", "-f", "json")) == [{"id": 1, "dt": "x"}, {"id": 2, "dt": "x"}]
    done = ok_json(cli(tmp_path, "rollback", "db.t", "--tag", "early", "-f", "json"))
    assert done["target_snapshot_id"] == 1 and ids(table) == [1]
    assert cli(tmp_path, "write", "db.t", "--input", _csv(tmp_path)).exit_code == 0  # snapshot 2 again
    Path(table.snapshots.path(1)).unlink()  # as if expired; the tag still has it
    error(cli(tmp_path, "rollback", "db.t", "--snapshot-id", "1"), 3, "snapshot 1")
    assert ok_json(cli(tmp_path, "rollback", "db.t", "--tag", "early", "-f", "json"))["snapshots_removed"] == [2]
    assert ids(table) == [1]
    assert ok_json(cli(tmp_path, "scan", "db.t", "-f", "json")) == [{"id": 1, "dt": "x"}]


def _csv(tmp_path: Path) -> str:
    path = tmp_path / "in.csv"
    path.write_text("id,dt\n9,x\n")
    return str(path)


def test_files(tmp_path: Path, table: Table) -> None:
    files = ok_json(cli(tmp_path, "files", "db.t", "-f", "json"))
    assert sorted((f["partition"]["dt"], f["record_count"]) for f in files) == [("x", 1), ("x", 1), ("y", 1)]
    assert set(files[0]) == {"table", "branch", "partition", "bucket", "level", "record_count", "file_size_in_bytes",
                             "min_sequence_number", "max_sequence_number", "schema_id", "file_name",
                             "deleted_record_count"}
    for f in files:
        assert (tmp_path / "wh" / "db.db" / "t" / f"dt={f['partition']['dt']}" / f"bucket-{f['bucket']}"
                / f["file_name"]).stat().st_size == f["file_size_in_bytes"]
    assert len(ok_json(cli(tmp_path, "files", "db.t", "--snapshot-id", "1", "-f", "json"))) == 1
    error(cli(tmp_path, "files", "db.t", "--snapshot-id", "8"), 3, "snapshot 8")
    lines = cli(tmp_path, "files", "db.t", "-f", "csv").stdout.splitlines()
    assert lines[0].startswith("table,branch,partition,bucket,level") and len(lines) == 4


def test_remove_orphan_files(tmp_path: Path, table: Table) -> None:
    assert cli(tmp_path, "rollback", "db.t", "--snapshot-id", "1").exit_code == 0
    old = time.time() - 3 * 86400
    for p in Path(table.path).rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))
    preview = ok_json(cli(tmp_path, "remove-orphan-files", "db.t", "--dry-run", "-f", "json"))
    # snapshots 2 and 3: one data file, one manifest and two manifest lists each
    assert preview["dry_run"] and preview["files_deleted"] == 8 == len(preview["paths"])
    assert preview["bytes_deleted"] > 0
    assert all(Path(p).exists() for p in preview["paths"])
    done = ok_json(cli(tmp_path, "remove-orphan-files", "db.t", "-f", "json"))
    assert done["files_deleted"] == 8 and not done["dry_run"] and done["older_than"] == 86400
    assert not any(Path(p).exists() for p in done["paths"])
    assert not (Path(table.path) / "dt=y").exists()
    assert ok_json(cli(tmp_path, "scan", "db.t", "-f", "json")) == [{"id": 1, "dt": "x"}]
    again = ok_json(cli(tmp_path, "remove-orphan-files", "db.t", "--older-than", "1h", "-f", "json"))
    assert again["files_deleted"] == 0
    error(cli(tmp_path, "remove-orphan-files", "db.t", "--older-than", "old"), 2, "--older-than")
    error(cli(tmp_path, "remove-orphan-files", "db.nope"), 3, "does not exist")


def test_help(tmp_path: Path) -> None:
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0
    for command in ("tag", "rollback", "files", "remove-orphan-files"):
        assert command in top.stdout
    for args in (["tag", "create"], ["tag", "delete"], ["tag", "list"], ["rollback"], ["files"],
                 ["remove-orphan-files"]):
        sub = runner.invoke(app, [*args, "--help"])
        assert sub.exit_code == 0 and "--warehouse" in sub.stdout and "--format" in sub.stdout, args
