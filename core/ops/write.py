"""write: plan the job on the driver, let an engine validate, route and write the rows per
(partition, bucket), and commit the resulting files as one snapshot.

The local engine checks every row before it writes the first file, so bad input leaves
nothing behind; on Spark a failing task fails the job and leaves only orphan files.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from core import branch_merge
from core.commit import CommitMessage, FileStoreCommit, IndexChanges, OverwriteSpec, base_entries
from core.deletion_vectors import snapshot_deletion_files, split_deletion_files
from core.dynamic_bucket import DYNAMIC_NOT_ON_SPARK, DynamicBucketAssigner, check_writable, is_dynamic
from core.engines import EngineSettings, choose_engine
from core.errors import CorruptMetadataError, InvalidDataError, NotFoundError, UsageError
from core.ops.create import Layout, columns_from_arrow, create
from core.ops.maintenance import after_commit
from core.postpone import POSTPONE_BUCKET, check_postpone_supported, is_postpone, new_write_id
from core.postpone import write_schema as postpone_write_schema
from core.renaming import refuse_renaming
from core.replan import lost_race, replan_on_lost_race
from core.rows import prepare_rows
from core.kernels.write import WriteJob, removal_changelog
from core.index_manifest import IndexManifestIO
from core.options import BATCH_COMMIT_IDENTIFIER, parse_bool
from core.option_rules import WRITE, check_options
from core.snapshot import Snapshot
from core.sources import TEXT_FORMATS, expand_input, infer_text_schema, input_size, stdin_to_file
from core.types import arrow_field
from core.schema import TableSchema, new_table_schema
from core.table_handle import TableHandle

log = logging.getLogger(__name__)

MODES = ("append", "overwrite")


@dataclass(frozen=True, slots=True)
class WriteResult:
    table: str
    branch: str
    snapshot_id: int | None
    commit_kind: str | None
    rows_written: int
    files_added: int
    bytes_added: int
    files_deleted: int
    partitions: int
    buckets_written: int  # (partition, bucket) pairs that got new files; create's `buckets` is the setting
    engine: str
    maintenance: tuple[str, ...] = ()  # post-commit steps that did work (compact, expire, ...)


def plan_job(table: TableHandle, schema: TableSchema, row_kind_column: str | None, *, overwrite: bool = False,
             planned_on: Snapshot | None = None) -> WriteJob:
    """The write's shared context: where each bucket's sequence numbers continue and, where
    the kernels look records up (first-row tables, the changelog of an overwrite), each
    bucket's live files."""
    latest = table.latest_snapshot() if planned_on is None else planned_on
    try:
        return _plan_job_on(table, latest, schema, row_kind_column, overwrite)
    except CorruptMetadataError as e:
        raise lost_race(table.snapshots, latest, e) or e


def _plan_job_on(table: TableHandle, latest: Snapshot | None, schema: TableSchema, row_kind_column: str | None,
                 overwrite: bool) -> WriteJob:
    entries = base_entries(table.manifests(), latest, table.snapshots) if latest is not None else []
    assigner = None
    if is_dynamic(schema):
        check_writable(schema)
        index_name = latest.index_manifest if latest is not None else None
        imio = IndexManifestIO(table.file_io, table.path, schema.core_options.manifest_compression)
        assigner = DynamicBucketAssigner(table.file_io, table.path, schema, imio.read(index_name),
                                         planned_on=index_name, overwrite=overwrite)
    starts: dict[tuple[bytes, int], int] = {}
    files: dict[tuple[bytes, int], list] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        if e.bucket == POSTPONE_BUCKET:
            continue  # each postpone writer counts from 0 (core.postpone)
        starts[key] = max(starts.get(key, 0), e.file.max_sequence_number + 1)
        files.setdefault(key, []).append(e.file)
    if not needs_lookup(schema, overwrite):
        return WriteJob(table.path, schema, row_kind_column, starts, overwrite=overwrite, assigner=assigner)
    schemas = {sid: table.schemas.schema(sid) for sid in {f.file.schema_id for f in entries} | {schema.id}}
    vectors = snapshot_deletion_files(table.file_io, table.path, latest) \
        if schema.core_options.deletion_vectors_enabled else {}  # as a scan reads it
    deletions = {k: split_deletion_files(vectors, k[0], k[1], v) for k, v in files.items()}
    return WriteJob(table.path, schema, row_kind_column, starts,
                    lookup_files={k: tuple(v) for k, v in files.items()}, schemas=schemas, overwrite=overwrite,
                    assigner=assigner, deletion_files={k: v for k, v in deletions.items() if v})


