"""The body of ``lakectl scan`` (a snapshot read or an incremental one), free of the command
tree: the Typer command calls it, and so does lakectl/quick.py, which answers the plain shapes
of a scan line without building the tree. Both ways read and print the same rows by
construction, and tests/cli/test_quick_path.py compares them. ``--follow`` stays the tree's:
it hands its reader in as ``follow``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from core.errors import UsageError
from lakectl.config import FORMATS, Settings
from lakectl.output import Output

if TYPE_CHECKING:
    from core.table import Table

# Rows a table on a terminal shows when no --limit is given (as pypaimon's ``table read``).
TERMINAL_ROWS = 100

# What --follow does with the opened table: (table, columns, limit, output path) -> None.
Follow = Callable[["Table", "list[str] | None", "int | None", "str | None"], None]


def scan_output(s: Settings, fmt: str | None) -> Output:
    """The command's Output; ``parquet`` is a format of scan's rows on stdout alone."""
    chosen = str(s.resolve("format", fmt).value).strip().lower()
    if chosen == "parquet":
        return Output("parquet", quiet=s.quiet)
    if chosen not in FORMATS:  # the shared refusal would not list parquet, which scan takes
        raise UsageError(f"--format {chosen!r} must be one of {', '.join(FORMATS)}, parquet")
    return Output(s.resolve_format(fmt), quiet=s.quiet)


def scan(s: Settings, out: Output, table: str, *, snapshot_id: int | None = None, timestamp: str | None = None,
         tag: str | None = None, select: str | None = None, where: str | None = None, limit: int | None = None,
         output_path: str | None = None, between: str | None = None, between_mode: str | None = None,
         from_snapshot: int | None = None, to_snapshot: int | None = None, branch: str | None = None,
         warehouse: str | None = None, follow: Follow | None = None, follow_only: str | None = None) -> None:
    """Read ``table`` and print its rows, or write them to ``output_path``. ``follow_only``
    names an option given that only ``--follow`` takes (refused without ``follow``)."""
    from core.ops.create import parse_key_list
    from core.table import Table

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
    if follow is not None:
        follow(t, columns, limit, output_path)
        return
    if follow_only is not None:
        raise UsageError(f"{follow_only} needs --follow")
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
        from core.ops.scan import ScanOutput
        from core.sinks import output_format, write_output_parts
        from lakectl.output import jsonable, result_json

        output_format(output_path)  # a bad extension is refused before any reading
        with out.progress() as progress:
            stream = open_stream(limit, s.engine_settings(progress))
            rows, size = write_output_parts(stream.parts, stream.schema, output_path, jsonable)
        out.record(result_json(ScanOutput(t.name, t.branch, output_path, rows, size, stream.engine), "scan --output"))
        return
    _print_rows(out, s, limit, every_row, open_stream)


def _print_rows(out: Output, s: Settings, limit: int | None, every_row: bool,
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
