"""Read-only views of a table and a warehouse: snapshot history, describe, list.

Metadata only: nothing here reads a data file or starts an engine.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from core.manifest import merge_entries, read_entries
from core.table import Table
from core.warehouse import Warehouse


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    snapshot_id: int
    schema_id: int
    commit_kind: str
    commit_time: str  # ISO 8601, local time zone
    delta_record_count: int
    total_record_count: int
    commit_time_millis: int
    commit_user: str


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    id: int
    name: str
    type: str
    nullable: bool
    primary_key: bool
    partition_key: bool
    comment: str | None


@dataclass(frozen=True, slots=True)
class TableDescription:
    table: str
    path: str
    schema_id: int
    columns: tuple[ColumnInfo, ...]
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    buckets: int
    bucket_keys: tuple[str, ...]
    options: dict[str, str]
    comment: str | None
    latest_snapshot_id: int | None
    file_count: int
    total_file_size: int
    total_record_count: int


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    database: str
    table: str | None


def history(table: Table, *, limit: int | None = None) -> list[SnapshotInfo]:
    """Snapshots newest first."""
    ids = table.snapshots.list_ids()[::-1]
    if limit is not None:
        ids = ids[:limit]
    out = []
    for sid in ids:
        s = table.snapshots.snapshot(sid)
        when = dt.datetime.fromtimestamp(s.time_millis / 1000).astimezone().isoformat(timespec="milliseconds")
        out.append(SnapshotInfo(s.id, s.schema_id, s.commit_kind, when, s.delta_record_count or 0,
                                s.total_record_count or 0, s.time_millis, s.commit_user))
    return out


def describe(table: Table) -> TableDescription:
    schema = table.schema
    latest = table.latest_snapshot()
    files = []
    if latest is not None:
        files = merge_entries(read_entries(table.manifests(), [latest.base_manifest_list,
                                                               latest.delta_manifest_list]))
    columns = tuple(
        ColumnInfo(f.id, f.name, f.type.root_text(), f.type.nullable, f.name in schema.primary_keys,
                   f.name in schema.partition_keys, f.description)
        for f in schema.fields)
    return TableDescription(
        table=table.name,
        path=table.path,
        schema_id=schema.id,
        columns=columns,
        primary_keys=schema.primary_keys,
        partition_keys=schema.partition_keys,
        buckets=schema.num_buckets,
        bucket_keys=tuple(schema.bucket_keys),
        options=dict(schema.options),
        comment=schema.comment,
        latest_snapshot_id=latest.id if latest else None,
        file_count=len(files),
        total_file_size=sum(e.file.file_size for e in files),
        total_record_count=latest.total_record_count if latest else 0,
    )


def list_catalog(warehouse: Warehouse, database: str | None = None) -> list[CatalogEntry]:
    """Databases of the warehouse, or the tables of one database."""
    if database is None:
        return [CatalogEntry(db, None) for db in warehouse.databases()]
    return [CatalogEntry(database, t) for t in warehouse.tables(database)]
