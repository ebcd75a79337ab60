"""The values Paimon's table options take, checked when an option is set.

Java Paimon reads every option as a typed value (``CoreOptions``: an Integer, a Long, a Boolean,
a Duration, a MemorySize or an enum) and fails on a value that does not parse, often only deep
inside a later commit or expire; a few it also refuses out of range (``SchemaValidation``:
``snapshot.num-retained.min`` >= 1, a bucket count >= 1 or -1). A bad value set through lakectl
used to be stored as it came and break the table later (``commit.max-retries=-1`` made every
commit, and the alter-schema that would undo it, give up after 0 tries). So:

- ``create`` and ``alter-schema`` refuse a bad value when it is set (``check_values``, called
  from ``core.options.validate`` and for each ``--set-option`` by ``core.ops.alter``): one line
  naming the option and what it takes;
- writes and maintenance refuse a table that already carries one (from an older lakectl or a
  hand edit) for an option lakectl acts on (``core.option_rules.check_options``), naming the
  alter-schema that repairs it; ``alter-schema --reset-option`` itself always works.

Values are parsed as Java parses them, which is stricter than lakectl's own flags: a duration
is a whole number and one of Java's units (``90 min``, not ``1.5 h`` or ``2 w``), a size a whole
number and one of Java's units. Options of free text (names, patterns, formats lakectl checks
in ``core.options.validate``) are listed in ``TEXT_OPTIONS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from core.errors import UsageError
from core.option_parsing import JAVA_INT_MAX, JAVA_LONG_MAX, MAX_DURATION_DAYS, parse_duration, parse_size

JAVA_INT_MIN, JAVA_LONG_MIN = -(2**31), -(2**63)

# The most buckets lakectl lets a table be created or altered with. Java holds any int, but each
# bucket is a directory with its own files in every partition written to, and a write keeps one
# writer per bucket it touches: past a million, even one row per bucket is a million files, so
# a larger count is a typo (a bucket size in bytes, a row count), not a layout. A table that
# already has more (made by Java) is still read, written and maintained.
MAX_BUCKETS = 1_000_000

INT, LONG, BOOL, DURATION, SIZE, ENUM, NUMBER = "int", "long", "bool", "duration", "size", "enum", "number"

# Java's TimeUtils labels (lower case, as Java compares them); lakectl's flags take more.
_JAVA_DURATION_UNITS = {"", "d", "day", "days", "h", "hour", "hours", "min", "m", "minute", "minutes", "s", "sec",
                        "secs", "second", "seconds", "ms", "milli", "millis", "millisecond", "milliseconds", "µs",
                        "micro", "micros", "microsecond", "microseconds", "ns", "nano", "nanos", "nanosecond",
                        "nanoseconds"}


@dataclass(frozen=True, slots=True)
class ValueRule:
    """What one option takes. ``low``/``high``: the range of a whole number, ``excluded`` values
    inside it; ``set_high``: a stricter upper bound for a value being set (bucket);
    ``positive``: a duration or size must be more than 0; ``choices``: an enum's values
    (matched case-insensitively, as Java does); ``note``: why, for the message."""

    kind: str
    low: int = 0
    high: int = 0
    excluded: tuple[int, ...] = ()
    set_high: int | None = None
    choices: tuple[str, ...] = ()
    positive: bool = False
    note: str = ""

    def takes(self, *, setting: bool) -> str:
        """What the option takes, as the message says it."""
        if self.kind in (INT, LONG):
            high = self.set_high if setting and self.set_high is not None else self.high
            return f"an integer from {self.low} to {high}"
        if self.kind == BOOL:
            return "true or false"
        if self.kind == DURATION:
            least = "more than 0" if self.positive else "0 or more"
            return (f"a duration of {least}: a whole number and a unit (ms, s, min, h, d), such as 90 min or 7 d, "
                    f"at most {MAX_DURATION_DAYS} d")
        if self.kind == SIZE:
            least = "more than 0 bytes" if self.positive else "0 bytes or more"
            return f"a size of {least}: a whole number and a unit (b, kb, mb, gb, tb), such as 128 mb"
        if self.kind == ENUM:
            return "one of " + ", ".join(self.choices)
        return "a number"

    def accepts(self, value: str, *, setting: bool) -> bool:
        text = value.strip()
        if self.kind in (INT, LONG):
            if not re.fullmatch(r"[+-]?\d+", text):
                return False
            high = self.set_high if setting and self.set_high is not None else self.high
            return self.low <= int(text) <= high and int(text) not in self.excluded
        if self.kind == BOOL:
            return text.lower() in ("true", "false")
        if self.kind == DURATION:
            return _java_duration_ok(text, self.positive)
        if self.kind == SIZE:
            return _java_size_ok(text, self.positive)
        if self.kind == ENUM:
            return text.lower() in self.choices
        return re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text) is not None


def _java_duration_ok(text: str, positive: bool) -> bool:
    """Whether Java's TimeUtils.parseDuration reads ``text`` (digits, then a unit label) and
    lakectl takes the length (at most MAX_DURATION_DAYS)."""
    m = re.fullmatch(r"(\d+)\s*(\S*)", text)
    if not m or m.group(2).lower() not in _JAVA_DURATION_UNITS:
        return False
    try:
        length = parse_duration(text)
    except UsageError:
        return False
    return length.total_seconds() > 0 or not positive


def _java_size_ok(text: str, positive: bool) -> bool:
    """Whether Java's MemorySize.parse reads ``text`` within a long of bytes."""
    try:
        return parse_size(text, "size") > 0 or not positive
    except UsageError:
        return False


