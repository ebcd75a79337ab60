"""lakectl compact-manifests DB.TABLE [--branch B] [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("compact-manifests")
    def compact_manifests_cmd(
        ctx: typer.Context,
        table: TableArg,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show how many manifests there are and would be; "
                                                                "write nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Rewrite the latest snapshot's manifests into as few as manifest.target-file-size allows, as one COMPACT snapshot that changes no data.

        Every lakectl commit already merges manifests as Paimon does; this is for tables written
        before that or by writers that do not (Paimon's compact_manifest procedure).

        Example:

        \b
          lakectl compact-manifests shop.orders --dry-run
        """
        from core.ops.compact_manifests import compact_manifests

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        out.record(compact_manifests(t, dry_run=dry_run))
