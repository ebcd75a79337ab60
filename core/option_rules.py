"""Which options lakectl refuses for which action, and the check every command makes when it
opens a table to read, write or expire (``check_options``): a table never silently behaves
differently from Paimon. ``core.option_catalog`` says what every option Paimon defines is;
the refusals themselves, with what would differ, are the rules here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core import external_paths
from core.errors import UnsupportedTableError, UsageError
from core.merge_options import merge_options
from core.option_catalog import HONOURED, classify, unclassified
from core.option_values import invalid_values
from core.options import SCAN_MODES
from core.tag_options import auto_tag_options
from core.types import paimon2_columns, unreadable_columns

if TYPE_CHECKING:
    from core.schema import TableSchema

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


def _iceberg_refused(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    from core import iceberg

    return iceberg.option_refusal(options) is not None


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
    # Iceberg metadata (core/iceberg.py): lakectl writes it for table-location and hadoop-catalog
    # storage; check_options names what it refuses (storage, format version, column types).
    OptionRule("metadata.iceberg-compatible", frozenset({WRITE}), "Paimon also writes Iceberg metadata on "
               "each commit, in a way lakectl does not", _iceberg_refused),
    # Tables written by Paimon 2.x (pypaimon 2.1); refused until lakectl reads them as Paimon does.
    # data-evolution.enabled is honoured: reads merge the files by row-id range
    # (core.kernels.data_evolution), appends add whole-row files numbered on (core.row_tracking);
    # compaction and delete, which would have to keep the column-subset files apart, refuse it there.
    # row-tracking.enabled is honoured by commits (core.row_tracking gives new files their
    # first_row_id) and compaction (which keeps the ids); delete refuses it there.
    # Batch scans read postpone-bucket tables (only the real buckets, as Paimon's batch read);
    # check_options(..., batch_scan=True) lets them through. Lookups, incremental reads and
    # follow would meet the postponed files, which lakectl does not read as Paimon does.
    # Writes go to bucket-postpone/ and compact runs the postpone compaction (core.postpone).
    OptionRule("bucket", frozenset({READ}), "postpone bucket: Paimon keeps new rows in bucket-postpone/ until "
               "its postpone compaction (lakectl compact) moves them into real buckets; lakectl reads them only "
               "in batch scans (real buckets only, as Paimon)", _postpone_bucket),
    OptionRule("commit.callbacks", frozenset({WRITE}), "Paimon runs these Java callbacks on each commit"),
    OptionRule("tag.callbacks", frozenset({WRITE}), "Paimon runs these Java callbacks on each tag"),
)


def _true(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip().lower() == "true"


def _set(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip() != ""


def _unwritten_external_strategy(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return external_paths.unsupported_strategy({**options, external_paths.STRATEGY: value})


def _not_plain_table(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip().lower() not in ("", "table")


def _other_changelog_format(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    data_format = (options.get("file.format") or "parquet").strip().lower()
    return value.strip().lower() not in ("", data_format)


def _bounded_dynamic_buckets(value: str, options: Mapping[str, str], has_primary_key: bool) -> bool:
    return value.strip() not in ("", "-1")


# The refusals of Paimon 2.x options (core.option_catalog classifies them as refused).
_r, _w, _rw = frozenset({READ}), frozenset({WRITE}), frozenset({READ, WRITE})
_rwe = frozenset({READ, WRITE, EXPIRE})
CATALOG_RULES: tuple[OptionRule, ...] = (
    OptionRule("scan.creation-time-millis", _r, "Paimon reads only files created after that time", _set),
    OptionRule("deletion-vectors.merge-on-read", _r, "Paimon's batch read merges level-0 files, which "
               "lakectl's deletion-vector read skips", _true),
    OptionRule("type", _rwe, "the table is not a plain Paimon table (format, object or materialized "
               "table)", _not_plain_table),
    OptionRule("changelog-file.format", _w, "Paimon writes changelog files in that format, lakectl in "
               "file.format", _other_changelog_format),
    OptionRule("dynamic-bucket.max-buckets", _w, "Paimon caps the dynamic buckets a key can be assigned "
               "to, which lakectl's assigner does not", _bounded_dynamic_buckets),
    OptionRule("delete.force-produce-changelog", _w, "Paimon writes changelog for deletes without a "
               "changelog producer", _true),
    OptionRule("data-file.path-directory", _rwe, "Paimon keeps data files in that directory", _set),
    OptionRule("index-file-in-data-file-dir", _rwe, "Paimon keeps index files in the data directories",
               _true),
    OptionRule("data-file.external-paths.strategy", _w, "no Paimon lakectl knows places new files under "
               "data-file.external-paths by that strategy (pypaimon 2.1: none, round-robin, specific-fs, "
               "entropy-inject, weight-robin)", _unwritten_external_strategy),
    OptionRule("blob-field", _w, "Paimon stores those columns in separate .blob files", _set),
    OptionRule("blob-descriptor-field", _w, "Paimon stores those columns as blob descriptors", _set),
    OptionRule("blob-view-field", _w, "Paimon stores those columns as blob views", _set),
    OptionRule("blob-as-descriptor", _r, "Paimon's reader returns serialized blob descriptors instead "
               "of the bytes", _true),
    OptionRule("vector-field", _w, "Paimon stores those columns in separate vector files", _set),
    OptionRule("video-frame-field", _rw, "Paimon stores those columns as video frames", _set),
    OptionRule("variant.shreddingSchema", _w, "Paimon shreds VARIANT values into typed columns", _set),
    OptionRule("global-index.enabled", _w, "Paimon keeps a global index up to date on writes", _true),
    OptionRule("pk-*.index.columns", _w, "Paimon keeps a primary-key index of those columns on writes",
               _set),
    OptionRule("metadata.iceberg.*", _w, "Paimon also writes Iceberg metadata on each commit, in a way "
               "lakectl does not", _iceberg_refused),
    OptionRule("postpone.batch-write-fixed-bucket", _w, "Paimon's batch writes to postpone-bucket "
               "tables pick real buckets", _true),
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
    rules = OPTION_RULES + CATALOG_RULES
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
    if action == WRITE:
        _check_iceberg(schema, table_name)
    if action in (WRITE, EXPIRE):
        _check_values(schema.options, table_name)
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
        try:
            auto_tag_options(schema.options)
        except UsageError as e:
            raise UnsupportedTableError(f"table {table_name}: {e}") from None
    if schema.has_primary_key and action in (READ, WRITE):
        try:
            merge_options(schema)
        except UsageError as e:
            raise UnsupportedTableError(f"table {table_name}: {e}") from None


def _check_iceberg(schema: Any, table_name: str) -> None:
    """A table that asks for Iceberg metadata lakectl cannot write is refused for writes,
    naming the option or column, rather than committed without it."""
    if not any(k.startswith("metadata.iceberg") for k in schema.options):
        return
    from core import iceberg

    why = iceberg.refusal(schema)
    if why is not None:
        raise UnsupportedTableError(f"table {table_name} keeps Iceberg metadata that lakectl cannot write, so it "
                                    f"refuses writes: {why}")


def _check_values(options: Mapping[str, str], table_name: str) -> None:
    """A table carrying a value Paimon cannot read for an option lakectl acts on (set before
    lakectl checked values, or by hand) is refused for writes and maintenance, naming the
    alter-schema that repairs it, rather than acted on (commit.max-retries=-1 made every commit
    give up). Reads continue; the other options' values are Paimon's concern."""
    honoured = {k for k in options if classify(k) is not None and classify(k)[0] == HONOURED}
    found = invalid_values(options, honoured)
    if found:
        key, value, takes = found[0]
        more = f" (and {', '.join(k for k, _, _ in found[1:])})" if len(found) > 1 else ""
        raise UnsupportedTableError(f"table {table_name} carries option {key}={value}{more}, which Paimon does not "
                                    f"read: {key} takes {takes}; repair it with lakectl alter-schema {table_name} "
                                    f"--set-option {key}=VALUE, or --reset-option {key} for Paimon's default")


def _check_column_types(schema: Any, table_name: str, action: str, columns: Any) -> None:
    """Paimon 2.x column types: a read touching a BLOB column and any write to a table with a
    BLOB, VARIANT or VECTOR column stop naming the column; other columns stay readable."""
    if action == READ:
        touched = [f for f in unreadable_columns(schema.fields)
                   if (columns is None or f.name in columns) and not _blob_file_column(schema, f)]
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


def _blob_file_column(schema: Any, field: Any) -> bool:
    """Is ``field`` a plain BLOB column whose values are the bytes of a data-evolution table's
    ``.blob`` files, which lakectl reads (``core.blob_file``)? Not a BLOB nested in another
    type, nor one Paimon stores as descriptors or views in the data files."""
    inline = {n.strip() for key in ("blob-descriptor-field", "blob-view-field")
              for n in schema.options.get(key, "").split(",")}
    return field.type.name == "BLOB" and data_evolution_enabled(schema) and field.name not in inline


# ---- data-evolution tables (Paimon 2.x; read by core.kernels.data_evolution) ---------------
DATA_EVOLUTION = "data-evolution.enabled"


def data_evolution_enabled(schema: TableSchema) -> bool:
    """Whether the table's files are merged by row-id range when read."""
    return schema.options.get(DATA_EVOLUTION, "false").strip().lower() == "true"


def refuse_incremental(schema: TableSchema, table_name: str) -> None:
    """Refuse an incremental read (``--incremental-between``, ``--follow``): a commit's new files
    may hold one column of old rows, whose other columns are in earlier commits' files.

    Raises:
        UnsupportedTableError: the table is a data-evolution table.
    """
    if data_evolution_enabled(schema):
        raise UnsupportedTableError(
            f"table {table_name} uses {DATA_EVOLUTION}=true, which lakectl does not support for incremental "
            "reads (a commit's files may hold some columns of older rows; Paimon merges them by row id)")
