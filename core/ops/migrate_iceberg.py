"""migrate's plan for an Iceberg source (``--from iceberg``), as Paimon's ``migrate_iceberg_table``:
the current snapshot's Parquet data files become the files of a new unaware-bucket append
table, copied or moved, never rewritten (core/ops/migrate.py does the moving, journaling and
committing for both kinds of source).

- Columns keep their Iceberg field ids as Paimon field ids (nested struct fields too); types map
  one to one (core.iceberg.source.paimon_type), nullable unless required.
- Paimon reads a file's columns by the names of the schema the file was written with (its
  ``schema_id``), mapping them to the read schema by id; Iceberg files name their columns by
  field id in the Parquet schema, and a file written before a rename holds the old name. So each
  file is matched, by the field ids and names in its footer, to the newest Iceberg schema whose
  columns are exactly the file's (an identity partition column the file lacks aside), and the
  table gets one Paimon schema per Iceberg schema some file was written with, the current one
  last: renamed, added and dropped columns then read as Iceberg reads them.
- Identity partitions become partition columns, in the spec's order; their values come from the
  manifest entries (a file may lack its partition column; Paimon's readers fill it from the
  partition). Other transforms, and files of another partition spec, are refused.
- Position deletes and deletion vectors become Paimon deletion vectors of the migrated files
  (``deletion-vectors.enabled``), so no row is rewritten; equality deletes are refused.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from core.errors import InvalidDataError, UsageError
from core.fileio import FileIO
from core.iceberg import source as iceberg
from core.schema import TableSchema
from core.types import DataField, DataType, field_from_json, field_to_json


@dataclass(frozen=True, slots=True)
class PlannedFile:
    path: str
    target: str  # relative to the table
    size: int
    partition: tuple[Any, ...]  # JSON values (``from_json``)
    schema_id: int  # the Paimon schema it was written with
    deleted: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class IcebergPlan:
    columns: tuple[tuple[str, str], ...]  # the current schema's (name, type text)
    partition_keys: tuple[str, ...]
    files: tuple[PlannedFile, ...]
    warnings: tuple[str, ...]
    schemas: tuple[dict[str, Any], ...]  # the Paimon schemas, as ``table_schemas`` takes them
    options: tuple[tuple[str, str], ...]
    location: str  # the Iceberg table's


def plan(source: str, io_for: Callable[[str], FileIO],
         java_unreadable: Callable[[Any, Any], dict[str, str]]) -> IcebergPlan:
    """What migrating the Iceberg table ``source`` names (its current snapshot) takes;
    ``java_unreadable`` names a Parquet file's columns Java Paimon 1.0 cannot read."""
    metadata_path = iceberg.locate_metadata(source, io_for)
    table = iceberg.read_table(metadata_path, io_for)
    if not table.files:
        raise UsageError(f"Iceberg table {metadata_path} has no data files in its current snapshot")
    metadata = table.metadata
    schemas = {s["schema-id"]: s for s in metadata.get("schemas") or [metadata["schema"]]}
    current_id = metadata.get("current-schema-id", next(iter(schemas)))
    source_ids = _identity_partition(metadata, schemas[current_id], table.files)
    file_schemas, warnings = [], {}
    for f in table.files:
        footer = _footer(f.path, io_for)
        file_schemas.append(_written_with(f.path, footer.schema.to_arrow_schema(), schemas, current_id, source_ids))
        for column, reason in java_unreadable(footer.schema.to_arrow_schema(), footer).items():
            warnings[(column, reason)] = warnings.get((column, reason), 0) + 1
    used = sorted(set(file_schemas) - {current_id}) + [current_id]  # Paimon schema ids: positions here
    paimon = [_schema_json(schemas[i], source_ids) for i in used]
    options = _options(table)
    latest = _table_schema(paimon, len(paimon) - 1, options)
    prefix = f"data-{uuid.uuid4()}"
    files = []
    for i, (f, written_with) in enumerate(zip(table.files, file_schemas)):
        values = tuple(_to_json(v, t.type) for v, t in zip(f.partition, latest.partition_fields))
        directory = latest.partition_dir([from_json(v, t.type) for v, t in zip(values, latest.partition_fields)])
        target = f"{directory}/bucket-0/{prefix}-{i}.parquet" if directory else f"bucket-0/{prefix}-{i}.parquet"
        deleted = table.deleted.get(f.path, ())
        if deleted and deleted[-1] >= f.record_count:
            raise InvalidDataError(f"a position delete names row {deleted[-1]} of {f.path}, which has "
                                   f"{f.record_count} rows")
        files.append(PlannedFile(iceberg.local_or_uri(f.path), target, f.size, values, used.index(written_with),
                                 deleted))
    columns = tuple((f.name, str(f.type)) for f in latest.fields)
    notes = [f"column {name} of {count} file(s) is {reason}, which Java Paimon 1.0 cannot read (lakectl and "
             "pypaimon can)" for (name, reason), count in warnings.items()]
    return IcebergPlan(columns, latest.partition_keys, tuple(files), tuple(notes), tuple(paimon),
                       tuple(sorted(options.items())), iceberg.local_or_uri(table.location))


def _options(table: iceberg.IcebergTable) -> dict[str, str]:
    options = {"bucket": "-1", "file.format": "parquet"}
    if table.deleted:
        options["deletion-vectors.enabled"] = "true"
    return options


