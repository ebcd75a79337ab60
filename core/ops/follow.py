"""Streaming reads: follow a table's changes snapshot by snapshot as they commit.

``follow(table, ...)`` yields one ``ChangeBatch`` per snapshot it reads, oldest first, polling
for new snapshots until the caller stops, ``max_snapshots`` were read or a snapshot's
watermark passes ``bounded_watermark``. Where it starts is Paimon's ``scan.mode``:

==================== ==========================================================================
``latest-full``      the latest snapshot in full (as +I rows), then the changes after it
``latest``           only the changes committed after start-up
``from-snapshot``    the changes of snapshot N (``scan.snapshot-id``) and after
``from-snapshot-full`` snapshot N in full, then the changes after it
``from-timestamp``   the changes of the snapshots committed at or after T (``scan.timestamp-millis``)
``compacted-full``   the latest COMPACT snapshot in full, then the changes after it
``default``          from-snapshot / from-timestamp if one is given, else latest-full
==================== ==========================================================================

Which files hold a snapshot's changes is decided as for incremental reads
(``core.ops.changes``): changelog files when the table has a changelog producer, otherwise
the data files of APPEND snapshots (COMPACT adds no change; OVERWRITE snapshots are skipped
unless ``streaming-read-overwrite``, as Paimon's streaming readers do).

With a consumer id, the position is kept in ``consumer/consumer-<id>`` (``nextSnapshot``):
a restart resumes there (unless ``consumer.ignore-progress``), and expiration keeps every
snapshot the consumer still needs. The position moves past a batch only when the caller
asks for the next one, so a batch the caller did not finish is read again after a restart
(at-least-once delivery to the caller, exactly-once for a caller that finishes each batch).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from core.changelog_manager import EXPIRED_HINT, ChangelogManager, changelog_retention, streaming_snapshot
from core.consumer import ConsumerManager, check_consumer_id
from core.engines import EngineSettings
from core.errors import NotFoundError, UsageError
from core.kernels.read import ROW_KIND_COLUMN
from core.kernels import data_evolution
from core import system_columns
from core.options import SCAN_MODES, parse_bool, parse_duration, parse_int
from core.option_rules import READ, check_options
from core.snapshot import APPEND, OVERWRITE, Snapshot
from core.table_handle import TableHandle

log = logging.getLogger(__name__)

DEFAULT_POLL_SECONDS = 1.0
SNAPSHOT_ID_COLUMN = "_snapshot_id"


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """The rows one snapshot contributes: its full state (``full``) or its changes."""

    snapshot_id: int
    commit_kind: str
    watermark: int | None
    full: bool
    rows: pa.Table  # _row_kind, then the table's (or the selected) columns


@dataclass(frozen=True, slots=True)
class FollowStart:
    """Where following begins: optionally a snapshot read in full, then changes from ``next_id``."""

    mode: str
    full_snapshot: int | None
    next_id: int | None  # None: wait for the first snapshot that qualifies (compacted-full)
    resumed: bool = False  # from a consumer's recorded position


@dataclass(frozen=True, slots=True)
class FollowSettings:
    """The flags of ``scan --follow`` merged over the table's ``scan.*`` / ``consumer*`` options."""

    mode: str
    snapshot_id: int | None
    timestamp_millis: int | None
    bounded_watermark: int | None
    consumer_id: str | None
    ignore_progress: bool
    poll_seconds: float
    read_overwrite: bool


def resolve_settings(options: dict[str, str], *, mode: str | None = None, snapshot_id: int | None = None,
                     timestamp_millis: int | None = None, bounded_watermark: int | None = None,
                     consumer_id: str | None = None, poll_seconds: float | None = None) -> FollowSettings:
    """Flags win; the table's options are the defaults, as Paimon's dynamic options over table options.

    Raises:
        UsageError: an unknown mode, a mode without the id or time it needs, a bad option value.
    """
    mode = (mode or options.get("scan.mode") or "default").strip().lower()
    if mode not in SCAN_MODES:
        raise UsageError(f"scan mode {mode!r} is not supported for following (use one of "
                         f"{', '.join(m for m in SCAN_MODES if m != 'full')})")
    if mode == "full":
        mode = "latest-full"  # Paimon's deprecated name
    if snapshot_id is None and "scan.snapshot-id" in options:
        snapshot_id = parse_int(options["scan.snapshot-id"], "scan.snapshot-id")
    if timestamp_millis is None and "scan.timestamp-millis" in options:
        timestamp_millis = parse_int(options["scan.timestamp-millis"], "scan.timestamp-millis")
    if bounded_watermark is None and "scan.bounded.watermark" in options:
        bounded_watermark = parse_int(options["scan.bounded.watermark"], "scan.bounded.watermark")
    if mode == "default":
        mode = "from-snapshot" if snapshot_id is not None else \
            "from-timestamp" if timestamp_millis is not None else "latest-full"
    if mode in ("from-snapshot", "from-snapshot-full") and snapshot_id is None:
        raise UsageError(f"scan mode {mode} needs a snapshot id (--snapshot-id or option scan.snapshot-id)")
    if mode == "from-timestamp" and timestamp_millis is None:
        raise UsageError("scan mode from-timestamp needs a time (--timestamp or option scan.timestamp-millis)")
    if snapshot_id is not None and snapshot_id < 1:
        raise UsageError(f"snapshot id {snapshot_id} must be 1 or more")
    consumer_id = consumer_id or options.get("consumer-id")
    if consumer_id is not None:
        check_consumer_id(consumer_id)
    if poll_seconds is None:
        interval = options.get("continuous.discovery-interval")
        poll_seconds = parse_duration(interval, "option continuous.discovery-interval").total_seconds() \
            if interval else DEFAULT_POLL_SECONDS
    if poll_seconds <= 0:
        raise UsageError(f"poll interval must be positive (got {poll_seconds} s)")
    return FollowSettings(
        mode=mode, snapshot_id=snapshot_id, timestamp_millis=timestamp_millis,
        bounded_watermark=bounded_watermark, consumer_id=consumer_id,
        ignore_progress=parse_bool(options.get("consumer.ignore-progress", "false"), "consumer.ignore-progress"),
        poll_seconds=poll_seconds,
        read_overwrite=parse_bool(options.get("streaming-read-overwrite", "false"), "streaming-read-overwrite"))


