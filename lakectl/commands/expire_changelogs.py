"""lakectl expire-changelogs DB.TABLE [--retain-max N] [--retain-min N] [--older-than 1h|ISO8601] [--max-deletes N] [--dry-run]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("expire-changelogs")
    def expire_changelogs_cmd(
        ctx: typer.Context,
        table: TableArg,
        retain_max: Annotated[Optional[int], typer.Option(
            "--retain-max", metavar="N", help="Keep at most N ids of history [option changelog.num-retained.max, "
                                              "else snapshot.num-retained.max].", show_default=False)] = None,
        retain_min: Annotated[Optional[int], typer.Option(
            "--retain-min", metavar="N", help="Keep at least N ids of history, however old [option "
                                              "changelog.num-retained.min, else snapshot.num-retained.min, 10].",
            show_default=False)] = None,
        older_than: Annotated[Optional[str], typer.Option(
            "--older-than", metavar="DURATION|TIME", help="Expire only changelogs older than this: a duration (1h, "
                                 "7d, 0s) or an ISO 8601 time [option changelog.time-retained, else "
                                 "snapshot.time-retained, 1h].", show_default=False)] = None,
        max_deletes: Annotated[Optional[int], typer.Option(
            "--max-deletes", metavar="N", help="Expire at most N changelogs in this run [option snapshot.expire.limit, "
                                               "10].", show_default=False)] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would be deleted; delete nothing.")]
        = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Expire the changelogs kept past their snapshots (changelog/) and the files only they use.

        A table whose changelog.num-retained.* or changelog.time-retained is larger than its
        snapshot.* counterpart keeps each expired snapshot's changelog as changelog/changelog-N
        (Paimon's decoupled changelog lifecycle), for streaming readers that start before the
        earliest snapshot. This removes those past their retention, as Paimon's
        expire_changelogs does; expire does the same after expiring snapshots. The newest
        changelog is always kept. A killed run leaves every kept changelog readable and the
        next run finishes it.

        Examples:

        \b
          lakectl expire-changelogs shop.orders --dry-run
          lakectl expire-changelogs shop.orders --retain-max 500 \\
            --older-than 7d --format json
        """
        from core.ops.expire_changelogs import expire_changelogs

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        with out.progress() as progress:
            result = expire_changelogs(t, retain_min=retain_min, retain_max=retain_max, older_than=older_than,
                                       max_deletes=max_deletes, dry_run=dry_run, progress=progress)
        out.record(result, title=f"expire-changelogs {t.name}" + ("" if t.is_main else f" branch {t.branch}"))
