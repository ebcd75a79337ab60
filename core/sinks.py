"""Result files and streams for ``scan --output`` and ``scan`` to stdout: Parquet, CSV or JSON
lines.

``write_output_parts`` writes a result part by part (the local engine's splits, or the Spark
job's partitions collected one at a time), so the whole result is never in memory;
``write_output`` writes one table. ``text_bytes`` is the same CSV / JSON lines encoding,
part by part, for stdout: ``scan -f csv`` prints what ``scan --output x.csv`` writes.
"""

from __future__ import annotations

import json
import os
from typing import Any, BinaryIO, Callable, Iterable, Iterator

import pyarrow as pa

from core.errors import StorageRefusedError, UsageError
from core.formats import dictionary_columns
from core.text_values import csv_field, csv_line, python_values, text_value
from core.text_values import json_value as text_json_value

# Parts (splits) are gathered into row groups of about this much Arrow data: fewer, larger
# row groups than one per split, and a bounded amount held.
_ROW_GROUP_BYTES = 8 << 20
# Text is encoded column-wise about this much Arrow data at a time (at most _TEXT_ROWS rows):
# large enough that Arrow's kernels, not the calls into them, take the time, small enough
# that a large split still reaches a pipe in pieces.
_TEXT_BYTES = 1 << 20
_TEXT_ROWS = 1 << 16
# The first cells of a CSV stream, of parts whose columns are all integers, booleans or strings,
# are encoded cell by cell in Python (core.text_values: the bytes core.text_columns reproduces):
# a few thousand cells cost less that way than importing pyarrow.compute (~0.03 s of a small
# scan), which the column-wise encoder calls. The cells after them go column-wise.
_CSV_CELLS_IN_PYTHON = 2048

_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}

JsonValue = Callable[[Any], Any]


def output_format(path: str) -> str:
    for ext, fmt in _EXTENSIONS.items():
        if path.lower().endswith(ext):
            return fmt
    raise UsageError(f"--output {path!r} must end in .parquet, .csv or .jsonl")


def csv_cell(value: Any) -> str:
    """A CSV field in the text encoding ``write`` reads back (``core.text_values``): null is an
    empty unquoted field, an empty string ``""``, nested values JSON text."""
    return csv_field(text_value(value))


def text_chunks(parts: Iterable[pa.Table], schema: pa.Schema, fmt: str,
                json_value: JsonValue | None = None) -> Iterator[str]:
    """``text_bytes`` as text."""
    for chunk in text_bytes(parts, schema, fmt, json_value):
        yield chunk.decode("utf-8")


def text_bytes(parts: Iterable[pa.Table], schema: pa.Schema, fmt: str,
               json_value: JsonValue | None = None) -> Iterator[bytes]:
    """The rows of ``parts`` as CSV (with a header) or JSON lines in UTF-8, a piece of a part a
    chunk: bytes, as the encoders make them, for a file or stdout's buffer (decoding them to
    text only for the stream to encode it again would cost a tenth of the encoding).

    Encoded a column at a time (``core.text_columns``); a caller's own ``json_value`` (one
    that is not ``core.text_values.json_value``) is applied cell by cell."""
    if fmt == "csv":
        yield csv_line(schema.names).encode("utf-8")
    if json_value is not None and json_value is not text_json_value and fmt == "jsonl":
        for text in _cell_chunks(parts, schema.names, json_value):
            yield text.encode("utf-8")
        return
    from core.text_columns import ROWS_ENCODERS

    encode = ROWS_ENCODERS[fmt]
    in_python = _CSV_CELLS_IN_PYTHON if fmt == "csv" else 0
    for part in parts:
        cells = part.num_rows * part.num_columns
        if cells <= in_python and _plain_types(part.schema):
            in_python -= cells
            yield _csv_by_cell(part)
            continue
        step = _piece_rows(part)
        for start in range(0, part.num_rows, step):
            yield encode(part.slice(start, step))


