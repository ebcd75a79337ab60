"""scan: pick a snapshot, list its live files, prune, read the splits, filter exactly.

Pruning is conservative. Partitions are pruned by their values; files of append tables by
their value stats; files of primary-key tables only by key stats and only when the filter
reads nothing but key and partition columns: dropping a file of a primary-key table for its
*values* could resurrect an older version of a key that the dropped file overrode.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from core import binary_row, file_index, stats, system_columns
from core.arrow_values import empty_table
from core.engines import EngineSettings, choose_engine
from core.deletion_vectors import snapshot_deletion_files, split_deletion_files
from core.engines.local import LocalEngine
from core.errors import CorruptMetadataError, ExpiredWhileReadingError, UsageError
from core.fileio import join
from core.kernels import data_evolution
from core.kernels.key_prune import filter_rows
from core.kernels.read import ReadSplit
from core.manifest import ManifestEntry, ManifestFileMeta, merge_entries
from core.default_values import prunable
from core.predicate import ColumnRange, Predicate, pinned_values
from core.replan import lost_race, replan_on_lost_race
from core.schema import TableSchema
from core.sinks import output_format, write_output_parts
from core.options import check_limit
from core.option_rules import READ, check_options
from core.snapshot import Snapshot
from core.table_handle import TableHandle
from core.travel import choose_snapshot, parse_timestamp  # noqa: F401 - parse_timestamp: re-exported
from core.types import DataType, arrow_field

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ScanPlan:
    snapshot: Snapshot | None
    read_schema: TableSchema
    schemas: dict[int, TableSchema]
    splits: tuple[ReadSplit, ...]
    files_total: int
    files_pruned: int
    # The condition, when the partition values alone proved it TRUE for every row of every
    # file kept (``_plan_on``, ``_partitions_may_decide``): a row filter by it would keep every row.
    decided: Predicate | None = None

    @property
    def data_bytes(self) -> int:
        return sum(f.file_size for split in self.splits for f in split.files)


def _partition_ranges(values: tuple, schema: TableSchema) -> dict[str, ColumnRange]:
    return {f.name: ColumnRange(v, v, 1 if v is None else 0, 1) for f, v in zip(schema.partition_fields, values)}


# Partition column types whose value in the partition's BinaryRow is, as it decodes, the value
# each row of the partition reads from its file: no padding (CHAR), float ordering (-0.0, NaN),
# precision or time zone (timestamps) between the two.
_SAME_IN_ROWS = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "VARCHAR", "DATE"})


def _partitions_may_decide(predicate: Predicate | None, read_schema: TableSchema) -> bool:
    """Whether the partition values can settle ``predicate`` row by row: it reads partition
    columns alone, each of a type the rows hold as the partition does."""
    if predicate is None or not predicate.columns:
        return False
    by_name = {f.name: f for f in read_schema.partition_fields}
    return all(c in by_name and by_name[c].type.name in _SAME_IN_ROWS for c in predicate.columns)


def _same_partition_types(file_schema: TableSchema, read_schema: TableSchema) -> bool:
    """Does a file written in ``file_schema`` hold the partition columns in the read schema's
    types (so its partition's values, decoded in the read schema, are its rows' values)?"""
    if file_schema is read_schema:
        return True
    types = {f.id: f.type.root_text() for f in file_schema.fields}
    return all(types.get(f.id) == f.type.root_text() for f in read_schema.partition_fields)


def _live_entries(table: TableHandle, snapshot: Snapshot, predicate: Predicate | None,
                  read_schema: TableSchema) -> list[ManifestEntry]:
    """The snapshot's live files, without reading the manifests whose partition statistics
    rule the predicate out (every entry of such a manifest, ADD or DELETE, lies in partitions
    the predicate excludes, so skipping it drops only files the scan would prune)."""
    mio = table.manifests()
    try:
        metas = [m for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list) if name
                 for m in mio.read_manifest_list(name)]
        keep, holds = None, ()
        if predicate is not None and predicate.columns & set(read_schema.partition_keys):
            metas = [m for m in metas if _manifest_may_match(m, predicate, read_schema)]
            keep, holds = _partition_filter(predicate, read_schema), _partition_holds(predicate, read_schema)
        return merge_entries(mio.read_manifests([m.file_name for m in metas], keep, holds))
    except FileNotFoundError as e:  # as a missing file: plan() tells a lost race from damage
        raise CorruptMetadataError(f"missing file {e.filename}") from e


def _partition_filter(predicate: Predicate, read_schema: TableSchema) -> Callable[[bytes], bool]:
    """Whether the predicate may match a partition (its BinaryRow bytes), decided once per
    partition: an entry of a ruled-out partition, ADD or DELETE, is never made (its file would
    be pruned, and its DELETE only removes a file of that partition)."""
    decided: dict[bytes, bool] = {}

    def keep(partition: bytes) -> bool:
        if partition not in decided:
            values = read_schema.partition_values(partition)
            decided[partition] = predicate.may_match(_partition_ranges(values, read_schema))
        return decided[partition]

    return keep


def _partition_holds(predicate: Predicate, read_schema: TableSchema) -> tuple[frozenset[bytes], ...]:
    """Per partition column the predicate pins to a list of values, the byte runs of which
    every partition it keeps holds one (see ``ManifestIO.read_manifest``); a column with a
    value that has no such run (or a NULL) sets no condition."""
    holds = []
    for f in read_schema.partition_fields:
        values = pinned_values(predicate, f.name)
        if values is None:
            continue
        runs = [binary_row.value_bytes(v, f.type) for v in values]
        if all(r is not None for r in runs):
            holds.append(frozenset(runs))
    return tuple(holds)


def _manifest_may_match(meta: ManifestFileMeta, predicate: Predicate, read_schema: TableSchema) -> bool:
    types = [f.type for f in read_schema.partition_fields]
    stats = meta.partition_stats
    try:
        low, high = binary_row.decode(stats.min_values, types), binary_row.decode(stats.max_values, types)
    except Exception:  # statistics that do not decode (another writer's): read the manifest
        return True
    nulls = stats.null_counts or ()
    rows = meta.num_added_files + meta.num_deleted_files
    ranges = {f.name: _trusted_range(f.type, low[i], high[i], nulls[i] if i < len(nulls) else None, rows)
              for i, f in enumerate(read_schema.partition_fields)}
    return predicate.may_match(ranges)


def _file_ranges(entry: ManifestEntry, file_schema: TableSchema, read_schema: TableSchema,
                 primary_key: bool) -> dict[str, ColumnRange]:
    """Column ranges of one file from its stats, under the read schema's column names."""
    f = entry.file
    names_by_id = {fld.id: fld.name for fld in read_schema.fields}
    if primary_key:
        fields = file_schema.key_fields
        decoded = stats.decode(f.key_stats, [x.type for x in fields])
    else:
        if f.value_stats_cols is None:
            fields = list(file_schema.fields)
        else:
            fields = [file_schema.field(n) for n in f.value_stats_cols]
        if not fields or not f.value_stats.null_counts:
            return {}
        decoded = stats.decode(f.value_stats, [x.type for x in fields])
    out = {}
    for fld, cs in zip(fields, decoded):
        name = names_by_id.get(fld.id)
        # A retyped column's stats are in the old type; only trust stats of unchanged types.
        if name is not None and read_schema.field(name).type.root_text() == fld.type.root_text():
            out[name] = _trusted_range(fld.type, cs.min, cs.max, cs.null_count, f.row_count)
    return out


