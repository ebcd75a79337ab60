"""Index manifests: the snapshot's ``indexManifest``, an Avro list of the index files under
``index/`` (HASH files of dynamic-bucket tables, deletion-vector files), and how a commit
folds its index changes into a new one.

Record and field names are those Java Paimon 1.0 writes (``IndexManifestEntry`` with a
``_VERSION`` of 1). Each deletion-vector range carries ``_CARDINALITY``, the number of rows
its vector deletes, as Java has written it since 1.0 (``DeletionVectorMeta``, a nullable
BIGINT after ``f0``-``f2``): Java's Iceberg commit refuses vectors without it and readers
count rows with it. Readers match a range's fields by name, so the snapshots of Java 1.0
that predate the field (the test oracle's) skip it, and a range written without it (by
Java 0.9 or those snapshots) reads as ``None``. An index manifest is always the full list of live index files, every
entry ADD: a commit reads the previous one, applies its own ADD/DELETE entries per
(partition, bucket, index type) (Java's ``IndexManifestFileHandler``: DELETEs first, then
ADDs replace; for deletion vectors of bucket-unaware tables, per file name) and writes the
result under a new name; a commit without index changes keeps the previous manifest.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import fastavro

from core.errors import CorruptMetadataError
from core.fileio import FileIO, join
from core.manifest import ADD, DELETE

HASH_INDEX = HASH = "HASH"
DELETION_VECTORS_INDEX = DELETION_VECTORS = "DELETION_VECTORS"
INDEX_DIR = "index"

_RANGE_RECORD = {
    "type": "record",
    "name": "org.apache.paimon.avro.generated.record__DELETIONS_VECTORS_RANGES",
    "fields": [{"name": "f0", "type": "string"}, {"name": "f1", "type": "int"}, {"name": "f2", "type": "int"},
               {"name": "_CARDINALITY", "type": ["null", "long"], "default": None}],
}

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
        {"name": "_DELETIONS_VECTORS_RANGES", "type": ["null", {"type": "array", "items": ["null", _RANGE_RECORD]}],
         "default": None},
    ],
})

_CODECS = {"zstd": "zstandard", "zstandard": "zstandard", "snappy": "snappy", "deflate": "deflate",
           "null": "null", "none": "null"}


@dataclass(frozen=True, slots=True)
class DeletionVectorRange:
    """Where one data file's deletion vector sits in an index file (``offset`` points at its
    4-byte length; ``length`` counts the serialized vector, magic and bitmap, or for a 64-bit
    vector its whole blob, length and CRC included). ``cardinality`` is the number of
    positions the vector deletes (``_CARDINALITY``): lakectl writes it for every vector it
    writes; None where a range was written without it."""

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
    # deletion-vector files only: one range per data file, in file order
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    kind: int  # ADD or DELETE
    partition: bytes
    bucket: int
    index_file: IndexFileMeta

    @property
    def identifier(self) -> tuple[bytes, int, str]:
        """What a commit's entry replaces: the (partition, bucket, index type) slot."""
        return (self.partition, self.bucket, self.index_file.index_type)

    def to_delete(self) -> "IndexManifestEntry":
        return IndexManifestEntry(DELETE, self.partition, self.bucket, self.index_file)

    def to_avro(self) -> dict[str, Any]:
        f = self.index_file
        ranges = None if f.dv_ranges is None else [
            {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
            for r in f.dv_ranges]
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


@dataclass(slots=True)
class IndexManifestIO:
    """Reads and writes a table's index manifests (in ``manifest/``) and names its index files."""

    file_io: FileIO
    table_path: str
    compression: str = "zstd"
    _prefix: str = field(default_factory=lambda: str(uuid.uuid4()))
    _manifests: int = 0
    _files: int = 0

    @property
    def dir(self) -> str:
        return join(self.table_path, "manifest")

    @property
    def index_dir(self) -> str:
        return join(self.table_path, INDEX_DIR)

    def index_path(self, file_name: str) -> str:
        return join(self.index_dir, file_name)

    def new_index_file_name(self) -> str:
        """``index-<uuid>-<n>``, as Java names index files."""
        name = f"index-{self._prefix}-{self._files}"
        self._files += 1
        return name

    def read(self, name: str | None) -> list[IndexManifestEntry]:
        """The entries of an index manifest (none for None)."""
        if not name:
            return []
        path = join(self.dir, name)
        data = self.file_io.read_bytes(path)
        try:
            return [IndexManifestEntry.from_avro(r) for r in fastavro.reader(io.BytesIO(data))]
        except Exception as e:  # fastavro raises many unrelated types on garbage input
            raise CorruptMetadataError(f"cannot decode index manifest {path}: {e}") from e

    def write(self, entries: Sequence[IndexManifestEntry]) -> str:
        """Write a new index manifest; returns its name (``index-manifest-<uuid>-<n>``)."""
        name = f"index-manifest-{self._prefix}-{self._manifests}"
        self._manifests += 1
        buf = io.BytesIO()
        fastavro.writer(buf, INDEX_MANIFEST_ENTRY_SCHEMA, (e.to_avro() for e in entries),
                        codec=_CODECS.get(self.compression.lower(), "zstandard"))
        self.file_io.write_bytes(join(self.dir, name), buf.getvalue())
        return name

    def write_changes(self, previous: str | None, changes: Sequence[IndexManifestEntry],
                      *, bucket_unaware: bool = False) -> str | None:
        """The index manifest after ``changes``: ``previous`` itself when there are none,
        else a new manifest of ``combine(read(previous), changes)``."""
        if not changes:
            return previous
        return self.write(combine(self.read(previous), changes, bucket_unaware=bucket_unaware))


def combine(previous: Iterable[IndexManifestEntry], changes: Iterable[IndexManifestEntry],
            *, bucket_unaware: bool = False) -> list[IndexManifestEntry]:
    """Java's index manifest merge: HASH entries first, then deletion-vector entries; per
    (partition, bucket, index type) the commit's DELETE entries remove and then its ADD
    entries replace. Deletion-vector files of a bucket-unaware table are instead matched by
    file name, applied in order. Returns ADD entries only."""
    previous, changes = list(previous), list(changes)
    for e in previous:
        if e.kind != ADD:
            raise CorruptMetadataError(f"index manifest holds a DELETE entry for {e.index_file.file_name}")
    out: list[IndexManifestEntry] = []
    for dv in (False, True):
        def of_type(entries: list[IndexManifestEntry]) -> list[IndexManifestEntry]:
            return [e for e in entries if (e.index_file.index_type == DELETION_VECTORS_INDEX) == dv]

        old, new = of_type(previous), of_type(changes)
        if dv and bucket_unaware:
            by_name = {e.index_file.file_name: e for e in old}
            for e in new:
                if e.kind == ADD:
                    by_name[e.index_file.file_name] = e
                else:
                    by_name.pop(e.index_file.file_name, None)
            out.extend(by_name.values())
            continue
        live = {e.identifier: e for e in old}
        for e in new:
            if e.kind == DELETE:
                live.pop(e.identifier, None)
        for e in new:
            if e.kind == ADD:
                live[e.identifier] = e
        out.extend(live.values())
    return out


def index_file_names(entries: Iterable[IndexManifestEntry]) -> list[str]:
    return [e.index_file.file_name for e in entries]


# ---- by table path (the readers and checkers of deletion vectors) -----------------------------
def index_dir(table_path: str) -> str:
    return join(table_path, INDEX_DIR)


def new_index_file_name() -> str:
    return f"index-{uuid.uuid4()}-0"


def read_index_manifest(file_io: FileIO, table_path: str, name: str) -> list[IndexManifestEntry]:
    """The entries of ``manifest/<name>``; a missing one is named as such."""
    path = join(table_path, "manifest", name)
    if not file_io.exists(path):
        raise CorruptMetadataError(f"index manifest {path} named by a snapshot is missing")
    return IndexManifestIO(file_io, table_path).read(name)


def live_index_entries(file_io: FileIO, table_path: str, name: str | None) -> list[IndexManifestEntry]:
    """The index files of a snapshot (its ``indexManifest``; none when it has none)."""
    if not name:
        return []
    return [e for e in read_index_manifest(file_io, table_path, name) if e.kind == ADD]
