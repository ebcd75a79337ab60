"""Write kernel: one (partition, bucket)'s rows -> sorted, merged Parquet files -> CommitMessage.

Pure function of its inputs (a ``WriteTask``, an Arrow table, a FileIO): the local engine
calls it in-process and the Spark engine on executors, so both produce the same files.

Primary-key tables: each row gets a sequence number in input order, rows are sorted by
key, and rows with one key are folded by the merge engine (``core.kernels.merge``; with
deduplicate the last one wins, and a delete stays as a -D record so older files' versions
of the key are hidden on read). Files hold ``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``
and then the full row. With a changelog producer the kernel also writes the write's
changelog files: its input records (``input``) or the exact changes found by looking the
written keys up in the bucket's files (``lookup``).
Append tables: rows are written as they come, with no system columns.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core import binary_row, external_paths, file_index, formats, stats
from core.arrow_values import empty_table, int_array, numpy_ints
from core.commit import CommitMessage
from core.deletion_vectors import DeletionFile
from core.fileio import FileIO, join
from core.kernels.records import DELETE, KEY_PREFIX, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND
from core.kernels.changelog import old_records, overwrite_changelog, without_existing_keys
from core.kernels.write_task import WriteTask
from core.kernels.merge import MergeEngine
from core.manifest import FILE_SOURCE_APPEND, DataFileMeta
from core.options import parse_size
from core.postpone import POSTPONE_BUCKET
from core.schema import TableSchema
from core.types import DataType, arrow_field, map_timestamps, parse_type

SIZE_SAMPLE_ROWS = 65536  # rows encoded to measure bytes per row when rolling on the Parquet size


@dataclass(frozen=True, slots=True)
class WriteJob:
    """One write's shared context, planned on the driver and shipped to every task."""

    table_path: str
    schema: TableSchema
    row_kind_column: str | None
    start_sequences: dict[tuple[bytes, int], int]  # (partition, bucket) -> next sequence number
    lookup_files: dict[tuple[bytes, int], tuple[DataFileMeta, ...]] = field(default_factory=dict)
    schemas: dict[int, TableSchema] | None = None
    overwrite: bool = False
    # Dynamic bucket mode: the driver's DynamicBucketAssigner (core.dynamic_bucket); the
    # local engine routes rows with it, in input order. None for fixed buckets.
    assigner: Any = field(default=None, compare=False, hash=False)
    deletion_files: dict[tuple[bytes, int], tuple[tuple[str, DeletionFile], ...]] = field(default_factory=dict)

    def task_for(self, partition_values: tuple, bucket: int) -> WriteTask:
        """The WriteTask of one (partition, bucket) group."""
        part = binary_row.encode(list(partition_values), [f.type for f in self.schema.partition_fields])
        return self.task_at(part, bucket, partition_values)

    def task_at(self, part: bytes, bucket: int, partition_values: tuple | None = None) -> WriteTask:
        """The WriteTask of a (partition BinaryRow, bucket)."""
        values = partition_values if partition_values is not None else self.schema.partition_values(part)
        return WriteTask(table_path=self.table_path, schema=self.schema, partition=part,
                         partition_dir=self.schema.partition_dir(values),
                         bucket=bucket, total_buckets=self.schema.num_buckets,
                         start_sequence=self.start_sequences.get((part, bucket), 0),
                         lookup_files=self.lookup_files.get((part, bucket), ()), schemas=self.schemas,
                         overwrite=self.overwrite, deletion_files=self.deletion_files.get((part, bucket), ()))


