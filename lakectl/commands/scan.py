"""lakectl scan DB.TABLE [--snapshot-id N | --timestamp T | --tag NAME | --incremental-between A,B | --follow]
[--select] [--where] [--limit] [--output]"""

from __future__ import annotations

import threading
from typing import Annotated, Any, Callable, Optional

import typer

from core.errors import UsageError
from core.table import Table
from lakectl.commands import output, settings, stop_on_sigterm
from lakectl.completion import (complete_between_mode, complete_column_list, complete_consumer, complete_scan_mode,
                                complete_snapshot_id, complete_tag, complete_where)
from lakectl.output import csv_text, jsonable
from lakectl.params import BranchOpt, ScanFormatOpt, TableArg, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("scan")
    def scan_cmd(
        ctx: typer.Context,
        table: TableArg,
        snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", metavar="ID", help="Read as of this snapshot.", autocompletion=complete_snapshot_id)] = None,
        timestamp: Annotated[Optional[str], typer.Option("--timestamp", metavar="TIME", help="Read as of this time (ISO 8601 or epoch ms).")] = None,
        tag: Annotated[Optional[str], typer.Option("--tag", metavar="NAME", help="Read the snapshot of this tag.", autocompletion=complete_tag)] = None,
        select: Annotated[Optional[str], typer.Option("--select", metavar="COLUMNS", help="Comma-separated columns; row-tracking tables also have the system columns _ROW_ID and _SEQUENCE_NUMBER.", autocompletion=complete_column_list)] = None,
        where: Annotated[Optional[str], typer.Option("--where", metavar="SQL", help="SQL filter, e.g. \"dt = '2024-01-01' AND id > 5\"; binary literals as X'0700ff' or FROM_BASE64('BwD/').", autocompletion=complete_where)] = None,
        limit: Annotated[Optional[int], typer.Option("--limit", metavar="N", help="At most this many rows; 0 for all [default: all; 100 for a table on a terminal].")] = None,
        output_path: Annotated[Optional[str], typer.Option("--output", "-O", metavar="FILE", help="Write rows to one .parquet, .csv or .jsonl file (on every engine), or to stdout (-) in the --format given (parquet too).")] = None,
        between: Annotated[Optional[str], typer.Option("--incremental-between", metavar="A,B", help="Read the changes of snapshots after A up to B (A,B), or between two tags (TAG1,TAG2, a diff), with a _row_kind column.")] = None,
        between_mode: Annotated[Optional[str], typer.Option("--incremental-between-scan-mode", metavar="MODE", autocompletion=complete_between_mode, help="With an incremental range: auto, delta, changelog or diff [option incremental-between-scan-mode; default auto].")] = None,
        from_snapshot: Annotated[Optional[int], typer.Option("--from-snapshot", metavar="ID", help="Changes after this snapshot (exclusive); with --to-snapshot, default the latest.", autocompletion=complete_snapshot_id)] = None,
        to_snapshot: Annotated[Optional[int], typer.Option("--to-snapshot", metavar="ID", help="Changes up to this snapshot (inclusive).", autocompletion=complete_snapshot_id)] = None,
        follow: Annotated[bool, typer.Option("--follow", help="Streaming mode: print each new snapshot's changes as it commits, until interrupted.")] = False,
        scan_mode: Annotated[Optional[str], typer.Option("--scan-mode", autocompletion=complete_scan_mode, help="With --follow: latest-full (default), latest, from-snapshot, from-snapshot-full, from-timestamp or compacted-full [option scan.mode].", metavar="MODE")] = None,
        consumer_id: Annotated[Optional[str], typer.Option("--consumer-id", autocompletion=complete_consumer, help="With --follow: keep the position in consumer/consumer-ID, resume there, and hold back expiration [option consumer-id].", metavar="ID")] = None,
        bounded_watermark: Annotated[Optional[int], typer.Option("--bounded-watermark", help="With --follow: stop at the first snapshot whose watermark is past this [option scan.bounded.watermark].", metavar="MILLIS")] = None,
        max_snapshots: Annotated[Optional[int], typer.Option("--max-snapshots", help="With --follow: stop after reading this many snapshots.", metavar="N")] = None,
        poll_interval: Annotated[Optional[str], typer.Option("--poll-interval", help="With --follow: how often to look for new snapshots, e.g. 500ms [option continuous.discovery-interval; default 1s].", metavar="DURATION")] = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: ScanFormatOpt = None,
    ) -> None:
        """Read the table (merge-on-read) at the latest or an earlier snapshot.

        With --incremental-between A,B (or --from-snapshot A --to-snapshot B) it reads what
        changed after snapshot A up to B instead: rows with a _row_kind column (+I, -U, +U,
        -D), from the changelog files when the table has a changelog-producer, otherwise from
        the data files those snapshots added: every change in commit order, a key as often as
        it changed (as Paimon 1.1+; Java Paimon 1.0 merged them). --incremental-between-scan-mode
        delta or changelog picks the files; diff gives one row per key that differs between
        snapshots A and B, which is also how a range of two tags (TAG1,TAG2) is read.

        To stdout the rows stream as they are read: csv, jsonl, json (and parquet with
        -f parquet, not on a terminal) print what --output writes, the first part at once and
        never the whole result in memory; a closed pipe (| head) ends lakectl with exit 0. On a
        terminal the table shows the first --limit rows (100 by default; --limit 0 for all).

        With --follow it keeps reading: each snapshot's changes as it commits, with
        _row_kind and _snapshot_id columns, one JSON object per row with --format jsonl (one
        per snapshot with json), until Ctrl-C, SIGTERM (exit 0), --max-snapshots or
        --bounded-watermark. --snapshot-id and --timestamp give the start of from-snapshot
        and from-timestamp.

        Examples:

        \b
          lakectl scan shop.orders --where "dt = '2024-01-01' AND amount > 10"
          lakectl scan shop.orders --snapshot-id 3 --select id,amount -f json
          lakectl scan shop.orders --tag eod-2024-01-01 --output orders.parquet
          lakectl scan shop.orders --incremental-between 3,7 --format jsonl
          lakectl scan shop.orders --incremental-between eod-2024-01-01,release-1
          lakectl scan shop.orders --follow --consumer-id billing -f jsonl
        """
        from core.ops.create import parse_key_list
        from core.ops.scan import ScanOutput
        from core.sinks import output_format, write_output_parts

        s = settings(ctx)
        out = _scan_output(ctx, fmt)
        if output_path == "-":
            output_path = None  # stdout, in the --format given
        if out.format == "parquet" and (output_path or follow):
            raise UsageError("--format parquet writes the rows to stdout; --output FILE takes the format "
                             "from its extension, and --follow prints text")
        every_row = limit == 0 and not follow  # --limit 0: every row, on a terminal too
        if every_row:
            limit = None
        t = s.open_table(table, warehouse, branch=branch)
        columns = parse_key_list(select) or None
        if between_mode is not None and (follow or (between is None and from_snapshot is None and to_snapshot is None)):
            # following reads every change of each snapshot, as Paimon's streaming reads do
            raise UsageError("--incremental-between-scan-mode needs --incremental-between or --from-snapshot "
                             "(not --follow)")
        if follow:
            _follow(out, s, t, columns, where, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, limit=limit,
                    output_path=output_path, incremental=(between, from_snapshot, to_snapshot), mode=scan_mode,
                    consumer_id=consumer_id, bounded_watermark=bounded_watermark, max_snapshots=max_snapshots,
                    poll_interval=poll_interval)
            return
        given = [n for n, v in (("--scan-mode", scan_mode), ("--consumer-id", consumer_id),
                                ("--bounded-watermark", bounded_watermark), ("--max-snapshots", max_snapshots),
                                ("--poll-interval", poll_interval)) if v is not None]
        if given:
            raise UsageError(f"{given[0]} needs --follow")
        span = _incremental_range(t, between, from_snapshot, to_snapshot)
        if span is not None:
            if any(x is not None for x in (snapshot_id, timestamp, tag)):
                raise UsageError("an incremental read takes no --snapshot-id, --timestamp or --tag")
            from core.ops.changes import changes_stream

            def open_stream(rows: int | None, engine_settings: Any) -> Any:
                return changes_stream(t, *span, select=columns, where=where, limit=rows,
                                      engine_settings=engine_settings, mode=between_mode)
        else:
            from core.ops.scan import scan_stream

            def open_stream(rows: int | None, engine_settings: Any) -> Any:
                return scan_stream(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, select=columns,
                                   where=where, limit=rows, engine_settings=engine_settings)
        if output_path:
            output_format(output_path)  # a bad extension is refused before any reading
            with out.progress() as progress:
                stream = open_stream(limit, s.engine_settings(progress))
                rows, size = write_output_parts(stream.parts, stream.schema, output_path, jsonable)
            from lakectl.output import result_json

            out.record(result_json(ScanOutput(t.name, t.branch, output_path, rows, size, stream.engine), "scan --output"))
            return
        _print_rows(out, s, limit, every_row, open_stream)


