"""lakectl mark-partition-done DB.TABLE --partition K=V[,K=V] ... [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("mark-partition-done")
    def mark_partition_done_cmd(
        ctx: typer.Context,
        table: TableArg,
        partition: Annotated[list[str], typer.Option(
            "--partition", "-p", help="Partitions to mark, each naming every partition column; several separated "
                                      "by ; (as in Paimon's procedures) or the option repeated.",
            metavar="COL=VALUE", show_default=False)],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the files it would write; write "
                                                                 "nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Mark partitions done for downstream schedulers, as Paimon's mark_partition_done: a _SUCCESS file in each.

        The table option partition.mark-done-action says what to do; its default, success-file, writes
        {"creationTime": ..., "modificationTime": ...} to the partition directory's _SUCCESS (marking again
        keeps the creation time). done-partition and mark-event need a metastore and are refused, as Java
        refuses them without one. A partition without live files is marked too and listed under missing.

        Example:

        \b
          lakectl mark-partition-done shop.orders --partition dt=2024-01-01
        """
        from core.ops.partition_done import mark_partition_done
        from lakectl.config import parse_partitions

        out = output(ctx, fmt)
        specs = parse_partitions(partition)
        t = settings(ctx).open_table(table, warehouse)
        out.record(mark_partition_done(t, specs, dry_run=dry_run))
