"""Every table option Paimon defines, classified: honoured, ignored (harmless), or refused.

The catalog covers Java Paimon 1.0's ``CoreOptions`` and pypaimon 2.1's (the tests enumerate
both and fail on a key missing here), per-column option families (``fields.*.…``), the format
pass-through options (``parquet.*``, ``orc.*``, ``avro.*``) and the Flink and catalog keys
tables commonly carry. Three uses:

- ``create`` warns about a key no Paimon version defines, with a near-miss suggestion
  (``buckets`` -> ``bucket``), and keeps it, as Paimon does;
- writes and maintenance refuse a table carrying such a key: it may come from a newer Paimon
  whose writers behave differently, and lakectl cannot know how (reads continue);
- ``CATALOG_RULES`` refuse the Paimon 2.x options lakectl does not honour, per action, in the
  same shape as ``core.option_rules.OPTION_RULES`` (which keeps the older rules).

A key here as ``REFUSED`` is refused by a rule (``OPTION_RULES`` or ``CATALOG_RULES``) when
its value would make lakectl differ from Paimon; otherwise it is harmless.
"""

from __future__ import annotations

import difflib
import fnmatch
from typing import Mapping

HONOURED, IGNORED, REFUSED = "honoured", "ignored", "refused"

# key or pattern (``*`` stands for any text, e.g. a column name) -> (kind, why)
_TUNING = "tuning of Paimon's own writers or readers; changes no row or file lakectl reads"
_FLINK = "a Flink/Spark job or catalog setting; not stored behaviour of the table's files"
_INDEX_SEARCH = "how Paimon searches an index; lakectl reads without the index and returns the same rows"

CATALOG: dict[str, tuple[str, str]] = {}


def _add(kind: str, why: str, *keys: str) -> None:
    for key in keys:
        CATALOG[key] = (kind, why)


_add(HONOURED, "see the README, 'Paimon options lakectl honours'",
     "bucket", "bucket-key", "bucket-function.type", "deletion-vectors.enabled", "deletion-vectors.bitmap64",
     "file.format",
     "partition.default-name", "partition.legacy-name", "merge-engine", "ignore-delete",
     "deduplicate.ignore-delete", "first-row.ignore-delete", "partial-update.ignore-delete",
     "partial-update.remove-record-on-delete", "partial-update.remove-record-on-sequence-group",
     "aggregation.remove-record-on-delete", "sequence.field", "sequence.field.sort-order",
     "fields.*.sequence-group", "fields.*.aggregate-function", "fields.*.ignore-retract",
     "fields.*.distinct", "fields.*.list-agg-delimiter",
     "fields.default-aggregate-function", "fields.*.default-value", "changelog-producer",
     "changelog-producer.row-deduplicate", "full-compaction.delta-commits",
     "compaction.optimization-interval", "rowkind.field",
     "dynamic-partition-overwrite", "write-only", "file.compression", "file.compression.zstd-level",
     "parquet.block.size", "parquet.page.size", "target-file-size", "data-file.prefix",
     "data-file.external-paths", "data-file.external-paths.specific-fs", "data-file.external-paths.weights",
     "changelog-file.prefix", "manifest.compression", "metadata.stats-mode", "num-levels",
     "num-sorted-run.compaction-trigger", "commit.max-retries", "write-buffer-size",
     "write-buffer-spillable", "lookup.cache-max-memory-size", "snapshot.num-retained.min",
     "snapshot.num-retained.max", "snapshot.time-retained", "snapshot.expire.limit",
     "partition.expiration-time", "partition.expiration-check-interval", "partition.expiration-strategy",
     "partition.expiration-max-num", "partition.timestamp-formatter", "partition.timestamp-pattern",
     "consumer-id", "consumer.expiration-time", "consumer.ignore-progress", "scan.mode", "scan.snapshot-id",
     "scan.timestamp-millis", "scan.tag-name", "scan.bounded.watermark", "scan.plan-sort-partition",
     "scan.parallelism", "scan.infer-parallelism", "continuous.discovery-interval",
     "streaming-read-overwrite", "tag.automatic-creation", "tag.creation-period", "tag.creation-delay",
     "tag.period-formatter", "tag.num-retained-max", "tag.default-time-retained",
     "tag.automatic-completion", "sink.watermark-time-zone", "file-index.bloom-filter.columns",
     "file-index.bloom-filter.*.items", "file-index.bloom-filter.*.fpp", "file-index.in-manifest-threshold",
     "add-column-before-partition", "write-mode", "record-level.time-field", "force-lookup",
     "dynamic-bucket.target-row-num", "sink.parallelism", "avro.codec",
     # Paimon 2.x, with pypaimon 2.1 as the reference (README: row tracking and data evolution);
     # the actions lakectl cannot do on them refuse in their own modules, naming the option.
     "data-evolution.enabled", "row-tracking.enabled",
     # maintain's append compaction waits for this many small files (core/ops/maintain.py);
     # compact without --full rewrites at most max.file-num files of an append bucket
     # (core/kernels/compact_plan.py, with Java 1.0's fallback key); universal compaction of
     # primary-key buckets reads the size rules (compact_plan.UniversalOptions).
     "compaction.min.file-num", "compaction.max.file-num", "compaction.early-max.file-num",
     "compaction.max-size-amplification-percent", "compaction.size-ratio",
     # Every commit merges the manifests it builds on by these (core/manifest_merge.py).
     "manifest.target-file-size", "manifest.full-compaction-threshold-size", "manifest.merge-min-count")

