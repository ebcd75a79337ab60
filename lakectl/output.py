"""Output: tables for people, JSON / JSON lines / CSV for scripts, progress bars on a terminal.

Field names are the same in every format. Single results (create, write, describe) print
one object; listings (scan, snapshots, list) print an array in ``json`` and one object per
line in ``jsonl``.

The ``table`` format is for people: on a terminal a rich table that wraps to the terminal's
width (short cells such as ids, counts and times stay on one line, long ones such as paths
fold); on a pipe, or with ``NO_COLOR`` set, no colour or other escape codes, and on a pipe
plain columns separated by two spaces with the field names as the header. In lakectl's own
records (not in the rows of a table scan) sizes show in binary units (``1.2 MiB``), times as
local ``2026-11-22 02:28:47`` and retention periods as ``7d``; the script formats keep the
exact numbers and ISO 8601 times. Booleans are ``true``/``false`` in every format.

For scripts: plain tables have no title line (the first line is the header), and a single
result's list (``remove-orphan-files``' paths) is one item per line in a plain table and one
row per item in CSV (the other fields repeated), a real list in JSON.

A table's rows (``scan``) stream: each part is printed as soon as it is read, in every format
but a terminal's table, which shows the first ``--limit`` rows (100 by default) and says so.
A closed pipe (``| head``) ends lakectl quietly with exit 0.

``--quiet`` silences the chatter (summaries of writes and maintenance, progress bars), never
the data a listing command exists to print: errors and that data alone are printed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import errno
import json
import os
import sys
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from core.errors import UsageError
from core.text_values import csv_line, json_value, python_values, text_value

if TYPE_CHECKING:
    import pyarrow as pa

    from core.engines import ProgressCallback
    from rich.console import Console

# A column whose cells are at most this wide never wraps; wider ones fold to fit the terminal.
_SHORT_CELL = 24
# Narrowest a folding column may get before a listing switches to one block per row.
_MIN_LONG = 12
# Width of a column of Output.event rows (fits epoch millis).
_EVENT_WIDTH = 13


# Where a core result's Python field name is not the JSON vocabulary's (README "JSON output"):
# command -> {core name: printed name}. maintain prints its actions' results under the same
# names as the commands it runs.
JSON_NAMES: dict[str, dict[str, str]] = {
    "write": {"rows_written": "records_written", "partitions": "partitions_written"},
    "write --stream": {"rows": "records_written", "rows_skipped": "records_skipped"},
    "delete": {"rows_deleted": "records_deleted"},
    "scan --output": {"rows": "records_written", "bytes": "bytes_written"},
    "files": {"row_count": "record_count", "file_size": "file_size_in_bytes", "deleted_rows": "deleted_record_count"},
    "health": {"files": "file_count", "bytes": "total_file_size", "rows": "total_record_count"},
    "remove-orphan-files": {"files": "files_deleted", "bytes": "bytes_deleted"},
    "branch delete": {"files": "files_deleted"},
    "clone": {"source": "table"},
    "schemas": {"columns": "column_count"},
    "check": {"branches": "branches_checked"},
}


def about(table: Any) -> dict[str, Any]:
    """The first fields of every record about a table (README "JSON output"): its DB.TABLE
    name and branch."""
    return {"table": table.name, "branch": table.branch}


def renamed(obj: Any, names: dict[str, str]) -> dict[str, Any]:
    """A result (a dataclass or dict) with some fields under the JSON vocabulary's names, in
    their places: core's Python names stay, what lakectl prints is the vocabulary's."""
    d = dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else dict(obj)
    return {names.get(k, k): v for k, v in d.items()}


def result_json(obj: Any, command: str, table: Any = None) -> dict[str, Any]:
    """What ``command`` prints for core's ``obj``: its fields under the vocabulary's names,
    ``table`` and ``branch`` first when ``table`` is given."""
    d = renamed(obj, JSON_NAMES.get(command, {}))
    return d if table is None else {**about(table), **d}


def jsonable(value: Any) -> Any:
    """A JSON value for any cell lakectl prints, in the text encoding ``write`` reads back
    (``core.text_values``): exact decimals as strings, bytes as base64, NaN as "NaN"."""
    return json_value(value)


def _cell(value: Any) -> str:
    """A cell of a data row (scan) or a CSV field: exact, as in JSON."""
    if value is None:
        return "null"
    return text_value(value) or ""


# ---- human units (table format, lakectl's own records only) ---------------------------------
def csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str], *, header: bool) -> str:
    """Rows as CSV lines, cells written as in ``--format csv`` listings: a null is an empty
    field, an empty string ``""`` (``core.text_values``)."""
    lines = [csv_line(list(columns))] if header else []
    lines.extend(csv_line([text_value(r.get(c)) for c in columns]) for r in rows)
    return "".join(lines)


def _scalar_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(not isinstance(v, (dict, list, tuple)) for v in value)


def unnested(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """A single result as rows for CSV: one row per item of its lists of plain values (the
    other fields repeated on each row; several lists side by side), one row without any."""
    lists = [k for k, v in obj.items() if _scalar_list(v)]
    if not lists:
        return [obj]
    count = max(1, *(len(obj[k]) for k in lists))
    return [{k: (obj[k][i] if i < len(obj[k]) else None) if k in lists else v for k, v in obj.items()}
            for i in range(count)]


def _json_array(parts: Iterable[pa.Table]) -> Iterator[str]:
    """Rows as the text of ``json.dumps(rows, indent=2)``, a part at a time."""
    first = True
    for part in parts:
        for row in python_values(part):
            text = json.dumps({k: jsonable(v) for k, v in row.items()}, indent=2).replace("\n", "\n  ")
            yield ("[\n  " if first else ",\n  ") + text
            first = False
    yield "[]\n" if first else "\n]\n"


def human_size(n: int) -> str:
    """Bytes in binary units: 512 B, 1.2 KiB, 3.4 MiB."""
    if abs(n) < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def human_time(value: Any) -> str:
    """An ISO 8601 time or epoch milliseconds as local ``YYYY-MM-DD HH:MM:SS``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        moment = dt.datetime.fromtimestamp(value / 1000)
    else:
        try:
            moment = dt.datetime.fromisoformat(str(value))
        except ValueError:
            return str(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def human_duration(seconds: float) -> str:
    """Seconds as ``7d``, ``1d 12h``, ``90s``."""
    left = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return " ".join(parts) or "0s"


def _is_size(name: str) -> bool:
    return name in ("bytes", "size") or name.startswith("bytes_") or name.endswith(("_bytes", "file_size"))


def _is_time(name: str) -> bool:
    return name == "time" or name.endswith(("_time", "_millis"))


def _human(name: str, value: Any) -> str:
    """A cell of one of lakectl's records, for people."""
    if value is None or value == [] or value == () or value == {}:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int) and _is_size(name):
        return human_size(value)
    if _is_time(name) and isinstance(value, (str, int)):
        return human_time(value)
    if name in ("time_retained", "older_than") and isinstance(value, (int, float)):
        return human_duration(value)
    if isinstance(value, dict):
        return "\n".join(f"{k}={_cell(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)) and all(not isinstance(v, (dict, list, tuple)) for v in value):
        return "\n".join(_cell(v) for v in value)
    return _cell(value)


def _items(name: str, value: Any) -> list[str]:
    """A field of a single result in a plain table: one line per item of a list."""
    if _scalar_list(value) and value:
        return [_cell(v) for v in value]
    return [_human(name, value).replace("\n", "; ")]


def _silence_stdout(stream: Any) -> None:
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file descriptor (a test's buffer)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _header_width(name: str, wrapped: bool) -> int:
    """Columns a header needs: whole, or its longest word when it may wrap (``snapshot id``)."""
    return max(len(w) for w in name.split("_")) if wrapped else max(len(name), 1)


# A plain (non-terminal) table holds this many rows before it writes any, so that a small
# table's columns line up however its rows arrive in parts, while a large one still streams.
_PLAIN_WIDTH_ROWS = 1000


def _widths(lines: list[list[str]]) -> list[int]:
    return [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]


def _aligned(lines: list[list[str]], widths: list[int]) -> str:
    return "".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() + "\n" for line in lines)


def _hidden_in_tables(columns: Sequence[str]) -> set[str]:
    """``commit_time_millis`` repeats ``commit_time`` in a table for people: show only one."""
    return {c for c in columns if c.endswith("_millis") and c[: -len("_millis")] in columns}


def _terminal_by_rule(stream: Any) -> bool:
    """rich's rule for a terminal, less its IDLE and Jupyter exceptions (which only say no):
    TTY_COMPATIBLE, then FORCE_COLOR, else ``isatty``."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    if "FORCE_COLOR" in os.environ:
        return os.environ["FORCE_COLOR"] != ""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream, as rich answers
        return False


class Output:
    """Where a command's result goes.

    Args:
        fmt: table, json, jsonl or csv.
        stdout: the stream for results (default: sys.stdout at construction).
        quiet: no summaries of single results (``record``) nor ``event`` rows nor progress
            bars; listings (data) still print. Errors are not printed through here.
        terminal: force (or deny) terminal rendering of tables; default: rich's detection
            (a tty, or ``TTY_COMPATIBLE=1`` / ``FORCE_COLOR``).
        width: columns of the terminal (default: detected, or ``COLUMNS``).
    """

    def __init__(self, fmt: str, *, stdout: Any = None, quiet: bool = False, terminal: bool | None = None,
                 width: int | None = None) -> None:
        self.format = fmt
        self.quiet = quiet
        self.stdout = stdout or sys.stdout
        self._terminal, self._width = terminal, width
        self._plain_colours = os.environ.get("NO_COLOR", "") != ""
        self._printed = False

    # rich is imported on first use: a script format on a pipe never needs it.
    @cached_property
    def console(self) -> Console:
        from rich.console import Console

        return Console(file=self.stdout, soft_wrap=False, width=self._width, force_terminal=self._terminal,
                       color_system=None if self._plain_colours else "auto", highlight=False, emoji=False,
                       markup=False)

    @cached_property
    def err(self) -> Console:
        from rich.console import Console

        return Console(stderr=True, color_system=None if self._plain_colours else "auto", highlight=False)

    @property
    def terminal(self) -> bool:
        """rich's rule (forced, TTY_COMPATIBLE, FORCE_COLOR, else isatty), decided here so that a
        plain table on a pipe, as cron and scripts print it, never imports rich (40 ms)."""
        if self._terminal is not None:
            return self._terminal
        return _terminal_by_rule(self.stdout)

    def _interactive_err(self) -> bool:
        """Is stderr an interactive terminal (rich's answer)? A stderr that is no terminal by
        rich's first rule is answered without importing rich (a scan in a script or cron)."""
        if not _terminal_by_rule(sys.stderr):
            return False
        return self.err.is_terminal and self.err.is_interactive

    # ---- listings ------------------------------------------------------------------
    def rows(self, rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
             title: str | None = None, *, human: bool = True, data: bool = True,
             about: dict[str, Any] | None = None) -> None:
        """A listing. ``human``: the rows are lakectl's records (sizes, times in human units in
        the table format); False for the rows of a table. ``data``: what the command exists to
        print (kept with --quiet); False for a listing within a summary. ``about``: the table
        and branch the listing is of, the first fields of every row in the script formats (a
        table for people names them in its title)."""
        if self.quiet and not data:
            return
        columns = list(columns or (rows[0].keys() if rows else []))
        if about and self.format != "table":
            columns = [*about, *(c for c in columns if c not in about)]
            rows = [{**r, **about} for r in rows]
        if self.format == "json":
            self._write(json.dumps([{c: jsonable(r.get(c)) for c in columns} for r in rows], indent=2) + "\n")
        elif self.format == "jsonl":
            self._write("".join(json.dumps({c: jsonable(r.get(c)) for c in columns}) + "\n" for r in rows))
        elif self.format == "csv":
            self._write(csv_text(rows, columns, header=True))
        else:
            if human:
                hidden = _hidden_in_tables(columns)
                columns = [c for c in columns if c not in hidden]
            render = (lambda c, v: _human(c, v)) if human else (lambda c, v: _cell(v))
            cells = [[render(c, r.get(c)) for c in columns] for r in rows]
            self._table(columns, cells, title, header=True)

    def arrow(self, data: pa.Table, title: str | None = None) -> None:
        """Rows of a table: values exactly as stored, whatever the column names."""
        self.rows(python_values(data), data.column_names, title, human=False)

    def records(self, items: Sequence[Any], item_type: type, title: str | None = None, *, data: bool = True,
                about: dict[str, Any] | None = None, names: dict[str, str] | None = None) -> None:
        """A listing of dataclass records; columns are the dataclass fields even when empty
        (``names``: some of them under the JSON vocabulary's names, see ``JSON_NAMES``)."""
        names = names or {}
        self.rows([renamed(i, names) for i in items], [names.get(f.name, f.name) for f in dataclasses.fields(item_type)],
                  title, data=data, about=about)

    # ---- single results ------------------------------------------------------------
    def record(self, item: Any, title: str | None = None, *, data: bool = False) -> None:
        """A single result: a summary (silent with --quiet) unless ``data``."""
        if self.quiet and not data:
            return
        obj = dataclasses.asdict(item) if dataclasses.is_dataclass(item) else dict(item)
        if self.format == "json":
            self._write(json.dumps(jsonable(obj), indent=2) + "\n")
        elif self.format == "jsonl":
            self._write(json.dumps(jsonable(obj)) + "\n")
        elif self.format == "csv":
            # one row per item of a list; nested objects become JSON text in their cell
            self._write(csv_text(unnested(obj), list(obj), header=True))
        elif not self.terminal:
            hidden = _hidden_in_tables(list(obj))
            cells = [[k, item] for k, v in obj.items() if k not in hidden for item in _items(k, v)]
            self._table(["field", "value"], cells, title, header=False)
        else:
            hidden = _hidden_in_tables(list(obj))
            cells = [[k, _human(k, v)] for k, v in obj.items() if k not in hidden]
            self._table(["field", "value"], cells, title, header=False)

    def event(self, item: Any, table_columns: Sequence[str] | None = None) -> None:
        """One record of a command that keeps running (a commit of a stream), printed at once
        so scripts can follow: a JSON line (json, jsonl), a CSV row under a header written
        with the first one (csv), or a plain row under such a header of ``table_columns``
        (table)."""
        if self.quiet:
            return
        obj = dataclasses.asdict(item) if dataclasses.is_dataclass(item) else dict(item)
        if self.format in ("json", "jsonl"):
            self._write(json.dumps(jsonable(obj)) + "\n")
            return
        columns = list(obj) if self.format == "csv" or not table_columns else list(table_columns)
        if self.format == "csv":
            self._write(csv_text([obj], columns, header=not self._printed))
        else:
            # Fixed widths: a row is printed before the next one exists.
            widths = [max(len(c), _EVENT_WIDTH) for c in columns]
            lines = [columns] if not self._printed else []
            lines.append([_human(c, obj[c]) for c in columns])
            self._write(_aligned(lines, widths))
        self._printed = True

    # ---- a table's rows, as they are read ----------------------------------------------------
    @property
    def streams(self) -> bool:
        """Rows go out as they are read (every format but a terminal's table)."""
        return self.format != "table" or not self.terminal

    def refuse_parquet_on_a_terminal(self) -> None:
        """Parquet's bytes are for a file or a pipe: refused on a terminal, before any work
        (a progress bar drawn first would read as if something had been done)."""
        if self.format == "parquet" and self.console.is_terminal:
            raise UsageError("refusing to write Parquet to a terminal: redirect stdout or use --output FILE")

    def stream(self, schema: pa.Schema, parts: Iterable[pa.Table]) -> None:
        """A table's rows part by part, each written and flushed before the next is read:
        CSV and JSON lines as ``scan --output`` writes them, a JSON array, Parquet (not on a
        terminal), or plain columns whose widths the first part sets."""
        from core.sinks import text_bytes, text_chunks, write_parquet
        if self.format == "parquet":
            self.refuse_parquet_on_a_terminal()
            self.stdout.flush()
            with self._pipe_guard():
                write_parquet(parts, schema, self.stdout.buffer)
                self.stdout.buffer.flush()
            return
        buffer = self._utf8_buffer()
        if self.format in ("csv", "jsonl") and buffer is not None:
            self.stdout.flush()  # what was written as text goes first
            for data in text_bytes(parts, schema, self.format):
                with self._pipe_guard():
                    buffer.write(data)
                    buffer.flush()
            return
        if self.format == "json":
            chunks: Iterable[str] = _json_array(parts)
        elif self.format in ("csv", "jsonl"):
            chunks = text_chunks(parts, schema, self.format)
        else:
            chunks = self._plain_chunks(schema.names, parts)
        for chunk in chunks:
            self._write(chunk)

    def _utf8_buffer(self) -> Any:
        """stdout's byte stream when its text is UTF-8 (the encoders' bytes go there as they
        are), else None."""
        import codecs

        buffer = getattr(self.stdout, "buffer", None)
        encoding = getattr(self.stdout, "encoding", None)
        if buffer is None or not encoding:
            return None
        try:
            return buffer if codecs.lookup(encoding).name == "utf-8" else None
        except LookupError:
            return None

    def first_rows(self, schema: pa.Schema, parts: Iterable[pa.Table], limit: int | None) -> tuple[pa.Table, bool]:
        """The first ``limit`` rows of ``parts`` (all with None) and whether more followed
        (reading stops at the first row past them)."""
        import pyarrow as pa

        taken: list[pa.Table] = []
        count = 0
        for part in parts:
            taken.append(part if limit is None else part.slice(0, limit + 1 - count))
            count += taken[-1].num_rows
            if limit is not None and count > limit:
                break
        rows = pa.concat_tables(taken) if taken else schema.empty_table()
        if limit is None:
            return rows, False
        return rows.slice(0, limit), rows.num_rows > limit

    def footer(self, text: str) -> None:
        """A line under a terminal's table (not data: silent with --quiet)."""
        if not self.quiet:
            self.console.print(text, style="dim")

    def _plain_chunks(self, columns: list[str], parts: Iterable[pa.Table]) -> Iterator[str]:
        """Aligned columns, streamed: the widths come from the header and the first
        ``_PLAIN_WIDTH_ROWS`` rows (all of a small table), held until then; later rows are
        written as they come, in those widths (a wider cell pushes its row's later cells)."""
        widths: list[int] | None = None
        held: list[list[str]] = [list(columns)]
        for part in parts:
            lines = [[_cell(v).replace("\n", "\\n") for v in row.values()] for row in python_values(part)]
            if widths is None:
                held.extend(lines)
                if len(held) <= _PLAIN_WIDTH_ROWS:
                    continue
                widths, lines, held = _widths(held), held, []
            yield _aligned(lines, widths)
        if widths is None:
            yield _aligned(held, _widths(held))

    # ---- the table format --------------------------------------------------------------
    def _table(self, columns: list[str], cells: list[list[str]], title: str | None, *, header: bool) -> None:
        if self._printed:
            self._write("\n")
        self._printed = True
        if not self.terminal:
            self._plain(columns, cells, title, header)
            return
        layout = self._layout(columns, cells, header)
        if layout is None:
            self._expanded(columns, cells, title)
            return
        from rich import box
        from rich.table import Table as RichTable

        boxed, wrapped, fixed = layout
        if boxed:
            table = RichTable(title=title, show_header=header, header_style="bold", title_style="bold")
        else:
            table = RichTable(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                              collapse_padding=True, header_style="bold", title_style="bold")
        for i, c in enumerate(columns):
            name = c.replace("_", " ") if wrapped else c
            style = "bold" if not header and i == 0 else None
            if i in fixed:
                table.add_column(name, width=fixed[i], style=style)
            else:
                table.add_column(name, overflow="fold", ratio=1, style=style)
        for row in cells:
            table.add_row(*row)
        self.console.print(table)

    def _layout(self, columns: list[str], cells: list[list[str]],
                header: bool) -> tuple[bool, bool, dict[int, int]] | None:
        """(with borders, headers wrapped at words, widths of the short columns) of the first
        layout that fits the terminal; None: show each row as a block of fields (psql's
        expanded mode). Short columns (ids, counts, kinds, times) get their full width and
        never break mid-value; long ones (paths, file names) fold into what is left."""
        widest = [max((len(line) for row in cells for line in row[i].splitlines() or [""]), default=0)
                  for i in range(len(columns))]
        short = [i for i, w in enumerate(widest) if w <= _SHORT_CELL]
        n, folding = len(columns), (len(columns) - len(short)) * _MIN_LONG
        for boxed, wrapped in ((True, False), (True, True), (False, True)):
            fixed = {i: max(widest[i], _header_width(columns[i], wrapped) if header else 1) for i in short}
            borders = 3 * n + 1 if boxed else 2 * (n - 1)
            if not header or sum(fixed.values()) + folding + borders <= self.console.width:
                return boxed, wrapped, fixed
        return None

    def _expanded(self, columns: list[str], cells: list[list[str]], title: str | None) -> None:
        from rich.table import Table as RichTable

        table = RichTable(title=title, show_header=False, title_style="bold")
        table.add_column("field", style="bold", width=max(len(c) for c in columns))
        table.add_column("value", overflow="fold")
        for row in cells:
            for i, (c, v) in enumerate(zip(columns, row)):
                table.add_row(c, v, end_section=i == len(columns) - 1)
        self.console.print(table)

    def _plain(self, columns: list[str], cells: list[list[str]], title: str | None, header: bool) -> None:
        """Columns separated by two spaces, field names as the header and no title: for grep,
        awk and ``tail -n +2`` (scripts are better served by --format csv or jsonl). A listing's
        cell holding several items keeps them on its one line, separated by ``; ``."""
        lines = ([columns] if header else []) + [[c.replace("\n", "; ") for c in row] for row in cells]
        if lines:
            self._write(_aligned(lines, _widths(lines)))

    # ---- progress ----------------------------------------------------------------------
    @contextmanager
    def progress(self) -> Iterator[ProgressCallback | None]:
        """A progress callback ``(done, total, what)`` drawing a bar on stderr when stderr is an
        interactive terminal; None (silent) on a pipe, with --quiet or ``TTY_INTERACTIVE=0``.
        ``total`` 0 means not known yet (the bar pulses)."""
        if self.quiet or not self._interactive_err():
            yield None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=self.err, transient=True) as bar:
            task = bar.add_task("starting", total=None)

            def update(done: int, total: int, what: str) -> None:
                bar.update(task, completed=done, total=total if total > 0 else None, description=what)

            yield update

    @contextmanager
    def table_bars(self, total: int) -> Iterator["TableBars | None"]:
        """One bar per table being worked on (``maintain``: several at once with --parallel) under
        an overall bar of tables done; None (silent) where ``progress`` is silent."""
        if self.quiet or not self._interactive_err():
            yield None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=self.err, transient=True) as bar:
            yield TableBars(bar, total)

    def raw(self, text: str) -> None:
        """Text exactly as given (streamed output such as ``scan --follow``'s), flushed at once."""
        self._write(text)

    def _write(self, text: str) -> None:
        with self._pipe_guard():
            self.stdout.write(text)
            self.stdout.flush()

    @contextmanager
    def _pipe_guard(self) -> Iterator[None]:
        """A reader that went away (``| head``) ends the command with exit 0 and no message, as
        SIGPIPE ends other tools; stdout then points at /dev/null so that Python's last flush
        at exit finds nowhere to fail."""
        try:
            yield
        except OSError as e:
            if not isinstance(e, BrokenPipeError) and e.errno != errno.EPIPE:
                raise
            _silence_stdout(self.stdout)
            import typer

            raise typer.Exit(0) from None



class TableBars:
    """The bars of ``Output.table_bars``: ``step`` shows a table's current verb (its bar counts
    the verbs done of those planned), ``finish`` drops its bar and advances the overall one.
    Called from maintain's worker threads; rich's Progress takes its own lock."""

    def __init__(self, progress: Any, total: int) -> None:
        self._progress = progress
        self._overall = progress.add_task(f"tables (0 of {total} done)", total=total)
        self._bars: dict[str, Any] = {}
        self._done = 0
        self._total = total

    def step(self, table: str, done: int, planned: int, what: str) -> None:
        if table not in self._bars:
            self._bars[table] = self._progress.add_task(table, total=planned or None)
        self._progress.update(self._bars[table], completed=done, total=planned or None,
                              description=f"{table}: {what}")

    def finish(self, table: str, status: str) -> None:
        task = self._bars.pop(table, None)
        if task is not None:
            self._progress.remove_task(task)
        self._done += 1
        self._progress.update(self._overall, completed=self._done,
                              description=f"tables ({self._done} of {self._total} done; last {table} {status})")
