"""rollback: make an earlier snapshot (or a tag) the latest again, metadata only.

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
from core.fileio import join
from core.ops.check import require_whole
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


def rollback(table: TableHandle, *, snapshot_id: int | None = None, tag: str | None = None,
             if_latest: int | None = None, dry_run: bool = False) -> RollbackResult:
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
        raise UsageError("give exactly one of --snapshot-id or --tag")
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
    require_whole(table, tagged if tagged is not None else snapshots.snapshot(target), "cannot roll back")
    removed = tuple(n for n in reversed(snapshots.list_ids()) if n > target)
    tags_removed = tuple(t.name for t in table.tags.tags() if t.snapshot.id > target)
    if dry_run:
        return RollbackResult(table.name, table.branch, target, removed, tags_removed, True)

    # Highest first, so that a crash leaves a contiguous run of whole snapshots whose latest is
    # a real one. Restoring a tag's expired snapshot S below the earliest E: everything above E
    # goes first, then snapshot-S is written back, then E: the ids skip from S to E for that
    # one step only (Paimon writes S first, leaving the gap open for the whole removal).
    keep_until_restored = removed[-1:] if restore else ()
    for n in removed[:len(removed) - len(keep_until_restored)]:
        table.file_io.delete(snapshots.path(n))
    if restore:
        assert tagged is not None
        if snapshots.try_publish(tagged):
            log.info("restored snapshot-%d from tag %s", target, tag)
        table.file_io.overwrite_hint(join(snapshots.dir, "EARLIEST"), str(target))
    for n in keep_until_restored:
        table.file_io.delete(snapshots.path(n))
    for name in tags_removed:
        table.file_io.delete(table.tags.path(name))
    earliest_hint = snapshots.earliest_hint()
    if not restore and earliest_hint is not None and earliest_hint > target:
        # An expiration killed after writing EARLIEST (it writes it before retiring anything)
        # left the target below it; commits on the target would read as re-created ids.
        snapshots.write_earliest_hint(snapshots.earliest_id() or target)
    snapshots.write_latest_hint(target, rewind=True)
    return RollbackResult(table.name, table.branch, target, removed, tags_removed, False)
