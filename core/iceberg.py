"""Iceberg metadata kept beside a Paimon table (``metadata.iceberg.storage``), as Paimon does.

Iceberg readers (pyiceberg, DuckDB, Trino, Spark) read a table through an Iceberg metadata
file that lists the table's Parquet data files; Paimon writes one after each commit of a table
that asks for it (docs/iceberg.md has the facts this module follows). lakectl writes, for the
latest snapshot, a self-contained set: one manifest of the snapshot's visible files, one
manifest list, and ``v<snapshot id>.metadata.json`` holding the current schema, an identity
partition spec and that one snapshot (Iceberg snapshot id = Paimon snapshot id), then
``version-hint.text``. Nothing is reused from earlier versions; older versions beyond
``metadata.iceberg.previous-versions-max`` are deleted with the manifests only they name.

The metadata is derived: it is written after the Paimon snapshot is published and never
changes the commit's outcome (``sync_after_commit`` logs a warning on failure). The next
commit, or ``lakectl iceberg-sync``, writes it again from the latest snapshot.
"""

from __future__ import annotations

import io
import json
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

from core.errors import UsageError
from core.fileio import FileIO, join
from core.schema import TableSchema
from core.types import DataType

log = logging.getLogger(__name__)

STORAGE = "metadata.iceberg.storage"
COMPATIBLE = "metadata.iceberg-compatible"  # Paimon 0.9's switch, what the 1.0 bundle jar reads
FORMAT_VERSION = "metadata.iceberg.format-version"
MANIFEST_COMPRESSION = "metadata.iceberg.manifest-compression"
PREVIOUS_VERSIONS_MAX = "metadata.iceberg.previous-versions-max"
DELETE_AFTER_COMMIT = "metadata.iceberg.delete-after-commit.enabled"
# The metadata.iceberg.* options lakectl acts on; any other is refused for writes.
HONOURED_OPTIONS = frozenset({STORAGE, FORMAT_VERSION, MANIFEST_COMPRESSION, PREVIOUS_VERSIONS_MAX,
                              DELETE_AFTER_COMMIT})
STORAGES = ("disabled", "table-location", "hadoop-catalog")
VERSION_HINT = "version-hint.text"
_METADATA_NAME = re.compile(r"v(\d+)\.metadata\.json")
_PARTITION_FIELD_ID_START = 1000  # Iceberg's first partition field id
_CODECS = {"snappy": "snappy", "gzip": "deflate", "deflate": "deflate", "zstd": "zstandard",
           "uncompressed": "null", "none": "null"}


def storage(options: Mapping[str, str]) -> str:
    """Where the table keeps Iceberg metadata: ``disabled``, ``table-location``,
    ``hadoop-catalog`` (or another value, which ``refusal`` names)."""
    value = options.get(STORAGE)
    if value is not None:
        return value.strip().lower()
    if options.get(COMPATIBLE, "false").strip().lower() == "true":
        return "table-location"
    return "disabled"


def enabled(options: Mapping[str, str]) -> bool:
    return storage(options) != "disabled"


def manifest_compression(options: Mapping[str, str]) -> str:
    """``metadata.iceberg.manifest-compression``; by default snappy, as Paimon (some readers
    cannot read zstd), but zstd on a table with Paimon 0.9's ``metadata.iceberg-compatible``
    alone: what that era's writer wrote, and the only one of the two its reader can read (the
    1.0 bundle jar fails a commit on snappy manifests, "Unrecognized codec")."""
    default = "snappy" if STORAGE in options else "zstd"
    return options.get(MANIFEST_COMPRESSION, default).strip().lower()


def option_refusal(opts: Mapping[str, str]) -> str | None:
    """Why lakectl cannot keep Iceberg metadata under these options, or None."""
    kind = storage(opts)
    if kind not in STORAGES:
        return f"{STORAGE}={opts.get(STORAGE)} (lakectl writes Iceberg metadata only for table-location and " \
               "hadoop-catalog)"
    if kind == "disabled":
        return None
    for key in opts:
        if key.startswith("metadata.iceberg.") and key not in HONOURED_OPTIONS:
            return f"{key} (an Iceberg metadata option lakectl does not act on)"
    if opts.get(FORMAT_VERSION, "2").strip() != "2":
        return f"{FORMAT_VERSION}={opts[FORMAT_VERSION]} (lakectl writes Iceberg format version 2 only)"
    codec = manifest_compression(opts)
    if codec not in _CODECS:
        return f"{MANIFEST_COMPRESSION}={codec} (lakectl writes {', '.join(sorted(_CODECS))})"
    return None


