"""Output: rich tables on a terminal, JSON / JSON lines / CSV for scripts.

Field names are the same in every format. Single results (create, write, describe) print
one object; listings (scan, snapshots, list) print an array in ``json`` and one object per
line in ``jsonl``.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import datetime as dt
import decimal
import json
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable


def jsonable(value: Any) -> Any:
    """A JSON value for any cell lakectl prints: exact decimals as strings, bytes as base64."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    v = jsonable(value)
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return str(v)


class Output:
    def __init__(self, fmt: str, *, stdout: Any = None) -> None:
        self.format = fmt
        self.stdout = stdout or sys.stdout
        self.console = Console(file=self.stdout, soft_wrap=False)
        self.err = Console(stderr=True)

    # ---- listings ------------------------------------------------------------------
    def rows(self, rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
             title: str | None = None) -> None:
        columns = list(columns or (rows[0].keys() if rows else []))
        if self.format == "json":
            self._write(json.dumps([{c: jsonable(r.get(c)) for c in columns} for r in rows], indent=2) + "\n")
        elif self.format == "jsonl":
            self._write("".join(json.dumps({c: jsonable(r.get(c)) for c in columns}) + "\n" for r in rows))
        elif self.format == "csv":
            writer = csv.writer(self.stdout, lineterminator="\n")
            writer.writerow(columns)
            for r in rows:
                writer.writerow(["" if r.get(c) is None else _cell(r.get(c)) for c in columns])
        else:
            table = RichTable(title=title, show_lines=False)
            for c in columns:
                # Spaces let rich wrap long headers at word boundaries on narrow terminals.
                table.add_column(c.strip("_").replace("_", " "), overflow="fold")
            for r in rows:
                table.add_row(*[_cell(r.get(c)) for c in columns])
            self.console.print(table)

    def arrow(self, data: pa.Table, title: str | None = None) -> None:
        self.rows(data.to_pylist(), data.column_names, title)

    def records(self, items: Sequence[Any], item_type: type, title: str | None = None) -> None:
        """A listing of dataclass records; columns are the dataclass fields even when empty."""
        self.rows([dataclasses.asdict(i) for i in items], [f.name for f in dataclasses.fields(item_type)], title)

    # ---- single results ------------------------------------------------------------
    def record(self, item: Any, title: str | None = None) -> None:
        obj = dataclasses.asdict(item) if dataclasses.is_dataclass(item) else dict(item)
        if self.format == "json":
            self._write(json.dumps(jsonable(obj), indent=2) + "\n")
        elif self.format == "jsonl":
            self._write(json.dumps(jsonable(obj)) + "\n")
        elif self.format == "csv":
            self.rows([obj], list(obj))  # lists and objects become JSON text in their cell
        else:
            table = RichTable(title=title, show_header=False)
            table.add_column("field", style="bold")
            table.add_column("value", overflow="fold")
            for k, v in obj.items():
                table.add_row(k, _cell(v))
            self.console.print(table)

    @contextmanager
    def progress(self) -> Iterator[Callable[[int, int, str], None] | None]:
        """A progress callback drawing a rich bar on a terminal; None (silent) on a pipe."""
        if not self.err.is_terminal:
            yield None
            return
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=self.err, transient=True) as bar:
            task = bar.add_task("working", total=None)

            def update(done: int, total: int, what: str) -> None:
                bar.update(task, completed=done, total=total, description=what)

            yield update

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()
