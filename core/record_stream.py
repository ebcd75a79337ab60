"""A record stream: JSON lines or CSV arriving on a pipe, split into records as bytes come in.

``RecordReader.read(timeout)`` returns the records completed within ``timeout`` seconds and
never blocks longer, so a streaming writer can commit on time while its input is idle. It
reads the file descriptor itself (``select`` + ``os.read``) rather than a buffered file
object, so no Python-level lock or read-ahead sits between the pipe and the records.

A record is one line (``\\r\\n`` or ``\\n``; blank lines are not records). A CSV record whose
quotes are still open at the end of a line continues on the next one (a quoted field may hold
newlines); the first CSV record is the header, which is not counted as a record. A last line
without a newline is a record at end of input.
"""

from __future__ import annotations

import os
import select
from typing import BinaryIO

from core.errors import UsageError

STREAM_FORMATS = ("jsonl", "csv")
_READ_SIZE = 1 << 16


class RecordReader:
    """Splits a byte stream into records; see the module doc."""

    def __init__(self, source: BinaryIO, fmt: str) -> None:
        if fmt not in STREAM_FORMATS:
            raise UsageError(f"a streaming write reads {' or '.join(STREAM_FORMATS)}, not {fmt}")
        self.csv = fmt == "csv"
        self.header: bytes | None = None  # the CSV header line, once read
        self.eof = False
        self._source = source
        try:
            self._fd: int | None = source.fileno()
        except (AttributeError, OSError, ValueError):  # io.BytesIO and other in-memory streams
            self._fd = None
        self._rest = b""  # bytes after the last complete line
        self._open_record: list[bytes] = []  # lines of a CSV record whose quotes are still open
        self._quotes = 0  # quote characters in _open_record

    def read(self, timeout: float | None) -> list[bytes]:
        """Records completed within ``timeout`` seconds (None: wait for some input); an empty
        list when nothing came. After the end of input, ``eof`` is True and reads return []."""
        if self.eof:
            return []
        chunk = self._read_chunk(timeout)
        if chunk is None:
            return []
        if not chunk:
            self.eof = True
            lines = [self._rest] if self._rest else []
            self._rest = b""
            records = self._records(lines)
            if self._open_record:  # unbalanced quotes at the end: let the CSV parser report it
                records.append(b"\n".join(self._open_record))
                self._open_record = []
            return records
        data = self._rest + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            self._rest = data
            return []
        self._rest = data[cut + 1:]
        return self._records(data[:cut].split(b"\n"))

    def _read_chunk(self, timeout: float | None) -> bytes | None:
        """Bytes read (b"" at end of input), or None if nothing arrived within ``timeout``."""
        if self._fd is None:
            return self._source.read(_READ_SIZE)
        ready, _, _ = select.select([self._fd], [], [], timeout)
        if not ready:
            return None
        return os.read(self._fd, _READ_SIZE)

    def _records(self, lines: list[bytes]) -> list[bytes]:
        out = []
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if self.csv:
                if not self._open_record and not line.strip():
                    continue
                self._open_record.append(line)
                self._quotes += line.count(b'"')
                if self._quotes % 2:
                    continue  # inside a quoted field: the record goes on
                record = b"\n".join(self._open_record)
                self._open_record, self._quotes = [], 0
                if self.header is None:
                    self.header = record
                    continue
                out.append(record)
            elif line.strip():
                out.append(line)
        return out

    def batch_bytes(self, records: list[bytes]) -> bytes:
        """The bytes of ``records`` as one input in the stream's format (CSV: with its header)."""
        body = b"\n".join(records) + b"\n"
        if self.csv:
            return (self.header or b"") + b"\n" + body
        return body