def refusal(schema: TableSchema) -> str | None:
    """Why lakectl cannot keep this table's Iceberg metadata, or None: the first option or
    column it does not support, named."""
    why = option_refusal(schema.options)
    if why is not None or not enabled(schema.options):
        return why
    if schema.core_options.file_format != "parquet":
        return f"file.format={schema.core_options.file_format} with Iceberg metadata (lakectl exposes Parquet files only)"
    if opts_true(schema.options, "data-evolution.enabled"):
        return "data-evolution.enabled=true with Iceberg metadata (its files hold column subsets)"
    if schema.core_options.deletion_vectors_enabled:
        return "deletion-vectors.enabled=true with Iceberg metadata (format version 2 has no deletion vectors)"
    for f in schema.fields:
        if iceberg_type(f.type) is None:
            return f"column {f.name} of type {f.type.root_text()} with Iceberg metadata (no Iceberg type for it)"
    return None


def opts_true(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"


# ---- types ---------------------------------------------------------------------------
_SIMPLE = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
           "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "CHAR": "string", "VARCHAR": "string",
           "BINARY": "binary", "VARBINARY": "binary"}


def iceberg_type(t: DataType) -> str | None:
    """The Iceberg type of a Paimon column, or None where lakectl has none: nested types, TIME
    (millis in Paimon's files, micros in Iceberg's) and timestamps finer than microseconds."""
    if t.name in _SIMPLE:
        return _SIMPLE[t.name]
    if t.name == "DECIMAL":
        return f"decimal({t.precision}, {t.scale})"
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) <= 6:
        return "timestamp" if t.name == "TIMESTAMP" else "timestamptz"
    return None


