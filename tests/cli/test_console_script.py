"""lakectl as users run it: the installed console script and ``python -m lakectl``, in real
subprocesses; and a fresh-process check that the metadata commands never import Spark.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

BIN_DIR = Path(sys.executable).parent
SCRIPT = shutil.which("lakectl", path=str(BIN_DIR)) or shutil.which("lakectl")
COMMANDS = ("create", "write", "scan", "compact", "snapshots", "describe", "list")


def entry_point(kind: str) -> list[str]:
    if kind == "module":
        return [sys.executable, "-m", "lakectl"]
    if SCRIPT is None:
        pytest.skip(f"the lakectl console script is not installed next to {sys.executable}")
    return [SCRIPT]


@pytest.fixture(params=["script", "module"])
def lakectl(request: pytest.FixtureRequest) -> list[str]:
    return entry_point(request.param)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The parent's environment minus lakectl settings, with a HOME of our own."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    out["HOME"] = str(tmp_path / "home")
    return out


def run(cmd: list[str], *args: Any, env: dict[str, str], cwd: Path, input: bytes | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, *map(str, args)], input=None if input is None else input.decode(),
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def check(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def assert_error(proc: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    detail = f"{proc.args}: exit {proc.returncode}\nstdout: {proc.stdout!r}\nstderr: {proc.stderr!r}"
    assert proc.returncode == code, detail
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], detail
    assert "Traceback" not in proc.stderr and proc.stdout == "", detail


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows([["" if v is None else v for v in r] for r in rows])
    return path


@pytest.mark.slow
def test_create_write_scan_flow(lakectl: list[str], env: dict[str, str], tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    created = json.loads(check(run(lakectl, "--warehouse", wh, "--format", "json", "create", "shop.orders",
                                   "--schema", "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING",
                                   "--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=2",
                                   env=env, cwd=tmp_path)))
    assert created["created"] is True and created["buckets"] == 2
    orders = [[1, "alice", "10.50", "2024-01-01"], [2, "bob", "20.25", "2024-01-01"],
              [3, "carol", "5.00", "2024-01-02"]]
    path = write_csv(tmp_path / "orders.csv", ["id", "customer", "amount", "dt"], orders)
    first = json.loads(check(run(lakectl, "-w", wh, "-f", "json", "write", "shop.orders", "-i", path,
                                 env=env, cwd=tmp_path)))
    assert first["snapshot_id"] == 1 and first["records_written"] == 3

    changes = b"op,id,customer,amount,dt\n+U,2,bob,22.00,2024-01-01\n-D,3,,,2024-01-02\n+I,4,dave,1.00,2024-01-03\n"
    second = json.loads(check(run(lakectl, "write", "shop.orders", "-i", "-", "--input-format", "csv",
                                  "--row-kind-column", "op", "-w", wh, "-f", "json",
                                  env=env, cwd=tmp_path, input=changes)))
    assert second["snapshot_id"] == 2

    rows = json.loads(check(run(lakectl, "-w", wh, "-f", "json", "scan", "shop.orders", env=env, cwd=tmp_path)))
    assert sorted(rows, key=lambda r: r["id"]) == [
        {"id": 1, "customer": "alice", "amount": "10.50", "dt": "2024-01-01"},
        {"id": 2, "customer": "bob", "amount": "22.00", "dt": "2024-01-01"},
        {"id": 4, "customer": "dave", "amount": "1.00", "dt": "2024-01-03"},
    ]
    old = check(run(lakectl, "-w", wh, "-f", "jsonl", "scan", "shop.orders", "--snapshot-id", 1,
                    "--select", "id", env=env, cwd=tmp_path))
    assert sorted(json.loads(line)["id"] for line in old.splitlines()) == [1, 2, 3]
    snaps = [json.loads(line) for line in check(run(lakectl, "-w", wh, "-f", "jsonl", "snapshots", "shop.orders",
                                                    env=env, cwd=tmp_path)).splitlines()]
    assert [s["snapshot_id"] for s in snaps] == [2, 1]
    listing = json.loads(check(run(lakectl, "-w", wh, "-f", "json", "list", "shop", env=env, cwd=tmp_path)))
    assert listing == [{"database": "shop", "table": "orders"}]
    # The default format is a human table and still exits 0.
    assert "alice" in check(run(lakectl, "-w", wh, "scan", "shop.orders", env=env, cwd=tmp_path))


@pytest.mark.slow
def test_warehouse_from_env_and_config(lakectl: list[str], env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "lakectl.toml").write_text('warehouse = "from-config"\n')
    out = json.loads(check(run(lakectl, "-f", "json", "create", "db.t", "--schema", "id INT", env=env, cwd=tmp_path)))
    assert out["path"] == str(tmp_path / "from-config" / "db.db" / "t")
    env = {**env, "LAKECTL_WAREHOUSE": str(tmp_path / "from-env")}
    out = json.loads(check(run(lakectl, "-f", "json", "create", "db.t", "--schema", "id INT", env=env, cwd=tmp_path)))
    assert out["path"] == str(tmp_path / "from-env" / "db.db" / "t")


@pytest.mark.slow
def test_version(lakectl: list[str], env: dict[str, str], tmp_path: Path) -> None:
    out = check(run(lakectl, "--version", env=env, cwd=tmp_path))
    assert out.strip() == f"lakectl {version('lakectl')}"


@pytest.mark.slow
def test_help_lists_every_command_and_the_exit_codes(lakectl: list[str], env: dict[str, str],
                                                     tmp_path: Path) -> None:
    out = check(run(lakectl, "--help", env=env, cwd=tmp_path))
    commands_section = out.split("Commands:", 1)[1]
    listed = [line.split()[0] for line in commands_section.splitlines() if line.startswith("  ") and line.split()]
    for command in COMMANDS:
        assert command in listed, out
    text = " ".join(out.split())  # help is wrapped to the terminal width
    for code in ("0 ok", "1 failure", "2 usage error", "3 not found", "4 commit conflict", "5 invalid input data"):
        assert code in text, out
    for command in COMMANDS:
        sub = check(run(lakectl, command, "--help", env=env, cwd=tmp_path))
        assert "Usage:" in sub and "--warehouse" in sub and "--format" in sub


@pytest.mark.slow
def test_error_exit_codes(lakectl: list[str], env: dict[str, str], tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    assert_error(run(lakectl, "-w", wh, "scan", "db.missing", env=env, cwd=tmp_path), 3, "db.missing")
    assert_error(run(lakectl, "-w", wh, "create", "db.t", "--schema", "id FOO", env=env, cwd=tmp_path), 2, "FOO")
    check(run(lakectl, "-w", wh, "create", "db.t", "--schema", "id INT, small TINYINT", "--primary-key", "id",
              env=env, cwd=tmp_path))
    assert_error(run(lakectl, "-w", wh, "create", "db.t", "--schema", "id INT", env=env, cwd=tmp_path),
                 1, "already exists")
    bad = write_csv(tmp_path / "bad.csv", ["id", "small"], [[1, 300]])
    assert_error(run(lakectl, "-w", wh, "write", "db.t", "-i", bad, env=env, cwd=tmp_path), 5, "300")
    assert_error(run(lakectl, "-w", wh, "write", "db.t", "-i", "-", "--input-format", "json", env=env, cwd=tmp_path,
                     input=b"[{"), 5, "JSON")
    assert json.loads(check(run(lakectl, "-w", wh, "-f", "json", "snapshots", "db.t", env=env, cwd=tmp_path))) == []
    assert_error(run(lakectl, "-w", wh, "-f", "yaml", "list", env=env, cwd=tmp_path), 2, "--format")
    verbose = run(lakectl, "-v", "-w", wh, "scan", "db.t", "--snapshot-id", 5, env=env, cwd=tmp_path)
    assert verbose.returncode == 3
    assert "Traceback (most recent call last):" in verbose.stderr
    assert verbose.stderr.splitlines()[-1] == "error: snapshot 5 does not exist"
    usage = run(lakectl, "no-such-command", env=env, cwd=tmp_path)
    assert usage.returncode == 2 and "no-such-command" in usage.stderr


# ---- the metadata commands never start Spark --------------------------------------------------------
_PROBE = r"""
import json, sys
from typer.testing import CliRunner
from lakectl.app import app

