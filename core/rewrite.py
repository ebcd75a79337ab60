"""The chain-rewrite marker: how a command that rewrites a branch's snapshot chain announces itself.

Appending a snapshot is safe next to anything by create-if-absent and the commit's
verification. Rewriting the chain is not: rollback removes the newest snapshots, expire retires
the oldest. Each of them takes ``snapshot/REWRITE`` first (create-if-absent, so at most one
rewriter works on a branch at a time), holding JSON ``{"kind", "holder", "started", "target",
"tag"}``, and deletes it only when done. Everyone else reads it:

- a commit looks before it publishes and again after: while a *rollback* holds the marker it
  does not publish, and a snapshot it published while one held it is undone and committed
  again after the rollback, on the rolled-back chain (core/commit.py);
- another rewriter waits for it a little, then gives up with exit 4 naming the holder;
- a marker whose holder is gone (``core/holders.py``) is finished by whoever finds it: a rollback's by removing
  what its target says (``finish_rollback``: removal from the top is all a rollback does, so
  doing it again is safe), an expire's by deleting it (its journal finishes its work).

The holder is ``host:pid:random`` (core/holders.py), as the maintenance lease's (core/lease.py).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass

from core import holders
from core.commit_user import CommitUserMarkers
from core.errors import CommitConflictError, CorruptMetadataError, NotFoundError, TableGoneError
from core.fileio import FileIO, join

log = logging.getLogger(__name__)

MARKER_NAME = "REWRITE"
ROLLBACK, EXPIRE, FAST_FORWARD = "rollback", "expire", "fast-forward"
# How long a rewriter waits for another before giving up (exit 4); LAKECTL_REWRITE_WAIT_SECONDS
# sets it (the stall explorer shortens it: its rewriters wait on a neighbour that is stopped).
WAIT_SECONDS = float(os.environ.get("LAKECTL_REWRITE_WAIT_SECONDS", "10"))


@dataclass(frozen=True, slots=True)
class RewriteMarker:
    path: str
    kind: str
    holder: str
    started: float  # epoch seconds
    target: int | None  # a rollback's target snapshot
    tag: str | None  # a rollback's target tag (its snapshot is written back if it was expired)
    content: bytes  # the bytes read: a marker is removed only while it still holds them

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        return f"a {self.kind} by {self.holder} (since {since})"


def marker_path(snapshot_dir: str) -> str:
    return join(snapshot_dir, MARKER_NAME)


def read_marker(file_io: FileIO, snapshot_dir: str) -> RewriteMarker | None:
    """The branch's rewrite marker, or None. A torn or garbled marker reads as one held by
    nobody, started long ago: abandoned, so the next command removes it."""
    path = marker_path(snapshot_dir)
    try:
        data = file_io.read_bytes(path)
    except (FileNotFoundError, CorruptMetadataError):
        return None
    try:
        obj = json.loads(data.decode())
        return RewriteMarker(path, str(obj["kind"]), str(obj["holder"]), float(obj["started"]),
                             obj.get("target"), obj.get("tag"), data)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return RewriteMarker(path, "unknown", "nobody", 0.0, None, None, data)


def is_live(marker: RewriteMarker, now: float | None = None) -> bool:
    """Is the marker's holder still at work (core/holders.py)?"""
    return holders.is_live(marker.holder, marker.started, now)


def remove_marker(file_io: FileIO, marker: RewriteMarker) -> None:
    """Delete the marker if it still holds the bytes read (a taker's fresh marker stays)."""
    holders.remove_if_unchanged(file_io, marker.path, marker.content)


def acquire(file_io: FileIO, snapshot_dir: str, kind: str, *, target: int | None = None,
            tag: str | None = None, what: str, table: str,
            wait_seconds: float = WAIT_SECONDS, on_abandoned=None) -> RewriteMarker:
    """Take the branch's rewrite marker for ``kind``, waiting up to ``wait_seconds`` for a live
    one to go; raise CommitConflictError (exit 4) naming its holder if it stays.

    ``on_abandoned(marker)`` finishes an abandoned marker's work before it is removed (for a
    rollback: ``finish_rollback``); without it the marker is only removed."""
    holder = holders.new_holder()
    payload = {"kind": kind, "holder": holder, "started": time.time(), "target": target, "tag": tag}
    data = json.dumps(payload, sort_keys=True).encode()
    path = marker_path(snapshot_dir)
    deadline = time.monotonic() + wait_seconds
    pause = 0.02
    while True:
        try:
            created = file_io.try_create(path, data, make_dirs=False)
        except FileNotFoundError:  # no snapshot/: the table was renamed or dropped under us
            raise TableGoneError(f"cannot {what}: table {table} was renamed or dropped meanwhile (or has no "
                                 "snapshot); nothing was changed") from None
        if created:
            holders.HELD.add(holder)
            return RewriteMarker(path, kind, holder, payload["started"], target, tag, data)
        current = read_marker(file_io, snapshot_dir)
        if current is None:
            continue  # removed between our create and our read: race again
        if not is_live(current):
            log.warning("%s of %s was abandoned by its holder; finishing it", current.describe(), table)
            finish_abandoned(file_io, snapshot_dir, current, on_abandoned)
            continue
        if time.monotonic() >= deadline:
            raise CommitConflictError(
                f"cannot {what}: {current.describe()} is rewriting the snapshots of {table}; nothing was "
                "changed, re-run it when that command has finished")
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def finish_abandoned(file_io: FileIO, snapshot_dir: str, marker: RewriteMarker, finisher=None) -> None:
    """Finish an abandoned marker's work (``finisher``) and remove it."""
    if finisher is not None:
        finisher(marker)
    remove_marker(file_io, marker)