def needs_lookup(schema: TableSchema, overwrite: bool) -> bool:
    if not schema.has_primary_key:
        return False
    producer = schema.core_options.changelog_producer
    first_row = (schema.options.get("merge-engine") or "").strip().lower() == "first-row"
    # first-row looks up stored keys to keep their first record; an overwrite replaces them,
    # and its changelog (lookup, full-compaction) says what it removed. A lookup table's
    # other writes look nothing up: their changelog is the compaction's after the commit.
    return (first_row and not overwrite) or (overwrite and producer in ("lookup", "full-compaction"))


def removal_messages(job: WriteJob, messages: list[CommitMessage], overwritten: frozenset[bytes] | None,
                     file_io: Any) -> list[CommitMessage]:
    """The changelog an overwrite owes for what it removes, beyond what the write kernels
    produced: with ``lookup``, -D for the keys of overwritten buckets that got no new rows;
    with ``full-compaction``, -D for the keys of the top level (the state the last full
    compaction reported), since the overwrite deletes those files before any compaction
    could compare against them. Runs on the driver."""
    schema = job.schema
    producer = schema.core_options.changelog_producer
    if not schema.has_primary_key or producer not in ("lookup", "full-compaction"):
        return []
    written = {(m.partition, m.bucket) for m in messages}
    top = schema.core_options.num_levels - 1
    out = []
    for (part, bucket), files in job.lookup_files.items():
        if overwritten is not None and part not in overwritten:
            continue
        task = job.task_at(part, bucket)
        if producer == "lookup":
            if (part, bucket) in written:
                continue
        else:
            files = tuple(f for f in files if f.level == top)
            if not files:
                continue
        message = removal_changelog(replace(task, lookup_files=files), file_io)
        if message.changelog_files:
            out.append(message)
    return out


def _is_spark_dataframe(data: Any) -> bool:
    return type(data).__module__.startswith("pyspark")


def pick_engine(data: Any, engine_settings: EngineSettings | None, schema: TableSchema | None = None) -> Any:
    """The engine for ``data``: Spark for a Spark DataFrame, else the ``--engine auto`` rule on
    its size; always the local engine for a dynamic-bucket table (``schema``)."""
    dynamic = schema is not None and is_dynamic(schema)
    if schema is not None and is_postpone(schema):
        _refuse_spark_for_postpone(engine_settings, spark_input=_is_spark_dataframe(data))
        dynamic = True  # written locally, as a dynamic-bucket table is
    if _is_spark_dataframe(data):
        if dynamic:
            raise UsageError(DYNAMIC_NOT_ON_SPARK + "; pass the rows as an Arrow table")
        settings = engine_settings or EngineSettings()
        engine, _ = choose_engine(replace(settings, engine="spark"))
        why = "the input is a Spark DataFrame"
    else:
        engine, why = choose_write_engine(engine_settings, data.nbytes, dynamic)
    log.info("engine: %s (%s)", engine.name, why)
    return engine


def _refuse_spark_for_postpone(settings: EngineSettings | None, *, spark_input: bool) -> None:
    if spark_input or (settings is not None and settings.engine == "spark"):
        raise UsageError("a postpone-bucket table (bucket=-2) is written with the local engine only; use "
                         "--engine local (or auto) and a file input")


