"""``core.blob_file`` against .blob files laid out by hand from the format's description (records
of magic, bytes, length and CRC; a zig-zag delta varint index; its length and version)."""

from __future__ import annotations

import struct
import zlib

import pytest

from core.blob_file import PLACEHOLDER, blob_rows
from core.errors import CorruptMetadataError


def record(value: bytes) -> bytes:
    head = struct.pack("<I", 1481511375) + value + struct.pack("<Q", len(value) + 16)
    return head + struct.pack("<I", zlib.crc32(head))


def varint(value: int) -> bytes:
    zigzag = value * 2 if value >= 0 else -value * 2 - 1
    out = bytearray()
    while zigzag >= 0x80:
        out.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    return bytes(out + bytes([zigzag]))


def blob_file(rows: list[bytes | None | int]) -> bytes:
    """A file of ``rows``: bytes, None (length -1) or -2 (a placeholder)."""
    body, lengths = b"", []
    for row in rows:
        if isinstance(row, bytes):
            body += record(row)
            lengths.append(len(row) + 16)
        else:
            lengths.append(-1 if row is None else row)
    index = b"".join(varint(n - (lengths[i - 1] if i else 0)) for i, n in enumerate(lengths))
    return body + index + struct.pack("<I", len(index)) + bytes([1])


def test_values_nulls_and_placeholders_come_back_in_row_order() -> None:
    big = bytes(range(256)) * 40  # a length whose varints take several bytes
    rows = [b"xyz", None, b"", big, -2, b"\x00\xff"]
    assert blob_rows(blob_file(rows), "f.blob") == [b"xyz", None, b"", big, PLACEHOLDER, b"\x00\xff"]
    assert blob_rows(blob_file([]), "f.blob") == []


@pytest.mark.parametrize("damage,words", [
    (lambda d: d[:-1] + bytes([2]), "version 2"),
    (lambda d: d[:4] + b"X" + d[5:], "CRC"),
    (lambda d: b"\x00" + d[1:], "no blob record"),
    (lambda d: d[:3], "too short"),
])
def test_a_damaged_file_is_reported_not_misread(damage, words: str) -> None:
    data = blob_file([b"hello", None])
    with pytest.raises(CorruptMetadataError, match=words):
        blob_rows(damage(data), "f.blob")
