"""delete: remove the rows a ``--where`` predicate matches, at the latest snapshot.

Two paths, as Paimon's Spark ``DELETE FROM`` takes them:

- **Primary-key tables**: the matching rows are read merge-on-read (as ``scan`` reads them)
  and written back as ``-D`` records through the normal write path, one APPEND snapshot. The
  merge engine must be able to take a delete (``check_deletable``); deletion vectors and
  changelog producers see an ordinary write of ``-D`` rows.
- **Append tables**: every live file the predicate may match (partition and file statistics
  prune the others) is read whole, its matching rows dropped and the rest written as one new
  file in the same partition and bucket. One OVERWRITE snapshot DELETEs the touched files and
  ADDs their rewrites (Paimon commits a DELETE on an append table as OVERWRITE: its commit
  removes files). A file without matching rows is left alone; one whose rows all match is
  deleted without a rewrite.

Crash safety comes from the commit: the rewrites are unreferenced until the snapshot is
published, so a crash leaves the table at its last snapshot plus orphan files.

The work runs on the local engine (``--engine spark`` is refused): the rows deleted are read
through the scan kernels in this process, as a point fix rather than a bulk rewrite.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.commit import CommitMessage, FileStoreCommit
from core.engines import EngineSettings
from core.engines.local import LocalEngine
from core.errors import CommitConflictError, InvalidDataError, UnsupportedTableError, UsageError
from core.fileio import join
from core.kernels.merge import MergeEngine
from core.kernels.read import ReadSplit
from core.kernels.records import DELETE
from core.kernels.write import write_bucket
from core.options import WRITE, check_options
from core.ops.maintenance import after_commit
from core.ops.scan import PreparedScan, prepare, read_batches
from core.ops.write import plan_job, write_and_commit
from core.predicate import Predicate
from core.rows import prepare_rows
from core.snapshot import OVERWRITE
from core.table import Table

log = logging.getLogger(__name__)

# The input column that carries the row kind of the -D records (never a table column: the
# double underscore keeps it apart from user names, and the write drops it).
ROW_KIND_COLUMN = "__lakectl_delete_kind"


@dataclass(frozen=True, slots=True)
class DeleteResult:
    table: str
    snapshot_id: int | None  # None: nothing matched, or a dry run
    commit_kind: str | None
    rows_deleted: int  # rows that matched (for a dry run: that would be deleted)
    files_rewritten: int  # append tables: files replaced by a copy without the matching rows
    files_deleted: int  # files the snapshot removes, rewritten ones included
    engine: str
    dry_run: bool


def check_deletable(table: Table) -> None:
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
    try:
        engine.check_input(pa.array([DELETE], pa.int8()))
    except InvalidDataError as e:
        raise UnsupportedTableError(f"cannot delete from {table.name}: {e}") from None
    if engine.kind == "aggregation" and not engine.remove_record_on_delete:
        raise UnsupportedTableError(f"cannot delete from {table.name}: the aggregation merge engine retracts -D "
                                    "records instead of removing the key; set option "
                                    "aggregation.remove-record-on-delete=true")


def _check_engine(settings: EngineSettings | None) -> None:
    if settings is not None and settings.engine == "spark":
        raise UsageError("delete runs on the local engine only; pass --engine local (or auto)")


def delete(table: Table, where: str, *, dry_run: bool = False,
           engine_settings: EngineSettings | None = None) -> DeleteResult:
    """Delete the rows of ``table`` that ``where`` matches (the ``scan --where`` language).

    Returns:
        What was (or, for a dry run, would be) deleted; ``snapshot_id`` None when nothing matched.

    Raises:
        UsageError: an empty or malformed predicate, or ``--engine spark``.
        UnsupportedTableError: a merge engine that cannot take deletes.
        CommitConflictError: another commit removed a file this delete rewrites.
    """
    if not where or not where.strip():
        raise UsageError("--where must not be empty (to empty a table, use write --mode overwrite)")
    _check_engine(engine_settings)
    check_options(table.schema, table.name, WRITE)
    if table.schema.has_primary_key:
        check_deletable(table)
    prepared = prepare(table, where=where)
    assert prepared.predicate is not None
    if table.schema.has_primary_key:
        return _delete_keys(table, prepared, dry_run, engine_settings)
    return _rewrite_files(table, prepared, dry_run, engine_settings)


# ---- primary-key tables ------------------------------------------------------------------
def _delete_keys(table: Table, prepared: PreparedScan, dry_run: bool,
                 engine_settings: EngineSettings | None) -> DeleteResult:
    engine = LocalEngine(progress=engine_settings.progress if engine_settings else None)
    parts = list(read_batches(table, prepared.plan, predicate=prepared.predicate, engine=engine))
    matched = sum(p.num_rows for p in parts)
    if dry_run or not matched:
        return DeleteResult(table.name, None, None, matched, 0, 0, engine.name, dry_run)
    # The whole rows go into the -D records (not only the keys), as Paimon's Spark DELETE
    # writes them: the input changelog producer stores them as they are.
    rows = pa.concat_tables(parts)
    rows = rows.append_column(ROW_KIND_COLUMN, pa.array(["-D"] * rows.num_rows, pa.string()))
    done = write_and_commit(table, rows, engine, row_kind_column=ROW_KIND_COLUMN, engine_settings=engine_settings)
    snapshot = done.snapshot
    return DeleteResult(table.name, snapshot.id if snapshot else None, snapshot.commit_kind if snapshot else None,
                        matched, 0, done.files_deleted, engine.name, False)


# ---- append tables -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _FileOutcome:
    split: ReadSplit  # the one file, with its deletion vector
    matched: int
    kept: pa.Table | None  # the rows that stay; None when none matched


def _matches(rows: pa.Table, predicate: Predicate) -> pa.Array:
    """Boolean mask of the rows the predicate holds for (null counts as no: SQL's DELETE
    removes only rows whose condition is true)."""
    numbered = rows.append_column("__row", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    hit = numbered.filter(predicate.to_arrow()).column("__row")
    return pc.is_in(numbered.column("__row"), value_set=hit.combine_chunks())


def _file_outcomes(table: Table, prepared: PreparedScan, engine: Any) -> Iterator[_FileOutcome]:
    """Each candidate file read whole (deletion vector applied, no row-group pruning: the rows
    that stay must all be read) and split into matching rows and the rest, one at a time."""
    plan = prepared.plan
    singles = [replace(split, files=(f,), predicate=None,
                       deletion_files=tuple(d for d in split.deletion_files if d[0] == f.file_name))
               for split in plan.splits for f in split.files]
    for single, rows in zip(singles, engine.read(singles, plan.read_schema, plan.schemas, table.file_io)):
        mask = _matches(rows, prepared.predicate)
        matched = pc.sum(pc.cast(mask, pa.int64())).as_py() or 0
        kept = rows.filter(pc.invert(mask)) if matched else None
        yield _FileOutcome(single, matched, kept)


def _rewrite_files(table: Table, prepared: PreparedScan, dry_run: bool,
                   engine_settings: EngineSettings | None) -> DeleteResult:
    schema = table.schema
    engine = LocalEngine(progress=engine_settings.progress if engine_settings else None)
    job = plan_job(table, schema, None)
    next_sequence: dict[tuple[bytes, int], int] = {}
    messages: list[CommitMessage] = []
    matched = rewritten = removed = 0
    for outcome in _file_outcomes(table, prepared, engine):
        if not outcome.matched:
            continue  # untouched: not read again, not rewritten
        split, old = outcome.split, outcome.split.files[0]
        matched += outcome.matched
        removed += 1
        if dry_run:
            rewritten += int(outcome.kept.num_rows > 0)
            continue
        key = (split.partition, split.bucket)
        task = job.task_at(*key)
        new_files: tuple = ()
        if outcome.kept.num_rows:
            # Each rewrite continues the bucket's sequence numbers after the previous one.
            task = replace(task, start_sequence=next_sequence.get(key, task.start_sequence))
            written = write_bucket(task, prepare_rows(outcome.kept, schema), table.file_io)
            new_files = written.new_files
            next_sequence[key] = task.start_sequence + outcome.kept.num_rows
            rewritten += 1
        # The replaced file travels as compact_before, which the commit turns into its DELETE
        # entry (and a conflict if another commit removed it first).
        messages.append(CommitMessage(split.partition, split.bucket, task.total_buckets, new_files=new_files,
                                      compact_before=(old,)))
    if dry_run or not messages:
        return DeleteResult(table.name, None, None, matched, rewritten, removed, engine.name, dry_run)
    committer = FileStoreCommit(table.file_io, table.path, schema)
    try:
        snapshot = committer.commit(messages, kind=OVERWRITE)
    except CommitConflictError:
        _discard_rewrites(table, committer.commit_user, prepared, messages)
        raise
    assert snapshot is not None
    after_commit(table, engine)  # as after a write: expiration etc., unless write-only; never raises
    return DeleteResult(table.name, snapshot.id, snapshot.commit_kind, matched, rewritten, committer.files_deleted,
                        engine.name, False)


def _discard_rewrites(table: Table, commit_user: str, prepared: PreparedScan,
                      messages: list[CommitMessage]) -> None:
    """After a conflict, delete the rewrites, unless an attempt of ours landed after all."""
    planned = prepared.plan.snapshot.id if prepared.plan.snapshot else 0
    latest = table.snapshots.latest_id() or 0
    for sid in range(planned + 1, latest + 1):
        if table.snapshots.exists(sid) and table.snapshots.snapshot(sid).commit_user == commit_user:
            return
    for m in messages:
        directory = table.schema.bucket_dir(table.path, m.partition, m.bucket)
        for f in m.new_files:
            table.file_io.delete_quietly(f.external_path or join(directory, f.file_name))
