"""Index manifests: the Avro file a snapshot's ``indexManifest`` names, listing index files.

Each entry (Java's IndexManifestEntry) names one file under ``index/`` of one (partition,
bucket): ``DELETION_VECTORS`` files (``core.deletion_vectors``) or ``HASH`` files of dynamic
buckets. An index manifest is the whole live set, not a delta: a commit reads the previous
snapshot's entries, applies its own (a DELETE removes that file, an ADD adds one) and writes
every survivor as an ADD. Java keeps one deletion-vector file per bucket (CommonBucketCombiner)
except in unaware-bucket append tables, where each file stands alone (UnawareBucketCombiner);
lakectl's commits always name the file they replace, so combining by file name serves both. Field names
and types are exactly those Java Paimon 1.0 writes; ``_CARDINALITY`` of a deletion-vector
range, which later Java versions add, is read when present.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import fastavro

from core.errors import CorruptMetadataError
from core.fileio import FileIO, join

DELETION_VECTORS = "DELETION_VECTORS"
HASH = "HASH"
ADD, DELETE = 0, 1

_RANGE = {"type": "record", "name": "org.apache.paimon.avro.generated.record__DELETIONS_VECTORS_RANGES",
          "fields": [{"name": "f0", "type": "string"}, {"name": "f1", "type": "int"}, {"name": "f2", "type": "int"}]}

INDEX_MANIFEST_ENTRY_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "org.apache.paimon.avro.generated.record",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"default": None, "name": "_DELETIONS_VECTORS_RANGES",
         "type": ["null", {"type": "array", "items": ["null", _RANGE]}]},
    ],
})


@dataclass(frozen=True, slots=True)
class DeletionVectorRange:
    """Where one data file's deletion vector sits in an index file (``offset`` points at its
    4-byte length; ``length`` counts the serialized vector)."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True, slots=True)
class IndexFileMeta:
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    index_file: IndexFileMeta

    def to_avro(self) -> dict[str, Any]:
        f = self.index_file
        ranges = None if f.dv_ranges is None else [
            {"f0": r.data_file, "f1": r.offset, "f2": r.length} for r in f.dv_ranges]
        return {"_VERSION": 1, "_KIND": self.kind, "_PARTITION": self.partition, "_BUCKET": self.bucket,
                "_INDEX_TYPE": f.index_type, "_FILE_NAME": f.file_name, "_FILE_SIZE": f.file_size,
                "_ROW_COUNT": f.row_count, "_DELETIONS_VECTORS_RANGES": ranges}

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> "IndexManifestEntry":
        raw = d.get("_DELETIONS_VECTORS_RANGES")
        ranges = None if raw is None else tuple(
            DeletionVectorRange(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY")) for r in raw if r is not None)
        meta = IndexFileMeta(d["_INDEX_TYPE"], d["_FILE_NAME"], d["_FILE_SIZE"], d["_ROW_COUNT"], ranges)
        return cls(d["_KIND"], d["_PARTITION"], d["_BUCKET"], meta)


def index_dir(table_path: str) -> str:
    return join(table_path, "index")


def new_index_file_name() -> str:
    return f"index-{uuid.uuid4()}-0"


def read_index_manifest(file_io: FileIO, table_path: str, name: str) -> list[IndexManifestEntry]:
    """The entries of ``manifest/<name>``."""
    path = join(table_path, "manifest", name)
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError as e:
        raise CorruptMetadataError(f"index manifest {path} named by a snapshot is missing") from e
    try:
        return [IndexManifestEntry.from_avro(r) for r in fastavro.reader(io.BytesIO(data))]
    except Exception as e:  # fastavro raises many unrelated types on garbage input
        raise CorruptMetadataError(f"cannot decode index manifest {path}: {e}") from e


def live_index_entries(file_io: FileIO, table_path: str, name: str | None) -> list[IndexManifestEntry]:
    """The index files of a snapshot (its ``indexManifest``; none when it has none)."""
    if not name:
        return []
    return [e for e in read_index_manifest(file_io, table_path, name) if e.kind == ADD]


def combine(previous: Iterable[IndexManifestEntry], changes: Iterable[IndexManifestEntry]) -> list[IndexManifestEntry]:
    """The live index files after ``changes``: a DELETE drops the file it names, an ADD adds
    its file. Deletes apply before adds; order is kept (previous files first)."""
    live: dict[str, IndexManifestEntry] = {e.index_file.file_name: e for e in previous if e.kind == ADD}
    changes = list(changes)
    for e in changes:
        if e.kind == DELETE:
            live.pop(e.index_file.file_name, None)
    for e in changes:
        if e.kind == ADD:
            live[e.index_file.file_name] = e
    return list(live.values())


def write_index_manifest(file_io: FileIO, table_path: str, entries: Sequence[IndexManifestEntry],
                         codec: str = "zstandard") -> str:
    """Write the entries (all ADD) as a new index manifest; returns its name."""
    name = f"index-manifest-{uuid.uuid4()}-0"
    buf = io.BytesIO()
    fastavro.writer(buf, INDEX_MANIFEST_ENTRY_SCHEMA, [e.to_avro() for e in entries], codec=codec)
    file_io.write_bytes(join(table_path, "manifest", name), buf.getvalue())
    return name


__all__ = ["ADD", "DELETE", "DELETION_VECTORS", "DeletionVectorRange", "HASH", "IndexFileMeta",
           "IndexManifestEntry", "combine", "index_dir", "live_index_entries", "new_index_file_name",
           "read_index_manifest", "write_index_manifest"]
