"""The lakectl command line: global options, then one module per subcommand."""

from __future__ import annotations

import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Optional

import typer

from lakectl.commands import (alter_schema, check, compact, config, consumers, create, describe, expire, expire_partitions, files, listing, lookup, orphans, rollback, scan, schemas,
                              snapshots, tags, write)
from lakectl.config import Settings
from lakectl.errors import EXIT_CODES_HELP, EXIT_INTERRUPTED, LakectlGroup

HELP = """Create, write, scan and manage Apache Paimon tables.

Settings come from flags, then LAKECTL_* variables, then the selected profile and the config
file (lakectl config show lists them with their sources). Every command prints a table for
people or --format json, jsonl or csv for scripts, with the same field names.

Examples:

\b
  lakectl create shop.orders --schema "id BIGINT, amount DOUBLE" \\
      --primary-key id
  lakectl write shop.orders --input orders.csv
  lakectl scan shop.orders --format json
  lakectl --profile prod expire shop.orders --retain-max 50
"""

app = typer.Typer(
    cls=LakectlGroup,
    name="lakectl",
    help=HELP,
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        try:
            print(f"lakectl {version('lakectl')}")
        except PackageNotFoundError:
            print("lakectl (not installed)")
        raise typer.Exit()


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (the test runner swaps it per call)."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _configure_logging(verbose: int, quiet: bool = False) -> None:
    """core and lakectl log to stderr: warnings (errors only with --quiet), INFO (engine
    choice...) with -v, DEBUG with -vv."""
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.ERROR if quiet else logging.WARNING
    for name in ("core", "lakectl"):
        logger = logging.getLogger(name)
        logger.handlers = [h for h in logger.handlers if not isinstance(h, _StderrHandler)]
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False


@app.callback()
def root(
    ctx: typer.Context,
    warehouse: Annotated[Optional[str], typer.Option(
        "--warehouse", "-w", help="Warehouse URI [env LAKECTL_WAREHOUSE; default ./warehouse].", metavar="URI",
        show_default=False)] = None,
    fmt: Annotated[Optional[str], typer.Option(
        "--format", "-f", help="Output: table, json, jsonl or csv [env LAKECTL_FORMAT; default table].",
        metavar="FORMAT", show_default=False)] = None,
    config: Annotated[Optional[str], typer.Option(
        "--config", help="TOML config file [env LAKECTL_CONFIG; default ./lakectl.toml, then "
                         "~/.config/lakectl/config.toml].", metavar="PATH", show_default=False)] = None,
    profile: Annotated[Optional[str], typer.Option(
        "--profile", help="Settings of [profiles.NAME] in the config file [env LAKECTL_PROFILE].",
        metavar="NAME", show_default=False)] = None,
    engine: Annotated[Optional[str], typer.Option(
        "--engine", help="auto, local or spark (auto: Spark only for data above spark.threshold) [env LAKECTL_ENGINE].",
        metavar="ENGINE", show_default=False)] = None,
    master: Annotated[Optional[str], typer.Option(
        "--master", help="Spark master, e.g. spark://host:7077 (default local[*]) [env LAKECTL_SPARK_MASTER].",
        metavar="URL", show_default=False)] = None,
    spark_conf: Annotated[Optional[list[str]], typer.Option(
        "--spark-conf", help="Spark setting KEY=VALUE (repeatable).", metavar="KEY=VALUE", show_default=False)] = None,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More detail; tracebacks.",
                                         show_default=False)] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
    _: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    _configure_logging(verbose, quiet)
    ctx.obj = Settings(warehouse=warehouse, format=fmt, verbose=verbose, config_file=config, engine=engine,
                       master=master, spark_conf=list(spark_conf or []), profile=profile, quiet=quiet)


for module in (create, write, scan, lookup, compact, expire, expire_partitions, snapshots, tags, consumers, rollback, orphans, files, describe,
               listing, alter_schema, schemas, check, config):
    module.register(app)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # outside a command (parsing, completion): same message and code
        print("error: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