def _trusted_range(t: DataType, lo: Any, hi: Any, nulls: int | None, rows: int | None) -> ColumnRange:
    """A column's range from manifest stats. Binary bounds are dropped, null counts kept:
    writers order bytes signed (Java 1.0's collectors) or unsigned (later Paimon, Parquet), and
    the stats do not say which."""
    if t.is_binary:
        return ColumnRange(None, None, nulls, rows)
    return ColumnRange(lo, hi, nulls, rows)


def _index_may_match(table: TableHandle, entry: ManifestEntry, file_schema: TableSchema, read_schema: TableSchema,
                     partition: tuple, equal: list) -> bool:
    """False when the file's index (Paimon's file-index.*: embedded in the manifest or its
    ``.index`` extra file) rules out a ``column = value`` of the filter."""
    f = entry.file
    blob = f.embedded_index
    if blob is None:
        names = [n for n in f.extra_files if n.endswith(".index")]
        if not names:
            return True
        try:
            # The index sits beside its data file, which may be under an external path.
            file_dir = (f.external_path.rsplit("/", 1)[0] if f.external_path
                        else read_schema.bucket_dir(table.path, entry.partition, entry.bucket))
            blob = table.file_io.read_bytes(join(file_dir, names[0]))
        except (OSError, CorruptMetadataError):
            return True  # an index that cannot be read skips nothing
    indexes = file_index.parse(blob)
    if not indexes:
        return True
    names_by_id = {fld.id: fld.name for fld in file_schema.fields}
    conditions = []
    for c in equal:
        fld = read_schema.field(c.column)
        name = names_by_id.get(fld.id)
        # A retyped column's index hashes the old type's values: only trust unchanged types.
        if name is not None and file_schema.field(name).type.root_text() == fld.type.root_text():
            conditions.append((name, c.value, fld.type))
    return file_index.may_match(indexes, conditions)


