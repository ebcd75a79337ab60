"""No command builds on damage (issue 17): write, overwrite, compact and alter-schema refuse to
commit on a latest snapshot whose manifest lists (or, for commands that read them, manifests)
are gone, with exit 1 and a message naming the file; nothing is published. A scan of a
snapshot whose data file is gone names that file. The damage is made by hand; the expectation
is the file that was damaged and the unchanged listing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import CorruptMetadataError
from core.evolution import AddColumn
from core.ops.create import create
from core.table import Table
from core.types import parse_type

REPO = Path(__file__).resolve().parents[2]


def _table(tmp_path: Path) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "2", "write-only": "true"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write(pa.table({"id": [2, 4], "v": ["z", "d"]}))
    return t


def _manifest_dir(t: Table) -> set[str]:
    return set(os.listdir(os.path.join(t.path, "manifest")))


def _remove_delta_list(t: Table) -> str:
    name = t.snapshots.snapshot(2).delta_manifest_list
    os.remove(os.path.join(t.path, "manifest", name))
    return name


def _remove_a_manifest(t: Table) -> str:
    lists = t.manifests().read_manifest_list(t.snapshots.snapshot(2).delta_manifest_list)
    name = lists[0].file_name
    os.remove(os.path.join(t.path, "manifest", name))
    return name


ACTIONS = {
    "write": lambda t: t.write(pa.table({"id": [9], "v": ["n"]})),
    "overwrite": lambda t: t.write(pa.table({"id": [9], "v": ["n"]}), mode="overwrite"),
    "compact": lambda t: t.compact(full=True),
    "alter-schema": lambda t: t.alter([AddColumn("extra", parse_type("INT"))]),
}


@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_missing_manifest_list_stops_every_commit(tmp_path: Path, action: str) -> None:
    t = _table(tmp_path)
    missing = _remove_delta_list(t)
    before = _manifest_dir(t)
    with pytest.raises(CorruptMetadataError, match=missing) as err:
        ACTIONS[action](Table.open("db.t", warehouse=str(tmp_path / "wh")))
    assert "snapshot 2" in str(err.value) and "nothing was" in str(err.value)
    assert t.snapshots.list_ids() == [1, 2]
    assert t.schemas.list_ids() == [0]
    assert _manifest_dir(t) == before, "a refused commit left manifests behind"


@pytest.mark.parametrize("action", ["overwrite", "compact"])
def test_a_missing_manifest_stops_commands_that_read_the_live_files(tmp_path: Path, action: str) -> None:
    t = _table(tmp_path)
    missing = _remove_a_manifest(t)
    with pytest.raises(CorruptMetadataError, match=missing):
        ACTIONS[action](Table.open("db.t", warehouse=str(tmp_path / "wh")))
    assert t.snapshots.list_ids() == [1, 2]


def _lakectl(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "lakectl", "-w", str(tmp_path / "wh"), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)})


def test_through_the_console_one_line_and_exit_1(tmp_path: Path) -> None:
    t = _table(tmp_path)
    data_file = next(iter(t.files(snapshot_id=1)))
    path = next(Path(t.path).rglob(data_file.file_name))
    missing = _remove_delta_list(t)
    rows = tmp_path / "more.jsonl"
    rows.write_text('{"id": 7, "v": "x"}\n')
    for args in (["write", "db.t", "-i", str(rows)], ["compact", "db.t", "--full"],
                 ["alter-schema", "db.t", "--add-column", "extra INT"]):
        done = _lakectl(tmp_path, *args)
        assert done.returncode == 1, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and missing in lines[0], (args, done.stderr)
    assert t.snapshots.list_ids() == [1, 2]
    # Reading a snapshot whose data file is gone names the file (exit 1), never a partial result.
    path.unlink()
    done = _lakectl(tmp_path, "scan", "db.t", "--snapshot-id", "1", "--format", "jsonl")
    assert done.returncode == 1 and data_file.file_name in done.stderr and done.stdout == "", done.stderr