def _footer(path: str, io_for: Callable[[str], FileIO]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    local = iceberg.local_or_uri(path)
    try:
        with io_for(local).open_input(local) as handle:
            return pq.ParquetFile(handle).metadata
    except (pa.ArrowException, OSError) as e:
        raise InvalidDataError(f"cannot read Iceberg data file {local} as Parquet: {e}") from None


def _identity_partition(metadata: dict[str, Any], schema: dict[str, Any], files: Any) -> list[int]:
    """The source column ids of the default spec's partition fields, refusing other transforms
    and files of an older spec (Paimon has one partitioning per table)."""
    default = metadata.get("default-spec-id", 0)
    specs = {s["spec-id"]: s for s in metadata.get("partition-specs") or
             [{"spec-id": 0, "fields": metadata.get("partition-spec", [])}]}
    names = {f["id"]: f["name"] for f in schema["fields"]}
    for field in specs[default]["fields"]:
        if field["transform"] != "identity":
            raise UsageError(f"Iceberg partition field {field['name']} is {field['transform']}({names.get(field['source-id'], '?')}); "
                             "Paimon partitions by column values, so only identity partitions migrate")
    other = next((f for f in files if f.spec_id != default), None)
    if other is not None:
        raise UsageError(f"Iceberg data file {other.path} was written with partition spec {other.spec_id}, not the "
                         f"current spec {default}; rewrite the table's older files (partition evolution does not "
                         "migrate)")
    return [f["source-id"] for f in specs[default]["fields"]]


def _written_with(path: str, arrow_schema: Any, schemas: dict[int, dict[str, Any]], current_id: int,
                  partition_ids: list[int]) -> int:
    """The newest Iceberg schema (the current one first) whose top-level columns are the file's,
    by field id and name; a file without field ids is matched by names."""
    in_file = {}
    for field in arrow_schema:
        raw = (field.metadata or {}).get(b"PARQUET:field_id")
        in_file[int(raw) if raw is not None else field.name] = field.name
    order = [current_id] + sorted((i for i in schemas if i != current_id), reverse=True)
    for schema_id in order:
        columns = schemas[schema_id]["fields"]
        by_key = {(c["id"] if any(isinstance(k, int) for k in in_file) else c["name"]): c for c in columns}
        if all(k in by_key and by_key[k]["name"] == name for k, name in in_file.items()) and \
                all(k in in_file or c["id"] in partition_ids for k, c in by_key.items()):
            return schema_id
    raise UsageError(f"Iceberg data file {path} has columns {', '.join(in_file.values())}, which no schema of "
                     "the table has; lakectl cannot tell which columns they are")


def _schema_json(schema: dict[str, Any], partition_ids: list[int]) -> dict[str, Any]:
    fields = iceberg.paimon_fields(schema)
    by_id = {f.id: f.name for f in fields}
    return {"fields": [field_to_json(f) for f in fields], "partition_keys": [by_id[i] for i in partition_ids],
            "highest_field_id": _highest_id(fields)}


def _highest_id(fields: Any) -> int:
    out = -1
    for f in fields:
        out = max(out, f.id, _highest_id(_nested(f.type)))
    return out


def _nested(t: DataType) -> list[DataField]:
    if t.name == "ROW":
        return list(t.fields)
    inner = [x for x in (t.element, t.key, t.value) if x is not None]
    return [DataField(-1, "", x) for x in inner]


def table_schemas(schemas: Any, options: Any) -> list[TableSchema]:
    """The Paimon schemas of a plan (``IcebergPlan.schemas``, ``.options``), ``schema-0`` first."""
    return [_table_schema(schemas, i, dict(options)) for i in range(len(schemas))]


def _table_schema(schemas: Any, schema_id: int, options: dict[str, str]) -> TableSchema:
    """Paimon schema ``schema_id`` of the plan; every one has the table's options, and the
    highest field id of them all (Paimon's ids never go back)."""
    s = schemas[schema_id]
    return TableSchema(id=schema_id, fields=tuple(field_from_json(f) for f in s["fields"]),
                       highest_field_id=max(x["highest_field_id"] for x in schemas),
                       partition_keys=tuple(s["partition_keys"]), primary_keys=(), options=dict(options))


# ---- partition values in the journal -----------------------------------------------------------
def _to_json(value: Any, t: DataType) -> Any:
    """A partition value as fastavro decoded it, in JSON (dates, timestamps as epoch days and
    micros, decimals as text, bytes as hex)."""
    if value is None:
        return None
    if t.name == "DATE":
        return (value - dt.date(1970, 1, 1)).days if isinstance(value, dt.date) else int(value)
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if isinstance(value, dt.datetime):
            from core.iceberg.types import epoch_micros

            return epoch_micros(value)
        return int(value)
    if t.name == "DECIMAL":
        return str(value)
    if t.name in ("BINARY", "VARBINARY"):
        return bytes(value).hex()
    return value


def from_json(value: Any, t: DataType) -> Any:
    """A journaled partition value as lakectl's BinaryRow and stats take it."""
    if value is None:
        return None
    if t.name == "DATE":
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        at = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
        return at.replace(tzinfo=dt.timezone.utc) if t.name == "TIMESTAMP_LTZ" else at
    if t.name == "DECIMAL":
        return decimal.Decimal(value)
    if t.name in ("BINARY", "VARBINARY"):
        return bytes.fromhex(value)
    return value


__all__ = ["IcebergPlan", "PlannedFile", "from_json", "plan", "table_schemas"]
