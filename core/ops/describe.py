"""Read-only views of a table and a warehouse: describe, list (the snapshot history is in
core/ops/history.py, which a snapshots listing imports alone).

Metadata only: nothing here reads a data file or starts an engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from core.options import check_limit
from core.partition import partition_spec_text
from core.table_handle import TableHandle

if TYPE_CHECKING:
    from core.catalog.base import Catalog
    from core.warehouse import Warehouse


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
    branch: str  # whose schema, snapshots and files these are (main unless --branch)
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


def describe(table: TableHandle, snapshot_id: int | None = None) -> TableDescription:
    """The table as of ``snapshot_id`` (its schema, files and record count), else as of the latest
    snapshot; ``latest_snapshot_id`` is the table's latest either way."""
    schema = table.schema
    latest = table.latest_snapshot()
    if snapshot_id is not None:
        snapshot = table.snapshots.snapshot(snapshot_id)
        schema = table.schemas.schema(snapshot.schema_id)
    else:
        snapshot = latest
    files = []
    if snapshot is not None:
        from core.manifest import live_entries  # fastavro: not for the snapshot history

        files = live_entries(table.manifests(), snapshot)
    columns = tuple(
        ColumnInfo(f.id, f.name, f.type.root_text(), f.type.nullable, f.name in schema.primary_keys,
                   f.name in schema.partition_keys, f.description)
        for f in schema.fields)
    return TableDescription(
        table=table.name,
        path=table.path,
        branch=table.branch,
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
        total_record_count=snapshot.total_record_count if snapshot else 0,
    )


def list_catalog(catalog: Catalog | Warehouse, database: str | None = None) -> list[CatalogEntry]:
    """Databases of the catalog, or the tables of one database: a filesystem warehouse's
    directories, a JDBC catalog's registry rows."""
    from core.catalog.filesystem import as_catalog

    catalog = as_catalog(catalog)
    if database is None:
        return [CatalogEntry(db, None) for db in catalog.databases()]
    return [CatalogEntry(database, t) for t in catalog.tables(database)]


@dataclass(frozen=True, slots=True)
class FileInfo:
    partition: dict[str, Any]
    bucket: int
    level: int
    row_count: int
    file_size: int
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    file_name: str
    deleted_rows: int = 0  # rows the file's deletion vector marks deleted (deletion-vectors.enabled)


def live_files(table: TableHandle, snapshot_id: int | None = None, *,
               partitions: Sequence[Mapping[str, str]] | None = None, limit: int | None = None) -> list[FileInfo]:
    """The live data files of a snapshot (the latest by default), by partition, bucket, level, name:
    only those of ``partitions`` (specs as ``compact --partition`` takes them), the first
    ``limit`` of them.

    Raises:
        NotFoundError: the snapshot does not exist.
        UsageError: a spec names a column that is not a partition column.
    """
    check_limit(limit)
    snap = table.snapshots.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()
    schema = table.schemas.schema(snap.schema_id) if snap is not None else table.schema
    selected: Callable[[tuple], bool] = lambda values: True
    if partitions is not None:
        from core.ops.compact_planning import partition_filter

        selected = partition_filter(schema, partitions)
    if snap is None:
        return []
    fields = schema.partition_fields
    types = [f.type for f in fields]
    decoded: dict[bytes, dict[str, Any] | None] = {}
    out = []
    from core import binary_row
    from core.deletion_vectors import read_vector, snapshot_deletion_files
    from core.manifest import live_entries

    vectors = snapshot_deletion_files(table.file_io, table.path, snap)
    for e in live_entries(table.manifests(), snap):
        if e.partition not in decoded:
            values = binary_row.decode(e.partition, types)
            decoded[e.partition] = partition_spec_text(values, fields) if selected(tuple(values)) else None
        if decoded[e.partition] is None:
            continue
        f = e.file
        deletion = vectors.get((e.partition, e.bucket), {}).get(f.file_name)
        deleted = 0
        if deletion is not None:
            deleted = deletion.cardinality if deletion.cardinality is not None \
                else len(read_vector(table.file_io, deletion))
        out.append(FileInfo(decoded[e.partition], e.bucket, f.level, f.row_count, f.file_size,
                            f.min_sequence_number, f.max_sequence_number, f.schema_id, f.file_name, deleted))
    out.sort(key=lambda i: (tuple(str(v) for v in i.partition.values()), i.bucket, i.level, i.file_name))
    return out if limit is None else out[:limit]