_add(IGNORED, _TUNING,
     "write-buffer-for-append", "write-buffer-spill.max-disk-size", "sort-engine", "sort-spill-threshold",
     "sort-spill-buffer-size", "spill-compression", "spill-compression.zstd-level", "page-size",
     "cache-page-size", "num-sorted-run.stop-trigger",
     "commit.force-compact", "commit.force-create-snapshot",
     "commit.user-prefix", "commit.max-retry-wait", "commit.min-retry-wait", "commit.timeout",
     "source.split.target-size", "source.split.open-file-cost", "scan.max-splits-per-task",
     "scan.manifest.parallelism", "read.batch-size", "write.batch-size", "file.block-size",
     "file-reader-async-threshold", "async-file-write", "lookup.*", "lookup-wait",
     "local-merge-buffer-size", "local-sort.max-num-file-handles", "write-max-writers-to-spill",
     "write-manifest-cache", "parquet.enable.dictionary", "parquet.filter.columnindex.enabled",
     "parquet.write-page-index.enabled", "zorder.var-length-contribution", "sort-compaction.*",
     "delete-file.thread-num", "snapshot.expire.execution-mode", "snapshot.clean-empty-directories",
     "streaming.read.snapshot.delay", "stream-scan-mode", "streaming-read-mode", "consumer.mode",
     "cross-partition-upsert.bootstrap-parallelism", "cross-partition-upsert.index-ttl",
     "dynamic-bucket.assigner-parallelism", "dynamic-bucket.initial-buckets",
     "deletion-vector.index-file.target-size", "file-index.read.enabled", "target-file-row-num",
     "snapshot.ignore-empty-commit", "read.parallelism", "read.native.enabled", "write.native.enabled",
     "commit.native.enabled", "scan.native-plan.enabled", "local-cache.*", "manifest-sort.enabled",
     "blob.target-file-size", "blob.copy-buffer-size", "vector.target-file-size",
     "row-tracking.partition-group-on-commit", "data-evolution.row-id-conflict-rewrite.max-size",
     "data-evolution.row-sidecar.enabled", "data-evolution.row-sidecar.max-selected-rows", "data-evolution.row-sidecar.max-selection-ratio",
     "data-evolution.write-cols-optimization.enabled", "postpone.*",
     "bitmap-index.*", "btree-index.*", "sorted-index.records-per-file", "mosaic.*",
     "global-index.build.parallelism", "global-index.thread-num", "global-index.row-count-per-shard")
_add(IGNORED, "the files are read by their own format and compression, whatever the level",
     "file.format.per.level", "file.compression.per.level")
_add(IGNORED, "another file index type: an index only lets readers skip files; a file without one is read",
     "file-index.*")
_add(IGNORED, "format writer settings passed to Parquet, ORC or Avro; readers do not need them",
     "parquet.*", "orc.*", "avro.*")
_add(IGNORED, _FLINK,
     "log.changelog-mode", "log.consistency", "log.format", "log.key.format", "log.*", "sink.*",
     "auto-create", "metastore.partitioned-table", "metastore.tag-to-partition",
     "metastore.tag-to-partition.preview", "metastore.*", "partition.mark-done-action", "path",
     "primary-key", "partition", "end-input.check-partition-expire", "scan.split-enumerator.*",
     "snapshot.watermark-idle-timeout", "tag.callback.*.param", "commit.callback.*.param",
     "query-auth.enabled")