def choose_write_engine(settings: EngineSettings | None, data_bytes: int, dynamic: bool) -> tuple[Any, str]:
    """The ``--engine`` rule for a write, except that a dynamic-bucket table is always written
    locally: ``--engine auto`` (even with a Spark master) picks local, ``--engine spark`` is refused."""
    if not dynamic:
        return choose_engine(settings, data_bytes=data_bytes)
    settings = settings or EngineSettings()
    if settings.engine == "spark":
        raise UsageError(DYNAMIC_NOT_ON_SPARK + "; use --engine local (or auto), or a table with a fixed bucket count")
    engine, _ = choose_engine(replace(settings, engine="local"))
    return engine, "the table is in dynamic bucket mode, which lakectl writes locally"


@dataclass(frozen=True, slots=True)
class Written:
    """What ``write_and_commit`` did: the snapshot (None: nothing to commit) and its messages."""

    snapshot: Snapshot | None
    messages: list[CommitMessage]
    rows_in: int
    partitions: int  # partitions the input rows went to
    files_deleted: int
    maintenance: tuple[str, ...]


def write_and_commit(table: TableHandle, data: Any, engine: Any, *, overwrite: bool = False,
                     row_kind_column: str | None = None, commit_user: str | None = None,
                     identifier: int = BATCH_COMMIT_IDENTIFIER, watermark: int | None = None,
                     engine_settings: EngineSettings | None = None,
                     static_partition: bytes | None = None) -> Written:
    """Plan, write the data files with ``engine``, commit them as one snapshot under
    (``commit_user``, ``identifier``; a fresh user and Long.MAX for a batch write), then run
    the post-commit maintenance. Shared by batch and streaming writes.

    ``static_partition`` (an overwrite only): the one partition (BinaryRow) the overwrite
    replaces, as Paimon's INSERT OVERWRITE ... PARTITION: every row must belong to it, and
    with no rows it is cleared."""
    schema = table.schema
    check_options(schema, table.name, WRITE)
    if overwrite:
        branch_merge.refuse(schema, table.name, "write --mode overwrite")
    if table.is_main:  # the commit would be refused (core/commit.py): write no data file first
        table.refuse_unfinished_fast_forward("write")
    files_schema = schema
    if is_postpone(schema):
        # Rows go to bucket-postpone/ under names that carry the commit user and a write id.
        check_postpone_supported(schema, table.name)
        if engine.name == "spark":
            raise UsageError(f"table {table.name} is a postpone-bucket table (bucket=-2), which lakectl writes "
                             "with the local engine only; use --engine local (or auto)")
        commit_user = commit_user or str(uuid.uuid4())
        files_schema = postpone_write_schema(schema, commit_user, new_write_id())
    # Paimon's `rowkind.field` option names a table column that carries the row kind.
    # A plan that loses its snapshot to a concurrent expire is made again: the input is not read yet.
    planned: list[Snapshot | None] = [None]

    def plan() -> WriteJob:
        planned[0] = table.latest_snapshot()
        return plan_job(table, files_schema, row_kind_column or schema.options.get("rowkind.field"),
                        overwrite=overwrite, planned_on=planned[0])

    job = replan_on_lost_race(schema.core_options.commit_max_retries, plan, "write")
    try:
        messages, rows_in = engine.write(job, data, table.file_io)
    except CorruptMetadataError as e:
        # The kernels read bucket files (lookup changelog, first-row) that a concurrent expire
        # removed after the plan: the input is consumed, so this is exit 4, not damage.
        raise lost_race(table.snapshots, planned[0], e) or e
    partitions = {m.partition for m in messages}
    if static_partition is not None:
        _check_static(table, messages, static_partition)
    spec = None
    # Paimon's dynamic-partition-overwrite (default true): an overwrite replaces the partitions
    # its rows touch; false: the whole table, as an overwrite without a static partition does.
    dynamic = parse_bool(schema.options.get("dynamic-partition-overwrite", "true"), "dynamic-partition-overwrite")
    if overwrite and static_partition is not None:
        spec = OverwriteSpec(frozenset({static_partition}))
        messages = messages + removal_messages(job, messages, spec.partitions, table.file_io)
    elif overwrite and schema.partition_keys and not dynamic:
        spec = OverwriteSpec(None)
        messages = messages + removal_messages(job, messages, None, table.file_io)
    elif overwrite and (messages or not schema.partition_keys):
        # No input rows touch any partition of a partitioned table: nothing to replace.
        spec = OverwriteSpec(frozenset(partitions) if schema.partition_keys else None)
        messages = messages + removal_messages(job, messages, spec.partitions, table.file_io)
    if engine_settings is not None and engine_settings.progress is not None:
        engine_settings.progress(0, 0, "committing")
    index = None
    if job.assigner is not None:
        # The HASH files of the buckets that got new keys, written before the commit names them.
        index = IndexChanges(tuple(job.assigner.index_changes()), job.assigner.planned_on)
    user = {"commit_user": commit_user} if commit_user is not None else {}
    committer = FileStoreCommit(table.file_io, table.path, schema, identifier=identifier,
                                branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit(), **user)
    snapshot = committer.commit(messages, overwrite=spec, watermark=watermark, index=index)
    # A batch write commits under Long.MAX; a streaming write numbers its commits.
    maintenance = after_commit(table, engine, batch=identifier == BATCH_COMMIT_IDENTIFIER,
                               overwrite=spec is not None) if snapshot else []
    return Written(snapshot, messages, rows_in, len(partitions), committer.files_deleted,
                   tuple(name for name, _ in maintenance))