def plan_start(table: TableHandle, settings: FollowSettings) -> FollowStart:
    """Where to begin, from the consumer's position or the scan mode.

    Raises:
        NotFoundError: the starting snapshot has expired (or a full snapshot does not exist).
    """
    snapshots = table.snapshots
    if settings.consumer_id and not settings.ignore_progress:
        recorded = ConsumerManager(table.file_io, table.branch_path).next_snapshot(settings.consumer_id)
        if recorded is not None:
            _check_not_expired(table, recorded, f"consumer {settings.consumer_id}'s next snapshot")
            return FollowStart(settings.mode, None, recorded, resumed=True)
    latest = snapshots.latest_id()
    mode = settings.mode
    if mode == "latest-full":
        return FollowStart(mode, latest, (latest + 1) if latest else _first_id(table))
    if mode == "latest":
        return FollowStart(mode, None, (latest + 1) if latest else _first_id(table))
    if mode == "from-snapshot":
        _check_not_expired(table, settings.snapshot_id, "snapshot")
        return FollowStart(mode, None, settings.snapshot_id)
    if mode == "from-snapshot-full":
        snapshots.snapshot(settings.snapshot_id)  # NotFoundError if absent
        return FollowStart(mode, settings.snapshot_id, settings.snapshot_id + 1)
    if mode == "from-timestamp":
        return FollowStart(mode, None, _first_at_or_after(table, settings.timestamp_millis))
    compacted = table.snapshots.latest_compacted()
    if compacted is None:
        return FollowStart(mode, None, None)
    return FollowStart(mode, compacted.id, compacted.id + 1)


def _first_id(table: TableHandle) -> int:
    earliest = table.snapshots.earliest_id()
    return earliest if earliest is not None else 1


def _check_not_expired(table: TableHandle, snapshot_id: int, what: str) -> None:
    """Refuse a start below the earliest snapshot, unless the changelog of that id is retained
    (decoupled changelog lifecycle: Java's streaming read goes on from ``changelog/``)."""
    earliest = table.snapshots.earliest_id()
    if earliest is not None and snapshot_id < earliest and _next(table, snapshot_id) is None:
        raise NotFoundError(f"{what} {snapshot_id} of table {table.name} has expired (earliest: {earliest}; "
                            f"{EXPIRED_HINT})")


def _next(table: TableHandle, snapshot_id: int) -> Snapshot | None:
    """The snapshot a streaming read takes for ``snapshot_id``, or its retained changelog below
    the earliest snapshot; None when neither is there (yet)."""
    return streaming_snapshot(table.file_io, table.branch_path, table.snapshots, table.schema.options,
                              snapshot_id)


def _first_at_or_after(table: TableHandle, millis: int) -> int:
    """The first id committed at or after ``millis`` (or the next one to come), by Java 1.0's
    ``earlierThanTimeMills``: with the changelog lifecycle decoupled the search starts at the
    earliest retained changelog, so a start before the earliest snapshot reads from changelog/.
    A binary search (commit times grow with ids), reading O(log n) snapshot files."""
    ids = table.snapshots.list_ids()
    if changelog_retention(table.schema.options).decoupled:
        below = ids[0] if ids else None
        ids = [i for i in ChangelogManager(table.file_io, table.branch_path).list_ids()
               if below is None or i < below] + ids
    if not ids:
        return 1
    lo, hi = 0, len(ids)  # ids[:lo] are earlier than millis, ids[hi:] are not
    while lo < hi:
        mid = (lo + hi) // 2
        found = _next(table, ids[mid])
        if found is not None and found.time_millis < millis:
            lo = mid + 1
        else:
            hi = mid
    return ids[lo] if lo < len(ids) else ids[-1] + 1


