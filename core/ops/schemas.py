"""schemas: a table's schema history, and what changed between two schema versions.

The history is read from the ``schema-N`` files alone, so it describes schemas written by
any engine (Java, pypaimon, lakectl) the same way: fields are paired by field id, which is
what makes a rename a rename rather than a drop plus an add (spec §2.2).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from core.options import check_limit
from core.schema import TableSchema
from core.table_handle import TableHandle
from core.types import DataField


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    schema_id: int
    time: str  # ISO 8601, local time zone
    time_millis: int
    columns: int
    changes: tuple[str, ...]  # what this version changed relative to the previous one


def column_text(f: DataField) -> str:
    """``name TYPE [NOT NULL]``: a column as a user writes it in ``--schema``/``--add-column``."""
    return f"{f.name} {f.type}"


def describe_creation(schema: TableSchema) -> list[str]:
    """The changes of the first schema: the table's definition."""
    out = ["create table: " + ", ".join(column_text(f) for f in schema.fields)]
    if schema.primary_keys:
        out.append("primary key: " + ", ".join(schema.primary_keys))
    if schema.partition_keys:
        out.append("partitioned by: " + ", ".join(schema.partition_keys))
    out += [f"option {k}={v}" for k, v in sorted(schema.options.items())]
    if schema.comment:
        out.append(f"table comment: {schema.comment!r}")
    return out


def _position(fields: list[DataField], i: int, added: set[int]) -> str:
    """Where an added column went; nothing when only added columns follow it (appended)."""
    if all(f.id in added for f in fields[i + 1:]):
        return ""
    return " first" if i == 0 else f" after {fields[i - 1].name}"


def _column_changes(old: DataField, new: DataField) -> list[str]:
    out = []
    if old.name != new.name:
        out.append(f"rename column {old.name} to {new.name}")
    if old.type.root_text() != new.type.root_text():
        out.append(f"change type of {new.name} from {old.type.root_text()} to {new.type.root_text()}")
    if old.type.nullable != new.type.nullable:
        out.append(f"make {new.name} " + ("nullable" if new.type.nullable else "NOT NULL"))
    if old.description != new.description:
        out.append(f"comment on {new.name}: {new.description!r}" if new.description is not None
                   else f"remove comment of {new.name}")
    return out


def _field_changes(old: TableSchema, new: TableSchema) -> list[str]:
    old_by_id = {f.id: f for f in old.fields}
    new_ids = {f.id for f in new.fields}
    fields = list(new.fields)
    out = [f"drop column {f.name}" for f in old.fields if f.id not in new_ids]
    for f in old.fields:
        if f.id in new_ids:
            out += _column_changes(f, next(n for n in fields if n.id == f.id))
    added = {f.id for f in fields if f.id not in old_by_id}
    out += [f"add column {column_text(f)}{_position(fields, i, added)}" for i, f in enumerate(fields)
            if f.id in added]
    kept_old = [f.id for f in old.fields if f.id in new_ids]
    kept_new = [f.id for f in fields if f.id in old_by_id]
    if kept_old != kept_new:
        out.append("reorder columns: " + ", ".join(f.name for f in fields))
    return out


def _option_changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        if key not in new:
            out.append(f"reset option {key} (was {old[key]})")
        elif key not in old:
            out.append(f"set option {key}={new[key]}")
        elif old[key] != new[key]:
            out.append(f"set option {key}={new[key]} (was {old[key]})")
    return out


def describe_changes(old: TableSchema, new: TableSchema) -> list[str]:
    """What ``new`` changed relative to ``old``, one line per change, fields paired by id."""
    out = _field_changes(old, new)
    if old.primary_keys != new.primary_keys:
        out.append("primary key: " + ", ".join(new.primary_keys))
    if old.partition_keys != new.partition_keys:
        out.append("partitioned by: " + ", ".join(new.partition_keys))
    out += _option_changes(dict(old.options), dict(new.options))
    if old.comment != new.comment:
        out.append(f"table comment: {new.comment!r}")
    return out


def _local_time(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000).astimezone().isoformat(timespec="milliseconds")


def schema_history(table: TableHandle, *, limit: int | None = None) -> list[SchemaInfo]:
    """Schema versions newest first, each with what it changed.

    Ids can have gaps (Paimon's schema rollback deletes newer files); each version is
    compared with the nearest older one that exists.

    Raises:
        UsageError: a negative ``limit``.
        CorruptMetadataError: a schema file cannot be decoded.
    """
    check_limit(limit)
    ids = table.schemas.list_ids()
    shown = ids[::-1][:limit] if limit is not None else ids[::-1]
    out = []
    for sid in shown:
        schema = table.schemas.schema(sid)
        older = [i for i in ids if i < sid]
        changes = (describe_changes(table.schemas.schema(older[-1]), schema) if older
                   else describe_creation(schema))
        out.append(SchemaInfo(sid, _local_time(schema.time_millis), schema.time_millis, len(schema.fields),
                              tuple(changes)))
    return out