def _plain_types(schema: pa.Schema) -> bool:
    """Are the columns all of types whose Python values encode as plainly as they print
    (integers, booleans, strings)?"""
    return all(pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_string(t)
               or pa.types.is_large_string(t) for t in schema.types)


def _csv_by_cell(part: pa.Table) -> bytes:
    """CSV lines of ``part`` (no header), a cell at a time."""
    columns = [python_values(c) for c in part.columns]
    return "".join(csv_line([text_value(v) for v in row]) for row in zip(*columns)).encode("utf-8")


def _piece_rows(part: pa.Table) -> int:
    """Rows of ``part`` to encode at once: about _TEXT_BYTES of its Arrow data."""
    if not part.num_rows:
        return 1
    per_row = max(1, part.nbytes // part.num_rows)
    return max(1, min(_TEXT_ROWS, _TEXT_BYTES // per_row))


def _cell_chunks(parts: Iterable[pa.Table], names: list[str], convert: JsonValue) -> Iterator[str]:
    """JSON lines with each cell converted by ``convert``, in Python."""
    for part in parts:
        for start in range(0, part.num_rows, 4096):
            piece = part.slice(start, 4096)
            columns = [python_values(piece.column(i)) for i in range(piece.num_columns)]
            yield "".join(json.dumps({k: convert(v) for k, v in zip(names, row)}, ensure_ascii=False) + "\n"
                          for row in zip(*columns))


def write_parquet(parts: Iterable[pa.Table], schema: pa.Schema, sink: str | BinaryIO) -> int:
    """The parts as one Parquet file (a path, or a stream such as stdout: written front to
    back, never seeked). Returns rows."""
    import pyarrow.parquet as pq  # here: a text stream does without it (and pyarrow.fs)

    rows = 0
    with pq.ParquetWriter(sink, schema, compression="zstd", use_dictionary=dictionary_columns(schema)) as writer:
        pending: list[pa.Table] = []
        for part in parts:
            pending.append(part)
            rows += part.num_rows
            if sum(p.nbytes for p in pending) >= _ROW_GROUP_BYTES:
                writer.write_table(pa.concat_tables(pending))
                pending = []
        if pending or rows == 0:
            writer.write_table(pa.concat_tables(pending) if pending else schema.empty_table())
    return rows


def write_output(data: pa.Table, path: str, json_value: JsonValue | None = None) -> int:
    """Write the rows to ``path`` (atomically: a temp file renamed into place). Returns bytes written."""
    return write_output_parts([data], data.schema, path, json_value)[1]


def _output_error(error: OSError, path: str) -> StorageRefusedError:
    """Name what kept ``path`` from being written (pyarrow's errors carry no errno to go by)."""
    from core.fileio import refused_error

    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        what = "no such directory" if not os.path.exists(directory) else "not a directory (a file is in the way)"
        return StorageRefusedError(what, directory)
    return refused_error(error, path) or StorageRefusedError(f"cannot write ({error.strerror or error})", path)


def write_output_parts(parts: Iterable[pa.Table], schema: pa.Schema, path: str,
                       json_value: JsonValue | None = None) -> tuple[int, int]:
    """Write the parts' rows, in order, as one file at ``path`` (atomically: a temp file renamed
    into place); each part is written and let go before the next is asked for.

    Returns:
        (rows written, bytes of the file).

    Raises:
        UsageError: the format is not known.
        StorageRefusedError: the file cannot be written: its directory is missing, the disk is
            full, the filesystem read-only or the directory not writable.
    """
    fmt = output_format(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    rows = 0

    def counted(items: Iterable[pa.Table]) -> Iterator[pa.Table]:
        nonlocal rows
        for part in items:
            rows += part.num_rows
            yield part

    try:
        if fmt == "parquet":
            write_parquet(counted(parts), schema, tmp)
        else:
            with open(tmp, "wb") as f:
                for chunk in text_bytes(counted(parts), schema, fmt, json_value):
                    f.write(chunk)
        os.replace(tmp, path)
    except OSError as e:
        raise _output_error(e, path) from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return rows, os.path.getsize(path)
