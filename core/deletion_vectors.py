"""Deletion vectors: which row positions of a data file are deleted (``deletion-vectors.enabled``).

Java Paimon's format (DeletionVectorsIndexFile, BitmapDeletionVector): an index file under
``index/`` starts with a version byte (1); then, one after another, each data file's vector
as ``[int length][length bytes][int CRC32 of those bytes]`` (big-endian ints), where the bytes
are the magic number 1581511376 followed by a 32-bit RoaringBitmap in its portable
serialization. The index manifest (``core.index_manifest``) gives each data file's vector as
(index file, offset of the length int, length). Positions are 0-based row numbers within the
data file; a set bit means the row is deleted.

With ``deletion-vectors.bitmap64=true`` (Java's Bitmap64DeletionVector, Paimon 1.1+) a vector
is laid out as Iceberg's ``deletion-vector-v1`` blob instead: the same big-endian length and
CRC around the magic number 1681511377 written little-endian (bytes D1 D3 39 64) and a 64-bit
Roaring bitmap in its portable serialization (a little-endian 8-byte count of 32-bit bitmaps,
each after its little-endian 4-byte key, the high half of the positions). The index manifest's
length of such a vector is the whole blob, length int and CRC included (of a 32-bit one, the
magic and bitmap only). Readers tell the two apart by the magic number, as Java does.

Readers apply a file's vector after reading it (``apply``); where batch reads skip level-0
files of primary-key tables, the remaining files with their vectors applied hold each key
once, so Java reads them without merging.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from core.errors import CorruptMetadataError
from core.fileio import FileIO, join

if TYPE_CHECKING:
    import numpy as np
    from pyroaring import BitMap

    # core.index_manifest is imported where index files are read or written: a scan of a
    # table without deletion vectors only passes DeletionFile through.
    from core.index_manifest import IndexFileMeta, IndexManifestEntry

VERSION = 1
MAGIC = 1581511376
MAGIC64 = 1681511377  # stored little-endian: b"\xd1\xd3\x39\x64", Iceberg's DV magic
_MAGIC64_BYTES = struct.pack("<i", MAGIC64)


@dataclass(frozen=True, slots=True)
class DeletionFile:
    """Where one data file's deletion vector is: picklable, ships with a split to executors."""

    path: str
    offset: int
    length: int
    cardinality: int | None = None


class CarriesDeletionFiles:
    """Base of the per-bucket tasks that ship with their files' deletion vectors (a read
    split, a write task, a compaction task): ``deletion_files`` pairs a data file's name with
    where its vector is. No state of its own, so the dataclasses keep their slots."""

    __slots__ = ()
    deletion_files: tuple[tuple[str, DeletionFile], ...]

    def deletion(self, meta: Any) -> DeletionFile | None:
        """The deletion vector of the data file ``meta`` (a DataFileMeta), or None."""
        for name, deletion in self.deletion_files:
            if name == meta.file_name:
                return deletion
        return None


def writes_bitmap64(options: Mapping[str, str]) -> bool:
    """Whether the table writes 64-bit vectors (``deletion-vectors.bitmap64``, false by default)."""
    return options.get("deletion-vectors.bitmap64", "false").strip().lower() == "true"


def bitmap_class() -> type:
    """pyroaring's BitMap, imported on first use: tables without deletion vectors (and Spark
    executors reading them) never need pyroaring."""
    from pyroaring import BitMap

    return BitMap


def serialize(bitmap: BitMap) -> bytes:
    """One vector's bytes (magic + portable RoaringBitmap), without length and checksum."""
    bitmap.run_optimize()
    return struct.pack(">i", MAGIC) + bitmap.serialize()


def serialize64(bitmap: BitMap) -> bytes:
    """One vector's bytes in the 64-bit layout (magic + portable 64-bit Roaring bitmap), without
    length and checksum. A data file's positions fit in 32 bits, so there is at most one 32-bit
    bitmap, under key 0 (an empty vector has none, as Java writes it)."""
    bitmap.run_optimize()
    body = struct.pack("<qi", 1, 0) + bitmap.serialize() if len(bitmap) else struct.pack("<q", 0)
    return _MAGIC64_BYTES + body


def blob(body: bytes) -> bytes:
    """A vector framed as stored: big-endian length of ``body``, ``body``, big-endian CRC-32 of it."""
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def deserialize(data: bytes, where: str) -> BitMap:
    """The positions of a vector's bytes (magic + bitmap), either layout."""
    if len(data) < 4:
        raise CorruptMetadataError(f"deletion vector in {where} is truncated")
    if data[:4] == _MAGIC64_BYTES:
        return _deserialize64(data[4:], where)
    (magic,) = struct.unpack(">i", data[:4])
    if magic != MAGIC:
        raise CorruptMetadataError(f"deletion vector in {where} has magic number {magic}, expected {MAGIC} "
                                   f"or {MAGIC64}")
    try:
        return bitmap_class().deserialize(data[4:])
    except Exception as e:  # pyroaring raises ValueError or others on garbage
        raise CorruptMetadataError(f"cannot decode the deletion vector in {where}: {e}") from e


