"""remove-orphan-files next to a write that has written its files and not yet published its
snapshot (issue 43, case 4): the console script in subprocesses, the write held still by a
stall (LAKECTL_FAULT=stall:publish:1) while orphan removal runs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.test_console_script import assert_error, entry_point, run


@pytest.mark.slow
def test_orphan_removal_under_an_hour_is_refused_beside_a_write_about_to_publish(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["HOME"] = str(tmp_path / "home")
    wh = tmp_path / "wh"
    cmd = entry_point("script")

    def cli(*args: object) -> subprocess.CompletedProcess[str]:
        return run(cmd, *args, "-w", wh, env=env, cwd=tmp_path)

    assert cli("create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id",
               "-o", "bucket=1").returncode == 0
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_text("id,v\n1,a\n2,b\n")
    second.write_text("id,v\n3,c\n4,d\n")
    assert cli("write", "db.t", "-i", first).returncode == 0

    stall = tmp_path / "stall"
    writer = subprocess.Popen([*cmd, "write", "db.t", "-i", str(second), "-w", str(wh)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                              env={**env, "LAKECTL_FAULT": "stall:publish:1", "LAKECTL_STALL_FILE": str(stall)})
    try:
        deadline = time.monotonic() + 120
        while not stall.exists():  # its data file and manifests are written; snapshot 2 is not
            assert writer.poll() is None, writer.communicate()
            assert time.monotonic() < deadline, "the write never reached its publish"
            time.sleep(0.05)
        tree = sorted(p for p in wh.rglob("*") if p.is_file())
        for age in ("0s", "59min"):
            refused = cli("remove-orphan-files", "db.t", "--older-than", age)
            assert_error(refused, 2, "--older-than")
            assert "1h floor" in refused.stderr and "before it publishes the snapshot" in refused.stderr
            assert "--force" in refused.stderr
        assert sorted(p for p in wh.rglob("*") if p.is_file()) == tree  # nothing deleted
        # What the floor protects: the write's files are unreferenced right now, only their age keeps them.
        in_flight = json.loads(cli("remove-orphan-files", "db.t", "--older-than", "0s", "--force", "--dry-run",
                                   "-f", "json").stdout)
        assert any("/bucket-0/" in p for p in in_flight["paths"]), in_flight
    finally:
        stall.unlink(missing_ok=True)
    out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    rows = json.loads(cli("scan", "db.t", "-f", "json").stdout)
    assert sorted(r["id"] for r in rows) == [1, 2, 3, 4]
    assert json.loads(cli("check", "db.t", "-f", "json").stdout)["ok"] is True
