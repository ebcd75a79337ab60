"""Input files for ``write``: Parquet, CSV, JSON (an array of objects) and JSON lines -> Arrow.

When the target table is known, its column types guide the parsers (a CSV "007" meant for a
STRING column stays "007"); casting and validation happen afterwards in ``ops.write``.

``expand_input`` turns ``--input`` (a file, a glob, a directory, ``-`` for stdin; local or
``s3://``) into the list of files to read. ``read_input`` reads a whole input; ``InputFile``
reads a Parquet or CSV file batch by batch, and ``InputFiles`` the files of a glob or directory
one after another, so the local engine can write an input larger than its write buffer
without holding it.

CSV and JSON text is decoded to the table's types by ``core.text_values`` (the encoding
``scan`` writes), so a ``scan | write`` round trip is lossless.
"""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from core import formats
from core.errors import InvalidDataError, UsageError
from core.input_formats import FORMATS  # the names, shared with shell completion
from core.record_stream import STREAM_FORMATS
from core.text_columns import decode_column
from core.text_values import FloatText, TextValueError, parse_json

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


_GLOB_CHARS = "*?["


def _filesystem(path: str) -> Any:
    from core.fileio import FileIO

    return FileIO.for_uri(path).fs


def _plain_local(path: str) -> bool:
    """A local path without a scheme (``file:`` forms go through the filesystem, which strips it)."""
    return "://" not in path and not path.startswith(("file:", "local:"))