def plan(table: TableHandle, snapshot: Snapshot | None, *, predicate: Predicate | None = None,
         read_schema: TableSchema | None = None, columns: frozenset[str] | None = None,
         system: tuple[str, ...] = ()) -> ScanPlan:
    """Live files of ``snapshot`` grouped into splits, pruned by ``predicate``, to be read in
    ``read_schema`` (by default the schema the snapshot was committed with). Level-0 files
    are left out where Java's batch scan leaves them out (``TableSchema.hides_level0``).

    Java's streaming reads start from a snapshot with a stricter rule (level 0 also hidden
    with the lookup producer; only the top level with the full-compaction producer); lakectl's
    lookup-producer writes do not compact at every commit as Java's do, so following keeps
    the batch rule for its starting snapshot. ``system``: the system columns
    (``core.system_columns``) each split's rows carry after the table's columns."""
    if read_schema is None:
        read_schema = table.schemas.schema(snapshot.schema_id) if snapshot else table.schema
    schemas: dict[int, TableSchema] = {read_schema.id: read_schema}
    if snapshot is None:
        return ScanPlan(None, read_schema, schemas, (), 0, 0)
    # A condition on a column with a default value filters the filled rows only: the files'
    # stats and indexes describe the nulls they hold.
    predicate = prunable(predicate, read_schema)
    try:
        return _plan_on(table, snapshot, predicate, read_schema, schemas, columns, system)
    except CorruptMetadataError as e:
        raise lost_race(table.snapshots, snapshot, e) or e


