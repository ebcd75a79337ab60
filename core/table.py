"""Table: the Python API over one Paimon table.

    t = Table.open("db.orders", warehouse="./warehouse")
    t.write(arrow_table)
    t.scan(snapshot_id=3, where="dt = '2024-01-01'")
    t.history()

A ``TableHandle`` (where the table lives, its metadata) whose methods are thin calls into
``core.ops``. This module is the top of core: nothing in core imports it, so an operation's
import never pulls in every other operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

from core.table_handle import DEFAULT_WAREHOUSE, TableHandle

if TYPE_CHECKING:
    import pyarrow as pa

    from core.engines import EngineSettings
    from core.evolution import SchemaChange
    from core.ops.alter import AlterResult
    from core.ops.compact import CompactResult
    from core.ops.delete import DeleteResult
    from core.ops.describe import FileInfo, TableDescription
    from core.ops.history import SnapshotInfo
    from core.ops.expire import ExpireResult
    from core.ops.follow import ChangeBatch
    from core.ops.iceberg_sync import IcebergSyncResult
    from core.ops.lookup import LookupResult
    from core.ops.orphans import OrphanResult
    from core.ops.rollback import RollbackResult
    from core.ops.schemas import SchemaInfo
    from core.ops.truncate import DropPartitionResult, TruncateResult
    from core.ops.missing_files import MissingFilesResult
    from core.ops.write import WriteResult

__all__ = ["DEFAULT_WAREHOUSE", "Table", "TableHandle"]


class Table(TableHandle):
    """A table with its operations as methods (``core.ops``)."""

    # ---- operations ----------------------------------------------------------------
    def write(self, data: Any, *, mode: str = "append", row_kind_column: str | None = None,
              engine_settings: "EngineSettings | None" = None) -> "WriteResult":
        """Write an Arrow table (local engine unless large) or a Spark DataFrame (Spark) as one snapshot."""
        from core.ops.write import write

        return write(self, data, mode=mode, row_kind_column=row_kind_column, engine_settings=engine_settings)

    def scan(self, *, snapshot_id: int | None = None, timestamp: str | None = None, tag: str | None = None,
             select: Sequence[str] | None = None, where: str | None = None, limit: int | None = None,
             engine_settings: "EngineSettings | None" = None) -> "pa.Table":
        from core.ops.scan import scan

        return scan(self, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, select=select, where=where,
                    limit=limit, engine_settings=engine_settings)

    def changes(self, start: int | str, end: int | str, *, select: Sequence[str] | None = None,
                where: str | None = None, limit: int | None = None,
                engine_settings: "EngineSettings | None" = None, mode: str | None = None) -> "pa.Table":
        """What changed in snapshots ``start+1 .. end`` (or between two tags): a ``_row_kind``
        column (+I, -U, +U, -D) and the table's columns, from changelog files where the table
        produces them (``mode``: ``incremental-between-scan-mode``, see core.ops.changes)."""
        from core.ops.changes import changes

        return changes(self, start, end, select=select, where=where, limit=limit, engine_settings=engine_settings,
                       mode=mode)

    def follow(self, *, mode: str | None = None, snapshot_id: int | None = None, timestamp_millis: int | None = None,
               consumer_id: str | None = None, bounded_watermark: int | None = None,
               max_snapshots: int | None = None, poll_seconds: float | None = None,
               select: Sequence[str] | None = None, where: str | None = None) -> Iterator["ChangeBatch"]:
        """Streaming read: yield each snapshot's rows (``ChangeBatch``) as it commits, starting
        as Paimon's ``scan.mode`` says; the table's ``scan.*`` options are the defaults. With
        ``consumer_id`` the position is kept in ``consumer/consumer-<id>``. Runs until
        ``max_snapshots`` or ``bounded_watermark``, or for as long as the caller iterates."""
        from core.ops.follow import follow, resolve_settings

        settings = resolve_settings(self.schema.options, mode=mode, snapshot_id=snapshot_id,
                                    timestamp_millis=timestamp_millis, bounded_watermark=bounded_watermark,
                                    consumer_id=consumer_id, poll_seconds=poll_seconds)
        return follow(self, settings, max_snapshots=max_snapshots, select=select, where=where)

    def read_stream(self, *, mode: str | None = None, snapshot_id: int | None = None,
                    timestamp_millis: int | None = None, consumer_id: str | None = None,
                    bounded_watermark: int | None = None, engine_settings: "EngineSettings | None" = None) -> Any:
        """``follow`` for Spark Structured Streaming: a streaming DataFrame (``_row_kind`` first)
        whose micro-batches read the snapshots committed since the last one; Spark's checkpoint
        keeps the position, and a consumer id also records it for expiration."""
        from dataclasses import replace

        from core.engines import EngineSettings, choose_engine
        from core.ops.spark_stream import read_stream
        from core.ops.follow import resolve_settings

        settings = resolve_settings(self.schema.options, mode=mode, snapshot_id=snapshot_id,
                                    timestamp_millis=timestamp_millis, bounded_watermark=bounded_watermark,
                                    consumer_id=consumer_id, poll_seconds=1.0)
        engine, _ = choose_engine(replace(engine_settings or EngineSettings(), engine="spark"))
        return read_stream(engine.session, self, settings)

    def to_spark(self, *, snapshot_id: int | None = None, timestamp: str | None = None, tag: str | None = None,
                 select: Sequence[str] | None = None, where: str | None = None,
                 engine_settings: "EngineSettings | None" = None) -> Any:
        """A Spark DataFrame of the table (uses the active SparkSession if there is one)."""
        from core.ops.scan import to_spark

        return to_spark(self, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag, select=select, where=where,
                        engine_settings=engine_settings)

    def compact(self, *, full: bool = True, partitions: Sequence[dict[str, str]] | None = None,
                dry_run: bool = False, engine_settings: "EngineSettings | None" = None) -> "CompactResult":
        """Compact the table's buckets (those of ``partitions`` only, if given) as one COMPACT snapshot."""
        from core.ops.compact import compact

        return compact(self, full=full, partitions=partitions, dry_run=dry_run, engine_settings=engine_settings)

    def iceberg_sync(self, *, dry_run: bool = False) -> "IcebergSyncResult":
        """Write the table's Iceberg metadata anew from its latest snapshot (metadata.iceberg.storage)."""
        from core.ops.iceberg_sync import iceberg_sync

        return iceberg_sync(self, dry_run=dry_run)

    def delete(self, where: str, *, dry_run: bool = False,
               engine_settings: "EngineSettings | None" = None) -> "DeleteResult":
        """Delete the rows ``where`` matches: -D records on a primary-key table (APPEND), the
        touched files rewritten without them on an append table (OVERWRITE)."""
        from core.ops.delete import delete

        return delete(self, where, dry_run=dry_run, engine_settings=engine_settings)

    def expire(self, *, retain_min: int | None = None, retain_max: int | None = None,
               older_than: str | None = None, max_deletes: int | None = None,
               dry_run: bool = True) -> "ExpireResult":
        """Expire old snapshots and the files only they reference. A dry run (the default) only
        reports what would go; pass ``dry_run=False`` to delete. Unset options come from the
        table's ``snapshot.*`` retention options."""
        from core.ops.expire import expire_snapshots

        if not dry_run:
            self.refuse_unfinished_fast_forward("expire snapshots")
        return expire_snapshots(self, retain_min=retain_min, retain_max=retain_max, older_than=older_than,
                                max_deletes=max_deletes, dry_run=dry_run)

    def rollback(self, *, snapshot_id: int | None = None, tag: str | None = None, if_latest: int | None = None,
                 dry_run: bool = True, as_latest: bool = False) -> "RollbackResult":
        """Make ``snapshot_id`` (or ``tag``'s snapshot) the latest; dry run unless ``dry_run=False``.
        ``as_latest``: as a new snapshot with the target's contents, removing nothing."""
        from core.ops.rollback import rollback

        return rollback(self, snapshot_id=snapshot_id, tag=tag, if_latest=if_latest, dry_run=dry_run,
                        as_latest=as_latest)

    def truncate(self, *, dry_run: bool = True) -> "TruncateResult":
        """Delete every row as one OVERWRITE snapshot; dry run unless ``dry_run=False``."""
        from core.ops.truncate import truncate

        return truncate(self, dry_run=dry_run)

    def remove_unexisting_files(self, *, dry_run: bool = True) -> "MissingFilesResult":
        """Remove the latest snapshot's entries of data files that are gone, as one APPEND snapshot
        (their rows are lost); dry run unless ``dry_run=False``."""
        from core.ops.missing_files import remove_unexisting_files

        return remove_unexisting_files(self, dry_run=dry_run)

    def drop_partitions(self, partitions: Sequence[dict[str, str]], *, dry_run: bool = True) -> "DropPartitionResult":
        """Delete the rows of ``partitions`` (each naming every partition column) as one OVERWRITE
        snapshot; dry run unless ``dry_run=False``."""
        from core.ops.truncate import drop_partitions

        return drop_partitions(self, partitions, dry_run=dry_run)

    def remove_orphan_files(self, *, older_than: str = "1d", dry_run: bool = True,
                            force: bool = False) -> "OrphanResult":
        """Delete unreferenced files older than ``older_than``; dry run unless ``dry_run=False``.
        An age under one hour needs ``force`` (no writer of the table is running)."""
        from core.ops.orphans import remove_orphan_files

        return remove_orphan_files(self, older_than=older_than, dry_run=dry_run, force=force)

    def files(self, *, snapshot_id: int | None = None) -> list["FileInfo"]:
        """Live data files of a snapshot (the latest by default)."""
        from core.ops.describe import live_files

        return live_files(self, snapshot_id)

    def history(self, limit: int | None = None) -> list["SnapshotInfo"]:
        from core.ops.history import history

        return history(self, limit=limit)

    def describe(self) -> "TableDescription":
        from core.ops.describe import describe

        return describe(self)

    def alter(self, changes: Sequence["SchemaChange"], *, dry_run: bool = False) -> "AlterResult":
        """Apply schema changes (``core.evolution``: AddColumn, RenameColumn, ...) in order as one
        new schema; data files are never rewritten. ``dry_run`` only checks and reports."""
        from core.ops.alter import alter

        return alter(self, changes, dry_run=dry_run)

    def schema_history(self, limit: int | None = None) -> list["SchemaInfo"]:
        """Schema versions newest first, each with what it changed."""
        from core.ops.schemas import schema_history

        return schema_history(self, limit=limit)

    def lookup(self, keys: Sequence[Any], *, snapshot_id: int | None = None,
               select: Sequence[str] | None = None) -> "LookupResult":
        """Rows by primary key (``"id=42"``, ``"id=42,dt=2024-01-01"`` or ``{"id": 42}`` per
        key), reading only the files whose key range can hold a key."""
        from core.ops.lookup import lookup

        return lookup(self, keys, snapshot_id=snapshot_id, select=select)

    def write_stream(self, streaming_df: Any, *, checkpoint: str, trigger: dict[str, Any] | None = None,
                     query_name: str | None = None, engine_settings: "EngineSettings | None" = None) -> Any:
        """Start a Spark Structured Streaming query committing one snapshot per micro-batch,
        exactly once across restarts from the same ``checkpoint``; returns the StreamingQuery."""
        from core.ops.stream_write import write_stream

        return write_stream(self, streaming_df, checkpoint=checkpoint, trigger=trigger, query_name=query_name,
                            engine_settings=engine_settings)
