"""lookup: point reads by primary key that open only the files whose key range can hold a key.

A key gives every primary-key column outside the partition (the columns of a data file's
``_KEY_`` fields); partition columns are optional, and a key without them is looked up in
every partition. A live file is read for a key when it lies in a partition the key allows,
in the bucket the key hashes to (with the bucket key, bucket count and types the file was
written with), and its ``[min_key, max_key]`` holds the key. Buckets that cannot be
computed (dynamic or postponed buckets, a bucket key the lookup leaves out) are all
searched, still pruned by key range.

The chosen files are read with the scan's read kernel, one split per (partition, bucket), so
merge engines, deletes and schema evolution behave as in a scan. Merging a subset of a
bucket's files is exact for every key whose records all lie in that subset, and every file
holding a record of a key has a key range that holds the key.
"""

from __future__ import annotations

import logging
import struct
from datetime import datetime
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core import binary_row
from core.arrow_values import empty_table, int_array, values_array
from core.bucket import bucket_from_hash, hash_bytes
from core.deletion_vectors import snapshot_deletion_files, split_deletion_files
from core.engines.local import LocalEngine
from core.errors import CorruptMetadataError, UsageError
from core.fileio import join
from core.kernels.read import ReadSplit
from core.manifest import ManifestEntry, live_entries
from core.ops.scan import check_select, choose_snapshot, output_schema
from core.option_rules import READ, check_options
from core.partition import render_value
from core.predicate import And, InList, Predicate, epoch_nanos, text_value
from core.replan import lost_race, replan_on_lost_race
from core.schema import TableSchema
from core.snapshot import Snapshot
from core.table_handle import TableHandle
from core.types import DataField, to_arrow

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LookupResult:
    """The rows found (in the order of the keys asked) and what it took to find them.

    ``keys`` counts the distinct keys asked, ``found`` those with a row; a key without its
    partition columns may find one row per partition. ``files`` names the data files read.
    """

    rows: pa.Table
    keys: int
    found: int
    files_read: int
    bytes_read: int
    files_total: int
    bytes_total: int
    files: tuple[str, ...] = ()
    missing: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class LookupKey:
    """One key: read-schema column name -> typed value, for the bucket-key columns and any
    partition columns given (a partition column given as null means the default partition)."""

    values: dict[str, Any] = field(hash=False)

    def identity(self) -> tuple:
        return tuple(sorted((name, repr(v)) for name, v in self.values.items()))


# ---- keys ----------------------------------------------------------------------------------
def _pairs(text: str) -> list[tuple[str, str]]:
    """``id=42,dt=2024-01-01`` -> [("id", "42"), ("dt", "2024-01-01")]. A piece without ``=``
    continues the previous value, so ``name=a,b`` gives the value ``a,b``."""
    pairs: list[tuple[str, str]] = []
    for piece in text.split(","):
        if "=" in piece:
            name, value = piece.split("=", 1)
            pairs.append((name.strip(), value))
        elif pairs:
            pairs[-1] = (pairs[-1][0], f"{pairs[-1][1]},{piece}")
        else:
            raise UsageError(f"--key {text!r} is not COLUMN=VALUE[,COLUMN=VALUE...]")
    return pairs


def _typed(value: Any, f: DataField, default_name: str | None) -> Any:
    """A key value of column ``f``'s type from text (``--where`` literal rules) or Python."""
    if value is None or (default_name is not None and value == default_name):
        if default_name is None:
            raise UsageError(f"column {f.name!r} is part of the primary key and cannot be null")
        return None
    if isinstance(value, str):
        return text_value(value, f)
    try:
        scalar = pa.scalar(value, to_arrow(f.type))
        if _is_nanos(scalar.type):
            return scalar.cast(pa.int64()).as_py()  # epoch nanos, as text_value gives them
        return scalar.as_py()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
            OverflowError):
        raise UsageError(f"{value!r} is not a value of column {f.name!r} ({f.type.root_text()})") from None