def _plan_on(table: TableHandle, snapshot: Snapshot, predicate: Predicate | None, read_schema: TableSchema,
             schemas: dict[int, TableSchema], columns: frozenset[str] | None,
             system: tuple[str, ...] = ()) -> ScanPlan:
    entries = _live_entries(table, snapshot, predicate, read_schema)
    if read_schema.hides_level0:
        entries = [e for e in entries if e.file.level > 0]
    if read_schema.options.get("bucket", "").strip() == "-2":
        # Postpone bucket: new rows wait in bucket -2 (bucket-postpone/) until Paimon's postpone
        # compaction moves them into real buckets; Paimon's batch read (and pypaimon 2.1's)
        # reads only the real buckets.
        entries = [e for e in entries if e.bucket >= 0]
    key_only = predicate is not None and predicate.columns <= set(read_schema.primary_keys)
    equal = [c for c in file_index.equalities(predicate) if c.column not in read_schema.partition_keys]
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    partition_values: dict[bytes, tuple] = {}
    # per partition: (may a row of it pass, does every row): decided once per partition
    verdicts: dict[bytes, tuple[bool, bool]] = {}
    may_decide = _partitions_may_decide(predicate, read_schema)
    decided = may_decide  # until a file kept is not wholly TRUE
    pruned = 0
    for e in entries:
        if e.partition not in partition_values:
            values = partition_values[e.partition] = read_schema.partition_values(e.partition)
            known = _partition_ranges(values, read_schema)
            verdicts[e.partition] = ((True, False) if predicate is None else
                                     (predicate.may_match(known), may_decide and predicate.must_match(known)))
        values = partition_values[e.partition]
        may_pass, all_pass = verdicts[e.partition]
        if not may_pass:
            pruned += 1
            continue
        if e.file.schema_id not in schemas:
            schemas[e.file.schema_id] = table.schemas.schema(e.file.schema_id)
        decided = decided and all_pass and _same_partition_types(schemas[e.file.schema_id], read_schema)
        if all_pass:  # every row of the file passes: its stats and index cannot prune it
            groups.setdefault((e.partition, e.bucket), []).append(e)
            continue
        # A data-evolution file holds some columns of a row-id range its siblings complete:
        # skipping one by its stats would misalign the others, so none is skipped.
        if predicate is not None and (key_only or not read_schema.has_primary_key) \
                and not data_evolution.enabled(read_schema):
            ranges = _file_ranges(e, schemas[e.file.schema_id], read_schema, read_schema.has_primary_key)
            if not predicate.may_match({**ranges, **_partition_ranges(values, read_schema)}):
                pruned += 1
                continue
            if equal and not _index_may_match(table, e, schemas[e.file.schema_id], read_schema, values, equal):
                pruned += 1
                continue
        groups.setdefault((e.partition, e.bucket), []).append(e)
    order = list(partition_values)  # partition creation order: first appearance in the manifests
    if read_schema.core_options.plan_sort_partition:
        order.sort(key=lambda p: binary_row.sort_key(partition_values[p]))
    rank = {p: i for i, p in enumerate(order)}
    # Java attaches deletion vectors to splits only while the option is on (turned off, a
    # table reads as if it had none: merged, level 0 included).
    vectors = snapshot_deletion_files(table.file_io, table.path, snapshot) \
        if read_schema.core_options.deletion_vectors_enabled else {}
    # Decided by the partitions, the condition has nothing left to prune or filter in a split.
    split_predicate = None if decided else predicate
    splits = []
    for (part, bucket) in sorted(groups, key=lambda pb: (rank[pb[0]], pb[1])):
        files = sorted(groups[(part, bucket)], key=lambda e: (e.file.min_sequence_number, e.file.file_name))
        directory = join(table.path, read_schema.partition_dir(partition_values[part]), f"bucket-{bucket}")
        splits.append(ReadSplit(part, bucket, directory, tuple(e.file for e in files), predicate=split_predicate,
                                deletion_files=split_deletion_files(vectors, part, bucket, files), columns=columns,
                                system_columns=system))
    return ScanPlan(snapshot, read_schema, schemas, tuple(splits), len(entries), pruned,
                    predicate if decided else None)


def read_batches(table: TableHandle, scan_plan: ScanPlan, *, predicate: Predicate | None = None,
                 select: Sequence[str] | None = None, limit: int | None = None,
                 engine: Any = None) -> Iterator[pa.Table]:
    """Merged, filtered, projected rows split by split; stops once ``limit`` rows came out."""
    engine = engine or LocalEngine()
    if predicate is not None and predicate == scan_plan.decided:
        predicate = None  # the partitions kept hold no row it would drop
    parts = engine.read_parts(scan_plan.splits, scan_plan.read_schema, scan_plan.schemas, table.file_io)
    return _reporting(filtered(parts, predicate, list(select) if select else None, limit), scan_plan)


