"""``lakectl check --repair [--dry-run]`` through the installed console script: exit codes,
the JSON document, the table for people, and --dry-run refused without --repair."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from core.ops.create import create
from core.table import Table

REPO = Path(__file__).resolve().parents[2]
SCRIPT = shutil.which("lakectl", path=str(Path(sys.executable).parent))
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(SCRIPT is None, reason="the lakectl console script is not installed")]


def lakectl(wh: Path, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    env = {**clean, "PYTHONPATH": str(REPO), "HOME": str(wh.parent), "NO_COLOR": "1"}
    return subprocess.run([str(SCRIPT), "-w", str(wh), *args], capture_output=True, text=True, timeout=120, env=env)


def tree(path: str) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in Path(path).rglob("*") if p.is_file()}


@pytest.fixture
def damaged(tmp_path: Path) -> Table:
    """Three snapshots; the third's delta manifest list is gone."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write(pa.table({"id": [i], "v": [f"v{i}"]}))
    Path(t.path, "manifest", t.snapshots.snapshot(3).delta_manifest_list).unlink()
    return t


def test_dry_run_then_repair_then_check(damaged: Table, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    assert lakectl(wh, "check", "db.t").returncode == 1
    before = tree(damaged.path)
    dry = lakectl(wh, "check", "db.t", "--repair", "--dry-run", "-f", "json")
    assert dry.returncode == 0, dry.stderr
    body = json.loads(dry.stdout)
    assert list(body) == ["table", "branch", "snapshots_removed", "tags_removed", "latest_after", "earliest_after",
                          "hints_rewritten", "problems_left", "ok", "dry_run", "branches",
                          "leftovers_removed"]
    assert [r["snapshot_id"] for r in body["snapshots_removed"]] == [3]
    assert body["snapshots_removed"][0]["reason"].startswith("unreadable: manifest-list ")
    assert (body["latest_after"], body["earliest_after"], body["ok"], body["dry_run"]) == (2, 1, True, True)
    assert tree(damaged.path) == before

    done = lakectl(wh, "check", "db.t", "--repair")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^dry_run +false$", done.stdout, re.M) and "3: unreadable: manifest-list" in done.stdout
    assert damaged.snapshots.list_ids() == [1, 2]
    assert lakectl(wh, "check", "db.t").returncode == 0


def test_dry_run_needs_repair(damaged: Table, tmp_path: Path) -> None:
    result = lakectl(tmp_path / "wh", "check", "db.t", "--dry-run")
    assert result.returncode == 2 and "--dry-run goes with --repair" in result.stderr


def test_a_table_with_no_readable_snapshot_is_refused(tmp_path: Path) -> None:
    t = Table.locate("db.one", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT", primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1]}))
    next(Path(t.path).rglob("data-*.parquet")).unlink()
    before = tree(t.path)
    result = lakectl(tmp_path / "wh", "check", "db.one", "--repair")
    assert result.returncode == 1 and "none of its 1 snapshots can be read" in result.stderr
    assert tree(t.path) == before
