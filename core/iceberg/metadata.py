"""The metadata JSON (v<N>.metadata.json): schema, partition spec, snapshots, name mapping."""

from __future__ import annotations

import json
import uuid
from typing import Any, Mapping

from core.fileio import FileIO, join
from core.iceberg.options import VERSION_HINT, storage
from core.iceberg.types import iceberg_type
from core.schema import TableSchema

_PARTITION_FIELD_ID_START = 1000  # Iceberg's first partition field id


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



def current_metadata(file_io: FileIO, directory: str) -> dict[str, Any] | None:
    hint = file_io.read_text_if_exists(join(directory, VERSION_HINT))
    if hint is None or not hint.strip().isdigit():
        return None
    text = file_io.read_text_if_exists(join(directory, f"v{hint.strip()}.metadata.json"))
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return None


def schema_json(schema: TableSchema) -> dict[str, Any]:
    # Iceberg field ids are Paimon's (Parquet files carry them), so readers map columns by id.
    return {"type": "struct", "schema-id": schema.id, "fields": [
        {"id": f.id, "name": f.name, "required": not f.type.nullable, "type": iceberg_type(f.type)}
        for f in schema.fields]}


def partition_spec(schema: TableSchema) -> list[dict[str, Any]]:
    return [{"name": f.name, "transform": "identity", "source-id": f.id, "field-id": _PARTITION_FIELD_ID_START + i}
            for i, f in enumerate(schema.partition_fields)]


def metadata_json(table_path: str, schema: TableSchema, snapshot: Any, list_path: str,
              previous: dict[str, Any] | None) -> dict[str, Any]:
    spec = partition_spec(schema)
    table_uuid = (previous or {}).get("table-uuid") or str(uuid.uuid4())
    return {
        "format-version": 2,
        "table-uuid": table_uuid,
        "location": iceberg_location(table_path, schema.options),
        "last-sequence-number": snapshot.id,
        "last-updated-ms": snapshot.time_millis,
        "last-column-id": max([schema.highest_field_id, *(f.id for f in schema.fields)]),
        "schemas": [schema_json(schema)],
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


def name_mapping(file_io: FileIO, table_path: str, schema: TableSchema, visible: list[Any]) -> list[dict[str, Any]]:
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

