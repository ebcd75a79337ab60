"""The command line as shells and cron run it (issue 18): global options anywhere on the line,
one-line usage errors, exit 3 for a warehouse that is not there, config paths relative to the
config file, --tag/--timestamp wherever --snapshot-id is taken, completion of fixed values, and
commands that import only what they use. Real processes (``python -m lakectl``) where the
shell's view matters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_kit import assert_lakectl_words
from typer.testing import CliRunner

from lakectl.app import app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    out.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    return out


def lakectl(*args: Any, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lakectl", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def one_line_error(proc: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    detail = f"{proc.args}: exit {proc.returncode}\nstdout: {proc.stdout!r}\nstderr: {proc.stderr!r}"
    assert proc.returncode == code, detail
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), detail
    assert_lakectl_words(lines[0])
    assert all(f in lines[0] for f in fragments), detail
    assert proc.stdout == "" and "Usage:" not in proc.stderr, detail
    return lines[0]


@pytest.fixture
def table(tmp_path: Path, env: dict[str, str]) -> Path:
    """db.t in tmp_path/wh: snapshot 1 holds id 1, snapshot 2 adds id 2; tag t1 on snapshot 1."""
    wh = tmp_path / "wh"
    for rows in ("id,v\n1,a\n", "id,v\n2,b\n"):
        (tmp_path / "rows.csv").write_text(rows)
        runner_ok("-w", wh, "write", "db.t", "-i", tmp_path / "rows.csv", "--auto-create", "--primary-key", "id")
    runner_ok("-w", wh, "tag", "create", "db.t", "t1", "--snapshot-id", "1")
    return wh


def runner_ok(*args: Any) -> str:
    result = CliRunner().invoke(app, ["-q", *map(str, args)])
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result.stdout


def runner_json(*args: Any) -> Any:
    result = CliRunner().invoke(app, ["-f", "json", *map(str, args)])
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return json.loads(result.stdout)


# ---- global options after the command ---------------------------------------------------------
def test_every_global_option_is_taken_after_the_command(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "conf" / "lakectl.toml"
    config.parent.mkdir()
    config.write_text('[profiles.nightly]\nwarehouse = "/data/nightly"\n')
    shown = json.loads(ok(lakectl("config", "show", "--config", config, "--profile", "nightly", "--engine", "local",
                                  "--master", "spark://h:7077", "--spark-conf", "spark.a=1", "--spark-conf",
                                  "spark.b=2", "-f", "json", env=env, cwd=tmp_path)))
    by_key = {row["key"]: (row["value"], row["source"]) for row in shown}
    assert by_key["config-file"][0] == str(config)
    assert by_key["profile"] == ("nightly", "flag --profile")
    assert by_key["warehouse"] == ("/data/nightly", "profile nightly")
    assert by_key["engine"] == ("local", "flag --engine")
    assert by_key["spark.master"] == ("spark://h:7077", "flag --master")
    assert by_key["spark.conf.spark.a"] == ("1", "flag --spark-conf")
    assert by_key["spark.conf.spark.b"] == ("2", "flag --spark-conf")


def test_verbose_and_quiet_after_the_command(tmp_path: Path, env: dict[str, str], table: Path) -> None:
    loud = lakectl("scan", "db.t", "-w", table, "-f", "csv", "-v", "--engine", "local", env=env, cwd=tmp_path)
    assert ok(loud).splitlines() == ["id,v", "1,a", "2,b"]
    assert "INFO" in loud.stderr and "engine: local" in loud.stderr  # -v's engine report
    (tmp_path / "more.csv").write_text("id,v\n3,c\n")
    plain = lakectl("write", "db.t", "-i", tmp_path / "more.csv", "-w", table, env=env, cwd=tmp_path)
    assert "snapshot_id" in ok(plain)
    quiet = lakectl("write", "db.t", "-i", tmp_path / "more.csv", "-w", table, "-q", env=env, cwd=tmp_path)
    assert ok(quiet) == "" and quiet.stderr == ""  # -q: no summary


def test_options_of_a_subcommand_group_take_globals_too(tmp_path: Path, env: dict[str, str], table: Path) -> None:
    rows = json.loads(ok(lakectl("tag", "list", "db.t", "-w", table, "-f", "json", env=env, cwd=tmp_path)))
    assert [r["tag"] for r in rows] == ["t1"]


# ---- usage errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("args, fragments", [
    (["scan", "db.t", "--bogus"], ["--bogus", "lakectl scan --help"]),
    (["scan"], ["Missing argument", "DB.TABLE"]),
    (["snapshots", "db.t", "--limit", "many"], ["--limit", "integer"]),
    (["scna", "db.t"], ["scna"]),
    (["--bogus", "list"], ["--bogus"]),
    (["tag", "create", "db.t"], ["Missing argument"]),
], ids=["unknown-option", "missing-argument", "bad-value", "unknown-command", "unknown-global", "group-command"])
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, env: dict[str, str], args: list[str],
                                              fragments: list[str]) -> None:
    one_line_error(lakectl(*args, env=env, cwd=tmp_path), 2, *fragments)


# ---- cron traps ------------------------------------------------------------------------------
def test_read_commands_on_a_missing_warehouse_or_database_exit_3(tmp_path: Path, env: dict[str, str]) -> None:
    missing = tmp_path / "nonexistent"
    one_line_error(lakectl("-w", missing, "list", env=env, cwd=tmp_path), 3, "warehouse", str(missing))
    one_line_error(lakectl("list", "-w", missing, "-f", "json", env=env, cwd=tmp_path), 3, "does not exist")
    for args in (["list", "db"], ["snapshots", "db.t"], ["scan", "db.t"], ["describe", "db.t"], ["files", "db.t"]):
        one_line_error(lakectl("-w", missing, *args, env=env, cwd=tmp_path), 3, "does not exist")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert json.loads(ok(lakectl("-w", empty, "-f", "json", "list", env=env, cwd=tmp_path))) == []
    one_line_error(lakectl("-w", empty, "list", "nodb", env=env, cwd=tmp_path), 3, "database nodb")
    assert not missing.exists()  # reading created nothing


def test_config_file_paths_are_relative_to_the_file(tmp_path: Path, env: dict[str, str]) -> None:
    conf_dir, elsewhere = tmp_path / "etc", tmp_path / "cron-cwd"
    conf_dir.mkdir()
    elsewhere.mkdir()
    config = conf_dir / "lakectl.toml"
    config.write_text('warehouse = "./warehouse"\n[s3]\nlock-file = "locks/commit.lock"\n'
                      '[profiles.p]\nwarehouse = "../other"\n')
    ok(lakectl("--config", config, "create", "db.t", "-s", "id INT", env=env, cwd=elsewhere))
    assert (conf_dir / "warehouse" / "db.db" / "t" / "schema").is_dir()
    assert not (elsewhere / "warehouse").exists()
    shown = {r["key"]: r["value"] for r in json.loads(ok(lakectl("--config", config, "-f", "json", "config", "show",
                                                                 env=env, cwd=elsewhere)))}
    assert shown["warehouse"] == str(conf_dir / "warehouse")
    assert shown["s3.lock-file"] == str(conf_dir / "locks" / "commit.lock")
    profiled = {r["key"]: r["value"] for r in json.loads(ok(lakectl(
        "--config", config, "--profile", "p", "-f", "json", "config", "show", env=env, cwd=elsewhere)))}
    assert profiled["warehouse"] == str(tmp_path / "other")
    # a flag or variable is relative to the current directory, as any shell path
    shown_flag = {r["key"]: r["value"] for r in json.loads(ok(lakectl(
        "--config", config, "-w", "./here", "-f", "json", "config", "show", env=env, cwd=elsewhere)))}
    assert shown_flag["warehouse"] == "./here"


# ---- time travel flags -----------------------------------------------------------------------
def snapshot_time(wh: Path, sid: int) -> str:
    rows = runner_json("-w", wh, "snapshots", "db.t")
    return next(r["commit_time"] for r in rows if r["snapshot_id"] == sid)


def test_tag_and_timestamp_wherever_snapshot_id_is_taken(table: Path) -> None:
    wh = table
    at_1 = snapshot_time(wh, 1)
    names = {json.dumps(r, sort_keys=True) for r in runner_json("-w", wh, "files", "db.t", "--snapshot-id", "1")}
    assert len(names) == 1
    for flags in (["--tag", "t1"], ["--timestamp", at_1]):
        assert {json.dumps(r, sort_keys=True) for r in runner_json("-w", wh, "files", "db.t", *flags)} == names
        assert runner_json("-w", wh, "lookup", "db.t", "--key", "id=2", *flags) == []
        assert runner_json("-w", wh, "lookup", "db.t", "--key", "id=1", *flags) == [{"id": 1, "v": "a"}]
        described = runner_json("-w", wh, "describe", "db.t", *flags)
        assert (described["total_record_count"], described["file_count"]) == (1, 1)
        assert described["latest_snapshot_id"] == 2
    assert len(runner_json("-w", wh, "files", "db.t")) == 2
    assert runner_json("-w", wh, "lookup", "db.t", "--key", "id=2") == [{"id": 2, "v": "b"}]
    assert runner_json("-w", wh, "tag", "create", "db.t", "t2", "--tag", "t1")["snapshot_id"] == 1
    assert runner_json("-w", wh, "tag", "create", "db.t", "t3", "--timestamp", at_1)["snapshot_id"] == 1
    assert runner_json("-w", wh, "rollback", "db.t", "--timestamp", at_1, "--dry-run")["target_snapshot_id"] == 1
    both = CliRunner().invoke(app, ["-w", str(wh), "files", "db.t", "--tag", "t1", "--snapshot-id", "1"])
    assert both.exit_code == 2 and "at most one" in both.stderr
    before = CliRunner().invoke(app, ["-w", str(wh), "files", "db.t", "--timestamp", "2000-01-01T00:00:00Z"])
    assert before.exit_code == 3


# ---- completion of fixed values --------------------------------------------------------------
def complete(line: str) -> list[str]:
    words = line.split(" ")
    result = CliRunner().invoke(app, [], prog_name="lakectl", env={
        "_LAKECTL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)})
    assert result.exit_code == 0, result.output
    return [w for w in result.stdout.splitlines() if w]


def test_enum_options_complete_their_values() -> None:
    assert complete("lakectl --format ") == ["table", "json", "jsonl", "csv"]
    assert complete("lakectl snapshots db.t -f j") == ["json", "jsonl"]
    assert complete("lakectl --engine ") == ["auto", "local", "spark"]
    assert complete("lakectl write db.t --input-format j") == ["json", "jsonl"]
    assert complete("lakectl write db.t --mode o") == ["overwrite"]


# ---- what a command imports ------------------------------------------------------------------
# Runs lakectl's real entry point and records sys.modules as the process exits.
MODULES_AT_EXIT = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "lakectl"
from lakectl.app import main
main()
"""


