"""migrate: a directory of Parquet or ORC files becomes a new Paimon append table, as Paimon's
``migrate_table``/``migrate_file`` procedures do for a Hive table, without a Flink or Spark job.

The files are not rewritten: each is copied (default) or moved (``in_place``) into the table's
layout, ``<table>/<k=v/...>/bucket-0/data-<uuid>-<n>.<format>``, and listed as one data file
of one APPEND commit (``snapshot-1``). The table is an unaware-bucket append table
(``bucket=-1``) whose columns are the files' (all files must agree) followed by the Hive
partition columns, which are STRING as Paimon's ``HiveMigrator`` makes them, and whose
``file.format`` is the files'. The files do not hold their partition columns: Paimon's readers
take those from the partition (and so does lakectl's, ``core.kernels.data_file.read_file``).
Each file's stats are the ones lakectl's writer records (``core.stats``), from the Parquet
footer where it holds them, else from the file's columns.

Crash safety rests on a journal, ``<table>/.migrate-journal.json``, written (create-if-absent)
before anything else: the source, the mode, the commit user, the table's definition and every
file's source and target path. Then: the table's ``schema-0``; the copies or moves; the commit;
in move mode the emptied source directories are removed; the journal last. A killed migration
is finished by running it again: the journal is found, every file still at its source is
copied or moved again (a move is an atomic rename on a local disk; elsewhere a copy then a
delete, so a file found in both places is moved again from its whole source), and the commit
is made unless a snapshot of the journal's commit user is there already. Until the commit
the table has no snapshot (reads as empty) and the source files are each in exactly one
whole place; after it the table is complete.
"""

from __future__ import annotations

import json
import logging
import posixpath
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence
from urllib.parse import unquote

from core import stats
from core.binary_row import EMPTY_ROW
from core.commit import CommitMessage, FileStoreCommit
from core.copying import Progress, copy_file
from core.errors import InvalidDataError, TableExistsError, UsageError
from core.fileio import FileIO, join
from core.manifest import DataFileMeta
from core.schema import TableSchema
from core.snapshot import APPEND, Snapshot
from core.table_handle import TableHandle
from core.types import DataType, parse_type

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

FORMATS = ("parquet", "orc")
ICEBERG = "iceberg"  # --from iceberg: an Iceberg table's data files (core/ops/migrate_iceberg.py)
JOURNAL = ".migrate-journal.json"
# Hive's name for a null partition value; pyarrow.dataset reads it as null too.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_MAGIC = {b"PAR1": "parquet", b"ORC": "orc"}
SHOWN_FILES = 5  # file names a dry run shows


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str  # where it is now
    target: str  # its path relative to the table directory
    size: int
    partition: tuple[Any, ...]  # the Hive directory values (Iceberg: JSON values), in partition key order
    schema_id: int = 0  # the Paimon schema the file was written with (Iceberg: its columns' names)
    deleted: tuple[int, ...] = ()  # row positions an Iceberg delete removed: the file's deletion vector