def _deserialize64(data: bytes, where: str) -> BitMap:
    """A portable 64-bit Roaring bitmap whose positions all fit in 32 bits (key 0: a data file
    holds fewer than 2**32 rows); a bitmap under another key is refused, not truncated."""
    if len(data) < 8:
        raise CorruptMetadataError(f"deletion vector in {where} is truncated")
    (count,) = struct.unpack("<q", data[:8])
    out = bitmap_class()()
    rest = data[8:]
    for _ in range(count):
        if len(rest) < 4:
            raise CorruptMetadataError(f"deletion vector in {where} is truncated")
        (key,) = struct.unpack("<i", rest[:4])
        try:
            part = bitmap_class().deserialize(rest[4:])
        except Exception as e:  # pyroaring raises ValueError or others on garbage
            raise CorruptMetadataError(f"cannot decode the deletion vector in {where}: {e}") from e
        if key != 0 and len(part):
            raise CorruptMetadataError(f"deletion vector in {where} deletes positions past 2**32 (key {key})")
        out |= part
        # pyroaring reads one portable bitmap from a longer buffer; its own serialization has
        # the same size (the same containers), which is where the next key starts.
        rest = rest[4 + len(part.serialize()):]
    return out


def _vector_at(data: bytes, offset: int, length: int, where: str, *, listed_in: str = "the index manifest") -> BitMap:
    if offset + 8 > len(data):
        raise CorruptMetadataError(f"deletion vector at offset {offset} runs past the end of {where}")
    (size,) = struct.unpack(">i", data[offset:offset + 4])
    # The index manifest gives a 64-bit vector's whole blob, a 32-bit one's body only.
    body_length = length - 8 if data[offset + 4:offset + 8] == _MAGIC64_BYTES else length
    if size != body_length:
        raise CorruptMetadataError(f"deletion vector at offset {offset} of {where} is {size} bytes, "
                                   f"{listed_in} says {body_length}")
    if offset + 4 + size + 4 > len(data):
        raise CorruptMetadataError(f"deletion vector at offset {offset} runs past the end of {where}")
    body = data[offset + 4:offset + 4 + size]
    (crc,) = struct.unpack(">i", data[offset + 4 + size:offset + 8 + size])
    actual = zlib.crc32(body)
    if actual != (crc & 0xFFFFFFFF):
        raise CorruptMetadataError(f"deletion vector at offset {offset} of {where} fails its checksum")
    return deserialize(body, where)


def read_iceberg_blob(blob: bytes, where: str) -> BitMap:
    """The positions of an Iceberg ``deletion-vector-v1`` blob (as a Puffin file holds it, from
    its content offset for its content size). The blob is byte for byte a 64-bit vector framed
    as Paimon stores it, so it is read and checked (length, magic, CRC) as one; a 32-bit
    Paimon vector is not a valid blob."""
    if blob[4:8] != _MAGIC64_BYTES:
        raise CorruptMetadataError(f"deletion vector in {where} lacks the magic bytes D1 D3 39 64")
    return _vector_at(blob, 0, len(blob), where, listed_in="its manifest entry")


def _check_version(data: bytes, where: str) -> None:
    if not data or data[0] != VERSION:
        raise CorruptMetadataError(f"deletion-vector index file {where} has version "
                                   f"{data[0] if data else 'none'}, expected {VERSION}")


def read_vector(file_io: FileIO, deletion: DeletionFile) -> BitMap:
    """The deleted positions of one data file."""
    data = file_io.read_bytes(deletion.path)
    _check_version(data, deletion.path)
    return _vector_at(data, deletion.offset, deletion.length, deletion.path)


def read_vectors(file_io: FileIO, deletions: Iterable[DeletionFile]) -> list[BitMap]:
    """The deleted positions of several data files, in order, reading each index file once."""
    files: dict[str, bytes] = {}
    out = []
    for d in deletions:
        if d.path not in files:
            files[d.path] = file_io.read_bytes(d.path)
            _check_version(files[d.path], d.path)
        out.append(_vector_at(files[d.path], d.offset, d.length, d.path))
    return out


def read_index_file(file_io: FileIO, table_path: str, meta: IndexFileMeta) -> dict[str, BitMap]:
    """Every vector of one index file, by data file name (checks version, sizes, checksums)."""
    from core.index_manifest import index_dir

    path = join(index_dir(table_path), meta.file_name)
    data = file_io.read_bytes(path)
    _check_version(data, path)
    return {r.data_file: _vector_at(data, r.offset, r.length, path) for r in meta.dv_ranges or ()}