def parse_key(spec: str | Mapping[str, Any], schema: TableSchema) -> LookupKey:
    """One key from ``col=value[,col=value...]`` text or a {column: value} mapping.

    Raises:
        UsageError: an empty key, an unknown or non-key column, a column given twice, a
            missing primary-key column, or a value that is not of its column's type.
    """
    if isinstance(spec, str):
        if not spec.strip():
            raise UsageError("--key is empty; give COLUMN=VALUE[,COLUMN=VALUE...]")
        pairs = _pairs(spec)
    else:
        pairs = list(spec.items())
    required = schema.trimmed_primary_keys
    allowed = required + [k for k in schema.partition_keys if k not in required]
    default_name = schema.core_options.partition_default_name
    values: dict[str, Any] = {}
    for name, value in pairs:
        if name not in schema.field_names:
            raise UsageError(f"--key column {name!r} is not in table; key columns are: {', '.join(allowed)}")
        if name not in allowed:
            raise UsageError(f"--key column {name!r} is not a primary-key or partition column; "
                             f"key columns are: {', '.join(allowed)}")
        if name in values:
            raise UsageError(f"--key gives column {name!r} twice")
        partition = name in schema.partition_keys
        try:
            values[name] = _typed(value, schema.field(name), default_name if partition else None)
        except UsageError as e:
            raise UsageError(f"--key {name}={value}: {e}") from None
    for name in required:
        if name not in values:
            shown = spec if isinstance(spec, str) else ",".join(f"{k}={v}" for k, v in pairs)
            raise UsageError(f"--key {shown!r} lacks primary-key column {name!r}; each key gives "
                             f"{', '.join(required)}")
    return LookupKey(values)


# ---- planning ------------------------------------------------------------------------------
@dataclass(slots=True)
class _Split:
    partition: bytes
    bucket: int
    values: tuple
    entries: list[ManifestEntry] = field(default_factory=list)
    keys: set[int] = field(default_factory=set)


class _Planner:
    """Which live files may hold which keys; caches per partition and per file schema."""

    def __init__(self, table: TableHandle, read_schema: TableSchema, keys: Sequence[LookupKey]) -> None:
        self.table = table
        self.read_schema = read_schema
        self.keys = keys
        self.schemas: dict[int, TableSchema] = {read_schema.id: read_schema}
        self._partition_keys: dict[bytes, tuple[tuple, frozenset[int]]] = {}
        self._buckets: dict[tuple[int, int], tuple[dict[int, list[int]], list[int]]] = {}
        self._range_names: dict[int, list[str] | None] = {}
        self._sort_keys: dict[tuple[int, int], Any] = {}  # (schema id, key index) -> the key's sort key
        self._names = {f.id: f.name for f in read_schema.fields}

    def schema(self, schema_id: int) -> TableSchema:
        if schema_id not in self.schemas:
            self.schemas[schema_id] = self.table.schemas.schema(schema_id)
        return self.schemas[schema_id]

    def partition(self, partition: bytes) -> tuple[tuple, frozenset[int]]:
        """The partition's values and the keys that allow it."""
        if partition not in self._partition_keys:
            values = self.read_schema.partition_values(partition)
            fields = self.read_schema.partition_fields
            allowed = frozenset(i for i, k in enumerate(self.keys) if _partition_allows(k, fields, values))
            self._partition_keys[partition] = (values, allowed)
        return self._partition_keys[partition]

    def buckets(self, schema_id: int, total_buckets: int) -> tuple[dict[int, list[int]], list[int]]:
        """Keys by the bucket they hash to in files of this schema and bucket count, and the
        keys whose bucket cannot be computed (to be searched in every bucket)."""
        cached = self._buckets.get((schema_id, total_buckets))
        if cached is not None:
            return cached
        file_schema = self.schema(schema_id)
        names = self._names
        function = (file_schema.options.get("bucket-function.type") or "default").strip().lower()
        fields = file_schema.fields_named(file_schema.bucket_keys) if file_schema.bucket_keys else []
        by_bucket: dict[int, list[int]] = {}
        anywhere: list[int] = []
        for i, key in enumerate(self.keys):
            bucket = None
            if total_buckets >= 1 and function == "default" and fields:
                bucket = _bucket(key, fields, names, total_buckets)
            if bucket is None:
                anywhere.append(i)
            else:
                by_bucket.setdefault(bucket, []).append(i)
        self._buckets[(schema_id, total_buckets)] = (by_bucket, anywhere)
        return by_bucket, anywhere

    def range_names(self, schema_id: int) -> list[str] | None:
        """Read-schema names of a file schema's key fields (matched by field id), or None."""
        if schema_id not in self._range_names:
            found = [self._names.get(f.id) for f in self.schema(schema_id).key_fields]
            self._range_names[schema_id] = None if None in found else [n for n in found if n is not None]
        return self._range_names[schema_id]

    def holds(self, entry: ManifestEntry, candidates: Iterable[int]) -> list[int]:
        """The candidate keys that the file's [min_key, max_key] can hold."""
        candidates = list(candidates)
        file_schema = self.schema(entry.file.schema_id)
        names = self.range_names(entry.file.schema_id)
        if names is None:
            return candidates
        types = [f.type for f in file_schema.key_fields]
        try:
            lo = binary_row.sort_key(_nanos_bounds(binary_row.decode(entry.file.min_key, types), types, 0))
            hi = binary_row.sort_key(_nanos_bounds(binary_row.decode(entry.file.max_key, types), types, 999))
        except (ValueError, struct.error):
            return candidates  # stats we cannot read prune nothing
        out = []
        for i in candidates:
            key = self._sort_key(entry.file.schema_id, i, names)
            try:
                inside = lo <= key <= hi
            except TypeError:
                inside = True
            if inside:
                out.append(i)
        return out

    def _sort_key(self, schema_id: int, i: int, names: list[str]) -> Any:
        """Key ``i``'s sort key in the key fields of files of ``schema_id`` (worked out once
        per key and schema, not once per file)."""
        found = self._sort_keys.get((schema_id, i))
        if found is None:
            found = self._sort_keys[(schema_id, i)] = binary_row.sort_key(tuple(self.keys[i].values[n] for n in names))
        return found


