"""The snapshot history of a table (``lakectl snapshots``): metadata only, and a module of its
own so that listing snapshots imports nothing else of the read-only views."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from core.errors import NotFoundError
from core.option_parsing import check_limit

if TYPE_CHECKING:
    from core.snapshot import Snapshot
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
    out = []
    for s in _newest_first(table, limit):
        when = dt.datetime.fromtimestamp(s.time_millis / 1000).astimezone().isoformat(timespec="milliseconds")
        out.append(SnapshotInfo(s.id, s.schema_id, s.commit_kind, when, s.delta_record_count or 0,
                                s.total_record_count or 0, s.time_millis, s.commit_user))
    return out


def _newest_first(table: TableHandle, limit: int | None) -> Iterator[Snapshot]:
    """Snapshots from the latest down. With a limit, the walk starts at the latest id (the
    LATEST hint, checked) and reads only ``limit`` snapshot files, never listing snapshot/,
    which holds one name per retained commit; it ends at the first missing id (below the
    earliest, or expired meanwhile), as the listing's contiguous run does."""
    snapshots = table.snapshots
    if limit is None:
        for sid in reversed(snapshots.list_ids()):
            yield snapshots.snapshot(sid)
        return
    sid = snapshots.latest_id()
    while sid is not None and sid > 0 and limit > 0:
        try:
            yield snapshots.snapshot(sid)
        except NotFoundError:
            return
        sid -= 1
        limit -= 1