def _reporting(parts: Iterator[pa.Table], scan_plan: ScanPlan) -> Iterator[pa.Table]:
    """``parts``, then (``-v``) what the read skipped: the files pruned by partition values,
    statistics and file indexes, and of the Parquet files read, the row groups pruned by their
    statistics. In-process reads only: a Spark job's executors count for themselves."""
    from core.kernels.data_file import ROW_GROUPS

    considered, read = ROW_GROUPS.snapshot()
    yield from parts
    if log.isEnabledFor(logging.INFO):
        now_considered, now_read = ROW_GROUPS.snapshot()
        files = sum(len(split.files) for split in scan_plan.splits)
        log.info("read %d of %d live data files (%d pruned by partition, statistics or file index); "
                 "%d of %d row groups of the Parquet files read (the others pruned by statistics)",
                 files, scan_plan.files_total, scan_plan.files_pruned, now_read - read, now_considered - considered)


def filtered(parts: Iterable[pa.Table], predicate: Predicate | None, columns: list[str] | None,
             limit: int | None) -> Iterator[pa.Table]:
    """``parts`` filtered by ``predicate``, projected to ``columns``, and cut after ``limit`` rows
    (reading stops there); empty parts are dropped."""
    remaining = limit
    for part in parts:
        if predicate is not None:
            part = filter_rows(part, predicate)
        if columns:
            part = part.select(columns)
        if remaining is not None:
            part = part.slice(0, remaining)
            remaining -= part.num_rows
        if part.num_rows:
            yield part
        if remaining is not None and remaining <= 0:
            return


def output_schema(read_schema: TableSchema, select: Sequence[str] | None) -> pa.Schema:
    if not select:
        return pa.schema([arrow_field(f).with_nullable(True) for f in read_schema.fields])
    by_name = {f.name: arrow_field(f).with_nullable(True) for f in system_columns.fields_with(read_schema)}
    return pa.schema([by_name[n] for n in select])


def check_select(read_schema: TableSchema, select: Sequence[str] | None) -> None:
    for name in select or ():
        if name in system_columns.NAMES:
            system_columns.named(read_schema, [name])  # raises UsageError when the table lacks it
        else:
            read_schema.field(name)  # raises UsageError naming the columns


@dataclass(frozen=True, slots=True)
class PreparedScan:
    plan: ScanPlan
    predicate: Predicate | None
    select: tuple[str, ...] | None
    where: str | None
    # The system columns read (named by --select or --where).
    system: tuple[str, ...] = ()

    @property
    def projection(self) -> tuple[str, ...] | None:
        """The columns the rows come out in: ``select``, or the table's own columns when
        system columns were read for ``--where`` alone (a plain scan never shows them)."""
        if self.select or not self.system:
            return self.select
        return tuple(f.name for f in self.plan.read_schema.fields)


def prepare(table: TableHandle, *, snapshot_id: int | None = None, timestamp: str | None = None, tag: str | None = None,
            select: Sequence[str] | None = None, where: str | None = None) -> PreparedScan:
    """Check the arguments and plan the splits (driver side, metadata only)."""
    snapshot = choose_snapshot(table, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag)
    # Time travel reads a snapshot in the schema it was committed with; the latest is read in
    # the table's current schema, so an alter-schema shows before the next write (as in Java).
    # Loading the snapshot's schema either way reports a snapshot that names a missing one.
    snapshot_schema = table.schemas.schema(snapshot.schema_id) if snapshot is not None else None
    travel = snapshot_id is not None or timestamp is not None or tag is not None
    read_schema = snapshot_schema if travel and snapshot_schema is not None else table.schema
    check_select(read_schema, select)
    predicate = None
    if where is not None:
        from core.where_simple import parse_condition  # sqlglot: only for conditions beyond the simple

        predicate = parse_condition(where, system_columns.fields_with(read_schema))
    named = frozenset(select or ()) | (predicate.columns if predicate is not None else frozenset())
    system = system_columns.named(read_schema, named)
    # With --select only the selected and filtered columns are read from the files.
    columns = named if select else None
    check_options(read_schema, table.name, READ, batch_scan=True, columns=columns)
    return PreparedScan(plan(table, snapshot, predicate=predicate, read_schema=read_schema, columns=columns,
                             system=system),
                        predicate, tuple(select) if select else None, where, system)