@dataclass(frozen=True, slots=True)
class MigratePlan:
    source: str
    file_format: str
    mode: str  # copy or move
    commit_user: str
    columns: tuple[tuple[str, str], ...]  # (name, Paimon type text): the files' columns, then the partition's
    partition_keys: tuple[str, ...]
    files: tuple[SourceFile, ...]
    warnings: tuple[str, ...] = ()  # for the user, at planning only (not journaled)
    origin: str = "files"  # or iceberg
    # Iceberg: the table's Paimon schemas (fields with their ids, partition keys, highest id),
    # its options, and the table location, below which emptied data directories are removed
    schemas: tuple[dict[str, Any], ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    data_root: str = ""

    def to_json(self) -> str:
        return json.dumps({"version": 2, "source": self.source, "format": self.file_format, "mode": self.mode,
                           "commit_user": self.commit_user, "columns": [list(c) for c in self.columns],
                           "partition_keys": list(self.partition_keys), "origin": self.origin,
                           "schemas": list(self.schemas), "options": [list(o) for o in self.options],
                           "data_root": self.data_root,
                           "files": [[f.path, f.target, f.size, list(f.partition), f.schema_id, list(f.deleted)]
                                     for f in self.files]})

    @classmethod
    def from_json(cls, text: str) -> MigratePlan:
        d = json.loads(text)
        files = tuple(SourceFile(f[0], f[1], f[2], tuple(f[3]), *(f[4:5]), *(tuple(x) for x in f[5:6]))
                      for f in d["files"])
        return cls(d["source"], d["format"], d["mode"], d["commit_user"], tuple(tuple(c) for c in d["columns"]),
                   tuple(d["partition_keys"]), files, (), d.get("origin", "files"), tuple(d.get("schemas", ())),
                   tuple(tuple(o) for o in d.get("options", ())), d.get("data_root", ""))


@dataclass(frozen=True, slots=True)
class MigrateResult:
    """Named in the JSON vocabulary (README "JSON output"): counts of what the table gained
    are ``<things>_added``."""

    table: str
    branch: str  # always main: the new table's
    source: str
    file_format: str
    mode: str  # copy or move
    snapshot_id: int | None  # None on a dry run
    files_added: int
    records_added: int | None  # None on a dry run (the files are read only when committing)
    bytes_added: int
    partitions_added: int
    columns: tuple[dict[str, str], ...]  # the table's: {"name", "type"} each, partition columns last
    partition_keys: tuple[str, ...]
    first_files: tuple[str, ...]  # a few source files, relative to the source
    resumed: bool  # an interrupted migration was finished
    dry_run: bool
    warnings: tuple[str, ...] = ()


def migrate(source: str, table: TableHandle, *, file_format: str | None = None, in_place: bool = False,
            dry_run: bool = False, progress: Progress | None = None) -> MigrateResult:
    """Migrate the data files under ``source`` into the new append table ``table``.

    Raises:
        UsageError: no data files, mixed formats, files whose schemas disagree (the first
            differing file is named), a bad Hive layout, an unknown ``file_format``, or a re-run
            whose arguments differ from the interrupted migration's.
        InvalidDataError: a file that is not readable as its format.
        TableExistsError: the table exists (and is no unfinished migration of this source).
    """
    file_format = file_format.lower() if file_format is not None else None  # --from ICEBERG, as its metavar reads
    if file_format is not None and file_format not in (*FORMATS, ICEBERG):
        raise UsageError(f"--from must be one of {', '.join((*FORMATS, ICEBERG))}, not {file_format!r}")
    mode = "move" if in_place else "copy"
    from core.iceberg.source import is_catalog_source, local_or_uri, looks_like_iceberg

    if not is_catalog_source(source):
        source = local_or_uri(source)
        source = _source_io(source, table.file_io).normalize(source).rstrip("/") or "/"  # as walk names files
    def io_for(path: str) -> FileIO:
        return _source_io(path, table.file_io)

    if file_format is None and looks_like_iceberg(io_for(source) if not is_catalog_source(source) else
                                                  table.file_io, source):
        file_format = ICEBERG
    journal_path = join(table.path, JOURNAL)
    pending = table.file_io.read_text_if_exists(journal_path)
    if pending is not None:
        plan = _check_resumable(MigratePlan.from_json(pending), source, mode, file_format, table)
        resumed = True
    else:
        if table.exists():
            raise TableExistsError(f"table {table.name} already exists; migrate creates a new table")
        plan = _plan(io_for(source), source, file_format, mode) if file_format != ICEBERG else \
            _iceberg_plan(source, mode, io_for)
        resumed = False
    src_io = io_for(plan.data_root or plan.source)
    if dry_run:
        return _result(plan, table, None, None, resumed, dry_run=True)
    if not resumed and not table.file_io.try_create(journal_path, plan.to_json().encode()):
        raise TableExistsError(f"another migrate into {table.name} is under way (or was killed: re-run it)")
    schema = _create_table(table, plan)
    snapshot = _committed(table, plan)
    rows = None
    if snapshot is None:
        _transfer(src_io, table, plan, progress)
        messages, rows = _messages(table, plan)
        committer = FileStoreCommit(table.file_io, table.path, schema, commit_user=plan.commit_user,
                                    snapshot_commit=table.location.snapshot_commit())
        snapshot = committer.commit(messages, kind=APPEND)
    if plan.mode == "move":
        _remove_emptied_dirs(src_io, plan)
    table.file_io.delete(journal_path)
    if rows is None:  # committed by the interrupted run
        rows = snapshot.total_record_count - sum(len(f.deleted) for f in plan.files) if snapshot else 0
    return _result(plan, table, snapshot.id if snapshot else None, rows, resumed, dry_run=False)


def pending_migration_files(file_io: FileIO, table_path: str) -> set[str]:
    """The names of the data files an unfinished migration into the table at ``table_path``
    copies or moves in (none without its journal): not orphans, though no snapshot lists them."""
    pending = file_io.read_text_if_exists(join(table_path, JOURNAL))
    if pending is None:
        return set()
    return {f.target.rsplit("/", 1)[-1] for f in MigratePlan.from_json(pending).files}


def _result(plan: MigratePlan, table: TableHandle, snapshot_id: int | None, rows: int | None, resumed: bool, *,
            dry_run: bool) -> MigrateResult:
    shown = tuple(_relative(plan.data_root or plan.source, f.path) for f in plan.files[:SHOWN_FILES])
    return MigrateResult(table.name, "main", plan.source, plan.file_format, plan.mode, snapshot_id, len(plan.files), rows,
                         sum(f.size for f in plan.files), len({f.partition for f in plan.files}),
                         tuple({"name": name, "type": text} for name, text in plan.columns), plan.partition_keys,
                         shown, resumed, dry_run, plan.warnings)


def _source_io(source: str, table_io: FileIO) -> FileIO:
    """The source's store: the table's when both are local or share a scheme (its settings
    then apply), else one of its own."""
    if "://" not in source and table_io.local:
        return table_io
    if "://" in source and not table_io.local and source.split("://", 1)[0] == table_io.scheme:
        return table_io
    return FileIO.for_uri(source)


# ---- planning --------------------------------------------------------------------------------
def _iceberg_plan(source: str, mode: str, io_for: Any) -> MigratePlan:
    from core.ops import migrate_iceberg

    found = migrate_iceberg.plan(source, io_for, _java_unreadable)
    files = tuple(SourceFile(f.path, f.target, f.size, f.partition, f.schema_id, f.deleted) for f in found.files)
    return MigratePlan(source, "parquet", mode, str(uuid.uuid4()), found.columns, found.partition_keys, files,
                       found.warnings, origin=ICEBERG, schemas=found.schemas, options=found.options,
                       data_root=found.location)


def _plan(src_io: FileIO, source: str, file_format: str | None, mode: str) -> MigratePlan:
    files = _data_files(src_io, source)
    if not files:
        raise UsageError(f"{source} holds no data files to migrate")
    fmt = _one_format(src_io, files, file_format)
    keys, partitions = _hive_layout(source, [path for path, _ in files])
    arrow_schema, warnings = _one_schema(src_io, [path for path, _ in files], fmt)
    clash = [k for k in keys if k in arrow_schema.names]
    if clash:
        raise UsageError(f"partition column {clash[0]!r} is also a column of the files; migrate takes partition "
                         "values from directory names only")
    from core.ops.create import columns_from_arrow

    columns = [(name, str(t)) for name, t, _ in columns_from_arrow(arrow_schema)]
    columns += [(k, "STRING") for k in keys]
    prefix = f"data-{uuid.uuid4()}"
    planned = []
    for i, ((path, size), values) in enumerate(zip(files, partitions)):
        directory = posixpath.join(*(f"{k}={_dir_value(v)}" for k, v in zip(keys, values)), "bucket-0") \
            if keys else "bucket-0"
        planned.append(SourceFile(path, f"{directory}/{prefix}-{i}.{fmt}", size, values))
    return MigratePlan(source, fmt, mode, str(uuid.uuid4()), tuple(columns), tuple(keys), tuple(planned),
                       tuple(warnings))


def _dir_value(value: str | None) -> str:
    """A partition value as the table's directory names it (Paimon's escaping, its default name
    for null)."""
    from core.partition import escape

    return escape(value) if value is not None else "__DEFAULT_PARTITION__"


def _data_files(src_io: FileIO, source: str) -> list[tuple[str, int]]:
    """Every file below ``source`` but hidden ones (``.name``, ``_SUCCESS``, ``_common_metadata``:
    below a hidden directory too), as Hive and pyarrow.dataset skip them; sorted by path."""
    found = []
    for status in src_io.walk(source):
        relative = _relative(source, status.path)
        if any(part.startswith((".", "_")) for part in relative.split("/")):
            continue
        found.append((status.path, status.size))
    return sorted(found)


def _relative(source: str, path: str) -> str:
    """``path`` below ``source``; compared without scheme and leading slashes, since a store
    may list ``memory://src`` as ``memory:///src/...``."""
    bare_source, bare = (p.split("://", 1)[-1].lstrip("/") for p in (source, path))
    return bare[len(bare_source):].lstrip("/") if bare.startswith(bare_source) else path


def _one_format(src_io: FileIO, files: list[tuple[str, int]], asked: str | None) -> str:
    """The files' one format: by extension, else by magic bytes; ``asked`` (``--from``) must match."""
    seen: dict[str, str] = {}
    for path, _ in files:
        fmt = _format_of(src_io, path)
        if fmt is None:
            raise UsageError(f"{path} is neither a Parquet nor an ORC file")
        seen.setdefault(fmt, path)
        if len(seen) > 1:
            first, other = list(seen.items())
            raise UsageError(f"mixed formats: {first[1]} is {first[0]} but {other[1]} is {other[0]}; "
                             "migrate one format at a time")
    fmt = next(iter(seen))
    if asked is not None and asked != fmt:
        raise UsageError(f"--from {asked}, but the files are {fmt} (e.g. {seen[fmt]})")
    return fmt


def _format_of(src_io: FileIO, path: str) -> str | None:
    suffix = path.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if suffix in FORMATS:
        return suffix
    with src_io.open_input(path) as f:
        head = f.read(4)
    return next((fmt for magic, fmt in _MAGIC.items() if head.startswith(magic)), None)


def _hive_layout(source: str, paths: list[str]) -> tuple[list[str], list[tuple[str | None, ...]]]:
    """The partition keys named by the directories between ``source`` and the files (``k=v``
    each, the same keys in the same order everywhere) and each file's values."""
    keys: list[str] | None = None
    values = []
    for path in paths:
        dirs = _relative(source, path).split("/")[:-1]
        pairs = []
        for d in dirs:
            key, eq, value = d.partition("=")
            if not eq or not key:
                raise UsageError(f"{path}: directory {d!r} is not a Hive partition (KEY=VALUE)")
            pairs.append((unquote(key), None if value == HIVE_NULL else unquote(value)))
        names = [k for k, _ in pairs]
        if keys is None:
            keys = names
        elif names != keys:
            raise UsageError(f"{path} is under partition directories {'/'.join(names) or '(none)'}, but "
                             f"{paths[0]} under {'/'.join(keys) or '(none)'}; every file needs the same keys")
        values.append(tuple(v for _, v in pairs))
    return keys or [], values


def _file_schema(src_io: FileIO, path: str, fmt: str) -> tuple[pa.Schema, dict[str, str]]:
    """A file's schema, and (Parquet) its ``_java_unreadable`` columns."""
    with src_io.open_input(path) as f:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            parquet = pq.ParquetFile(f)
            return parquet.schema_arrow, _java_unreadable(parquet.schema_arrow, parquet.metadata)
        from core.formats import _orc

        return _orc().ORCFile(f).schema, {}


def _java_unreadable(schema: pa.Schema, metadata: Any) -> dict[str, str]:
    """Top-level columns of a Parquet file that Java Paimon 1.0 cannot read, by name, with the
    reason (both measured with the oracle's bundle jar; lakectl and pypaimon read them all):
    a DECIMAL of precision 18 or less stored as dictionary-encoded fixed-length bytes
    (pyarrow's default: Java reads it into a long vector and fails on the bytes dictionary;
    its writer and lakectl's store such decimals as integers), and a nanosecond TIMESTAMP
    stored as INT64 (pyarrow's default: Java reads TIMESTAMP(7..9) from INT96 only)."""
    import pyarrow as pa

    small_decimals = {f.name for f in schema if pa.types.is_decimal(f.type) and f.type.precision <= 18}
    nanos = {f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"}
    found = {}
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            name = chunk.path_in_schema
            if name in small_decimals and chunk.physical_type == "FIXED_LEN_BYTE_ARRAY" \
                    and any("DICTIONARY" in e for e in chunk.encodings):
                found[name] = "a DECIMAL stored as dictionary-encoded fixed-length bytes"
            elif name in nanos and chunk.physical_type == "INT64":
                found[name] = "a nanosecond TIMESTAMP stored as INT64 (Java reads INT96 there)"
    return found


def _one_schema(src_io: FileIO, paths: Sequence[str], fmt: str) -> tuple[pa.Schema, list[str]]:
    """The files' one schema (the first file that differs from the first is named), and a
    warning per column Java Paimon 1.0 cannot read in some file."""
    import pyarrow as pa

    first = None
    unreadable: dict[tuple[str, str], int] = {}  # (column, reason) -> files
    for path in paths:
        try:
            schema, columns = _file_schema(src_io, path, fmt)
        except (pa.ArrowException, ValueError, OSError) as e:
            raise InvalidDataError(f"cannot read {path} as {fmt}: {e}") from None
        for column in columns.items():
            unreadable[column] = unreadable.get(column, 0) + 1
        if first is None:
            first = schema.remove_metadata()
        elif not schema.remove_metadata().equals(first):
            raise UsageError(f"{path} has another schema than {paths[0]} ({_difference(first, schema)}); "
                                   "every file must have the same columns and types")
    assert first is not None
    warnings = [f"column {name} of {count} file(s) is {reason}, which Java Paimon 1.0 cannot read (lakectl and "
                "pypaimon can); rewrite those files for Java readers" for (name, reason), count in unreadable.items()]
    return first, warnings


def _difference(a: pa.Schema, b: pa.Schema) -> str:
    for fa in a:
        if fa.name not in b.names:
            return f"no column {fa.name}"
        fb = b.field(fa.name)
        if fa.type != fb.type or fa.nullable != fb.nullable:
            return f"column {fa.name} is {fb.type}{'' if fb.nullable else ' not null'}, not {fa.type}"
    extra = [n for n in b.names if n not in a.names]
    return f"an extra column {extra[0]}" if extra else "its columns are in another order"


# ---- resuming --------------------------------------------------------------------------------
def _check_resumable(plan: MigratePlan, source: str, mode: str, file_format: str | None,
                     table: TableHandle) -> MigratePlan:
    """An interrupted migration is finished only by the same command line."""
    again = f"re-run `lakectl migrate {plan.source} {table.name}{' --in-place' if plan.mode == 'move' else ''}` " \
            f"to finish it"
    asked = file_format if file_format != ICEBERG else None
    if plan.source != source or plan.mode != mode or (asked not in (None, plan.file_format)) \
            or (file_format == ICEBERG and plan.origin != ICEBERG):
        raise UsageError(f"{table.name} holds an unfinished migrate of {plan.source} ({plan.mode}); {again}")
    return plan


def _committed(table: TableHandle, plan: MigratePlan) -> Snapshot | None:
    """The journal's commit, ``snapshot-1``, if it landed before the migration was interrupted
    (later snapshots may have landed since: the table was whole from that commit on)."""
    if table.latest_snapshot() is None:
        return None
    first = table.snapshots.snapshot(1) if table.snapshots.exists(1) else None
    if first is None or first.commit_user != plan.commit_user:
        raise TableExistsError(f"table {table.name} has snapshots another writer committed during an unfinished "
                               f"migrate; remove {join(table.path, JOURNAL)} after checking the table")
    return first


def _create_table(table: TableHandle, plan: MigratePlan) -> TableSchema:
    if plan.origin == ICEBERG:
        return _create_iceberg_table(table, plan)
    from core.ops.create import create, same_definition

    columns = [(name, parse_type(text), None) for name, text in plan.columns]
    options = {"bucket": "-1", "file.format": plan.file_format}
    existing = table.schemas.latest()
    if existing is not None:  # an interrupted migration made it
        from core.schema import new_table_schema

        asked = new_table_schema(columns, partition_keys=plan.partition_keys, options=options)
        if not same_definition(existing, asked):
            raise TableExistsError(f"table {table.name} is not the one an unfinished migrate began; remove "
                                   f"{join(table.path, JOURNAL)} after checking the table")
    schema, _ = create(table, columns, partition_keys=plan.partition_keys, options=options, if_not_exists=True)
    return schema


def _create_iceberg_table(table: TableHandle, plan: MigratePlan) -> TableSchema:
    """The plan's Paimon schemas, ``schema-0`` on, with their Iceberg field ids (``create``
    numbers columns itself), then the catalog's registration; an interrupted run's schemas
    must be the plan's."""
    from core.ops.create import same_definition
    from core.ops.migrate_iceberg import table_schemas
    from core.schema import SchemaManager

    catalog = table.location.catalog
    if catalog is not None and catalog.server_owns_chain:
        raise UsageError(f"migrate from Iceberg creates its schemas itself, which a REST catalog does not let it; "
                         f"migrate into a filesystem or JDBC catalog")
    manager = SchemaManager(table.file_io, table.path)
    schemas = table_schemas(plan.schemas, plan.options)
    for schema in schemas:
        existing = manager.schema(schema.id) if schema.id in manager.list_ids() else None
        if existing is None and not manager.commit(schema):
            existing = manager.schema(schema.id)
        if existing is not None and not same_definition(existing, schema):
            raise TableExistsError(f"table {table.name} is not the one an unfinished migrate began; remove "
                                   f"{join(table.path, JOURNAL)} after checking the table")
    if catalog is not None and not catalog.is_registered(table.location):
        catalog.register_table(table.location)
    return schemas[-1]


# ---- moving and committing -------------------------------------------------------------------
def _transfer(src_io: FileIO, table: TableHandle, plan: MigratePlan, progress: Progress | None) -> None:
    """Copy or move every file still at its source into its target path. A file already
    gone from its source was moved by the interrupted run (the target is whole: a move is a
    rename, or a copy that completed before the delete)."""
    total = sum(f.size for f in plan.files)
    done = 0
    same = src_io.same_store(table.file_io)
    for f in plan.files:
        target = join(table.path, f.target)
        if plan.mode == "copy":
            copy_file(src_io, table.file_io, f.path, target)
        elif src_io.exists(f.path):
            if same:
                table.file_io.move(f.path, target)
            else:  # across stores: a whole copy first, then the source goes
                copy_file(src_io, table.file_io, f.path, target)
                src_io.delete(f.path)
        elif not table.file_io.exists(target):
            raise InvalidDataError(f"{f.path} is gone from the source and not at {target}; the migration "
                                   "cannot be finished")
        done += f.size
        if progress is not None:
            progress(done, total, "moving files" if plan.mode == "move" else "copying files")


def _messages(table: TableHandle, plan: MigratePlan) -> tuple[list[CommitMessage], int]:
    """One commit message per partition (bucket 0), the files' metadata read from the targets,
    and (Iceberg deletes) one deletion-vector index file per partition; and the live rows."""
    from core import binary_row
    from core.kernels.write import local_wall_clock_millis
    from core.manifest import FILE_SOURCE_APPEND

    schemas = {s.id: s for s in _plan_schemas(table, plan)}
    latest = schemas[max(schemas)]
    by_partition: dict[tuple, list[DataFileMeta]] = {}
    vectors: dict[tuple, dict[str, list[int]]] = {}
    next_sequence: dict[tuple, int] = {}
    rows_total = 0
    for f in plan.files:
        schema = schemas[f.schema_id]
        values = _partition_values(latest, plan, f)
        rows, value_stats = _file_stats(table.file_io, join(table.path, f.target), schema, plan, values)
        start = next_sequence.get(f.partition, 0)
        next_sequence[f.partition] = start + rows
        rows_total += rows - len(f.deleted)
        name = f.target.rsplit("/", 1)[-1]
        by_partition.setdefault(f.partition, []).append(DataFileMeta(
            file_name=name, file_size=f.size, row_count=rows, min_key=EMPTY_ROW, max_key=EMPTY_ROW,
            key_stats=stats.EMPTY_STATS, value_stats=value_stats, min_sequence_number=start,
            max_sequence_number=max(start, start + rows - 1), schema_id=schema.id, level=0,
            creation_time=local_wall_clock_millis(), delete_row_count=0, file_source=FILE_SOURCE_APPEND,
            value_stats_cols=() if schema.core_options.stats_mode == "none" else None))
        if f.deleted:
            vectors.setdefault(f.partition, {})[name] = list(f.deleted)
    types = [f.type for f in latest.partition_fields]
    messages = []
    for key, files in by_partition.items():
        partition = binary_row.encode(list(_partition_values(latest, plan, None, key)), types)
        index = (_index_file(table, vectors[key]),) if key in vectors else ()
        messages.append(CommitMessage(partition, 0, latest.num_buckets, new_files=tuple(files),
                                      new_index_files=index))
    return messages, rows_total


def _plan_schemas(table: TableHandle, plan: MigratePlan) -> list[TableSchema]:
    if plan.origin == ICEBERG:
        from core.ops.migrate_iceberg import table_schemas

        return table_schemas(plan.schemas, plan.options)
    return [table.schemas.require_latest(table.name)]


def _partition_values(schema: TableSchema, plan: MigratePlan, f: SourceFile | None,
                      journaled: tuple | None = None) -> tuple:
    """A file's partition values as lakectl's BinaryRow and stats take them (Hive: strings as
    they are; Iceberg: decoded from their JSON form)."""
    values = journaled if f is None else f.partition
    if plan.origin != ICEBERG:
        return tuple(values)
    from core.ops.migrate_iceberg import from_json

    return tuple(from_json(v, k.type) for v, k in zip(values, schema.partition_fields))


def _index_file(table: TableHandle, vectors: dict[str, list[int]]) -> Any:
    """One deletion-vector index file of a partition's migrated files (file name -> the row
    positions Iceberg's deletes removed)."""
    from core.deletion_vectors import bitmap_class, write_index_file

    bitmaps = {}
    for name, positions in vectors.items():
        bitmap = bitmap_class()()
        bitmap.update(positions)
        bitmaps[name] = bitmap
    return write_index_file(table.file_io, table.path, bitmaps)


def _file_stats(file_io: FileIO, path: str, schema: TableSchema, plan: MigratePlan,
                partition: tuple[Any, ...]) -> tuple[int, stats.SimpleStats]:
    """A file's row count and value stats as lakectl's writer records them (``core.stats``), in
    the schema it was written with: its columns one at a time (from the Parquet footer where
    that holds them exactly), and a partition column the file lacks the partition's value in
    every row."""
    mode = schema.core_options.stats_mode
    with file_io.open_input(path) as handle:
        if plan.file_format == "parquet":
            import pyarrow.parquet as pq

            reader: Any = pq.ParquetFile(handle)
            rows = reader.metadata.num_rows
            footer = stats.footer_stats(reader.metadata)
            in_file = set(reader.schema_arrow.names)
        else:
            from core.formats import _orc

            reader = _orc().ORCFile(handle)
            rows, footer = reader.nrows, None
            in_file = set(reader.schema.names)
        if mode == "none":
            return rows, stats.EMPTY_STATS
        # a column at a time: a file's stats never need all of it in memory at once
        data_fields = [f for f in schema.fields if f.name in in_file]
        by_name = {f.name: stats.column_stats([reader.read(columns=[f.name]).column(0)], [f], mode, footer)[0]
                   for f in data_fields}
    for key, value in zip(schema.partition_keys, partition):
        if key not in by_name:
            by_name[key] = stats.ColumnStats(value, value, 0) if value is not None else \
                stats.ColumnStats(None, None, rows)
    return rows, stats.from_columns([by_name.get(f.name, stats.ColumnStats(None, None, rows)) for f in schema.fields],
                                    [f.type for f in schema.fields])


def _remove_emptied_dirs(src_io: FileIO, plan: MigratePlan) -> None:
    """The source's partition directories its files left empty, deepest first, then the source
    (an Iceberg table's directory stays: its metadata is still there)."""
    root = plan.data_root or plan.source
    dirs = set()
    for f in plan.files:
        d = f.path.rsplit("/", 1)[0]
        while len(d) > len(root) and d.startswith(root):
            dirs.add(d)
            d = d.rsplit("/", 1)[0]
    for d in sorted(dirs, key=lambda p: p.count("/"), reverse=True):
        src_io.remove_empty_dir(d)
    if not plan.data_root:
        src_io.remove_empty_dir(plan.source)
