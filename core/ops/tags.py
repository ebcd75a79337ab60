"""Tags of a table: create, delete, list (metadata only)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace as with_fields

from core.busy import working
from core.errors import CommitConflictError, CorruptMetadataError, NotFoundError
from core.options import parse_duration
from core.rewrite import live_rollback, wait_for_rollback
from core.snapshot import Snapshot, same_snapshot
from core.table_handle import TableHandle
from core.tag import Tag


@dataclass(frozen=True, slots=True)
class TagInfo:
    table: str
    branch: str
    tag: str
    snapshot_id: int
    schema_id: int
    commit_time: str  # ISO 8601 with the local zone offset
    create_time: str | None  # ISO 8601 with the local zone offset (Paimon stores a zone-less local time)
    time_retained: int | None  # whole seconds, as every duration lakectl prints
    record_count: int


def _info(table: TableHandle, tag: Tag) -> TagInfo:
    s = tag.snapshot
    commit = dt.datetime.fromtimestamp(s.time_millis / 1000).astimezone().isoformat(timespec="milliseconds")
    # A naive create time is a local time (Java's LocalDateTime): astimezone() attaches the offset.
    created = tag.create_time.astimezone().isoformat(timespec="milliseconds") if tag.create_time else None
    ttl = round(tag.time_retained.total_seconds()) if tag.time_retained is not None else None
    return TagInfo(table.name, table.branch, tag.name, s.id, s.schema_id, commit, created, ttl, s.total_record_count or 0)


def create_tag(table: TableHandle, name: str, *, snapshot_id: int | None = None,
               time_retained: str | None = None, replace: bool = False) -> TagInfo:
    """Tag a snapshot (the latest by default).

    Args:
        table: the table.
        name: tag name; not empty, not a number, no '/'.
        snapshot_id: the snapshot to tag; the latest if None.
        time_retained: a TTL such as ``7d``, stored as ``tagTimeRetained``; the table option
            ``tag.default-time-retained`` if None (and set).
        replace: point an existing tag at the snapshot instead of refusing (Paimon's
            replace_tag: a new create time and TTL); a missing tag is NotFoundError, as there.

    Returns:
        The new tag.

    Raises:
        NotFoundError: the snapshot does not exist (or the table has none); ``replace`` of a missing tag.
        TagExistsError: the name is taken (and not ``replace``).
        UsageError: a bad name or duration.
        CorruptMetadataError: the snapshot's manifests or data files are missing.
    """
    # As Paimon's createTag: without a TTL the tag gets the table's tag.default-time-retained.
    ttl = parse_duration(time_retained, "--time-retained") if time_retained is not None else _default_ttl(table)
    table.refuse_unfinished_fast_forward(f"create tag {name}")
    if snapshot_id is None:
        snapshot = table.latest_snapshot()
        if snapshot is None:
            raise NotFoundError(f"table {table.name} has no snapshot to tag")
    else:
        snapshot = table.snapshots.snapshot(snapshot_id)
    # A tag pins its snapshot for rollback; pinning one whose files are gone pins nothing.
    from core.ops.check import require_whole  # here: listing tags reads no manifest

    require_whole(table, snapshot, f"cannot create tag {name}")
    catalog = table.location.catalog
    if catalog is not None and catalog.kind == "rest":  # through the server's createTag
        if replace:
            table.location.refuse_on_server("tag create --replace")
        catalog.create_tag(table.location.name, name, snapshot_id=snapshot.id, time_retained=time_retained,
                           branch=table.branch)
        return _info(table, table.tags.tag(name))
    if replace:
        # Paimon's replace_tag refuses a missing tag: --replace never creates one by accident.
        if not table.tags.exists(name):
            raise NotFoundError(f"tag {name} does not exist: --replace points an existing tag elsewhere; "
                                f"drop --replace to create it")
        before = table.file_io.read_bytes(table.tags.path(name))
        tag = table.tags.replace(name, snapshot, time_retained=ttl)
        if not still_retained(table, snapshot):
            table.file_io.overwrite_hint(table.tags.path(name), before.decode())  # the tag as it was
            raise _expired_meanwhile(snapshot, name, "replaced")
        _refresh_iceberg(table)
        return _info(table, tag)
    tag = table.tags.create(name, snapshot, time_retained=ttl)
    if not still_retained(table, snapshot):
        table.tags.delete_if_holds(name, tag)
        raise _expired_meanwhile(snapshot, name, "created")
    _refresh_iceberg(table)
    return _info(table, tag)


def _refresh_iceberg(table: TableHandle) -> None:
    """Iceberg metadata lists a table's tags as refs (core/iceberg/): rewritten after a change."""
    from core.ops.iceberg_sync import refresh_iceberg

    refresh_iceberg(table)