def _engine_for(prepared: PreparedScan, settings: EngineSettings | None) -> Any:
    if prepared.system:
        settings = _local_for_system_columns(prepared, settings)
    engine, why = choose_engine(settings, data_bytes=prepared.plan.data_bytes)
    log.info("engine: %s (%s)", engine.name, why)
    return engine


def _local_for_system_columns(prepared: PreparedScan, settings: EngineSettings | None) -> EngineSettings:
    """The engine settings of a read of system columns: the local engine, which computes them
    (Spark's tasks read only the table's columns).

    Raises:
        UsageError: Spark was asked for by name.
    """
    settings = settings or EngineSettings()
    if settings.engine == "spark":
        raise UsageError(f"system column {prepared.system[0]} is read by the local engine only; "
                         "leave out --engine spark")
    return replace(settings, engine="local")


def scan(table: TableHandle, *, snapshot_id: int | None = None, timestamp: str | None = None, tag: str | None = None,
         select: Sequence[str] | None = None, where: str | None = None, limit: int | None = None,
         engine_settings: EngineSettings | None = None) -> pa.Table:
    """The rows of the table at a snapshot, merged, filtered and projected. A read of the
    latest snapshot that loses it to a concurrent expire reads the new latest instead."""
    check_limit(limit)

    def once() -> pa.Table:
        prepared = prepare(table, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, select=select, where=where)
        engine = _engine_for(prepared, engine_settings)
        try:
            parts = list(read_batches(table, prepared.plan, predicate=prepared.predicate,
                                      select=prepared.projection, limit=limit, engine=engine))
        except CorruptMetadataError as e:
            raise lost_race(table.snapshots, prepared.plan.snapshot, e) or e
        schema = output_schema(prepared.plan.read_schema, prepared.projection)
        if not parts:
            return empty_table(schema)
        return pa.concat_tables([_in_schema(p, schema) for p in parts])

    return replan_on_lost_race(_replans(table, snapshot_id, timestamp, tag), once, "scan")


def _replans(table: TableHandle, snapshot_id: int | None, timestamp: str | None, tag: str | None) -> int:
    """How often a read may plan again after losing its snapshot to expire: only a read of the
    latest snapshot moves on to the new latest (time travel names the snapshot it wants)."""
    if snapshot_id is not None or timestamp is not None or tag is not None:
        return 0
    return table.schema.core_options.commit_max_retries


def to_spark(table: TableHandle, *, snapshot_id: int | None = None, timestamp: str | None = None, tag: str | None = None,
             select: Sequence[str] | None = None, where: str | None = None,
             engine_settings: EngineSettings | None = None) -> Any:
    """A Spark DataFrame over the table at a snapshot; executors read the splits."""
    prepared = prepare(table, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, select=select, where=where)
    if prepared.system:
        _local_for_system_columns(prepared, EngineSettings(engine="spark"))  # refuses
    engine, _ = choose_engine(replace(engine_settings or EngineSettings(), engine="spark"))
    return _spark_frame(engine, prepared, table)


def _spark_frame(engine: Any, prepared: PreparedScan, table: TableHandle, *, packed: bool = False) -> Any:
    """``packed``: rows for the driver, as Arrow IPC blobs in lakectl's types (nanoseconds kept)."""
    p = prepared.plan
    opts = p.read_schema.core_options
    parallelism = opts.scan_parallelism(len(p.splits))
    return engine.read_dataframe(p.splits, p.read_schema, p.schemas, where=prepared.where,
                                 select=prepared.select, parallelism=parallelism, file_io=table.file_io,
                                 packed=packed)


@dataclass(frozen=True, slots=True)
class ScanStream:
    """A scan's rows as they are read: ``parts`` in ``schema``, produced by ``engine``."""

    schema: pa.Schema
    parts: Iterator[pa.Table]
    engine: str


