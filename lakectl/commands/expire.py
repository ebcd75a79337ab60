"""lakectl expire DB.TABLE [--retain-max N] [--retain-min N] [--older-than 1h|ISO8601] [--max-deletes N] [--dry-run]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from core.table import Table
from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("expire")
    def expire_cmd(
        ctx: typer.Context,
        table: TableArg,
        retain_max: Annotated[Optional[int], typer.Option(
            "--retain-max", metavar="N", help="Keep at most N snapshots [option snapshot.num-retained.max].",
            show_default=False)] = None,
        retain_min: Annotated[Optional[int], typer.Option(
            "--retain-min", metavar="N", help="Keep at least N snapshots, however old [option snapshot.num-retained.min, 10].",
            show_default=False)] = None,
        older_than: Annotated[Optional[str], typer.Option(
            "--older-than", metavar="DURATION|TIME", help="Expire only snapshots older than this: a duration (1h, 7d, 0s) or an ISO 8601 "
                                 "time [option snapshot.time-retained, 1h].", show_default=False)] = None,
        max_deletes: Annotated[Optional[int], typer.Option(
            "--max-deletes", metavar="N", help="Expire at most N snapshots in this run [option snapshot.expire.limit, 10].",
            show_default=False)] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would be deleted; delete nothing.")]
        = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Expire old snapshots and delete the files only they reference (tags are kept).

        Safe to run from cron next to writers: a killed run leaves the table readable and the
        next run finishes it.

        With --branch, the branch's own snapshots expire by its retention options and its own
        consumers; a file that main, another branch or any tag still reads is kept.

        Examples:

        \b
          lakectl expire shop.orders --retain-max 50 --older-than 7d --dry-run
          lakectl expire shop.orders --format jsonl >> /var/log/lakectl-expire.log
          lakectl expire shop.orders --branch dev --retain-max 5 --retain-min 1
        """
        from core.ops.expire import expire_snapshots

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        if not dry_run:  # Table.expire's guard; core/ops/expire.py is called directly here
            t.refuse_unfinished_fast_forward("expire snapshots")
        with out.progress() as progress:
            result = expire_snapshots(t, retain_min=retain_min, retain_max=retain_max, older_than=older_than,
                                      max_deletes=max_deletes, dry_run=dry_run, progress=progress)
        out.record(result, title=f"expire {t.name}" + ("" if t.is_main else f" branch {t.branch}"))