def _int(low: int = JAVA_INT_MIN, note: str = "") -> ValueRule:
    return ValueRule(INT, low, JAVA_INT_MAX, note=note)


def _enum(*choices: str) -> ValueRule:
    return ValueRule(ENUM, choices=choices)


VALUE_RULES: dict[str, ValueRule] = {}


def _add(rule: ValueRule, *keys: str) -> None:
    for key in keys:
        VALUE_RULES[key] = rule


# ---- the table: Java Paimon 1.0's CoreOptions by type (the enums with the values newer
# Paimon added), then the newer and Flink options lakectl honours -----------------------------
_add(ValueRule(INT, -2, JAVA_INT_MAX, excluded=(0,), set_high=MAX_BUCKETS,
               note=" other than 0 (-1: dynamic bucket mode, or unaware for append tables; -2: postpone mode)"),
     "bucket")
_add(_int(0, " (0 still makes one attempt; it is the number of retries after a lost race)"), "commit.max-retries")
_add(_int(1, " (the latest snapshot is always kept; Paimon refuses fewer)"),
     "snapshot.num-retained.min", "snapshot.num-retained.max")
_add(_int(1, " (with 0 an expire would never remove a snapshot)"), "snapshot.expire.limit")
_add(_int(1), "changelog.num-retained.min", "changelog.num-retained.max", "num-sorted-run.compaction-trigger",
     "num-sorted-run.stop-trigger", "full-compaction.delta-commits", "partition.expiration-max-num",
     "tag.num-retained-max", "dynamic-bucket.initial-buckets", "dynamic-bucket.assigner-parallelism")
_add(_int(2, " (level 0 and at least one level to compact to)"), "num-levels")
_add(_int(-1, " (-1: no limit)"), "dynamic-bucket.max-buckets")
# Tuning (mostly lakectl does not act on it; the compaction counts and ratios it does read):
# Java's type is checked, not a range.
_add(_int(), "compaction.max-size-amplification-percent", "compaction.max.file-num", "compaction.min.file-num",
     "compaction.early-max.file-num",
     "compaction.size-ratio", "cross-partition-upsert.bootstrap-parallelism", "delete-file.thread-num",
     "file.compression.zstd-level", "local-sort.max-num-file-handles", "manifest.merge-min-count",
     "read.batch-size", "scan.manifest.parallelism", "scan.max-splits-per-task",
     "sort-compaction.local-sample.magnification", "sort-spill-threshold", "spill-compression.zstd-level",
     "write-max-writers-to-spill", "write.batch-size", "zorder.var-length-contribution",
     "scan.parallelism", "sink.parallelism")
