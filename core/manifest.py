"""Manifests: DataFileMeta, ManifestEntry, ManifestFileMeta and their Avro files.

Record and field names are exactly those Paimon writes (spec §4), so Java and pypaimon
read our manifests and we read theirs. Files are written once under unique names and
never modified.
"""

from __future__ import annotations

import datetime as dt
import io
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Sequence

import fastavro

from core import binary_row
from core.errors import CorruptMetadataError
from core.fileio import FileIO, join
from core.stats import EMPTY_STATS, SimpleStats, java_float_key

ADD, DELETE = 0, 1
FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT = 0, 1

_STATS_FIELDS = [
    {"name": "_MIN_VALUES", "type": "bytes"},
    {"name": "_MAX_VALUES", "type": "bytes"},
    {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None},
]


def _stats_record(name: str) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": _STATS_FIELDS}


def _nullable(avro_type: Any) -> dict[str, Any]:
    return {"type": ["null", avro_type], "default": None}


_STRING_ARRAY = {"type": "array", "items": "string"}
# Manifests read at once on an object store (S3 answers each GET in milliseconds to tens of them).
OBJECT_STORE_READERS = 8

DATA_FILE_META_SCHEMA = {
    "type": "record",
    "name": "DataFileMeta",
    "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats_record("record_KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats_record("record_VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": _STRING_ARRAY},
        {"name": "_CREATION_TIME", **_nullable({"type": "long", "logicalType": "timestamp-millis"})},
        {"name": "_DELETE_ROW_COUNT", **_nullable("long")},
        {"name": "_EMBEDDED_FILE_INDEX", **_nullable("bytes")},
        {"name": "_FILE_SOURCE", **_nullable("int")},
        {"name": "_VALUE_STATS_COLS", **_nullable(_STRING_ARRAY)},
        {"name": "_EXTERNAL_PATH", **_nullable("string")},
        {"name": "_FIRST_ROW_ID", **_nullable("long")},
        {"name": "_WRITE_COLS", **_nullable(_STRING_ARRAY)},
        {"name": "_WRITE_COLS_SEQUENCES", **_nullable({"type": "array", "items": "long"})},
    ],
}

MANIFEST_ENTRY_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "ManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": DATA_FILE_META_SCHEMA},
    ],
})

MANIFEST_FILE_META_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "ManifestFileMeta",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_record("record_PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_MIN_BUCKET", **_nullable("int")},
        {"name": "_MAX_BUCKET", **_nullable("int")},
        {"name": "_MIN_LEVEL", **_nullable("int")},
        {"name": "_MAX_LEVEL", **_nullable("int")},
        {"name": "_MIN_ROW_ID", **_nullable("long")},
        {"name": "_MAX_ROW_ID", **_nullable("long")},
        {"name": "_TOTAL_BUCKETS", **_nullable("int")},
        {"name": "_EXTRA_FILES", **_nullable(_STRING_ARRAY)},
    ],
})

