"""lakectl rescale DB.TABLE --buckets N [--partition COL=VALUE[,COL=VALUE...] ...] [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.config import parse_partitions
from lakectl.params import FormatOpt, PartitionsOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("rescale")
    def rescale_cmd(
        ctx: typer.Context,
        table: TableArg,
        buckets: Annotated[int, typer.Option(
            "--buckets", metavar="N", help="The new bucket count (at least 1).", show_default=False)],
        partition: PartitionsOpt = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be rewritten; write nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Change a fixed-bucket table's bucket count by rewriting its rows into the new buckets, as one OVERWRITE snapshot (Paimon's rescale).

        Without --partition the whole table is rewritten and its bucket option set to N (first, so that a
        crash in between leaves writers refused until this command runs again). With --partition only those
        partitions are rewritten and the bucket option stays, as Paimon's procedure does: Paimon's writers
        and lakectl's then refuse those partitions until they are rescaled back to the option's count.
        Primary-key tables are rewritten merged (deleted keys dropped). A commit that lands in the rewritten
        partitions meanwhile is never dropped: the rescale reads again, and gives up with exit 4.

        Examples:

        \b
          lakectl rescale shop.orders --buckets 4 --dry-run
          lakectl rescale shop.orders --buckets 4
          lakectl rescale shop.orders --buckets 8 --partition dt=2024-01-01
        """
        from core.ops.rescale import rescale

        out = output(ctx, fmt)
        s = settings(ctx)
        t = s.open_table(table, warehouse)
        specs = parse_partitions(partition) if partition else None
        with out.progress() as progress:
            result = rescale(t, buckets, partitions=specs, dry_run=dry_run,
                             engine_settings=s.engine_settings(progress))
        out.record(result)