def modules_of(args: list[Any], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    record = cwd / "modules.json"
    proc = subprocess.run([sys.executable, "-c", MODULES_AT_EXIT, str(record), *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    return proc, set(json.loads(record.read_text()))


def test_help_lists_every_command_without_importing_them(tmp_path: Path, env: dict[str, str]) -> None:
    from lakectl.registry import COMMANDS

    proc, modules = modules_of(["--help"], env, tmp_path)
    assert proc.returncode == 0
    assert "lakectl.app" in modules
    assert not [m for m in modules if m.startswith("lakectl.commands") or m.split(".")[0] in ("pyarrow", "pandas")]
    listed = proc.stdout.split("Commands:")[1].split("\n\n")[0]
    # a command's line starts two spaces in; its summary's wrapped lines further in
    rows = [line.split(maxsplit=1) for line in listed.splitlines() if line.startswith("  ") and line[2] != " "]
    assert [name for name, _ in rows] == [e.name for e in COMMANDS]
    # each summary whole (never cut mid-phrase with "..."): the registry's text, rewrapped
    text = " ".join(listed.split()).replace("- ", "-")  # textwrap also breaks after a hyphen
    for entry in COMMANDS:
        assert f"{entry.name} {entry.summary}" in text, entry.name
    assert "..." not in listed
    assert "fast-forward" in next(e.summary for e in COMMANDS if e.name == "branch")


def test_registry_summaries_are_the_commands_own_help() -> None:
    import typer.main

    from lakectl.registry import COMMANDS

    group = typer.main.get_command(app)
    for entry in COMMANDS:
        assert group.get_command(None, entry.name).get_short_help_str(10_000) == entry.summary, entry.name


@pytest.mark.parametrize("kind", ["snapshots", "write", "scan"])
def test_data_and_metadata_commands_import_no_pandas_or_spark(kind: str, tmp_path: Path, env: dict[str, str],
                                                              table: Path) -> None:
    (tmp_path / "more.csv").write_text("id,v\n3,c\n")
    args = {"snapshots": ["snapshots", "db.t"], "write": ["write", "db.t", "-i", tmp_path / "more.csv"],
            "scan": ["scan", "db.t", "--format", "csv", "--where", "id > 1"]}[kind]
    proc, modules = modules_of(["-w", table, *args], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the probe sees the command run (these plain lines run without the tree: lakectl/quick.py)
    assert {"snapshots": "lakectl.listings", "write": "lakectl.writes", "scan": "lakectl.scans"}[kind] in modules
    heavy = sorted(m for m in modules if m.split(".")[0] in ("pandas", "pyspark", "py4j"))
    assert heavy == []
    assert sorted(m for m in modules if m.startswith("lakectl.commands")) == []


def test_snapshots_for_a_script_imports_no_arrow_numpy_or_rich(tmp_path: Path, env: dict[str, str],
                                                            table: Path) -> None:
    """Listing snapshots reads JSON files only: the data libraries (pyarrow, numpy, fastavro's
    readers aside) and rich (a pipe gets no terminal table) stay unloaded."""
    proc, modules = modules_of(["-w", table, "snapshots", "db.t", "-f", "json"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["snapshot_id"] >= 1
    assert sorted(m for m in modules if m.split(".")[0] in ("pyarrow", "numpy", "rich", "pandas")) == []


def test_importing_the_write_and_scan_paths_imports_no_pandas(env: dict[str, str], tmp_path: Path) -> None:
    """The Python API too: core/predicate.py built a pyarrow scalar at import, and pyarrow's
    first scalar imports pandas."""
    probe = "import sys, core.ops.write, core.ops.scan, core.ops.lookup; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120)
    assert out.stdout.strip() == "False", out.stderr


@pytest.fixture
def dv_table(tmp_path: Path) -> Path:
    """db.dv, a deletion-vector table whose scan filters deleted rows out of its files: ids
    0..19 with 1 and 2 updated and 3 and 4 deleted."""
    import pyarrow as pa

    from core.ops.create import create
    from core.table import Table

    wh = tmp_path / "dvwh"
    t = Table.locate("db.dv", warehouse=str(wh))
    create(t, "id BIGINT, v STRING, x DOUBLE, ts TIMESTAMP(6)", primary_keys=["id"],
           options={"bucket": "2", "deletion-vectors.enabled": "true"})
    ids = pa.array(range(20), pa.int64())
    t.write(pa.table({"id": ids, "v": [f"a{i}" for i in range(20)], "x": pa.array([i / 4 for i in range(20)]),
                      "ts": pa.array([i * 1500 for i in range(20)], pa.timestamp("us"))}))
    t.write(pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": ["b", "b", None, None],
                      "x": pa.array([1e20, None, None, None]), "ts": pa.array([None] * 4, pa.timestamp("us")),
                      "op": ["+U", "+U", "-D", "-D"]}), row_kind_column="op")
    assert sum(f.deleted_rows for f in t.files()) == 4
    return wh


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_a_deletion_vector_scan_never_asks_for_pandas(fmt: str, dv_table: Path, env: dict[str, str],
                                                      tmp_path: Path) -> None:
    """The console script's gate refuses pandas, but any Python or numpy value handed to
    pyarrow still makes it try (``-X importtime`` lists the attempt): the deletion-vector
    mask and the text encoders build their Arrow values from memory (core/arrow_values.py)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "lakectl", "-w", str(dv_table), "scan", "db.dv",
                           "-f", fmt], capture_output=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    if fmt == "csv":
        lines = proc.stdout.decode().splitlines()
        assert len(lines) == 1 + 18 and "1,b,1e+20," in lines  # the header, 20 rows less the 2 deleted
        assert not any(line.startswith(("3,", "4,")) for line in lines)
    attempts = [line for line in proc.stderr.decode().splitlines() if line.rstrip().endswith("| pandas")]
    assert attempts == []


def test_the_python_api_reads_a_deletion_vector_table_without_pandas(dv_table: Path, env: dict[str, str],
                                                                     tmp_path: Path) -> None:
    """Without the console script's gate: the first read of a deletion-vector table imported
    pandas through ``pa.array(numpy_mask)``."""
    probe = ("import sys; from core.table import Table; "
             f"t = Table.locate('db.dv', warehouse={str(dv_table)!r}); "
             "print(t.scan().num_rows, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120)
    assert out.stdout.split() == ["18", "False"], out.stderr
