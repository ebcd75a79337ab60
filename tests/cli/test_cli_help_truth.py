"""Help that is true: --show-completion prints the script of the shell named, a typo suggests
only a near miss, and every list of output formats names parquet where scan takes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()


def invoke(*args: str) -> Result:
    return runner.invoke(app, list(args), prog_name="lakectl")


# The first line that tells each shell's script apart (Typer's templates for bash, zsh, fish).
SCRIPT_MARKS = {"bash": "complete -o default -F _lakectl_completion lakectl",
                "zsh": "#compdef lakectl",
                "fish": "complete --command lakectl"}


@pytest.mark.parametrize("shell", sorted(SCRIPT_MARKS))
def test_show_completion_prints_the_named_shells_script(shell: str) -> None:
    result = invoke("--show-completion", shell)
    assert result.exit_code == 0, result.stderr
    assert SCRIPT_MARKS[shell] in result.stdout
    others = [mark for name, mark in SCRIPT_MARKS.items() if name != shell]
    assert not any(mark in result.stdout for mark in others), result.stdout[:200]


@pytest.mark.parametrize("typed, suggested", [
    ("--bogus", None),           # Click's own cutoff suggested --verbose
    ("--verbos", "--verbose"),
    ("--warehous", "--warehouse"),
])
def test_an_unknown_option_suggests_only_near_misses(typed: str, suggested: str | None) -> None:
    result = invoke(typed)
    assert result.exit_code == 2
    assert f"No such option: {typed}" in result.stderr
    if suggested is None:
        assert "Possible options" not in result.stderr, result.stderr
    else:
        assert f"(Possible options: {suggested})" in result.stderr, result.stderr


def test_scan_formats_agree_on_parquet(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    assert invoke("-w", wh, "create", "db.t", "--schema", "id INT").exit_code == 0
    refused = invoke("-w", wh, "scan", "db.t", "--format", "xml")
    assert refused.exit_code == 2 and "table, json, jsonl, csv, parquet" in refused.stderr, refused.stderr
    assert "parquet" in " ".join(invoke("scan", "--help").stdout.split()).split("-f, --format")[1][:120]
    completed = runner.invoke(app, [], prog_name="lakectl", env={
        "_LAKECTL_COMPLETE": "complete_bash", "COMP_WORDS": "lakectl scan db.t -f ", "COMP_CWORD": "4"})
    assert "parquet" in completed.stdout.split(), completed.stdout
    # a command that does not take parquet says whose it is
    other = invoke("-w", wh, "snapshots", "db.t", "--format", "parquet")
    assert other.exit_code == 2 and "parquet is scan's alone" in other.stderr, other.stderr


def test_global_options_work_after_the_command_as_the_man_pages_say(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "man" / "lakectl-scan.1").read_text()
    assert "go before or after the command" in page and "go before the command;" not in page
    wh = str(tmp_path / "wh")
    assert invoke("create", "db.t", "--schema", "id INT", "-w", wh, "-q").exit_code == 0
    after = invoke("snapshots", "db.t", "-w", wh, "-f", "json", "-q")
    assert after.exit_code == 0 and after.stdout.strip() == "[]", after.stderr


def test_checks_plain_table_names_each_path_once(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    assert invoke("-w", str(wh), "create", "db.t", "--schema", "id INT", "-q").exit_code == 0
    rows = tmp_path / "rows.csv"
    rows.write_text("id\n1\n")
    assert invoke("-w", str(wh), "write", "db.t", "-i", str(rows), "-q").exit_code == 0
    snapshot = wh / "db.db" / "t" / "snapshot" / "snapshot-1"
    snapshot.write_text("{garbage")
    plain = invoke("-w", str(wh), "check", "db.t")
    assert plain.exit_code == 1
    line = next(x for x in plain.stdout.splitlines() if x.startswith("snapshot "))
    assert line.split()[1] == "snapshot/snapshot-1" and line.count("snapshot-1") == 1, line
    assert str(snapshot) not in plain.stdout and "cannot decode snapshot file" in line
    # the JSON keeps the full path for scripts
    problem = json.loads(invoke("-w", str(wh), "check", "db.t", "-f", "json").stdout)["problems"][0]
    assert problem["path"] == str(snapshot)