def _avro_partition_type(t: DataType, field_id: int) -> Any:
    """The Avro type of a partition value in a manifest (Iceberg's Avro mapping); a fixed type
    is named after the partition field's id, since Avro names must not repeat."""
    name = iceberg_type(t)
    if name in ("int", "long", "float", "double", "boolean", "string"):
        base: Any = name
    elif name == "binary":
        base = "bytes"
    elif name == "date":
        base = {"type": "int", "logicalType": "date"}
    elif name in ("timestamp", "timestamptz"):
        base = {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": name == "timestamptz"}
    else:  # decimal: Iceberg's fixed of the fewest bytes that hold the precision
        size = next(n for n in range(1, 17) if 2 ** (8 * n - 1) > 10 ** t.precision)
        base = {"type": "fixed", "name": f"decimal_{field_id}", "size": size, "logicalType": "decimal",
                "precision": t.precision, "scale": t.scale}
    return ["null", base]


# ---- where ---------------------------------------------------------------------------
def metadata_dir(table_path: str, options: Mapping[str, str]) -> str:
    """``<table>/metadata`` (table-location) or ``<warehouse>/iceberg/<db>/<table>/metadata``
    (hadoop-catalog: the layout of Iceberg's Hadoop catalog rooted at the warehouse)."""
    return join(iceberg_location(table_path, options), "metadata")


def iceberg_location(table_path: str, options: Mapping[str, str]) -> str:
    if storage(options) != "hadoop-catalog":
        return table_path
    db_dir, table = table_path.rstrip("/").rsplit("/", 1)
    warehouse, db = db_dir.rsplit("/", 1)
    return join(warehouse, "iceberg", db.removesuffix(".db"), table)


# ---- what readers see ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IcebergSyncResult:
    """What one sync wrote (or, dry, would write)."""

    snapshot_id: int | None
    metadata_file: str | None
    data_files: int
    record_count: int
    deleted_versions: int
    dry_run: bool = False
    skipped: bool = False  # a newer snapshot's metadata was current already: nothing written


def visible_entries(schema: TableSchema, entries: list[Any]) -> list[Any]:
    """The live files Iceberg readers get: every file of an append table; only the top level
    (``num-levels - 1``, what a full compaction writes) of a primary-key table, whose files
    there hold each key once, merged."""
    if not schema.has_primary_key:
        return list(entries)
    top = schema.core_options.num_levels - 1
    return [e for e in entries if e.file.level == top]


def sync(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Any, entries: list[Any], *,
         dry_run: bool = False) -> IcebergSyncResult:
    """Write the Iceberg metadata of ``snapshot`` (whose live files are ``entries``)."""
    why = refusal(schema)
    if why is not None:
        raise UsageError(f"cannot write Iceberg metadata: {why}")
    visible = visible_entries(schema, entries)
    directory = metadata_dir(table_path, schema.options)
    name = f"v{snapshot.id}.metadata.json"
    newer = _newer_live_version(file_io, table_path, directory, snapshot.id)
    if newer is not None:
        # A later commit's sync landed first (two writers): its metadata stays the current one.
        log.info("Iceberg metadata of snapshot %d not written: snapshot %d's is there already", snapshot.id, newer)
        return IcebergSyncResult(newer, join(directory, f"v{newer}.metadata.json"), 0, 0, 0, dry_run=dry_run,
                                 skipped=True)
    records = sum(e.file.row_count for e in visible)
    if dry_run:
        return IcebergSyncResult(snapshot.id, join(directory, name), len(visible), records, 0, dry_run=True)
    codec = _CODECS[manifest_compression(schema.options)]
    token = uuid.uuid4().hex
    manifest_path = join(directory, f"{token}-m0.avro")
    list_path = join(directory, f"snap-{snapshot.id}-1-{token}.avro")
    manifest_bytes = _manifest(table_path, schema, snapshot.id, visible, codec)
    file_io.write_bytes(manifest_path, manifest_bytes)
    file_io.write_bytes(list_path, _manifest_list(manifest_path, len(manifest_bytes), snapshot.id, visible,
                                                  codec, schema))
    replaced = _files_named(file_io, directory, snapshot.id)  # an earlier sync of this snapshot's
    previous = _current_metadata(file_io, directory)
    metadata = _metadata(table_path, schema, snapshot, list_path, previous)
    metadata["properties"][NAME_MAPPING] = json.dumps(_name_mapping(file_io, table_path, schema, visible))
    # A metadata file is written once per snapshot id; iceberg-sync of the same snapshot
    # replaces it whole (as a hint is replaced: readers see the old or the new file).
    file_io.overwrite_hint(join(directory, name), json.dumps(metadata, indent=2))
    file_io.overwrite_hint(join(directory, VERSION_HINT), str(snapshot.id))
    for path in sorted(replaced - {manifest_path, list_path}):
        file_io.delete_quietly(path)
    deleted = _delete_old_versions(file_io, directory, schema.options, snapshot.id)
    return IcebergSyncResult(snapshot.id, join(directory, name), len(visible), records, deleted)


def _newer_live_version(file_io: FileIO, table_path: str, directory: str, snapshot_id: int) -> int | None:
    """The version the hint names when it is newer than ``snapshot_id`` and its Paimon snapshot
    still exists; None otherwise (a hint past a rollback names a snapshot that is gone)."""
    hint = file_io.read_text_if_exists(join(directory, VERSION_HINT))
    if hint is None or not hint.strip().isdigit() or int(hint) <= snapshot_id:
        return None
    newer = int(hint)
    return newer if file_io.exists(join(table_path, "snapshot", f"snapshot-{newer}")) else None


def sync_after_commit(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Any,
                      entries_of: Any) -> None:
    """After a published commit: write the Iceberg metadata, or warn. Never raises: the Paimon
    commit has landed whatever happens here (``entries_of(snapshot)`` reads its live files)."""
    try:
        sync(file_io, table_path, schema, snapshot, entries_of(snapshot))
    except Exception as e:  # noqa: BLE001 - a derived artifact: any failure is a warning
        log.warning("snapshot %d committed, but its Iceberg metadata was not written (%s); the next commit "
                    "or `lakectl iceberg-sync` writes it", snapshot.id, e)


def after_move(file_io: FileIO, old_path: str, new_path: str, schema: TableSchema, snapshot: Any,
               entries_of: Any) -> None:
    """After a rename: the metadata names files by absolute path, so the table's is written anew
    at its new place, and the moved one (table-location) or the old name's (hadoop-catalog) is
    removed. Never raises: the rename is done (a warning; iceberg-sync repairs)."""
    try:
        # Every file of the moved metadata names the old paths: none is worth keeping.
        if storage(schema.options) == "hadoop-catalog":
            file_io.delete_tree(iceberg_location(old_path, schema.options))
        else:
            file_io.delete_tree(metadata_dir(new_path, schema.options))
        if snapshot is not None:
            sync(file_io, new_path, schema, snapshot, entries_of(snapshot))
    except Exception as e:  # noqa: BLE001 - a derived artifact: any failure is a warning
        log.warning("the table moved, but its Iceberg metadata was not rewritten (%s); `lakectl iceberg-sync` "
                    "writes it", e)


def after_drop(file_io: FileIO, table_path: str, options: Mapping[str, str]) -> None:
    """After a drop: a hadoop-catalog directory outside the table goes too (the table's own
    ``metadata/`` went with its directory)."""
    if storage(options) == "hadoop-catalog":
        file_io.delete_tree(iceberg_location(table_path, options))


# ---- metadata JSON ------------------------------------------------------------------------
def _current_metadata(file_io: FileIO, directory: str) -> dict[str, Any] | None:
    hint = file_io.read_text_if_exists(join(directory, VERSION_HINT))
    if hint is None or not hint.strip().isdigit():
        return None
    text = file_io.read_text_if_exists(join(directory, f"v{hint.strip()}.metadata.json"))
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return None


def _schema_json(schema: TableSchema) -> dict[str, Any]:
    # Iceberg field ids are Paimon's (Parquet files carry them), so readers map columns by id.
    return {"type": "struct", "schema-id": schema.id, "fields": [
        {"id": f.id, "name": f.name, "required": not f.type.nullable, "type": iceberg_type(f.type)}
        for f in schema.fields]}


def _partition_spec(schema: TableSchema) -> list[dict[str, Any]]:
    return [{"name": f.name, "transform": "identity", "source-id": f.id, "field-id": _PARTITION_FIELD_ID_START + i}
            for i, f in enumerate(schema.partition_fields)]


def _metadata(table_path: str, schema: TableSchema, snapshot: Any, list_path: str,
              previous: dict[str, Any] | None) -> dict[str, Any]:
    spec = _partition_spec(schema)
    table_uuid = (previous or {}).get("table-uuid") or str(uuid.uuid4())
    return {
        "format-version": 2,
        "table-uuid": table_uuid,
        "location": iceberg_location(table_path, schema.options),
        "last-sequence-number": snapshot.id,
        "last-updated-ms": snapshot.time_millis,
        "last-column-id": max([schema.highest_field_id, *(f.id for f in schema.fields)]),
        "schemas": [_schema_json(schema)],
        "current-schema-id": schema.id,
        "partition-specs": [{"spec-id": 0, "fields": spec}],
        "default-spec-id": 0,
        "last-partition-id": _PARTITION_FIELD_ID_START + len(spec) - 1,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0,
        "properties": {},
        "current-snapshot-id": snapshot.id,
        "refs": {"main": {"snapshot-id": snapshot.id, "type": "branch"}},
        "snapshots": [{
            "snapshot-id": snapshot.id,
            "sequence-number": snapshot.id,
            "timestamp-ms": snapshot.time_millis,
            "summary": {"operation": "append" if snapshot.commit_kind == "APPEND" else "overwrite"},
            "manifest-list": list_path,
            "schema-id": schema.id,
        }],
        "snapshot-log": [{"snapshot-id": snapshot.id, "timestamp-ms": snapshot.time_millis}],
        "metadata-log": [],
    }


NAME_MAPPING = "schema.name-mapping.default"


def _name_mapping(file_io: FileIO, table_path: str, schema: TableSchema, visible: list[Any]) -> list[dict[str, Any]]:
    """Iceberg's name mapping: Paimon's Parquet files carry no field ids, so readers find a
    field's column by name, under every name it had in the schemas of the files they read
    (a renamed column keeps its id; a primary-key file's ``_KEY_`` and system columns map to
    nothing and are not read)."""
    from core.schema import SchemaManager

    names: dict[int, list[str]] = {f.id: [f.name] for f in schema.fields}
    manager = SchemaManager(file_io, table_path)
    for schema_id in sorted({e.file.schema_id for e in visible} - {schema.id}):
        # A dropped column's id is in no current field: mapped all the same, so that readers
        # know the file's column and skip it (pyiceberg refuses an unmapped one).
        for f in manager.schema(schema_id).fields:
            known = names.setdefault(f.id, [])
            if f.name not in known:
                known.append(f.name)
    # A primary-key file's own columns, under Paimon's ids for them (outside any schema's, so
    # readers map and skip them: pyiceberg refuses a file column the mapping does not name).
    system = {_SEQUENCE_NUMBER_ID: ["_SEQUENCE_NUMBER"], _VALUE_KIND_ID: ["_VALUE_KIND"]} \
        if schema.has_primary_key else {}
    keys = {_KEY_FIELD_ID_START + f.id: [f"_KEY_{n}" for n in names[f.id]] for f in schema.key_fields}
    return [{"field-id": fid, "names": n} for fid, n in {**names, **keys, **system}.items()]


# Paimon's ids of a primary-key data file's system columns (its SpecialFields).
_KEY_FIELD_ID_START = 2**31 // 2
_SEQUENCE_NUMBER_ID = 2**31 - 2
_VALUE_KIND_ID = 2**31 - 3


# ---- Avro manifests (Iceberg v2 schemas, with Iceberg's field ids) ---------------------
def _map(name: str, key_id: int, value_id: int, value_type: str) -> dict[str, Any]:
    return {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": name, "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value_type, "field-id": value_id}]}}