_add(IGNORED, _INDEX_SEARCH,
     "full-text-index.search-mode", "global-index.search-mode", "scalar-index.search-mode",
     "vector-index.search-mode", "global-index.filter.refine-from-data")
_add(IGNORED, "lakectl reads a key's records whatever their nullability and refuses null keys on write, "
     "which is stricter", "primary-key.nullable")
_add(HONOURED, "branch merge's guard: commands that would rewrite or remove data files are refused "
     "(core.branch_merge)", "branch-merge.enabled")
_add(HONOURED, "decoupled changelog retention: expire keeps changelog/changelog-N, expire-changelogs "
     "removes them (core.changelog_manager)",
     "changelog.num-retained.min", "changelog.num-retained.max", "changelog.time-retained")
_add(HONOURED, "the default of scan --incremental-between-scan-mode (core.ops.changes.scan_mode)",
     "incremental-between-scan-mode")
_add(IGNORED, "only the incremental read it belongs to is refused (incremental-between)",
     "record-level.time-field-type")
_add(IGNORED, "only read by the nested_update aggregate function, which is refused (core.merge_options)",
     "fields.*.nested-key")
_add(IGNORED, "only used with manifest.sidecar files, which Paimon also reads without",
     "manifest.sidecar.enabled")

_add(IGNORED, "settings of a feature whose main option is refused by its own rule ("
     "blob-view-field, vector-field, global-index.enabled)",
     "blob-view.resolve.enabled", "vector.file.format",
     "global-index.external-path", "global-index.column-update-action")

# Refused: the rule that refuses each is in core.option_rules.OPTION_RULES or CATALOG_RULES below.
_add(REFUSED, "core.option_rules.OPTION_RULES",
     "scan.timestamp", "scan.watermark", "scan.file-creation-time-millis", "scan.version",
     "incremental-between", "incremental-between-timestamp", "scan.fallback-branch", "branch",
     "manifest.format", "changelog-producer.row-deduplicate-ignore-fields", "record-level.expire-time",
     "metadata.iceberg-compatible", "commit.callbacks",
     "tag.callbacks")
_add(REFUSED, "CATALOG_RULES",
     "scan.creation-time-millis", "deletion-vectors.merge-on-read", "type", "changelog-file.format",
     "dynamic-bucket.max-buckets", "delete.force-produce-changelog", "data-file.path-directory",
     "index-file-in-data-file-dir", "data-file.external-paths.strategy", "blob-field",
     "blob-descriptor-field", "blob-as-descriptor", "blob-view-field",      "vector-field", "video-frame-field", "variant.shreddingSchema",
     "global-index.enabled",      "pk-bitmap.index.columns", "pk-btree.index.columns", "pk-full-text.index.columns",
     "pk-vector.index.columns", "metadata.iceberg.*", "postpone.batch-write-fixed-bucket")


def classify(key: str) -> tuple[str, str] | None:
    """(kind, why) for an option key, or None when no Paimon version lakectl knows defines it.
    An exact key wins over a pattern; the longest matching pattern over shorter ones."""
    if key in CATALOG:
        return CATALOG[key]
    patterns = [p for p in CATALOG if "*" in p and fnmatch.fnmatchcase(key, p)]
    if not patterns:
        return None
    return CATALOG[max(patterns, key=len)]


def suggestion(key: str) -> str | None:
    """The known key closest to a misspelt one (``buckets`` -> ``bucket``), if one is close."""
    exact = [k for k in CATALOG if "*" not in k]
    close = difflib.get_close_matches(key, exact, n=1, cutoff=0.75)
    return close[0] if close else None


def unknown_option_warnings(options: Mapping[str, str]) -> list[str]:
    """One line per option no Paimon version defines, for ``create`` (the table keeps them)."""
    out = []
    for key in sorted(options):
        if classify(key) is None:
            near = suggestion(key)
            hint = f" (did you mean {near}?)" if near else ""
            out.append(f"option {key} is not a Paimon option{hint}; it is kept, but lakectl refuses "
                       "to write or maintain a table carrying an option it does not know")
    return out


def unclassified(options: Mapping[str, str]) -> list[str]:
    """The keys of ``options`` no Paimon version lakectl knows defines, sorted."""
    return [key for key in sorted(options) if classify(key) is None]