def write(table: TableHandle, data: Any, *, mode: str = "append", row_kind_column: str | None = None,
          engine: Any = None, engine_settings: EngineSettings | None = None,
          partition: dict[str, str] | None = None) -> WriteResult:
    """Write ``data`` (an Arrow table, or a Spark DataFrame) as one snapshot: APPEND, or
    OVERWRITE of the partitions it touches (the whole table if unpartitioned, or if the table
    sets ``dynamic-partition-overwrite=false``), or of the one ``partition`` given
    (``{"dt": "2024-01-01"}``, every partition column; the rows must all belong to it, and
    no rows clear it).

    Raises:
        UsageError: unknown mode.
        InvalidDataError: input that does not fit the table.
        CommitConflictError: the commit could not land.
    """
    if mode not in MODES:
        raise UsageError(f"--mode {mode!r} must be one of {', '.join(MODES)}")
    if mode == "overwrite" and row_kind_column:
        raise UsageError("--mode overwrite cannot be combined with --row-kind-column")
    if mode == "overwrite":
        branch_merge.refuse(table.schema, table.name, "write --mode overwrite")
    static = None
    if partition is not None:
        if mode != "overwrite":
            raise UsageError("--partition names the partition an overwrite replaces; add --mode overwrite")
        static = static_partition_row(table.schema, partition)
    if engine is None:
        engine = pick_engine(data, engine_settings, table.schema)
    done = write_and_commit(table, data, engine, overwrite=mode == "overwrite", row_kind_column=row_kind_column,
                            engine_settings=engine_settings, static_partition=static)
    snapshot, messages = done.snapshot, done.messages
    files = [f for m in messages for f in m.new_files]
    return WriteResult(
        table=table.name,
        branch=table.branch,
        snapshot_id=snapshot.id if snapshot else None,
        commit_kind=snapshot.commit_kind if snapshot else None,
        rows_written=done.rows_in,
        files_added=len(files),
        bytes_added=sum(f.file_size for f in files),
        files_deleted=done.files_deleted,
        partitions=done.partitions,
        buckets_written=sum(1 for m in messages if m.new_files),
        engine=engine.name,
        maintenance=done.maintenance,
    )