_CODECS = {"zstd": "zstandard", "zstandard": "zstandard", "snappy": "snappy", "deflate": "deflate",
           "null": "null", "none": "null"}


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: int | None = None  # local wall-clock epoch ms, as Paimon stores it
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key,
            "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(),
            "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time,
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index,
            "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": None if self.value_stats_cols is None else list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": None if self.write_cols is None else list(self.write_cols),
            "_WRITE_COLS_SEQUENCES": None if self.write_cols_sequences is None else list(self.write_cols_sequences),
        }

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> "DataFileMeta":
        created = d.get("_CREATION_TIME")
        if isinstance(created, dt.datetime):
            created = int(created.replace(tzinfo=created.tzinfo or dt.timezone.utc).timestamp() * 1000)

        def opt_tuple(v: Any) -> tuple | None:
            return None if v is None else tuple(v)

        return cls(
            file_name=d["_FILE_NAME"],
            file_size=d["_FILE_SIZE"],
            row_count=d["_ROW_COUNT"],
            min_key=d["_MIN_KEY"],
            max_key=d["_MAX_KEY"],
            key_stats=SimpleStats.from_avro(d["_KEY_STATS"]),
            value_stats=SimpleStats.from_avro(d["_VALUE_STATS"]),
            min_sequence_number=d["_MIN_SEQUENCE_NUMBER"],
            max_sequence_number=d["_MAX_SEQUENCE_NUMBER"],
            schema_id=d["_SCHEMA_ID"],
            level=d["_LEVEL"],
            extra_files=tuple(d.get("_EXTRA_FILES") or ()),
            creation_time=created,
            delete_row_count=d.get("_DELETE_ROW_COUNT"),
            embedded_index=d.get("_EMBEDDED_FILE_INDEX"),
            file_source=d.get("_FILE_SOURCE"),
            value_stats_cols=opt_tuple(d.get("_VALUE_STATS_COLS")),
            external_path=d.get("_EXTERNAL_PATH"),
            first_row_id=d.get("_FIRST_ROW_ID"),
            write_cols=opt_tuple(d.get("_WRITE_COLS")),
            write_cols_sequences=opt_tuple(d.get("_WRITE_COLS_SEQUENCES")),
        )


def sorted_runs(files: Sequence[DataFileMeta]) -> int:
    """Sorted runs of a primary-key bucket: each level-0 file, and each level above 0 (its
    files have disjoint key ranges). A bucket of one run holds every key once."""
    return sum(1 for f in files if f.level == 0) + len({f.level for f in files if f.level > 0})


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple:
        """What makes a file unique in the live set (spec §4.3)."""
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files, f.embedded_index, f.external_path)

    def to_avro(self) -> dict[str, Any]:
        return {"_VERSION": 2, "_KIND": self.kind, "_PARTITION": self.partition, "_BUCKET": self.bucket,
                "_TOTAL_BUCKETS": self.total_buckets, "_FILE": self.file.to_avro()}

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> "ManifestEntry":
        return cls(d["_KIND"], d["_PARTITION"], d["_BUCKET"], d["_TOTAL_BUCKETS"], DataFileMeta.from_avro(d["_FILE"]))


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    total_buckets: int | None = None

    def to_avro(self) -> dict[str, Any]:
        return {"_VERSION": 2, "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size,
                "_NUM_ADDED_FILES": self.num_added_files, "_NUM_DELETED_FILES": self.num_deleted_files,
                "_PARTITION_STATS": self.partition_stats.to_avro(), "_SCHEMA_ID": self.schema_id,
                "_MIN_BUCKET": self.min_bucket, "_MAX_BUCKET": self.max_bucket, "_MIN_LEVEL": self.min_level,
                "_MAX_LEVEL": self.max_level, "_MIN_ROW_ID": None, "_MAX_ROW_ID": None,
                "_TOTAL_BUCKETS": self.total_buckets, "_EXTRA_FILES": None}

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> "ManifestFileMeta":
        return cls(d["_FILE_NAME"], d["_FILE_SIZE"], d["_NUM_ADDED_FILES"], d["_NUM_DELETED_FILES"],
                   SimpleStats.from_avro(d["_PARTITION_STATS"]), d["_SCHEMA_ID"], d.get("_MIN_BUCKET"),
                   d.get("_MAX_BUCKET"), d.get("_MIN_LEVEL"), d.get("_MAX_LEVEL"), d.get("_TOTAL_BUCKETS"))


