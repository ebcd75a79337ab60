"""lakectl rename DB.OLD DB.NEW"""

from __future__ import annotations

from typing import Annotated

import typer

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
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Check the names and show what would be copied "
                                                                "(object stores); change nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Rename a table: one atomic rename on local disk; on object stores, copy then delete.

        Refuses (exit 1) when the new name is taken. On an object store (no rename) the
        store copies every file into the new name, data first and schema files last, marked
        by a RENAMING file there, then the old table is deleted, schema files first. A rename
        that stops half-way leaves the old table or the new one readable, and commands on the
        other name say which rename to rerun: running the same rename again finishes it.
        Commits landing on the old table during the copy are copied too; one that lands
        after the last check would be lost, so stop writers first.

        Example:

        \b
          lakectl rename shop.orders shop.orders_2023
        """
        from core.ops.rename import rename_table

        out = output(ctx, fmt)
        catalog = settings(ctx).any_catalog(warehouse)
        # the server's call, one local rename, or nothing copied: no bar (and no rich imported)
        if catalog.server_owns_chain or dry_run or catalog.file_io.local:
            result = rename_table(catalog, table, new_name, dry_run=dry_run)
        else:
            with out.progress() as progress:
                result = rename_table(catalog, table, new_name, dry_run=dry_run, progress=progress)
        out.record(result)