def release(file_io: FileIO, marker: RewriteMarker) -> None:
    holders.HELD.discard(marker.holder)  # first: a failed delete leaves an abandoned marker, not a live one
    remove_marker(file_io, marker)


def live_rollback(file_io: FileIO, snapshot_dir: str) -> RewriteMarker | None:
    """The live rollback marker of the branch, if a rollback is running (what commits ask)."""
    marker = read_marker(file_io, snapshot_dir)
    if marker is None or marker.kind != ROLLBACK or not is_live(marker):
        return None
    return marker


def rollback_in_progress(snapshots, tags) -> str | None:
    """A live rollback of the branch whose ``snapshots`` these are, described; an abandoned
    one is finished here first, as by any command that finds it. Commits hold off while one
    runs; a command that copies the latest snapshot (clone) waits for it, since the latest it
    sees meanwhile is a snapshot the rollback is about to remove."""
    marker = read_marker(snapshots.file_io, snapshots.dir)
    if marker is None or marker.kind != ROLLBACK:
        return None
    if is_live(marker):
        return marker.describe()
    finish_abandoned(snapshots.file_io, snapshots.dir, marker, lambda m: finish_rollback_marker(snapshots, tags, m))
    return None


def wait_for_rollback(snapshots, tags, what: str, table: str) -> None:
    """Wait (up to ``WAIT_SECONDS``) while a rollback of the branch runs; CommitConflictError
    (exit 4) naming it when it does not end: for commands that would copy or name a snapshot
    the rollback is about to remove."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        running = rollback_in_progress(snapshots, tags)
        if running is None:
            return
        if time.monotonic() >= deadline:
            raise CommitConflictError(f"cannot {what}: {running} is rewriting the snapshots of {table}; nothing was "
                                      "changed, re-run it when the rollback has finished")
        time.sleep(0.1)


def finish_rollback_marker(snapshots, tags, marker: RewriteMarker) -> None:
    """Finish the work of an abandoned rollback marker (its target, restored from its tag if
    the target snapshot is gone)."""
    if marker.kind != ROLLBACK or marker.target is None:
        return  # an expire's work is finished by its journal, a fast-forward's by its own marker
    tag_snapshot = None
    if marker.tag is not None:
        try:
            tag_snapshot = tags.snapshot(marker.tag)
        except NotFoundError:
            tag_snapshot = None
    finish_rollback(snapshots, tags, int(marker.target), tag_snapshot)


def finish_rollback(snapshots, tags, target: int, tag_snapshot=None) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Remove every snapshot above ``target`` (highest first) and the tags past it, and point
    LATEST at it: a rollback's work, safe to repeat (by the rollback itself until nothing above
    ``target`` is left, or by whoever finds its marker abandoned). ``tag_snapshot`` (the target
    tag's snapshot, when the target itself was expired) is written back as ``snapshot-target``
    just before the last removal, with EARLIEST, so the ids never skip for longer than a step.

    Returns the snapshot ids and tag names removed."""
    removed: list[int] = []
    while True:  # a commit that landed during the removal (before it saw the marker) goes too
        above = [n for n in reversed(snapshots.list_ids()) if n > target]
        if not above:
            break
        restore = tag_snapshot is not None and not snapshots.exists(target)
        keep = above[-1:] if restore else []
        for n in above[:len(above) - len(keep)]:
            snapshots.file_io.delete(snapshots.path(n))
            removed.append(n)
        if restore:
            if snapshots.try_publish(tag_snapshot):
                log.info("restored snapshot-%d from its tag", target)
            snapshots.write_earliest_hint(target, rewind=True)
        for n in keep:
            snapshots.file_io.delete(snapshots.path(n))
            removed.append(n)
    if tag_snapshot is not None and not snapshots.exists(target):
        if snapshots.try_publish(tag_snapshot):
            log.info("restored snapshot-%d from its tag", target)
        snapshots.write_earliest_hint(target, rewind=True)
    _drop_changelogs_after(snapshots, target)
    tags_removed = []
    for t in tags.tags():
        if t.snapshot.id > target:
            try:
                tags.delete(t.name, check_name=False)
            except NotFoundError:
                continue
            tags_removed.append(t.name)
    earliest_hint = snapshots.earliest_hint()
    if earliest_hint is not None and earliest_hint > target:
        # An expiration killed after writing EARLIEST (it writes it before retiring anything)
        # left the target below it; commits on the target would read as re-created ids.
        snapshots.write_earliest_hint(snapshots.earliest_id() or target, rewind=True)
    # Streaming commit users whose progress lies above the target resume from their snapshots.
    CommitUserMarkers(snapshots.file_io, snapshots.dir.rsplit("/", 1)[0]).forget_after(target)
    snapshots.write_latest_hint(target, rewind=True)
    return tuple(removed), tuple(tags_removed)


def _drop_changelogs_after(snapshots, target: int) -> None:
    """Remove the long-lived changelogs newer than the rollback's target, highest first, as Java
    1.0's ``RollbackHelper`` does (their ids will be taken by new commits); their files are
    left for remove-orphan-files, as the removed snapshots' are."""
    from core.changelog_manager import ChangelogManager

    changelogs = ChangelogManager(snapshots.file_io, snapshots.dir.rsplit("/", 1)[0])
    ids = changelogs.list_ids()
    if not ids or ids[-1] <= target:
        return
    for n in reversed([n for n in ids if n > target]):
        snapshots.file_io.delete(changelogs.path(n))
    left = [n for n in ids if n <= target]
    if left:
        changelogs.write_hint("LATEST", left[-1])
    else:
        changelogs.delete_hint("LATEST")
        changelogs.delete_hint("EARLIEST")