@dataclass(slots=True)
class ManifestIO:
    """Reads and writes the manifest and manifest-list files of one table."""

    file_io: FileIO
    table_path: str
    compression: str = "zstd"
    _prefix: str = field(default_factory=lambda: uuid.uuid4().hex)
    _counter: int = 0

    @property
    def dir(self) -> str:
        return join(self.table_path, "manifest")

    def _next_name(self, kind: str) -> str:
        # Java style: one uuid per writer and a counter; names only need to be unique.
        name = f"{kind}-{self._prefix}-{self._counter}"
        self._counter += 1
        return name

    @property
    def avro_codec(self) -> str:
        """fastavro's name for the table's manifest compression."""
        return _CODECS.get(self.compression.lower(), "zstandard")

    def _encode(self, schema: Any, objects: Sequence[Any]) -> bytes:
        buf = io.BytesIO()
        fastavro.writer(buf, schema, (o.to_avro() for o in objects), codec=self.avro_codec)
        return buf.getvalue()

    def _write(self, schema: Any, objects: Sequence[Any], name: str, decode: Any,
               data: bytes | None = None) -> int:
        """Write ``objects`` (ManifestEntry or ManifestFileMeta) as the Avro file ``name``
        (``data``: their encoding, when the caller has it); ``decode`` is how ``_read`` decodes
        it, so that the objects are kept as what a read of the file returns (they are frozen
        and compare equal to a fresh decode)."""
        if data is None:
            data = self._encode(schema, objects)
        self.file_io.write_decoded(join(self.dir, name), data, decode, tuple(objects))
        return len(data)

    def _read(self, name: str, decode: Any, what: str) -> list[Any]:
        """The records of the Avro file ``name``, each made by ``decode``'s ``from_avro``;
        decoded once per process on a local disk (the files never change once written)."""
        path = join(self.dir, name)
        try:
            return list(self.file_io.read_decoded(path, decode))
        except _Undecodable as e:
            raise CorruptMetadataError(f"cannot decode Avro file {path}: {e.__cause__}") from e.__cause__
        except _LacksField as e:
            raise CorruptMetadataError(f"{what} {path} lacks a field: {e.__cause__}") from e.__cause__

    # ---- manifests -----------------------------------------------------------------
    def write_manifest(self, entries: Sequence[ManifestEntry], schema_id: int,
                       partition_types: Sequence[Any], data: bytes | None = None) -> ManifestFileMeta:
        name = self._next_name("manifest")
        size = self._write(MANIFEST_ENTRY_SCHEMA, entries, name, _manifest_entries, data)
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=sum(1 for e in entries if e.kind == ADD),
            num_deleted_files=sum(1 for e in entries if e.kind == DELETE),
            partition_stats=partition_stats([e.partition for e in entries], partition_types),
            schema_id=schema_id,
            min_bucket=min((e.bucket for e in entries), default=None),
            max_bucket=max((e.bucket for e in entries), default=None),
            min_level=min((e.file.level for e in entries), default=None),
            max_level=max((e.file.level for e in entries), default=None),
            total_buckets=common_total_buckets(entries),
        )

    def write_manifests(self, entries: Sequence[ManifestEntry], schema_id: int, partition_types: Sequence[Any],
                        target_size: int, written: list[str]) -> list[ManifestFileMeta]:
        """``entries`` as manifests of about ``target_size`` bytes each (Paimon's rolling
        manifest writer: ``manifest.target-file-size``), in order; each name is appended to
        ``written`` as soon as the file exists, so a caller that fails can delete them."""
        if not entries:
            return []
        data = self.encode_entries(entries)
        parts = rolled_parts(len(data), len(entries), target_size)
        out = []
        for i in range(parts):
            chunk = entries[i * len(entries) // parts:(i + 1) * len(entries) // parts]
            meta = self.write_manifest(chunk, schema_id, partition_types, data if parts == 1 else None)
            written.append(meta.file_name)
            out.append(meta)
        return out

    def encode_entries(self, entries: Sequence[ManifestEntry]) -> bytes:
        """The bytes of a manifest holding ``entries`` (written nowhere)."""
        return self._encode(MANIFEST_ENTRY_SCHEMA, entries)

    def read_manifests(self, names: Sequence[str], keep_partition: Callable[[bytes], bool] | None = None,
                       partition_holds: Sequence[Collection[bytes]] = ()) -> list[ManifestEntry]:
        """The entries of these manifests, in order (``read_manifest`` says what the filters
        do). On an object store, where each read waits a round trip, up to
        OBJECT_STORE_READERS are read at once."""
        def read(name: str) -> list[ManifestEntry]:
            return self.read_manifest(name, keep_partition, partition_holds)

        if self.file_io.local or len(names) < 2:
            return [e for name in names for e in read(name)]
        with ThreadPoolExecutor(max_workers=min(OBJECT_STORE_READERS, len(names))) as pool:
            parts = list(pool.map(read, names))
        return [e for part in parts for e in part]

    def read_manifest(self, name: str, keep_partition: Callable[[bytes], bool] | None = None,
                      partition_holds: Sequence[Collection[bytes]] = ()) -> list[ManifestEntry]:
        """The manifest's entries; with ``keep_partition``, only those of the partitions it
        keeps (given the ``_PARTITION`` bytes), the others dropped before they are made into
        entries: a filter on one partition of thousands pays Avro's decode only.

        ``partition_holds`` makes that cheaper still: each of its sets holds byte runs of
        which every kept partition contains one (``binary_row.value_bytes`` of the values a
        filter pins a partition column to). An Avro block whose bytes lack every run of some
        set holds no kept partition and is skipped undecoded."""
        if keep_partition is None:
            return self._read(name, _manifest_entries, "manifest")
        path = join(self.dir, name)
        try:
            return [ManifestEntry.from_avro(r) for r in _records_where(
                self.file_io.read_bytes(path), "_PARTITION", keep_partition, partition_holds)]
        except (KeyError, TypeError) as e:
            raise CorruptMetadataError(f"manifest {path} lacks a field: {e}") from e
        except _Undecodable as e:
            raise CorruptMetadataError(f"cannot decode Avro file {path}: {e.__cause__}") from e.__cause__
        except _LacksField as e:
            raise CorruptMetadataError(f"manifest {path} lacks a field: {e.__cause__}") from e.__cause__

    # ---- manifest lists ------------------------------------------------------------
    def write_manifest_list(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        name = self._next_name("manifest-list")
        size = self._write(MANIFEST_FILE_META_SCHEMA, metas, name, _manifest_file_metas)
        return name, size

    def read_manifest_list(self, name: str) -> list[ManifestFileMeta]:
        return self._read(name, _manifest_file_metas, "manifest list")


def rolled_parts(size: int, entries: int, target_size: int) -> int:
    """How many manifests of about ``target_size`` bytes ``entries`` entries of ``size``
    encoded bytes make (at least one, at most one per entry)."""
    return max(1, min(entries, -(-size // max(target_size, 1))))


class _Undecodable(Exception):
    """Not an Avro file fastavro can read (its error is the cause)."""


class _LacksField(Exception):
    """An Avro record without a field lakectl needs (the KeyError or TypeError is the cause)."""


def _avro_objects(data: bytes, from_avro: Any, keep: Callable[[dict], bool] | None = None) -> tuple[Any, ...]:
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as e:  # fastavro raises many unrelated types on garbage input
        raise _Undecodable() from e
    try:
        return tuple(from_avro(r) for r in records if keep is None or keep(r))
    except (KeyError, TypeError) as e:
        raise _LacksField() from e


def _records_where(data: bytes, field: str, keep: Callable[[Any], bool],
                   holds: Sequence[Collection[bytes]] = ()) -> list[dict]:
    """The records of an Avro file whose top-level ``field`` passes ``keep``. A block whose
    (decompressed) bytes lack every run of one of the ``holds`` sets holds no such record and
    is skipped: a byte search costs far less than decoding, and a block that has the runs
    most likely holds a kept record, so it is decoded in full at once. Without ``holds``,
    every block is first read with a reader schema of that field alone, which fastavro skips
    through without building the rest (about a third less work), and only a block holding a
    kept record is read again in full."""
    try:
        writer = fastavro.reader(io.BytesIO(data)).writer_schema
        only_field = {**writer, "fields": [f for f in writer["fields"] if f["name"] == field]}
        full = fastavro.parse_schema(writer)
        out = []
        for block in fastavro.block_reader(io.BytesIO(data), reader_schema=only_field):
            block_bytes = block.bytes_.getvalue()
            if holds:
                if not all(any(run in block_bytes for run in runs) for runs in holds):
                    continue
                hits = None
            else:
                hits = [i for i, r in enumerate(block) if keep(r[field])]
                if not hits:
                    continue
            raw = io.BytesIO(block_bytes)
            records = [fastavro.schemaless_reader(raw, full, None) for _ in range(block.num_records)]
            out += [r for r in records if keep(r[field])] if hits is None else [records[i] for i in hits]
        return out
    except (KeyError, TypeError):
        raise
    except Exception as e:  # fastavro raises many unrelated types on garbage input
        raise _Undecodable() from e


# Module-level functions, so that the per-process cache of FileIO.read_decoded knows them apart.
def _manifest_entries(data: bytes) -> tuple["ManifestEntry", ...]:
    return _avro_objects(data, ManifestEntry.from_avro)


def _manifest_file_metas(data: bytes) -> tuple["ManifestFileMeta", ...]:
    return _avro_objects(data, ManifestFileMeta.from_avro)


def common_total_buckets(entries: Sequence[ManifestEntry]) -> int | None:
    """A manifest's ``_TOTAL_BUCKETS``: the one positive bucket count all its entries share,
    else None. Readers prune manifests by it (pypaimon), so a rescaled table's manifests that
    mix counts must not claim one."""
    counts = {e.total_buckets for e in entries}
    return counts.pop() if len(counts) == 1 and min(counts) > 0 else None


def partition_stats(partitions: Sequence[bytes], partition_types: Sequence[Any]) -> SimpleStats:
    """Per partition field min/max/null count over the partitions of a manifest's entries."""
    if not partition_types:
        return SimpleStats(binary_row.EMPTY_ROW, binary_row.EMPTY_ROW, ())
    if not partitions:
        return EMPTY_STATS
    decoded = {p: binary_row.decode(p, partition_types) for p in set(partitions)}
    rows = list(decoded.values())
    mins, maxs, nulls = [], [], []
    for i, t in enumerate(partition_types):
        # No bounds for binaries, as Java 1.0 writes none (its filters compare bytes signed);
        # floats in Java's order (-0.0 < 0.0, NaN last), by which Paimon prunes manifests.
        values = [r[i] for r in rows if r[i] is not None and not getattr(t, "is_binary", False)]
        key = java_float_key if getattr(t, "name", None) in ("FLOAT", "DOUBLE") else None
        mins.append(min(values, key=key) if values else None)
        maxs.append(max(values, key=key) if values else None)
        nulls.append(sum(1 for p in partitions if decoded[p][i] is None))
    return SimpleStats(binary_row.encode(mins, partition_types), binary_row.encode(maxs, partition_types),
                       tuple(nulls))


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Apply ADD/DELETE in order and return the live ADD entries (spec §4.3)."""
    live: dict[tuple, ManifestEntry] = {}
    for e in entries:
        if e.kind == ADD:
            live[e.identifier] = e
        else:
            live.pop(e.identifier, None)  # readers ignore an unmatched DELETE
    return list(live.values())


def read_entries(mio: ManifestIO, manifest_lists: Sequence[str | None]) -> list[ManifestEntry]:
    """Every entry of the manifests in these lists, in list order."""
    return mio.read_manifests([meta.file_name for list_name in manifest_lists if list_name
                               for meta in mio.read_manifest_list(list_name)])


def live_entries(mio: ManifestIO, snapshot: Any) -> list[ManifestEntry]:
    """The live data files (ADD entries) of a snapshot: its base and delta lists merged."""
    return merge_entries(read_entries(mio, [snapshot.base_manifest_list, snapshot.delta_manifest_list]))
