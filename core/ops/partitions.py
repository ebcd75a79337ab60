"""Partition expiration: drop partitions whose time is older than ``partition.expiration-time``,
with one OVERWRITE snapshot that DELETEs all their files. ``partition.expiration-strategy``
says what the time of a partition is, as in Paimon: ``values-time`` (the default) reads it
from the partition's values, ``update-time`` takes its last update.

values-time: the time of a partition comes from ``partition.timestamp-pattern`` (``$dt``, ``$dt $hour:00:00``;
default: the first partition column's value) parsed with ``partition.timestamp-formatter``
(a Java DateTimeFormatter pattern such as ``yyyyMMdd``; default ``yyyy-MM-dd`` with an optional
`` HH:mm:ss``), as Paimon's values-time strategy does. A partition is expired when that time
is before now minus the expiration time (local wall-clock times, like Java's LocalDateTime).

Where Paimon skips partitions it cannot parse (so a misconfigured table silently never
expires), lakectl refuses with the reason before anything happens. The default partition
(null values) has no time and is never expired.

update-time: the time of a partition is the newest creation time (``_CREATION_TIME``, local
wall-clock time) of its live data files, Paimon's ``lastFileCreationTime`` of the partition;
a write or a compaction into the partition renews it. A partition is expired when that time is
before now minus the expiration time. Any partition can expire this way, the default partition
included (Java 1.0 fails on a null value there; later Paimon drops it, as lakectl does). Paimon
takes the newest creation time over the manifest entries of the snapshot, which may still hold
files deleted since (until the manifests are merged); lakectl takes the live files only. A
file without a creation time (older than any Paimon that wrote one) makes its partition's time
unknown, and lakectl refuses instead of guessing.

Data files are not removed here: old snapshots still reference them and still scan; snapshot
expiration deletes them later.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from core import branch_merge
from core import binary_row
from core.commit import FileStoreCommit, OverwriteSpec, latest_base_entries
from core.options import parse_duration
from core.errors import UsageError
from core.fileio import join
from core.partition import partition_path, render_value
from core.table_handle import TableHandle

log = logging.getLogger(__name__)

CHECK_HINT = "partition-expire-check"  # <table>/partition-expire-check: epoch millis of the last check
DEFAULT_CHECK_INTERVAL = "1h"
VALUES_TIME, UPDATE_TIME = "values-time", "update-time"  # partition.expiration-strategy (Java's enum)
STRATEGIES = (VALUES_TIME, UPDATE_TIME)


def expiration_strategy(options: dict[str, str]) -> str:
    """partition.expiration-strategy, lower case (Java matches its enum without case).

    Raises:
        UsageError: a value other than values-time or update-time.
    """
    text = options.get("partition.expiration-strategy", VALUES_TIME)
    strategy = text.strip().lower()
    if strategy not in STRATEGIES:
        raise UsageError(f"option partition.expiration-strategy={text} is not valid: partition.expiration-strategy "
                         f"takes one of {', '.join(STRATEGIES)}")
    return strategy


@dataclass(frozen=True, slots=True)
class PartitionExpireResult:
    table: str
    branch: str
    snapshot_id: int | None  # the OVERWRITE snapshot; None when nothing expired (or dry run)
    expire_before: str  # partitions whose time is before this expire (ISO 8601, local zone offset)
    # expired (or expiring) partitions, {column: value}: values-time oldest first, update-time
    # in the order of their values' text (Paimon's order, which partition.expiration-max-num cuts)
    partitions: tuple[dict[str, str], ...]
    files_deleted: int
    records_deleted: int
    dry_run: bool


_JAVA_TOKENS = re.compile(r"'[^']*'|yyyy|uuuu|yy|MM|dd|HH|hh|mm|ss|S+|a|[A-Za-z]|.", re.S)
_JAVA_TO_STRPTIME = {"yyyy": "%Y", "uuuu": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H",
                     "hh": "%I", "mm": "%M", "ss": "%S", "a": "%p"}


def strptime_format(java_pattern: str) -> str:
    """A Java DateTimeFormatter pattern (``yyyy-MM-dd HH:mm:ss``) as a strptime format.

    Raises:
        UsageError: a pattern letter lakectl does not translate.
    """
    out = []
    for token in _JAVA_TOKENS.findall(java_pattern):
        if token.startswith("'"):
            out.append(token[1:-1].replace("%", "%%") or "'")
        elif token in _JAVA_TO_STRPTIME:
            out.append(_JAVA_TO_STRPTIME[token])
        elif token[0] == "S":
            out.append("%f")
        elif token.isalpha():
            raise UsageError(f"partition.timestamp-formatter={java_pattern!r}: pattern letter {token!r} is not "
                             "supported (use y, M, d, H, h, m, s, S, a and quoted text)")
        else:
            out.append("%%" if token == "%" else token)
    return "".join(out)


_DEFAULT_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")


@dataclass(frozen=True, slots=True)
class PartitionTimeExtractor:
    """Partition values -> LocalDateTime, as Paimon's PartitionTimeExtractor."""

    keys: tuple[str, ...]
    pattern: str | None
    formatter: str | None

    def text(self, values: dict[str, str]) -> str:
        if self.pattern is None:
            return values[self.keys[0]]
        text = self.pattern
        for key in sorted(self.keys, key=len, reverse=True):  # $dt before $d
            text = text.replace(f"${key}", values[key])
        return text

    def extract(self, values: dict[str, str]) -> datetime:
        """Raises ValueError when the text does not parse."""
        text = self.text(values)
        formats = (strptime_format(self.formatter),) if self.formatter else _DEFAULT_FORMATS
        for fmt in formats:
            try:
                return datetime.strptime(text, fmt)
            except ValueError:
                continue
        raise ValueError(f"{text!r} does not match {self.formatter or 'yyyy-MM-dd[ HH:mm:ss]'}")


