"""Iceberg's Avro files: manifests and manifest lists (v2 and v3 schemas, with Iceberg's field ids)."""

from __future__ import annotations

import io
import json
from typing import Any

from core.fileio import join
from core.iceberg.column_stats import data_file_stats, empty_stats
from core.iceberg.metadata import partition_spec, schema_json
from core.iceberg.types import avro_partition_type, avro_value, comparable, single_value
from core.schema import TableSchema

def _map(name: str, key_id: int, value_id: int, value_type: str) -> dict[str, Any]:
    return {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": name, "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value_type, "field-id": value_id}]}}


# Format 3's data_file fields, in Java Paimon's order: a deletion vector's data file and where its
# blob is (null for data files), and the first row id (null: inherited from the manifest's).
_V3_DATA_FILE_FIELDS: list[dict[str, Any]] = [
    {"name": "referenced_data_file", "type": ["null", "string"], "default": None, "field-id": 143},
    {"name": "content_offset", "type": ["null", "long"], "default": None, "field-id": 144},
    {"name": "content_size_in_bytes", "type": ["null", "long"], "default": None, "field-id": 145},
    {"name": "first_row_id", "type": ["null", "long"], "default": None, "field-id": 142},
]
_V3_NULLS = {f["name"]: None for f in _V3_DATA_FILE_FIELDS}
_POSITION_DELETES = 1  # data_file content of a deletion vector; manifest content of a delete manifest


def _entry_schema(schema: TableSchema, format_version: int = 2) -> dict[str, Any]:
    partition = {"type": "record", "name": "r102", "fields": [
        {"name": f["name"], "type": avro_partition_type(schema.field(f["name"]).type, f["field-id"]),
         "default": None,
         "field-id": f["field-id"]} for f in partition_spec(schema)]}
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
    if format_version >= 3:
        data_file["fields"] += _V3_DATA_FILE_FIELDS
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

# Manifest entry status (Iceberg's): a file carried from an earlier snapshot, added by the
# manifest's snapshot, or removed by it.
EXISTING, ADDED, DELETED = 0, 1, 2


def data_file_path(table_path: str, schema: TableSchema, entry: Any) -> str:
    return entry.file.external_path or join(schema.bucket_dir(table_path, entry.partition, entry.bucket),
                                            entry.file.file_name)


def data_file_record(table_path: str, schema: TableSchema, entry: Any,
                     file_schema: TableSchema | None) -> dict[str, Any]:
    """A manifest entry's data_file: where the file is, its partition, size, row count and
    column stats (from Paimon's value stats; none when its schema is not at hand)."""
    if file_schema is None and entry.file.schema_id == schema.id:
        file_schema = schema
    column_stats = data_file_stats(schema, file_schema, entry.file) if file_schema is not None else empty_stats()
    return {"content": 0, "file_path": data_file_path(table_path, schema, entry), "file_format": "PARQUET",
            "partition": _partition_record(schema, entry), "record_count": entry.file.row_count,
            "file_size_in_bytes": entry.file.file_size, **column_stats}


def _partition_record(schema: TableSchema, entry: Any) -> dict[str, Any]:
    values = schema.partition_values(entry.partition)
    return {f.name: avro_value(v, f.type) for f, v in zip(schema.partition_fields, values)}


def _avro_bytes(schema: dict[str, Any], records: list[dict[str, Any]], codec: str,
                metadata: dict[str, str]) -> bytes:
    """An Avro object container file of ``records`` with Iceberg's header keys (``metadata``);
    fastavro keeps the schema's ``field-id`` attributes in the header (snappy through cramjam,
    fastavro's own snappy dependency)."""
    import fastavro

    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, metadata=metadata)
    return out.getvalue()


def delete_file_record(schema: TableSchema, puffin_path: str, puffin_size: int, vector: Any) -> dict[str, Any]:
    """A deletion vector's data_file (``IcebergDeletionVector``): a position-delete file in its
    data file's partition, pointing at its blob in the Puffin file, its record count the number
    of deleted rows."""
    return {"content": _POSITION_DELETES, "file_path": puffin_path, "file_format": "PUFFIN",
            "partition": _partition_record(schema, vector.entry), "record_count": vector.cardinality,
            "file_size_in_bytes": puffin_size, **empty_stats(), **_V3_NULLS,
            "referenced_data_file": vector.data_file_path, "content_offset": vector.offset,
            "content_size_in_bytes": vector.size}


def _manifest_header(schema: TableSchema, format_version: int, content: str) -> dict[str, str]:
    return {"schema": json.dumps(schema_json(schema)), "schema-id": str(schema.id),
            "partition-spec": json.dumps(partition_spec(schema)), "partition-spec-id": "0",
            "format-version": str(format_version), "content": content}


