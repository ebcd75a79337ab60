"""lakectl scan DB.TABLE [--snapshot-id N | --timestamp T | --tag NAME | --incremental-between A,B]
[--select] [--where] [--limit] [--output]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from core.errors import UsageError
from core.table import Table
from lakectl.commands import output, settings
from lakectl.completion import complete_snapshot_id, complete_tag
from lakectl.output import jsonable
from lakectl.params import FormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("scan")
    def scan_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", help="Read as of this snapshot.", autocompletion=complete_snapshot_id)] = None,
        timestamp: Annotated[Optional[str], typer.Option("--timestamp", help="Read as of this time (ISO 8601 or epoch ms).")] = None,
        tag: Annotated[Optional[str], typer.Option("--tag", help="Read the snapshot of this tag.", autocompletion=complete_tag)] = None,
        select: Annotated[Optional[str], typer.Option("--select", help="Comma-separated columns.")] = None,
        where: Annotated[Optional[str], typer.Option("--where", help="SQL filter, e.g. \"dt = '2024-01-01' AND id > 5\".")] = None,
        limit: Annotated[Optional[int], typer.Option("--limit", help="At most this many rows.")] = None,
        output_path: Annotated[Optional[str], typer.Option("--output", "-O", help="Write rows to a .parquet, .csv or .jsonl file (a directory of part files on Spark).")] = None,
        between: Annotated[Optional[str], typer.Option("--incremental-between", help="Read the changes of snapshots after A up to B (A,B), with a _row_kind column.")] = None,
        from_snapshot: Annotated[Optional[int], typer.Option("--from-snapshot", help="Changes after this snapshot (exclusive); with --to-snapshot, default the latest.", autocompletion=complete_snapshot_id)] = None,
        to_snapshot: Annotated[Optional[int], typer.Option("--to-snapshot", help="Changes up to this snapshot (inclusive).", autocompletion=complete_snapshot_id)] = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Read the table (merge-on-read) at the latest or an earlier snapshot.

        With --incremental-between A,B (or --from-snapshot A --to-snapshot B) it reads what
        changed after snapshot A up to B instead: rows with a _row_kind column (+I, -U, +U,
        -D), from the changelog files when the table has a changelog-producer, otherwise from
        the data files those snapshots added.

        Examples:

        \b
          lakectl scan shop.orders --where "dt = '2024-01-01' AND amount > 10"
          lakectl scan shop.orders --snapshot-id 3 --select id,amount -f json
          lakectl scan shop.orders --tag eod-2024-01-01 --output orders.parquet
          lakectl scan shop.orders --incremental-between 3,7 --format jsonl
        """
        from core.ops.create import parse_key_list
        from core.ops.scan import ScanOutput, scan_to_output
        from core.sinks import write_output

        out = output(ctx, fmt)
        s = settings(ctx)
        t = Table.open(table, warehouse=s.resolve_warehouse(warehouse))
        columns = parse_key_list(select) or None
        span = _incremental_range(t, between, from_snapshot, to_snapshot)
        if span is not None:
            if any(x is not None for x in (snapshot_id, timestamp, tag)):
                raise UsageError("an incremental read takes no --snapshot-id, --timestamp or --tag")
            with out.progress() as progress:
                data = t.changes(*span, select=columns, where=where, limit=limit,
                                 engine_settings=s.engine_settings(progress))
            if output_path:
                size = write_output(data, output_path, jsonable)
                out.record(ScanOutput(t.name, output_path, data.num_rows, size, "local"))
            else:
                out.arrow(data)
            return
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


def _incremental_range(table: Table, between: str | None, start: int | None, end: int | None) -> tuple[int, int] | None:
    """(A, B) of an incremental read, or None for a snapshot read."""
    if between is not None:
        if start is not None or end is not None:
            raise UsageError("give --incremental-between or --from-snapshot/--to-snapshot, not both")
        from core.ops.changes import parse_between

        return parse_between(between)
    if start is None and end is None:
        return None
    if start is None:
        raise UsageError("--to-snapshot needs --from-snapshot")
    if end is None:
        end = table.snapshots.latest_id() or 0
    return start, end
