"""lakectl scan DB.TABLE [--snapshot-id N | --timestamp T | --tag NAME] [--select] [--where] [--limit] [--output]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from core.ops.create import parse_key_list
from core.ops.scan import scan_to_output
from core.table import Table
from lakectl.commands import output, settings
from lakectl.output import jsonable
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("scan")
    def scan_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", help="Read as of this snapshot.")] = None,
        timestamp: Annotated[Optional[str], typer.Option("--timestamp", help="Read as of this time (ISO 8601 or epoch ms).")] = None,
        tag: Annotated[Optional[str], typer.Option("--tag", help="Read the snapshot of this tag.")] = None,
        select: Annotated[Optional[str], typer.Option("--select", help="Comma-separated columns.")] = None,
        where: Annotated[Optional[str], typer.Option("--where", help="SQL filter, e.g. \"dt = '2024-01-01' AND id > 5\".")] = None,
        limit: Annotated[Optional[int], typer.Option("--limit", help="At most this many rows.")] = None,
        output_path: Annotated[Optional[str], typer.Option("--output", "-O", help="Write rows to a .parquet, .csv or .jsonl file (a directory of part files on Spark).")] = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Read the table (merge-on-read) at the latest or an earlier snapshot.

        Example: lakectl scan shop.orders --snapshot-id 3 --where "dt = '2024-01-01'" --format json
        """
        out = output(ctx, fmt)
        s = settings(ctx)
        t = Table.open(table, warehouse=s.resolve_warehouse(warehouse))
        columns = parse_key_list(select) or None
        with out.progress() as progress:
            es = s.engine_settings(progress)
            if output_path:
                result = scan_to_output(t, output_path, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag,
                                        select=columns, where=where, limit=limit, engine_settings=es,
                                        json_value=jsonable)
            else:
                data = t.scan(snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, select=columns, where=where,
                              limit=limit, engine_settings=es)
        if output_path:
            out.record(result)
        else:
            out.arrow(data)
