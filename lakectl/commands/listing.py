"""lakectl list [DB]: the databases of the warehouse, or the tables of one database."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_database
from lakectl.params import FormatOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("list")
    def list_cmd(
        ctx: typer.Context,
        database: Annotated[Optional[str], typer.Argument(help="List this database's tables.", metavar="DATABASE",
                                                                 autocompletion=complete_database)] = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """List databases, or the tables of DATABASE.

        Example:

        \b
          lakectl list shop
        """
        from core.ops.describe import CatalogEntry, list_catalog

        out = output(ctx, fmt)
        out.records(list_catalog(settings(ctx).any_catalog(warehouse), database), CatalogEntry)
