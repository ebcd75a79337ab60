"""lakectl rollback DB.TABLE (--snapshot-id N | --tag NAME) [--if-latest M] [--as-latest] [--dry-run]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_snapshot_id, complete_tag
from lakectl.params import BranchOpt, FormatOpt, TableArg, TimestampOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("rollback")
    def rollback_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", metavar="ID", help="Snapshot to roll back to.", autocompletion=complete_snapshot_id)] = None,
        tag: Annotated[Optional[str], typer.Option("--tag", metavar="NAME", help="Tag to roll back to (works after its snapshot expired).", autocompletion=complete_tag)] = None,
        timestamp: TimestampOpt = None,
        if_latest: Annotated[Optional[int], typer.Option("--if-latest", metavar="ID", help="Refuse (exit 4) unless the latest snapshot is this id.", autocompletion=complete_snapshot_id)] = None,
        as_latest: Annotated[bool, typer.Option("--as-latest", help="Commit a new snapshot holding the target's contents; keep every later snapshot and tag (Paimon 2.0's rollback_to_as_latest).")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be removed; change nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Make an earlier snapshot the latest: removes newer snapshots and the tags on them.

        With --as-latest nothing is removed: a new OVERWRITE snapshot takes the target's files,
        so later snapshots and tags stay readable and writers running meanwhile lose nothing.
        Without it, writers wait while the snapshots are removed. Data files of the removed
        snapshots stay until remove-orphan-files. With --branch, the
        branch's own snapshots and tags are rolled back (--snapshot-id, --tag and --timestamp
        name the branch's); main and other branches are untouched.

        Examples:

        \b
          lakectl rollback shop.orders --snapshot-id 12 --if-latest 15
          lakectl rollback shop.orders --branch dev --tag before-backfill
          lakectl rollback shop.orders --snapshot-id 10 --as-latest
        """
        from core.ops.rollback import rollback
        from core.travel import snapshot_id_of

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        if timestamp is not None:  # a tag stays a tag: rollback to it works after its snapshot expired
            snapshot_id = snapshot_id_of(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag)
        out.record(rollback(t, snapshot_id=snapshot_id, tag=tag, if_latest=if_latest, dry_run=dry_run,
                            as_latest=as_latest))
