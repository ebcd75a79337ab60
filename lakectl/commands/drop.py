"""lakectl drop DB.TABLE [--if-exists] [--dry-run]; lakectl drop-database DB [--cascade] [--if-exists] [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_database
from lakectl.params import FormatOpt, TableArg, WarehouseOpt

IfExistsOpt = Annotated[bool, typer.Option("--if-exists", help="A missing target is not an error (exit 0).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would be deleted; delete nothing.")]


def register(app: typer.Typer) -> None:
    @app.command("drop")
    def drop_cmd(
        ctx: typer.Context,
        table: TableArg,
        if_exists: IfExistsOpt = False,
        dry_run: DryRunOpt = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Drop a table: delete its directory and every file in it (no time travel afterwards).

        Refuses a directory that is not a Paimon table (no schema files). On local disk the
        directory is renamed away atomically before its files are deleted.

        Example:

        \b
          lakectl drop shop.orders_tmp --dry-run
        """
        from core.ops.drop import drop_table

        out = output(ctx, fmt)
        t = settings(ctx).locate_table(table, warehouse)
        out.record(drop_table(t, if_exists=if_exists, dry_run=dry_run))

    @app.command("drop-database")
    def drop_database_cmd(
        ctx: typer.Context,
        database: Annotated[str, typer.Argument(help="The database to drop.", metavar="DATABASE",
                                                autocompletion=complete_database, show_default=False)],
        cascade: Annotated[bool, typer.Option("--cascade", help="Drop the tables it holds too.")] = False,
        if_exists: IfExistsOpt = False,
        dry_run: DryRunOpt = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Drop a database (its DATABASE.db directory); refuses while it holds tables unless --cascade.

        Example:

        \b
          lakectl drop-database scratch --cascade --dry-run
        """
        from core.ops.drop import drop_database

        out = output(ctx, fmt)
        catalog = settings(ctx).any_catalog(warehouse)
        out.record(drop_database(catalog, database, cascade=cascade, if_exists=if_exists, dry_run=dry_run))
