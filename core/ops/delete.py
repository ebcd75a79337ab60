"""delete: remove the rows a ``--where`` predicate matches, at the latest snapshot.

Three paths, as Paimon's Spark ``DELETE FROM`` takes the first two and Flink's ``DELETE`` the third:

- **Primary-key tables**: the matching rows are read merge-on-read (as ``scan`` reads them)
  and written back as ``-D`` records through the normal write path, one APPEND snapshot. The
  merge engine must be able to take a delete (``check_deletable``); deletion vectors and
  changelog producers see an ordinary write of ``-D`` rows. The rows are never whole in
  memory: the local engine routes them into its write buffer split by split (which spills),
  the Spark engine reads them on its executors straight into its write shuffle.
- **Append tables**: every live file the predicate may match (partition and file statistics
  prune the others) is read whole, its matching rows dropped and the rest written as one new
  file in the same partition and bucket (``kernels.delete.rewrite_bucket``, one task per
  bucket on either engine). One OVERWRITE snapshot DELETEs the touched files and ADDs their
  rewrites. A file without matching rows is left alone; one whose rows all match is deleted
  without a rewrite.

  Why OVERWRITE: since apache/paimon#6025 Paimon commits DELETE/UPDATE on non-primary-key
  tables as OVERWRITE. Java Paimon 1.0 committed them as APPEND with DELETE entries (in the
  1.0 bundle jar's FileStoreCommitImpl bytecode, ``collectChanges`` puts a message's deleted
  files next to its new files and ``commit`` commits that list as APPEND), which makes a
  streaming reader of an append table read the kept rows of every rewritten file again; an
  OVERWRITE snapshot is skipped by streaming reads (``streaming-read-overwrite`` false).

- **Data-evolution tables** (``data-evolution.enabled``): no file is rewritten; the rows are
  marked in deletion vectors keyed by row-id range, as Paimon 2.1 deletes from them
  (``core.ops.data_evolution_delete``, on the local engine), one APPEND snapshot.
The engine follows ``--engine``: ``auto`` picks Spark when the candidate files (what is left
after partition and statistics pruning) exceed the Spark threshold, as write, scan and compact
decide. A dynamic-bucket primary-key table is deleted from locally, as it is written. A dry
run counts on the engine the delete would use and reports it.

Crash safety comes from the commit: the rewrites are unreferenced until the snapshot is
published, so a crash leaves the table at its last snapshot plus orphan files.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import pyarrow as pa

from core import branch_merge
from core.postpone import is_postpone
from core.commit import CommitMessage, FileStoreCommit
from core.dynamic_bucket import is_dynamic
from core.engines import EngineSettings
from core.errors import CommitConflictError, CorruptMetadataError, InvalidDataError, UnsupportedTableError, UsageError
from core.fileio import join
from core.kernels.delete import MatchingRows, RewriteTask, count_matches, rewrite_bucket
from core.kernels.merge import MergeEngine
from core.kernels.records import DELETE
from core import row_tracking
from core.kernels import data_evolution
from core.option_rules import WRITE, check_options
from core.ops.maintenance import after_commit
from core.ops.scan import PreparedScan, prepare
from core.ops.write import choose_write_engine, plan_job, write_and_commit
from core.replan import lost_race, replan_on_lost_race
from core.snapshot import OVERWRITE
from core.table_handle import TableHandle

log = logging.getLogger(__name__)

# The input column that carries the row kind of the -D records (never a table column: the
# double underscore keeps it apart from user names, and the write drops it).
ROW_KIND_COLUMN = "__lakectl_delete_kind"


@dataclass(frozen=True, slots=True)
class DeleteResult:
    table: str
    branch: str
    snapshot_id: int | None  # None: nothing matched, or a dry run
    commit_kind: str | None
    rows_deleted: int  # rows that matched (for a dry run: that would be deleted)
    files_rewritten: int  # append tables: files replaced by a copy without the matching rows
    files_deleted: int  # files the snapshot removes, rewritten ones included
    engine: str
    dry_run: bool


def check_deletable(table: TableHandle) -> None:
    """Refuse (UnsupportedTableError, exit 1) a primary-key table whose merge engine cannot
    take a ``-D`` record as a delete.

    The write path's own check of ``-D`` input is reused (first-row, partial-update without
    ``partial-update.remove-record-on-delete``, aggregate functions that cannot retract).
    A delete is stricter than a ``-D`` write in two cases, both where the write would accept
    the record but not remove the row: ``ignore-delete`` drops it, and an aggregation
    without ``aggregation.remove-record-on-delete`` retracts the values instead of removing
    the key (Paimon's own DELETE requires that option too)."""
    schema = table.schema
    engine = MergeEngine.of(schema)
    if engine.ignore_delete:
        raise UnsupportedTableError(f"cannot delete from {table.name}: option ignore-delete is true, so its "
                                    "writers drop -D records and the rows would stay")
    # The write path's hints name ignore-delete=true, which a delete refuses in turn (above):
    # name only the option that makes a delete work, or say that none does.
    if engine.kind == "first-row":
        raise UnsupportedTableError(f"cannot delete from {table.name}: the first-row merge engine keeps a key's "
                                    "first row and cannot remove it (with ignore-delete=true its writers drop "
                                    "-D records, so no option makes a delete work)")
    if engine.kind == "partial-update" and not engine.remove_record_on_delete:
        raise UnsupportedTableError(f"cannot delete from {table.name}: the partial-update merge engine removes a "
                                    "key on -D only with option partial-update.remove-record-on-delete=true, "
                                    "which is set when the table is created")
    try:
        engine.check_input(pa.array([DELETE], pa.int8()))
    except InvalidDataError as e:
        raise UnsupportedTableError(f"cannot delete from {table.name}: {e}") from None
    if engine.kind == "aggregation" and not engine.remove_record_on_delete:
        raise UnsupportedTableError(f"cannot delete from {table.name}: the aggregation merge engine retracts -D "
                                    "records instead of removing the key; set option "
                                    "aggregation.remove-record-on-delete=true")


def delete(table: TableHandle, where: str, *, dry_run: bool = False,
           engine_settings: EngineSettings | None = None) -> DeleteResult:
    """Delete the rows of ``table`` that ``where`` matches (the ``scan --where`` language).

    Returns:
        What was (or, for a dry run, would be) deleted; ``snapshot_id`` None when nothing matched.

    Raises:
        UsageError: an empty or malformed predicate, or ``--engine spark`` on a dynamic-bucket table.
        UnsupportedTableError: a merge engine that cannot take deletes.
        StalePlanError: another commit removed a file this delete rewrites (or changed the
            schema) before it landed, every time it planned (``commit.max-retries`` + 1 times).
        ExpiredWhileReadingError: a concurrent expire removed the snapshot the delete planned
            on every time it planned (``commit.max-retries`` + 1 times).
    """
    if not where or not where.strip():
        raise UsageError("--where must not be empty (to delete every row, use lakectl truncate)")
    check_options(table.schema, table.name, WRITE)
    branch_merge.refuse(table.schema, table.name, "delete")
    if is_postpone(table.schema):
        # The rows to delete may still wait in bucket-postpone/, which a scan does not read.
        raise UnsupportedTableError(f"table {table.name} uses bucket=-2 (postpone bucket), which lakectl does not "
                                    "support for delete yet; write the -D rows (--row-kind-column) instead")
    if data_evolution.enabled(table.schema):
        return _delete_by_row_id(table, where, dry_run, engine_settings)
    row_tracking.refuse_rewrite(table.schema, table.name, "delete")
    if table.schema.has_primary_key:
        check_deletable(table)

    def once() -> DeleteResult:
        prepared = prepare(table, where=where)
        assert prepared.predicate is not None
        # The candidate files decide, as a scan's planned files do; dynamic-bucket tables are
        # written locally (their buckets come from an index one process extends).
        engine, why = choose_write_engine(engine_settings, prepared.plan.data_bytes, is_dynamic(table.schema))
        log.info("engine: %s (%s)", engine.name, why)
        try:
            if table.schema.has_primary_key:
                return _delete_keys(table, prepared, dry_run, engine, engine_settings)
            return _rewrite_files(table, prepared, dry_run, engine)
        except CorruptMetadataError as e:  # a file the plan reads is gone: damage, or expired meanwhile
            raise lost_race(table.snapshots, prepared.plan.snapshot, e) or e

    # planned again when another commit replaced the files it rewrote (core.replan)
    return replan_on_lost_race(table.schema.core_options.commit_max_retries, once, "delete", stale_plans=True)


# ---- data-evolution tables ---------------------------------------------------------------
def _delete_by_row_id(table: TableHandle, where: str, dry_run: bool,
                      engine_settings: EngineSettings | None) -> DeleteResult:
    """Deletion vectors keyed by row-id range (``core.ops.data_evolution_delete``), on the
    local engine (the rows read are only their _ROW_IDs and the condition's columns).

    Raises:
        UsageError: ``--engine spark``.
    """
    from core.ops import data_evolution_delete as by_row_id

    if engine_settings is not None and engine_settings.engine == "spark":
        raise UsageError(f"a delete from data-evolution table {table.name} runs locally (it reads row ids and "
                         "writes deletion vectors); use --engine local (or auto)")
    by_row_id.check_deletable(table)

    def once() -> DeleteResult:
        prepared, matched, messages = by_row_id.plan_delete(table, where, dry_run=dry_run)
        if dry_run or not messages:
            return DeleteResult(table.name, table.branch, None, None, matched, 0, 0, "local", dry_run)
        snapshot = by_row_id.commit_delete(table, messages)
        assert snapshot is not None
        after_commit(table, None)
        return DeleteResult(table.name, table.branch, snapshot.id, snapshot.commit_kind, matched, 0, 0, "local", False)

    return replan_on_lost_race(table.schema.core_options.commit_max_retries, once, "delete", stale_plans=True)


# ---- primary-key tables ------------------------------------------------------------------
def _delete_keys(table: TableHandle, prepared: PreparedScan, dry_run: bool, engine: Any,
                 engine_settings: EngineSettings | None) -> DeleteResult:
    plan = prepared.plan
    assert prepared.where is not None
    rows = MatchingRows(plan.splits, plan.read_schema, plan.schemas, prepared.where, ROW_KIND_COLUMN)
    if dry_run:
        return DeleteResult(table.name, table.branch, None, None, _count(table, rows, engine), 0, 0, engine.name, True)
    if not plan.splits:
        return DeleteResult(table.name, table.branch, None, None, 0, 0, 0, engine.name, False)
    done = write_and_commit(table, rows, engine, row_kind_column=ROW_KIND_COLUMN, engine_settings=engine_settings)
    snapshot = done.snapshot
    return DeleteResult(table.name, table.branch, snapshot.id if snapshot else None, snapshot.commit_kind if snapshot else None,
                        done.rows_in, 0, done.files_deleted, engine.name, False)


def _count(table: TableHandle, rows: MatchingRows, engine: Any) -> int:
    """The rows a delete would remove, counted where they would be read: one task per split."""
    work = partial(count_matches, rows=replace(rows, splits=()), file_io=table.file_io)
    return sum(engine.run_tasks(work, rows.splits, "counting"))


# ---- append tables -----------------------------------------------------------------------
def _rewrite_files(table: TableHandle, prepared: PreparedScan, dry_run: bool, engine: Any) -> DeleteResult:
    schema = table.schema
    plan = prepared.plan
    assert prepared.predicate is not None
    job = plan_job(table, schema, None)
    tasks = [RewriteTask(job.task_at(split.partition, split.bucket), split, plan.read_schema, plan.schemas,
                         prepared.predicate, dry_run) for split in plan.splits]
    outcomes = engine.run_tasks(partial(rewrite_bucket, file_io=table.file_io), tasks, "rewriting files")
    matched = sum(o.matched for o in outcomes)
    rewritten = sum(o.files_rewritten for o in outcomes)
    removed = sum(o.files_removed for o in outcomes)
    messages: list[CommitMessage] = [o.message for o in outcomes if o.message is not None]
    if dry_run or not messages:
        return DeleteResult(table.name, table.branch, None, None, matched, rewritten, removed, engine.name, dry_run)
    committer = FileStoreCommit(table.file_io, table.path, schema, branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit())
    try:
        snapshot = committer.commit(messages, kind=OVERWRITE)
    except CommitConflictError:
        _discard_rewrites(table, committer.commit_user, prepared, messages)
        raise
    assert snapshot is not None
    after_commit(table, engine)  # as after a write: expiration etc., unless write-only; never raises
    return DeleteResult(table.name, table.branch, snapshot.id, snapshot.commit_kind, matched, rewritten, committer.files_deleted,
                        engine.name, False)


def _discard_rewrites(table: TableHandle, commit_user: str, prepared: PreparedScan,
                      messages: list[CommitMessage]) -> None:
    """After a conflict, delete the rewrites (written on whichever engine: their names come
    back in the messages), unless an attempt of ours landed after all."""
    planned = prepared.plan.snapshot.id if prepared.plan.snapshot else 0
    latest = table.snapshots.latest_id() or 0
    for sid in range(planned + 1, latest + 1):
        if table.snapshots.exists(sid) and table.snapshots.snapshot(sid).commit_user == commit_user:
            return
    for m in messages:
        directory = table.schema.bucket_dir(table.path, m.partition, m.bucket)
        for f in m.new_files:
            table.file_io.delete_quietly(f.external_path or join(directory, f.file_name))