def _entry_schema(schema: TableSchema) -> dict[str, Any]:
    partition = {"type": "record", "name": "r102", "fields": [
        {"name": f["name"], "type": _avro_partition_type(schema.field(f["name"]).type, f["field-id"]),
         "default": None,
         "field-id": f["field-id"]} for f in _partition_spec(schema)]}
    data_file = {"type": "record", "name": "r2", "fields": [
        {"name": "content", "type": "int", "field-id": 134},
        {"name": "file_path", "type": "string", "field-id": 100},
        {"name": "file_format", "type": "string", "field-id": 101},
        {"name": "partition", "type": partition, "field-id": 102},
        {"name": "record_count", "type": "long", "field-id": 103},
        {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
        {"name": "null_value_counts", "type": ["null", _map("k121_v122", 121, 122, "long")], "default": None,
         "field-id": 110},
        {"name": "lower_bounds", "type": ["null", _map("k126_v127", 126, 127, "bytes")], "default": None,
         "field-id": 125},
        {"name": "upper_bounds", "type": ["null", _map("k129_v130", 129, 130, "bytes")], "default": None,
         "field-id": 128},
    ]}
    return {"type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": ["null", "long"], "default": None, "field-id": 1},
        {"name": "sequence_number", "type": ["null", "long"], "default": None, "field-id": 3},
        {"name": "file_sequence_number", "type": ["null", "long"], "default": None, "field-id": 4},
        {"name": "data_file", "type": data_file, "field-id": 2},
    ]}


