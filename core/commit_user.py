"""Commit-user progress: what a streaming commit user last committed, kept in a small marker
beside the table so that it survives snapshot expiry.

A streaming writer resumes after the latest snapshot of its commit user, as Paimon's
committers do (``core/ops/stream_write.py``). Expiry takes that knowledge away: a stream that
stopped after its last commit, whose snapshots then expire before it restarts (other writers
commit, an aggressive ``expire`` runs), finds no snapshot of its own and would write its
replayed input a second time. A Flink job does not care, since its source offsets live in its
checkpoint; a producer replaying stdin has no such place, so the table keeps one, as it keeps
the positions of streaming readers (``core/consumer.py``).

Layout: ``<branch directory>/commit-user/user-<name>`` (the name percent-encoded; a branch's
markers live in its own directory, as its consumers do, since a snapshot id belongs to one
branch's history). Paimon's readers never look there, Java's orphan clean lists only bucket,
partition, manifest, index and statistics directories, and lakectl's ``remove-orphan-files``
must leave the directory alone like ``consumer/``. One JSON object::

    {"commitUser": "feed", "commitIdentifier": 30, "snapshotId": 3,
     "committing": {"commitIdentifier": 40, "afterSnapshotId": 6}}

``commitIdentifier``/``snapshotId``: the user's last commit (null before its first one).
``committing``: written before each commit and cleared after it, so a writer stopped between
the two leaves a trace. Its commit, if it landed, has an id above ``afterSnapshotId`` (the
latest snapshot before it started); a restart learns whether it landed from the snapshots
above that id, and when expiry removed some of them it cannot know, and says so, rather
than write the records a second time or skip records that were never written.

Two overwrites of one small file per commit (``StreamWriter.write_batch``); each is a whole-
file replace, so a reader sees the old marker or the new one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Callable
from urllib.parse import quote

from core.errors import CorruptMetadataError
from core.fileio import FileIO, join

DIRECTORY = "commit-user"
PREFIX = "user-"
# Longer names are hashed: a file name has a length limit, the commit user does not.
_MAX_NAME = 160


@dataclass(frozen=True, slots=True)
class Committing:
    """A commit that started: ``identifier``, on a table whose latest snapshot was ``after``."""

    identifier: int
    after: int  # 0: the table had no snapshot


@dataclass(frozen=True, slots=True)
class Marker:
    commit_user: str
    identifier: int | None  # the user's last commit identifier; None before its first commit
    snapshot_id: int | None  # the snapshot that commit made
    committing: Committing | None = None

    def to_json(self) -> str:
        doc: dict = {"commitUser": self.commit_user, "commitIdentifier": self.identifier,
                     "snapshotId": self.snapshot_id}
        if self.committing is not None:
            doc["committing"] = {"commitIdentifier": self.committing.identifier,
                                 "afterSnapshotId": self.committing.after}
        return json.dumps(doc)


def marker_file_name(commit_user: str) -> str:
    """``user-<name>``, percent-encoded so any commit user names one file in the directory."""
    name = quote(commit_user, safe="")
    if len(name) > _MAX_NAME:
        name = "sha256-" + hashlib.sha256(commit_user.encode("utf-8")).hexdigest()
    return PREFIX + name


class CommitUserMarkers:
    """The progress markers of one branch (``branch_path``: ``TableHandle.branch_path``)."""

    def __init__(self, file_io: FileIO, branch_path: str) -> None:
        self.file_io = file_io
        self.dir = join(branch_path, DIRECTORY)

    def path(self, commit_user: str) -> str:
        return join(self.dir, marker_file_name(commit_user))

    def read(self, commit_user: str) -> Marker | None:
        """The user's marker, or None if it has none."""
        path = self.path(commit_user)
        try:
            text = self.file_io.read_text(path)
        except CorruptMetadataError:
            if not self.file_io.exists(path):
                return None
            raise
        marker = _decode(text, path)
        if marker.commit_user != commit_user:  # only a hashed name can collide
            raise CorruptMetadataError(f"{path} belongs to commit user {marker.commit_user!r}, not {commit_user!r}")
        return marker

    def write(self, marker: Marker) -> None:
        self.file_io.overwrite_hint(self.path(marker.commit_user), marker.to_json())

    def delete(self, commit_user: str) -> None:
        path = self.path(commit_user)
        if self.file_io.exists(path):
            self.file_io.delete(path)


    def forget_after(self, target: int) -> list[str]:
        """After a rollback to ``target``: delete the markers whose last commit (or commit in
        flight) lies above it, so a restart resumes from the user's snapshots at or below the
        target, as a Paimon committer does after a rollback; the ids above it will be used
        again by other commits. Returns the commit users forgotten."""
        try:
            names = [n for n in self.file_io.list_names(self.dir) if n.startswith(PREFIX)]
        except FileNotFoundError:
            return []
        forgotten = []
        for name in names:
            path = join(self.dir, name)
            try:
                marker = _decode(self.file_io.read_text(path), path)
            except CorruptMetadataError:
                continue  # gone meanwhile, or not ours to judge
            above = marker.snapshot_id is not None and marker.snapshot_id > target
            in_flight = marker.committing is not None and marker.committing.after >= target
            if above or in_flight:
                self.file_io.delete(path)
                forgotten.append(marker.commit_user)
        return forgotten


