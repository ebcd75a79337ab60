"""clone across filesystems: a local table cloned to S3 (a real SeaweedFS) and the S3 copy
cloned back to a local path read exactly as the source; the S3 copy passes check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import core.fileio as fileio
from core.ops.create import create
from core.table import Table
from lakectl.app import app

pytestmark = pytest.mark.s3

runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for var in list(os.environ):
        if var.startswith(("LAKECTL_", "AWS_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fileio, "_DEFAULT_OPTIONS", {})


def lakectl(env: dict[str, str], *args: Any) -> Any:
    result = runner.invoke(app, [*map(str, args), "--format", "json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


def test_clone_local_to_s3_and_back(s3: Any, tmp_path: Path) -> None:
    local_wh = tmp_path / "wh"
    src = Table.locate("db.pk", warehouse=str(local_wh))
    create(src, "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "deletion-vectors.enabled": "true"})
    model: dict[tuple[int, str], str] = {}
    for round_, ids in enumerate([range(10), range(0, 10, 3), range(8, 14)]):
        batch = [(i, f"r{round_}-{i}", f"d{i % 2}") for i in ids]
        src.write(pa.table({"id": pa.array([b[0] for b in batch], pa.int64()), "v": [b[1] for b in batch],
                            "dt": [b[2] for b in batch]}))
        model.update({(i, dt): v for i, v, dt in batch})
    expected = sorted([i, v, dt] for (i, dt), v in model.items())
    env = s3.env()
    s3_wh = s3.warehouse()
    out = lakectl(env, "-w", local_wh, "clone", "db.pk", f"{s3_wh}/db.db/copy")
    assert out["snapshot_id"] == src.snapshots.latest_id() and out["files_copied"] > 0
    remote = lakectl(env, "-w", s3_wh, "scan", "db.copy")
    assert sorted([r["id"], r["v"], r["dt"]] for r in remote) == expected
    assert lakectl(env, "-w", s3_wh, "check", "db.copy")["ok"] is True
    assert [s["snapshot_id"] for s in lakectl(env, "-w", s3_wh, "snapshots", "db.copy")] == [1]
    # and back to a local directory given by path
    back = tmp_path / "back" / "pk"
    lakectl(env, "-w", s3_wh, "clone", "db.copy", back)  # a bare path is local under an S3 warehouse too
    again = Table.open(str(back))
    assert sorted([r["id"], r["v"], r["dt"]] for r in again.scan().to_pylist()) == expected
    # a local table named by its path, read and cloned with the S3 warehouse as -w
    source_path = local_wh / "db.db" / "pk"
    assert sorted([r["id"], r["v"], r["dt"]] for r in lakectl(env, "-w", s3_wh, "scan", source_path)) == expected
    lakectl(env, "-w", s3_wh, "clone", source_path, "db.again")
    assert sorted([r["id"], r["v"], r["dt"]] for r in lakectl(env, "-w", s3_wh, "scan", "db.again")) == expected
    lakectl(env, "-w", s3_wh, "clone", "db.copy", f"file://{tmp_path / 'back2'}")  # file:// as before
    assert Table.open(str(tmp_path / "back2")).scan().num_rows == len(expected)
    # the S3 copy is refused as a target now that it exists
    refused = runner.invoke(app, ["-w", str(local_wh), "clone", "db.pk", f"{s3_wh}/db.db/copy"], env=env)
    assert refused.exit_code == 1 and refused.stderr.startswith("error: ")


@pytest.mark.parametrize("action", ["kill", "fail"])
def test_clone_to_s3_interrupted_before_every_mutation(s3: Any, tmp_path: Path, action: str) -> None:
    """Without a rename on S3, an interrupted clone to S3 leaves no table, or a complete one
    (the source has one schema, the clone's last write); an error removes what it wrote."""
    import os
    import signal
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from fault_lab import _run_forked

    from core.errors import LakectlError, NotFoundError
    from core.fileio import FileIO, inject_fault
    from core.ops.check import check
    from core.ops.clone import clone

    local_wh = tmp_path / "wh"
    src = Table.locate("db.t", warehouse=str(local_wh))
    create(src, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "2", "deletion-vectors.enabled": "true"})
    src.write(pa.table({"id": pa.array(range(8), pa.int64()), "v": [f"a{i}" for i in range(8)]}))
    src.write(pa.table({"id": pa.array([1, 5, 9], pa.int64()), "v": ["b1", "b5", "b9"]}))
    expected = sorted(src.scan().to_pylist(), key=lambda r: r["id"])
    options = s3.storage_options()
    wh = s3.warehouse()
    store = FileIO.for_uri(wh, options)
    states = set()
    for n in range(1, 200):
        target_uri = f"{wh}/db.db/copy{n}"

        def run() -> None:
            with inject_fault(action, "mutation", n):
                clone(Table.open("db.t", warehouse=str(local_wh)),
                      Table.locate(target_uri, warehouse=wh, storage_options=options))

        if action == "kill":
            status = _run_forked(run, 120, f"kill:mutation:{n}")
            interrupted = os.WIFSIGNALED(status)
            assert not interrupted or os.WTERMSIG(status) == signal.SIGKILL
            assert interrupted or os.WEXITSTATUS(status) == 0
        else:
            try:
                run()
                interrupted = False
            except (OSError, LakectlError):
                interrupted = True
        present = bool(store.walk(target_uri))  # objects below the prefix (SeaweedFS may keep an empty folder)
        try:
            copy = Table.open(target_uri, warehouse=wh, storage_options=options)
            state = "complete"
            assert sorted(copy.scan().to_pylist(), key=lambda r: r["id"]) == expected and check(copy).ok
        except NotFoundError:
            state = "not a table" if present else "absent"
        states.add(state)
        if action == "fail" and interrupted:
            assert state == "absent", f"n={n}: an error left {state}"
        if not interrupted:
            assert state == "complete"
            break
    else:
        raise AssertionError("clone was still interrupted after 200 mutations")
    assert sorted(src.scan().to_pylist(), key=lambda r: r["id"]) == expected
    assert "complete" in states and ("not a table" in states or action == "fail")


