"""Issue 24 through the installed console script: ``branch create``, ``branch delete`` and
``branch fast-forward`` SIGKILLed part-way (``LAKECTL_FAULT=kill:mutation:N``), then what a
user runs next. Expected rows are the ones each test wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = shutil.which("lakectl", path=str(Path(sys.executable).parent))
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(SCRIPT is None, reason="the lakectl console script is not installed")]


def lakectl(wh: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    env = {**clean, "PYTHONPATH": str(REPO), "HOME": str(wh.parent), "NO_COLOR": "1"}
    if fault:
        env["LAKECTL_FAULT"] = fault
    return subprocess.run([str(SCRIPT), "-w", str(wh), *args], capture_output=True, text=True, timeout=120, env=env)


def ok(wh: Path, *args: str) -> Any:
    done = lakectl(wh, *args, "-f", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def write(wh: Path, rows: dict[int, str], *extra: str) -> None:
    path = wh.parent / "in.csv"
    path.write_text("id,v\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
    ok(wh, "write", "db.t", "-i", str(path), "--fill-missing-columns", *extra)


def scan(wh: Path, *extra: str) -> dict[int, str]:
    return {r["id"]: r["v"] for r in ok(wh, "scan", "db.t", *extra)}


def branches(wh: Path) -> list[str]:
    return [b["branch"] for b in ok(wh, "branch", "list", "db.t")]


@pytest.fixture()
def wh(tmp_path: Path) -> Path:
    """Two snapshots of (id, v); the second under a second schema, so a branch of it copies two
    schema files."""
    wh = tmp_path / "wh"
    assert lakectl(wh, "-q", "create", "db.t", "--schema", "id BIGINT, v STRING", "--primary-key", "id",
                   "--option", "bucket=1").returncode == 0
    write(wh, {1: "a", 2: "b"})
    ok(wh, "alter-schema", "db.t", "--add-column", "note STRING")
    write(wh, {2: "B", 3: "c"})
    return wh


def test_a_killed_create_is_no_branch_until_the_rerun(wh: Path) -> None:
    # Mutations: the busy marker, the UNFINISHED marker, the snapshot, schema-0, schema-1, the
    # marker's removal, the busy marker's removal. The second run first removes the killed one's
    # busy marker and its leftover (UNFINISHED and the directory): three more before its own.
    for n in (3, 8):  # after the marker only; between the two schema files
        killed = lakectl(wh, "branch", "create", "db.t", "dev", fault=f"kill:mutation:{n}")
        assert killed.returncode == -9, killed.stderr
        assert branches(wh) == []
        opened = lakectl(wh, "scan", "db.t", "--branch", "dev")
        assert opened.returncode == 3 and "`lakectl branch delete db.t dev`" in opened.stderr, opened.stderr
        checked = lakectl(wh, "check", "db.t")
        assert checked.returncode == 1 and "branch create" in checked.stdout + checked.stderr
    created = ok(wh, "branch", "create", "db.t", "dev")  # clears the leftover, then creates
    assert (created["table"], created["branch"], created["latest_snapshot_id"], created["schema_id"]) == ("db.t", "dev", 2, 1)
    assert branches(wh) == ["dev"]
    assert scan(wh, "--branch", "dev") == {1: "a", 2: "B", 3: "c"}
    assert [s["schema_id"] for s in ok(wh, "schemas", "db.t", "--branch", "dev")] == [1, 0]
    assert lakectl(wh, "check", "db.t").returncode == 0


def test_a_killed_delete_is_gone_and_check_repair_clears_the_rest(wh: Path) -> None:
    ok(wh, "branch", "create", "db.t", "dev")
    write(wh, {9: "z"}, "--branch", "dev")
    # Mutations: the busy marker, the marker, schema-0, schema-1, the snapshots, ...: killed after one schema.
    killed = lakectl(wh, "branch", "delete", "db.t", "dev", fault="kill:mutation:4")
    assert killed.returncode == -9, killed.stderr
    assert branches(wh) == []
    assert lakectl(wh, "scan", "db.t", "--branch", "dev").returncode == 3
    checked = lakectl(wh, "check", "db.t")
    assert checked.returncode == 1 and "lakectl check db.t --repair" in checked.stdout, checked.stdout
    repaired = ok(wh, "check", "db.t", "--repair")
    assert repaired["leftovers_removed"] == ["dev"] and repaired["ok"] is True
    assert not (wh / "db.db" / "t" / "branch" / "branch-dev").exists()
    assert lakectl(wh, "check", "db.t").returncode == 0
    assert scan(wh) == {1: "a", 2: "B", 3: "c"}
    # The name is free again; a killed delete's rerun also finishes on its own.
    ok(wh, "branch", "create", "db.t", "dev")
    assert lakectl(wh, "branch", "delete", "db.t", "dev", fault="kill:mutation:3").returncode == -9
    again = ok(wh, "branch", "delete", "db.t", "dev")
    assert again["leftover"] is True and branches(wh) == []
    assert lakectl(wh, "check", "db.t").returncode == 0


def test_a_killed_fast_forward_refuses_writes_until_its_rerun(wh: Path) -> None:
    ok(wh, "branch", "create", "db.t", "dev")
    write(wh, {1: "dev", 9: "z"}, "--branch", "dev")
    write(wh, {4: "main"})  # main's snapshot 3, which the fast-forward replaces
    # Mutations: the busy marker, main's rewrite marker, the FAST-FORWARD marker, main's snapshot 3, LATEST, ...:
    # killed after the delete.
    killed = lakectl(wh, "branch", "fast-forward", "db.t", "dev", fault="kill:mutation:5")
    assert killed.returncode == -9, killed.stderr
    assert scan(wh) == {1: "a", 2: "B", 3: "c"}  # main reads its snapshot 2, where dev starts
    refused = lakectl(wh, "write", "db.t", "-i", str(wh.parent / "in.csv"), "--fill-missing-columns")
    assert refused.returncode == 1 and "rerun `lakectl branch fast-forward db.t dev`" in refused.stderr, refused.stderr
    refused = lakectl(wh, "rollback", "db.t", "--snapshot-id", "1")
    assert refused.returncode == 1 and "lakectl branch fast-forward db.t dev" in refused.stderr
    refused = lakectl(wh, "expire", "db.t", "--retain-max", "1")
    assert refused.returncode == 1 and "lakectl branch fast-forward db.t dev" in refused.stderr
    assert [s["snapshot_id"] for s in ok(wh, "snapshots", "db.t")] == [2, 1]
    checked = lakectl(wh, "check", "db.t")
    assert checked.returncode == 1 and "lakectl branch fast-forward db.t dev" in checked.stdout, checked.stdout
    rerun = ok(wh, "branch", "fast-forward", "db.t", "dev")
    assert rerun["latest_before"] == 3 and rerun["latest_after"] == 3  # main's 3 is the one it replaced
    assert scan(wh) == {1: "dev", 2: "B", 3: "c", 9: "z"} == scan(wh, "--branch", "dev")
    write(wh, {5: "after"})
    assert scan(wh) == {1: "dev", 2: "B", 3: "c", 9: "z", 5: "after"}
    assert lakectl(wh, "check", "db.t").returncode == 0
