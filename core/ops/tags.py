"""Tags of a table: create, delete, list (metadata only)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from core.errors import NotFoundError
from core.ops.check import require_whole
from core.options import parse_duration
from core.table import Table
from core.tag import Tag


@dataclass(frozen=True, slots=True)
class TagInfo:
    name: str
    snapshot_id: int
    schema_id: int
    commit_time: str  # ISO 8601 with the local zone offset
    create_time: str | None  # ISO 8601 with the local zone offset (Paimon stores a zone-less local time)
    time_retained: int | None  # whole seconds, as every duration lakectl prints
    record_count: int


def _info(tag: Tag) -> TagInfo:
    s = tag.snapshot
    commit = dt.datetime.fromtimestamp(s.time_millis / 1000).astimezone().isoformat(timespec="milliseconds")
    # A naive create time is a local time (Java's LocalDateTime): astimezone() attaches the offset.
    created = tag.create_time.astimezone().isoformat(timespec="milliseconds") if tag.create_time else None
    ttl = round(tag.time_retained.total_seconds()) if tag.time_retained is not None else None
    return TagInfo(tag.name, s.id, s.schema_id, commit, created, ttl, s.total_record_count or 0)


def create_tag(table: Table, name: str, *, snapshot_id: int | None = None,
               time_retained: str | None = None) -> TagInfo:
    """Tag a snapshot (the latest by default).

    Args:
        table: the table.
        name: tag name; not empty, not a number, no '/'.
        snapshot_id: the snapshot to tag; the latest if None.
        time_retained: a TTL such as ``7d``, stored as ``tagTimeRetained``.

    Returns:
        The new tag.

    Raises:
        NotFoundError: the snapshot does not exist (or the table has none).
        TagExistsError: the name is taken.
        UsageError: a bad name or duration.
        CorruptMetadataError: the snapshot's manifests or data files are missing.
    """
    ttl = parse_duration(time_retained, "--time-retained") if time_retained is not None else None
    if snapshot_id is None:
        snapshot = table.latest_snapshot()
        if snapshot is None:
            raise NotFoundError(f"table {table.name} has no snapshot to tag")
    else:
        snapshot = table.snapshots.snapshot(snapshot_id)
    # A tag pins its snapshot for rollback; pinning one whose files are gone pins nothing.
    require_whole(table, snapshot, f"cannot create tag {name}")
    return _info(table.tags.create(name, snapshot, time_retained=ttl))


def delete_tag(table: Table, name: str) -> TagInfo:
    """Remove a tag; NotFoundError if absent. Files it pinned become orphans unless still
    referenced (expire or remove-orphan-files reclaims them). Returns what was deleted."""
    info = _info(table.tags.tag(name))
    table.tags.delete(name)
    return info


def list_tags(table: Table) -> list[TagInfo]:
    return [_info(t) for t in table.tags.tags()]
