"""When a writer's commit is followed by a compaction, and whether it is a full one
(``full-compaction.delta-commits``, ``compaction.optimization-interval``). Metadata only: the after-commit maintenance and
``maintain``'s health check ask here without importing the compaction module (pyarrow)."""

from __future__ import annotations

import time

from core.errors import UsageError
from core.option_parsing import parse_duration
from core.options import parse_int
from core.snapshot import COMPACT, Snapshot
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
    """Whether the writer's next compaction is a full one (``full_compaction_reason``)."""
    return full_compaction_reason(table) is not None


def full_compaction_reason(table: TableHandle) -> str | None:
    """Why a full compaction is due, or None: ``full-compaction.delta-commits`` data commits
    since the last full compaction, or (primary-key tables) ``compaction.optimization-interval``
    passed since it."""
    options = table.schema.options
    if "full-compaction.delta-commits" in options and _delta_commits_reached(table):
        return f"full-compaction.delta-commits {options['full-compaction.delta-commits']} reached"
    if "compaction.optimization-interval" in options and table.schema.has_primary_key \
            and _optimization_interval_passed(table):
        return (f"compaction.optimization-interval {options['compaction.optimization-interval']} passed since "
                "the last full compaction")
    return None


def _is_full_compaction(snap: Snapshot) -> bool:
    return snap.commit_kind == COMPACT and (snap.properties or {}).get(FULL_COMPACTION_PROPERTY) == "full"


def _optimization_interval_passed(table: TableHandle) -> bool:
    """Paimon's universal compaction picks a full compaction of the bucket's runs when this long
    has passed since its last such pick, and at a writer's first pick. A lakectl writer lives
    for one command, so the last one is read from the table instead: the latest full
    compaction among the retained snapshots; none (a table only other writers compacted, or
    never compacted) counts as due, as a new Java writer's first pick does. Reads back only
    the snapshots of the last interval."""
    interval = parse_duration(table.schema.options["compaction.optimization-interval"],
                              "compaction.optimization-interval")
    latest = table.snapshots.latest_id()
    earliest = table.snapshots.earliest_id()
    if latest is None or earliest is None:
        return False
    since = int((time.time() - interval.total_seconds()) * 1000)
    for sid in range(latest, earliest - 1, -1):
        if not table.snapshots.exists(sid):
            continue
        snap = table.snapshots.snapshot(sid)
        if _is_full_compaction(snap):
            return snap.time_millis < since
        if snap.time_millis < since:
            return True  # the last full compaction, if any, is older still
    return True


def _delta_commits_reached(table: TableHandle) -> bool:
    """``full-compaction.delta-commits=N``: has the table had N data commits (APPEND or
    OVERWRITE) since its last full compaction? Counted over the retained snapshots."""
    text = table.schema.options["full-compaction.delta-commits"]
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
        if _is_full_compaction(snap):
            break
        if snap.commit_kind != COMPACT:
            commits += 1
            if commits >= every:
                return True
    return False
