"""Re-planning after a lost race against ``expire``, or against a commit that replaced what a
compaction or a delete planned on.

A command that plans against the latest snapshot reads that snapshot's manifest lists,
manifests and data files afterwards. A concurrent ``expire --retain-min 1`` may retire the
snapshot in between and delete the files only it referenced. A missing file is then not
damage: the table is whole at its new latest snapshot. ``SnapshotManager.retired`` tells the
two apart (asked only after a read failed); a retired snapshot turns the failure into
``ExpiredWhileReadingError``, and ``replan_on_lost_race`` plans the command again on the new
latest, at most ``commit.max-retries`` more times, as a commit retries a lost publish.

A compaction or a delete also plans again after ``StalePlanError``: another commit (a
writer's own compaction, a cron ``compact``, an overwrite) replaced the files it rewrote, or
the schema, before it landed. What these commands commit follows from the table alone (its
files, a ``--where``), so planning again on the new latest is what they would have done had
they started a moment later; the rewrites of the lost try are deleted before it raises. A
write's rows are the user's, shaped on the schema it planned with: it stops (exit 4).
"""

from __future__ import annotations

import logging
from typing import Callable, TypeVar

from core.errors import CorruptMetadataError, ExpiredWhileReadingError, StalePlanError
from core.snapshot import Snapshot, SnapshotManager

log = logging.getLogger(__name__)

T = TypeVar("T")


def lost_race(snapshots: SnapshotManager, snapshot: Snapshot | None,
              error: CorruptMetadataError) -> ExpiredWhileReadingError | None:
    """The error to raise instead of ``error`` when ``snapshot`` was expired meanwhile, else None."""
    if snapshot is None or isinstance(error, ExpiredWhileReadingError) or not snapshots.retired(snapshot):
        return None
    return ExpiredWhileReadingError(f"snapshot {snapshot.id} was expired by a concurrent expire while it was "
                                    f"read ({error}); the table is fine")


def replan_on_lost_race(max_retries: int, run: Callable[[], T], what: str, *, stale_plans: bool = False) -> T:
    """``run()``, again while it raises ExpiredWhileReadingError (with ``stale_plans``, or
    StalePlanError), at most ``max_retries`` more times.

    Raises:
        ExpiredWhileReadingError: every try lost its snapshot to a concurrent expire (exit 4).
        StalePlanError: every try was overtaken by another commit (with ``stale_plans``), or
            the first one was (without) (exit 4).
    """
    last: ExpiredWhileReadingError | StalePlanError | None = None
    for attempt in range(max_retries + 1):
        try:
            return run()
        except ExpiredWhileReadingError as e:
            log.info("%s attempt %d of %d lost a race against expire, planning again: %s",
                     what, attempt + 1, max_retries + 1, e)
            last = e
        except StalePlanError as e:
            if not stale_plans:
                raise
            log.info("%s attempt %d of %d was overtaken by another commit, planning again: %s",
                     what, attempt + 1, max_retries + 1, e)
            last = e
    if isinstance(last, StalePlanError):
        raise StalePlanError(f"{what} gave up after {max_retries + 1} tries: another commit replaced what it "
                             f"planned on every time (last: {last}); re-run it")
    raise ExpiredWhileReadingError(f"{what} gave up after {max_retries + 1} tries: a concurrent expire removed "
                                   f"the snapshot it read every time (last: {last}); nothing was committed, "
                                   "re-run it or let expire retain more snapshots (--retain-min)")