_LIST_SCHEMA: dict[str, Any] = {"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string", "field-id": 500},
    {"name": "manifest_length", "type": "long", "field-id": 501},
    {"name": "partition_spec_id", "type": "int", "field-id": 502},
    {"name": "content", "type": "int", "field-id": 517},
    {"name": "sequence_number", "type": "long", "field-id": 515},
    {"name": "min_sequence_number", "type": "long", "field-id": 516},
    {"name": "added_snapshot_id", "type": "long", "field-id": 503},
    {"name": "added_files_count", "type": "int", "field-id": 504},
    {"name": "existing_files_count", "type": "int", "field-id": 505},
    {"name": "deleted_files_count", "type": "int", "field-id": 506},
    {"name": "added_rows_count", "type": "long", "field-id": 512},
    {"name": "existing_rows_count", "type": "long", "field-id": 513},
    {"name": "deleted_rows_count", "type": "long", "field-id": 514},
    {"name": "partitions", "type": ["null", {"type": "array", "element-id": 508, "items": {
        "type": "record", "name": "r508", "fields": [
            {"name": "contains_null", "type": "boolean", "field-id": 509},
            {"name": "contains_nan", "type": ["null", "boolean"], "default": None, "field-id": 518},
            {"name": "lower_bound", "type": ["null", "bytes"], "default": None, "field-id": 510},
            {"name": "upper_bound", "type": ["null", "bytes"], "default": None, "field-id": 511}]}}],
     "default": None, "field-id": 507},
]}

_ADDED = 1  # manifest entry status


