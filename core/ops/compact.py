"""compact: plan per-bucket compaction from the latest snapshot, run the compaction kernel on
an engine, and commit the rewritten files as one COMPACT snapshot.

Full compaction (the default) rewrites every primary-key bucket that is not already one
sorted run at the top level without deletes, and merges the small files of append buckets.
Without ``full`` primary-key buckets follow Paimon's universal compaction
(``kernels.compact_plan.pick_universal``: size amplification, size ratio, sorted-run count against
num-sorted-run.compaction-trigger), which may write below the top level and then keeps
deletes; append buckets merge their small files either way, without ``full`` at most
compaction.max.file-num of them per bucket (the oldest; the rest wait for the next compaction).

A full compaction's snapshot carries the property ``lakectl.compaction=full``, so that
``full-compaction.delta-commits`` can count the data commits since the last one.

The commit DELETEs the input files and ADDs the new ones. If another commit removed an input
file in the meantime (an overwrite, another compaction), it fails with StalePlanError, the
rewritten files are deleted, and the compaction plans again on the new latest snapshot (at
most ``commit.max-retries`` more times; a writer's compaction after its commit does not: its
next commit compacts again).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Mapping, Sequence


from core import branch_merge
from core.commit import CommitMessage, FileStoreCommit
from core.engines import EngineSettings, choose_engine, engine_choice
from core.errors import CommitConflictError, CorruptMetadataError, UsageError
from core.fileio import join
from core.index_manifest import index_dir
from core.ops.compact_planning import CompactPlan, level0_goes_up, partition_filter, plan  # noqa: F401 (callers import them here)
from core.ops.full_compaction import FULL_COMPACTION_PROPERTY
from core.option_rules import data_evolution_enabled
from core.postpone import is_postpone
from core.replan import lost_race, replan_on_lost_race
from core.snapshot import COMPACT, Snapshot
from core.table_handle import TableHandle

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class CompactResult:
    table: str
    branch: str
    snapshot_id: int | None  # None when nothing needed compaction (or dry run)
    buckets_compacted: int
    files_before: int
    files_after: int | None  # None for a dry run: the new files are not known before writing
    bytes_before: int
    bytes_after: int | None
    dry_run: bool
    engine: str | None = None  # the engine that ran (or would run, for a dry run); None: nothing to compact
    # Postpone-bucket tables: files of bucket-postpone/ whose rows were (or would be) moved into
    # real buckets (core.ops.postpone_compact); they count in files_before and bytes_before too.
    postponed_files: int = 0


# ---- the operation -----------------------------------------------------------------------
def compact(table: TableHandle, *, full: bool = True, partitions: Sequence[Mapping[str, str]] | None = None,
            dry_run: bool = False, engine: Any = None,
            engine_settings: EngineSettings | None = None, level0_buckets: bool = False,
            auto_tags: bool = True, replan: bool = True, changelog: bool = True,
            order: tuple[str, tuple[str, ...]] | None = None, postpone: bool = True) -> CompactResult:
    """Compact the table's buckets (all, or those of ``partitions``) as one COMPACT snapshot.

    On a postpone-bucket table (``bucket=-2``) the postpone compaction runs first, as its own
    COMPACT snapshot (``core.ops.postpone_compact``): the rows waiting in bucket-postpone/ get
    real buckets; then the real buckets are compacted as asked.

    Args:
        table: an existing table.
        full: full compaction (every bucket not yet compacted); False compacts primary-key
            buckets by Paimon's universal rules (nothing below num-sorted-run.compaction-trigger
            sorted runs).
        partitions: only these partitions, each ``{column: value as text}``; None = all.
        dry_run: plan only; report what would be rewritten, write nothing.
        engine: an engine object with ``compact(tasks, file_io)``; None picks one by data size.
        engine_settings: how to pick the engine when ``engine`` is None.
        level0_buckets: only the buckets that hold level-0 files, each in full.
        auto_tags: run the table's automatic tags after the commit, as Java's compaction job
            does (False when a write's maintenance runs this, which tags after its last step).
        replan: when another commit replaces input files (or the schema) before this one
            lands, plan again on the new latest snapshot, at most ``commit.max-retries`` more
            times (``core.replan``); False stops at the first (a writer's compaction after its
            commit: the next commit compacts again).
        changelog: a lookup table's compaction writes the changelog of the level-0 records it
            moves up (False after an overwrite, whose commit carried its own changelog).
        postpone: on a postpone-bucket table, run the postpone compaction first (False for
            a writer's compaction after its commit: Paimon's writers never do).
        order: sort compaction, Paimon's ``order_strategy`` and ``order_by``: (strategy,
            columns) with strategy ``order``, ``zorder`` or ``hilbert``; every bucket of an
            append table (of ``partitions``) is rewritten with its rows in that order, so that
            filters on those columns skip most files and row groups. Still a COMPACT snapshot
            that DELETEs exactly the files it read: a concurrent append stays.

    Returns:
        What was (or, for a dry run, would be) rewritten; ``snapshot_id`` None if nothing was.

    Raises:
        UsageError: a bad partition spec.
        StalePlanError: another commit removed input files (or changed the schema) before
            this one landed, on every try (``replan``) or on the first; nothing was committed.
        ExpiredWhileReadingError: a concurrent expire removed the snapshot the compaction
            planned on every time it planned (``commit.max-retries`` + 1 times).
    """
    branch_merge.refuse(table.schema, table.name, "sort compaction" if order else "compact")
    if not dry_run and table.is_main:  # the commit would be refused (core/commit.py): rewrite nothing first
        table.refuse_unfinished_fast_forward("compact")
    moved = None
    if postpone and order is None and is_postpone(table.schema):
        from core.ops.postpone_compact import compact_postponed

        if engine is not None and engine.name == "spark" or (engine_settings is not None
                                                              and engine_settings.engine == "spark"):
            raise UsageError(f"table {table.name} is a postpone-bucket table (bucket=-2), whose postpone compaction "
                             "lakectl runs with the local engine only; use --engine local (or auto)")
        moved = compact_postponed(table, partitions=partitions, dry_run=dry_run)
    run = partial(_compact_once, table, full=full, partitions=partitions, dry_run=dry_run, engine=engine,
                  engine_settings=engine_settings, level0_buckets=level0_buckets, auto_tags=auto_tags,
                  changelog=changelog, order=order)
    result = replan_on_lost_race(table.schema.core_options.commit_max_retries, run, "compaction", stale_plans=replan)
    return result if moved is None else _with_postponed(result, moved)


def _with_postponed(result: CompactResult, moved: Any) -> CompactResult:
    """``result`` (the real buckets' compaction) with the postpone compaction before it added in."""
    plan = moved.plan
    if not plan.partitions:
        return result
    after = [f for m in moved.messages for f in m.compact_after]
    buckets = {(m.partition, m.bucket) for m in moved.messages if m.compact_after}
    snapshot_id = result.snapshot_id if result.snapshot_id is not None else (
        moved.snapshot.id if moved.snapshot is not None else None)
    return replace(
        result, snapshot_id=snapshot_id, buckets_compacted=result.buckets_compacted + len(buckets),
        files_before=result.files_before + plan.files,
        files_after=None if result.dry_run else (result.files_after or 0) + len(after),
        bytes_before=result.bytes_before + plan.bytes,
        bytes_after=None if result.dry_run else (result.bytes_after or 0) + sum(f.file_size for f in after),
        engine=result.engine or "local", postponed_files=plan.files)


def _compact_once(table: TableHandle, *, full: bool, partitions: Sequence[Mapping[str, str]] | None, dry_run: bool,
                  engine: Any, engine_settings: EngineSettings | None, level0_buckets: bool,
                  auto_tags: bool, changelog: bool, order: tuple[str, tuple[str, ...]] | None = None) -> CompactResult:
    compaction = plan(table, full=full or level0_buckets, partitions=partitions, level0_buckets=level0_buckets,
                      changelog=changelog, order=order)
    tasks = list(compaction.tasks)
    bytes_in = sum(f.file_size for t in tasks for f in t.files)
    if dry_run or not tasks:
        would_run = None
        if tasks and engine is not None:
            would_run = engine.name
        elif tasks:
            would_run, why = engine_choice(engine_settings, bytes_in)
            log.info("engine: %s (%s)", would_run, why)
        return CompactResult(table=table.name, branch=table.branch, snapshot_id=None,
                             buckets_compacted=len({(t.partition, t.bucket) for t in tasks}),
                             files_before=sum(len(t.files) for t in tasks), files_after=None if dry_run else 0,
                             bytes_before=bytes_in, bytes_after=None if dry_run else 0, dry_run=dry_run,
                             engine=would_run)
    if engine is None:
        engine, why = choose_engine(engine_settings, data_bytes=bytes_in)
        log.info("engine: %s (%s)", engine.name, why)
    try:
        messages: list[CommitMessage] = [m for m in engine.compact(tasks, table.file_io)
                                         if m.compact_before or m.compact_after]
    except CorruptMetadataError as e:  # an input file gone: damage, or its snapshot expired meanwhile
        raise lost_race(table.snapshots, compaction.snapshot, e) or e
    if messages and data_evolution_enabled(compaction.schema):
        from core.ops.data_evolution_delete import move_deletion_vectors

        messages = move_deletion_vectors(table, compaction.snapshot, messages)
    committer = FileStoreCommit(table.file_io, table.path, compaction.schema, branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit())
    try:
        snapshot = committer.commit(messages, kind=COMPACT,
                                    properties={FULL_COMPACTION_PROPERTY: "full"} if full else None)
    except CommitConflictError:
        _discard_if_unreferenced(table, committer.commit_user, compaction.snapshot, messages)
        raise
    if snapshot is not None and auto_tags:
        from core.ops.auto_tags import run_quietly

        run_quietly(table)
    before = [f for m in messages for f in m.compact_before]
    after = [f for m in messages for f in m.compact_after]
    return CompactResult(
        table=table.name,
        branch=table.branch,
        snapshot_id=snapshot.id if snapshot else None,
        buckets_compacted=len({(m.partition, m.bucket) for m in messages}),  # bucket=-1: several rewrites each
        files_before=len(before),
        files_after=len(after),
        bytes_before=sum(f.file_size for f in before),
        bytes_after=sum(f.file_size for f in after),
        dry_run=False,
        engine=engine.name,
    )


# ---- after a write -----------------------------------------------------------------------
def compact_after_commit(table: TableHandle, engine: Any, full: bool, *, changelog: bool = True) -> CompactResult | None:
    """The post-commit compaction step of a Paimon writer: a full compaction when ``full``
    (``full_compaction.compaction_after_commit`` decides), else universal (minor) compaction of
    the primary-key buckets that reached num-sorted-run.compaction-trigger. None if nothing ran."""
    # Batch reads of deletion-vector tables hide level 0, and a lookup table's changelog is
    # written by the compaction of level 0: the written buckets go through the lookup
    # compaction at once, as Java's writers force level 0 up at every commit. (First-row
    # tables hide level 0 too; their universal pick forces it up by itself.)
    schema = table.schema
    if branch_merge.enabled(schema):  # a pure-append history: a writer never compacts it
        return None
    level0 = not full and level0_goes_up(schema)
    result = compact(table, full=full, engine=engine, level0_buckets=level0, auto_tags=False, replan=False,
                     changelog=changelog, postpone=False)
    return result if result.snapshot_id is not None else None


def _discard_if_unreferenced(table: TableHandle, commit_user: str, planned: Snapshot | None,
                             messages: Sequence[CommitMessage]) -> None:
    """After a conflict, delete the files this compaction wrote, unless a snapshot of ours landed.

    A conflict is raised before publishing, but an earlier attempt's publish may have had an
    unknown outcome; if any snapshot since the plan carries our commit user, keep everything.
    """
    latest = table.snapshots.latest_id() or 0
    for sid in range((planned.id if planned else 0) + 1, latest + 1):
        if table.snapshots.exists(sid) and table.snapshots.snapshot(sid).commit_user == commit_user:
            return
    for m in messages:
        for f in m.new_index_files:
            table.file_io.delete_quietly(join(index_dir(table.path), f.file_name))
        if not m.compact_after:
            continue
        task_dir = _bucket_dir(table, m)
        for f in m.compact_after:
            table.file_io.delete_quietly(f.external_path or join(task_dir, f.file_name))


def _bucket_dir(table: TableHandle, m: CommitMessage) -> str:
    return table.schema.bucket_dir(table.path, m.partition, m.bucket)
