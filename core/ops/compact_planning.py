"""Which buckets a compaction would rewrite, decided from metadata alone: the latest
snapshot's manifests, deletion-vector indexes and options, never the data files, and
without the data libraries (pyarrow is loaded only for a ``--partition`` value to type), so
that ``maintain --dry-run`` and ``health`` can ask whether a compaction would act for the
cost of reading manifests. ``core.ops.compact`` runs the plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from core import row_tracking
from core.commit import base_entries
from core.deletion_vectors import bucket_index_files, snapshot_deletion_files, split_deletion_files
from core.errors import CorruptMetadataError, UsageError
from core.kernels.compact_plan import (CompactTask, UniversalOptions, data_evolution_bins, in_sequence_order,
                                       output_level, pick_files, pick_universal, unaware_bins)
from core.manifest import DataFileMeta, ManifestEntry
from core.option_rules import WRITE, check_options, data_evolution_enabled
from core.partition import render_value
from core.replan import lost_race
from core.schema import TableSchema
from core.snapshot import Snapshot
from core.table_handle import TableHandle
from core.types import DataField


@dataclass(frozen=True, slots=True)
class CompactPlan:
    snapshot: Snapshot | None
    schema: TableSchema
    tasks: tuple[CompactTask, ...]


# ---- partition selection -----------------------------------------------------------------
def _expected_value(text: str, f: DataField, default_name: str) -> Any:
    """The partition value a ``col=text`` spec names, as ``binary_row.decode`` returns it."""
    if text == default_name:
        return None
    import pyarrow as pa  # only here: a --partition value typed as the column

    from core.rows import py_values
    from core.types import arrow_field

    try:
        return py_values(pa.array([text]).cast(arrow_field(f).type))[0]  # nanos kept (NanoDatetime)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return text  # compared with the partition's directory text instead


def partition_filter(schema: TableSchema, partitions: Sequence[Mapping[str, str]] | None
                     ) -> Callable[[tuple[Any, ...]], bool]:
    """A test on decoded partition values: does the partition match any of the specs?

    Each spec maps some partition columns to values as text (``{"dt": "2024-01-01"}``); the
    partition-default-name stands for null. A partition matches a spec when every column
    it names has that value (typed) or that text in the partition's directory name.

    Raises:
        UsageError: a spec names a column that is not a partition column, or the table is
            not partitioned.
    """
    if partitions is None:
        return lambda values: True
    fields = schema.partition_fields
    if not fields:
        raise UsageError("--partition was given, but the table is not partitioned")
    index = {f.name: i for i, f in enumerate(fields)}
    default_name = schema.core_options.partition_default_name
    specs: list[list[tuple[int, str, Any]]] = []
    for spec in partitions:
        if not spec:
            raise UsageError("--partition needs at least one COLUMN=VALUE")
        conditions = []
        for name, text in spec.items():
            if name not in index:
                raise UsageError(f"--partition column {name!r} is not a partition column; "
                                 f"partition columns are: {', '.join(index)}")
            f = fields[index[name]]
            conditions.append((index[name], str(text), _expected_value(str(text), f, default_name)))
        specs.append(conditions)

    def matches(values: tuple[Any, ...]) -> bool:
        for conditions in specs:
            if all(values[i] == expected or (values[i] is not None and render_value(values[i], fields[i].type) == text)
                   for i, text, expected in conditions):
                return True
        return False

    return matches


# ---- planning ----------------------------------------------------------------------------
def plan(table: TableHandle, *, full: bool = True, partitions: Sequence[Mapping[str, str]] | None = None,
         level0_buckets: bool = False, changelog: bool = True,
         order: tuple[str, tuple[str, ...]] | None = None) -> CompactPlan:
    """One CompactTask per (partition, bucket) of the latest snapshot that needs compaction;
    with ``level0_buckets``, only the buckets that hold level-0 files (compacted in full);
    with ``order`` (strategy, columns), every bucket with files, to be rewritten in that order."""
    schema = table.schema
    check_options(schema, table.name, WRITE)
    if order is not None:
        check_sort_order(table, order)
    selected = partition_filter(schema, partitions)
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return CompactPlan(None, schema, ())
    try:
        if order is not None:
            return _plan_sorted(table, snapshot, selected, order)
        if data_evolution_enabled(schema):
            return _plan_data_evolution(table, snapshot, selected)
        return _plan_on(table, snapshot, selected, full=full, level0_buckets=level0_buckets, changelog=changelog)
    except CorruptMetadataError as e:
        raise lost_race(table.snapshots, snapshot, e) or e


def check_sort_order(table: TableHandle, order: tuple[str, tuple[str, ...]]) -> None:
    """Refuse a sort compaction lakectl cannot do as Paimon does.

    Raises:
        UsageError: a primary-key table (its files are sorted by key), a row-tracking table
            (sorting would move rows off their row ids), an unknown strategy, no column, an
            unknown column, or one of a type that has no order here.
    """
    from core.kernels.sort_order import STRATEGIES

    schema = table.schema
    strategy, columns = order
    if schema.has_primary_key:
        raise UsageError(f"table {table.name} has a primary key, whose files are sorted by it; --order-by "
                         "(sort compaction) rewrites append tables")
    if row_tracking.enabled(schema):
        raise UsageError(f"table {table.name} tracks row ids (row-tracking.enabled): sorting would move rows "
                         "off their _ROW_ID, so lakectl does not sort-compact it")
    if strategy not in STRATEGIES:
        raise UsageError(f"--order-strategy {strategy!r} must be one of {', '.join(STRATEGIES)}")
    if not columns:
        raise UsageError("--order-by needs at least one column")
    by_name = {f.name: f for f in schema.fields}
    for c in columns:
        if c not in by_name:
            raise UsageError(f"--order-by column {c!r} is not a column of {table.name} "
                             f"({', '.join(by_name)})")
        if by_name[c].type.name in _UNORDERED_TYPES:
            raise UsageError(f"--order-by column {c!r} is of type {by_name[c].type.name}, which has no order to "
                             "sort by")


# Nested and semi-structured values: Paimon's sort compaction has no order for them either.
_UNORDERED_TYPES = frozenset({"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BLOB", "VECTOR"})


def _plan_sorted(table: TableHandle, snapshot: Snapshot, selected: Callable[[tuple[Any, ...]], bool],
                 order: tuple[str, tuple[str, ...]]) -> CompactPlan:
    """Sort compaction: one task per selected (partition, bucket) with all its live files."""
    schema = table.schema
    entries = base_entries(table.manifests(), snapshot, table.snapshots)
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    values_of: dict[bytes, tuple[Any, ...]] = {}
    for e in entries:
        if e.partition not in values_of:
            values_of[e.partition] = schema.partition_values(e.partition)
        if selected(values_of[e.partition]):
            groups.setdefault((e.partition, e.bucket), []).append(e)
    vectors = snapshot_deletion_files(table.file_io, table.path, snapshot)
    loaded: dict[int, TableSchema] = {schema.id: schema}
    tasks = [_task(table, schema, loaded, part, values_of[part], bucket, group, tuple(e.file for e in group),
                   output_level(schema), picked=True, order=order,
                   deletion_files=split_deletion_files(vectors, part, bucket, group))
             for (part, bucket), group in groups.items()]
    return CompactPlan(snapshot, schema, tuple(tasks))


def _plan_data_evolution(table: TableHandle, snapshot: Snapshot,
                         selected: Callable[[tuple[Any, ...]], bool]) -> CompactPlan:
    """Data-evolution compaction (Paimon 2.1's coordinator, ``data_evolution_bins``): one task
    per bin of each selected (partition, bucket), whether or not ``--full`` was asked (Paimon's
    has no other kind). Deleted rows are rewritten too, their deletion vectors moved onto the
    new file before the commit (``data_evolution_delete.move_deletion_vectors``)."""
    schema = table.schema
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    values_of: dict[bytes, tuple[Any, ...]] = {}
    for e in base_entries(table.manifests(), snapshot, table.snapshots):
        if e.partition not in values_of:
            values_of[e.partition] = schema.partition_values(e.partition)
        if selected(values_of[e.partition]):
            groups.setdefault((e.partition, e.bucket), []).append(e)
    loaded: dict[int, TableSchema] = {schema.id: schema}
    tasks = [_task(table, schema, loaded, part, values_of[part], bucket, group, files, 0, picked=True,
                   data_evolution=True)
             for (part, bucket), group in groups.items()
             for files in data_evolution_bins(schema, [e.file for e in group])]
    return CompactPlan(snapshot, schema, tuple(tasks))


def level0_goes_up(schema: TableSchema) -> bool:
    """Whether the table's writers compact every level-0 file up after each commit, as Java's
    do where a write needs lookups (``ForceUpLevel0Compaction``): with deletion vectors
    (batch reads skip level 0), with ``changelog-producer=lookup`` (the compaction writes the
    changelog) and with ``force-lookup``. Their minor compaction is the lookup compaction of
    level 0, whose output folds in each key's older record: what their readers expect
    (``MergeEngine.newest_upper_only``). First-row tables need lookups too, but their
    universal pick forces level 0 up by itself and a key never sits in two of their files."""
    if not schema.has_primary_key:
        return False
    options = schema.core_options
    return options.needs_lookup and options.merge_engine != "first-row"


def _plan_on(table: TableHandle, snapshot: Snapshot, selected: Callable[[tuple[Any, ...]], bool], *, full: bool,
             level0_buckets: bool, changelog: bool = True) -> CompactPlan:
    schema = table.schema
    level = output_level(schema)
    if schema.has_primary_key and level < 1:
        raise UsageError(f"option num-levels={schema.core_options.num_levels} leaves no level above 0 to compact to")
    entries = base_entries(table.manifests(), snapshot, table.snapshots)
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    values_of: dict[bytes, tuple[Any, ...]] = {}
    for e in entries:  # manifest order: files of equal sequence numbers stay in commit order
        if e.bucket == -2:
            continue  # postponed files: only the postpone compaction moves them (core.postpone)
        if e.partition not in values_of:
            values_of[e.partition] = schema.partition_values(e.partition)
        if selected(values_of[e.partition]):
            groups.setdefault((e.partition, e.bucket), []).append(e)
    loaded: dict[int, TableSchema] = {schema.id: schema}
    # With deletion vectors a bucket is read without merging (level 0 aside), so a universal
    # pick would leave older versions of the rewritten keys visible. The compaction after a
    # write (and a minor one) is Java's lookup compaction instead: level 0 moves up and the
    # older versions it replaces are marked in deletion vectors (``lookup_compact_bucket``);
    # a full compaction rewrites the bucket, its vectors applied, and drops them.
    dv = schema.core_options.deletion_vectors_enabled and schema.has_primary_key
    forced = level0_goes_up(schema)
    universal = UniversalOptions.of(schema) if schema.has_primary_key and not full and not forced else None
    vectors = snapshot_deletion_files(table.file_io, table.path, snapshot)
    if any(vectors.values()) and not schema.core_options.deletion_vectors_enabled:
        # Java reads such a table as if the vectors were not there; compacting with them
        # applied would change what it reads, without them would resurrect deleted rows.
        raise UsageError(f"table {table.name} has deletion vectors but option deletion-vectors.enabled is "
                         "false; lakectl does not compact it (set deletion-vectors.enabled=true to compact "
                         "with the vectors applied)")
    lookup = forced and (level0_buckets or not full)
    index_files = bucket_index_files(table.file_io, table.path, snapshot) if lookup and dv else {}
    tasks = []
    if level0_buckets:
        groups = {pb: group for pb, group in groups.items() if any(e.file.level == 0 for e in group)}
    unaware = not schema.has_primary_key and schema.num_buckets == -1
    for (part, bucket), group in groups.items():
        task_level, picked, drop_deletes = level, False, True
        if unaware:  # several rewrites per partition, each a task of its own
            for files in unaware_bins(schema, [e.file for e in group], vectors.get((part, bucket), {}), full=full):
                tasks.append(_task(table, schema, loaded, part, values_of[part], bucket, group, files, level,
                                   picked=True, drop_deletes=True, deletion_files=split_deletion_files(
                                       vectors, part, bucket, files)))
            continue
        if lookup:
            files = tuple(e.file for e in group) if any(e.file.level == 0 for e in group) else ()
        elif universal is not None:
            unit = pick_universal([e.file for e in group], universal)
            if unit is None:
                continue
            files, task_level, picked, drop_deletes = unit.files, unit.output_level, True, unit.drop_deletes
        else:
            files = pick_files(schema, [e.file for e in group], level, full=full)
            # A non-full append pick is at most compaction.max.file-num files: rewritten as
            # given, not picked again by the kernel's full rule (which would take them all).
            picked = not full and not schema.has_primary_key
            if dv and full and not files and split_deletion_files(vectors, part, bucket, group):
                # Settled at the top level but with vectors: a full compaction applies them.
                files, picked = in_sequence_order([e.file for e in group]), True
        if not files:
            continue
        tasks.append(_task(table, schema, loaded, part, values_of[part], bucket, group, files, task_level,
                           picked=picked, drop_deletes=drop_deletes,
                           deletion_files=split_deletion_files(vectors, part, bucket, group),
                           lookup=lookup, index_file=index_files.get((part, bucket)), changelog=changelog))
    return CompactPlan(snapshot, schema, tuple(tasks))


def _task(table: TableHandle, schema: TableSchema, loaded: dict[int, TableSchema], part: bytes,
          values: tuple[Any, ...], bucket: int, group: Sequence[ManifestEntry], files: tuple[DataFileMeta, ...],
          output_level: int, **how: Any) -> CompactTask:
    """The task rewriting ``files`` of one bucket, with the schemas its files were written in
    (``loaded`` keeps those read so far)."""
    for f in files:
        if f.schema_id not in loaded:
            loaded[f.schema_id] = table.schemas.schema(f.schema_id)
    needed = {schema.id} | {f.schema_id for f in files}
    return CompactTask(table_path=table.path, schema=schema, schemas={i: loaded[i] for i in sorted(needed)},
                       partition=part, partition_dir=schema.partition_dir(values), bucket=bucket,
                       total_buckets=group[0].total_buckets, files=files, output_level=output_level, **how)