def _data_file_path(table_path: str, schema: TableSchema, entry: Any) -> str:
    return entry.file.external_path or join(schema.bucket_dir(table_path, entry.partition, entry.bucket),
                                            entry.file.file_name)


def _partition_record(schema: TableSchema, entry: Any) -> dict[str, Any]:
    values = schema.partition_values(entry.partition)
    return {f.name: _avro_value(v, f.type) for f, v in zip(schema.partition_fields, values)}


def _avro_value(value: Any, t: DataType) -> Any:
    """A partition value as fastavro writes the Avro type of ``_avro_partition_type``."""
    if value is None:
        return None
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _epoch_micros(value)
    return value


def _epoch_micros(value: Any) -> int:
    import datetime as dt

    if isinstance(value, int):
        return value
    epoch = dt.datetime(1970, 1, 1, tzinfo=value.tzinfo)
    delta = value - epoch
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _avro_bytes(schema: dict[str, Any], records: list[dict[str, Any]], codec: str,
                metadata: dict[str, str]) -> bytes:
    """An Avro object container file of ``records`` with Iceberg's header keys (``metadata``);
    fastavro keeps the schema's ``field-id`` attributes in the header (snappy through cramjam,
    fastavro's own snappy dependency)."""
    import fastavro

    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, metadata=metadata)
    return out.getvalue()


def _manifest(table_path: str, schema: TableSchema, snapshot_id: int, entries: list[Any], codec: str) -> bytes:
    records = [{
        "status": _ADDED, "snapshot_id": snapshot_id, "sequence_number": snapshot_id,
        "file_sequence_number": snapshot_id,
        "data_file": {"content": 0, "file_path": _data_file_path(table_path, schema, e), "file_format": "PARQUET",
                      "partition": _partition_record(schema, e), "record_count": e.file.row_count,
                      "file_size_in_bytes": e.file.file_size,
                      # No column statistics (readers then prune by partition only); empty maps
                      # rather than nulls, which the 1.0 bundle jar's reader cannot take.
                      "null_value_counts": [], "lower_bounds": [], "upper_bounds": []},
    } for e in entries]
    metadata = {"schema": json.dumps(_schema_json(schema)), "schema-id": str(schema.id),
                "partition-spec": json.dumps(_partition_spec(schema)), "partition-spec-id": "0",
                "format-version": "2", "content": "data"}
    return _avro_bytes(_entry_schema(schema), records, codec, metadata)


def _manifest_list(manifest_path: str, manifest_length: int, snapshot_id: int, entries: list[Any],
                   codec: str, schema: TableSchema) -> bytes:
    record = {"manifest_path": manifest_path, "manifest_length": manifest_length, "partition_spec_id": 0,
              "content": 0, "sequence_number": snapshot_id, "min_sequence_number": snapshot_id,
              "added_snapshot_id": snapshot_id, "added_files_count": len(entries), "existing_files_count": 0,
              "deleted_files_count": 0, "added_rows_count": sum(e.file.row_count for e in entries),
              "existing_rows_count": 0, "deleted_rows_count": 0,
              "partitions": _partition_summaries(schema, entries)}
    metadata = {"snapshot-id": str(snapshot_id), "sequence-number": str(snapshot_id), "format-version": "2"}
    return _avro_bytes(_LIST_SCHEMA, [record], codec, metadata)


def _partition_summaries(schema: TableSchema, entries: list[Any]) -> list[dict[str, Any]]:
    """Per partition field of the manifest: whether a null occurs and the least and greatest
    value in Iceberg's single-value encoding (readers prune manifests by them; Java's reader
    requires the list)."""
    columns = list(zip(*(schema.partition_values(e.partition) for e in entries))) if entries else \
        [() for _ in schema.partition_fields]
    out = []
    for f, values in zip(schema.partition_fields, columns):
        present = [v for v in values if v is not None]
        floating = f.type.name in ("FLOAT", "DOUBLE")
        nan = any(v != v for v in present) if floating else False  # Java reads it as non-null
        ordered = [v for v in present if v == v]
        out.append({"contains_null": len(present) < len(values), "contains_nan": nan,
                    "lower_bound": _single_value(min(ordered), f.type) if ordered else None,
                    "upper_bound": _single_value(max(ordered), f.type) if ordered else None})
    return out