# Rows a table on a terminal shows when no --limit is given (as pypaimon's ``table read``).
TERMINAL_ROWS = 100


def _scan_output(ctx: typer.Context, fmt: str | None) -> Any:
    """The command's Output; ``parquet`` is a format of scan's rows on stdout alone."""
    s = settings(ctx)
    chosen = str(s.resolve("format", fmt).value).strip().lower()
    if chosen == "parquet":
        from lakectl.output import Output

        return Output("parquet", quiet=s.quiet)
    from lakectl.config import FORMATS

    if chosen not in FORMATS:  # the shared refusal would not list parquet, which scan takes
        raise UsageError(f"--format {chosen!r} must be one of {', '.join(FORMATS)}, parquet")
    return output(ctx, fmt)


def _print_rows(out: Any, s: Any, limit: int | None, every_row: bool,
                open_stream: Callable[[int | None, Any], Any]) -> None:
    """The rows of ``open_stream(limit, engine_settings)`` (a scan or an incremental read) to
    stdout: streamed part by part on a pipe; on a terminal the first --limit rows
    (TERMINAL_ROWS by default) as a table, drawn once reading ends and its progress bar is
    gone, with a footer when rows were left out."""
    capped = limit is None and not every_row and not out.streams
    out.refuse_parquet_on_a_terminal()
    with out.progress() as progress:
        # one row past the cap tells whether rows were left out
        stream = open_stream(TERMINAL_ROWS + 1 if capped else limit, s.engine_settings(progress))
        if out.streams:
            out.stream(stream.schema, stream.parts)
            return
        shown = TERMINAL_ROWS if capped else limit
        rows, more = out.first_rows(stream.schema, stream.parts, shown)
    out.arrow(rows)
    if more:
        out.footer(f"first {TERMINAL_ROWS} rows; --limit N for more, --limit 0 for all")


