"""The metadata JSON (v<N>.metadata.json): schema, partition spec, snapshots, name mapping."""

from __future__ import annotations

from typing import Any, Mapping

from core.fileio import FileIO, join
from core.iceberg.options import storage
from core.iceberg.types import field_ids, iceberg_field, list_element_id, map_key_id, map_value_id
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



def schema_json(schema: TableSchema) -> dict[str, Any]:
    # Iceberg field ids are Paimon's, row fields' too; list elements and map keys and values
    # get the ids Paimon derives for them (core/iceberg/types.py).
    return {"type": "struct", "schema-id": schema.id, "fields": [iceberg_field(f) for f in schema.fields]}


def last_column_id(schema: TableSchema) -> int:
    """The highest field id the Iceberg schema uses, nested ones included (Iceberg assigns new
    columns ids above it)."""
    return max([schema.highest_field_id, *field_ids(schema_json(schema))])


def partition_spec(schema: TableSchema) -> list[dict[str, Any]]:
    return [{"name": f.name, "transform": "identity", "source-id": f.id, "field-id": _PARTITION_FIELD_ID_START + i}
            for i, f in enumerate(schema.partition_fields)]


def first_row_id(previous: dict[str, Any] | None) -> int:
    """Format 3: the first row id this version may hand out, the previous version's
    ``next-row-id`` (ids already seen by readers are never reused), 0 without one."""
    return int((previous or {}).get("next-row-id") or 0)


def history_metadata_json(table_path: str, schema: TableSchema, schemas: list[TableSchema],
                          snapshots: list[dict[str, Any]], refs: dict[str, int], table_uuid: str,
                          metadata_log: list[dict[str, Any]], *, format_version: int = 2,
                          next_row_id: int | None = None) -> dict[str, Any]:
    """A metadata file whose current snapshot is the last of ``snapshots`` (Iceberg snapshot
    JSON, oldest first): ``schemas`` those the snapshots use and the current ``schema``;
    ``refs`` (tag name -> snapshot id) as tags beside ``main``; in format 3 the table's
    ``next-row-id``."""
    spec = partition_spec(schema)
    current = snapshots[-1]
    lineage = {"next-row-id": next_row_id or 0} if format_version >= 3 else {}
    return {
        "format-version": format_version,
        "table-uuid": table_uuid,
        "location": iceberg_location(table_path, schema.options),
        "last-sequence-number": current["sequence-number"],
        "last-updated-ms": current["timestamp-ms"],
        "last-column-id": max(last_column_id(s) for s in schemas),
        "schemas": [schema_json(s) for s in sorted(schemas, key=lambda s: s.id)],
        "current-schema-id": schema.id,
        "partition-specs": [{"spec-id": 0, "fields": spec}],
        "default-spec-id": 0,
        "last-partition-id": _PARTITION_FIELD_ID_START + len(spec) - 1,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0,
        "properties": {},
        "current-snapshot-id": current["snapshot-id"],
        "refs": {"main": {"snapshot-id": current["snapshot-id"], "type": "branch"},
                 **{name: {"snapshot-id": sid, "type": "tag"} for name, sid in sorted(refs.items())}},
        "snapshots": snapshots,
        # Each snapshot became the current one when it was committed (a rollback's target
        # is the last here, and the snapshots it removed are gone).
        "snapshot-log": [{"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]} for s in snapshots],
        "metadata-log": metadata_log,
        **lineage,
    }


NAME_MAPPING = "schema.name-mapping.default"


def file_schemas(file_io: FileIO, table_path: str, schema: TableSchema, visible: list[Any]) -> dict[int, TableSchema]:
    """The schemas the ``visible`` files were written under, by id (``schema`` for its own)."""
    from core.schema import SchemaManager

    manager = SchemaManager(file_io, table_path)
    older = sorted({e.file.schema_id for e in visible} - {schema.id})
    return {schema.id: schema, **{i: manager.schema(i) for i in older}}


def name_mapping(file_io: FileIO, table_path: str, schema: TableSchema, visible: list[Any],
                 schemas: Mapping[int, TableSchema] | None = None) -> list[dict[str, Any]]:
    """Iceberg's name mapping: Paimon's Parquet files carry no field ids, so readers find a
    field's column by name, under every name it had in the schemas of the files they read
    (a renamed column keeps its id; a primary-key file's ``_KEY_`` and system columns map to
    nothing and are not read). Nested fields are mapped inside their column: a row's fields by
    their names, a list's element as ``element``, a map's key and value as ``key`` and
    ``value`` (the names of lakectl's Parquet groups as Arrow reads them)."""
    if schemas is None:
        schemas = file_schemas(file_io, table_path, schema, visible)
    mapping: dict[int, _Mapped] = {}
    # The current schema first, so its names come first; a dropped column's id is in no
    # current field: mapped all the same, so that readers know the file's column and skip it
    # (pyiceberg refuses an unmapped one).
    for s in [schema, *(schemas[i] for i in sorted(schemas) if i != schema.id)]:
        _map_fields(mapping, s.fields)
    out = [m.json() for m in mapping.values()]
    # A primary-key file's own columns, under Paimon's ids for them (outside any schema's, so
    # readers map and skip them: pyiceberg refuses a file column the mapping does not name).
    if schema.has_primary_key:
        out += [{"field-id": _KEY_FIELD_ID_START + f.id, "names": [f"_KEY_{n}" for n in mapping[f.id].names]}
                for f in schema.key_fields]
        out += [{"field-id": _SEQUENCE_NUMBER_ID, "names": ["_SEQUENCE_NUMBER"]},
                {"field-id": _VALUE_KIND_ID, "names": ["_VALUE_KIND"]}]
    return out


class _Mapped:
    """One field of the name mapping being built: its names and its nested fields by id."""

    def __init__(self, field_id: int) -> None:
        self.field_id = field_id
        self.names: list[str] = []
        self.fields: dict[int, _Mapped] = {}

    def named(self, name: str) -> "_Mapped":
        if name not in self.names:
            self.names.append(name)
        return self

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field-id": self.field_id, "names": self.names}
        if self.fields:
            out["fields"] = [m.json() for m in self.fields.values()]
        return out


def _map_fields(into: dict[int, _Mapped], fields: Any) -> None:
    for f in fields:
        node = into.setdefault(f.id, _Mapped(f.id)).named(f.name)
        _map_nested(node.fields, f.type, f.id, 0)


def _map_nested(into: dict[int, _Mapped], t: Any, field_id: int, depth: int) -> None:
    """The nested fields of a column of type ``t`` (numbered as core/iceberg/types.py does)."""
    if t.name == "ROW":
        _map_fields(into, t.fields)
    elif t.name == "ARRAY":
        element_id = list_element_id(field_id, depth + 1)
        node = into.setdefault(element_id, _Mapped(element_id)).named("element")
        _map_nested(node.fields, t.element, field_id, depth + 1)
    elif t.name == "MAP":
        key_id, value_id = map_key_id(field_id, depth + 1), map_value_id(field_id, depth + 1)
        key = into.setdefault(key_id, _Mapped(key_id)).named("key")
        _map_nested(key.fields, t.key, field_id, depth + 1)
        value = into.setdefault(value_id, _Mapped(value_id)).named("value")
        _map_nested(value.fields, t.value, field_id, depth + 1)


# Paimon's ids of a primary-key data file's system columns (its SpecialFields).
_KEY_FIELD_ID_START = 2**31 // 2
_SEQUENCE_NUMBER_ID = 2**31 - 2
_VALUE_KIND_ID = 2**31 - 3