def local_wall_clock_millis() -> int:
    """Paimon stores _CREATION_TIME as local wall-clock time encoded as epoch millis."""
    now = dt.datetime.now()
    return int(now.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def write_bucket(task: WriteTask, rows: pa.Table, file_io: FileIO) -> CommitMessage:
    """Write one bucket's rows (table columns, plus ``_VALUE_KIND`` for primary-key tables)."""
    schema = task.schema
    n = rows.num_rows
    # from the numpy buffer itself: pa.array() of a numpy array imports numpy.ma (30 ms) to ask
    # whether it is a masked array
    seq = int_array(np.arange(task.start_sequence, task.start_sequence + n, dtype=np.int64))
    if not schema.has_primary_key:
        data = rows.select(schema.field_names).append_column(SEQUENCE_NUMBER, seq)
        files = write_files(data, schema, task.bucket_dir, file_io)
        return CommitMessage(task.partition, task.bucket, task.total_buckets, new_files=tuple(files))
    kinds = rows.column(VALUE_KIND) if VALUE_KIND in rows.column_names else pa.array(np.zeros(n, np.int8))
    if task.bucket == POSTPONE_BUCKET:
        # Postponed records are stored as they came, neither sorted nor folded (core.postpone):
        # the postpone compaction replays them through a real bucket's writer.
        work = rows.select(schema.field_names).append_column(SEQUENCE_NUMBER, seq).append_column(VALUE_KIND, kinds)
        files = write_files(work, schema, task.bucket_dir, file_io)
        return CommitMessage(task.partition, task.bucket, task.total_buckets, new_files=tuple(files))
    engine = MergeEngine.of(schema)
    work = rows.select(schema.field_names).append_column(SEQUENCE_NUMBER, seq).append_column(VALUE_KIND, kinds)
    # Paimon's write buffer: records sorted by key (and sequence.field) and sequence, each key
    # folded by the engine.
    ordered = engine.sorted(engine.drop_ignored(work))
    merged = engine.merge(ordered)
    if engine.kind == "first-row" and task.lookup_files and not task.overwrite:
        # A key already stored keeps its first record: drop it here, so no key ever sits in
        # two files (Java's first-row writer does the same through lookups).
        keys = schema.trimmed_primary_keys
        merged = without_existing_keys(merged, old_records(task, file_io, keys_of=merged), keys)
    files = write_files(merged, schema, task.bucket_dir, file_io)
    producer = schema.core_options.changelog_producer
    if producer == "input":
        log = ordered  # the input records themselves, as Paimon's input producer stores them
    elif producer == "lookup" and task.overwrite:
        log = overwrite_changelog(old_records(task, file_io), merged, engine,
                                  row_deduplicate=schema.core_options.changelog_row_deduplicate)
    else:
        # ``lookup``: the compaction after the commit writes the changelog (the level-0 records
        # against what the bucket held), in a COMPACT snapshot at the level it compacts to,
        # as Java's writers do. Java's streaming readers of lookup tables read the changelog
        # of COMPACT snapshots only: one committed with the APPEND would never reach them.
        log = None
    changelog = write_changelog_files(log, schema, task.bucket_dir, file_io) if log is not None else []
    return CommitMessage(task.partition, task.bucket, task.total_buckets, new_files=tuple(files),
                         changelog_files=tuple(changelog))


def write_changelog_files(log: pa.Table, schema: TableSchema, bucket_dir: str, file_io: FileIO) -> list[DataFileMeta]:
    """Changelog records as ``changelog-*`` files next to the data files (same layout, level 0)."""
    return write_files(log, schema, bucket_dir, file_io, prefix=schema.core_options.changelog_file_prefix)


def write_files(table: pa.Table, schema: TableSchema, bucket_dir: str, file_io: FileIO, *, level: int = 0,
                file_source: int = FILE_SOURCE_APPEND, measure_size: bool = False,
                prefix: str | None = None) -> list[DataFileMeta]:
    """Write rows as data files of about target-file-size in ``bucket_dir`` (or, with
    ``data-file.external-paths``, in its place under an external root); return their metadata.

    Used by the write kernel (new files, level 0) and the compaction kernel (rewritten files).

    Args:
        table: the table columns by name plus ``_SEQUENCE_NUMBER`` (and ``_VALUE_KIND`` for
            primary-key tables), already in file order: for primary-key tables sorted by key
            with each key once, so consecutive slices are files with disjoint key ranges.
        level: the LSM level the files are recorded at.
        file_source: ``_FILE_SOURCE`` (APPEND for new data, COMPACT for rewritten data).
        measure_size: roll on the Parquet size of the rows, measured by encoding a sample
            (files land near the target); False rolls on the Arrow in-memory size, which
            keeps files at or below it without encoding anything twice.
        prefix: the file name prefix (``data-file.prefix`` unless given, e.g. for changelog files).
    """
    if table.num_rows == 0:
        return []
    primary_key = schema.has_primary_key
    target = schema.core_options.file_size_for(primary_key)
    if measure_size:
        rows_per_file = measured_rows_per_file(table, schema)
    else:
        # Parquet with zstd is typically several times smaller than Arrow in memory; rolling on the
        # in-memory size keeps files at or below the target.
        rows_per_file = rows_within(table, target)
    prefix = f"{prefix if prefix is not None else schema.core_options.data_file_prefix}{uuid.uuid4()}"
    external = external_provider(schema, bucket_dir, file_io)
    files = []
    for i, start in enumerate(range(0, table.num_rows, rows_per_file)):
        chunk = table.slice(start, rows_per_file)
        files.append(write_file(chunk, schema, bucket_dir, file_io, f"{prefix}-{i}.{schema.core_options.file_format}",
                                 primary_key=primary_key, level=level, file_source=file_source, external=external))
    return files


def rows_within(table: pa.Table, size: int) -> int:
    """Rows of ``table`` per part of at most ``size`` Arrow bytes (all of them if it fits)."""
    # The size of the buffers the table uses is a bound of its bytes that costs nothing; its
    # exact bytes (``nbytes``) walk every column's offsets, ~20 us a small file.
    if table.get_total_buffer_size() <= size:
        return max(table.num_rows, 1)
    nbytes = table.nbytes
    if nbytes <= size:
        return max(table.num_rows, 1)
    return max(1, size * table.num_rows // nbytes)


def measured_rows_per_file(table: pa.Table, schema: TableSchema) -> int:
    """Rows per file for target-file-size, at the Parquet (file format) size per row of the
    first SIZE_SAMPLE_ROWS rows of ``table``, encoded once to measure."""
    # One contiguous chunk: encoders cut pages and stripes per Arrow chunk, so the size of a
    # sample gathered from many chunks would differ from that of the same rows in one.
    sample = table.slice(0, SIZE_SAMPLE_ROWS).combine_chunks()
    bytes_per_row = len(_encode(file_table(sample, schema, schema.has_primary_key), schema)) / sample.num_rows
    return max(1, int(schema.core_options.file_size_for(schema.has_primary_key) / bytes_per_row))


def external_provider(schema: TableSchema, bucket_dir: str,
                       file_io: FileIO) -> external_paths.ExternalPathProvider | None:
    """Where this writer's files go outside the table directory (``data-file.external-paths``),
    or None when they stay in ``bucket_dir``. One per writer, as pypaimon has one per bucket writer."""
    return external_paths.provider(
        schema.options, external_paths.relative_bucket_dir(bucket_dir, len(schema.partition_keys)),
        store_scheme="file" if file_io.local else file_io.scheme)


# Per-schema values each data file needs (its Arrow schema, its writer options), kept by the
# schema object's identity: the latest schema is parsed once per process (schema.parsed_schema),
# so a write's files share one object, and building these anew cost ~0.1 ms a file.
_PER_SCHEMA: dict[tuple[int, Any], tuple[TableSchema, Any]] = {}
_PER_SCHEMA_LIMIT = 256


def _per_schema(schema: TableSchema, key: Any, compute: Any) -> Any:
    """``compute()``, kept for ``schema`` (this very object) and ``key``."""
    kept = _PER_SCHEMA.get((id(schema), key))
    if kept is not None and kept[0] is schema:  # the schema held in the entry keeps its id unique
        return kept[1]
    value = compute()
    if len(_PER_SCHEMA) >= _PER_SCHEMA_LIMIT:
        _PER_SCHEMA.clear()
    _PER_SCHEMA[(id(schema), key)] = (schema, value)
    return value


def physical_schema(schema: TableSchema) -> pa.Schema:
    """Columns of a primary-key data file: _KEY_*, _SEQUENCE_NUMBER, _VALUE_KIND, full row."""
    return _per_schema(schema, "physical", lambda: _physical_schema(schema))


def _physical_schema(schema: TableSchema) -> pa.Schema:
    key_fields = [arrow_field(f) for f in schema.key_fields]
    return pa.schema(
        [pa.field(KEY_PREFIX + f.name, f.type, False) for f in key_fields]
        + [pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.field(VALUE_KIND, pa.int8(), False)]
        + [arrow_field(f) for f in schema.fields])


def key_value(column: pa.ChunkedArray, index: int) -> object:
    """One key value as ``binary_row.encode`` takes it; timestamps as exact epoch nanos,
    since ``as_py()`` refuses (or, with pandas, drops) sub-microsecond digits."""
    scalar = column[index]
    if pa.types.is_timestamp(column.type) and scalar.is_valid:
        factor = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[column.type.unit]
        return scalar.cast(pa.int64()).as_py() * factor
    return scalar.as_py()


def file_table(chunk: pa.Table, schema: TableSchema, primary_key: bool) -> pa.Table:
    """The columns a data file stores, in file order and types."""
    if primary_key:
        key_names = schema.trimmed_primary_keys
        columns = [chunk.column(k) for k in key_names] + [chunk.column(SEQUENCE_NUMBER), chunk.column(VALUE_KIND)] \
            + [chunk.column(f.name) for f in schema.fields]
        return pa.Table.from_arrays(columns, schema=physical_schema(schema))
    return chunk.select(schema.field_names).cast(pa.schema([arrow_field(f) for f in schema.fields]))


def _has_nanos(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return t.unit == "ns"
    return any(_has_nanos(t.field(i).type) for i in range(t.num_fields))


def timestamp_layout(out: pa.Table) -> tuple[pa.Table, bool]:
    """The file's timestamps laid out as Java Paimon 1.0 reads them: TIMESTAMP(0..6) as INT64,
    TIMESTAMP(7..9) as INT96 (its Parquet reader takes nothing else). pyarrow's INT96 switch
    covers every timestamp column of a file, so a file with nanosecond timestamps keeps its
    millisecond and microsecond ones as plain INT64 counts, which readers cast by the table's
    field type. Returns the table to write and whether to write INT96."""
    if not any(_has_nanos(f.type) for f in out.schema):
        return out, False
    # Parquet has no seconds: TIMESTAMP(0) is stored in milliseconds, as pyarrow does by itself.
    millis = pa.schema([f.with_type(map_timestamps(f.type, lambda t: pa.timestamp("ms", t.tz) if t.unit == "s" else t))
                        for f in out.schema])
    counts = pa.schema([f.with_type(map_timestamps(f.type, lambda t: t if t.unit == "ns" else pa.int64()))
                        for f in millis])
    return out.cast(millis).cast(counts), True


def _encode(out: pa.Table, schema: TableSchema) -> bytes | pa.Buffer:
    """A data file of ``out`` (the file's columns) in the table's ``file.format``."""
    return encode_with_footer(out, schema)[0]


def encode_with_footer(out: pa.Table, schema: TableSchema) -> tuple[bytes | pa.Buffer, stats.FooterStats | None]:
    """A data file of ``out`` (the file's columns) in the table's ``file.format``, and for
    Parquet the column statistics of its footer (``stats.footer_stats``; None for ORC and Avro)."""
    opts = schema.core_options
    if opts.file_format == "orc":
        return formats.encode_orc(out, opts.file_compression), None
    if opts.file_format == "avro":
        return formats.encode_avro(out, file_fields(schema), formats.avro_codec(opts.raw), opts.zstd_level), None
    # Only TIMESTAMP(7..9) columns change the layout; most tables have none.
    out, int96 = timestamp_layout(out) if _has_nano_columns(schema) else (out, False)
    # An Arrow output stream, not io.BytesIO: the writer then never calls back into Python
    # for its writes (a quarter of a small file's encoding time went there).
    sink = pa.BufferOutputStream()
    footer: list[Any] = []  # the writer appends the file's FileMetaData when it closes
    pq.write_table(out, sink, row_group_size=row_group_rows(out, opts.parquet_block_size,
                                                            sorted_by_key=schema.has_primary_key),
                   metadata_collector=footer, **parquet_options(schema, int96, out.schema))
    return sink.getvalue(), stats.footer_stats(footer[0])


def _has_nano_columns(schema: TableSchema) -> bool:
    """Whether the table's data files have a TIMESTAMP(7..9) column (key columns and system
    columns repeat or add none)."""
    return _per_schema(schema, "nanos", lambda: any(_has_nanos(arrow_field(f).type) for f in schema.fields))


def parquet_options(schema: TableSchema, int96: bool, file_schema: pa.Schema) -> dict[str, Any]:
    """The ``pyarrow.parquet`` writer options of a data file with columns ``file_schema`` (one
    set, so a file written whole and one written row group by row group come out the same).
    A data file's columns and their types follow from the table's schema and ``int96``, so
    the names tell its file schemas apart (primary-key files, append files). The caller must
    not change the returned dict."""
    return _per_schema(schema, ("parquet", int96, tuple(file_schema.names)),
                       lambda: _parquet_options(schema, int96, file_schema))


def _parquet_options(schema: TableSchema, int96: bool, file_schema: pa.Schema) -> dict[str, Any]:
    opts = schema.core_options
    return {"compression": opts.file_compression, "use_deprecated_int96_timestamps": int96,
            "compression_level": opts.zstd_level if opts.file_compression == "zstd" else None,
            "store_decimal_as_integer": True, "use_dictionary": formats.dictionary_columns(file_schema),
            "data_page_size": opts.parquet_page_size, "write_statistics": _statistics_columns(file_schema)}


def _statistics_columns(file_schema: pa.Schema) -> bool | list[str]:
    """The Parquet columns whose row groups get min/max: all but top-level FLOAT and DOUBLE ones.

    Parquet writers leave NaN out of a float column's min/max, and Java's Parquet reader then
    skips a row group holding NaN for ``f = NaN`` or ``f > 1`` (NaN matches both in Java's
    order); Java's own writer writes no float min/max beside a NaN. A streamed file's NaNs are
    not known before its row groups are written, so float columns get none (the manifest's
    stats, computed from the rows, still bound them)."""
    floats = {f.name for f in file_schema if pa.types.is_floating(f.type)}
    if not floats:
        return True
    probe = pa.BufferOutputStream()
    footer: list[Any] = []
    pq.write_table(empty_table(file_schema), probe, metadata_collector=footer)  # the writer's own leaf paths
    leaves = footer[0].schema
    return [leaves.column(i).path for i in range(len(leaves)) if leaves.column(i).path not in floats]


def file_fields(schema: TableSchema) -> list[tuple[str, DataType]]:
    """(name, Paimon type) of the columns of a data file (``_file_table``), in file order."""
    if not schema.has_primary_key:
        return [(f.name, f.type) for f in schema.fields]
    keys = [(KEY_PREFIX + f.name, f.type.with_nullable(False)) for f in schema.key_fields]
    system = [(SEQUENCE_NUMBER, parse_type("BIGINT NOT NULL")), (VALUE_KIND, parse_type("TINYINT NOT NULL"))]
    return keys + system + [(f.name, f.type) for f in schema.fields]


# A primary-key table's files are sorted by key, so row groups this small have tight key
# statistics: a key range or a lookup reads the few groups that can hold its keys
# (kernels.data_file.matching_row_groups) instead of every column of every row. pyarrow
# decodes a row group whole (it has no page-level row selection), so the group is the unit
# of work. Measured on 1M rows in 16 buckets (bench/results-peers.md): 8,192 rows took a 1%
# key range from 0.25 to 0.13 CPU s; 4,096 decodes a third fewer rows for that range and
# for the rows a lookup returns, for files 1.9% larger (8,192: +0%, 2,048: +5.1%, 1,024:
# +10.4%: each group repeats its dictionaries and compresses a shorter stream).
KEY_SORTED_ROW_GROUP_ROWS = 4096


def row_group_rows(out: pa.Table, block_size: int, *, sorted_by_key: bool = False) -> int:
    """Rows per row group for ``parquet.block.size``. pyarrow sizes row groups in rows, so the
    bytes are turned into rows at the table's Arrow (decoded) size per row; encoded groups
    come out no larger than the option asks. Files sorted by key get smaller groups still
    (``KEY_SORTED_ROW_GROUP_ROWS``)."""
    rows = rows_within(out, block_size)
    return min(rows, KEY_SORTED_ROW_GROUP_ROWS) if sorted_by_key else rows


def write_file(chunk: pa.Table, schema: TableSchema, bucket_dir: str, file_io: FileIO, name: str,
                *, primary_key: bool, level: int, file_source: int,
                external: external_paths.ExternalPathProvider | None = None) -> DataFileMeta:
    seq = numpy_ints(chunk.column(SEQUENCE_NUMBER))  # never null; numpy's min and max are the cheap ones
    opts = schema.core_options
    out = file_table(chunk, schema, primary_key)
    if primary_key:
        key_names = schema.trimmed_primary_keys
        key_types = [f.type for f in schema.key_fields]
        first = [key_value(chunk.column(k), 0) for k in key_names]
        last = [key_value(chunk.column(k), chunk.num_rows - 1) for k in key_names]
        min_key, max_key = binary_row.encode(first, key_types), binary_row.encode(last, key_types)
        delete_rows = retract_count(chunk.column(VALUE_KIND))
    else:
        min_key = max_key = binary_row.EMPTY_ROW
        delete_rows = 0
    data, footer = encode_with_footer(out, schema)
    key_stats, value_stats = file_stats(out, schema, footer)
    value_stats_cols = () if opts.stats_mode == "none" else None
    external_path = external.next_path(name) if external is not None else None
    file_io.write_bytes(external_path or join(bucket_dir, name), data)
    # An index file sits beside its data file, wherever that is (Paimon resolves it so).
    file_dir = external_path.rsplit("/", 1)[0] if external_path else bucket_dir
    embedded, extra = _file_index(out, schema, file_dir, file_io, name, primary_key)
    return DataFileMeta(
        file_name=name,
        file_size=len(data),
        row_count=chunk.num_rows,
        min_key=min_key,
        max_key=max_key,
        key_stats=key_stats,
        value_stats=value_stats,
        min_sequence_number=int(seq.min()),
        max_sequence_number=int(seq.max()),
        schema_id=schema.id,
        level=level,
        extra_files=extra,
        creation_time=local_wall_clock_millis(),
        delete_row_count=delete_rows,
        file_source=file_source,
        value_stats_cols=value_stats_cols,
        embedded_index=embedded,
        external_path=external_path,
    )


def file_stats(out: pa.Table, schema: TableSchema,
               footer: stats.FooterStats | None) -> tuple[stats.SimpleStats, stats.SimpleStats]:
    """The key stats (``full``) and value stats (``metadata.stats-mode``) of a data file's
    columns ``out``, which ``footer`` describes: taken from the footer where it holds them
    exactly (stats._from_footer), else computed from the rows. A key column's stats are its
    value column's where the modes agree on its type (stats.same_in_full)."""
    mode = schema.core_options.stats_mode
    # the table's fields are the file's last columns, in order (file_table)
    columns = out.columns[out.num_columns - len(schema.fields):]
    value_column_stats = stats.column_stats(columns, schema.fields, mode, footer) if mode != "none" else None
    value_stats = stats.from_columns(value_column_stats, [f.type for f in schema.fields]) \
        if value_column_stats is not None else stats.EMPTY_STATS
    if not schema.has_primary_key:
        return stats.EMPTY_STATS, value_stats
    key_column_stats = []
    for f, at in zip(schema.key_fields, key_positions(schema)):
        if value_column_stats is not None and stats.same_in_full(mode, f.type):
            key_column_stats.append(value_column_stats[at])
        else:
            key_column_stats.extend(stats.column_stats([columns[at]], [f], "full", footer))
    return stats.from_columns(key_column_stats, [f.type for f in schema.key_fields]), value_stats


def key_positions(schema: TableSchema) -> list[int]:
    """Where each of ``schema.key_fields`` sits among ``schema.fields``."""
    return _per_schema(schema, "key positions",
                       lambda: [schema.field_names.index(f.name) for f in schema.key_fields])


def retract_count(kinds: pa.ChunkedArray) -> int:
    """How many of the ``_VALUE_KIND`` codes (never null) are -U or -D records."""
    codes = numpy_ints(kinds)
    return int(np.count_nonzero((codes == UPDATE_BEFORE) | (codes == DELETE)))


def _file_index(chunk: pa.Table, schema: TableSchema, bucket_dir: str, file_io: FileIO, name: str,
                primary_key: bool) -> tuple[bytes | None, tuple[str, ...]]:
    """The file index of an append table's data file, as Java Paimon 1.0 writes it for
    ``file-index.bloom-filter.columns`` (it writes none into primary-key tables): embedded in
    the manifest up to ``file-index.in-manifest-threshold`` (500 bytes), else ``<file>.index``."""
    if primary_key or not file_index.bloom_columns(schema.options):
        return None, ()
    blob = file_index.build(chunk, list(schema.fields), schema.options)
    if blob is None:
        return None, ()
    threshold = parse_size(schema.options.get("file-index.in-manifest-threshold", "500 b"),
                           "file-index.in-manifest-threshold")
    if len(blob) <= threshold:
        return blob, ()
    file_io.write_bytes(join(bucket_dir, f"{name}.index"), blob)
    return None, (f"{name}.index",)


def removal_changelog(task: WriteTask, file_io: FileIO) -> CommitMessage:
    """Changelog of an overwrite for a bucket it empties or whose full-compaction state it
    replaces: a -D for every key the bucket's files (``task.lookup_files``) hold alive."""
    schema = task.schema
    engine = MergeEngine.of(schema)
    old = old_records(task, file_io)
    empty = old.slice(0, 0)
    log = overwrite_changelog(old, empty, engine)
    files = write_changelog_files(log, schema, task.bucket_dir, file_io) if log.num_rows else []
    return CommitMessage(task.partition, task.bucket, task.total_buckets, changelog_files=tuple(files))