def expire_partitions(table: TableHandle, *, expiration_time: str | None = None, max_expires: int | None = None,
                      dry_run: bool = False, now: datetime | None = None) -> PartitionExpireResult:
    """Drop the partitions older than the expiration time as one OVERWRITE snapshot.

    Args:
        table: an existing partitioned table.
        expiration_time: such as ``7d``; default the option partition.expiration-time.
        max_expires: expire at most this many partitions (default: the option
            partition.expiration-max-num if set, else all): by values-time the oldest first,
            by update-time the first by their values' text, as Paimon cuts them.
        dry_run: report what would expire; commit nothing.
        now: the current local time (tests); default ``datetime.now()``.

    Returns:
        The expired partitions (each ``{column: value}``, as ``files`` shows them) and the new snapshot.

    Raises:
        UsageError: no expiration time, an unpartitioned table, bad options, partition
            values that the timestamp pattern and formatter cannot read (values-time), or
            data files without a creation time (update-time).
        CommitConflictError: the commit did not land.
    """
    branch_merge.refuse(table.schema, table.name, "expire-partitions")
    schema = table.schema
    opts = schema.options
    fields = schema.partition_fields
    if not fields:
        raise UsageError(f"table {table.name} is not partitioned; there are no partitions to expire")
    expiration_text = expiration_time if expiration_time is not None else opts.get("partition.expiration-time")
    if expiration_text is None:
        raise UsageError("no expiration time: pass --expiration-time (e.g. 7d) or set option "
                         "partition.expiration-time")
    expiration = parse_duration(expiration_text, "partition.expiration-time")
    if expiration <= timedelta(0):
        raise UsageError(f"partition.expiration-time={expiration_text} must be positive")
    if max_expires is None and "partition.expiration-max-num" in opts:
        max_expires = int(opts["partition.expiration-max-num"])
    if max_expires is not None and max_expires < 1:
        raise UsageError(f"max expires {max_expires} must be at least 1")
    strategy = expiration_strategy(opts)
    extractor = PartitionTimeExtractor(tuple(f.name for f in fields), opts.get("partition.timestamp-pattern"),
                                       opts.get("partition.timestamp-formatter"))
    if strategy == VALUES_TIME and extractor.pattern is not None:
        unknown = set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", extractor.pattern)) - set(extractor.keys)
        if unknown:
            raise UsageError(f"partition.timestamp-pattern={extractor.pattern!r} names {', '.join(sorted(unknown))}, "
                             f"not a partition column ({', '.join(extractor.keys)})")
    if strategy == VALUES_TIME and extractor.formatter:
        strptime_format(extractor.formatter)  # refuse unknown letters even on an empty table
    now = now or datetime.now()
    cutoff = now - expiration

    snapshot, entries = latest_base_entries(table.snapshots, table.manifests(),
                                            schema.core_options.commit_max_retries)
    # Partition times are zone-less local times, as in Paimon: the cutoff is printed with the
    # local offset, so it reads as the same instant everywhere.
    before = cutoff.astimezone().isoformat(timespec="milliseconds")
    empty = PartitionExpireResult(table.name, table.branch, None, before, (), 0, 0, dry_run)
    if snapshot is None:
        return empty
    types = [f.type for f in fields]
    default_name = schema.core_options.partition_default_name
    by_partition: dict[bytes, list[Any]] = {}
    for e in entries:
        by_partition.setdefault(e.partition, []).append(e)
    if strategy == UPDATE_TIME:
        expired = _updated_before(by_partition, cutoff, table.name, types, fields, default_name)
    else:
        expired = _valued_before(by_partition, cutoff, table.name, types, fields, default_name, extractor)
    if max_expires is not None:
        expired = expired[:max_expires]
    if not expired:
        return empty
    parts = frozenset(p for _, _, p, _ in expired)
    dropped = [e for e in entries if e.partition in parts]
    names = tuple(name for _, name, _, _ in expired)
    values = tuple(texts for _, _, _, texts in expired)
    files = len(dropped)
    records = sum(e.file.row_count for e in dropped)
    if dry_run:
        return PartitionExpireResult(table.name, table.branch, None, before, values, files, records, True)
    committed = FileStoreCommit(table.file_io, table.path, schema, branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit()).commit([], overwrite=OverwriteSpec(parts))
    log.info("expired %d partition(s) of %s: %s", len(names), table.name, ", ".join(names))
    return PartitionExpireResult(table.name, table.branch, committed.id if committed else None, before, values, files, records,
                                 False)