def still_retained(table: TableHandle, snapshot: Snapshot) -> bool:
    """After a tag or branch naming ``snapshot`` was written: is the snapshot still there and
    not below EARLIEST? An expire writes EARLIEST before it retires anything and reads the tags
    and branches again before it deletes files, so a name written while this holds keeps its
    files; otherwise the expire may have planned without it, and the name must be undone."""
    earliest = table.snapshots.earliest_hint()
    if earliest is not None and snapshot.id < earliest:
        return False
    try:
        return same_snapshot(table.snapshots.snapshot(snapshot.id), snapshot)
    except (NotFoundError, CorruptMetadataError):
        return False


def _expired_meanwhile(snapshot: Snapshot, name: str, what: str) -> CommitConflictError:
    return CommitConflictError(f"snapshot {snapshot.id} was expired while tag {name} was {what}; the tag was not "
                               f"{what} (exit 4): tag a snapshot that expire retains")


def rename_tag(table: TableHandle, old: str, new: str) -> TagInfo:
    """Rename a tag (same snapshot, create time and TTL). The new name is written before the
    old one is removed, so a crash leaves both names, never neither.

    Raises:
        NotFoundError: ``old`` does not exist.
        TagExistsError: ``new`` is taken.
        UsageError: ``new`` is not a valid tag name.
    """
    table.location.refuse_on_server("tag rename")  # before anything is written
    table.refuse_unfinished_fast_forward(f"rename tag {old}")
    with working(table.file_io, table.path, table.name, f"rename tag {old}"):  # two steps: kept whole (core/busy.py)
        # A rollback removes the tags past its target by the names it listed: a new name for
        # such a tag must not appear behind its back (the explorer's rollback@6-vs-tag-rename).
        wait_for_rollback(table.snapshots, table.tags, f"rename tag {old}", table.name)
        return _info(table, table.tags.rename(old, new, check=lambda tag: _not_rolled_back(table, tag, old)))


def _not_rolled_back(table: TableHandle, tag: Tag, old: str) -> None:
    """Raise when a rollback that started meanwhile removes (or removed) ``tag``'s snapshot."""
    marker = live_rollback(table.file_io, table.snapshots.dir)
    if (marker is not None and marker.target is not None and tag.snapshot.id > int(marker.target)) \
            or _removed(table, tag.snapshot):
        raise CommitConflictError(f"a rollback removed snapshot {tag.snapshot.id} while tag {old} was renamed; "
                                  f"tag {tag.name} was not created (exit 4), and the rollback removes {old}")


def _removed(table: TableHandle, snapshot: Snapshot) -> bool:
    """Is ``snapshot`` gone other than by expiry (a rollback removed it, and maybe a new commit
    took its id since)? A tag of an expired snapshot, below EARLIEST, is a tag as any other."""
    try:
        return not same_snapshot(table.snapshots.snapshot(snapshot.id), snapshot)
    except (NotFoundError, CorruptMetadataError):
        earliest = table.snapshots.earliest_id()
        return earliest is None or snapshot.id >= earliest


def delete_tag(table: TableHandle, name: str) -> TagInfo:
    """Remove a tag; NotFoundError if absent. Files it pinned become orphans unless still
    referenced (expire or remove-orphan-files reclaims them). Returns what was deleted."""
    table.refuse_unfinished_fast_forward(f"delete tag {name}")
    info = _info(table, table.tags.tag(name))
    catalog = table.location.catalog
    if catalog is not None and catalog.kind == "rest":  # through the server's deleteTag
        catalog.delete_tag(table.location.name, name, branch=table.branch)
        return info
    with table.location.rewriting_chain(f"delete tag {name}"):  # a JDBC catalog's lock (core/catalog/)
        table.tags.delete(name)
    _refresh_iceberg(table)
    return info


