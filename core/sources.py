"""Input files for ``write``: Parquet, CSV, JSON (an array of objects) and JSON lines -> Arrow.

When the target table is known, its column types guide the parsers (a CSV "007" meant for a
STRING column stays "007"); casting and validation happen afterwards in ``ops.write``.

``read_input`` reads a whole input; ``InputFile`` reads a Parquet or CSV file batch by batch,
so the local engine can write an input larger than its write buffer without holding it.
"""

from __future__ import annotations

import glob
import io
import json
import os
import sys
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from core.errors import InvalidDataError, UsageError
from core.record_stream import STREAM_FORMATS

FORMATS = ("parquet", "csv", "json", "jsonl", "orc")
_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json",
               ".jsonl": "jsonl", ".ndjson": "jsonl", ".orc": "orc"}


def infer_format(path: str, explicit: str | None) -> str:
    if explicit:
        fmt = explicit.lower()
        if fmt not in FORMATS:
            raise UsageError(f"--input-format {explicit!r} must be one of {', '.join(FORMATS)}")
        return fmt
    for ext, fmt in _EXTENSIONS.items():
        if path.lower().endswith(ext):
            return fmt
    raise UsageError(f"cannot tell the format of {path!r} from its extension; pass --input-format")


def input_size(path: str) -> int:
    """Bytes behind an input path, glob or directory (0 for stdin or nothing found)."""
    if path == "-":
        return 0
    total = 0
    for match in glob.glob(path) or [path]:
        if os.path.isdir(match):
            for root, _, files in os.walk(match):
                total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        elif os.path.isfile(match):
            total += os.path.getsize(match)
    return total


def _open(path: str) -> BinaryIO:
    if path == "-":
        return io.BytesIO(sys.stdin.buffer.read())
    try:
        return open(path, "rb")
    except OSError as e:
        raise InvalidDataError(f"cannot read input {path}: {e.strerror or e}") from e


def read_input(path: str, fmt: str, hint: pa.Schema | None = None) -> pa.Table:
    """Read the whole input as one Arrow table.

    Raises:
        InvalidDataError: the file is missing, unreadable, or not valid in its format.
    """
    with _open(path) as fh, _ReadErrors(fmt, path):
        if fmt == "parquet":
            return pq.read_table(fh)
        if fmt == "orc":
            return paorc.read_table(fh)
        if fmt == "csv":
            return _read_csv(fh, hint)
        if fmt == "jsonl":
            return _read_jsonl(fh, hint)
        return _read_json_array(fh)


class _ReadErrors:
    """Arrow's parse errors -> InvalidDataError naming the input (a context manager)."""

    def __init__(self, fmt: str, path: str) -> None:
        self.fmt, self.path = fmt, path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, error: BaseException | None, tb: object) -> None:
        if isinstance(error, (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError)):
            text = str(error).strip()
            first = text.splitlines()[0] if text else type(error).__name__
            raise InvalidDataError(f"cannot read {self.fmt} input {self.path}: {first}") from error


STREAMED_FORMATS = ("parquet", "csv")
BATCH_ROWS = 1 << 16  # rows per batch of a streamed input (a few MB at typical widths)
_CSV_BLOCK = 8 << 20  # bytes per block of a streamed CSV input


@dataclass(frozen=True, slots=True)
class InputFile:
    """One Parquet or CSV input file, read batch by batch.

    The batches hold the same values ``read_input`` would return: a CSV file streams only
    when the table types every column it has (``hint``), since a streaming CSV reader infers
    types from its first block only; otherwise ``batches`` yields the whole file at once.
    """

    path: str
    fmt: str
    hint: pa.Schema | None = None

    @staticmethod
    def streams(path: str, fmt: str) -> bool:
        return fmt in STREAMED_FORMATS and path != "-" and os.path.isfile(path)

    def read_all(self) -> pa.Table:
        return read_input(self.path, self.fmt, self.hint)

    def batches(self) -> Iterator[pa.Table]:
        """The rows in input order, a batch at a time; an empty input is one empty batch.

        Raises:
            InvalidDataError: the file is unreadable or not valid in its format.
        """
        with _ReadErrors(self.fmt, self.path):
            if self.fmt == "parquet":
                # No pre-buffering: it would cache the compressed column chunks of every row
                # group the reader is given, i.e. the whole file.
                with pq.ParquetFile(self.path, pre_buffer=False) as f:
                    if f.metadata.num_rows == 0:
                        yield f.schema_arrow.empty_table()
                    for batch in f.iter_batches(batch_size=BATCH_ROWS):
                        yield pa.Table.from_batches([batch])
                return
            reader = self._open_csv()
            typed = _csv_hint(self.hint)
            if not all(name in typed for name in reader.schema.names):
                reader.close()
                yield self.read_all()
                return
            with reader:
                empty = True
                for batch in reader:
                    empty = False
                    yield pa.Table.from_batches([batch])
                if empty:
                    yield reader.schema.empty_table()

    def _open_csv(self) -> pacsv.CSVStreamingReader:
        return pacsv.open_csv(self.path, read_options=pacsv.ReadOptions(block_size=_CSV_BLOCK),
                              convert_options=_csv_convert(self.hint))


def _csv_hint(hint: pa.Schema | None) -> dict[str, pa.DataType]:
    if hint is None:
        return {}
    # Only types CSV text converts to directly; the rest are cast later.
    simple = (pa.types.is_string, pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean,
              pa.types.is_date32, pa.types.is_decimal, pa.types.is_timestamp)
    return {f.name: f.type for f in hint if any(check(f.type) for check in simple)}


def _csv_convert(hint: pa.Schema | None) -> pacsv.ConvertOptions:
    return pacsv.ConvertOptions(column_types=_csv_hint(hint), strings_can_be_null=True,
                                quoted_strings_can_be_null=False)


def _read_csv(fh: BinaryIO, hint: pa.Schema | None) -> pa.Table:
    return pacsv.read_csv(fh, convert_options=_csv_convert(hint))


def _read_jsonl(fh: BinaryIO, hint: pa.Schema | None) -> pa.Table:
    data = fh.read()
    if not data.strip():
        return pa.table({})
    explicit = None
    if hint is not None:
        # Nullable: ops.write reports a null key with its column and input row; the parser would not.
        explicit = pa.schema([f.with_nullable(True) for f in hint
                              if pa.types.is_string(f.type) or pa.types.is_integer(f.type)
                              or pa.types.is_floating(f.type) or pa.types.is_boolean(f.type)])
    parse = pajson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
    return pajson.read_json(io.BytesIO(data), parse_options=parse)


def _read_json_array(fh: BinaryIO) -> pa.Table:
    try:
        rows = json.load(fh)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError("a .json input must hold an array of objects (use jsonl for one object per line)")
    return pa.Table.from_pylist(rows)


def read_records(data: bytes, fmt: str, hint: pa.Schema | None = None, source: str = "stdin") -> pa.Table:
    """Parse one batch of a record stream held in memory (CSV with its header line, or JSON
    lines) as ``read_input`` parses a whole file; ``source`` names the input in errors.

    Raises:
        InvalidDataError: the bytes are not valid in the format.
    """
    if fmt not in STREAM_FORMATS:
        raise UsageError(f"a record stream is csv or jsonl, not {fmt}")
    with _ReadErrors(fmt, source):
        return _read_csv(io.BytesIO(data), hint) if fmt == "csv" else _read_jsonl(io.BytesIO(data), hint)