Expiring = list[tuple[Any, str, bytes, dict[str, str]]]  # (sort key, path, partition, {column: value})


def _valued_before(by_partition: dict[bytes, list[Any]], cutoff: datetime, table_name: str, types: list[Any],
                   fields: list[Any], default_name: str, extractor: PartitionTimeExtractor) -> Expiring:
    """values-time: the partitions whose values read as a time before ``cutoff``, oldest first."""
    expired: Expiring = []
    unreadable: list[str] = []
    for part in by_partition:
        values = binary_row.decode(part, types)
        name = partition_path(values, fields, default_name)
        if any(v is None for v in values):
            continue  # the default partition has no time
        texts = {f.name: render_value(v, f.type) for f, v in zip(fields, values)}
        try:
            when = extractor.extract(texts)
        except ValueError as e:
            unreadable.append(f"{name} ({e})")
            continue
        if when < cutoff:
            expired.append((when, name, part, texts))
    if unreadable:
        raise UsageError(
            f"cannot read a time from {len(unreadable)} partition(s) of {table_name}, e.g. "
            f"{'; '.join(sorted(unreadable)[:3])}, with partition.timestamp-pattern="
            f"{extractor.pattern or '$' + extractor.keys[0]} and partition.timestamp-formatter="
            f"{extractor.formatter or 'yyyy-MM-dd[ HH:mm:ss]'}; Paimon would never expire these partitions. "
            "Fix those options (or use partition.expiration-strategy=update-time); nothing was expired")
    expired.sort()
    return expired


def _updated_before(by_partition: dict[bytes, list[Any]], cutoff: datetime, table_name: str, types: list[Any],
                    fields: list[Any], default_name: str) -> Expiring:
    """update-time: the partitions whose newest live file was created before ``cutoff``, in
    the order of their values joined by commas (Paimon's order), the default partition too."""
    # _CREATION_TIME is local wall-clock time stored as if it were UTC epoch millis, and the
    # cutoff is a local time: comparing them as such is Java's comparison of both in the zone.
    cutoff_ms = int(cutoff.replace(tzinfo=timezone.utc).timestamp() * 1000)
    expired: Expiring = []
    unknown: list[str] = []
    for part, part_entries in by_partition.items():
        values = binary_row.decode(part, types)
        name = partition_path(values, fields, default_name)
        created = [e.file.creation_time for e in part_entries]
        if any(c is None for c in created):
            unknown.append(name)
            continue
        if cutoff_ms > max(created):
            texts = {f.name: default_name if v is None else render_value(v, f.type) for f, v in zip(fields, values)}
            expired.append((",".join(texts.values()), name, part, texts))
    if unknown:
        raise UsageError(f"cannot tell when {len(unknown)} partition(s) of {table_name} were last updated, e.g. "
                         f"{'; '.join(sorted(unknown)[:3])}: data files without a creation time, which "
                         "partition.expiration-strategy=update-time reads; nothing was expired")
    expired.sort()
    return expired


def expire_partitions_after_commit(table: TableHandle, engine: Any) -> PartitionExpireResult | None:
    """The post-commit step: when partition.expiration-time is set and the last check (the
    ``partition-expire-check`` hint) is older than partition.expiration-check-interval,
    expire partitions. None when it did nothing."""
    opts = table.schema.options
    if "partition.expiration-time" not in opts or branch_merge.enabled(table.schema):
        return None  # (a writer never drops partitions of a pure-append history: core/branch_merge.py)
    interval = parse_duration(opts.get("partition.expiration-check-interval", DEFAULT_CHECK_INTERVAL),
                              "partition.expiration-check-interval")
    hint = join(table.path, CHECK_HINT)
    now_ms = int(time.time() * 1000)
    if table.file_io.exists(hint):
        try:
            last = int(table.file_io.read_text(hint).strip())
        except ValueError:
            last = None  # a torn or foreign hint: check now and rewrite it
        if last is not None and now_ms - last <= interval.total_seconds() * 1000:
            return None
    # Remember the check first: a refused or failing expiration is not retried on every commit.
    table.file_io.overwrite_hint(hint, str(now_ms))
    result = expire_partitions(table)
    return result if result.snapshot_id is not None else None


__all__ = ["PartitionExpireResult", "PartitionTimeExtractor", "STRATEGIES", "expiration_strategy", "expire_partitions",
           "expire_partitions_after_commit", "parse_duration", "strptime_format"]
