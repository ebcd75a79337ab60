"""lakectl rename DB.OLD DB.NEW"""

from __future__ import annotations

from typing import Annotated

import typer

from core.warehouse import Warehouse
from lakectl.commands import output, settings
from lakectl.completion import complete_table
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("rename")
    def rename_cmd(
        ctx: typer.Context,
        table: TableArg,
        new_name: Annotated[str, typer.Argument(help="The new name, DB.TABLE (the database must exist).",
                                                metavar="DB.NEW", show_default=False,
                                                autocompletion=complete_table)],
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Rename a table by renaming its directory (local warehouses only: one atomic rename).

        Refuses (exit 1) when the new name is taken, and on object stores, which have no atomic
        rename: copying every object and deleting the old ones could leave two partial tables
        if interrupted, so nothing is changed there.

        Example:

        \b
          lakectl rename shop.orders_v2 shop.orders
        """
        from core.ops.rename import rename_table

        out = output(ctx, fmt)
        wh = Warehouse.open(settings(ctx).resolve_warehouse(warehouse))
        out.record(rename_table(wh, table, new_name))