def deleted_mask(bitmap: BitMap, row_count: int) -> np.ndarray:
    """A boolean array over a file's rows, True where the row is deleted."""
    import numpy as np  # here: `files` and `check` read vectors without numpy (80 ms to load)

    mask = np.zeros(row_count, dtype=bool)
    if len(bitmap):
        positions = np.frombuffer(bitmap.to_array(), dtype=np.uint32) if hasattr(bitmap, "to_array") \
            else np.fromiter(bitmap, dtype=np.uint32)
        positions = positions[positions < row_count]
        mask[positions] = True
    return mask


def write_index_file(file_io: FileIO, table_path: str, vectors: Mapping[str, BitMap], *,
                     bitmap64: bool = False) -> IndexFileMeta:
    """Write ``vectors`` (data file name -> deleted positions; empty ones are left out) as one
    index file, in the 64-bit layout with ``bitmap64`` (the table's ``deletion-vectors.bitmap64``);
    returns its meta with the ranges, in the order written."""
    from core.index_manifest import DELETION_VECTORS, DeletionVectorRange, IndexFileMeta, index_dir, new_index_file_name

    out = bytearray([VERSION])
    ranges = []
    for name, bitmap in vectors.items():
        if not len(bitmap):
            continue
        framed = blob(serialize64(bitmap) if bitmap64 else serialize(bitmap))
        # Java's range length: the whole blob for a 64-bit vector, the body for a 32-bit one.
        ranges.append(DeletionVectorRange(name, len(out), len(framed) if bitmap64 else len(framed) - 8, len(bitmap)))
        out += framed
    name = new_index_file_name()
    file_io.write_bytes(join(index_dir(table_path), name), bytes(out))
    return IndexFileMeta(DELETION_VECTORS, name, len(out), len(ranges), tuple(ranges))


def deletion_files(entries: Iterable[IndexManifestEntry], table_path: str) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
    """(partition, bucket) -> data file name -> its deletion vector, from index manifest entries."""
    from core.index_manifest import ADD, DELETION_VECTORS, index_dir

    out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
    directory = index_dir(table_path)
    for e in entries:
        if e.kind != ADD or e.index_file.index_type != DELETION_VECTORS:
            continue
        path = join(directory, e.index_file.file_name)
        files = out.setdefault((e.partition, e.bucket), {})
        for r in e.index_file.dv_ranges or ():
            files[r.data_file] = DeletionFile(path, r.offset, r.length, r.cardinality)
    return out


def snapshot_deletion_files(file_io: FileIO, table_path: str,
                            snapshot: Any) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
    """(partition, bucket) -> data file name -> its deletion vector, at ``snapshot``."""
    if snapshot is None or not snapshot.index_manifest:
        return {}
    from core.index_manifest import live_index_entries

    return deletion_files(live_index_entries(file_io, table_path, snapshot.index_manifest), table_path)


def bucket_index_files(file_io: FileIO, table_path: str, snapshot: Any) -> dict[tuple[bytes, int], IndexFileMeta]:
    """(partition, bucket) -> its deletion-vector index file, at ``snapshot``."""
    if snapshot is None or not snapshot.index_manifest:
        return {}
    from core.index_manifest import DELETION_VECTORS, live_index_entries

    return {(e.partition, e.bucket): e.index_file
            for e in live_index_entries(file_io, table_path, snapshot.index_manifest)
            if e.index_file.index_type == DELETION_VECTORS}


def split_deletion_files(vectors: Mapping[tuple[bytes, int], Mapping[str, DeletionFile]], partition: bytes,
                         bucket: int, entries: Iterable[Any]) -> tuple[tuple[str, DeletionFile], ...]:
    """The deletion vectors of some files of one bucket (``ManifestEntry`` or ``DataFileMeta``),
    as ``ReadSplit.deletion_files`` / ``CompactTask.deletion_files`` carry them."""
    bucket_vectors = vectors.get((partition, bucket))
    if not bucket_vectors:
        return ()
    names = [getattr(e, "file", e).file_name for e in entries]
    return tuple((n, bucket_vectors[n]) for n in names if n in bucket_vectors)


__all__ = ["DeletionFile", "MAGIC", "MAGIC64", "bitmap_class", "blob", "bucket_index_files", "deleted_mask",
           "deletion_files", "deserialize", "read_iceberg_blob", "read_index_file", "read_vector", "read_vectors", "serialize",
           "serialize64", "snapshot_deletion_files", "split_deletion_files", "write_index_file", "writes_bitmap64"]
