"""Dynamic bucket mode: a primary-key table with ``bucket=-1`` (Paimon's default when
``bucket`` is not set) whose primary key holds every partition key.

Java Paimon gives each new key a bucket and remembers it in a HASH index: per
(partition, bucket) a file under ``index/`` holding the ``BinaryRow.hashCode()`` of every
trimmed primary key (primary key minus partition keys) ever written to that bucket, as
big-endian int32s, listed in the snapshot's index manifest. A key whose hash is in some
bucket's file goes to that bucket again, so no key lives in two buckets.

``DynamicBucketAssigner`` does what Java's ``HashBucketAssigner`` (one assigner, as a batch
write or a Flink job with assigner parallelism 1 runs it) and ``HashIndexMaintainer`` do:

- the index of a partition is loaded from the latest snapshot when the write first meets
  the partition (``PartitionIndex.loadIndex``): hash -> bucket, and per bucket the number of
  hashes its file holds;
- a known hash keeps its bucket; a new one goes to the first bucket, in ascending bucket
  order, holding fewer than ``dynamic-bucket.target-row-num`` hashes (Java walks a HashMap
  keyed by bucket, which iterates small dense ids in ascending order), else to a new
  bucket, the smallest id not yet used (at most 32767 buckets, Java's limit);
- every (partition, bucket) that received a new hash gets a new index file holding its
  previous hashes plus the new ones; its ADD entry replaces the old file in the next index
  manifest (``core.index_manifest``). Buckets that only saw known keys keep their file.

Rows are assigned in input order, batch after batch, so the result is what Java's single
assigner gives for the same input. An overwrite starts the partitions it replaces with an
empty index (their old index entries are deleted by the commit, as Java's overwrite does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from core import binary_row
from core.bucket import hash_codes
from core.errors import CorruptMetadataError, UsageError
from core.fileio import FileIO
from core.index_manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry, IndexManifestIO
from core.manifest import ADD
from core.options import parse_int
from core.schema import TableSchema

DEFAULT_TARGET_ROW_NUM = 2_000_000

# Buckets of a dynamic-bucket table come from its hash index, which one process reads and
# extends in input order (as Java's single assigner does); Spark executors cannot share it.
DYNAMIC_NOT_ON_SPARK = ("a dynamic-bucket table (bucket=-1, Paimon's default for a primary-key table) is written "
                        "by the local engine only: its buckets come from the table's hash index, assigned in "
                        "input order in one process")
MAX_BUCKETS = 32767  # Java keeps buckets as shorts and tries ids below Short.MAX_VALUE


def is_dynamic(schema: TableSchema) -> bool:
    """A primary-key table in dynamic bucket mode (``bucket=-1``)."""
    return schema.has_primary_key and schema.num_buckets == -1


def cross_partition(schema: TableSchema) -> bool:
    """A primary key without every partition key: Java's cross-partition update mode, which
    keeps a global key index lakectl does not maintain."""
    return bool(schema.partition_keys) and not set(schema.partition_keys) <= set(schema.primary_keys)


def target_row_num(schema: TableSchema) -> int:
    key = "dynamic-bucket.target-row-num"
    value = parse_int(schema.options.get(key, str(DEFAULT_TARGET_ROW_NUM)), key)
    if value < 1:
        raise UsageError(f"option {key}={value} must be 1 or more")
    return value


def check_writable(schema: TableSchema) -> None:
    """Refuse dynamic-bucket shapes lakectl cannot write, naming why."""
    if not is_dynamic(schema):
        return
    if cross_partition(schema):
        raise UsageError(
            f"table has bucket=-1 and a primary key ({', '.join(schema.primary_keys)}) without every partition key "
            f"({', '.join(schema.partition_keys)}): that is Paimon's cross-partition update mode, which keeps a global "
            "key index lakectl does not maintain; lakectl can read this table but not write it")
    target_row_num(schema)


def read_hash_index(file_io: FileIO, path: str) -> np.ndarray:
    """The int32 hash codes of a HASH index file (big-endian, back to back)."""
    data = file_io.read_bytes(path)
    if len(data) % 4:
        raise CorruptMetadataError(f"hash index file {path} is {len(data)} bytes, not a whole number of ints")
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


def write_hash_index(imio: IndexManifestIO, hashes: np.ndarray) -> IndexFileMeta:
    """Write one HASH index file of ``hashes``; its metadata for the index manifest."""
    name = imio.new_index_file_name()
    data = np.asarray(hashes, dtype=">i4").tobytes()
    imio.file_io.write_bytes(imio.index_path(name), data)
    return IndexFileMeta(HASH_INDEX, name, len(data), len(hashes))


@dataclass(slots=True)
class _PartitionIndex:
    """One partition's hash -> bucket map and bucket fill, as loaded plus this write's keys."""

    keys: np.ndarray  # int32 hashes, sorted
    buckets: np.ndarray  # int32 bucket of each hash in ``keys``
    counts: dict[int, int]  # bucket -> hashes it holds (Java's bucket information)
    stored: dict[int, np.ndarray] = field(default_factory=dict)  # bucket -> hashes of its current file
    new: dict[int, list[np.ndarray]] = field(default_factory=dict)  # bucket -> hashes this write added

    def lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, bucket where found) of each hash."""
        if not len(self.keys):
            return np.zeros(len(hashes), dtype=bool), np.zeros(len(hashes), dtype=np.int32)
        at = np.minimum(np.searchsorted(self.keys, hashes), len(self.keys) - 1)
        return self.keys[at] == hashes, self.buckets[at]

    def allocate(self, n: int, target: int) -> np.ndarray:
        """Buckets for ``n`` new hashes in arrival order: fill the non-full buckets in ascending
        order, then open new buckets at the smallest unused ids."""
        ids, takes = [], []
        left = n
        for bucket in sorted(self.counts):
            if not left:
                break
            room = target - self.counts[bucket]
            if room > 0:
                take = min(room, left)
                ids.append(bucket)
                takes.append(take)
                self.counts[bucket] += take
                left -= take
        bucket = 0
        while left:
            while bucket in self.counts:
                bucket += 1
            if bucket >= MAX_BUCKETS:
                raise UsageError(f"dynamic bucket mode needs more than {MAX_BUCKETS} buckets in one partition; "
                                 f"raise option dynamic-bucket.target-row-num (now {target})")
            take = min(target, left)
            self.counts[bucket] = take
            ids.append(bucket)
            takes.append(take)
            left -= take
        return np.repeat(np.array(ids, dtype=np.int32), takes)

    def add(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Remember new (sorted, distinct, unknown) hashes and their buckets."""
        at = np.searchsorted(self.keys, hashes)
        self.keys = np.insert(self.keys, at, hashes)
        self.buckets = np.insert(self.buckets, at, buckets)
        order = np.argsort(buckets, kind="stable")
        grouped, sorted_buckets = hashes[order], buckets[order]
        starts = np.flatnonzero(np.r_[True, sorted_buckets[1:] != sorted_buckets[:-1]])
        for start, end in zip(starts, np.r_[starts[1:], len(order)]):
            self.new.setdefault(int(sorted_buckets[start]), []).append(grouped[start:end])


class DynamicBucketAssigner:
    """Assigns buckets to the rows of one write and writes the HASH index files it changes.

    Args:
        file_io, table_path: the table.
        schema: the table schema (dynamic bucket mode).
        index_entries: the entries of the latest snapshot's index manifest (none for a new table).
        planned_on: that index manifest's name, which the commit checks is still the latest's.
        overwrite: partitions start empty (an overwrite replaces them).
    """

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 index_entries: list[IndexManifestEntry], *, planned_on: str | None = None,
                 overwrite: bool = False) -> None:
        self.schema = schema
        self.target = target_row_num(schema)
        self.imio = IndexManifestIO(file_io, table_path, schema.core_options.manifest_compression)
        self.overwrite = overwrite
        self.planned_on = planned_on
        self._entries: dict[bytes, list[IndexManifestEntry]] = {}
        for e in index_entries:
            if e.index_file.index_type == HASH_INDEX:
                self._entries.setdefault(e.partition, []).append(e)
        self._partitions: dict[bytes, _PartitionIndex] = {}
        self._key_names = schema.trimmed_primary_keys
        self._key_types = [f.type for f in schema.key_fields]
        self._partition_types = [f.type for f in schema.partition_fields]

    # ---- assignment ------------------------------------------------------------------
    def hashes(self, rows: pa.Table) -> np.ndarray:
        """Java's hash code of each row's trimmed primary key (pure; any thread)."""
        return hash_codes([rows.column(k) for k in self._key_names], self._key_types)

    def assign(self, partition: bytes, hashes: np.ndarray) -> np.ndarray:
        """The bucket of each hash, in order, for rows of one partition (BinaryRow bytes)."""
        index = self._index(partition)
        found, out = index.lookup(hashes)
        out = out.copy()
        missing = ~found
        if missing.any():
            unknown = hashes[missing]
            distinct, first, inverse = np.unique(unknown, return_index=True, return_inverse=True)
            arrival = np.argsort(first, kind="stable")
            chosen = np.empty(len(distinct), dtype=np.int32)
            chosen[arrival] = index.allocate(len(distinct), self.target)
            out[missing] = chosen[inverse.reshape(-1)]
            index.add(distinct, chosen)
        return out

    def bucket_column(self, rows: pa.Table, hashes: np.ndarray | None = None) -> np.ndarray:
        """The bucket of every row of a batch of prepared rows, assigned in row order
        (``hashes``: their key hashes, if already computed)."""
        from core.rows import group_indices  # core.rows routes with this module's buckets

        if hashes is None:
            hashes = self.hashes(rows)
        out = np.empty(rows.num_rows, dtype=np.int32)
        if not self.schema.partition_keys:
            out[:] = self.assign(binary_row.encode([], []), hashes)
            return out
        zeros = np.zeros(rows.num_rows, dtype=np.int32)
        for values, _, indices in group_indices(rows, self.schema, zeros):
            partition = binary_row.encode(list(values), self._partition_types)
            if indices is None:
                out[:] = self.assign(partition, hashes)
            else:
                out[indices] = self.assign(partition, hashes[indices])
        return out

    def _index(self, partition: bytes) -> _PartitionIndex:
        index = self._partitions.get(partition)
        if index is None:
            index = self._partitions[partition] = self._load(partition)
        return index

    def _load(self, partition: bytes) -> _PartitionIndex:
        """``PartitionIndex.loadIndex``: the partition's HASH files of the latest snapshot."""
        if self.overwrite:
            return _PartitionIndex(np.zeros(0, np.int32), np.zeros(0, np.int32), {})
        keys, buckets, counts, stored = [], [], {}, {}
        for e in self._entries.get(partition, []):
            hashes = read_hash_index(self.imio.file_io, self.imio.index_path(e.index_file.file_name))
            stored[e.bucket] = hashes
            counts[e.bucket] = counts.get(e.bucket, 0) + len(hashes)
            keys.append(hashes)
            buckets.append(np.full(len(hashes), e.bucket, dtype=np.int32))
        if not keys:
            return _PartitionIndex(np.zeros(0, np.int32), np.zeros(0, np.int32), counts, stored)
        all_keys, all_buckets = np.concatenate(keys), np.concatenate(buckets)
        order = np.argsort(all_keys, kind="stable")
        all_keys, all_buckets = all_keys[order], all_buckets[order]
        # A hash in two buckets' files (a collision of two keys Java wrote before it knew the
        # first): Java's map keeps the file read last, which the stable sort leaves last.
        last = np.r_[all_keys[1:] != all_keys[:-1], True]
        return _PartitionIndex(all_keys[last], all_buckets[last], counts, stored)

    # ---- index files -------------------------------------------------------------------
    def index_changes(self) -> list[IndexManifestEntry]:
        """Write a new HASH index file for every bucket that got new hashes; their ADD entries."""
        out = []
        for partition, index in self._partitions.items():
            for bucket in sorted(index.new):
                parts = [index.stored.get(bucket, np.zeros(0, np.int32)), *index.new[bucket]]
                meta = write_hash_index(self.imio, np.concatenate(parts))
                out.append(IndexManifestEntry(ADD, partition, bucket, meta))
        return out
