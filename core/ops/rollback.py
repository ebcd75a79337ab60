"""rollback: make an earlier snapshot (or a tag) the latest again, metadata only.

The removal runs under the branch's rewrite marker (``core/rewrite.py``): commits hold off
while it is there and undo what they published during it, expire waits for it, and whatever
still landed above S before the marker was seen is removed too (``finish_rollback`` lists
again until nothing is above S). A rollback killed part-way is finished by the next command
that finds its marker abandoned. ``--as-latest`` removes nothing: it commits a new snapshot
holding S's files (Paimon 2.0's ``rollback_to_as_latest``), an append like any write.

Order: remove ``snapshot-n`` for n > S from the highest id down, so that a crash part-way
leaves a contiguous prefix whose latest is a real snapshot; if the target is a tag whose
snapshot was expired, write the tag back as ``snapshot-S`` (and ``EARLIEST=S``) just before
the last removal; remove the tags that point past S; set ``LATEST=S``. (Paimon writes the tag
back first, which leaves a gap in the ids during the whole removal.) Data files and manifests only
the removed snapshots referenced stay behind as orphans for ``remove-orphan-files`` (newer
Java and pypaimon do the same): deleting them here could race a reader of a removed snapshot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.errors import CommitConflictError, NotFoundError, UsageError
from core.ops.check import require_whole
from core.busy import working
from core.rewrite import ROLLBACK, acquire, finish_rollback, finish_rollback_marker, release
from core.snapshot import Snapshot, same_snapshot
from core.table_handle import TableHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RollbackResult:
    table: str
    branch: str
    target_snapshot_id: int
    snapshots_removed: tuple[int, ...]
    tags_removed: tuple[str, ...]
    dry_run: bool
    as_latest: bool = False
    new_snapshot_id: int | None = None  # --as-latest: the snapshot holding the target's contents


def rollback(table: TableHandle, *, snapshot_id: int | None = None, tag: str | None = None,
             if_latest: int | None = None, dry_run: bool = False, as_latest: bool = False) -> RollbackResult:
    """Roll the table back to ``snapshot_id`` or to the snapshot of ``tag``.

    On a branch's view (``Table.on_branch``) only that branch's snapshots, tags and hints
    change: its ids and tag names are its own, and main's history is never touched.

    Args:
        table: the table.
        snapshot_id: target snapshot (exclusive with ``tag``).
        tag: target tag; works even when its snapshot was expired.
        if_latest: refuse unless the latest snapshot is this one (guards against a commit
            that landed after the caller looked).
        dry_run: report what would be removed; change nothing.
        as_latest: commit a new snapshot holding the target's contents instead of removing the
            newer snapshots (Paimon 2.0's ``rollback_to_as_latest``); every snapshot and tag stays.

    Returns:
        The target and what was (or would be) removed.

    Raises:
        UsageError: neither or both targets.
        NotFoundError: the snapshot or tag does not exist (newer than the latest, or an expired
            snapshot without a tag).
        CommitConflictError: the latest snapshot is not ``if_latest``.
        CorruptMetadataError: the target's manifests or data files are missing.
    """
    if (snapshot_id is None) == (tag is None):
        raise UsageError("give exactly one of --snapshot-id, --timestamp or --tag")
    if not dry_run:
        table.refuse_unfinished_fast_forward("roll back")
    snapshots = table.snapshots
    latest = snapshots.latest_id()
    if latest is None:
        raise NotFoundError(f"table {table.name} has no snapshots to roll back")
    if if_latest is not None and latest != if_latest:
        raise CommitConflictError(f"the latest snapshot is {latest}, not {if_latest}; nothing was rolled back")
    tagged = table.tags.snapshot(tag) if tag is not None else None
    target = tagged.id if tagged is not None else snapshot_id
    assert target is not None
    if target > latest:
        # a snapshot not yet written does not exist, as for scan --snapshot-id (exit 3, not 2)
        raise NotFoundError(f"snapshot {target} does not exist: the latest snapshot is {latest}")
    restore = not snapshots.exists(target)
    if restore and tagged is None:
        raise NotFoundError(f"snapshot {target} does not exist (expired?); roll back to a tag instead")

    # Rolling back to a snapshot whose files are gone would delete every readable one after it.
    target_snap = tagged if tagged is not None else snapshots.snapshot(target)
    require_whole(table, target_snap, "cannot roll back")
    removed = () if as_latest else tuple(n for n in reversed(snapshots.list_ids()) if n > target)
    tags_removed = () if as_latest else tuple(t.name for t in table.tags.tags() if t.snapshot.id > target)
    if dry_run:
        return RollbackResult(table.name, table.branch, target, removed, tags_removed, True, as_latest=as_latest)

    if as_latest:
        return _rollback_as_latest(table, target_snap)
    catalog = table.location.catalog
    if catalog is not None and catalog.kind == "rest":
        # The server owns the chain: its rollbackTable call, refused by it unless the latest is
        # still the one planned on (nothing is removed here).
        catalog.rollback_to(table.location.name, snapshot_id=None if tag is not None else target, tag=tag,
                            from_snapshot=latest, branch=table.branch)
        return RollbackResult(table.name, table.branch, target, removed, tags_removed, False)
    # The chain is rewritten under the branch's rewrite marker (core/rewrite.py): commits hold
    # off while it is there, and a commit that landed during the removal is removed too, so the
    # table ends at the target whatever ran next to it. Expire takes the same marker, so the
    # target cannot be retired while we work; we check that it is still there once we hold it.
    with working(table.file_io, table.path, table.name, f"roll back {table.name} to snapshot {target}"), \
            table.location.rewriting_chain("rollback"):
        marker = acquire(table.file_io, snapshots.dir, ROLLBACK, target=target, tag=tag, what="roll back",
                         table=table.name, on_abandoned=lambda m: finish_rollback_marker(snapshots, table.tags, m))
        try:
            try:
                current = snapshots.snapshot(target)
            except NotFoundError:
                current = None
            restore = current is None
            if restore and tagged is None:
                raise CommitConflictError(f"snapshot {target} was expired while the rollback started; nothing "
                                          "was rolled back (roll back to a tag to restore an expired snapshot)")
            if current is not None and tagged is None and not same_snapshot(current, target_snap):
                raise CommitConflictError(f"snapshot {target} was replaced while the rollback started; nothing was "
                                          "rolled back")
            removed, tags_removed = finish_rollback(snapshots, table.tags, target, tagged if restore else None)
        finally:
            release(table.file_io, marker)
    _iceberg_after_rollback(table, target)
    return RollbackResult(table.name, table.branch, target, removed, tags_removed, False)


def _iceberg_after_rollback(table: TableHandle, target: int) -> None:
    """A table keeping Iceberg metadata (core/iceberg/) gets the target's, as after a commit:
    the metadata of the removed snapshots would list files no snapshot holds any more."""
    from core.ops.iceberg_sync import keeps_iceberg

    if keeps_iceberg(table):
        from core import iceberg

        # The target's metadata: its snapshots and those before it, the removed ones gone.
        iceberg.sync_after_commit(table.file_io, table.path, table.schema, table.snapshots.snapshot(target))


def _rollback_as_latest(table: TableHandle, target: Snapshot) -> RollbackResult:
    """Paimon 2.0's ``rollback_to_as_latest``: a new OVERWRITE snapshot whose files are the
    target's (every file live now but not in the target DELETEd, every file of the target not
    live now ADDed back, the target's index files in place of today's). Nothing is removed, so
    it is an appender like any commit: safe next to every other command by construction, and
    later snapshots and tags stay readable. A commit that lands first makes the plan stale: it
    is planned again on the new latest."""
    from core.commit import CommitMessage, FileStoreCommit, IndexChanges, base_entries
    from core.errors import StalePlanError
    from core.index_manifest import IndexManifestIO
    from core.manifest import live_entries
    from core.replan import replan_on_lost_race
    from core.snapshot import OVERWRITE

    if table.schema.options.get("row-tracking.enabled", "false").lower() == "true":
        raise UsageError("rollback --as-latest is not supported on row-tracking tables (the files would need new "
                         "row ids); roll back without --as-latest")
    mio = table.manifests()
    wanted = live_entries(mio, target)
    imio = IndexManifestIO(table.file_io, table.path)

    def attempt() -> Snapshot:
        now = table.snapshots.latest()
        assert now is not None
        live = base_entries(mio, now, table.snapshots)
        live_ids = {e.identifier for e in live}
        wanted_ids = {e.identifier for e in wanted}
        groups: dict[tuple[bytes, int, int], tuple[list, list]] = {}
        for e in live:
            if e.identifier not in wanted_ids:
                groups.setdefault((e.partition, e.bucket, e.total_buckets), ([], []))[0].append(e.file)
        for e in wanted:
            if e.identifier not in live_ids:
                groups.setdefault((e.partition, e.bucket, e.total_buckets), ([], []))[1].append(e.file)
        messages = [CommitMessage(p, b, n, new_files=tuple(add), compact_before=tuple(drop))
                    for (p, b, n), (drop, add) in groups.items()]
        index = None
        if now.index_manifest != target.index_manifest:
            old = [e.to_delete() for e in imio.read(now.index_manifest)] if now.index_manifest else []
            new = list(imio.read(target.index_manifest)) if target.index_manifest else []
            index = IndexChanges(tuple(old + new), planned_on=now.index_manifest)
        # The deletes and adds are the difference between ``now`` and the target: a commit that
        # lands first makes them stale, and the rollback plans again on the new latest.
        committer = FileStoreCommit(table.file_io, table.path, table.schema, branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit(),
                                    planned_on=now)
        if not messages and index is None:
            return now  # already the target's contents
        snap = committer.commit(messages, kind=OVERWRITE, index=index,
                                properties={"rollback.as-latest.from": str(target.id)})
        if snap is None:
            raise StalePlanError("nothing to commit")
        return snap

    snap = replan_on_lost_race(table.schema.core_options.commit_max_retries, attempt, "rollback --as-latest",
                               stale_plans=True)
    return RollbackResult(table.name, table.branch, target.id, (), (), False, as_latest=True,
                          new_snapshot_id=snap.id)