def static_partition_row(schema: TableSchema, spec: dict[str, str]) -> bytes:
    """``{"dt": "2024-01-01", ...}`` naming every partition column -> the partition's BinaryRow."""
    from core import binary_row
    from core.text_values import decode_value
    from core.types import to_arrow

    fields = schema.partition_fields
    if not fields:
        raise UsageError("--partition was given, but the table is not partitioned")
    unknown = [k for k in spec if k not in schema.partition_keys]
    if unknown:
        raise UsageError(f"--partition column {unknown[0]!r} is not a partition column; "
                         f"partition columns are: {', '.join(schema.partition_keys)}")
    missing = [f.name for f in fields if f.name not in spec]
    if missing:
        raise UsageError(f"--partition must give every partition column; missing: {', '.join(missing)}")
    values = []
    for f in fields:
        arrow_type = to_arrow(f.type)
        try:
            values.append(pa.array([decode_value(spec[f.name], arrow_type)], arrow_type)[0].as_py())
        except (ValueError, TypeError, pa.ArrowInvalid) as e:
            raise UsageError(f"--partition {f.name}={spec[f.name]}: not a {f.type.root_text()} ({e})") from None
    return binary_row.encode(values, [f.type for f in fields])


def _check_static(table: TableHandle, messages: list[CommitMessage], partition: bytes) -> None:
    """Refuse rows outside the static partition of an overwrite, removing the files written."""
    stray = [m for m in messages if m.partition != partition]
    if not stray:
        return
    values = table.schema.partition_values(stray[0].partition)
    for m in messages:
        for f in m.new_files + m.changelog_files:
            table.file_io.delete_quietly(f.external_path or _file_path(table, m, f))
    shown = ", ".join(f"{k}={v}" for k, v in zip(table.schema.partition_keys, values))
    raise InvalidDataError(f"a row of partition {shown} is outside the --partition being overwritten")


def _file_path(table: TableHandle, message: CommitMessage, file: Any) -> str:
    from core.fileio import join

    return join(table.schema.bucket_dir(table.path, message.partition, message.bucket), file.file_name)


@dataclass(frozen=True, slots=True)
class AutoCreate:
    """How to create the table when it does not exist (--auto-create): from the input's
    schema, or with ``like`` from another table's (``--like``: its columns, keys and options
    under these, and the input read in its types, so that no value changes)."""

    primary_keys: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    options: dict[str, str] | None = None
    like: Layout | None = None

    def layout(self) -> Layout | None:
        """The table-to-be's layout when it copies another's."""
        if self.like is None:
            return None
        return self.like.with_flags(self.primary_keys, self.partition_keys, self.options)


