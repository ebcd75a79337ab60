"""lakectl write DB.TABLE --input PATH|- [--mode append|overwrite] [--row-kind-column COL] [--auto-create]
lakectl write DB.TABLE --input - --stream [--commit-interval 10s] [--commit-rows N] [--commit-user NAME]
    [--input-offset N] [--reset-progress]"""

from __future__ import annotations

import sys
import threading
import uuid
from typing import Annotated, Optional

import typer

from core.errors import UsageError
from lakectl.commands import output, settings, stop_on_sigterm
from lakectl.commands.create import parse_options
from lakectl.completion import complete_input_format, complete_table, complete_write_mode
from lakectl.output import Output, result_json
from lakectl.params import BranchOpt, FormatOpt, PartitionByOpt, PrimaryKeyOpt, TableArg, TableOptionOpt, WarehouseOpt

DEFAULT_COMMIT_INTERVAL = "10s"
# Columns of a commit row in the table format (the table and commit user are in the summary).
_COMMIT_COLUMNS = ("snapshot_id", "commit_identifier", "records_written", "skipped", "watermark")


def register(app: typer.Typer) -> None:
    @app.command("write")
    def write_cmd(
        ctx: typer.Context,
        table: TableArg,
        input: Annotated[Optional[str], typer.Option("--input", "-i", metavar="PATH", help="Input file, glob or directory; - for stdin.")] = None,
        input_table: Annotated[Optional[str], typer.Option("--input-table", metavar="DB.TABLE", help="A table of the Spark catalog (runs on Spark).")] = None,
        input_format: Annotated[Optional[str], typer.Option("--input-format", metavar="FORMAT", help="parquet, csv, json, jsonl (or orc on Spark); default: from the extension (jsonl with --stream).", autocompletion=complete_input_format)] = None,
        mode: Annotated[str, typer.Option("--mode", metavar="MODE", help="append, or overwrite the partitions the input touches.", autocompletion=complete_write_mode)] = "append",
        partition: Annotated[Optional[str], typer.Option("--partition", "-p", help="With --mode overwrite: replace this one partition, COLUMN=VALUE[,COLUMN=VALUE...] naming every partition column; every row must belong to it, and an empty input clears it.", metavar="COL=VALUE", show_default=False)] = None,
        fill_missing_columns: Annotated[bool, typer.Option("--fill-missing-columns", help="Write table columns a CSV or Parquet input lacks (with --stream: a CSV header) as null, nullable columns only; without it such an input is refused. In JSON a key left out is null anyway.")] = False,
        row_kind_column: Annotated[Optional[str], typer.Option("--row-kind-column", metavar="COL", help="CDC column holding +I, -U, +U, -D.")] = None,
        auto_create: Annotated[bool, typer.Option("--auto-create", help="Create the table if it does not exist: as --like's table is, or in types read from the input that change no value (CSV and JSON: dates stay STRING, 12.50 becomes DECIMAL(18, 2); README: Types of a table created from text).")] = False,
        like: Annotated[Optional[str], typer.Option("--like", metavar="DB.TABLE", help="With --auto-create: create the table with this table's columns, keys, partitioning and options (--primary-key, --partition-by and --option over them), and read the input in its types, so that a copy through scan -f jsonl|csv changes no value.", autocompletion=complete_table)] = None,
        primary_key: PrimaryKeyOpt = None,
        partition_by: PartitionByOpt = None,
        option: TableOptionOpt = None,
        stream: Annotated[bool, typer.Option("--stream", help="Read records from stdin as they come (jsonl or csv) and commit a snapshot per batch.")] = False,
        commit_interval: Annotated[Optional[str], typer.Option("--commit-interval", help=f"With --stream: commit what was read every DURATION (e.g. 10s, 500ms) [default {DEFAULT_COMMIT_INTERVAL} unless --commit-rows is given].", metavar="DURATION", show_default=False)] = None,
        commit_rows: Annotated[Optional[int], typer.Option("--commit-rows", help="With --stream: commit every N records.", metavar="N", show_default=False)] = None,
        commit_user: Annotated[Optional[str], typer.Option("--commit-user", help="With --stream: the stream's commit user; rerun with the same one to resume exactly once [default: a new UUID, printed].", metavar="NAME", show_default=False)] = None,
        watermark_column: Annotated[Optional[str], typer.Option("--watermark-column", help="With --stream: a TIMESTAMP or integer column; each snapshot's watermark is its max so far.", metavar="COL", show_default=False)] = None,
        input_offset: Annotated[Optional[int], typer.Option("--input-offset", help="With --stream: the input's first record is record N+1 of the stream (a producer re-sending from there). Where the commit user's progress cannot be known (its snapshots expired), records up to N are taken as in the table.", metavar="N", show_default=False)] = None,
        reset_progress: Annotated[bool, typer.Option("--reset-progress", help="With --stream: forget what the commit user committed before (its progress marker and snapshots) and write every record of the input; with an empty input, removes the commit user's marker.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Write rows from a file as one snapshot, or stream records from stdin as a snapshot per batch.

        With --stream, each batch (every --commit-rows records and/or every --commit-interval,
        and the rest at end of input) is committed under the commit user with the input offset
        (records read so far) as its identifier. Rerun with the same --commit-user and a batch
        already committed is skipped: replay the input from the start, or from record N+1 with
        --input-offset N. Each commit also updates the commit user's progress marker
        (commit-user/ beside the snapshots), so a restart skips what was committed even after
        its snapshots expired; where nothing can tell (no marker, expired snapshots) the rerun
        is refused until --input-offset says where the input starts. SIGTERM commits what was
        read and exits 0; Ctrl-C commits nothing more and exits 130.

        Examples:

        \b
          lakectl write shop.orders --input orders.csv
          lakectl write shop.orders --input changes.csv --row-kind-column op
          lakectl write shop.orders --input 'day=2024-01-01/*.parquet' \\
              --mode overwrite
          lakectl write shop.orders --input exports/ --input-format parquet
          lakectl scan shop.orders -f jsonl | \\
              lakectl write shop.copy -i - --input-format jsonl \\
              --auto-create --like shop.orders
          lakectl write shop.orders -i empty.csv --mode overwrite -p dt=2024-01-01
          cat rows.jsonl | lakectl write shop.orders -i - --input-format jsonl
          ./producer | lakectl write shop.events -i - --stream \\
              --commit-interval 10s --commit-user events-feed \\
              --watermark-column event_time
        """
        out = output(ctx, fmt)
        stream_flags = {"--commit-interval": commit_interval, "--commit-rows": commit_rows,
                        "--commit-user": commit_user, "--watermark-column": watermark_column,
                        "--input-offset": input_offset, "--reset-progress": reset_progress or None}
        if stream:
            if partition is not None:
                raise UsageError("--partition applies to --mode overwrite, not --stream")
            _stream(ctx, out, table, input, input_table, input_format, mode, row_kind_column, auto_create,
                    commit_interval, commit_rows, commit_user, watermark_column, input_offset, reset_progress,
                    warehouse, fill_missing_columns, branch)
            return
        given = [flag for flag, value in stream_flags.items() if value is not None]
        if given:
            raise UsageError(f"{given[0]} applies to streaming writes only; add --stream")
        from core.ops.create import parse_key_list
        from core.ops.write import AutoCreate, write_input
        from lakectl.config import parse_partition

        s = settings(ctx)
        if branch is not None and auto_create:
            raise UsageError("--auto-create creates main; create the branch with `lakectl branch create`")
        t = s.locate_table(table, warehouse)
        if branch is not None:
            t = s.open_table(table, warehouse, branch=branch)
        if like is not None and not auto_create:
            raise UsageError("--like applies to --auto-create (the layout of a table to create)")
        layout = None
        if like is not None:
            from core.ops.create import Layout

            layout = Layout.of(s.open_table(like, warehouse))
        create = AutoCreate(tuple(parse_key_list(primary_key)), tuple(parse_key_list(partition_by)),
                            parse_options(option), layout) if auto_create else None
        with out.progress() as progress:
            result = write_input(t, input, input_format=input_format, mode=mode, row_kind_column=row_kind_column,
                                 engine_settings=s.engine_settings(progress), auto_create=create,
                                 input_table=input_table, fill_missing_columns=fill_missing_columns,
                                 partition=parse_partition(partition) if partition is not None else None)
        out.record(result_json(result, "write"))


def _stream(ctx: typer.Context, out: Output, table: str, input: str | None, input_table: str | None,
            input_format: str | None, mode: str, row_kind_column: str | None, auto_create: bool,
            commit_interval: str | None, commit_rows: int | None, commit_user: str | None,
            watermark_column: str | None, input_offset: int | None, reset_progress: bool, warehouse: str | None,
            fill_missing_columns: bool, branch: str | None) -> None:
    from core.ops.stream_write import write_records
    from core.options import parse_duration
    from core.record_stream import STREAM_FORMATS

    if input != "-" or input_table is not None:
        raise UsageError("--stream reads stdin: pass --input -")
    if mode != "append":
        raise UsageError(f"--stream appends; --mode {mode} is for writes of a whole input")
    if auto_create:
        raise UsageError("--stream cannot --auto-create (the first batch is not the whole input); create the table first")
    fmt = (input_format or "jsonl").lower()
    if fmt not in STREAM_FORMATS:
        raise UsageError(f"--stream reads {' or '.join(STREAM_FORMATS)}, not --input-format {input_format}")
    if commit_interval is None and commit_rows is None:
        commit_interval = DEFAULT_COMMIT_INTERVAL
    interval = parse_duration(commit_interval, "--commit-interval").total_seconds() if commit_interval else None
    s = settings(ctx)
    t = s.open_table(table, warehouse, branch=branch)
    if commit_user is None:
        commit_user = str(uuid.uuid4())
        reset_progress = True  # a fresh UUID has committed nothing: no progress to look up
        if not out.quiet:
            print(f"commit user: {commit_user} (pass --commit-user {commit_user} to a rerun to resume exactly once)",
                  file=sys.stderr)
    columns = None if out.format != "table" else _COMMIT_COLUMNS
    stop = threading.Event()
    with stop_on_sigterm(stop):
        summary = write_records(t, sys.stdin.buffer, fmt=fmt, commit_user=commit_user, commit_rows=commit_rows,
                                commit_interval=interval, input_offset=input_offset, reset_progress=reset_progress,
                                watermark_column=watermark_column, row_kind_column=row_kind_column,
                                engine_settings=s.engine_settings(None), stop=stop,
                                on_batch=lambda result: out.event(result_json(result, "write --stream", t), columns),
                                fill_missing_columns=fill_missing_columns)
    if out.format in ("json", "jsonl"):
        out.event(result_json(summary, "write --stream", t))  # one more JSON line: the output stays JSON lines
    elif out.format == "table":
        out.record(result_json(summary, "write --stream", t))
