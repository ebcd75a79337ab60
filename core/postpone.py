"""Postpone-bucket tables (``bucket = -2``, Paimon 1.1+ and pypaimon 2.1): the layout of their
postponed files and the rules of the compaction that gives those rows real buckets.

A write to such a primary-key table does not hash rows to buckets. Each (partition) gets its
rows in one pseudo-bucket, ``-2``, stored under ``bucket-postpone/``: key-value files
(``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, the row) in the order the rows arrived,
neither sorted nor merged, at level 0, with sequence numbers counted from 0 by each writer.
Their manifest entries carry bucket -2 and total buckets -2. pypaimon 2.1 writes them as
Avro (unless the table sets ``file.format``) without value statistics, and names them
``<data-file.prefix>-u-<commit user>-s-<write id>-w-<uuid>-<n>.<format>`` so that a
compaction can replay one writer's files in order. Batch readers (Java, pypaimon, lakectl)
read only the real buckets, so these rows stay invisible until the postpone compaction.

The postpone compaction (Paimon's Flink ``CompactAction`` on such a table) takes, per
partition, a bucket count: the one the partition's real-bucket files already have, else
``postpone.default-bucket-num`` when set, else an estimate from the partition's rows
(``estimated_bucket_num``: pypaimon 2.1's planner; 1 below 1 GB, the count Paimon 1.1 gave with
its default ``postpone.default-bucket-num`` of 1). It replays the postponed files oldest first
(by creation time) through a fixed-bucket writer with that count, so the rows get fresh
sequence numbers above the bucket's, and commits one COMPACT snapshot that deletes the
postponed files and adds the new real-bucket files. Readers then merge them with the rows
already there by the table's merge engine.

This module holds the pure parts (names, the bucket count, the replay order); the
operation is ``core.ops.postpone_compact``.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Iterable, Mapping

from core.errors import UsageError

# Schemas and file metadata are taken as they come (``TableSchema``, ``DataFileMeta``): core.schema
# names bucket directories with this module, which must not import it back.
TableSchema = Any
DataFileMeta = Any

POSTPONE_BUCKET = -2
POSTPONE_DIR = "bucket-postpone"
MAX_PARALLELISM = 2048  # postpone.batch-write-fixed-bucket.max-parallelism default (pypaimon 2.1)
TARGET_SIZE = 1 << 30  # postpone.target-size-per-bucket default, 1 GB (pypaimon 2.1)


def bucket_dir_name(bucket: int) -> str:
    """The directory of a bucket inside its partition: ``bucket-N``, or ``bucket-postpone``."""
    return POSTPONE_DIR if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"


def is_postpone(schema: TableSchema) -> bool:
    """Whether the table is a postpone-bucket primary-key table."""
    return schema.has_primary_key and schema.num_buckets == POSTPONE_BUCKET


def check_postpone_supported(schema: TableSchema, table_name: str) -> None:
    """Refuse what lakectl does not yet do on postpone-bucket tables as Paimon does.

    Raises:
        UsageError: a changelog producer (the postpone compaction would owe a changelog),
            deletion vectors or the first-row merge engine (their batch reads skip level 0,
            where the compaction puts the rows before a later compaction moves them up).
    """
    if not is_postpone(schema):
        return
    options = schema.core_options
    why = None
    if options.changelog_producer != "none":
        why = f"changelog-producer={options.changelog_producer}"
    elif options.deletion_vectors_enabled:
        why = "deletion-vectors.enabled=true"
    elif options.merge_engine == "first-row":
        why = "merge-engine=first-row"
    if why:
        raise UsageError(f"table {table_name} is a postpone-bucket table (bucket=-2) with {why}, which lakectl "
                         "does not write or compact yet")


def new_write_id() -> int:
    """A writer's id in its file names (Java and pypaimon: a random non-negative int)."""
    return random.randint(0, 2**31 - 2)


def write_schema(schema: TableSchema, commit_user: str, write_id: int) -> TableSchema:
    """The schema a postpone write writes its files with: the file name prefix naming the
    writer, Avro unless the table sets ``file.format`` (pypaimon 2.1's rule; Java keeps the
    table's format when Avro cannot hold a column type, and so does lakectl), and no value
    statistics (``metadata.stats-mode=none``, as both write them)."""
    from core import formats

    options = dict(schema.options)
    prefix = options.get("data-file.prefix", "data-")
    options["data-file.prefix"] = f"{prefix}-u-{commit_user}-s-{write_id}-w-"
    options["metadata.stats-mode"] = "none"
    if "file.format" not in schema.options:
        try:
            formats.avro_schema([(f.name, f.type) for f in schema.fields])
            options["file.format"] = "avro"
        except UsageError:
            pass  # a type Avro cannot hold: the table's format, as Java falls back
    return replace(schema, options=options)


