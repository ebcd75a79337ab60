"""Table options: the string map of a schema file, read as typed values with Paimon's defaults.

Only options lakectl acts on are listed. Unknown options are kept verbatim in the schema
(other Paimon engines may use them); options whose value lakectl cannot honour are refused
at create time, and on tables other engines made by ``check_options`` (the ``OPTION_RULES``
table at the end) when a command opens them to read, write or expire, so a table never
silently behaves differently from Paimon.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from core.errors import UnsupportedTableError, UsageError

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
BATCH_COMMIT_IDENTIFIER = 9223372036854775807  # Long.MAX: what Paimon batch writers use

# Values lakectl supports for options that change how data is stored or merged.
SUPPORTED_VALUES = {
    "merge-engine": {"deduplicate", "partial-update", "aggregation", "first-row"},
    "changelog-producer": {"none", "input", "lookup", "full-compaction"},
    "file.format": {"parquet", "orc", "avro"},
    "bucket-function.type": {"default"},
    "deletion-vectors.enabled": {"false", "true"},
    "write-mode": {"append-only", "change-log", "auto"},
}

_SIZE_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "k": 1 << 10, "mb": 1 << 20, "m": 1 << 20,
               "gb": 1 << 30, "g": 1 << 30, "tb": 1 << 40, "t": 1 << 40}


def parse_size(text: str, key: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise UsageError(f"option {key}={text!r} is not a size such as 128mb")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


def check_limit(limit: int | None) -> None:
    """The rule of every ``--limit``: none, or 0 or more rows."""
    if limit is not None and limit < 0:
        raise UsageError("--limit must be 0 or more")


_DURATION_UNITS = {
    "ms": 0.001, "milli": 0.001, "millis": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}


def parse_duration(text: str, key: str = "duration") -> dt.timedelta:
    """A Paimon duration (``1 h``, ``7d``, ``30 min``, ``500 ms``; a bare number is milliseconds,
    as Java's TimeUtils reads it) -> timedelta. ``key`` names the option or flag in the error."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _DURATION_UNITS):
        raise UsageError(f"{key} {text!r} is not a duration such as 1d, 12h, 30min or 10s")
    seconds = float(m.group(1)) * (_DURATION_UNITS[unit] if unit else 0.001)
    return dt.timedelta(seconds=seconds)


def parse_bool(text: str, key: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise UsageError(f"option {key}={text!r} must be true or false")


def parse_int(text: str, key: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"option {key}={text!r} must be an integer") from None


@dataclass(frozen=True, slots=True)
class CoreOptions:
    """Typed view of the options lakectl reads."""

    raw: Mapping[str, str]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    @property
    def bucket(self) -> int:
        return parse_int(self.raw.get("bucket", "-1"), "bucket")

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
        return parse_size(self.raw["target-file-size"], "target-file-size") if "target-file-size" in self.raw else 0

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
        return parse_int(self.raw.get("file.compression.zstd-level", "1"), "file.compression.zstd-level")

    @property
    def parquet_block_size(self) -> int:
        """parquet.block.size: the Parquet row group size in bytes (parquet-java's 128 mb).
        Smaller row groups let a selective scan skip more by row-group stats."""
        return parse_size(self.raw.get("parquet.block.size", "128 mb"), "parquet.block.size")

    @property
    def parquet_page_size(self) -> int:
        """parquet.page.size: the target data page size in bytes (1 mb)."""
        return parse_size(self.raw.get("parquet.page.size", "1 mb"), "parquet.page.size")

    @property
    def manifest_compression(self) -> str:
        return self.raw.get("manifest.compression", "zstd")

    @property
    def stats_mode(self) -> str:
        return self.raw.get("metadata.stats-mode", "truncate(16)").strip().lower()

    @property
    def plan_sort_partition(self) -> bool:
        return parse_bool(self.raw.get("scan.plan-sort-partition", "false"), "scan.plan-sort-partition")

    @property
    def data_file_prefix(self) -> str:
        return self.raw.get("data-file.prefix", "data-")

    @property
    def commit_max_retries(self) -> int:
        return parse_int(self.raw.get("commit.max-retries", "10"), "commit.max-retries")

    @property
    def num_sorted_run_compaction_trigger(self) -> int:
        return parse_int(self.raw.get("num-sorted-run.compaction-trigger", "5"), "num-sorted-run.compaction-trigger")

    @property
    def num_levels(self) -> int:
        """LSM levels of primary-key buckets; full compaction writes the top one (num-levels - 1)."""
        if "num-levels" in self.raw:
            return parse_int(self.raw["num-levels"], "num-levels")
        return self.num_sorted_run_compaction_trigger + 1

    def scan_parallelism(self, splits: int) -> int | None:
        """Spark scan tasks: `scan.parallelism` if set; else one per split when
        `scan.infer-parallelism` (default true), else None (Spark's default parallelism)."""
        if "scan.parallelism" in self.raw:
            return max(1, parse_int(self.raw["scan.parallelism"], "scan.parallelism"))
        if parse_bool(self.raw.get("scan.infer-parallelism", "true"), "scan.infer-parallelism"):
            return max(1, splits)
        return None

    @property
    def changelog_producer(self) -> str:
        return (self.raw.get("changelog-producer") or "none").strip().lower()

    @property
    def changelog_row_deduplicate(self) -> bool:
        """changelog-producer.row-deduplicate: no -U/+U pair when a key's value did not change."""
        return parse_bool(self.raw.get("changelog-producer.row-deduplicate", "false"),
                          "changelog-producer.row-deduplicate")

    @property
    def write_buffer_size(self) -> int:
        """write-buffer-size: bytes of rows a write holds in memory before they spill (Paimon's 256 mb)."""
        return parse_size(self.raw.get("write-buffer-size", "256 mb"), "write-buffer-size")

    @property
    def write_buffer_spillable(self) -> bool:
        """write-buffer-spillable: Paimon spills by default in batch writes (false only for
        streaming writes to a local file system)."""
        return parse_bool(self.raw.get("write-buffer-spillable", "true"), "write-buffer-spillable")

    @property
    def lookup_cache_bytes(self) -> int:
        return parse_size(self.raw.get("lookup.cache-max-memory-size", "256 mb"), "lookup.cache-max-memory-size")

    @property
    def full_compaction_delta_commits(self) -> int | None:
        key = "full-compaction.delta-commits"
        return parse_int(self.raw[key], key) if key in self.raw else None

    @property
    def changelog_file_prefix(self) -> str:
        return self.raw.get("changelog-file.prefix", "changelog-")

    @property
    def merge_engine(self) -> str:
        return (self.raw.get("merge-engine") or "deduplicate").strip().lower()

    @property
    def deletion_vectors_enabled(self) -> bool:
        return parse_bool(self.raw.get("deletion-vectors.enabled", "false"), "deletion-vectors.enabled")

    @property
    def needs_lookup(self) -> bool:
        """Java's needLookup: the writers look up older levels (first-row, the lookup changelog
        producer, deletion vectors, force-lookup), so level-0 files are not yet merged state."""
        return (self.merge_engine == "first-row" or self.changelog_producer == "lookup"
                or self.deletion_vectors_enabled
                or parse_bool(self.raw.get("force-lookup", "false"), "force-lookup"))

    @property
    def partition_legacy_name(self) -> bool:
        return parse_bool(self.raw.get("partition.legacy-name", "true"), "partition.legacy-name")


def validate(options: Mapping[str, str], *, has_primary_key: bool) -> None:
    """Refuse options lakectl cannot honour, naming the option and what is supported."""
    for key, value in options.items():
        if not isinstance(value, str):
            raise UsageError(f"option {key} must be a string value")
        allowed = SUPPORTED_VALUES.get(key)
        if allowed is not None and value.strip().lower() not in allowed:
            raise UsageError(f"option {key}={value} is not supported by lakectl yet "
                             f"(supported: {', '.join(sorted(allowed))})")
    opts = CoreOptions(options)
    bucket = opts.bucket
    if has_primary_key and bucket < 1 and bucket != -1:
        raise UsageError(f"option bucket={bucket}: primary-key tables need -1 (dynamic bucket mode) or a fixed "
                         "bucket count >= 1 (postpone bucket mode is not supported yet)")
    if not has_primary_key and bucket == 0 or bucket < -1:
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
    from core import external_paths

    external_paths.validate(options)
    from core.ops.auto_tags import auto_tag_options  # the tag.* options of automatic tags

    auto_tag_options(options)
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


# ---- options Java Paimon honours and lakectl does not --------------------------------------
# One table of rules, checked whenever a table is opened for an action (``check_options``):
#   read   - scan, lookup, changes (--incremental-between), follow: refused when the option
#            changes the rows Paimon's reader returns;
#   write  - write, stream writes, compact: refused when the option changes what Paimon's
#            writer or compaction stores;
#   expire - expire, remove-orphan-files: refused when the option makes Paimon keep files
#            lakectl would delete.
# Options not listed here are either honoured (see the README, "Paimon options lakectl
# honours") or tuning that changes no result. Merge-engine options are checked by
# core.merge_options (called from check_options for primary-key tables).
READ, WRITE, EXPIRE = "read", "write", "expire"


def _is_set(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip() != ""


def _is_true(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip().lower() == "true"


def _not_main(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip() not in ("", "main")


def _not_avro(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip().lower() != "avro"


def _postpone_bucket(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip() == "-2"


def _unknown_scan_mode(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip().lower() not in SCAN_MODES


def _ignore_fields_in_use(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    producer = (options.get("changelog-producer") or "none").strip().lower()
    dedup = (options.get("changelog-producer.row-deduplicate") or "false").strip().lower() == "true"
    return value.strip() != "" and dedup and producer in ("lookup", "full-compaction")


def _record_expire_in_use(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return has_primary_key and value.strip() != "" and bool(options.get("record-level.time-field"))


@dataclass(frozen=True, slots=True)
class OptionRule:
    """``pattern``: an option key; ``*`` stands for a column name (``fields.*.sequence-group``).
    ``refuses``: the actions the option is refused for, when ``applies(value, options,
    has_primary_key)``. ``why``: what would differ from Paimon, for the message."""

    pattern: str
    refuses: frozenset[str]
    why: str
    applies: Any = _is_set

    def matches(self, key: str) -> bool:
        if "*" not in self.pattern:
            return key == self.pattern
        head, tail = self.pattern.split("*", 1)
        return key.startswith(head) and key.endswith(tail) and len(key) > len(head) + len(tail)


_RW = frozenset({READ, WRITE})
OPTION_RULES: tuple[OptionRule, ...] = (
    OptionRule("scan.mode", frozenset({READ}), "Paimon starts its reads there (e.g. incremental, "
               "from-file-creation-time), which lakectl does not follow", _unknown_scan_mode),
    OptionRule("scan.timestamp", frozenset({READ}), "Paimon reads the snapshot at that time by default"),
    OptionRule("scan.watermark", frozenset({READ}), "Paimon reads the snapshot at that watermark by default"),
    OptionRule("scan.file-creation-time-millis", frozenset({READ}), "Paimon reads only files created after "
               "that time by default"),
    OptionRule("scan.version", frozenset({READ}), "Paimon time-travels to that version by default"),
    OptionRule("incremental-between", frozenset({READ}), "Paimon's batch read returns only the changes "
               "between those snapshots"),
    OptionRule("incremental-between-timestamp", frozenset({READ}), "Paimon's batch read returns only the "
               "changes between those times"),
    OptionRule("scan.fallback-branch", frozenset({READ}), "Paimon reads partitions missing here from "
               "the fallback branch"),
    OptionRule("branch", _RW, "Paimon reads and writes that branch, lakectl only main", _not_main),
    OptionRule("manifest.format", _RW, "lakectl reads and writes Avro manifests only", _not_avro),
    OptionRule("changelog-producer.row-deduplicate-ignore-fields", frozenset({WRITE}), "Paimon's changelog "
               "would compare rows without those fields", _ignore_fields_in_use),
    OptionRule("record-level.expire-time", frozenset({WRITE}), "Paimon's compaction drops expired records",
               _record_expire_in_use),
    OptionRule("metadata.iceberg-compatible", frozenset({WRITE}), "Paimon also writes Iceberg metadata on "
               "each commit", _is_true),
    # Tables written by Paimon 2.x (pypaimon 2.1); refused until lakectl reads them as Paimon does.
    # data-evolution.enabled is honoured: reads merge the files by row-id range
    # (core.kernels.data_evolution), appends add whole-row files numbered on (core.row_tracking);
    # compaction and delete, which would have to keep the column-subset files apart, refuse it there.
    # row-tracking.enabled is honoured by commits (core.row_tracking gives new files their
    # first_row_id) and compaction (which keeps the ids); delete refuses it there.
    # Batch scans read postpone-bucket tables (only the real buckets, as Paimon's batch read);
    # check_options(..., batch_scan=True) lets them through. Lookups, incremental reads and
    # follow would meet the postponed files, which lakectl does not read as Paimon does.
    OptionRule("bucket", _RW, "postpone bucket: Paimon keeps new rows in bucket-postpone/ until its "
               "postpone compaction moves them into real buckets; lakectl reads them only in batch scans "
               "(real buckets only, as Paimon)", _postpone_bucket),
    OptionRule("commit.callbacks", frozenset({WRITE}), "Paimon runs these Java callbacks on each commit"),
    OptionRule("tag.callbacks", frozenset({WRITE}), "Paimon runs these Java callbacks on each tag"),
    OptionRule("changelog.num-retained.min", frozenset({EXPIRE}), "Paimon keeps changelog files past their "
               "snapshots (changelog/), which lakectl would delete"),
    OptionRule("changelog.num-retained.max", frozenset({EXPIRE}), "Paimon keeps changelog files past their "
               "snapshots (changelog/), which lakectl would delete"),
    OptionRule("changelog.time-retained", frozenset({EXPIRE}), "Paimon keeps changelog files past their "
               "snapshots (changelog/), which lakectl would delete"),
)




def _effective(options: Mapping[str, str], has_primary_key: bool) -> dict[str, str]:
    """The options with Paimon's defaults where a rule depends on a default (bucket -1 on
    primary-key tables that do not set it)."""
    out = dict(options)
    if has_primary_key and "bucket" not in out:
        out["bucket"] = "-1"
    return out


def unsupported(options: Mapping[str, str], action: str, *, has_primary_key: bool,
                primary_keys: Sequence[str] = (), partition_keys: Sequence[str] = ()) -> list[tuple[str, str, str]]:
    """(key, value, why) of each option that makes ``action`` differ from Paimon: a cross-partition
    primary key first, then options in key order."""
    opts = _effective(options, has_primary_key)
    found = []
    # Paimon takes a primary key without every partition column only in dynamic bucket mode,
    # as a cross-partition upsert table (lakectl's own fixed-bucket tables of that shape keep
    # a key per partition, and Paimon refuses to create them).
    cross_partition = opts.get("bucket", "-1").strip() == "-1"
    if action == WRITE and has_primary_key and cross_partition and not set(partition_keys) <= set(primary_keys):
        missing = ", ".join(k for k in partition_keys if k not in primary_keys)
        found.insert(0, ("primary-key", ",".join(primary_keys),
                      f"it leaves out partition column(s) {missing}: Paimon's cross-partition upsert moves a key "
                      "between partitions through a global index lakectl does not keep"))
    from core.option_catalog import catalog_rules, unclassified

    rules = OPTION_RULES + catalog_rules()
    for key in sorted(opts):
        value = opts[key]
        rule = next((r for r in rules if action in r.refuses and r.matches(key)), None)
        if rule is not None and isinstance(value, str) and rule.applies(value, opts, has_primary_key):
            found.append((key, value, rule.why))
    if action in (WRITE, EXPIRE):
        # An option no Paimon version lakectl knows defines may come from a newer Paimon whose
        # writers behave differently; reads continue (core.option_catalog).
        found.extend((key, opts[key], "an option lakectl does not know, perhaps from a newer Paimon; "
                      "lakectl alter-schema --reset-option removes it") for key in unclassified(opts)
                     if isinstance(opts[key], str))
    return found


_VERBS = {READ: "reads", WRITE: "writes", EXPIRE: "expire and remove-orphan-files"}


def check_options(schema: Any, table_name: str, action: str, *, batch_scan: bool = False,
                  columns: Any = None) -> None:
    """Refuse ``action`` (READ, WRITE or EXPIRE) on a table whose options lakectl cannot
    honour for it: UnsupportedTableError naming the first such option and what would differ.
    ``batch_scan``: the read is a batch scan, which honours the postpone bucket (bucket=-2).
    ``columns``: the columns a read touches (None: all), checked for types lakectl cannot read."""
    _check_column_types(schema, table_name, action, columns)
    found = unsupported(schema.options, action, has_primary_key=schema.has_primary_key,
                        primary_keys=schema.primary_keys, partition_keys=schema.partition_keys)
    if batch_scan and action == READ:
        found = [f for f in found if not (f[0] == "bucket" and _postpone_bucket(f[1], {}, False))]
    if found:
        key, value, why = found[0]
        more = f" (and {', '.join(k for k, _, _ in found[1:])})" if len(found) > 1 else ""
        raise UnsupportedTableError(f"table {table_name} uses {key}={value}{more}, which lakectl does not "
                                    f"support for {_VERBS[action]} ({why})")
    if action == WRITE:
        # Java builds its committer's tag manager from these and refuses bad values before
        # writing; lakectl too, rather than warning after every commit.
        from core.ops.auto_tags import auto_tag_options

        try:
            auto_tag_options(schema.options)
        except UsageError as e:
            raise UnsupportedTableError(f"table {table_name}: {e}") from None
    if schema.has_primary_key and action in (READ, WRITE):
        from core.merge_options import merge_options

        try:
            merge_options(schema)
        except UsageError as e:
            raise UnsupportedTableError(f"table {table_name}: {e}") from None


def _check_column_types(schema: Any, table_name: str, action: str, columns: Any) -> None:
    """Paimon 2.x column types: a read touching a BLOB column and any write to a table with a
    BLOB, VARIANT or VECTOR column stop naming the column; other columns stay readable."""
    from core.types import paimon2_columns, unreadable_columns

    if action == READ:
        touched = [f for f in unreadable_columns(schema.fields) if columns is None or f.name in columns]
        if touched:
            f = touched[0]
            raise UnsupportedTableError(f"table {table_name}: column {f.name} has type {f.type}, which lakectl "
                                        "does not read (Paimon keeps its values in .blob files); --select the "
                                        "other columns")
    if action == WRITE:
        found = paimon2_columns(schema.fields)
        if found:
            f = found[0]
            raise UnsupportedTableError(f"table {table_name}: column {f.name} has type {f.type}, a Paimon 2.x "
                                        "type lakectl does not write (reads work)")
