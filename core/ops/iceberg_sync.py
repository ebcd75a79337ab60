"""iceberg-sync: write a table's Iceberg metadata anew from its latest snapshot.

Every commit of a table with ``metadata.iceberg.storage`` writes its Iceberg metadata after
the publish (core/iceberg/); a commit killed in between, a failure there (a warning), or
the option set on a table that already has snapshots leave the metadata behind. This writes
it for the latest snapshot, as a commit would; it commits nothing to the Paimon table.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import UsageError
from core.option_rules import WRITE, check_options
from core.table_handle import TableHandle


@dataclass(frozen=True, slots=True)
class IcebergSyncResult:
    table: str
    branch: str
    snapshot_id: int | None  # the Paimon (and Iceberg) snapshot; None on a table without snapshots
    metadata_file: str | None  # the v<N>.metadata.json written (or, dry, to be written)
    data_files: int  # the files Iceberg readers see (a primary-key table's top level)
    record_count: int
    deleted_versions: int  # older metadata files removed (previous-versions-max)
    dry_run: bool


def iceberg_sync(table: TableHandle, *, dry_run: bool = False) -> IcebergSyncResult:
    from core import iceberg

    if table.branch != "main":
        raise UsageError("iceberg-sync works on main only: Iceberg metadata follows the main branch")
    if not iceberg.enabled(table.schema.options):
        raise UsageError(f"table {table.name} does not set metadata.iceberg.storage (table-location or "
                         "hadoop-catalog); lakectl alter-schema --set-option sets it")
    check_options(table.schema, table.name, WRITE)
    latest = table.latest_snapshot()
    if latest is None:
        return IcebergSyncResult(table.name, table.branch, None, None, 0, 0, 0, dry_run)
    # Rebuilt from the Paimon snapshots (a repair): nothing of the current metadata is reused.
    result = iceberg.sync(table.file_io, table.path, table.schema, latest, full=True, dry_run=dry_run)
    return IcebergSyncResult(table.name, table.branch, result.snapshot_id, result.metadata_file, result.data_files,
                             result.record_count, result.deleted_versions, dry_run)


def keeps_iceberg(table: TableHandle) -> bool:
    """Does this view of the table keep Iceberg metadata (main of a table that asks for it)?
    The option keys are looked at first: other tables never import the Iceberg package."""
    options = table.schema.options
    if table.branch != "main" or not any(k.startswith("metadata.iceberg") for k in options):
        return False
    from core import iceberg

    return iceberg.enabled(options)


def refresh_iceberg(table: TableHandle) -> None:
    """After an expire, a tag created or deleted: a table keeping Iceberg metadata gets its
    latest version rewritten in place (expired snapshots gone, tags as refs). Never raises."""
    if keeps_iceberg(table):
        from core import iceberg

        iceberg.after_change(table.file_io, table.path, table.schema)


__all__ = ["IcebergSyncResult", "iceberg_sync", "keeps_iceberg", "refresh_iceberg"]
