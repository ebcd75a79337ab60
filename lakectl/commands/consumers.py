"""lakectl consumer list|reset|delete DB.TABLE: the positions of streaming readers."""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_consumer
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt

ConsumerArg = Annotated[str, typer.Argument(help="Consumer id (as given to scan --follow --consumer-id).",
                                            metavar="ID", show_default=False, autocompletion=complete_consumer)]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Report what would change; change nothing.")]


def register(app: typer.Typer) -> None:
    consumer_app = typer.Typer(help="List, move and delete consumers: the positions of streaming readers "
                                    "(scan --follow --consumer-id), which hold back expiration.\n\n"
                                    "Example:\n\n\b\n  lakectl consumer list shop.orders",
                               no_args_is_help=True)

    @consumer_app.command("list")
    def list_cmd(ctx: typer.Context, table: TableArg, branch: BranchOpt = None, warehouse: WarehouseOpt = None,
                 fmt: FormatOpt = None) -> None:
        """List consumers: id, next snapshot to read, snapshots pending, last update.

        Example:

        \b
          lakectl consumer list shop.orders --format json
        """
        from core.ops.consumers import ConsumerInfo, list_consumers

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        from lakectl.output import about

        out.records(list_consumers(t), ConsumerInfo, title=f"consumers of {t.name}", about=about(t))

    @consumer_app.command("reset")
    def reset_cmd(
        ctx: typer.Context,
        table: TableArg,
        consumer_id: ConsumerArg,
        next_snapshot: Annotated[int, typer.Option("--next-snapshot", metavar="ID", help="The snapshot the consumer reads next.")],
        dry_run: DryRunOpt = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Set where a consumer resumes (creating it if absent).

        Example:

        \b
          lakectl consumer reset shop.orders billing --next-snapshot 12
        """
        from core.ops.consumers import reset_consumer

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(reset_consumer(t, consumer_id, next_snapshot, dry_run=dry_run))

    @consumer_app.command("delete")
    def delete_cmd(
        ctx: typer.Context,
        table: TableArg,
        consumer_id: ConsumerArg,
        dry_run: DryRunOpt = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Delete a consumer so it no longer holds back expiration.

        Example:

        \b
          lakectl consumer delete shop.orders old-job
        """
        from core.ops.consumers import delete_consumer

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(delete_consumer(t, consumer_id, dry_run=dry_run))

    app.add_typer(consumer_app, name="consumer")
