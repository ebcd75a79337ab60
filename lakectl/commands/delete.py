"""lakectl delete DB.TABLE --where SQL [--dry-run]"""

from __future__ import annotations

from typing import Annotated

import typer

from lakectl.completion import complete_where
from lakectl.commands import output, settings
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("delete")
    def delete_cmd(
        ctx: typer.Context,
        table: TableArg,
        where: Annotated[str, typer.Option(
            "--where", metavar="SQL", help="SQL filter of the rows to delete, as scan --where reads it, e.g. \"dt = '2024-01-01' "
                            "AND amount < 0\".", autocompletion=complete_where)],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would be deleted; commit nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Delete the rows a --where filter matches, as one snapshot.

        A primary-key table gets -D records for the matching keys (an APPEND snapshot; the merge
        engine must take deletes: not first-row, and partial-update or aggregation only with
        their remove-record-on-delete option). An append table gets the files holding matching
        rows rewritten without them (an OVERWRITE snapshot); other files are left alone. A
        data-evolution table (with deletion-vectors.enabled) gets the rows marked in deletion
        vectors by row id, as Paimon 2.1 deletes (an APPEND snapshot, run locally).
        Nothing matching commits nothing. Runs on either engine: --engine auto picks Spark when
        the files left after pruning exceed the Spark threshold (a dynamic-bucket table always
        runs locally); --dry-run counts on that engine.

        Example:

        \b
          lakectl delete shop.orders --where "amount < 0" --dry-run
        """
        from core.ops.delete import delete

        out = output(ctx, fmt)
        s = settings(ctx)
        t = s.open_table(table, warehouse, branch=branch)
        with out.progress() as progress:
            result = delete(t, where, dry_run=dry_run, engine_settings=s.engine_settings(progress))
        from lakectl.output import result_json

        out.record(result_json(result, "delete"))