def reads_changes(snapshot: Snapshot, changelog: bool, read_overwrite: bool) -> bool:
    """Whether a snapshot contributes changes to a follower (Paimon's follow-up scanners)."""
    if changelog:
        return bool(snapshot.changelog_manifest_list)
    return snapshot.commit_kind == APPEND or (read_overwrite and snapshot.commit_kind == OVERWRITE)


def follow(table: TableHandle, settings: FollowSettings, *, max_snapshots: int | None = None,
           select: Sequence[str] | None = None, where: str | None = None,
           engine_settings: EngineSettings | None = None,
           should_stop: Callable[[], bool] | None = None,
           sleep: Callable[[float], Any] = time.sleep) -> Iterator[ChangeBatch]:
    """Yield each snapshot's rows as it commits; see the module docstring.

    ``should_stop`` is checked between polls (a signal handler sets it). The consumer's
    position is recorded when the caller asks for the batch after the one it finished, and
    when following ends normally.

    Raises:
        NotFoundError: the start, or a snapshot not yet read, expired.
        UsageError: bad ``select`` / ``where``.
    """
    if max_snapshots is not None and max_snapshots < 1:
        raise UsageError(f"--max-snapshots must be 1 or more (got {max_snapshots})")
    check_options(table.schema, table.name, READ)
    data_evolution.refuse_incremental(table.schema, table.name)
    system_columns.refuse_in_changes(table.schema, select, where)
    start = plan_start(table, settings)
    consumers = ConsumerManager(table.file_io, table.branch_path) if settings.consumer_id else None
    log.info("following %s: mode %s, %s%s", table.name, start.mode,
             f"full snapshot {start.full_snapshot}, " if start.full_snapshot else "",
             f"changes from snapshot {start.next_id}" if start.next_id else "waiting for a compaction")
    read = 0
    next_id = start.next_id

    def record_position() -> None:
        if consumers is not None and next_id is not None:
            consumers.record(settings.consumer_id, next_id)

    if start.full_snapshot is not None:
        snap = table.snapshots.snapshot(start.full_snapshot)
        if _past_watermark(snap, settings.bounded_watermark):
            return
        yield ChangeBatch(snap.id, snap.commit_kind, snap.watermark, True,
                          _full_rows(table, snap.id, select, where, engine_settings))
        read += 1
    record_position()
    while max_snapshots is None or read < max_snapshots:
        if next_id is None:  # compacted-full, no compaction yet
            snap = table.snapshots.latest_compacted()
            if snap is not None:
                if _past_watermark(snap, settings.bounded_watermark):
                    return
                yield ChangeBatch(snap.id, snap.commit_kind, snap.watermark, True,
                                  _full_rows(table, snap.id, select, where, engine_settings))
                read += 1
                next_id = snap.id + 1
                record_position()
                continue
        elif (snap := _next(table, next_id)) is not None:
            if _past_watermark(snap, settings.bounded_watermark):
                return
            schema = table.schemas.schema(snap.schema_id)
            check_options(schema, table.name, READ)
            if reads_changes(snap, schema.core_options.changelog_producer != "none", settings.read_overwrite):
                yield ChangeBatch(snap.id, snap.commit_kind, snap.watermark, False,
                                  _change_rows(table, snap.id, select, where, engine_settings))
                read += 1
            next_id += 1
            record_position()
            continue
        else:
            _check_not_expired(table, next_id, "snapshot")
        if should_stop is not None and should_stop():
            return
        sleep(settings.poll_seconds)
        if should_stop is not None and should_stop():
            return


def _past_watermark(snapshot: Snapshot, bound: int | None) -> bool:
    """``scan.bounded.watermark``: reading ends at the first snapshot whose watermark passes it."""
    passed = bound is not None and snapshot.watermark is not None and snapshot.watermark > bound
    if passed:
        log.info("snapshot %d has watermark %d > bound %d: done", snapshot.id, snapshot.watermark, bound)
    return passed


def _full_rows(table: TableHandle, snapshot_id: int, select: Sequence[str] | None, where: str | None,
               engine_settings: EngineSettings | None) -> pa.Table:
    from core.ops.scan import scan

    data = scan(table, snapshot_id=snapshot_id, select=select, where=where, engine_settings=engine_settings)
    kinds = pa.array(["+I"] * data.num_rows, pa.string())
    return data.add_column(0, pa.field(ROW_KIND_COLUMN, pa.string(), False), kinds)


def _change_rows(table: TableHandle, snapshot_id: int, select: Sequence[str] | None, where: str | None,
                 engine_settings: EngineSettings | None) -> pa.Table:
    from core.ops.changes import changes

    return changes(table, snapshot_id - 1, snapshot_id, select=select, where=where,
                   engine_settings=engine_settings, streaming=True)


__all__ = ["ChangeBatch", "FollowSettings", "FollowStart", "SCAN_MODES", "SNAPSHOT_ID_COLUMN", "follow",
           "plan_start", "reads_changes", "resolve_settings"]