def _nanos_bounds(values: tuple, types: Sequence[Any], slack: int) -> tuple:
    """Key bounds with TIMESTAMP(7..9) values as epoch nanos, the form keys hold them in: a
    decoded datetime lost its last three digits, so an upper bound gets ``slack`` (999) back."""
    return tuple(epoch_nanos(v) + slack if isinstance(v, datetime) and t.name in ("TIMESTAMP", "TIMESTAMP_LTZ")
                 and t.precision > 6 else v for v, t in zip(values, types))


def _partition_allows(key: LookupKey, fields: Sequence[DataField], values: tuple) -> bool:
    """Does the key allow this partition? A null partition value in a key (the default
    partition name) stands for the partition's directory: null or blank values."""
    for f, v in zip(fields, values):
        if f.name not in key.values:
            continue
        want = key.values[f.name]
        if want is None:
            if v is not None and render_value(v, f.type) is not None:
                return False
        elif isinstance(want, int) and isinstance(v, datetime):
            if want != epoch_nanos(v):  # a TIMESTAMP(7..9) key value is epoch nanos
                return False
        elif want != v:
            return False
    return True


def _bucket(key: LookupKey, fields: Sequence[DataField], names: Mapping[int, str], total: int) -> int | None:
    """The bucket of ``key`` under a file schema's bucket-key ``fields``; None when the key
    lacks one of them or its value does not fit the file's type."""
    values = []
    for f in fields:
        name = names.get(f.id)
        if name is None or name not in key.values:
            return None
        values.append(key.values[name])
    try:
        return bucket_from_hash(hash_bytes(binary_row.row_bytes(values, [f.type for f in fields])), total)
    except (TypeError, ValueError, OverflowError):
        return None


def _plan(planner: _Planner, entries: Sequence[ManifestEntry]) -> list[_Split]:
    splits: dict[tuple[bytes, int], _Split] = {}
    for e in entries:
        values, allowed = planner.partition(e.partition)
        if not allowed:
            continue
        by_bucket, anywhere = planner.buckets(e.file.schema_id, e.total_buckets)
        in_bucket = allowed.intersection(by_bucket.get(e.bucket, []) + anywhere)
        if not in_bucket:
            continue
        hits = planner.holds(e, sorted(in_bucket))
        if not hits:
            continue
        split = splits.setdefault((e.partition, e.bucket), _Split(e.partition, e.bucket, values))
        split.entries.append(e)
        split.keys.update(hits)
    return list(splits.values())