def write_input(table: TableHandle, path: str | None, *, input_format: str | None = None, mode: str = "append",
                row_kind_column: str | None = None, engine_settings: EngineSettings | None = None,
                auto_create: AutoCreate | None = None, input_table: str | None = None,
                partition: dict[str, str] | None = None, fill_missing_columns: bool = False) -> WriteResult:
    """Write a file, glob or directory (``-`` = stdin; ``sources.expand_input``) with the
    engine its size calls for, or a table of the Spark catalog (``input_table``, always on
    Spark). An input that lacks table columns is refused unless ``fill_missing_columns``
    (nullable ones are then null).

    Raises:
        NotFoundError: the table does not exist and ``auto_create`` is None.
        InvalidDataError: no input files, or columns missing from the input.
    """
    if (path is None) == (input_table is None):
        raise UsageError("give exactly one of --input and --input-table")
    if table.location.placed:
        refuse_renaming(table.file_io, table.path, table.name)  # --auto-create must not create into a rename's target
    exists = table.exists()
    if table.location.catalog is not None and (exists or auto_create is None):
        # registered in its catalog, and not only on disk (an unregistered directory is not written)
        table.location.catalog.check_registered(table.location, has_files=exists)
    if not exists and auto_create is None:
        where = f"looked in {table.path}" if table.location.placed else "its REST catalog does not know it"
        raise NotFoundError(f"table {table.name} does not exist ({where}); pass --auto-create "
                            "--like DB.SOURCE to create it as another table is, or --auto-create alone to "
                            "create it from the input's types")
    like = auto_create.layout() if not exists and auto_create is not None else None
    target = like.schema() if like is not None else table.schema if exists else None
    dynamic = is_dynamic(target) if target is not None else _creates_dynamic(auto_create)
    if target is not None and is_postpone(target):
        _refuse_spark_for_postpone(engine_settings, spark_input=input_table is not None)
        dynamic = True  # written locally, as a dynamic-bucket table is
    inferred = None
    if input_table is not None:
        if dynamic:
            raise UsageError(DYNAMIC_NOT_ON_SPARK + "; --input-table reads through Spark, so write a file "
                             "(--input) instead")
        engine, why = choose_engine(replace(engine_settings or EngineSettings(), engine="spark"))
        data = engine.read_table(input_table)
    else:
        paths, fmt = expand_input(path, input_format)
        engine, why = choose_write_engine(engine_settings, input_size(paths), dynamic)
        if engine_settings is not None and engine_settings.progress is not None:
            engine_settings.progress(0, 0, "reading input")
        hint = pa.schema([arrow_field(f) for f in target.fields]) if target is not None else None
        if target is None and fmt in TEXT_FORMATS:
            # a table created from text: its types are those that keep every value's text,
            # found by reading the input once as text (stdin is kept for the second read)
            paths = [stdin_to_file(fmt)] if paths == ["-"] else paths
            inferred = hint = infer_text_schema(paths, fmt)
        data = engine.read_input(paths, fmt, hint, whole=target is None)
    log.info("engine: %s (%s)", engine.name, why)
    if like is not None:
        check_input_columns(target, engine.input_columns(data), fill_missing_columns)
        if isinstance(data, pa.Table):  # bad input must not leave an empty table
            prepare_rows(data, target, row_kind_column)
        like.create(table, if_not_exists=True)
        table = table.placed()  # a REST server chose where the new table lives
    elif not exists:
        _create_from_input(table, engine, data, inferred, row_kind_column, auto_create)
        table = table.placed()
    else:
        check_input_columns(table.schema, engine.input_columns(data), fill_missing_columns)
    return write(table, data, mode=mode, row_kind_column=row_kind_column, engine=engine,
                 engine_settings=engine_settings, partition=partition)


def check_input_columns(schema: TableSchema, columns: list[str], fill_missing: bool) -> None:
    """Refuse an input without some table columns: NOT NULL ones always, nullable ones unless
    the user asked to fill them with null (an input with no columns at all is empty: fine)."""
    if not columns:
        return
    missing = [f for f in schema.fields if f.name not in columns]
    required = [f.name for f in missing if not f.type.nullable]
    if required:
        raise InvalidDataError(f"input lacks NOT NULL column{'s' if len(required) > 1 else ''} "
                               f"{', '.join(map(repr, required))}")
    if missing and not fill_missing:
        names = ", ".join(repr(f.name) for f in missing)
        raise InvalidDataError(f"input lacks column{'s' if len(missing) > 1 else ''} {names}; "
                               "pass --fill-missing-columns to write them as null")


def _creates_dynamic(spec: AutoCreate | None) -> bool:
    """Will ``--auto-create`` make a dynamic-bucket table (a primary key, bucket unset or -1)?"""
    if spec is None or not spec.primary_keys:
        return False
    return (spec.options or {}).get("bucket", "-1").strip() == "-1"


def _create_from_input(table: TableHandle, engine: Any, data: Any, inferred: pa.Schema | None,
                       row_kind_column: str | None, spec: AutoCreate) -> None:
    columns = columns_from_arrow(inferred if inferred is not None else engine.input_schema(data), row_kind_column)
    layout = dict(primary_keys=spec.primary_keys, partition_keys=spec.partition_keys, options=spec.options)
    if isinstance(data, pa.Table):
        # Check the rows against the schema-to-be first: bad input must not leave an empty table.
        prepare_rows(data, new_table_schema(columns, **layout), row_kind_column)
    create(table, columns, **layout, if_not_exists=True)