def _summaries(schema: TableSchema, partitions: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Per partition field of the manifest: whether a null occurs and the least and greatest
    value in Iceberg's single-value encoding (readers prune manifests by them; Java's reader
    requires the list). ``partitions``: each entry's values, from Paimon's row or from an Avro
    record read back (``comparable`` puts both in one order)."""
    columns = list(zip(*partitions)) if partitions else [() for _ in schema.partition_fields]
    out = []
    for f, values in zip(schema.partition_fields, columns):
        present = [comparable(v, f.type) for v in values if v is not None]
        floating = f.type.name in ("FLOAT", "DOUBLE")
        nan = any(v != v for v in present) if floating else False  # Java reads it as non-null
        ordered = [v for v in present if v == v]
        out.append({"contains_null": len(present) < len(values), "contains_nan": nan,
                    "lower_bound": single_value(min(ordered), f.type) if ordered else None,
                    "upper_bound": single_value(max(ordered), f.type) if ordered else None})
    return out


# ---- format 2 manifests of a history (core/iceberg/history.py): entries of any status ----------
def entry_record(status: int, snapshot_id: int, sequence_number: int, file: dict[str, Any]) -> dict[str, Any]:
    """A manifest entry: ``snapshot_id`` added (or, DELETED, removed) the file, whose data
    sequence number is the snapshot that added it."""
    return {"status": status, "snapshot_id": snapshot_id, "sequence_number": sequence_number,
            "file_sequence_number": sequence_number, "data_file": file}


def records_manifest(schema: TableSchema, records: list[dict[str, Any]], codec: str, *, format_version: int = 2,
                     content: int = 0) -> bytes:
    """A data (``content`` 0) or, in format 3, delete manifest (1) of manifest-entry records
    (``entry_record``, or read back); format 3's data_file fields default to null."""
    if format_version >= 3:
        records = [{**r, "data_file": {**_V3_NULLS, **r["data_file"]}} for r in records]
    return _avro_bytes(_entry_schema(schema, format_version), records, codec,
                       _manifest_header(schema, format_version, "deletes" if content else "data"))


def records_list_record(manifest_path: str, manifest_length: int, snapshot_id: int,
                        records: list[dict[str, Any]], schema: TableSchema, content: int = 0) -> dict[str, Any]:
    """The manifest list's line of a manifest written by ``snapshot_id`` holding ``records``
    (``content``: 0 data, 1 deletion vectors)."""
    def count(status: int) -> int:
        return sum(1 for r in records if r["status"] == status)

    def rows(status: int) -> int:
        return sum(r["data_file"]["record_count"] for r in records if r["status"] == status)

    partitions = [tuple(r["data_file"]["partition"].get(f.name) for f in schema.partition_fields) for r in records]
    return {"manifest_path": manifest_path, "manifest_length": manifest_length, "partition_spec_id": 0,
            "content": content, "sequence_number": snapshot_id,
            "min_sequence_number": min((r["sequence_number"] for r in records), default=snapshot_id),
            "added_snapshot_id": snapshot_id, "added_files_count": count(ADDED),
            "existing_files_count": count(EXISTING), "deleted_files_count": count(DELETED),
            "added_rows_count": rows(ADDED), "existing_rows_count": rows(EXISTING),
            "deleted_rows_count": rows(DELETED), "partitions": _summaries(schema, partitions)}


_V3_LIST_SCHEMA: dict[str, Any] = {**_LIST_SCHEMA, "fields": _LIST_SCHEMA["fields"] + [
    {"name": "first_row_id", "type": ["null", "long"], "default": None, "field-id": 520}]}


def records_manifest_list(records: list[dict[str, Any]], snapshot_id: int, codec: str, *,
                          format_version: int = 2) -> bytes:
    """A manifest list of manifest-list lines (``records_list_record``, or read back); in
    format 3 with each data manifest's ``first_row_id``."""
    metadata = {"snapshot-id": str(snapshot_id), "sequence-number": str(snapshot_id),
                "format-version": str(format_version)}
    if format_version >= 3:
        return _avro_bytes(_V3_LIST_SCHEMA, [{"first_row_id": None, **r} for r in records], codec, metadata)
    return _avro_bytes(_LIST_SCHEMA, records, codec, metadata)


def avro_records(data: bytes) -> list[dict[str, Any]]:
    """The records of an Avro container file, in any codec (snappy through cramjam)."""
    import fastavro

    return list(fastavro.reader(io.BytesIO(data)))
