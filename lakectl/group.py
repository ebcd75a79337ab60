"""The root command group: commands loaded on demand, global options accepted anywhere on
the line, usage errors on one line, and every failure turned into an exit code.
"""

from __future__ import annotations

import copy
import importlib
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any, NoReturn

import typer
import typer.main
from typer._click import exceptions as click_errors  # Typer's own copy of Click: its classes are in play
from typer._click.utils import make_default_short_help
from typer.core import TyperArgument, TyperGroup

from lakectl import fast_params
from lakectl.errors import EXIT_USAGE, failed, interrupted
from lakectl.logs import configure_logging
from lakectl.registry import BY_NAME, COMMANDS

fast_params.install()

# ---- global options anywhere -----------------------------------------------------------------
# The root callback's options (cli.py) are also accepted after the command: each command gets
# hidden copies of them that write into the same Settings. Root parameter -> Settings field.
GLOBAL_OPTIONS = {"warehouse": "warehouse", "fmt": "format", "config": "config_file", "profile": "profile",
                  "engine": "engine", "master": "master", "spark_conf": "spark_conf", "verbose": "verbose",
                  "quiet": "quiet", "catalog_option": "catalog_options"}


def _root_settings(ctx: Any) -> Any:
    from lakectl.config import Settings

    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = Settings()
    return root.obj


def _store(name: str):
    def callback(ctx: Any, _param: Any, value: Any) -> None:
        if ctx.resilient_parsing or value in (None, False, 0, ()):
            return  # not given after the command: what the root callback set stands
        s = _root_settings(ctx)
        if name == "verbose":
            s.verbose += value
        elif name in ("spark_conf", "catalog_options"):
            getattr(s, name).extend(value)
        else:
            setattr(s, name, value)
        if name in ("verbose", "quiet"):
            configure_logging(s.verbose, s.quiet)

    return callback


def add_global_options(cmd: Any, root_params: list[Any]) -> None:
    """Give ``cmd`` (and, for a group, each of its commands) the global options it does not
    declare itself; a command's own -w/-f keep their meaning (a command flag wins)."""
    taken = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    for param in root_params:
        if param.name in GLOBAL_OPTIONS and not taken.intersection((*param.opts, *param.secondary_opts)):
            hidden = copy.copy(param)
            hidden.hidden, hidden.expose_value = True, False
            hidden.callback = _store(GLOBAL_OPTIONS[param.name])
            cmd.params.append(hidden)
    for sub in getattr(cmd, "commands", {}).values():
        add_global_options(sub, root_params)


# ---- arguments named by their metavar alone ----------------------------------------------------
class NamedArgument(TyperArgument):
    """An argument whose help shows its metavar alone (``DB.TABLE``), as the options do, not
    Typer's ``DB.TABLE <str>``: the metavar already says what it takes."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None if self.metavar is not None else super().display_type_rich(ctx)


def name_arguments_by_metavar(cmd: Any) -> None:
    """Give ``cmd``'s (and its subcommands') arguments that have a metavar NamedArgument's help."""
    for param in cmd.params:
        if type(param) is TyperArgument and param.metavar is not None:
            param.__class__ = NamedArgument
    for sub in getattr(cmd, "commands", {}).values():
        name_arguments_by_metavar(sub)


# ---- commands on demand ----------------------------------------------------------------------
_LOADED: dict[str, Any] = {}  # name -> Click command, once per process


def _no_options() -> None:
    """Makes the holder app a group whatever the module declares."""


def load_command(name: str, root_params: list[Any]) -> Any:
    """Import the command's module and build its Click command (with the global options)."""
    if name not in _LOADED:
        module = importlib.import_module(f"lakectl.commands.{BY_NAME[name].module}")
        holder = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)
        holder.callback()(_no_options)
        module.register(holder)
        cmd = typer.main.get_command(holder).commands[name]
        add_global_options(cmd, root_params)
        name_arguments_by_metavar(cmd)
        _LOADED[name] = cmd
    return _LOADED[name]


