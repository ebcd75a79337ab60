"""Every `Example(s):` line of every command's help names a real command with options and
arguments it accepts: each `lakectl ...` invocation in it (piped or not) is parsed by the
real command tree, as the shell would hand it over. (Running them all against a fixture
warehouse is issue 26's next step; this catches an example naming a flag, a value or an
argument the command does not take, such as expire-tags' help naming a missing option.)"""

from __future__ import annotations

import re
import shlex
from typing import Any, Iterator

import pytest
import typer.main
from typer._click.exceptions import UsageError as ClickUsageError

from lakectl.app import app

ROOT = typer.main.get_command(app)


def _commands(cmd: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name in getattr(cmd, "commands", None) or ():
        yield from _commands(cmd.get_command(None, name), (*path, name))


def _examples(text: str) -> list[str]:
    """The example block's lines, continuation lines (ending in a backslash) joined."""
    found = re.search(r"Examples?:\s*\n(.*)", text or "", re.S)
    if not found:
        return []
    lines, pending = [], ""
    for raw in found.group(1).replace("\b", "").splitlines():
        line = raw.strip()
        if not line and not pending:
            continue
        pending = f"{pending} {line}".strip()
        if pending.endswith("\\"):
            pending = pending[:-1].strip()
            continue
        if pending:
            lines.append(pending)
        pending = ""
    return lines


EXAMPLES = sorted({(" ".join(path) or "lakectl", line) for path, cmd in _commands(ROOT, ())
                   for line in _examples(cmd.help or "")})


def _invocations(line: str) -> list[list[str]]:
    """The lakectl argument lists of a shell line: split on pipes, redirections dropped."""
    out: list[list[str]] = []
    current: list[str] = []
    words = iter(shlex.split(line))
    for word in words:
        if word in (">", ">>"):
            next(words, None)  # the file a redirection names
        elif word == "|":
            out, current = out + [current], []
        else:
            current.append(word)
    return [args[1:] for args in (*out, current) if args and args[0] == "lakectl"]


def _parse(args: list[str]) -> None:
    """Parse as the command line would, down to the leaf command (raises on a usage error)."""
    ctx = ROOT.make_context("lakectl", list(args))
    cmd = ROOT
    while True:
        rest = [*(ctx._protected_args or []), *ctx.args]
        if not getattr(cmd, "commands", None):
            assert not rest, f"unexpected arguments {rest}"
            return
        name, *rest = rest
        sub = cmd.get_command(ctx, name)
        assert sub is not None, f"no command {name}"
        ctx, cmd = sub.make_context(name, rest, parent=ctx), sub


def test_a_wrong_example_would_fail() -> None:
    """The parse is strict: an option or argument a command does not take is refused."""
    for args in (["expire-tags", "db.t", "--retain", "3"], ["tag", "create"], ["scan", "db.t", "extra"],
                 ["nope"], ["snapshots", "db.t", "--limit", "ten"]):
        with pytest.raises((SystemExit, typer.Exit, ClickUsageError, AssertionError)):
            _parse(args)
    _parse(["expire", "db.t", "--retain-max", "5", "--retain-min", "1", "-f", "json"])  # and a right one passes
    assert _invocations("cat x | lakectl write db.t -i - >> log") == [["write", "db.t", "-i", "-"]]


def test_every_command_with_options_has_examples() -> None:
    assert len(EXAMPLES) >= 60
    assert {name for name, _ in EXAMPLES} >= {"write", "scan", "expire", "expire-tags", "tag create", "check"}


@pytest.mark.parametrize("command, line", EXAMPLES)
def test_a_help_example_parses(command: str, line: str) -> None:
    invocations = _invocations(line)
    assert invocations, f"{command}: example {line!r} runs no lakectl command"
    for args in invocations:
        try:
            _parse(args)
        except SystemExit as e:  # a usage error: lakectl's group prints it and exits 2
            pytest.fail(f"{command}: example {line!r} is refused (exit {e.code})")
        except typer.Exit as e:
            pytest.fail(f"{command}: example {line!r} is refused (exit {e.exit_code})")
        except ClickUsageError as e:
            pytest.fail(f"{command}: example {line!r} is refused: {e.format_message()}")
