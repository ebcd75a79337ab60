"""Paimon's deletion vectors as Iceberg v3 deletion vectors (``metadata.iceberg.format-version=3``).

Iceberg format 3 expresses "these rows of that data file are deleted" as a
``deletion-vector-v1`` blob in a Puffin file, listed in a delete manifest (content 1) as a
position-delete file (content 1, format PUFFIN) with ``referenced_data_file`` and the blob's
``content_offset`` / ``content_size_in_bytes``. The blob is: big-endian length of what
follows up to the CRC, magic bytes D1 D3 39 64, a portable 64-bit Roaring bitmap, big-endian
CRC-32 of magic and bitmap; Paimon's 64-bit vector (``deletion-vectors.bitmap64``) has exactly
that layout, so ``core.deletion_vectors`` writes both.

Java Paimon (1.2+) exposes vectors only with ``deletion-vectors.bitmap64=true`` and points the
manifest entries into its own index files (``index/index-...``, a version byte and the blobs
back to back, no Puffin header or footer), relying on readers to seek to the offset. Readers
that open the delete file as Puffin, pyiceberg 0.12 among them, refuse those files ("Incorrect
magic bytes"). lakectl therefore writes a real Puffin file per sync, beside the metadata,
holding one blob per visible data file that has a vector, converted from whichever layout the
table's index files hold; so it needs no ``bitmap64`` (see docs/iceberg.md).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, Iterable

from core.deletion_vectors import DeletionFile, blob, read_vectors, serialize64, snapshot_deletion_files
from core.fileio import FileIO, join

PUFFIN_MAGIC = b"PFA1"
BLOB_TYPE = "deletion-vector-v1"
# Iceberg's reserved field id of the row position (``_pos``), which a deletion vector is about.
ROW_POSITION_FIELD_ID = 2**31 - 1 - 2


@dataclass(frozen=True, slots=True)
class IcebergDeletionVector:
    """One data file's vector as a delete manifest lists it: what gives its partition (a
    ``PaimonVector``), the data file's path, and where its blob is in the Puffin file."""

    entry: Any
    data_file_path: str
    offset: int
    size: int
    cardinality: int


@dataclass(frozen=True, slots=True)
class PaimonVector:
    """A data file's vector in the Paimon table: its partition (``.partition``, as a manifest
    entry has it) and where the vector is (two snapshots' vectors of a file are the same
    vector exactly when they are at the same place)."""

    partition: bytes
    deletion: DeletionFile


def table_vectors(file_io: FileIO, table_path: str, schema: Any, snapshot: Any) -> dict[str, PaimonVector]:
    """Data file path -> its deletion vector, every vector of the table at ``snapshot``."""
    return {join(schema.bucket_dir(table_path, partition, bucket), name): PaimonVector(partition, deletion)
            for (partition, bucket), files in snapshot_deletion_files(file_io, table_path, snapshot).items()
            for name, deletion in files.items()}


def read_changed(file_io: FileIO, vectors: dict[str, PaimonVector]) -> list[tuple[Any, str, Any]]:
    """(partition holder, data file path, deleted positions) of each non-empty vector."""
    bitmaps = read_vectors(file_io, [v.deletion for v in vectors.values()])
    return [(v, path, b) for (path, v), b in zip(vectors.items(), bitmaps) if len(b)]


def puffin_file(vectors: Iterable[tuple[Any, str, Any]]) -> tuple[bytes, list[IcebergDeletionVector]]:
    """A Puffin file with one ``deletion-vector-v1`` blob per (entry, data file path, bitmap),
    and where each blob landed. Blob snapshot id and sequence number are -1: Iceberg's rule for
    deletion vectors, whose manifest entry carries them."""
    out = bytearray(PUFFIN_MAGIC)
    placed: list[IcebergDeletionVector] = []
    described = []
    for entry, path, bitmap in vectors:
        data = blob(serialize64(bitmap))
        placed.append(IcebergDeletionVector(entry, path, len(out), len(data), len(bitmap)))
        described.append({"type": BLOB_TYPE, "fields": [ROW_POSITION_FIELD_ID], "snapshot-id": -1,
                          "sequence-number": -1, "offset": len(out), "length": len(data),
                          "properties": {"referenced-data-file": path, "cardinality": str(len(bitmap))}})
        out += data
    footer = json.dumps({"blobs": described, "properties": {"created-by": "lakectl"}}).encode("utf-8")
    # Footer: magic, JSON payload, its size (little-endian), 4 flag bytes (0: not compressed), magic.
    out += PUFFIN_MAGIC + footer + struct.pack("<i", len(footer)) + bytes(4) + PUFFIN_MAGIC
    return bytes(out), placed


__all__ = ["IcebergDeletionVector", "PaimonVector", "puffin_file", "read_changed", "table_vectors"]