def _incremental_range(table: Table, between: str | None, start: int | None,
                       end: int | None) -> tuple[int | str, int | str] | None:
    """(A, B) of an incremental read (snapshot ids, or tag names), or None for a snapshot read."""
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


def _follow(out: Any, s: Any, table: Table, columns: list[str] | None, where: str | None, *,
            snapshot_id: int | None, timestamp: str | None, tag: str | None, limit: int | None,
            output_path: str | None, incremental: tuple, mode: str | None, consumer_id: str | None,
            bounded_watermark: int | None, max_snapshots: int | None, poll_interval: str | None) -> None:
    """scan --follow: print each snapshot's rows as they come; SIGTERM ends it cleanly."""
    from core.ops.follow import follow, resolve_settings
    from core.ops.scan import parse_timestamp
    from core.options import parse_duration

    if tag is not None or limit is not None or output_path or any(x is not None for x in incremental):
        raise UsageError("--follow takes no --tag, --limit, --output or incremental range "
                         "(start with --scan-mode and --snapshot-id / --timestamp)")
    settings = resolve_settings(
        table.schema.options, mode=mode, snapshot_id=snapshot_id,
        timestamp_millis=parse_timestamp(timestamp) if timestamp is not None else None,
        bounded_watermark=bounded_watermark, consumer_id=consumer_id,
        poll_seconds=parse_duration(poll_interval, "--poll-interval").total_seconds() if poll_interval else None)
    stop = threading.Event()
    printer = _BatchPrinter(out, table)
    with stop_on_sigterm(stop):
        for batch in follow(table, settings, max_snapshots=max_snapshots, select=columns, where=where,
                            engine_settings=s.engine_settings(None), should_stop=stop.is_set, sleep=stop.wait):
            printer.batch(batch)
            if stop.is_set():
                break

class _BatchPrinter:
    """One snapshot's rows at a time, flushed at once so a pipe sees them as they commit."""

    def __init__(self, out: Any, table: Any) -> None:
        self.out = out
        self.table = table
        self.csv_header = False

    def batch(self, batch: Any) -> None:
        import json

        import pyarrow as pa

        from core.ops.follow import SNAPSHOT_ID_COLUMN
        from core.text_values import python_values

        out = self.out
        ids = pa.array([batch.snapshot_id] * batch.rows.num_rows, pa.int64())
        rows = batch.rows.add_column(1, SNAPSHOT_ID_COLUMN, ids)
        if out.format == "json":
            doc = {"table": self.table.name, "branch": self.table.branch,
                   "snapshot_id": batch.snapshot_id, "commit_kind": batch.commit_kind, "full": batch.full,
                   "watermark": batch.watermark, "rows": jsonable(python_values(rows.drop_columns([SNAPSHOT_ID_COLUMN])))}
            out.raw(json.dumps(doc) + "\n")
        elif out.format == "csv":
            out.raw(csv_text(python_values(rows), rows.column_names, header=not self.csv_header))
            self.csv_header = True
        elif out.format == "jsonl":
            if rows.num_rows:
                out.arrow(rows)
        else:
            what = "full" if batch.full else "changes"
            out.arrow(rows, title=f"snapshot {batch.snapshot_id} ({batch.commit_kind}, {what}): "
                                  f"{rows.num_rows} rows")

