"""lakectl expire-tags DB.TABLE [--older-than DURATION|TIME] [--dry-run]: delete tags whose time is up."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("expire-tags")
    def expire_tags_cmd(
        ctx: typer.Context,
        table: TableArg,
        older_than: Annotated[Optional[str], typer.Option("--older-than", help="Also delete tags created before this: a duration back from now (30d) or an ISO 8601 time.", metavar="DURATION|TIME")] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show which tags would be deleted; change nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Delete tags whose TTL (their own, from tag create --time-retained, else the table option
        tag.default-time-retained) has passed, or created before --older-than.

        Files only those tags held are reclaimed by expire and remove-orphan-files.

        Example:

        \b
          lakectl expire-tags shop.orders --older-than 90d --dry-run
        """
        from core.ops.tags import ExpireTagsResult, expire_tags

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        expired = expire_tags(t, older_than=older_than, dry_run=dry_run)
        out.record(ExpireTagsResult(t.name, t.branch, expired, dry_run), title=f"expired tags of {t.name}")
