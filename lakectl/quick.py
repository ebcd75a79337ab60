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

``write`` (of a whole input) and ``scan`` are answered here too (issue 45's and issue 44's
whole-process goals). A write commits, so these two may hand a line to the tree only before
any work: their shapes are checked and their values converted first, and once the command
runs, its failures are reported here with the tree's own code (lakectl/errors.py's ``failed``
and ``interrupted``): the same one line and exit code.

The command bodies live in lakectl/listings.py, lakectl/writes.py and lakectl/scans.py, which
the tree's commands call too: both ways print the same thing by construction, and
tests/cli/test_quick_path.py compares them. ``LAKECTL_QUICK_PATH=0`` sends every line to the
tree (lakectl/app.py).
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
    switches: set[str] = field(default_factory=set)  # the command's own flags given


def _parse(argv: list[str], command_options: dict[str, dict[str, str]],
           command_flags: dict[str, dict[str, str]] | None = None) -> _Line | None:
    """The line, or None when it is not a plain shape this module answers."""
    line = _Line()
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        own_flags = (command_flags or {}).get(line.command or "", {})
        if token in _GLOBAL_FLAGS:
            line.flags.add(_GLOBAL_FLAGS[token])
        elif token in own_flags:
            line.switches.add(own_flags[token])
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
    from lakectl.listings import snapshots_listing

    limit = line.options.get("limit")
    if limit is not None and not limit.lstrip("-").isdigit():
        return None
    return snapshots_listing(_settings(line), line.argument, limit=None if limit is None else int(limit),
                             branch=line.options.get("branch"), warehouse=line.options.get("warehouse"),
                             fmt=line.options.get("fmt"))


def _settings(line: _Line):  # noqa: ANN202 - lakectl.config.Settings, imported on use
    from lakectl.config import Settings

    return Settings(warehouse=line.globals.get("warehouse"), format=line.globals.get("fmt"),
                    config_file=line.globals.get("config"), profile=line.globals.get("profile"),
                    quiet="quiet" in line.flags)


def _integer(text: str | None) -> int | None | bool:
    """An integer option as the tree converts it (``int`` of the stripped text); False when the
    tree would refuse it (its usage error is the tree's to print)."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return False


def _write(line: _Line) -> Callable[[], None] | None:
    """The write to run (None: let the tree handle the line). Nothing is read or checked
    against the table here: the shapes are checked and the values converted, no more."""
    o = line.options
    if "input" not in o:
        return None  # --input-table (Spark), or a missing --input: the tree's words

    def run() -> None:
        from lakectl.output import Output
        from lakectl.writes import write_whole

        s = _settings(line)
        out = Output(s.resolve_format(o.get("fmt")), quiet=s.quiet)  # as the tree's output(ctx, fmt)
        write_whole(s, out, line.argument, input=o["input"], input_format=o.get("input_format"),
                    mode=o.get("mode", "append"), partition=o.get("partition"),
                    fill_missing_columns="fill_missing_columns" in line.switches,
                    row_kind_column=o.get("row_kind_column"), branch=o.get("branch"), warehouse=o.get("warehouse"))

    return run


def _scan(line: _Line) -> Callable[[], None] | None:
    """The scan to run (None: let the tree handle the line): a snapshot read to stdout or a
    file, the values converted as the tree converts them."""
    o = line.options
    snapshot_id, limit = _integer(o.get("snapshot_id")), _integer(o.get("limit"))
    if snapshot_id is False or limit is False:
        return None

    def run() -> None:
        from lakectl.scans import scan, scan_output

        s = _settings(line)
        scan(s, scan_output(s, o.get("fmt")), line.argument, snapshot_id=snapshot_id, timestamp=o.get("timestamp"),
             tag=o.get("tag"), select=o.get("select"), where=o.get("where"), limit=limit,
             output_path=o.get("output"), branch=o.get("branch"), warehouse=o.get("warehouse"))

    return run


def _own(*keywords: str) -> dict[str, str]:
    """A command's own spellings of global options (its --warehouse/-w, --format/-f)."""
    return {spelling: key for spelling, key in _GLOBAL.items() if key in keywords}


# command -> (its options by spelling -> keyword, the function that answers it). A listing's
# function reads, then returns what prints; any failure sends the line to the tree.
_COMMANDS = {
    "snapshots": ({"--limit": "limit", "--branch": "branch", **_own("warehouse", "fmt")}, _snapshots),
}
# command -> (options, flags, the function that returns the command to run): the commands that
# run here once their line is parsed, reporting their own failures (a write commits: it cannot
# run a second time in the tree).
_RUNS = {
    "write": ({"--input": "input", "-i": "input", "--input-format": "input_format", "--mode": "mode",
               "--partition": "partition", "-p": "partition", "--row-kind-column": "row_kind_column",
               "--branch": "branch", **_own("warehouse", "fmt")},
              {"--fill-missing-columns": "fill_missing_columns"}, _write),
    "scan": ({"--snapshot-id": "snapshot_id", "--timestamp": "timestamp", "--tag": "tag", "--select": "select",
              "--where": "where", "--limit": "limit", "--output": "output", "-O": "output", "--branch": "branch",
              **_own("warehouse", "fmt")}, {}, _scan),
}

# Options other engineers' work adds to the tree before this parser learns them: such a line
# is the tree's whatever else it holds.
_TREE_ONLY = ("--catalog-option",)


def answer(argv: list[str]) -> bool:
    """Answer ``argv`` (without the program name) if it is a plain shape; False to hand it to
    the command tree, which then has printed nothing and committed nothing."""
    if any(a.partition("=")[0] in _TREE_ONLY for a in argv):
        return False
    options = {name: opts for name, (opts, _) in _COMMANDS.items()}
    options.update({name: opts for name, (opts, _, _) in _RUNS.items()})
    line = _parse(argv, options, {name: flags for name, (_, flags, _) in _RUNS.items()})
    if line is None:
        return False
    from lakectl.logs import configure_logging

    configure_logging(0, "quiet" in line.flags)  # core's warnings read as the tree prints them
    if line.command in _RUNS:
        run = _RUNS[line.command][2](line)
        if run is None:
            return False
        _run_reported(run)
        return True
    try:
        show = _COMMANDS[line.command][1](line)
    except Exception:  # noqa: BLE001 - the tree runs it again and says what went wrong
        return False
    if show is None:
        return False
    _run_reported(show, closed_pipe_only=True)
    return True


def _run_reported(run: Callable[[], None], closed_pipe_only: bool = False) -> None:
    """Run a command's body at the CLI boundary, as the tree's LakectlGroup.invoke does: a
    failure is one line and its exit code, Ctrl-C is ``interrupted``, a closed pipe exit 0.
    ``closed_pipe_only``: let any other failure through (a listing's printing, as before)."""
    from core import pandas_probe

    pandas_probe.install()  # as lakectl.cli.main: this process is lakectl alone
    try:
        run()
    except KeyboardInterrupt:
        if closed_pipe_only:
            raise
        from lakectl.errors import interrupted

        sys.exit(interrupted())
    except Exception as exc:  # noqa: BLE001 - the CLI boundary
        if type(exc).__name__ == "Exit" and type(exc).__module__.startswith("typer"):
            sys.exit(exc.exit_code)  # Output's closed-pipe guard: exit 0, quietly
        if closed_pipe_only:
            raise
        from lakectl.errors import failed

        sys.exit(failed(exc, False))