def test_clone_within_one_store_is_copied_by_the_store(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone into the same S3 warehouse copies objects server-side: no file is opened for
    streaming (the table and the clone are opened through FileIOs of their own, as the CLI does)."""
    from core.fileio import FileIO

    wh, options = s3.warehouse(), s3.storage_options()
    src = Table.locate("db.t", warehouse=wh, storage_options=options)
    create(src, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "2"})
    src.write(pa.table({"id": pa.array(range(6), pa.int64()), "v": [f"v{i}" for i in range(6)]}))
    expected = sorted(src.scan().to_pylist(), key=lambda r: r["id"])

    def no_streaming(self: FileIO, path: str) -> None:
        raise AssertionError(f"{path} was streamed through lakectl")

    from core.ops.clone import clone

    with monkeypatch.context() as m:
        m.setattr(FileIO, "open_input", no_streaming)
        m.setattr(FileIO, "open_output", no_streaming)
        result = clone(Table.open("db.t", warehouse=wh, storage_options=options),
                       Table.locate("db.copy", warehouse=wh, storage_options=options))
    assert result.files_copied > 0
    copy = Table.open("db.copy", warehouse=wh, storage_options=options)
    assert sorted(copy.scan().to_pylist(), key=lambda r: r["id"]) == expected


def test_clone_refuses_nesting_within_one_bucket(s3: Any, tmp_path: Path) -> None:
    """Through the CLI on the server: a target under the source's prefix, or a prefix holding the
    source, is a usage error (exit 2) and no object is written."""
    env, wh = s3.env(), s3.warehouse()
    lakectl(env, "-w", wh, "create", "db.t", "--schema", "id BIGINT")
    data = tmp_path / "rows.csv"
    data.write_text("id\n1\n2\n")
    lakectl(env, "-w", wh, "write", "db.t", "-i", data)
    fs = s3.fs()
    before = sorted(fs.find(wh.split("://", 1)[1]))
    for target, says in ((f"{wh}/db.db/t/copy", "lies inside"), (f"{wh}/db.db", "contains"),
                         (f"{wh}/db.db/t/snapshot", "lies inside")):
        result = runner.invoke(app, ["-w", wh, "clone", "db.t", target], env=env)
        assert result.exit_code == 2, (target, result.stderr)
        assert result.stderr.startswith("error: clone target") and says in result.stderr
        assert sorted(fs.find(wh.split("://", 1)[1])) == before
