"""core.iceberg.source pieces that pyiceberg 0.12 cannot exercise: a format-3 deletion vector
(pyiceberg writes none), built here byte by byte from the Iceberg spec's Puffin layout; and the
type mapping's refusals."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from pyroaring import BitMap

from core.errors import CorruptMetadataError, UsageError
from core.fileio import FileIO
from core.iceberg.source import _deletion_vector, paimon_type


def test_a_deletion_vector_blob_gives_its_positions(tmp_path: Path) -> None:
    """[length BE][magic D1 D3 39 64][count LE 64][key LE 32][portable 32-bit bitmap][CRC BE]."""
    low = BitMap([0, 7, 65536, 100000])
    vector = bytes([0xD1, 0xD3, 0x39, 0x64]) + struct.pack("<q", 1) + struct.pack("<I", 0) + low.serialize()
    blob = struct.pack(">i", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
    puffin = tmp_path / "dv.puffin"
    puffin.write_bytes(b"PFA1" + b"\0" * 10 + blob + b"footer")
    entry = {"file_path": str(puffin), "content_offset": 14, "content_size_in_bytes": len(blob)}
    assert _deletion_vector(entry, lambda _: FileIO.for_uri(str(puffin))) == [0, 7, 65536, 100000]
    # Checked as Paimon's 64-bit vectors are (the same reader): a damaged bitmap fails the CRC,
    # a blob without the magic bytes is refused.
    damaged = bytearray(puffin.read_bytes())
    damaged[14 + 4 + 4 + 8 + 4 + 9] ^= 0x01  # a byte of the bitmap's first container
    puffin.write_bytes(bytes(damaged))
    with pytest.raises(CorruptMetadataError, match="checksum"):
        _deletion_vector(entry, lambda _: FileIO.for_uri(str(puffin)))
    puffin.write_bytes(b"PFA1" + b"\0" * 10 + blob[:4] + b"\0\0\0\0" + blob[8:] + b"footer")
    with pytest.raises(CorruptMetadataError, match="magic bytes D1 D3 39 64"):
        _deletion_vector(entry, lambda _: FileIO.for_uri(str(puffin)))


@pytest.mark.parametrize("iceberg_type", ["time", "uuid", "timestamp_ns"])
def test_types_paimon_holds_otherwise_are_refused_naming_the_column(iceberg_type: str) -> None:
    with pytest.raises(UsageError, match=f"column c: Iceberg type {iceberg_type}"):
        paimon_type(iceberg_type, "c")
    assert str(paimon_type({"type": "list", "element-id": 3, "element": "decimal(9, 2)",
                            "element-required": True}, "c")) == "ARRAY<DECIMAL(9, 2) NOT NULL>"
