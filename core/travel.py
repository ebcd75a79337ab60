"""Time travel: which snapshot ``--snapshot-id``, ``--timestamp`` or ``--tag`` names.

One resolution for every command that reads as of a snapshot (scan, lookup, files,
describe, tag create, rollback). Light on purpose: metadata commands import it.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from core.errors import NotFoundError, UsageError
from core.options import parse_int

if TYPE_CHECKING:
    from core.snapshot import Snapshot
    from core.table_handle import TableHandle


def parse_timestamp(text: str) -> int:
    """ISO 8601 (or epoch millis) -> epoch millis; naive times are local time, as Paimon's."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--timestamp {text!r} is not ISO 8601 (e.g. 2024-01-01T10:00:00) or epoch millis") \
            from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.timestamp() * 1000)


def choose_snapshot(table: TableHandle, *, snapshot_id: int | None = None, timestamp: str | None = None,
                    tag: str | None = None) -> Snapshot | None:
    """The snapshot the flags name; with none, what the table's ``scan.*`` options name."""
    given = [x is not None for x in (snapshot_id, timestamp, tag)]
    if sum(given) > 1:
        raise UsageError("give at most one of --snapshot-id, --timestamp, --tag")
    if snapshot_id is not None:
        return table.snapshots.snapshot(snapshot_id)
    if timestamp is not None:
        return _at_or_before(table, timestamp)
    if tag is not None:
        return table.tags.snapshot(tag)
    return _snapshot_of_options(table)


def _at_or_before(table: TableHandle, timestamp: str) -> Snapshot:
    """The newest snapshot at or before ``timestamp``; a refusal echoes the time as typed
    (an ISO time stays ISO, not the epoch millis it was turned into)."""
    try:
        return table.snapshots.at_or_before(parse_timestamp(timestamp))
    except NotFoundError as e:
        if "no snapshot at or before" not in str(e):
            raise
        raise NotFoundError(f"table {table.name} has no snapshot at or before {timestamp.strip()} "
                            "(its first commit is later)") from None


def snapshot_id_of(table: TableHandle, *, snapshot_id: int | None = None, timestamp: str | None = None,
                   tag: str | None = None) -> int | None:
    """The id the flags name (None when none is given: the command's own default). A time
    before the first snapshot names nothing: not found."""
    if snapshot_id is None and timestamp is None and tag is None:
        return None
    if tag is None and timestamp is None:
        return snapshot_id
    snapshot = choose_snapshot(table, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag)
    if snapshot is None:
        raise NotFoundError(f"table {table.name} has no snapshot at or before {timestamp}")
    return snapshot.id


def _snapshot_of_options(table: TableHandle) -> Snapshot | None:
    """A batch read with no snapshot flag reads what the table's ``scan.*`` options name, as
    in Paimon: ``scan.snapshot-id``, ``scan.timestamp-millis`` or ``scan.tag-name``, or the
    latest COMPACT snapshot for ``scan.mode=compacted-full``; else the latest snapshot."""
    opts = table.schema.options
    mode = (opts.get("scan.mode") or "default").strip().lower()
    if mode in ("latest", "latest-full", "full"):
        return table.latest_snapshot()
    if mode == "compacted-full":
        return table.snapshots.latest_compacted() or table.latest_snapshot()
    if "scan.snapshot-id" in opts and mode in ("default", "from-snapshot", "from-snapshot-full"):
        return table.snapshots.snapshot(parse_int(opts["scan.snapshot-id"], "scan.snapshot-id"))
    if "scan.timestamp-millis" in opts and mode in ("default", "from-timestamp"):
        return table.snapshots.at_or_before(parse_int(opts["scan.timestamp-millis"], "scan.timestamp-millis"))
    if "scan.tag-name" in opts and mode == "default":
        return table.tags.snapshot(opts["scan.tag-name"])
    return table.latest_snapshot()
