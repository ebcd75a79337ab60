"""Long-lived changelogs: ``changelog/changelog-N`` and the retention options that make them.

Paimon (Java 1.0, ``CoreOptions.changelogLifecycleDecoupled``) decouples the changelog's
lifecycle from the snapshots' when any of ``changelog.num-retained.max``,
``changelog.time-retained`` or ``changelog.num-retained.min`` is larger than its
``snapshot.*`` counterpart (each defaults to that counterpart). Then expiring snapshot N
writes ``changelog/changelog-N``, a copy of the snapshot's JSON (Java's ``Changelog`` is a
``Snapshot``), moves ``changelog/LATEST`` to N, and keeps what that changelog needs: its
changelog manifest list and files (tables with a changelog producer), or its base and delta
manifest lists and the APPEND-source data files (tables without one, whose changelog is the
delta). ``expire-changelogs`` (Java's ``ExpireChangelogImpl``) later removes them.

The files follow Paimon's layout: the same directory on a branch (``branch/branch-B/changelog``);
``EARLIEST`` and ``LATEST`` are hints, the ``changelog-N`` files the truth.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import CorruptMetadataError, NotFoundError
from core.fileio import FileIO, join
from core.options import DEFAULT_RETAIN_MAX, DEFAULT_RETAIN_MIN, DEFAULT_TIME_RETAINED, parse_duration, parse_int
from core.snapshot import Snapshot, SnapshotManager

CHANGELOG_PREFIX = "changelog-"
JOURNAL_PREFIX = ".expire-changelogs-"

_SNAPSHOT_DEFAULTS = {"snapshot.num-retained.min": str(DEFAULT_RETAIN_MIN),
                      "snapshot.num-retained.max": str(DEFAULT_RETAIN_MAX),
                      "snapshot.time-retained": DEFAULT_TIME_RETAINED}


@dataclass(frozen=True, slots=True)
class ChangelogRetention:
    """The changelog retention a table's options give (each ``changelog.*`` defaulting to its
    ``snapshot.*`` counterpart, as in Java's ``CoreOptions``)."""

    retain_min: int
    retain_max: int
    time_retained_ms: int
    decoupled: bool


def changelog_retention(options: dict[str, str]) -> ChangelogRetention:
    def opt(name: str) -> str:
        return options.get(name) or _SNAPSHOT_DEFAULTS[name]

    snap_min = parse_int(opt("snapshot.num-retained.min"), "snapshot.num-retained.min")
    snap_max = parse_int(opt("snapshot.num-retained.max"), "snapshot.num-retained.max")
    snap_time = round(parse_duration(opt("snapshot.time-retained"), "option snapshot.time-retained")
                      .total_seconds() * 1000)
    cl_min = parse_int(options["changelog.num-retained.min"], "changelog.num-retained.min") \
        if options.get("changelog.num-retained.min") else snap_min
    cl_max = parse_int(options["changelog.num-retained.max"], "changelog.num-retained.max") \
        if options.get("changelog.num-retained.max") else snap_max
    cl_time = round(parse_duration(options["changelog.time-retained"], "option changelog.time-retained")
                    .total_seconds() * 1000) if options.get("changelog.time-retained") else snap_time
    decoupled = cl_max > snap_max or cl_time > snap_time or cl_min > snap_min
    return ChangelogRetention(cl_min, cl_max, cl_time, decoupled)


class ChangelogManager:
    """Finds, reads and writes the long-lived changelogs of one branch."""

    def __init__(self, file_io: FileIO, branch_path: str) -> None:
        self.file_io = file_io
        self.dir = join(branch_path, "changelog")

    def path(self, changelog_id: int) -> str:
        return join(self.dir, f"{CHANGELOG_PREFIX}{changelog_id}")

    def exists(self, changelog_id: int) -> bool:
        return self.file_io.exists(self.path(changelog_id))

    def list_ids(self) -> list[int]:
        try:
            return self.file_io.list_numbered(self.dir, CHANGELOG_PREFIX)
        except FileNotFoundError:
            return []

    def changelog(self, changelog_id: int) -> Snapshot:
        path = self.path(changelog_id)
        try:
            text = self.file_io.read_text(path)
        except CorruptMetadataError as e:
            if isinstance(e.__cause__, FileNotFoundError):
                raise NotFoundError(f"changelog {changelog_id} does not exist") from None
            raise
        return Snapshot.from_json(text, path)

    def changelogs(self) -> list[Snapshot]:
        """Every changelog there is, oldest first (one removed meanwhile is skipped)."""
        out = []
        for cid in self.list_ids():
            try:
                out.append(self.changelog(cid))
            except NotFoundError:
                continue
        return out

    def write(self, snapshot: Snapshot) -> None:
        """``changelog-N`` for an expiring snapshot N, whole (a rerun writes the same bytes),
        then ``LATEST`` (Java's ``commitChangelog`` and ``commitLongLivedChangelogLatestHint``)."""
        self.file_io.overwrite_hint(self.path(snapshot.id), snapshot.to_json())
        self.write_hint("LATEST", snapshot.id)

    def _hint(self, name: str) -> int | None:
        try:
            return int(self.file_io.read_text(join(self.dir, name)).strip())
        except (ValueError, CorruptMetadataError):
            return None

    def write_hint(self, name: str, changelog_id: int) -> None:
        self.file_io.overwrite_hint(join(self.dir, name), str(changelog_id))

    def delete_hint(self, name: str) -> None:
        self.file_io.delete(join(self.dir, name))

    def earliest_id(self) -> int | None:
        """EARLIEST when that changelog exists, else the smallest listed id."""
        e = self._hint("EARLIEST")
        if e is not None and self.exists(e):
            return e
        ids = self.list_ids()
        return ids[0] if ids else None

    def latest_id(self) -> int | None:
        """LATEST when that changelog exists and the next one does not, else the largest listed id."""
        h = self._hint("LATEST")
        if h is not None and self.exists(h) and not self.exists(h + 1):
            return h
        ids = self.list_ids()
        return ids[-1] if ids else None


def streaming_snapshot(file_io: FileIO, branch_path: str, snapshots: SnapshotManager, options: dict[str, str],
                       snapshot_id: int) -> Snapshot | None:
    """What a streaming read takes for ``snapshot_id`` (Java 1.0's ``NextSnapshotFetcher``):
    the snapshot; below the earliest snapshot, with the changelog lifecycle decoupled, the
    retained ``changelog-N``; None when neither is there."""
    try:
        return snapshots.snapshot(snapshot_id)
    except NotFoundError:
        pass
    if not changelog_retention(options).decoupled:  # first: no read for a follow's every poll
        return None
    earliest = snapshots.earliest_id()
    if earliest is None or snapshot_id >= earliest:
        return None
    try:
        return ChangelogManager(file_io, branch_path).changelog(snapshot_id)
    except NotFoundError:
        return None


EXPIRED_HINT = ("keep more with snapshot.num-retained.* / snapshot.time-retained, or keep changelogs past "
                "their snapshots with changelog.num-retained.* / changelog.time-retained")
