"""Maintenance a Paimon writer does after its commit, unless the table sets `write-only=true`:
minor compaction of buckets past the sorted-run trigger, snapshot expiration past the
retention options, partition expiration past `partition.expiration-time`, then Paimon's
automatic tags (`tag.automatic-creation`, and tags past their own `tagTimeRetained`;
``core.ops.auto_tags``), last as in Java's TableCommitImpl.

Each step is a function of (table, engine) called in order by ``after_commit``; a step that
fails leaves the committed write intact (the data is already durable), so failures are
logged and reported, never raised over a successful write.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from core.errors import LakectlError
from core.ops.auto_tags import auto_tag_after_commit
from core.ops.full_compaction import compaction_after_commit
from core.options import parse_bool
from core.table_handle import TableHandle

log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class Committed:
    """What the commit the steps follow was: the end of a batch job (False for a streaming
    write's commits, which ``tag.automatic-creation=batch`` does not tag), and an overwrite
    (which carried its own changelog: the compaction after it writes none, and Java's writes
    none either, its streaming readers skipping overwrites)."""

    batch: bool = True
    overwrite: bool = False


Step = Callable[[TableHandle, Any, Committed], Any]


# The steps import their operations when they run: a write-only table, or a process that
# never commits, does not load the compaction and expiration code.
def _compact(table: TableHandle, engine: Any, committed: Committed) -> Any:
    full = compaction_after_commit(table)
    if full is None:
        return None
    from core.ops.compact import compact_after_commit

    return compact_after_commit(table, engine, full, changelog=not committed.overwrite)


def _expire(table: TableHandle, engine: Any, committed: Committed) -> Any:
    """Snapshot expiration with the table's retention options, as a Paimon writer does after each commit."""
    if table.location.server_owns_chain:
        return None  # a REST server owns the chain and expires it itself: nothing lakectl may delete
    from core.ops.expire import expire_snapshots

    result = expire_snapshots(table, dry_run=False, skip_if_busy=True)
    return result if result.snapshots_expired else None


def _expire_partitions(table: TableHandle, engine: Any, committed: Committed) -> Any:
    if "partition.expiration-time" not in table.schema.options:
        return None  # the step's own first answer, without importing it
    from core.ops.partitions import expire_partitions_after_commit

    return expire_partitions_after_commit(table, engine)


def _tags(table: TableHandle, engine: Any, committed: Committed) -> Any:
    return auto_tag_after_commit(table, batch=committed.batch)


# Paimon's order: compaction, snapshot expiration, partition expiration, automatic tags. Each
# step returns a result when it did work, else None.
STEPS: tuple[tuple[str, Step], ...] = (
    ("compact", _compact),
    ("expire", _expire),
    ("expire-partitions", _expire_partitions),
    ("tags", _tags),
)


def after_commit(table: TableHandle, engine: Any, *, batch: bool = True,
                 overwrite: bool = False) -> list[tuple[str, Any]]:
    """Run the maintenance steps; returns (step name, its result) for the ones that did work.
    ``batch`` and ``overwrite`` say what the commit was (``Committed``).

    Never raises: the write is committed, and a caller that saw an error would rerun it."""
    try:
        if parse_bool(table.schema.options.get("write-only", "false"), "write-only"):
            return []
    except (LakectlError, OSError) as e:
        log.warning("maintenance after commit skipped: %s", e)
        return []
    done = []
    committed = Committed(batch, overwrite)
    for name, step in STEPS:
        try:
            result = step(table, engine, committed)
        except (LakectlError, OSError) as e:
            # The write is committed and durable; a maintenance step that loses a race or
            # hits bad metadata is reported and retried by the next commit or by cron.
            log.warning("maintenance step %s after commit failed: %s", name, e)
            continue
        if result is not None:
            done.append((name, result))
    return done