# ---- where a restarted stream resumes -------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Walk:
    """What the snapshots say: the user's latest snapshot found walking back from ``latest``
    (``identifier``/``snapshot_id``, None if none), and ``read_from``, the lowest id such that
    every snapshot from it to ``latest`` was read (the walk stops at the user's snapshot, at
    the earliest snapshot, or at one that expired while it walked). ``latest`` 0: no snapshot."""

    identifier: int | None
    snapshot_id: int | None
    read_from: int
    latest: int


@dataclass(frozen=True, slots=True)
class Progress:
    """Where the user resumes: after ``identifier`` (None: it committed nothing, as far as
    anything tells). ``unknown`` says why that may be wrong (then a record stream refuses to
    guess); ``stale_marker``: the marker names a commit a rollback removed (ignored)."""

    identifier: int | None
    snapshot_id: int | None
    unknown: str | None = None
    stale_marker: bool = False


# (commit user, commit identifier) of snapshot N, or None when it does not exist.
SnapshotProbe = Callable[[int], "tuple[str, int] | None"]


def marker_holds(marker: Marker, walk: Walk, probe: SnapshotProbe) -> bool:
    """Does the marker's last commit still count? It does unless a rollback removed it: its
    snapshot id lies above the latest, or holds another commit now (a rollback, then new
    commits re-used the id). A missing snapshot below the latest was expired: that is what the
    marker is for. A position without a snapshot is one the user gave (``--input-offset``
    where the progress was unknown): nothing can contradict it."""
    if marker.identifier is None:
        return False
    if marker.snapshot_id is None:
        return True
    if marker.snapshot_id > walk.latest:
        return False
    found = probe(marker.snapshot_id)
    return found is None or found == (marker.commit_user, marker.identifier)


def resolve_progress(marker: Marker | None, walk: Walk, probe: SnapshotProbe, *, commit_user: str) -> Progress:
    """The resume point: the later of the user's latest snapshot and its marker's last commit,
    unless the snapshots that could tell are gone (see ``Progress.unknown``)."""
    holds = marker is not None and marker_holds(marker, walk, probe)
    identifier, snapshot_id = walk.identifier, walk.snapshot_id
    if holds and (identifier is None or marker.identifier > identifier):
        identifier, snapshot_id = marker.identifier, marker.snapshot_id
    stale = marker is not None and marker.identifier is not None and not holds
    pending = marker.committing if marker is not None else None
    if pending is not None and (identifier is None or pending.identifier > identifier):
        # Its commit, if it landed, is a snapshot above `after`: conclusive only if the walk
        # read every one of them (and found none of this user's with that identifier).
        if walk.read_from > pending.after + 1:
            before = "nothing" if identifier is None else f"records up to {identifier}"
            return Progress(identifier, snapshot_id, (
                f"commit user {commit_user} stopped while committing records up to {pending.identifier}, and "
                f"snapshots after {pending.after} have expired since: it cannot tell whether that commit landed "
                f"(it is known to have committed {before})"), stale)
    # A marker without a last commit was written by a run that started from nothing on purpose
    # (a new user, or --reset-progress): the user committed nothing before it, expired or not.
    started_empty = marker is not None and marker.identifier is None
    if identifier is None and not started_empty and walk.read_from > 1:
        return Progress(None, None, (
            f"commit user {commit_user} has no snapshot and no progress marker in the table, whose snapshots "
            f"before {walk.read_from} are gone: it cannot tell which records it committed before"), stale)
    return Progress(identifier, snapshot_id, None, stale)


def _decode(text: str, path: str) -> Marker:
    try:
        doc = json.loads(text)
        committing = doc.get("committing")
        marker = Marker(doc["commitUser"], doc["commitIdentifier"], doc["snapshotId"],
                        None if committing is None else Committing(committing["commitIdentifier"],
                                                                   committing["afterSnapshotId"]))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CorruptMetadataError(f"cannot decode commit-user marker {path}: {e}") from e
    numbers = [marker.identifier, marker.snapshot_id]
    if marker.committing is not None:
        numbers += [marker.committing.identifier, marker.committing.after]
    if not isinstance(marker.commit_user, str) or not all(
            n is None or (isinstance(n, int) and not isinstance(n, bool)) for n in numbers):
        raise CorruptMetadataError(f"commit-user marker {path} holds a value of the wrong type: {text.strip()}")
    if marker.committing is not None and None in (marker.committing.identifier, marker.committing.after):
        raise CorruptMetadataError(f"commit-user marker {path}: an incomplete 'committing' entry: {text.strip()}")
    return marker


__all__ = ["Committing", "CommitUserMarkers", "Marker", "Progress", "Walk", "marker_file_name", "marker_holds",
           "resolve_progress"]