def _hidden(name: str) -> bool:
    """Files a writer leaves beside its data (``_SUCCESS``, ``.crc``, ``_temporary``, dot files)."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return base.startswith((".", "_")) or base.endswith(".crc")


def _with_scheme(path: str, name: str) -> str:
    if "://" in path and "://" not in name:
        return path.split("://", 1)[0] + "://" + name
    return name


def _files_under(fs: Any, path: str, directory: str) -> list[str]:
    """Every visible file below ``directory`` (recursively), skipping hidden files and folders."""
    root = directory.rstrip("/")
    out = []
    for name in sorted(fs.find(directory, withdirs=False)):
        relative = name[len(fs._strip_protocol(root)):].strip("/") if hasattr(fs, "_strip_protocol") else name
        if any(_hidden(part) for part in relative.split("/")):
            continue
        out.append(_with_scheme(path, name))
    return out


def _by_format(files: list[str], explicit: str | None, path: str) -> tuple[list[str], str]:
    """The files of a glob or directory to read, and their one format: those with the
    extension of ``--input-format`` (every file if none has one, e.g. Hadoop's ``part-00000``),
    or without it those with a known extension, all of one format."""
    if explicit:
        fmt = infer_format(path, explicit)
        chosen = [f for f in files if _extension_format(f) == fmt]
        return (chosen or [f for f in files if _extension_format(f) is None]), fmt
    chosen = [f for f in files if _extension_format(f) is not None]
    formats = sorted({_extension_format(f) for f in chosen})
    if len(formats) > 1:
        raise UsageError(f"--input {path} holds files of several formats ({', '.join(formats)}); "
                         "pass --input-format to pick one")
    return chosen, formats[0] if formats else ""


def _extension_format(path: str) -> str | None:
    for ext, fmt in _EXTENSIONS.items():
        if path.lower().endswith(ext):
            return fmt
    return None


def expand_input(path: str, explicit: str | None) -> tuple[list[str], str]:
    """``--input`` as (files in name order, format): ``-`` (stdin), one file, a glob (local or
    ``s3://``, e.g. ``'day=*/*.parquet'``), or a directory read recursively. Hidden files and
    folders (``.x``, ``_SUCCESS``, ``_temporary``, ``*.crc``) are skipped.

    Raises:
        InvalidDataError: a glob or directory with no input files in it.
        UsageError: the format cannot be told, or files of several formats.
    """
    if path == "-":
        return ["-"], infer_format(path, explicit)
    glob = any(c in path for c in _GLOB_CHARS)
    if not glob and _plain_local(path) and not os.path.isdir(path):
        # one local file (the common case): no filesystem object, so fsspec is not imported
        return [path], infer_format(path, explicit)
    fs = _filesystem(path)
    if glob:
        files: list[str] = []
        for match in sorted(fs.glob(path)):
            name = _with_scheme(path, match)
            if _hidden(name):
                continue
            files.extend(_files_under(fs, path, name) if fs.isdir(match) else [name])
    elif fs.isdir(path):
        files = _files_under(fs, path, path)
    else:
        return [path], infer_format(path, explicit)
    chosen, fmt = _by_format(files, explicit, path)
    if not chosen:
        what = "glob" if glob else "directory"
        kind = f" {explicit}" if explicit else ""
        raise InvalidDataError(f"no{kind} input files match {what} {path}")
    return chosen, fmt


def input_size(paths: str | list[str]) -> int:
    """Bytes of the input files (0 for stdin; a missing file counts 0 and fails when read)."""
    total = 0
    for path in [paths] if isinstance(paths, str) else paths:
        if path == "-":
            continue
        try:
            total += os.path.getsize(path) if _plain_local(path) else int(_filesystem(path).size(path) or 0)
        except (OSError, ValueError):
            pass
    return total


def _open(path: str) -> BinaryIO:
    if path == "-":
        return io.BytesIO(sys.stdin.buffer.read())
    try:
        if "://" in path:
            return _filesystem(path).open(path, "rb")
        return open(path, "rb")
    except OSError as e:
        raise InvalidDataError(f"cannot read input {path}: {e.strerror or e}") from e


def _check_int96(source: Any, parquet: pq.ParquetFile, path: str) -> None:
    """Refuse an input INT96 timestamp outside 1677-2262: pyarrow would wrap it into a wrong date."""
    found = formats.int96_out_of_range(source, parquet, parquet.schema_arrow.names)
    if found is not None:
        raise InvalidDataError(f"parquet input {path}, column {found[0]}: {found[1]} is outside 1677-09-21 to "
                               "2262-04-11, the nanosecond timestamps lakectl can hold")
    if hasattr(source, "seek"):
        source.seek(0)


def read_input(path: str, fmt: str, hint: pa.Schema | None = None) -> pa.Table:
    """Read the whole input as one Arrow table; with ``hint`` (the table's types) CSV and
    JSON values are decoded to them.

    Raises:
        InvalidDataError: the file is missing, unreadable, or not valid in its format.
    """
    with _open(path) as fh, _ReadErrors(fmt, path):
        if fmt == "parquet":
            with pq.ParquetFile(fh) as parquet:
                _check_int96(fh, parquet, path)
                return parquet.read()
        if fmt == "orc":
            import pyarrow.orc as paorc  # ORC and JSON readers load with an input of theirs

            return paorc.read_table(fh)
        if fmt == "csv":
            return _read_csv(fh, hint, path)
        if fmt == "jsonl":
            return _read_jsonl(fh, hint, path)
        return _read_json_array(fh, hint, path)


class _ReadErrors:
    """Arrow's parse errors -> InvalidDataError naming the input (a context manager)."""

    def __init__(self, fmt: str, path: str) -> None:
        self.fmt, self.path = fmt, path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, error: BaseException | None, tb: object) -> None:
        if isinstance(error, (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError, EOFError)) \
                or _is_decode_error(error):
            text = str(error).strip()
            first = text.splitlines()[0] if text else type(error).__name__
            raise InvalidDataError(f"cannot read {self.fmt} input {self.path}: {first}") from error


def _is_decode_error(error: BaseException | None) -> bool:
    """Arrow reports damaged bytes (corrupt snappy or zlib data, a truncated ORC postscript or
    gzip stream) as an OSError without an errno; a real I/O failure (permission denied, a disk
    error) carries one and is left to the storage error mapping."""
    return isinstance(error, OSError) and error.errno is None and not isinstance(error, InvalidDataError)


def decode_text(data: pa.Table, hint: pa.Schema | None, fmt: str, source: str,
                row_offset: int | None = 0) -> pa.Table:
    """CSV or JSON columns -> the table's types (``core.text_values``); an error names the
    row (and for CSV its line, the header being line 1) and the column; ``row_offset`` None:
    the rows' place in the input is not known (a Spark task's part), the error names the value."""
    if hint is None:
        return data
    columns = []
    for name, col in zip(data.column_names, data.columns):
        if name not in hint.names:
            columns.append(col)
            continue
        try:
            columns.append(decode_column(col, hint.field(name).type))
        except TextValueError as e:
            if row_offset is None:
                raise InvalidDataError(f"{fmt} input {source}, column {name}: {e}") from None
            row = row_offset + e.index + 1
            where = f"row {row} (line {row + 1})" if fmt == "csv" else f"row {row}"
            raise InvalidDataError(f"{fmt} input {source}, {where}, column {name}: {e}") from None
    return pa.Table.from_arrays(columns, names=data.column_names)


STREAMED_FORMATS = ("parquet", "csv")
TEXT_FORMATS = ("csv", "jsonl", "json")  # read as text and decoded to the table's types
BATCH_ROWS = 1 << 16  # rows per batch of a streamed input (a few MB at typical widths)
_CSV_BLOCK = 8 << 20  # bytes per block of a streamed CSV input
_CSV_HEADER_BLOCK = 64 << 10  # bytes parsed to learn a CSV input's column names


@dataclass(frozen=True, slots=True)
class InputFile:
    """One Parquet or CSV input file, read batch by batch.

    The batches hold the same values ``read_input`` would return: a CSV file streams only
    when the table types every column it has (``hint``); otherwise ``batches`` yields the
    whole file at once.
    """

    path: str
    fmt: str
    hint: pa.Schema | None = None

    @staticmethod
    def streams(path: str, fmt: str) -> bool:
        return fmt in STREAMED_FORMATS and path != "-" and "://" not in path and os.path.isfile(path)

    def read_all(self) -> pa.Table:
        return read_input(self.path, self.fmt, self.hint)

    def column_names(self) -> list[str]:
        with _ReadErrors(self.fmt, self.path):
            if self.fmt == "parquet":
                return pq.read_schema(self.path).names
            if self._blank():
                return []
            return _csv_names(self._open_csv)

    def batches(self) -> Iterator[pa.Table]:
        """The rows in input order, a batch at a time; an empty input is one empty batch.

        Raises:
            InvalidDataError: the file is unreadable or not valid in its format.
        """
        with _ReadErrors(self.fmt, self.path):
            if self.fmt == "parquet":
                yield from _parquet_batches(self.path, None)
                return
            if self._blank():
                yield pa.table({})
                return
            reader = self._open_csv()
            if self.hint is None or not all(name in self.hint.names for name in reader.schema.names):
                reader.close()
                yield self.read_all()
                return
            with reader:
                empty, rows = True, 0
                for batch in reader:
                    empty = False
                    yield decode_text(pa.Table.from_batches([batch]), self.hint, "csv", self.path, rows)
                    rows += batch.num_rows
                if empty:
                    yield decode_text(reader.schema.empty_table(), self.hint, "csv", self.path)

    def _blank(self) -> bool:
        with open(self.path, "rb") as fh:
            return _blank(fh)

    def _open_csv(self, block: int = _CSV_BLOCK) -> pacsv.CSVStreamingReader:
        return pacsv.open_csv(self.path, read_options=pacsv.ReadOptions(block_size=block),
                              convert_options=_csv_convert(self.hint))


def parquet_pieces(paths: Sequence[str], pieces: int) -> list[tuple[int, str, int, int, int]]:
    """The local Parquet files ``paths`` cut into about ``pieces`` runs of whole row groups, in
    input order: (piece index, path, first row group, end row group, rows before the piece).
    A Spark write reads each piece on an executor (``parquet_piece``)."""
    with_groups = []
    for path in paths:
        with _ReadErrors("parquet", path):
            meta = pq.read_metadata(path)
        with_groups.append((path, [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]))
    total = sum(sum(groups) for _, groups in with_groups)
    target = max(1, -(-total // max(1, pieces)))
    out: list[tuple[int, str, int, int, int]] = []
    before = 0
    for path, groups in with_groups:
        first, rows = 0, 0
        for i, n in enumerate(groups):
            rows += n
            if rows >= target or i == len(groups) - 1:
                out.append((len(out), path, first, i + 1, before))
                before += rows
                first, rows = i + 1, 0
    return out


def parquet_piece(path: str, first: int, end: int) -> Iterator[pa.Table]:
    """Row groups ``first`` to ``end`` (exclusive) of a local Parquet input, a batch at a time,
    as ``InputFile.batches`` reads the whole file."""
    with _ReadErrors("parquet", path):
        yield from _parquet_batches(path, range(first, end))


def _parquet_batches(path: str, row_groups: range | None) -> Iterator[pa.Table]:
    """A local Parquet file's rows (of ``row_groups``; None: all, and an empty file as one
    empty batch), a batch at a time."""
    # No pre-buffering: it would cache the compressed column chunks of every row group the
    # reader is given, i.e. the whole file.
    with pq.ParquetFile(path, pre_buffer=False) as f:
        _check_int96(path, f, path)
        if row_groups is None and f.metadata.num_rows == 0:
            yield f.schema_arrow.empty_table()
        for batch in f.iter_batches(batch_size=BATCH_ROWS, row_groups=row_groups):
            yield pa.Table.from_batches([batch])


@dataclass(frozen=True, slots=True)
class InputFiles:
    """The files of a glob or directory (or one file), read one after another: Parquet and
    CSV batch by batch, the other formats a file at a time."""

    paths: tuple[str, ...]
    fmt: str
    hint: pa.Schema | None = None

    def column_names(self) -> list[str]:
        """The columns of the first file (each file is checked as it is read)."""
        first = self.paths[0]
        if InputFile.streams(first, self.fmt):
            return InputFile(first, self.fmt, self.hint).column_names()
        return read_input(first, self.fmt, self.hint).column_names

    def batches(self) -> Iterator[pa.Table]:
        for path in self.paths:
            if InputFile.streams(path, self.fmt):
                yield from InputFile(path, self.fmt, self.hint).batches()
            else:
                yield read_input(path, self.fmt, self.hint)


def read_inputs(paths: list[str], fmt: str, hint: pa.Schema | None = None) -> pa.Table:
    """Every input file as one table (their columns unified by name)."""
    tables = [read_input(p, fmt, hint) for p in paths]
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise InvalidDataError(f"the input files do not share one schema: {str(e).splitlines()[0]}") from None


def _csv_names(open_csv: Callable[[int], pacsv.CSVStreamingReader]) -> list[str]:
    """A CSV input's column names, from ``open_csv(block_size)``: the names are in the header,
    so parsing a small first block tells them (the reading block would parse its 8 MB of rows
    here and again when reading)."""
    try:
        with open_csv(_CSV_HEADER_BLOCK) as reader:
            return reader.schema.names
    except pa.ArrowInvalid:
        pass  # a header longer than the small block: the reading block tells, or fails as reading will
    with open_csv(_CSV_BLOCK) as reader:
        return reader.schema.names


def _csv_convert(hint: pa.Schema | None) -> pacsv.ConvertOptions:
    """Columns of the table read as text (decoded by ``core.text_values``); an empty unquoted
    field is null, ``""`` an empty string, and no other text means null."""
    types = {f.name: pa.string() for f in hint} if hint is not None else {}
    return pacsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=True,
                                quoted_strings_can_be_null=False)


def _blank(fh: BinaryIO) -> bool:
    """Whether a seekable input holds nothing but whitespace: an empty input, as a 0-byte JSON
    lines file is (Arrow's CSV reader refuses it, though it has no rows to refuse). The input
    is left where it was."""
    start = fh.tell()
    try:
        while chunk := fh.read(1 << 16):
            if chunk.strip():
                return False
        return True
    finally:
        fh.seek(start)


def _read_csv(fh: BinaryIO, hint: pa.Schema | None, source: str, threads: bool = True) -> pa.Table:
    if _blank(fh):
        return pa.table({})
    return decode_text(pacsv.read_csv(fh, read_options=pacsv.ReadOptions(use_threads=threads),
                                      convert_options=_csv_convert(hint)), hint, "csv", source)


def _json_text_type(t: pa.DataType) -> pa.DataType | None:
    """The type Arrow's JSON reader should give a column of the table's type ``t``: the JSON
    form of its values (text for timestamps, bytes, decimals), for ``decode_text`` to finish;
    None where the JSON form mixes kinds (NaN among numbers, a map's pairs)."""
    if pa.types.is_integer(t):
        return pa.int64()
    if pa.types.is_boolean(t):
        return pa.bool_()
    if pa.types.is_floating(t) or pa.types.is_map(t):
        return None
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _json_text_type(t.value_type)
        return None if inner is None else pa.list_(inner)
    if pa.types.is_struct(t):
        fields = [(f.name, _json_text_type(f.type)) for f in t]
        return None if any(ft is None for _, ft in fields) else pa.struct(fields)
    return pa.string()


def _read_jsonl(fh: BinaryIO, hint: pa.Schema | None, source: str, threads: bool = True) -> pa.Table:
    import pyarrow.json as pajson

    read = pajson.ReadOptions(use_threads=threads)
    data = fh.read()
    if not data.strip():
        return pa.table({})
    if hint is None:
        return pajson.read_json(io.BytesIO(data), read_options=read)
    text_types = {f.name: _json_text_type(f.type) for f in hint}
    nested_mixed = any(t is None and pa.types.is_nested(hint.field(n).type) for n, t in text_types.items())
    table = None
    if not nested_mixed:
        # Arrow's reader, told each column's JSON form: it would otherwise infer types of its
        # own (timestamps from text) that are not the table's. Nullable: ops.write reports a
        # null key with its column and input row; the parser would not.
        explicit = pa.schema([pa.field(n, t) for n, t in text_types.items() if t is not None])
        parse = pajson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
        try:
            table = pajson.read_json(io.BytesIO(data), read_options=read, parse_options=parse)
        except pa.ArrowInvalid:
            table = None  # e.g. "NaN" among the numbers of a DOUBLE column
    if table is None:
        table = _rows_table(_json_lines(data), hint)
    return _with_absent_keys(decode_text(table, hint, "jsonl", source), hint)


def _with_absent_keys(table: pa.Table, hint: pa.Schema) -> pa.Table:
    """``table`` with a null column for each table column no record names: in JSON a key
    left out is null (as Spark's JSON reader and Flink's json format, without
    fail-on-missing-field, read it), whichever reader parsed the records."""
    for f in hint:
        if f.name not in table.column_names:
            table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
    return table


def _json_lines(data: bytes) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = parse_json(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"invalid JSON on line {number}: {e.msg}") from None
        if not isinstance(row, dict):
            raise ValueError(f"line {number} is not a JSON object")
        rows.append(row)
    return rows


def _rows_table(rows: list[dict[str, Any]], hint: pa.Schema) -> pa.Table:
    """JSON objects -> one text column per key (in the order keys first appear): strings as
    they are, other values as their JSON text (numbers as written: ``FloatText``), for
    ``decode_text`` to type."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    columns = []
    for name in names:
        values = [row.get(name) for row in rows]
        columns.append(pa.array([_json_text(v) for v in values], pa.string()))
    return pa.Table.from_arrays(columns, names=list(names)) if names else pa.table({})


def _json_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.text if isinstance(value, FloatText) else json.dumps(value)


def _json_array(fh: BinaryIO) -> list[dict[str, Any]]:
    """The objects of a .json input (an array of them, or one), numbers as written (``FloatText``)."""
    try:
        rows = json.load(fh, parse_float=FloatText)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError("a .json input must hold an array of objects (use jsonl for one object per line)")
    return rows


def _read_json_array(fh: BinaryIO, hint: pa.Schema | None, source: str) -> pa.Table:
    rows = _json_array(fh)
    if hint is None:
        return pa.Table.from_pylist(rows)
    return _with_absent_keys(decode_text(_rows_table(rows, hint), hint, "json", source), hint)


def infer_text_schema(paths: list[str], fmt: str) -> pa.Schema:
    """The column types ``write --auto-create`` gives a CSV, JSON lines or JSON input: those
    that change no value (``core.text_inference``). The input is read here once, as text.

    Raises:
        InvalidDataError: an input is unreadable or not valid in its format.
    """
    from core import text_inference

    if fmt == "csv":
        return text_inference.csv_schema(batch for path in paths for batch in _csv_text(path))
    return text_inference.json_schema(record for path in paths for record in _json_records(path, fmt))


def _csv_text(path: str) -> Iterator[pa.Table]:
    """A CSV file's rows a batch at a time, every column as text."""
    with _open(path) as fh, _ReadErrors("csv", path):
        if _blank(fh):
            return

        def open_csv(block: int, convert: pacsv.ConvertOptions | None = None) -> pacsv.CSVStreamingReader:
            fh.seek(0)
            return pacsv.open_csv(fh, read_options=pacsv.ReadOptions(block_size=block), convert_options=convert)

        text = pa.schema([pa.field(name, pa.string()) for name in _csv_names(open_csv)])
        with open_csv(_CSV_BLOCK, _csv_convert(text)) as reader:
            for batch in reader:
                yield pa.Table.from_batches([batch])


def _json_records(path: str, fmt: str) -> Iterator[dict[str, Any]]:
    """A JSON lines or JSON (array) file's objects, numbers as written (``FloatText``)."""
    with _open(path) as fh, _ReadErrors(fmt, path):
        yield from _json_lines(fh.read()) if fmt == "jsonl" else _json_array(fh)


def stdin_to_file(fmt: str) -> str:
    """stdin copied to a local temporary file (removed when the process exits), for an input
    read more than once: by the type inference and by the write, or by Spark's readers."""
    import atexit
    import shutil
    import tempfile

    fd, path = tempfile.mkstemp(prefix="lakectl-stdin-", suffix=f".{fmt}")
    with os.fdopen(fd, "wb") as f:
        shutil.copyfileobj(sys.stdin.buffer, f)
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
    return path


def read_records(data: bytes, fmt: str, hint: pa.Schema | None = None, source: str = "stdin") -> pa.Table:
    """Parse one batch of a record stream held in memory (CSV with its header line, or JSON
    lines) as ``read_input`` parses a whole file; ``source`` names the input in errors.

    Raises:
        InvalidDataError: the bytes are not valid in the format.
    """
    if fmt not in STREAM_FORMATS:
        raise UsageError(f"a record stream is csv or jsonl, not {fmt}")
    # On this thread: a batch of a stream is small, and parsing it on Arrow's CPU pool made
    # that pool start its threads just before a bad first batch ended the process. Exiting
    # while they started, the process aborted now and then ("terminate called without an
    # active exception", exit -6 instead of 5; seen under load in CI).
    with _ReadErrors(fmt, source):
        if fmt == "csv":
            return _read_csv(io.BytesIO(data), hint, source, threads=False)
        return _read_jsonl(io.BytesIO(data), hint, source, threads=False)
