"""Commands answered before the command tree is built: a cron job's or a prompt's
``lakectl snapshots db.t -f json`` costs a Python start and a few JSON reads, not Typer.

Building the tree (lakectl/cli.py) imports Typer and its vendored Click, about two thirds of a
metadata command's CPU. A command line is answered here only when it is one of the plain
shapes below, parsed by the rules Typer applies to it (long options with a space or ``=``,
short ones with a space, global options before or after the command). Anything else - help,
completion, an option this parser does not know, a value it cannot convert - goes to the
command tree unchanged, and so does any failure before the first byte is printed: the tree
runs the command again and reports the error in its usual words and exit code. A listing is
read-only, so running it a second time changes nothing.

The command bodies live in lakectl/listings.py, which the tree's commands call too: both ways
print the same thing by construction, and tests/cli/test_quick_path.py compares them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable

# Options that take a value, by every spelling, and the keyword they fill. Global options
# (lakectl/cli.py's root callback) are accepted before and after the command, as the tree does.
_GLOBAL = {"--warehouse": "warehouse", "-w": "warehouse", "--format": "fmt", "-f": "fmt",
           "--config": "config", "--profile": "profile"}
_GLOBAL_FLAGS = {"--quiet": "quiet", "-q": "quiet"}


@dataclass
class _Line:
    """One parsed command line: the globals, the command's name, its one argument, its options."""

    globals: dict[str, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    command: str | None = None
    argument: str | None = None
    options: dict[str, str] = field(default_factory=dict)


def _parse(argv: list[str], command_options: dict[str, dict[str, str]]) -> _Line | None:
    """The line, or None when it is not a plain shape this module answers."""
    line = _Line()
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if token in _GLOBAL_FLAGS:
            line.flags.add(_GLOBAL_FLAGS[token])
        elif token.startswith("-"):
            known = dict(_GLOBAL)
            if line.command is not None:
                known.update(command_options[line.command])
            if name not in known:
                return None  # help, --version, -v, a typo: the tree's business
            key = known[name]
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                return None
            # After the command its own spelling wins (its --warehouse and --format are its own
            # parameters in the tree, resolved before the global ones).
            own = line.command is not None and name in command_options[line.command]
            target = line.options if own else line.globals
            if key in target:
                return None  # given twice: leave the precedence to the tree
            target[key] = value
        elif line.command is None:
            if token not in command_options:
                return None
            line.command = token
        elif line.argument is None:
            line.argument = token
        else:
            return None
        i += 1
    if line.command is None or line.argument is None:
        return None
    return line


def _snapshots(line: _Line) -> Callable[[], None] | None:
    """Read the history now; return what prints it (None: let the tree handle the line)."""
    from lakectl.config import Settings
    from lakectl.listings import snapshots_listing

    limit = line.options.get("limit")
    if limit is not None and not limit.lstrip("-").isdigit():
        return None
    s = Settings(warehouse=line.globals.get("warehouse"), format=line.globals.get("fmt"),
                 config_file=line.globals.get("config"), profile=line.globals.get("profile"),
                 quiet="quiet" in line.flags)
    return snapshots_listing(s, line.argument, limit=None if limit is None else int(limit),
                             branch=line.options.get("branch"), warehouse=line.options.get("warehouse"),
                             fmt=line.options.get("fmt"))


def _own(*keywords: str) -> dict[str, str]:
    """A command's own spellings of global options (its --warehouse/-w, --format/-f)."""
    return {spelling: key for spelling, key in _GLOBAL.items() if key in keywords}


# command -> (its options by spelling -> keyword, the function that answers it)
_COMMANDS = {
    "snapshots": ({"--limit": "limit", "--branch": "branch", **_own("warehouse", "fmt")}, _snapshots),
}


def answer(argv: list[str]) -> bool:
    """Answer ``argv`` (without the program name) if it is a plain shape; False to hand it to
    the command tree, which then has printed nothing and committed nothing."""
    line = _parse(argv, {name: options for name, (options, _) in _COMMANDS.items()})
    if line is None:
        return False
    from lakectl.logs import configure_logging

    configure_logging(0, "quiet" in line.flags)  # core's warnings read as the tree prints them
    try:
        show = _COMMANDS[line.command][1](line)
    except Exception:  # noqa: BLE001 - the tree runs it again and says what went wrong
        return False
    if show is None:
        return False
    try:
        show()
    except Exception as exc:  # noqa: BLE001
        if type(exc).__name__ == "Exit" and type(exc).__module__.startswith("typer"):
            sys.exit(exc.exit_code)  # Output's closed-pipe guard: exit 0, quietly
        raise
    return True