def real_bucket_schema(schema: TableSchema, num_buckets: int) -> TableSchema:
    """The table seen as a fixed-bucket table of ``num_buckets`` buckets: what the postpone
    compaction writes a partition's rows with (Java copies the table with ``bucket`` set)."""
    return replace(schema, options={**schema.options, "bucket": str(num_buckets)})


def _positive(options: Mapping[str, str], key: str, parse: Any) -> int | None:
    text = options.get(key)
    if text is None:
        return None
    try:
        value = parse(text.strip())
    except (ValueError, UsageError):
        value = 0
    if value < 1:
        raise UsageError(f"option {key}={text} must be 1 or more")
    return value


def default_bucket_num(options: Mapping[str, str]) -> int | None:
    """``postpone.default-bucket-num``: the exact bucket count of a partition given real buckets
    for the first time; None when unset (the count is then estimated: ``estimated_bucket_num``)."""
    return _positive(options, "postpone.default-bucket-num", int)


def estimated_bucket_num(options: Mapping[str, str], rows: int, row_bytes: int) -> int:
    """The bucket count pypaimon 2.1's planner gives a partition without real buckets when
    ``postpone.default-bucket-num`` is unset: ``rows`` over ``postpone.target-row-num-per-bucket``
    if that is set, else ``row_bytes`` (the rows' size as Paimon's binary rows) over
    ``postpone.target-size-per-bucket`` (1 GB), rounded up, at least 1 and at most
    ``postpone.batch-write-fixed-bucket.max-parallelism`` (2048). Below 1 GB this is 1, the
    count Paimon 1.1's compaction gave (``postpone.default-bucket-num`` then defaulted to 1)."""
    from core.option_parsing import parse_size

    cap = _positive(options, "postpone.batch-write-fixed-bucket.max-parallelism", int) or MAX_PARALLELISM
    per_rows = _positive(options, "postpone.target-row-num-per-bucket", int)
    if per_rows is not None:
        wanted = -(-rows // per_rows)
    else:
        per_bytes = _positive(options, "postpone.target-size-per-bucket",
                              lambda t: parse_size(t, "postpone.target-size-per-bucket")) or TARGET_SIZE
        wanted = -(-row_bytes // per_bytes)
    return min(max(1, wanted), cap)


def binary_row_bytes(rows: Any, fields: Any) -> int:
    """The size of ``rows`` (an Arrow table holding ``fields``) as Paimon's binary rows, which
    pypaimon's planner sums against ``postpone.target-size-per-bucket``: per row the null bits
    and an 8-byte slot per field, plus each string or binary value longer than 7 bytes rounded
    up to 8, 16 bytes per DECIMAL above precision 18, 8 per TIMESTAMP above precision 3. Nested
    values (ARRAY, MAP, ROW, ...) count their Arrow buffers, an approximation."""
    import pyarrow.compute as pc

    n = rows.num_rows
    total = n * (((len(fields) + 71) // 64) * 8 + len(fields) * 8)
    for f in fields:
        column = rows.column(f.name)
        t = f.type
        if t.name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            lengths = pc.binary_length(column)
            long = pc.if_else(pc.greater(lengths, 7), lengths, 0)
            rounded = pc.multiply(pc.divide(pc.add(long, 7), 8), 8)
            total += int(pc.sum(rounded).as_py() or 0)
        elif t.name == "DECIMAL" and (t.precision or 0) > 18:
            total += 16 * n
        elif t.name.startswith("TIMESTAMP") and (t.precision if t.precision is not None else 6) > 3:
            total += 8 * n
        elif t.name in ("ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BLOB", "VECTOR"):
            total += column.nbytes
    return total


def partition_bucket_counts(entries: Iterable[Any]) -> dict[bytes, int]:
    """Each partition's bucket count from its live real-bucket files (``ManifestEntry``s)."""
    counts: dict[bytes, int] = {}
    for e in entries:
        if e.bucket >= 0 and e.total_buckets > 0:
            counts.setdefault(e.partition, e.total_buckets)
    return counts


def replay_order(files: Iterable[DataFileMeta]) -> list[DataFileMeta]:
    """Postponed files (given in manifest order, which is commit order) in the order their rows
    were written: by creation time, as Paimon replays them; files of one millisecond stay in
    manifest order (a stable sort), so one writer's rolled files and two commits of the same
    millisecond keep their order."""
    return sorted(files, key=lambda f: f.creation_time)
