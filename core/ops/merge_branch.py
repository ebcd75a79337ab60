"""``branch merge``: Paimon 2.0's ``merge_branch`` for append tables.

The data files live in the source branch and not in the target are added to the target in one
APPEND commit (the target's ordinary commit path, ``core.commit.FileStoreCommit``); files the
target already lists are skipped. Both branches keep everything else. A file is "in the target"
when a live entry of the target's latest snapshot has the same identifier (partition, bucket,
level, file name, extra files, embedded index, external path), as Paimon's
``FileEntry.Identifier``; branches share their data files, so a file both inherited from their
common snapshot, or merged before, is one and the same entry.

That diff is only right while neither branch rewrote or removed a file, so Paimon's merge
(apache/paimon ``FileSystemBranchManager.mergeBranch``, PR #7882) first checks, and lakectl
with it:

- source and target differ, exist and have a snapshot;
- each branch still holds every snapshot from 1 to its latest, each APPEND or ANALYZE (an
  expired, compacted or overwritten history cannot be diffed by file);
- neither branch's latest schema has a primary key or data evolution; both track row ids or
  neither does; their latest schemas have the same fields;
- every schema id the merged files were written under exists in the target and is the same
  schema there (Java's ``TableSchema.equals``: version, fields, keys, options, comment, time).

Row-tracking targets give the merged files new row ids (Paimon clears ``first_row_id`` so that
the target's commit numbers them after its own). The commit takes a fresh commit user and
identifier 0, as Paimon's ``BranchMergeHandler`` commits, and refuses a file that became live in
the target meanwhile (Paimon's ``checkAppendFiles``): then the merge plans again on the new
latest, so a concurrent writer's snapshot is kept and a concurrent merge's files are not added
twice. Nothing to merge commits nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from core.branch import MAIN_BRANCH
from core.busy import working
from core.commit import CommitMessage, FileStoreCommit, base_entries
from core.errors import NotFoundError, UsageError
from core.manifest import ManifestEntry
from core.option_rules import WRITE, check_options, data_evolution_enabled
from core.replan import replan_on_lost_race
from core import row_tracking
from core.schema import TableSchema
from core.snapshot import ANALYZE, APPEND, Snapshot
from core.table_handle import TableHandle

# Paimon's BranchMergeHandler commits a ManifestCommittable of identifier 0.
MERGE_COMMIT_IDENTIFIER = 0


@dataclass(frozen=True, slots=True)
class BranchMergeResult:
    table: str
    branch: str  # the target: the branch the merge commits to
    source_branch: str
    snapshot_id: int | None  # the target's new snapshot; None: nothing to merge, or a dry run
    files_added: int  # source files the target did not list
    records_added: int
    bytes_added: int
    dry_run: bool


def merge_branch(table: TableHandle, source: str, *, into: str = MAIN_BRANCH,
                 dry_run: bool = False) -> BranchMergeResult:
    """Merge the data files of branch ``source`` that ``into`` lacks into ``into``, as one commit.

    Raises:
        UsageError: the same branch twice, a branch without a snapshot, a history that is not
            complete and pure append, a primary-key or data-evolution table, different
            row-tracking settings, or schemas that differ.
        NotFoundError: a branch does not exist.
        StalePlanError: other commits added the same files every time it planned (exit 4).
        CommitConflictError: the commit did not land.
    """
    for name, what in ((source, "source"), (into, "target")):
        if not name or not name.strip():
            raise UsageError(f"the {what} branch name is blank")
    if source == into:
        raise UsageError(f"cannot merge branch {source} into itself")
    src, dst = table.on_branch(source), table.on_branch(into)
    check_options(dst.schema, dst.name, WRITE)
    if dry_run:
        return _merge_once(src, dst, dry_run=True)
    if dst.is_main:  # the commit would be refused (core/commit.py)
        dst.refuse_unfinished_fast_forward("branch merge")
    # Several reads, then a commit: kept whole against a rename or drop of the table, or a
    # rename of either branch (core/busy.py).
    with working(table.file_io, table.path, table.name, f"merge branch {source} into {into}"):
        return replan_on_lost_race(dst.schema.core_options.commit_max_retries,
                                   lambda: _merge_once(src, dst, dry_run=False), "branch merge", stale_plans=True)


def _merge_once(src: TableHandle, dst: TableHandle, *, dry_run: bool) -> BranchMergeResult:
    src_latest, dst_latest = _latest(src, "merge branch"), _latest(dst, "merge into branch")
    for branch in (src, dst):
        _check_history(branch, src.branch, dst.branch)
    src_schema, dst_schema = src.schemas.latest(), dst.schemas.latest()
    _check_latest_schemas(src, dst, src_schema, dst_schema)
    present = {e.identifier for e in base_entries(dst.manifests(), dst_latest, dst.snapshots)}
    new = [e for e in base_entries(src.manifests(), src_latest, src.snapshots) if e.identifier not in present]
    records, size = sum(e.file.row_count for e in new), sum(e.file.file_size for e in new)
    if new:
        _check_file_schemas(src, dst, new)
    if dry_run or not new:
        return BranchMergeResult(src.name, dst.branch, src.branch, None, len(new), records, size, dry_run)
    renumber = row_tracking.enabled(dst_schema)
    groups: dict[tuple[bytes, int, int], list] = {}
    for e in new:
        f = dataclasses.replace(e.file, first_row_id=None) if renumber and e.file.first_row_id is not None else e.file
        groups.setdefault((e.partition, e.bucket, e.total_buckets), []).append(f)
    messages = [CommitMessage(p, b, n, new_files=tuple(files)) for (p, b, n), files in groups.items()]
    # Planned on dst_latest: an OVERWRITE or COMPACT landing before the commit would break the
    # pure-append history checked above, so the merge plans again (and then refuses).
    committer = FileStoreCommit(dst.file_io, dst.path, dst.schema, identifier=MERGE_COMMIT_IDENTIFIER,
                                branch_path=dst.branch_path, snapshot_commit=dst.location.snapshot_commit(), refuse_live_adds=True, planned_on=dst_latest,
                                tolerated_since=frozenset({APPEND, ANALYZE}))
    snapshot = committer.commit(messages, kind=APPEND)
    return BranchMergeResult(src.name, dst.branch, src.branch, snapshot.id if snapshot else None, len(new),
                             records, size, False)


def _latest(branch: TableHandle, what: str) -> Snapshot:
    latest = branch.snapshots.latest()
    if latest is None:
        raise UsageError(f"cannot {what} {branch.branch} of {branch.name}: it has no snapshot")
    return latest


def _check_history(branch: TableHandle, source: str, target: str) -> None:
    """Paimon's check that ``branch`` holds its whole history, pure append, from snapshot 1."""
    snapshots = branch.snapshots
    earliest, latest = snapshots.earliest_id(), snapshots.latest_id()
    cannot = f"cannot merge branch {source} into {target}"
    why = "branch merge needs every snapshot from 1, each APPEND or ANALYZE"
    if earliest is None or latest is None:
        return
    if earliest != 1:
        raise UsageError(f"{cannot}: branch {branch.branch} starts at snapshot {earliest} (created from a "
                         f"later snapshot, or its earlier ones expired); {why}")
    for snapshot_id in range(1, latest + 1):
        try:
            kind = snapshots.snapshot(snapshot_id).commit_kind
        except NotFoundError:
            raise UsageError(f"{cannot}: snapshot {snapshot_id} of branch {branch.branch} is missing; {why}") from None
        if kind not in (APPEND, ANALYZE):
            raise UsageError(f"{cannot}: snapshot {snapshot_id} of branch {branch.branch} is {kind}; {why}")


