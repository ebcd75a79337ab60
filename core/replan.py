"""Re-planning after a lost race against ``expire``.

A command that plans against the latest snapshot reads that snapshot's manifest lists,
manifests and data files afterwards. A concurrent ``expire --retain-min 1`` may retire the
snapshot in between and delete the files only it referenced. A missing file is then not
damage: the table is whole at its new latest snapshot. ``SnapshotManager.retired`` tells the
two apart (asked only after a read failed); a retired snapshot turns the failure into
``ExpiredWhileReadingError``, and ``retry_on_expire`` plans the command again on the new
latest, at most ``commit.max-retries`` more times, as a commit retries a lost publish.
"""

from __future__ import annotations

import logging
from typing import Callable, TypeVar

from core.errors import CorruptMetadataError, ExpiredWhileReadingError
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


def retry_on_expire(max_retries: int, run: Callable[[], T], what: str) -> T:
    """``run()``, again while it raises ExpiredWhileReadingError, at most ``max_retries`` more times.

    Raises:
        ExpiredWhileReadingError: every try lost its snapshot to a concurrent expire (exit 4).
    """
    for attempt in range(max_retries + 1):
        try:
            return run()
        except ExpiredWhileReadingError as e:
            log.info("%s attempt %d of %d lost a race against expire, planning again: %s",
                     what, attempt + 1, max_retries + 1, e)
            last = e
    raise ExpiredWhileReadingError(f"{what} gave up after {max_retries + 1} tries: a concurrent expire removed "
                                   f"the snapshot it read every time (last: {last}); nothing was committed, "
                                   "re-run it or let expire retain more snapshots (--retain-min)")
