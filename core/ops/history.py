"""The snapshot history of a table (``lakectl snapshots``): metadata only, and a module of its
own so that listing snapshots imports nothing else of the read-only views."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.options import check_limit

if TYPE_CHECKING:
    from core.table_handle import TableHandle


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    snapshot_id: int
    schema_id: int
    commit_kind: str
    commit_time: str  # ISO 8601, local time zone
    delta_record_count: int
    total_record_count: int
    commit_time_millis: int
    commit_user: str


def history(table: TableHandle, *, limit: int | None = None) -> list[SnapshotInfo]:
    """Snapshots newest first."""
    check_limit(limit)  # a negative one would slice from the end: every snapshot but the oldest
    ids = table.snapshots.list_ids()[::-1]
    if limit is not None:
        ids = ids[:limit]
    out = []
    for sid in ids:
        s = table.snapshots.snapshot(sid)
        when = dt.datetime.fromtimestamp(s.time_millis / 1000).astimezone().isoformat(timespec="milliseconds")
        out.append(SnapshotInfo(s.id, s.schema_id, s.commit_kind, when, s.delta_record_count or 0,
                                s.total_record_count or 0, s.time_millis, s.commit_user))
    return out