def _check_latest_schemas(src: TableHandle, dst: TableHandle, src_schema: TableSchema | None,
                          dst_schema: TableSchema | None) -> None:
    cannot = f"cannot merge branch {src.branch} into {dst.branch}"
    for branch, schema in ((src, src_schema), (dst, dst_schema)):
        if schema is None:
            raise NotFoundError(f"branch {branch.branch} of table {branch.name} has no schema")
        if schema.primary_keys:
            raise UsageError(f"{cannot}: branch merge is for append tables, and branch {branch.branch} has a "
                             f"primary key ({', '.join(schema.primary_keys)})")
        if data_evolution_enabled(schema):
            raise UsageError(f"{cannot}: branch {branch.branch} uses data-evolution.enabled=true, which branch "
                             "merge does not support (as Paimon)")
    tracked = (row_tracking.enabled(src_schema), row_tracking.enabled(dst_schema))
    if tracked[0] != tracked[1]:
        raise UsageError(f"{cannot}: their row-tracking.enabled settings differ (source {str(tracked[0]).lower()}, "
                         f"target {str(tracked[1]).lower()})")
    if src_schema.fields != dst_schema.fields:
        raise UsageError(f"{cannot}: their schemas differ (latest schema {src_schema.id} of {src.branch} and "
                         f"{dst_schema.id} of {dst.branch}); lakectl schemas --branch shows both")


def _check_file_schemas(src: TableHandle, dst: TableHandle, new: list[ManifestEntry]) -> None:
    """Every schema the merged files were written under is the same schema in the target."""
    cannot = f"cannot merge branch {src.branch} into {dst.branch}"
    known = set(dst.schemas.readable_ids())
    for schema_id in sorted({e.file.schema_id for e in new}):
        if schema_id not in known:
            raise UsageError(f"{cannot}: files of the source were written under schema {schema_id}, which "
                             f"branch {dst.branch} does not have")
        if _java_identity(src.schemas.schema(schema_id)) != _java_identity(dst.schemas.schema(schema_id)):
            raise UsageError(f"{cannot}: schema {schema_id} differs between the branches (their schema "
                             "histories diverged)")


def _java_identity(schema: TableSchema) -> tuple:
    """What Java's TableSchema.equals compares."""
    return (schema.version, schema.fields, schema.partition_keys, schema.primary_keys, dict(schema.options),
            schema.comment, schema.time_millis)
