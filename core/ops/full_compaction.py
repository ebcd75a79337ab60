"""When a writer's commit is followed by a compaction, and whether it is a full one
(``full-compaction.delta-commits``). Metadata only: the after-commit maintenance and
``maintain``'s health check ask here without importing the compaction module (pyarrow)."""

from __future__ import annotations

from core.errors import UsageError
from core.options import parse_int
from core.snapshot import COMPACT
from core.table_handle import TableHandle

FULL_COMPACTION_PROPERTY = "lakectl.compaction"  # value "full" on snapshots of full compactions


def compaction_after_commit(table: TableHandle) -> bool | None:
    """The compaction a writer runs after its commit: True for a full one, False for universal
    (minor) compaction, None for none. Append buckets are merged by ``lakectl compact``, not
    after every write, unless a full compaction is due."""
    if full_compaction_due(table):
        return True
    return False if table.schema.has_primary_key else None


def full_compaction_due(table: TableHandle) -> bool:
    """``full-compaction.delta-commits=N``: has the table had N data commits (APPEND or
    OVERWRITE) since its last full compaction? Counted over the retained snapshots."""
    text = table.schema.options.get("full-compaction.delta-commits")
    if text is None:
        return False
    every = parse_int(text, "full-compaction.delta-commits")
    if every < 1:
        raise UsageError(f"option full-compaction.delta-commits={text} must be at least 1")
    latest = table.snapshots.latest_id()
    earliest = table.snapshots.earliest_id()
    if latest is None or earliest is None:
        return False
    commits = 0
    for sid in range(latest, earliest - 1, -1):
        if not table.snapshots.exists(sid):
            continue
        snap = table.snapshots.snapshot(sid)
        if snap.commit_kind == COMPACT and (snap.properties or {}).get(FULL_COMPACTION_PROPERTY) == "full":
            break
        if snap.commit_kind != COMPACT:
            commits += 1
            if commits >= every:
                return True
    return False