_add(ValueRule(LONG, 1, JAVA_LONG_MAX), "dynamic-bucket.target-row-num")
_add(ValueRule(LONG, JAVA_LONG_MIN, JAVA_LONG_MAX), "scan.bounded.watermark", "scan.file-creation-time-millis",
     "scan.snapshot-id", "scan.timestamp-millis", "scan.watermark")
_add(ValueRule(BOOL), "async-file-write", "auto-create", "changelog-producer.row-deduplicate", "commit.force-compact",
     "commit.force-create-snapshot", "consumer.ignore-progress", "data-file.thin-mode",
     "delete.force-produce-changelog", "deletion-vectors.enabled", "deletion-vectors.bitmap64",
     "dynamic-partition-overwrite",
     "end-input.check-partition-expire", "file-index.read.enabled", "file.suffix.include.compression",
     "force-lookup", "ignore-delete", "lookup-wait", "lookup.cache.bloom.filter.enabled",
     "manifest.delete-file-drop-stats", "metadata.stats-dense-store", "metastore.partitioned-table",
     "partial-update.remove-record-on-delete", "partition.legacy-name", "scan.plan-sort-partition",
     "snapshot.clean-empty-directories", "streaming-read-overwrite", "tag.automatic-completion",
     "write-buffer-for-append", "write-buffer-spillable", "write-only", "scan.infer-parallelism",
     "deduplicate.ignore-delete", "first-row.ignore-delete", "partial-update.ignore-delete",
     "aggregation.remove-record-on-delete", "data-evolution.enabled", "row-tracking.enabled",
     "deletion-vectors.merge-on-read", "metadata.iceberg-compatible", "branch-merge.enabled")
_add(ValueRule(DURATION), "changelog.time-retained", "commit.timeout", "compaction.optimization-interval",
     "consumer.expiration-time", "continuous.discovery-interval", "cross-partition-upsert.index-ttl",
     "lookup.cache-file-retention", "partition.expiration-check-interval", "record-level.expire-time",
     "snapshot.time-retained", "snapshot.watermark-idle-timeout", "streaming.read.snapshot.delay",
     "tag.creation-delay", "tag.default-time-retained", "commit.min-retry-wait", "commit.max-retry-wait")
_add(ValueRule(DURATION, positive=True, note=" (partition expiration drops partitions older than it)"),
     "partition.expiration-time")
_add(ValueRule(SIZE), "cache-page-size", "deletion-vector.index-file.target-size", "file-index.in-manifest-threshold",
     "file-reader-async-threshold", "file.block-size", "local-merge-buffer-size", "lookup.cache-max-disk-size",
     "lookup.cache-max-memory-size",
     "page-size", "sort-spill-buffer-size", "source.split.open-file-cost", "source.split.target-size",
     "write-buffer-spill.max-disk-size", "write-manifest-cache")
_add(ValueRule(SIZE, positive=True), "target-file-size", "write-buffer-size", "manifest.target-file-size")
_add(ValueRule(SIZE, positive=True, note=" (Paimon's commits fail on 0)"), "manifest.full-compaction-threshold-size")
_add(ValueRule(NUMBER), "lookup.cache.bloom.filter.fpp", "lookup.cache.high-priority-pool-ratio",
     "lookup.hash-load-factor")
_add(_enum("deduplicate", "partial-update", "aggregation", "first-row"), "merge-engine")
_add(_enum("none", "input", "full-compaction", "lookup"), "changelog-producer")
_add(_enum("exactly-once", "at-least-once"), "consumer.mode")
_add(_enum("auto", "delta", "changelog", "diff"), "incremental-between-scan-mode")
_add(_enum("auto", "all", "upsert"), "log.changelog-mode")
_add(_enum("transactional", "eventual"), "log.consistency")
_add(_enum("sort", "hash"), "lookup.local-file-type")
_add(_enum("none", "process-time", "watermark", "batch"), "tag.automatic-creation",
     "metastore.tag-to-partition.preview")
_add(_enum("default", "latest-full", "full", "latest", "latest-delta", "compacted-full", "from-timestamp",
           "from-creation-timestamp", "from-file-creation-time", "from-snapshot", "from-snapshot-full",
           "incremental"), "scan.mode")