# Key types whose Python values Arrow and Parquet statistics compare exactly (timestamps with
# nanoseconds, floats and binary keep their own matching in _matches only).
_PRUNING_TYPES = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "CHAR", "VARCHAR", "DATE", "BOOLEAN"})


def _key_condition(schema: TableSchema, keys: Sequence[LookupKey], wanted: Sequence[int]) -> Predicate | None:
    """A key-only condition the split's wanted keys satisfy: each key column IN the keys'
    values. It holds for every record of those keys and of few others, so the read skips
    the row groups whose key statistics exclude them and drops other keys' records before
    the merge (kernels.key_prune); the exact match is still _matches'."""
    parts = []
    for name in schema.trimmed_primary_keys:
        f = schema.field(name)
        if f.type.name in _PRUNING_TYPES:
            parts.append(InList(name, f.type, tuple({keys[i].values[name] for i in wanted})))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


# ---- matching ------------------------------------------------------------------------------
def _matches(part: pa.Table, keys: Sequence[LookupKey], wanted: Sequence[int],
             columns: Sequence[str]) -> list[tuple[int, int]]:
    """(key index, row index) of the rows of one merged split that hold the wanted keys.
    Arrow narrows the rows to those whose every key column is among the keys' values;
    the few rows left are matched key by key."""
    mask = None
    for c in columns:
        value_set = values_array([keys[i].values[c] for i in wanted], part.schema.field(c).type)
        m = pc.is_in(part.column(c), value_set=value_set)
        mask = m if mask is None else pc.and_(mask, m)
    if mask is None:
        return []
    found = pc.indices_nonzero(mask)
    if not len(found):
        return []
    indices = found.to_pylist()
    narrowed = _comparable(part.take(found).select(list(columns))).to_pylist()  # not take(list): imports pandas
    rows = {tuple(r[c] for c in columns): idx for r, idx in zip(narrowed, indices)}
    out = []
    for i in wanted:
        idx = rows.get(tuple(keys[i].values[c] for c in columns))
        if idx is not None:
            out.append((i, idx))
    return out


def _is_nanos(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) and t.unit == "ns"


def _comparable(rows: pa.Table) -> pa.Table:
    """Key columns in the Python form keys hold: nanosecond timestamps as epoch nanos (ints),
    which a datetime cannot hold and ``to_pylist`` would refuse without pandas."""
    for i, f in enumerate(rows.schema):
        if _is_nanos(f.type):
            rows = rows.set_column(i, f.name, rows.column(i).cast(pa.int64()))
    return rows


def _distinct(keys: Iterable[LookupKey]) -> list[LookupKey]:
    seen: set[tuple] = set()
    out = []
    for k in keys:
        if k.identity() not in seen:
            seen.add(k.identity())
            out.append(k)
    return out


def lookup(table: TableHandle, keys: Sequence[str | Mapping[str, Any]], *, snapshot_id: int | None = None,
           select: Sequence[str] | None = None) -> LookupResult:
    """Look rows up by primary key, reading only the files whose key range can hold a key.

    Args:
        table: a primary-key table.
        keys: each one key, as ``"id=42"`` / ``"id=42,dt=2024-01-01"`` text or a mapping
            ``{"id": 42}``; text is read as ``--where`` reads string literals. Every
            primary-key column outside the partition is required; partition columns are
            optional (omitted: every partition is searched).
        snapshot_id: read this snapshot (in the schema it was committed with); default the
            latest, in the table's current schema, as a scan reads it.
        select: the columns to return (default all).

    Returns:
        A LookupResult: the rows found, ordered by the keys asked (then by partition), and
        the counts of keys found and of files and bytes read out of the snapshot's live data.

    Raises:
        UsageError: the table has no primary key, no key was given, a key is malformed,
            or ``select`` names an unknown column.
        NotFoundError: ``snapshot_id`` does not exist.
        ExpiredWhileReadingError: a concurrent expire removed the snapshot while it was read
            (for the latest snapshot: every time, ``commit.max-retries`` + 1 tries).
    """
    replans = 0 if snapshot_id is not None else table.schema.core_options.commit_max_retries
    return replan_on_lost_race(replans, partial(_lookup_once, table, keys, snapshot_id=snapshot_id, select=select),
                           "lookup")