def scan_stream(table: TableHandle, *, snapshot_id: int | None = None, timestamp: str | None = None,
                tag: str | None = None, select: Sequence[str] | None = None, where: str | None = None,
                limit: int | None = None, engine_settings: EngineSettings | None = None) -> ScanStream:
    """The scan part by part, for stdout and ``--output``: the local engine's splits as they are
    read (a few at a time), or the Spark job's partitions collected to the driver one after
    another. Reading stops once ``limit`` rows came out."""
    check_limit(limit)
    replans = _replans(table, snapshot_id, timestamp, tag)

    def planned() -> PreparedScan:
        return prepare(table, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, select=select, where=where)

    prepared = replan_on_lost_race(replans, planned, "scan")
    engine = _engine_for(prepared, engine_settings)
    schema = output_schema(prepared.plan.read_schema, prepared.projection)
    if engine.name == "spark":
        # A task's CorruptMetadataError reaches the driver as itself (engines/spark.py), so a
        # data file expire removed under the executors re-plans here as on the local engine.
        def read(p: PreparedScan) -> Iterator[pa.Table]:
            frame = _spark_frame(engine, p, table, packed=True)
            return filtered(engine.collect_parts(frame, schema, packed=True), None, None, limit)
    else:
        def read(p: PreparedScan) -> Iterator[pa.Table]:
            return read_batches(table, p.plan, predicate=p.predicate, select=p.projection, limit=limit,
                                engine=engine)
    parts = _replanning_parts(table, prepared, planned, read, replans)
    return ScanStream(schema, (_in_schema(p, schema) for p in parts), engine.name)


def _in_schema(part: pa.Table, schema: pa.Schema) -> pa.Table:
    """``part`` cast to ``schema``; a part in it already (as the local engine's are) is not
    cast: Arrow's cast goes through pyarrow.compute, whose import is ~0.03 s of a small scan."""
    return part if part.schema.equals(schema, check_metadata=True) else part.cast(schema)


def _replanning_parts(table: TableHandle, prepared: PreparedScan, planned: Callable[[], PreparedScan],
                      read: Callable[[PreparedScan], Iterator[pa.Table]], replans: int) -> Iterator[pa.Table]:
    """``read(prepared)``; when its snapshot is expired under it before the first part came out,
    the whole read again on a fresh plan (at most ``replans`` times). Once parts are out, a
    lost snapshot ends the stream with ExpiredWhileReadingError: never a partial result."""
    emitted = False
    for attempt in range(replans + 1):
        try:
            if attempt:
                prepared = planned()
            for part in read(prepared):
                emitted = True
                yield part
            return
        except (CorruptMetadataError, ExpiredWhileReadingError) as e:
            lost = e if isinstance(e, ExpiredWhileReadingError) else lost_race(table.snapshots,
                                                                                prepared.plan.snapshot, e)
            if lost is None:
                raise
            if emitted:
                raise ExpiredWhileReadingError(f"{lost}; rows of it were already written out, so the scan "
                                               "stopped rather than mix two snapshots: run it again") from e
            log.info("scan attempt %d of %d lost a race against expire, planning again: %s",
                     attempt + 1, replans + 1, lost)
            last = lost
    raise ExpiredWhileReadingError(f"scan gave up after {replans + 1} tries: a concurrent expire removed the "
                                   f"snapshot it read every time (last: {last})")


@dataclass(frozen=True, slots=True)
class ScanOutput:
    table: str
    branch: str
    output: str
    rows: int
    bytes: int
    engine: str


def scan_to_output(table: TableHandle, output: str, *, snapshot_id: int | None = None, timestamp: str | None = None,
                   tag: str | None = None, select: Sequence[str] | None = None, where: str | None = None,
                   limit: int | None = None, engine_settings: EngineSettings | None = None,
                   json_value: Any = None) -> ScanOutput:
    """Write the scan to one file, part by part (``scan_stream``): the result is never whole in
    memory, and the file is the same on every engine."""
    output_format(output)  # a bad extension is refused before any reading
    stream = scan_stream(table, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, select=select, where=where,
                         limit=limit, engine_settings=engine_settings)
    rows, size = write_output_parts(stream.parts, stream.schema, output, json_value)
    return ScanOutput(table.name, table.branch, output, rows, size, stream.engine)
