"""Consumers of a table: list them, move one, delete one (metadata only).

Consumers belong to a branch, as in Paimon: each branch's are in its own ``consumer/`` and
count its own snapshots (``table`` is the branch's view, main by default).

A consumer's position holds back expiration (``core.ops.expire``), so an abandoned consumer
keeps every snapshot from its position on until ``consumer.expiration-time`` passes or it is
deleted here.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.busy import working
from core.consumer import ConsumerManager
from core.errors import NotFoundError, UsageError
from core.table_handle import TableHandle


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    consumer_id: str
    next_snapshot: int
    pending_snapshots: int  # snapshots committed that the consumer has not read yet
    modified_time: str | None  # ISO 8601 in the local zone, as snapshots' commit_time
    modified_millis: int | None


@dataclass(frozen=True, slots=True)
class ConsumerChange:
    table: str
    branch: str
    consumer_id: str
    action: str  # reset or delete
    next_snapshot_before: int | None
    next_snapshot_after: int | None
    dry_run: bool


def list_consumers(table: TableHandle) -> list[ConsumerInfo]:
    latest = table.snapshots.latest_id() or 0
    return [ConsumerInfo(c.consumer_id, c.next_snapshot, max(0, latest - c.next_snapshot + 1),
                         _iso(c.modified_millis), c.modified_millis)
            for c in ConsumerManager(table.file_io, table.branch_path).consumers()]


def _iso(millis: int | None) -> str | None:
    import datetime as dt

    if millis is None:
        return None
    return dt.datetime.fromtimestamp(millis / 1000).astimezone().isoformat(timespec="milliseconds")


def reset_consumer(table: TableHandle, consumer_id: str, next_snapshot: int, *, dry_run: bool = False) -> ConsumerChange:
    """Set where a consumer resumes (created if absent), as Paimon's reset_consumer.

    Raises:
        UsageError: a position below 1 or past the next snapshot to be committed.
        NotFoundError: the position's snapshot has expired.
    """
    latest = table.snapshots.latest_id() or 0
    if not 1 <= next_snapshot <= latest + 1:
        raise UsageError(f"--next-snapshot {next_snapshot} must be between 1 and {latest + 1} "
                         f"(the snapshot after the latest)")
    earliest = table.snapshots.earliest_id()
    if earliest is not None and next_snapshot < earliest:
        raise NotFoundError(f"snapshot {next_snapshot} of table {table.name} has expired (earliest: {earliest})")
    manager = ConsumerManager(table.file_io, table.branch_path)
    before = manager.next_snapshot(consumer_id)
    if not dry_run:
        # Its write makes the directories it needs: not in a table renamed or dropped meanwhile.
        with working(table.file_io, table.path, table.name, f"reset consumer {consumer_id}"):
            manager.record(consumer_id, next_snapshot)
    return ConsumerChange(table.name, table.branch, consumer_id, "reset", before, next_snapshot, dry_run)


def delete_consumer(table: TableHandle, consumer_id: str, *, dry_run: bool = False) -> ConsumerChange:
    """Remove a consumer so it no longer holds back expiration.

    Raises:
        NotFoundError: no such consumer.
    """
    manager = ConsumerManager(table.file_io, table.branch_path)
    before = manager.next_snapshot(consumer_id)
    if before is None:
        raise NotFoundError(f"consumer {consumer_id} does not exist in table {table.name}")
    if not dry_run:
        manager.delete(consumer_id)
    return ConsumerChange(table.name, table.branch, consumer_id, "delete", before, None, dry_run)


__all__ = ["ConsumerChange", "ConsumerInfo", "delete_consumer", "list_consumers", "reset_consumer"]
