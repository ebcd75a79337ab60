"""Table options: the string map of a schema file, read as typed values with Paimon's defaults.

Only options lakectl acts on are listed. Unknown options are kept verbatim in the schema
(other Paimon engines may use them); options whose value lakectl cannot honour are refused
at create time, and on tables other engines made by ``core.option_rules.check_options`` when
a command opens them to read, write or expire, so a table never silently behaves differently
from Paimon.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Callable, Mapping, TypeVar

from core import branch_merge, external_paths
from core.errors import UsageError
from core.option_values import check_values

T = TypeVar("T")

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
BATCH_COMMIT_IDENTIFIER = 9223372036854775807  # Long.MAX: what Paimon batch writers use
DEFAULT_COMMIT_MAX_RETRIES = 10  # Paimon's commit.max-retries
# Paimon's snapshot retention defaults (snapshot.num-retained.min/max, snapshot.time-retained,
# snapshot.expire.limit): expire's, and those the changelog.* options default to.
INTEGER_MAX = 2**31 - 1
DEFAULT_RETAIN_MIN = 10
DEFAULT_RETAIN_MAX = INTEGER_MAX
DEFAULT_TIME_RETAINED = "1h"
DEFAULT_EXPIRE_LIMIT = 10

# Values lakectl supports for options that change how data is stored or merged.
SUPPORTED_VALUES = {
    "merge-engine": {"deduplicate", "partial-update", "aggregation", "first-row"},
    "changelog-producer": {"none", "input", "lookup", "full-compaction"},
    "file.format": {"parquet", "orc", "avro"},
    "bucket-function.type": {"default"},
    "deletion-vectors.enabled": {"false", "true"},
    "write-mode": {"append-only", "change-log", "auto"},
}

# Java's MemorySize units (a bare number is bytes).
from core.option_parsing import (JAVA_INT_MAX, JAVA_LONG_MAX, MAX_DURATION_DAYS, check_limit,  # noqa: F401
                                 parse_bool, parse_duration, parse_int, parse_size)

@dataclass(frozen=True, slots=True)
class CoreOptions:
    """Typed view of the options lakectl reads."""

    raw: Mapping[str, str]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def _read(self, parse: Callable[[str, str], T], key: str, default: str | None = None) -> T:
        """``parse`` of the table's value of ``key`` (else ``default``). Values are checked when
        they are set (``core.option_values``), so a bad one was stored before that or by hand:
        the error says how to repair the table."""
        try:
            return parse(self.raw[key] if default is None else self.raw.get(key, default), key)
        except UsageError as e:
            raise UsageError(f"{e}; repair the table with lakectl alter-schema DB.TABLE --set-option {key}=VALUE "
                             f"or --reset-option {key}") from None

    @property
    def bucket(self) -> int:
        return self._read(parse_int, "bucket", "-1")

    @property
    def bucket_key(self) -> list[str]:
        text = self.raw.get("bucket-key", "")
        return [c.strip() for c in text.split(",") if c.strip()]

    @property
    def partition_default_name(self) -> str:
        return self.raw.get("partition.default-name", DEFAULT_PARTITION_NAME)

    @property
    def target_file_size(self) -> int:
        # Paimon: 128 MB for primary-key tables, 256 MB for append tables; callers pass
        # the kind through file_size_for().
        return self._read(parse_size, "target-file-size") if "target-file-size" in self.raw else 0

    def file_size_for(self, has_primary_key: bool) -> int:
        return self.target_file_size or ((128 if has_primary_key else 256) << 20)

    @property
    def file_compression(self) -> str:
        return self.raw.get("file.compression", "zstd")

    @property
    def file_format(self) -> str:
        """file.format: the format new data files are written in (Paimon 1.0's default is
        parquet; schema files of version 2 and older default to orc, see ``core.schema``)."""
        return self.raw.get("file.format", "parquet").strip().lower()

    @property
    def zstd_level(self) -> int:
        return self._read(parse_int, "file.compression.zstd-level", "1")

    @property
    def parquet_block_size(self) -> int:
        """parquet.block.size: the Parquet row group size in bytes (parquet-java's 128 mb).
        Smaller row groups let a selective scan skip more by row-group stats."""
        return self._read(parse_size, "parquet.block.size", "128 mb")

    @property
    def parquet_page_size(self) -> int:
        """parquet.page.size: the target data page size in bytes (1 mb)."""
        return self._read(parse_size, "parquet.page.size", "1 mb")

    @property
    def manifest_compression(self) -> str:
        return self.raw.get("manifest.compression", "zstd")

    @property
    def manifest_target_file_size(self) -> int:
        """manifest.target-file-size: the size of a merged manifest (8 mb)."""
        return self._read(parse_size, "manifest.target-file-size", "8 mb")

    @property
    def manifest_merge_min_count(self) -> int:
        """manifest.merge-min-count: how many small manifests a commit lets pile up before it
        merges them (30)."""
        return self._read(parse_int, "manifest.merge-min-count", "30")

    @property
    def manifest_full_compaction_size(self) -> int:
        """manifest.full-compaction-threshold-size: the size of manifests to rewrite (small ones,
        or ones holding deletes) past which a commit rewrites them all (16 mb)."""
        return self._read(parse_size, "manifest.full-compaction-threshold-size", "16 mb")

    @property
    def stats_mode(self) -> str:
        return self.raw.get("metadata.stats-mode", "truncate(16)").strip().lower()

    @property
    def plan_sort_partition(self) -> bool:
        return self._read(parse_bool, "scan.plan-sort-partition", "false")

    @property
    def data_file_prefix(self) -> str:
        return self.raw.get("data-file.prefix", "data-")

    @property
    def commit_max_retries(self) -> int:
        """Retries after a lost race: a commit always makes at least one attempt, as Java's does
        whatever the option says (a table may carry a value set before lakectl checked it)."""
        retries = self._read(parse_int, "commit.max-retries", str(DEFAULT_COMMIT_MAX_RETRIES))
        return min(max(retries, 0), JAVA_INT_MAX)

    @property
    def num_sorted_run_compaction_trigger(self) -> int:
        return self._read(parse_int, "num-sorted-run.compaction-trigger", "5")

    def compaction_max_file_num(self, bucket_unaware: bool) -> int:
        """compaction.max.file-num (or Paimon's older key compaction.early-max.file-num): the
        most files one non-full compaction of an append bucket rewrites. Paimon 1.0 has no
        single default: 5 for bucketed append tables (its writers' compact manager), 50 for
        bucket-unaware ones (``bucket=-1``, its compaction coordinator)."""
        for key in ("compaction.max.file-num", "compaction.early-max.file-num"):
            if key in self.raw:
                return self._read(parse_int, key)
        return 50 if bucket_unaware else 5

    @property
    def compaction_min_file_num(self) -> int:
        """compaction.min.file-num (5): the files a non-full compaction of a bucketed append
        bucket waits for, unless they reach target-file-size together first."""
        if "compaction.min.file-num" in self.raw:
            return self._read(parse_int, "compaction.min.file-num")
        return 5

    @property
    def num_levels(self) -> int:
        """LSM levels of primary-key buckets; full compaction writes the top one (num-levels - 1)."""
        if "num-levels" in self.raw:
            return self._read(parse_int, "num-levels")
        return self.num_sorted_run_compaction_trigger + 1

    def scan_parallelism(self, splits: int) -> int | None:
        """Spark scan tasks: `scan.parallelism` if set; else one per split when
        `scan.infer-parallelism` (default true), else None (Spark's default parallelism)."""
        if "scan.parallelism" in self.raw:
            return max(1, self._read(parse_int, "scan.parallelism"))
        if self._read(parse_bool, "scan.infer-parallelism", "true"):
            return max(1, splits)
        return None

    @property
    def changelog_producer(self) -> str:
        return (self.raw.get("changelog-producer") or "none").strip().lower()

    @property
    def changelog_row_deduplicate(self) -> bool:
        """changelog-producer.row-deduplicate: no -U/+U pair when a key's value did not change."""
        return self._read(parse_bool, "changelog-producer.row-deduplicate", "false")

    @property
    def write_buffer_size(self) -> int:
        """write-buffer-size: bytes of rows a write holds in memory before they spill (Paimon's 256 mb)."""
        return self._read(parse_size, "write-buffer-size", "256 mb")

    @property
    def write_buffer_spillable(self) -> bool:
        """write-buffer-spillable: Paimon spills by default in batch writes (false only for
        streaming writes to a local file system)."""
        return self._read(parse_bool, "write-buffer-spillable", "true")

    @property
    def lookup_cache_bytes(self) -> int:
        return self._read(parse_size, "lookup.cache-max-memory-size", "256 mb")

    @property
    def full_compaction_delta_commits(self) -> int | None:
        key = "full-compaction.delta-commits"
        return self._read(parse_int, key) if key in self.raw else None

    @property
    def changelog_file_prefix(self) -> str:
        return self.raw.get("changelog-file.prefix", "changelog-")

    @property
    def merge_engine(self) -> str:
        return (self.raw.get("merge-engine") or "deduplicate").strip().lower()

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self._read(parse_bool, "deletion-vectors.enabled", "false")

    @property
    def needs_lookup(self) -> bool:
        """Java's needLookup: the writers look up older levels (first-row, the lookup changelog
        producer, deletion vectors, force-lookup), so level-0 files are not yet merged state."""
        return (self.merge_engine == "first-row" or self.changelog_producer == "lookup"
                or self.deletion_vectors_enabled
                or self._read(parse_bool, "force-lookup", "false"))

    @property
    def partition_legacy_name(self) -> bool:
        return self._read(parse_bool, "partition.legacy-name", "true")


def validate(options: Mapping[str, str], *, has_primary_key: bool) -> None:
    """Refuse options lakectl cannot honour, naming the option and what is supported; first
    a value Paimon itself would not read (``core.option_values``)."""
    for key, value in options.items():
        if not isinstance(value, str):
            raise UsageError(f"option {key} must be a string value")
    check_values(options)
    for key, value in options.items():
        allowed = SUPPORTED_VALUES.get(key)
        if allowed is not None and value.strip().lower() not in allowed:
            raise UsageError(f"option {key}={value} is not supported by lakectl yet "
                             f"(supported: {', '.join(sorted(allowed))})")
    opts = CoreOptions(options)
    bucket = opts.bucket
    if has_primary_key and bucket < 1 and bucket not in (-1, -2):
        raise UsageError(f"option bucket={bucket}: primary-key tables need -1 (dynamic bucket mode), -2 "
                         "(postpone bucket mode) or a fixed bucket count >= 1")
    if not has_primary_key and (bucket == 0 or bucket < -1):
        raise UsageError(f"option bucket={bucket} is not valid here (use -1 or a count >= 1)")
    if bucket == -1 and opts.bucket_key:
        raise UsageError("option bucket-key needs a bucket count >= 1; with bucket=-1 (Paimon's default) "
                         "it is refused, as Java Paimon refuses it")
    if bucket == -1 and has_primary_key and "dynamic-bucket.target-row-num" in options \
            and parse_int(options["dynamic-bucket.target-row-num"], "dynamic-bucket.target-row-num") < 1:
        raise UsageError(f"option dynamic-bucket.target-row-num={options['dynamic-bucket.target-row-num']} "
                         "must be 1 or more")
    if not has_primary_key and bucket >= 1 and not opts.bucket_key:
        raise UsageError("an append table with bucket >= 1 needs option bucket-key")
    if options.get("write-mode", "").lower() == "append-only" and has_primary_key:
        raise UsageError("option write-mode=append-only cannot be combined with a primary key")
    if not has_primary_key and opts.changelog_producer != "none":
        raise UsageError(f"option changelog-producer={opts.changelog_producer} needs a primary key")
    if not has_primary_key and "merge-engine" in options:
        raise UsageError("option merge-engine needs a primary key")
    delta = opts.full_compaction_delta_commits
    if delta is not None and delta < 1:
        raise UsageError(f"option full-compaction.delta-commits={delta} must be 1 or more")
    parse_bool(options.get("changelog-producer.row-deduplicate", "false"), "changelog-producer.row-deduplicate")
    for key in ("target-file-size", "lookup.cache-max-memory-size"):
        if key in options:
            parse_size(options[key], key)
    for key in ("parquet.block.size", "parquet.page.size"):
        if key in options and parse_size(options[key], key) <= 0:
            raise UsageError(f"option {key}={options[key]} must be more than 0 bytes")
    for key in ("num-sorted-run.compaction-trigger", "num-levels"):
        if key in options and parse_int(options[key], key) < (2 if key == "num-levels" else 1):
            raise UsageError(f"option {key}={options[key]} is too small (num-levels >= 2, trigger >= 1)")
    for key in ("scan.plan-sort-partition", "partition.legacy-name"):
        if key in options:
            parse_bool(options[key], key)
    if "metadata.stats-mode" in options:
        mode = opts.stats_mode
        if mode not in ("none", "counts", "full") and not re.fullmatch(r"truncate\(\d+\)", mode):
            raise UsageError(f"option metadata.stats-mode={mode} must be none, counts, full or truncate(N)")
    _validate_scan_options(options)
    external_paths.validate(options)  # how data-file.external-paths may be written
    branch_merge.validate_create(options, has_primary_key=has_primary_key)
    if not opts.partition_legacy_name:
        raise UsageError("option partition.legacy-name=false is not supported yet")


# Paimon's scan.mode values lakectl follows (core.ops.follow); "full" is the old name of latest-full.
SCAN_MODES = ("default", "latest-full", "full", "latest", "from-snapshot", "from-snapshot-full",
              "from-timestamp", "compacted-full")


def _validate_scan_options(options: Mapping[str, str]) -> None:
    """The streaming-read options lakectl acts on (``scan --follow`` defaults, consumers)."""
    mode = options.get("scan.mode")
    if mode is not None and mode.strip().lower() not in SCAN_MODES:
        raise UsageError(f"option scan.mode={mode} is not supported by lakectl "
                         f"(supported: {', '.join(sorted(SCAN_MODES))})")
    for key in ("scan.snapshot-id", "scan.timestamp-millis", "scan.bounded.watermark"):
        if key in options:
            parse_int(options[key], key)
    for key in ("consumer.expiration-time", "continuous.discovery-interval"):
        if key in options:
            parse_duration(options[key], f"option {key}")
    for key in ("consumer.ignore-progress", "streaming-read-overwrite"):
        if key in options:
            parse_bool(options[key], key)
