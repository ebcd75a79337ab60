"""Help that is true: --show-completion prints the script of the shell named, a typo suggests
only a near miss, and every list of output formats names parquet where scan takes it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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


def _parameters() -> list[tuple[str, Any, Any]]:
    """(command path, parameter, its command's context) of every parameter of every command
    and subcommand of the tree."""
    import typer
    from typer.core import _click as click

    found: list[tuple[str, Any, Any]] = []

    def walk(command: Any, path: str, ctx: Any) -> None:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                walk(sub, f"{path} {name}".strip(), click.Context(sub, parent=ctx, info_name=name))
            return
        found.extend((path, param, ctx) for param in command.params)

    root = typer.main.get_command(app)
    walk(root, "", click.Context(root, info_name="lakectl"))
    return found


def _value_options() -> list[tuple[str, str, str | None]]:
    """(command path, option's long name, its metavar) of every option that takes a value."""
    return [(path, max(param.opts, key=len), param.metavar) for path, param, _ in _parameters()
            if getattr(param, "param_type_name", "") == "option" and not param.is_flag and not param.count]


def test_every_argument_is_shown_by_what_it_takes_without_typers_type_name() -> None:
    arguments = [(path, param.get_help_record(ctx)[0]) for path, param, ctx in _parameters()
                 if getattr(param, "param_type_name", "") == "argument"]
    assert len(arguments) > 40 and ("create", "DB.TABLE") in arguments
    assert [(path, shown) for path, shown in arguments if "<" in shown or not re.search("[A-Z]", shown)] == []


# Options whose name means different things in different commands: create's --comment is the
# table's comment, alter-schema's COL:TEXT a column's; remove-orphan-files' --older-than takes a
# duration only, expire's a duration or a time.
_MEANINGS_DIFFER = {"--comment", "--older-than"}


def test_every_option_names_what_it_takes_in_capitals_and_the_same_way_everywhere() -> None:
    options = _value_options()
    assert len(options) > 100 and any(name == "--partition" for _, name, _ in options)
    untyped = [(path, name, metavar) for path, name, metavar in options
               if metavar is None or not re.fullmatch(r'"?[A-Z][A-Z0-9_.,:=|\[\] ]*"?', metavar)]
    assert untyped == [], "options showing Typer's <str>/<int> instead of what they take"
    spelled: dict[str, set[str | None]] = {}
    for _, name, metavar in options:
        spelled.setdefault(name, set()).add(metavar)
    differing = {name: sorted(map(str, m)) for name, m in spelled.items() if len(m) > 1 and name not in _MEANINGS_DIFFER}
    assert differing == {}
