"""Partition expiration: drop partitions whose time, read from their values, is older than
``partition.expiration-time``, with one OVERWRITE snapshot that DELETEs all their files.

The time of a partition comes from ``partition.timestamp-pattern`` (``$dt``, ``$dt $hour:00:00``;
default: the first partition column's value) parsed with ``partition.timestamp-formatter``
(a Java DateTimeFormatter pattern such as ``yyyyMMdd``; default ``yyyy-MM-dd`` with an optional
`` HH:mm:ss``), as Paimon's values-time strategy does. A partition is expired when that time
is before now minus the expiration time (local wall-clock times, like Java's LocalDateTime).

Where Paimon skips partitions it cannot parse (so a misconfigured table silently never
expires), lakectl refuses with the reason before anything happens. The default partition
(null values) has no time and is never expired.

Data files are not removed here: old snapshots still reference them and still scan; snapshot
expiration deletes them later.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

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

@dataclass(frozen=True, slots=True)
class PartitionExpireResult:
    table: str
    branch: str
    snapshot_id: int | None  # the OVERWRITE snapshot; None when nothing expired (or dry run)
    expire_before: str  # partitions whose time is before this expire (ISO 8601, local zone offset)
    partitions: tuple[dict[str, str], ...]  # expired (or expiring) partitions, oldest first: {column: value}
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
        max_expires: expire at most this many partitions, the oldest first (default: the
            option partition.expiration-max-num if set, else all).
        dry_run: report what would expire; commit nothing.
        now: the current local time (tests); default ``datetime.now()``.

    Returns:
        The expired partitions (each ``{column: value}``, as ``files`` shows them) and the new snapshot.

    Raises:
        UsageError: no expiration time, an unpartitioned table, bad options, or partition
            values that the timestamp pattern and formatter cannot read.
        CommitConflictError: the commit did not land.
    """
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
    strategy = opts.get("partition.expiration-strategy", "values-time")
    if strategy != "values-time":
        raise UsageError(f"partition.expiration-strategy={strategy} is not supported yet (only values-time)")
    extractor = PartitionTimeExtractor(tuple(f.name for f in fields), opts.get("partition.timestamp-pattern"),
                                       opts.get("partition.timestamp-formatter"))
    if extractor.pattern is not None:
        unknown = set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", extractor.pattern)) - set(extractor.keys)
        if unknown:
            raise UsageError(f"partition.timestamp-pattern={extractor.pattern!r} names {', '.join(sorted(unknown))}, "
                             f"not a partition column ({', '.join(extractor.keys)})")
    if extractor.formatter:
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
    expired: list[tuple[datetime, str, bytes, dict[str, str]]] = []
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
            f"cannot read a time from {len(unreadable)} partition(s) of {table.name}, e.g. "
            f"{'; '.join(sorted(unreadable)[:3])}, with partition.timestamp-pattern="
            f"{extractor.pattern or '$' + extractor.keys[0]} and partition.timestamp-formatter="
            f"{extractor.formatter or 'yyyy-MM-dd[ HH:mm:ss]'}; Paimon would never expire these partitions. "
            "Fix those options; nothing was expired")
    expired.sort()
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
    committed = FileStoreCommit(table.file_io, table.path, schema, branch_path=table.branch_path).commit([], overwrite=OverwriteSpec(parts))
    log.info("expired %d partition(s) of %s: %s", len(names), table.name, ", ".join(names))
    return PartitionExpireResult(table.name, table.branch, committed.id if committed else None, before, values, files, records,
                                 False)


def expire_partitions_after_commit(table: TableHandle, engine: Any) -> PartitionExpireResult | None:
    """The post-commit step: when partition.expiration-time is set and the last check (the
    ``partition-expire-check`` hint) is older than partition.expiration-check-interval,
    expire partitions. None when it did nothing."""
    opts = table.schema.options
    if "partition.expiration-time" not in opts:
        return None
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


__all__ = ["PartitionExpireResult", "PartitionTimeExtractor", "expire_partitions",
           "expire_partitions_after_commit", "parse_duration", "strptime_format"]