_add(_enum("ascending", "descending"), "sequence.field.sort-order")
_add(_enum("sync", "async"), "snapshot.expire.execution-mode")
_add(_enum("size", "quantity"), "sort-compaction.range-strategy")
_add(_enum("min-heap", "loser-tree"), "sort-engine")
_add(_enum("none", "compact-bucket-table", "file-monitor"), "stream-scan-mode")
_add(_enum("log", "file"), "streaming-read-mode")
_add(_enum("daily", "hourly", "two-hours"), "tag.creation-period")
_add(_enum("with_dashes", "without_dashes", "without_dashes_and_spaces"), "tag.period-formatter")
_add(_enum("default", "mod", "hive"), "bucket-function.type")
_add(_enum("values-time", "update-time"), "partition.expiration-strategy")  # an enum in Java 1.0

# Java 1.0 options whose value is free text to this table: names, patterns, formats and
# compressions (the ones lakectl writes are checked in core.options.validate), materialized-table
# settings, maps, and parquet.enable.dictionary (an int in CoreOptions, but read by Parquet as a
# boolean, which is how tables carry it).
TEXT_OPTIONS = frozenset({
    "branch", "bucket-key", "changelog-file.prefix", "changelog-producer.row-deduplicate-ignore-fields",
    "commit.callback.#.param", "commit.callbacks", "commit.user-prefix", "consumer-id", "data-file.path-directory",
    "data-file.prefix", "file.compression", "file.compression.per.level", "file.format", "file.format.per.level",
    "incremental-between", "incremental-between-timestamp", "log.format", "log.key.format",
    "lookup.cache-spill-compression", "manifest.compression", "manifest.format", "metadata.stats-mode",
    "metastore.tag-to-partition", "partial-update.remove-record-on-sequence-group", "partition",
    "partition.default-name", "partition.mark-done-action",
    "partition.timestamp-formatter", "partition.timestamp-pattern", "path", "primary-key", "record-level.time-field",
    "record-level.time-field-type", "rowkind.field", "scan.fallback-branch", "scan.tag-name", "scan.timestamp",
    "scan.version", "sequence.field", "sink.watermark-time-zone", "spill-compression", "tag.callback.#.param",
    "tag.callbacks", "fields.default-aggregate-function", "parquet.enable.dictionary", "type",
    "materialized-table.definition-query",
    "materialized-table.interval-freshness", "materialized-table.interval-freshness.time-unit",
    "materialized-table.logical-refresh-mode", "materialized-table.refresh-mode",
    "materialized-table.refresh-status", "materialized-table.refresh-handler-description",
    "materialized-table.refresh-handler-bytes", "object-location",
})


def problem(key: str, value: str, *, setting: bool = True) -> str | None:
    """What ``key`` takes, when ``value`` is not one of those values (None: fine, or an option
    this table does not type). ``setting``: the value is being set, so the stricter bounds
    for new values apply (``MAX_BUCKETS``)."""
    rule = VALUE_RULES.get(key)
    if rule is None or not isinstance(value, str) or rule.accepts(value, setting=setting):
        return None
    return rule.takes(setting=setting) + rule.note


def check_value(key: str, value: str) -> None:
    """Refuse a value being set for ``key``: UsageError (exit 2) naming the option and what it takes."""
    takes = problem(key, value)
    if takes is not None:
        raise UsageError(f"option {key}={value} is not valid: {key} takes {takes}")


def check_values(options: Mapping[str, str]) -> None:
    """``check_value`` for every option, in key order."""
    for key in sorted(options):
        check_value(key, options[key])


def invalid_values(options: Mapping[str, str], keys: frozenset[str] | set[str] | None = None
                   ) -> list[tuple[str, str, str]]:
    """(key, value, what it takes) of each option a table carries with a value Paimon cannot
    read (only among ``keys`` when given), in key order. Only Java's own bounds apply here:
    a table Java made with more than MAX_BUCKETS buckets is a valid table."""
    found = []
    for key in sorted(options):
        if keys is not None and key not in keys:
            continue
        takes = problem(key, options[key], setting=False)
        if takes is not None:
            found.append((key, options[key], takes))
    return found


__all__ = ["MAX_BUCKETS", "TEXT_OPTIONS", "VALUE_RULES", "ValueRule", "check_value", "check_values",
           "invalid_values", "problem"]