class LazyCommands(MutableMapping):
    """The root's commands: every name of the registry, each imported when first looked up."""

    def __init__(self, root_params: list[Any], extra: dict[str, Any] | None = None) -> None:
        self._root_params = root_params
        self._extra = dict(extra or {})  # commands added the eager way (app.command)

    def __getitem__(self, name: str) -> Any:
        if name in self._extra:
            return self._extra[name]
        if name in BY_NAME:
            return load_command(name, self._root_params)
        raise KeyError(name)

    def __setitem__(self, name: str, cmd: Any) -> None:
        self._extra[name] = cmd

    def __delitem__(self, name: str) -> None:
        del self._extra[name]

    def __iter__(self) -> Iterator[str]:
        yield from BY_NAME
        yield from (n for n in self._extra if n not in BY_NAME)

    def __len__(self) -> int:
        return len(BY_NAME) + sum(n not in BY_NAME for n in self._extra)


# ---- usage errors --------------------------------------------------------------------------
# How alike an unknown option and a suggestion must be (difflib's ratio). Click's own 0.6
# suggests --verbose for --bogus; a typo (--verbos, --dryrun) stays well above this.
_SUGGESTION_CUTOFF = 0.8


def _only_close_matches(e: Any) -> None:
    """Keep only the suggestions of an unknown option that are near misses of what was typed."""
    possibilities = getattr(e, "possibilities", None)
    option = getattr(e, "option_name", None)
    if possibilities and option:
        import difflib

        e.possibilities = difflib.get_close_matches(option, possibilities, cutoff=_SUGGESTION_CUTOFF)


def _usage_error(e: Any) -> NoReturn:
    """Click's usage block as the one ``error:`` line every other failure prints; exit 2."""
    _only_close_matches(e)
    message = " ".join(e.format_message().split())
    where = f" (see {e.ctx.command_path} --help)" if e.ctx is not None else ""
    print(f"error: {message}{where}", file=sys.stderr)
    raise typer.Exit(EXIT_USAGE)


def _verbose(ctx: Any) -> bool:
    return bool(getattr(getattr(ctx, "obj", None), "verbose", 0))


_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def _named_shell(args: list[str]) -> tuple[str, str] | None:
    """(flag, shell) when the root's args are ``--show-completion SHELL`` or
    ``--install-completion SHELL``, else None."""
    for flag, shell in zip(args, args[1:]):
        if flag in ("--show-completion", "--install-completion") and shell in _SHELLS:
            return flag, shell
        if not flag.startswith("-"):
            return None  # the command's own arguments begin
    return None


def _completion_for(prog_name: str, flag: str, shell: str) -> NoReturn:
    from typer._completion_shared import get_completion_script, install

    complete_var = "_{}_COMPLETE".format(prog_name.replace("-", "_").upper())
    if flag == "--show-completion":
        print(get_completion_script(prog_name=prog_name, complete_var=complete_var, shell=shell))
    else:
        _, path = install(shell=shell, prog_name=prog_name, complete_var=complete_var)
        print(f"{shell} completion installed in {path}\nCompletion will take effect once you restart the terminal")
    raise typer.Exit(0)


class LakectlGroup(TyperGroup):
    """The root group of ``lakectl``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(self.params, self.commands)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The command list of --help from the registry: no command module is imported."""
        rows = [(e.name, e.summary) for e in COMMANDS]
        rows += [(n, self.commands[n].get_short_help_str(10_000)) for n in self.commands if n not in BY_NAME]
        with formatter.section("Commands"):
            formatter.write_dl(rows)  # whole summaries, wrapped: a cut one ends mid-phrase

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """``--show-completion zsh`` / ``--install-completion fish``: the shell named, not the
        one detected (Typer's flags take no value and would print the running shell's script)."""
        shell = _named_shell(args)
        if shell is not None:
            _completion_for(ctx.info_name or "lakectl", *shell)
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        """``lakectl <TAB>``: command names and summaries from the registry (no imports), then
        the root's options."""
        from typer._click.core import Command
        from typer._click.shell_completion import CompletionItem

        names = [CompletionItem(e.name, help=make_default_short_help(e.summary))
                 for e in COMMANDS if e.name.startswith(incomplete)]
        return names + Command.shell_complete(self, ctx, incomplete)

    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click_errors.NoArgsIsHelpError:
            raise
        except click_errors.UsageError as e:
            _usage_error(e)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except click_errors.NoArgsIsHelpError:
            raise  # `lakectl tag`: the group's help
        except click_errors.UsageError as e:
            _usage_error(e)
        except KeyboardInterrupt:
            raise typer.Exit(interrupted()) from None
        except Exception as exc:  # the CLI boundary: every failure becomes one line + exit code
            if type(exc).__module__.startswith("typer"):
                raise
            raise typer.Exit(failed(exc, _verbose(ctx))) from None
