"""lakectl truncate DB.TABLE [--dry-run]; lakectl drop-partition DB.TABLE --partition K=V[,K=V] ... [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt

DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would be deleted; commit nothing.")]


def register(app: typer.Typer) -> None:
    @app.command("truncate")
    def truncate_cmd(
        ctx: typer.Context,
        table: TableArg,
        dry_run: DryRunOpt = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Delete every row as one OVERWRITE snapshot; data files go when that snapshot's predecessors expire.

        Example:

        \b
          lakectl truncate shop.orders_staging
        """
        from core.ops.truncate import truncate

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(truncate(t, dry_run=dry_run))

    @app.command("drop-partition")
    def drop_partition_cmd(
        ctx: typer.Context,
        table: TableArg,
        partition: Annotated[list[str], typer.Option(
            "--partition", "-p", help="Partitions to drop, each naming every partition column; several separated by ; "
                                "(as in Paimon's procedures) or the option repeated.",
            metavar="COL=VALUE", show_default=False)],
        dry_run: DryRunOpt = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Drop partitions as one OVERWRITE snapshot; data files go when that snapshot's predecessors expire.

        Each partition must name every partition column, each column once. A named partition without live files
        is listed under "missing"; when none of them has live files nothing is committed (exit 3).

        Example:

        \b
          lakectl drop-partition shop.orders --partition dt=2024-01-01
          lakectl drop-partition shop.orders \\
              --partition 'dt=2024-01-01;dt=2024-01-02'
        """
        from core.ops.truncate import drop_partitions
        from lakectl.config import parse_partitions

        out = output(ctx, fmt)
        specs = parse_partitions(partition)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(drop_partitions(t, specs, dry_run=dry_run))