wh = sys.argv[1]
runner = CliRunner()
codes = {}
for args in (["create", "db.fresh", "--schema", "id INT, v STRING", "--primary-key", "id"],
             ["snapshots", "db.t"], ["describe", "db.t"], ["list"], ["list", "db"],
             ["tag", "create", "db.t", "t1"], ["tag", "list", "db.t"], ["files", "db.t"],
             ["expire", "db.t", "--retain-min", "1", "--dry-run"], ["rollback", "db.t", "--snapshot-id", "1"],
             ["remove-orphan-files", "db.t", "--dry-run"], ["tag", "delete", "db.t", "t1"],
             ["alter-schema", "db.t", "--add-column", "n INT", "--set-not-null", "v"], ["schemas", "db.t"]):
    result = runner.invoke(app, ["--warehouse", wh, "--format", "json", *args])
    codes[" ".join(args[:2])] = [result.exit_code, result.stderr]
print(json.dumps({
    "codes": codes,
    "spark": sorted(m for m in sys.modules if m.startswith(("pyspark", "py4j"))),
    "spark_engine": "core.engines.spark" in sys.modules,
    "ran": [m for m in ("lakectl.app", "core.ops.describe", "core.ops.create") if m in sys.modules],
}))
"""


def test_metadata_commands_never_import_spark(env: dict[str, str], tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    # Give snapshots/describe a table with data, prepared in another process.
    check(run(entry_point("module"), "-w", wh, "create", "db.t", "--schema", "id INT, v STRING",
              env=env, cwd=tmp_path))
    check(run(entry_point("module"), "-w", wh, "write", "db.t", "-i", write_csv(tmp_path / "a.csv", ["id", "v"],
                                                                                  [[1, "a"]]),
              env=env, cwd=tmp_path))
    probe = json.loads(check(run([sys.executable, "-c", _PROBE], wh, env=env, cwd=tmp_path)))
    assert all(code == 0 for code, _ in probe["codes"].values()), probe["codes"]
    assert probe["ran"] == ["lakectl.app", "core.ops.describe", "core.ops.create"]
    assert probe["spark"] == []
    assert probe["spark_engine"] is False


@pytest.mark.slow
def test_write_creates_the_automatic_tag_java_would(env: dict[str, str], tmp_path: Path) -> None:
    """`lakectl write` on a table with tag.automatic-creation=process-time (hourly): the first
    snapshot gets the tag of the hour before its commit time, read here from the snapshot file;
    a second write in the same hour adds none."""
    import datetime as dt

    lakectl = entry_point("script")
    wh = tmp_path / "wh"
    check(run(lakectl, "-w", wh, "create", "db.t", "--schema", "id BIGINT, v STRING",
              "--option", "tag.automatic-creation=process-time", "--option", "tag.creation-period=hourly",
              env=env, cwd=tmp_path))
    data = write_csv(tmp_path / "in.csv", ["id", "v"], [[1, "a"]])
    for _ in range(2):
        check(run(lakectl, "-w", wh, "write", "db.t", "-i", data, env=env, cwd=tmp_path))
    listed = json.loads(check(run(lakectl, "-w", wh, "tag", "list", "db.t", "-f", "json", env=env, cwd=tmp_path)))
    snapshot_dir = wh / "db.db" / "t" / "snapshot"
    t1, t2 = (dt.datetime.fromtimestamp(json.loads((snapshot_dir / f"snapshot-{i}").read_text())["timeMillis"] / 1000)
              for i in (1, 2))
    expected = [{"tag": (t1 - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H"), "snapshot_id": 1}]
    if t2.strftime("%Y-%m-%d %H") != t1.strftime("%Y-%m-%d %H"):  # an hour turned between the writes
        expected.append({"tag": t1.strftime("%Y-%m-%d %H"), "snapshot_id": 2})
    assert [{"tag": t["tag"], "snapshot_id": t["snapshot_id"]} for t in listed] == expected


@pytest.mark.slow
def test_cdc_file_with_out_of_order_update_time(env: dict[str, str], tmp_path: Path) -> None:
    """A CDC table keyed by id with sequence.field=update_time: a change file whose records
    arrive out of order (an older update after a newer one, a stale delete, a null time)
    leaves the newest record of each key, before and after a full compaction."""
    lakectl = entry_point("script")
    wh = tmp_path / "wh"
    check(run(lakectl, "-w", wh, "create", "cdc.users", "--schema", "id BIGINT NOT NULL, name STRING, update_time BIGINT",
              "--primary-key", "id", "--option", "bucket=2", "--option", "sequence.field=update_time",
              env=env, cwd=tmp_path))
    first = b"op,id,name,update_time\n+I,1,ann,100\n+I,2,bob,100\n+I,3,cid,100\n"
    # id 1: the update at 300 arrives before the one at 200; id 2: a delete stamped before the
    # insert loses; id 3: a null update_time is older than any time.
    second = b"op,id,name,update_time\n+U,1,ann-300,300\n+U,1,ann-200,200\n-D,2,bob,50\n+U,3,cid-null,\n"
    for data in (first, second):
        check(run(lakectl, "-w", wh, "write", "cdc.users", "-i", "-", "--input-format", "csv", "--row-kind-column",
                  "op", env=env, cwd=tmp_path, input=data))
    expected = [{"id": 1, "name": "ann-300", "update_time": 300}, {"id": 2, "name": "bob", "update_time": 100},
                {"id": 3, "name": "cid", "update_time": 100}]
    rows = json.loads(check(run(lakectl, "-w", wh, "-f", "json", "scan", "cdc.users", env=env, cwd=tmp_path)))
    assert sorted(rows, key=lambda r: r["id"]) == expected
    check(run(lakectl, "-w", wh, "compact", "cdc.users", "--full", env=env, cwd=tmp_path))
    rows = json.loads(check(run(lakectl, "-w", wh, "-f", "json", "scan", "cdc.users", env=env, cwd=tmp_path)))
    assert sorted(rows, key=lambda r: r["id"]) == expected