def _lookup_once(table: TableHandle, keys: Sequence[str | Mapping[str, Any]], *, snapshot_id: int | None,
                 select: Sequence[str] | None) -> LookupResult:
    snapshot = choose_snapshot(table, snapshot_id=snapshot_id)
    snapshot_schema = table.schemas.schema(snapshot.schema_id) if snapshot is not None else None
    read_schema = snapshot_schema if snapshot_id is not None and snapshot_schema is not None else table.schema
    if not read_schema.has_primary_key:
        raise UsageError(f"lookup needs a primary-key table; {table.name} has none (use scan --where)")
    check_options(read_schema, table.name, READ)
    if not keys:
        raise UsageError("give at least one --key COLUMN=VALUE")
    check_select(read_schema, select)
    wanted = _distinct(parse_key(k, read_schema) for k in keys)
    schema = output_schema(read_schema, select)
    if snapshot is None:
        return _result(empty_table(schema), wanted, set(), [], [])
    try:
        return _read_keys(table, snapshot, read_schema, wanted, schema, select)
    except CorruptMetadataError as e:  # a file gone: damage, or the snapshot expired meanwhile
        raise lost_race(table.snapshots, snapshot, e) or e


def _read_keys(table: TableHandle, snapshot: Snapshot, read_schema: TableSchema, wanted: list[LookupKey],
               schema: pa.Schema, select: Sequence[str] | None) -> LookupResult:
    entries = live_entries(table.manifests(), snapshot)
    if read_schema.hides_level0:
        entries = [e for e in entries if e.file.level > 0]  # as a scan reads it
    planner = _Planner(table, read_schema, wanted)
    planned = _plan(planner, entries)
    vectors = snapshot_deletion_files(table.file_io, table.path, snapshot) \
        if read_schema.core_options.deletion_vectors_enabled else {}  # as a scan reads it
    splits = []
    for s in planned:
        files = sorted(s.entries, key=lambda e: (e.file.min_sequence_number, e.file.file_name))
        directory = join(table.path, read_schema.partition_dir(s.values), f"bucket-{s.bucket}")
        splits.append(ReadSplit(s.partition, s.bucket, directory, tuple(e.file for e in files),
                                predicate=_key_condition(read_schema, wanted, sorted(s.keys)),
                                deletion_files=split_deletion_files(vectors, s.partition, s.bucket, files)))
    columns = read_schema.trimmed_primary_keys
    found: set[int] = set()
    pieces, order = [], []
    parts = LocalEngine().read(splits, read_schema, planner.schemas, table.file_io)
    for n, (s, part) in enumerate(zip(planned, parts)):
        hits = _matches(part, wanted, sorted(s.keys), columns)
        if hits:
            found.update(i for i, _ in hits)
            pieces.append(part.take(int_array(np.array([row for _, row in hits], np.int64))))
            order += [(i, n) for i, _ in hits]
    if pieces:
        rows = pa.concat_tables(pieces)
        # int_array: pyarrow's conversion of a Python list imports pandas (core/arrow_values.py)
        rows = rows.take(int_array(np.array(sorted(range(len(order)), key=order.__getitem__), np.int64)))
        rows = (rows.select(list(select)) if select else rows).cast(schema)
    else:
        rows = empty_table(schema)
    return _result(rows, wanted, found, [e for s in planned for e in s.entries], entries)


def _result(rows: pa.Table, keys: Sequence[LookupKey], found: set[int],
            read: Sequence[ManifestEntry], live: Sequence[ManifestEntry]) -> LookupResult:
    result = LookupResult(
        rows=rows, keys=len(keys), found=len(found),
        files_read=len(read), bytes_read=sum(e.file.file_size for e in read),
        files_total=len(live), bytes_total=sum(e.file.file_size for e in live),
        files=tuple(e.file.file_name for e in read),
        missing=tuple(dict(k.values) for i, k in enumerate(keys) if i not in found))
    log.info("lookup: found %d of %d keys; read %d of %d files (%d of %d bytes)", result.found, result.keys,
             result.files_read, result.files_total, result.bytes_read, result.bytes_total)
    return result