def list_tags(table: TableHandle) -> list[TagInfo]:
    return [_info(table, t) for t in table.tags.tags()]


@dataclass(frozen=True, slots=True)
class ExpiredTag:
    tag: str
    snapshot_id: int
    create_time: str | None  # ISO 8601 with the local zone offset
    time_retained: int | None  # whole seconds: the tag's own TTL, else tag.default-time-retained
    reason: str  # "time-retained" or "older-than"
    dry_run: bool


@dataclass(frozen=True, slots=True)
class ExpireTagsResult:
    """What ``expire-tags`` prints: an object even when no tag was due (never a bare [])."""
    table: str
    branch: str
    tags_expired: list[ExpiredTag]
    dry_run: bool


def expire_tags(table: TableHandle, *, older_than: str | None = None, dry_run: bool = False,
                now: dt.datetime | None = None) -> list[ExpiredTag]:
    """Delete the tags whose time is up, as Paimon's ``expire_tags``: a tag expires when
    ``now`` is past its create time plus its TTL (``tagTimeRetained``, else the table option
    ``tag.default-time-retained``) or, with ``older_than``, when it was created before that
    time. A tag without a create time (written by an old Paimon) has no age and is kept.
    (Paimon writes the default TTL into each tag it creates and its expire reads only the
    tag's own; lakectl does both, so that tags created before the option was set, or by
    pypaimon, follow it too.)

    Only tag files are deleted, as ``tag delete`` does: the data files only those tags held are
    reclaimed by ``expire`` and ``remove-orphan-files``, which keep whatever a snapshot or a
    remaining tag references.

    Args:
        older_than: a duration back from now (``30d``) or an ISO 8601 time.
        dry_run: report what would be deleted; delete nothing.
        now: the local time to judge by (tests); the current time if None.
    """
    table.location.refuse_on_server("expire-tags")  # before anything is written
    from core.ops.expire import older_than_cutoff

    if not dry_run:
        table.refuse_unfinished_fast_forward("expire tags")
    now = now or dt.datetime.now()
    cutoff = None
    if older_than is not None:
        millis = older_than_cutoff(older_than, int(now.astimezone().timestamp() * 1000))
        cutoff = dt.datetime.fromtimestamp(millis / 1000)  # local and naive, as tag create times
    default_ttl = _default_ttl(table)
    due = [(tag, reason) for tag in table.tags.tags()
           if (reason := _expiry_reason(tag, tag.time_retained or default_ttl, cutoff, now)) is not None]
    if due and not dry_run:
        # Each deletion of a tag that is gone counts as done, so the table must not move away
        # under the run (core/busy.py).
        with working(table.file_io, table.path, table.name, "expire tags"), \
                table.location.rewriting_chain("expire tags"):
            for tag, _ in due:
                try:
                    table.tags.delete(tag.name)
                except NotFoundError:
                    pass  # deleted meanwhile: expired all the same
        _refresh_iceberg(table)
    out = []
    for tag, reason in due:
        info = _info(table, with_fields(tag, time_retained=tag.time_retained or default_ttl))
        out.append(ExpiredTag(tag.name, info.snapshot_id, info.create_time, info.time_retained, reason, dry_run))
    return out


def _default_ttl(table: TableHandle) -> dt.timedelta | None:
    raw = table.schema.options.get("tag.default-time-retained")
    return parse_duration(raw, "tag.default-time-retained") if raw else None


def _expiry_reason(tag: Tag, ttl: dt.timedelta | None, cutoff: dt.datetime | None,
                   now: dt.datetime) -> str | None:
    if tag.create_time is None:
        return None
    if ttl is not None and now > tag.create_time + ttl:
        return "time-retained"
    if cutoff is not None and tag.create_time < cutoff:
        return "older-than"
    return None
