"""Paimon's ``.blob`` files (Paimon 2.x): the values of one BLOB column of a data-evolution
table, for a run of row ids, outside the Parquet/ORC/Avro data files.

The layout (pypaimon 2.1's ``BlobFormatWriter`` writes it, its ``FormatBlobReader`` reads it):

- one record per non-null value, back to back: a magic number (little-endian uint32
  1481511375), the value's bytes, the record's length (little-endian uint64, magic to CRC
  included) and a CRC-32 of everything before it in the record (little-endian uint32);
- then the index: each row's record length (-1 for a null), as zig-zag varints, the first
  as it is and every later one as the difference from the one before;
- then the index's length (little-endian uint32) and the version byte 1.

A row's length may also be -2: a placeholder a partial write leaves where the row keeps the
value of an older blob file of the same rows. Only a plain BLOB column's values are read
here (``ARRAY<BLOB>``/``MAP<.., BLOB>`` payloads are refused before any reading).
"""

from __future__ import annotations

import struct
import zlib

from core.errors import CorruptMetadataError

MAGIC = 1481511375
VERSION = 1
_NULL, _PLACEHOLDER = -1, -2
_TRAILER = 5  # the index length (uint32) and the version byte
_RECORD_OVERHEAD = 16  # magic (4), length (8), CRC (4)


class _Placeholder:
    """A row a partial write left for an older blob file's value."""

    def __repr__(self) -> str:
        return "PLACEHOLDER"


PLACEHOLDER = _Placeholder()


def blob_rows(data: bytes, path: str) -> list[bytes | None | _Placeholder]:
    """The values of a ``.blob`` file's column, one per row in file order: the bytes, None for
    a null, ``PLACEHOLDER`` where the row keeps an older file's value.

    Raises:
        CorruptMetadataError: the file is not a version-1 blob file, or a record does not
            match its index entry, magic number or CRC.
    """
    values: list[bytes | None | _Placeholder] = []
    offset = 0
    for row, length in enumerate(_index(data, path)):
        if length == _NULL:
            values.append(None)
        elif length == _PLACEHOLDER:
            values.append(PLACEHOLDER)
        elif length < 0:
            raise CorruptMetadataError(f"blob file {path} gives row {row} the length {length}")
        else:
            values.append(_record(data, offset, length, path))
            offset += length
    return values


def _index(data: bytes, path: str) -> list[int]:
    """Each row's record length, from the index at the end of the file."""
    if len(data) < _TRAILER:
        raise CorruptMetadataError(f"blob file {path} is too short ({len(data)} bytes) to be a blob file")
    index_length, version = struct.unpack_from("<IB", data, len(data) - _TRAILER)
    if version != VERSION:
        raise CorruptMetadataError(f"blob file {path} has version {version}; lakectl reads version {VERSION}")
    start = len(data) - _TRAILER - index_length
    if start < 0:
        raise CorruptMetadataError(f"blob file {path} names an index of {index_length} bytes, longer than the file")
    lengths: list[int] = []
    previous = 0
    for i, value in enumerate(_zigzag_varints(data[start:len(data) - _TRAILER], path)):
        previous = value if i == 0 else previous + value
        lengths.append(previous)
    return lengths


def _zigzag_varints(index: bytes, path: str) -> list[int]:
    values, shift, acc = [], 0, 0
    for byte in index:
        acc |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 63:
                raise CorruptMetadataError(f"blob file {path} has an index varint longer than 64 bits")
            continue
        values.append(-((acc + 1) >> 1) if acc & 1 else acc >> 1)
        shift, acc = 0, 0
    if shift:
        raise CorruptMetadataError(f"blob file {path} has an index that ends inside a varint")
    return values


def _record(data: bytes, offset: int, length: int, path: str) -> bytes:
    """The value of the record at ``offset`` of ``length`` bytes, checked against its framing."""
    end = offset + length
    if length < _RECORD_OVERHEAD or end > len(data):
        raise CorruptMetadataError(f"blob file {path} has a record of {length} bytes at {offset} that does not "
                                   "fit the file")
    magic, = struct.unpack_from("<I", data, offset)
    stored_length, crc = struct.unpack_from("<QI", data, end - 12)
    if magic != MAGIC or stored_length != length:
        raise CorruptMetadataError(f"blob file {path} has no blob record at byte {offset}")
    if zlib.crc32(data[offset:end - 4]) != crc:
        raise CorruptMetadataError(f"blob file {path} fails the CRC of its record at byte {offset}")
    return data[offset + 4:end - 12]
