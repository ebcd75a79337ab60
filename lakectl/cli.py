"""The lakectl command tree: global options, then one module per subcommand (loaded when it
runs: lakectl/registry.py lists them)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from lakectl.completion import complete_engine, complete_format
from lakectl.errors import EXIT_CODES_HELP, EXIT_INTERRUPTED
from lakectl.group import LakectlGroup
from lakectl.logs import configure_logging
from lakectl.version import version_line

HELP = """Create, write, scan and manage Apache Paimon tables.

Settings come from flags, then LAKECTL_* variables, then the selected profile and the config
file (lakectl config show lists them with their sources). Every command prints a table for
people or --format json, jsonl or csv for scripts, with the same field names.

Examples:

\b
  lakectl create shop.orders --primary-key id,dt --partition-by dt \\
      --option bucket=2 --schema \\
      "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING"
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
    if value:  # --version among other options; alone, lakectl/app.py answers it before this tree exists
        print(version_line())
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    warehouse: Annotated[Optional[str], typer.Option(
        "--warehouse", "-w", help="Warehouse URI [env LAKECTL_WAREHOUSE; default ./warehouse].", metavar="URI",
        show_default=False)] = None,
    fmt: Annotated[Optional[str], typer.Option(
        "--format", "-f", help="Output: table, json, jsonl or csv; scan also parquet [env LAKECTL_FORMAT; default table].",
        metavar="FORMAT", show_default=False, autocompletion=complete_format)] = None,
    config: Annotated[Optional[str], typer.Option(
        "--config", help="TOML config file [env LAKECTL_CONFIG; default ./lakectl.toml, then "
                         "~/.config/lakectl/config.toml].", metavar="PATH", show_default=False)] = None,
    profile: Annotated[Optional[str], typer.Option(
        "--profile", help="Settings of [profiles.NAME] in the config file [env LAKECTL_PROFILE].",
        metavar="NAME", show_default=False)] = None,
    engine: Annotated[Optional[str], typer.Option(
        "--engine", help="auto, local or spark (auto: Spark only for data above spark.threshold) [env LAKECTL_ENGINE].",
        metavar="ENGINE", show_default=False, autocompletion=complete_engine)] = None,
    master: Annotated[Optional[str], typer.Option(
        "--master", help="Spark master, e.g. spark://host:7077 (default local[*]) [env LAKECTL_SPARK_MASTER].",
        metavar="URL", show_default=False)] = None,
    spark_conf: Annotated[Optional[list[str]], typer.Option(
        "--spark-conf", help="Spark setting KEY=VALUE (repeatable).", metavar="KEY=VALUE", show_default=False)] = None,
    catalog_option: Annotated[Optional[list[str]], typer.Option(
        "--catalog-option", help="Paimon catalog key KEY=VALUE, e.g. metastore=jdbc, uri=jdbc:sqlite:cat.db "
                                 "(repeatable) [env LAKECTL_CATALOG_<KEY>; config [catalog]].",
        metavar="KEY=VALUE", show_default=False)] = None,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More detail; tracebacks.",
                                         show_default=False)] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
    _: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    from lakectl.config import Settings

    configure_logging(verbose, quiet)
    ctx.obj = Settings(warehouse=warehouse, format=fmt, verbose=verbose, config_file=config, engine=engine,
                       master=master, spark_conf=list(spark_conf or []), profile=profile, quiet=quiet,
                       catalog_options=list(catalog_option or []))
    ctx.call_on_close(ctx.obj.close)  # a catalog's database connections


def main() -> None:
    from core import pandas_probe

    pandas_probe.install()  # this process is lakectl alone: see core/pandas_probe.py
    try:
        app()
    except KeyboardInterrupt:  # outside a command (parsing, completion): same message and code
        print("error: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
