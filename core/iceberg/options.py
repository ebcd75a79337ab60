"""The metadata.iceberg.* options: where a table keeps Iceberg metadata and what lakectl refuses."""

from __future__ import annotations

from typing import Mapping

from core.iceberg.types import iceberg_type
from core.schema import TableSchema

STORAGE = "metadata.iceberg.storage"
COMPATIBLE = "metadata.iceberg-compatible"  # Paimon 0.9's switch, what the 1.0 bundle jar reads
FORMAT_VERSION = "metadata.iceberg.format-version"
MANIFEST_COMPRESSION = "metadata.iceberg.manifest-compression"
PREVIOUS_VERSIONS_MAX = "metadata.iceberg.previous-versions-max"
DELETE_AFTER_COMMIT = "metadata.iceberg.delete-after-commit.enabled"
COMPACT_MIN_FILES = "metadata.iceberg.compaction.min.file-num"  # Java's default 10
COMPACT_MAX_FILES = "metadata.iceberg.compaction.max.file-num"  # Java's default 50
# The metadata.iceberg.* options lakectl acts on; any other is refused for writes.
HONOURED_OPTIONS = frozenset({STORAGE, FORMAT_VERSION, MANIFEST_COMPRESSION, PREVIOUS_VERSIONS_MAX,
                              DELETE_AFTER_COMMIT, COMPACT_MIN_FILES, COMPACT_MAX_FILES})
STORAGES = ("disabled", "table-location", "hadoop-catalog")
VERSION_HINT = "version-hint.text"
CODECS = {"snappy": "snappy", "gzip": "deflate", "deflate": "deflate", "zstd": "zstandard",
           "uncompressed": "null", "none": "null"}



def storage(options: Mapping[str, str]) -> str:
    """Where the table keeps Iceberg metadata: ``disabled``, ``table-location``,
    ``hadoop-catalog`` (or another value, which ``refusal`` names)."""
    value = options.get(STORAGE)
    if value is not None:
        return value.strip().lower()
    if options.get(COMPATIBLE, "false").strip().lower() == "true":
        return "table-location"
    return "disabled"


def enabled(options: Mapping[str, str]) -> bool:
    return storage(options) != "disabled"


def manifest_compression(options: Mapping[str, str]) -> str:
    """``metadata.iceberg.manifest-compression``; by default snappy, as Paimon (some readers
    cannot read zstd), but zstd on a table with Paimon 0.9's ``metadata.iceberg-compatible``
    alone: what that era's writer wrote, and the only one of the two its reader can read (the
    1.0 bundle jar fails a commit on snappy manifests, "Unrecognized codec")."""
    default = "snappy" if STORAGE in options else "zstd"
    return options.get(MANIFEST_COMPRESSION, default).strip().lower()


def format_version(options: Mapping[str, str]) -> int:
    """``metadata.iceberg.format-version``: 2 (default) or 3 (what ``option_refusal`` accepts)."""
    return int(options.get(FORMAT_VERSION, "2").strip())


def compaction_limits(schema: TableSchema) -> tuple[int, int, int]:
    """When Iceberg manifests are merged: (target size, min small files, max small files). A
    manifest under two thirds of Paimon's ``manifest.target-file-size`` is small; they merge
    once there are min-file-num of them totalling the target, or max-file-num whatever their size."""
    opts = schema.options
    return (schema.core_options.manifest_target_file_size, _int(opts.get(COMPACT_MIN_FILES), 10),
            _int(opts.get(COMPACT_MAX_FILES), 50))


def _int(text: str | None, default: int) -> int:
    try:
        return max(1, int(text.strip())) if text is not None else default
    except ValueError:
        return default


def previous_versions_kept(options: Mapping[str, str]) -> int | None:
    """How many metadata versions before the current one stay: ``previous-versions-max`` (0 by
    default) with ``delete-after-commit.enabled`` (true by default); None (all) without it."""
    if options.get(DELETE_AFTER_COMMIT, "true").strip().lower() != "true":
        return None
    try:
        return max(0, int(options.get(PREVIOUS_VERSIONS_MAX, "0").strip() or 0))
    except ValueError:
        return 0


def option_refusal(opts: Mapping[str, str]) -> str | None:
    """Why lakectl cannot keep Iceberg metadata under these options, or None."""
    kind = storage(opts)
    if kind not in STORAGES:
        return f"{STORAGE}={opts.get(STORAGE)} (lakectl writes Iceberg metadata only for table-location and " \
               "hadoop-catalog)"
    if kind == "disabled":
        return None
    for key in opts:
        if key.startswith("metadata.iceberg.") and key not in HONOURED_OPTIONS:
            return f"{key} (an Iceberg metadata option lakectl does not act on)"
    if opts.get(FORMAT_VERSION, "2").strip() not in ("2", "3"):
        return f"{FORMAT_VERSION}={opts[FORMAT_VERSION]} (Iceberg format versions are 2 and 3)"
    if opts_true(opts, "deletion-vectors.enabled") and format_version(opts) < 3:
        return (f"deletion-vectors.enabled=true with Iceberg format version 2, which has no deletion vectors: "
                f"set {FORMAT_VERSION}=3")
    codec = manifest_compression(opts)
    if codec not in CODECS:
        return f"{MANIFEST_COMPRESSION}={codec} (lakectl writes {', '.join(sorted(CODECS))})"
    return None


def refusal(schema: TableSchema) -> str | None:
    """Why lakectl cannot keep this table's Iceberg metadata, or None: the first option or
    column it does not support, named."""
    why = option_refusal(schema.options)
    if why is not None or not enabled(schema.options):
        return why
    if schema.core_options.file_format != "parquet":
        return f"file.format={schema.core_options.file_format} with Iceberg metadata (lakectl exposes Parquet files only)"
    if opts_true(schema.options, "data-evolution.enabled"):
        return "data-evolution.enabled=true with Iceberg metadata (its files hold column subsets)"
    if schema.core_options.deletion_vectors_enabled and schema.options.get("data-file.external-paths", "").strip():
        # A vector names its data file by the bucket directory, as Paimon's index does; a file
        # kept outside the table would reach Iceberg readers without its deleted rows removed.
        return ("data-file.external-paths with deletion vectors and Iceberg metadata (the vectors would not "
                "find their data files outside the table)")
    for f in schema.fields:
        if iceberg_type(f.type) is None:
            return f"column {f.name} of type {f.type.root_text()} with Iceberg metadata (no Iceberg type for it)"
    return None


def opts_true(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"