def _single_value(value: Any, t: DataType) -> bytes:
    """Iceberg's binary single-value serialization of a partition value."""
    import datetime as dt
    import struct

    name = iceberg_type(t)
    if name == "boolean":
        return b"\x01" if value else b"\x00"
    if name == "int":
        return struct.pack("<i", value)
    if name == "long":
        return struct.pack("<q", value)
    if name == "float":
        return struct.pack("<f", value)
    if name == "double":
        return struct.pack("<d", value)
    if name == "date":
        return struct.pack("<i", (value - dt.date(1970, 1, 1)).days)
    if name in ("timestamp", "timestamptz"):
        return struct.pack("<q", _epoch_micros(value))
    if name == "string":
        return value.encode("utf-8")
    if name == "binary":
        return bytes(value)
    unscaled = int(value.scaleb(t.scale))  # decimal: the unscaled value, big-endian, fewest bytes
    return unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)


# ---- old versions ---------------------------------------------------------------------------
def _delete_old_versions(file_io: FileIO, directory: str, options: Mapping[str, str], current: int) -> int:
    """Delete metadata files older than the newest ``previous-versions-max`` before ``current``
    (with ``delete-after-commit.enabled``, true by default), and the manifest lists and
    manifests that only they name. Files a newer version names are kept."""
    keep_all = options.get(DELETE_AFTER_COMMIT, "true").strip().lower() != "true"
    keep = 10**9 if keep_all else max(0, int(options.get(PREVIOUS_VERSIONS_MAX, "0").strip() or 0))
    versions = sorted(int(m.group(1)) for n in file_io.list_names(directory)
                      if (m := _METADATA_NAME.fullmatch(n)))
    older = [v for v in versions if v < current]
    # Versions past the current one describe snapshots a rollback removed (a newer live one
    # would have stopped this sync before it wrote anything).
    doomed = older[:max(0, len(older) - keep)] + [v for v in versions if v > current]
    kept = [v for v in versions if v not in doomed]
    if not doomed:
        return 0
    named_by_kept = set().union(*(_files_named(file_io, directory, v) for v in kept))
    for v in doomed:
        for path in sorted(_files_named(file_io, directory, v) - named_by_kept):
            file_io.delete_quietly(path)
        file_io.delete_quietly(join(directory, f"v{v}.metadata.json"))
    return len(doomed)


def _files_named(file_io: FileIO, directory: str, version: int) -> set[str]:
    """The manifest lists and manifests a metadata file names (none when unreadable)."""
    text = file_io.read_text_if_exists(join(directory, f"v{version}.metadata.json"))
    try:
        snapshots = json.loads(text).get("snapshots", []) if text else []
    except ValueError:
        return set()
    names: set[str] = set()
    for snap in snapshots:
        list_path = snap.get("manifest-list")
        if not list_path:
            continue
        names.add(list_path)
        try:
            names.update(r["manifest_path"] for r in _avro_records(file_io.read_bytes(list_path)))
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            continue
    return names


def _avro_records(data: bytes) -> list[dict[str, Any]]:
    """The records of an Avro container file: fastavro reads every codec but snappy without
    more libraries; snappy blocks (lakectl's and Paimon's default) are decoded here."""
    import fastavro

    f = io.BytesIO(data)
    if f.read(4) != b"Obj\x01":
        raise ValueError("not an Avro container file")
    header = fastavro.schemaless_reader(f, {"type": "map", "values": "bytes"})
    if header.get("avro.codec", b"null") != b"snappy":
        return list(fastavro.reader(io.BytesIO(data)))
    import pyarrow as pa

    schema = fastavro.parse_schema(json.loads(header["avro.schema"]))
    f.read(16)
    records: list[dict[str, Any]] = []
    while f.tell() < len(data):
        count = fastavro.schemaless_reader(f, "long")
        block = f.read(fastavro.schemaless_reader(f, "long"))
        f.read(16)
        plain = io.BytesIO(_snappy_decompress(pa, block[:-4]))  # without the CRC-32
        records.extend(fastavro.schemaless_reader(plain, schema) for _ in range(count))
    return records


def _snappy_decompress(pa: Any, block: bytes) -> bytes:
    # A raw snappy block starts with the plain length as a varint.
    size, shift, i = 0, 0, 0
    while True:
        b = block[i]
        size |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if b < 0x80:
            break
    return pa.Codec("snappy").decompress(block, decompressed_size=size, asbytes=True)
