"""Snapshots: the ``snapshot/snapshot-N`` JSON records and the manager that finds them.

The ``snapshot-N`` files are the truth; ``LATEST`` and ``EARLIEST`` are hints that are
trusted only after checking the files around them (spec §3.1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, ContextManager, Iterator, Protocol

from core.errors import CorruptMetadataError, NotFoundError
from core.fileio import FileIO, join

SNAPSHOT_VERSION = 3

APPEND, COMPACT, OVERWRITE, ANALYZE = "APPEND", "COMPACT", "OVERWRITE", "ANALYZE"

# An expiration's journal in snapshot/ (core.ops.expire): ``.expire-<end>-<uuid>.json``, whose
# ``expired`` list names the ids it retires. It exists from before the first retirement until
# after EARLIEST is written.
JOURNAL_PREFIX = ".expire-"
_LATEST_TRIES = 5  # reads of the latest snapshot that may each lose it to expire

# (python attribute, JSON key) in the order Paimon writes them.
_WIRE = [
    ("version", "version"),
    ("id", "id"),
    ("schema_id", "schemaId"),
    ("base_manifest_list", "baseManifestList"),
    ("base_manifest_list_size", "baseManifestListSize"),
    ("delta_manifest_list", "deltaManifestList"),
    ("delta_manifest_list_size", "deltaManifestListSize"),
    ("changelog_manifest_list", "changelogManifestList"),
    ("changelog_manifest_list_size", "changelogManifestListSize"),
    ("index_manifest", "indexManifest"),
    ("commit_user", "commitUser"),
    ("commit_identifier", "commitIdentifier"),
    ("commit_kind", "commitKind"),
    ("time_millis", "timeMillis"),
    ("total_record_count", "totalRecordCount"),
    ("delta_record_count", "deltaRecordCount"),
    ("changelog_record_count", "changelogRecordCount"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("properties", "properties"),
    ("next_row_id", "nextRowId"),
]
_REQUIRED = {"id", "schema_id", "base_manifest_list", "delta_manifest_list", "commit_user",
             "commit_identifier", "commit_kind", "time_millis"}


@dataclass(frozen=True, slots=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int = 0
    delta_record_count: int = 0
    changelog_manifest_list: str | None = None
    changelog_record_count: int | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = field(default=None, hash=False)
    next_row_id: int | None = None
    version: int = SNAPSHOT_VERSION
    # Keys we do not model (newer writers add some); kept so a copy (a tag) stays verbatim.
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr, key in _WIRE:
            value = getattr(self, attr)
            if value is not None:  # Paimon omits null optional fields
                out[key] = value
        out.update(self.extra)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> "Snapshot":
        if not isinstance(obj, dict):
            raise TypeError(f"expected a JSON object, got {type(obj).__name__}")
        known = {key: attr for attr, key in _WIRE}
        kwargs: dict[str, Any] = {}
        extra = {}
        for key, value in obj.items():
            if key in known:
                kwargs[known[key]] = value
            else:
                extra[key] = value
        missing = _REQUIRED - kwargs.keys()
        if missing:
            raise ValueError(f"missing fields {sorted(missing)}")
        return cls(**kwargs, extra=extra)

    @classmethod
    def from_json(cls, text: str, path: str = "<snapshot>") -> "Snapshot":
        try:
            return cls.from_dict(json.loads(text))
        except (ValueError, TypeError) as e:
            raise CorruptMetadataError(f"cannot decode snapshot file {path}: {e}") from e


SNAPSHOT_FIELDS = [f.name for f in fields(Snapshot) if f.name != "extra"]


class SnapshotCommit(Protocol):
    """How a new snapshot becomes the table's (the catalog's side of a commit, core/catalog/):
    create-if-absent of ``snapshot-N`` on the filesystem, the same under the JDBC lock when
    ``lock.enabled``, a POST to ``.../commit`` for REST."""

    def publish(self, snapshots: SnapshotManager, snapshot: Snapshot, *, make_dirs: bool) -> bool:
        """Make ``snapshot`` the table's next one; False if another committer took its id.
        ``make_dirs=False``: a commit on an existing snapshot, which finding snapshot/ gone
        must not bring back (its table was renamed or dropped under it)."""
        ...

    def rewriting_chain(self, what: str) -> ContextManager[None]:
        """Held around expire, rollback, fast-forward and tag deletion (``what`` names the
        command): the lock (jdbc with ``lock.enabled``), nothing (filesystem, jdbc without
        lock), or a refusal or a route through the server (rest)."""
        ...


class SnapshotManager:
    """Finds, reads and publishes the snapshots of one table."""

    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.dir = join(table_path, "snapshot")

    def path(self, snapshot_id: int) -> str:
        return join(self.dir, f"snapshot-{snapshot_id}")

    def exists(self, snapshot_id: int) -> bool:
        return self.file_io.exists(self.path(snapshot_id))

    def list_ids(self) -> list[int]:
        return self.file_io.list_numbered(self.dir, "snapshot-")

    def snapshot(self, snapshot_id: int) -> Snapshot:
        path = self.path(snapshot_id)
        try:
            text = self.file_io.read_text(path)  # one read, no existence check first: commits verify with it
        except CorruptMetadataError as e:
            if isinstance(e.__cause__, FileNotFoundError):
                raise NotFoundError(f"snapshot {snapshot_id} does not exist") from None
            raise
        return Snapshot.from_json(text, path)

    def _hint(self, name: str) -> int | None:
        try:
            return int(self.file_io.read_text(join(self.dir, name)).strip())
        except (ValueError, CorruptMetadataError):
            return None  # a missing or garbled hint is just a missing hint

    def latest_id(self) -> int | None:
        """Trust LATEST only if snapshot-h exists, snapshot-(h+1) does not, and h is not below
        EARLIEST: a snapshot below EARLIEST is one a stalled committer re-created after expire
        removed the id, and it is never the latest (its writer undoes it)."""
        h = self._plausible_latest()
        if h is not None and self.exists(h):
            return h
        return self._listed_latest()

    def _plausible_latest(self) -> int | None:
        """The LATEST hint if snapshot-(h+1) does not exist and h is not below EARLIEST; None
        if the hint is missing or fails either test. Whether snapshot-h exists is the caller's."""
        h = self._hint("LATEST")
        if h is None or self.exists(h + 1):
            return None
        e = self._hint("EARLIEST")
        return h if e is None or h >= e else None

    def _listed_latest(self) -> int | None:
        ids = self.list_ids()
        return ids[-1] if ids else None

    def latest_hint(self) -> int | None:
        """The LATEST hint as written (None if absent or garbled); unchecked."""
        return self._hint("LATEST")

    def earliest_hint(self) -> int | None:
        """The EARLIEST hint as written (None if absent or garbled); unchecked."""
        return self._hint("EARLIEST")

    def earliest_id(self) -> int | None:
        """EARLIEST, when snapshot-e exists: one existence check when the hint is right, a
        listing only when it is stale or missing.

        An id below an existing EARLIEST is never the earliest, even right below it with no gap:
        expire writes EARLIEST before it retires anything, so such a snapshot is being retired,
        was left by a killed expire (its journal finishes it), or was re-created by a stalled
        committer after expire removed it. Taken for the earliest, that last one would be
        retired by the next expire while its committer checks it, and the committer, finding
        its snapshot gone, would count its commit as landed (the race of 2026-12-03: a write
        that exited 0 was lost). The listing takes the start of the contiguous run of ids that
        ends at the newest, for the same reason: an id below a gap is a re-created one."""
        e = self._hint("EARLIEST")
        if e is not None and self.exists(e):
            return e
        return contiguous_start(self.list_ids())

    def retired(self, snap: Snapshot) -> bool:
        """Has ``snap`` been expired (or rolled back) since it was read? True when its file is
        gone, holds another snapshot (the id was re-created), or lies below EARLIEST (an
        expiration is removing it). Callers ask only after a read of its files failed."""
        e = self._hint("EARLIEST")
        if e is not None and snap.id < e:
            return True
        try:
            return not same_snapshot(self.snapshot(snap.id), snap)
        except (NotFoundError, CorruptMetadataError):
            return True

    def latest(self) -> Snapshot | None:
        """The latest snapshot. Expire never removes the latest, but a commit and an expire can
        both land between finding its id and reading it: then find it again. The read of the
        hinted snapshot is its existence check (one request fewer on an object store)."""
        h = self._plausible_latest()
        if h is not None:
            try:
                return self.snapshot(h)
            except NotFoundError:
                pass  # a stale hint: find the latest as latest_id does
        for _ in range(_LATEST_TRIES - 1):
            sid = self.latest_id()
            if sid is None:
                return None
            try:
                return self.snapshot(sid)
            except NotFoundError:
                continue
        sid = self.latest_id()
        return self.snapshot(sid) if sid is not None else None

    def latest_compacted(self) -> Snapshot | None:
        """The newest COMPACT snapshot (``scan.mode=compacted-full``), walking back from the
        latest; None if there is none. A snapshot expired while we walk ends the walk."""
        latest = self.latest_id()
        for sid in range(latest or 0, 0, -1):
            try:
                snap = self.snapshot(sid)
            except NotFoundError:
                return None
            if snap.commit_kind == COMPACT:
                return snap
        return None

    def snapshots(self) -> Iterator[Snapshot]:
        """All snapshots, oldest first."""
        for sid in self.list_ids():
            yield self.snapshot(sid)

    def at_or_before(self, time_millis: int) -> Snapshot:
        """The newest snapshot committed at or before ``time_millis`` (time travel)."""
        best = None
        for snap in self.snapshots():
            if snap.time_millis <= time_millis:
                best = snap
            else:
                break
        if best is None:
            raise NotFoundError(f"no snapshot at or before {time_millis} ms (the table's first commit is later)")
        return best

    def try_publish(self, snapshot: Snapshot, *, make_dirs: bool = True) -> bool:
        """Create ``snapshot-<id>`` if absent; False if another committer took the id.
        ``make_dirs=False``: a commit on an existing snapshot, which finding snapshot/ gone must
        not bring it back (its table was renamed or dropped under it)."""
        return self.file_io.try_create(self.path(snapshot.id), snapshot.to_json().encode("utf-8"),
                                       make_dirs=make_dirs)

    def journal_retires(self, snapshot_id: int) -> bool:
        """Does an expiration journal (one running, or one a kill left) retire ``snapshot_id``?
        Lists the directory: only asked when committing ``snapshot-1``, the one commit that has
        no base snapshot whose absence would tell."""
        try:
            names = [n for n in self.file_io.list_names(self.dir) if n.startswith(JOURNAL_PREFIX)]
        except FileNotFoundError:
            return False
        for name in names:
            try:
                journal = json.loads(self.file_io.read_text(join(self.dir, name)))
            except (ValueError, CorruptMetadataError, FileNotFoundError):
                continue  # torn (its run deleted nothing) or finished meanwhile
            if isinstance(journal, dict) and snapshot_id in journal.get("expired", ()):
                return True
        return False

    def write_earliest_hint(self, snapshot_id: int, *, rewind: bool = False) -> None:
        """Written by expiration (Java does the same); unlike LATEST a failure is raised, so a
        crash-interrupted expire that never wrote it is finished by the next run.

        EARLIEST only moves forward (the larger of what is there and ``snapshot_id``), unless
        ``rewind`` (a rollback or repair below it): an expire that stalled before writing it
        must not pull it back under one that went further meanwhile, or a committer that
        re-created a retired id would take its id for the earliest and keep it."""
        if not rewind:
            current = self._hint("EARLIEST")
            if current is not None and current >= snapshot_id:
                return
        self.file_io.overwrite_hint(join(self.dir, "EARLIEST"), str(snapshot_id))

    def write_latest_hint(self, snapshot_id: int, *, rewind: bool = False) -> None:
        """Move LATEST forward to ``snapshot_id`` (never back, unless ``rewind``: a rollback).

        Two hint writers can still race (read 5, read 6, write 6, write 5); that leaves a stale
        hint, which every reader checks against the snapshot files anyway."""
        try:
            if not rewind:
                current = self._hint("LATEST")
                if current is not None and current >= snapshot_id:
                    return
            self.file_io.overwrite_hint(join(self.dir, "LATEST"), str(snapshot_id))
        except OSError:
            pass  # a stale hint is tolerated by every reader (spec §3.1)


def same_snapshot(a: Snapshot, b: Snapshot) -> bool:
    """The same commit: an id re-created by another writer differs in user, identifier or time."""
    return (a.id, a.commit_user, a.commit_identifier, a.commit_kind, a.time_millis) == \
        (b.id, b.commit_user, b.commit_identifier, b.commit_kind, b.time_millis)


def contiguous_start(ids: list[int]) -> int | None:
    """The first id of the gapless run that ends at the largest of the sorted ``ids``."""
    if not ids:
        return None
    start = len(ids) - 1
    while start > 0 and ids[start - 1] == ids[start] - 1:
        start -= 1
    return ids[start]
