"""rescale: change a fixed-bucket table's bucket count by rewriting its rows into the new
buckets, as Paimon's ``rescale`` procedure (Flink 1.1, Spark 1.4) and its ALTER TABLE +
INSERT OVERWRITE recipe do.

The rows of the rescaled partitions (or the whole table) are read merged at the latest
snapshot (primary-key tables: merge-on-read, deletes dropped) and written through the normal
write path under the new count, committed as one OVERWRITE snapshot.

The bucket count lives in two places: each manifest entry's ``total_buckets`` (what readers
and bucket-filtered lookups use, per file: Java 1.0's ``ScanBucketFilter.select(bucket,
totalBuckets)``) and the table's ``bucket`` option (what writers route by; Java's writer
refuses a partition whose files have another count: "Try to write ... with a new bucket
num"). So:

- The whole table: the ``bucket`` option changes first (a new schema), then the OVERWRITE.
  A crash between leaves a readable table whose writers are refused, each naming
  ``lakectl rescale`` (Java's writer names INSERT OVERWRITE); running the command again
  finishes it. Writers that planned on the old schema are refused at commit by the schema
  check, so none can land files of the old count after the rescale read the table.
- ``--partition``: only those partitions are rewritten and the option stays, as Paimon's
  procedure leaves it. Writers (Java's and lakectl's) then refuse those partitions until
  they are rescaled back to the option's count: Paimon's rule, kept.

The OVERWRITE names the files it read (``OverwriteSpec.expected``): a write that landed
in those partitions after the read makes the commit fail with StalePlanError instead of
being dropped, and the rescale reads and writes again (at most ``commit.max-retries`` more
times; then exit 4 with nothing committed).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Mapping, Sequence

from core import branch_merge
from core.commit import CommitMessage, FileStoreCommit, OverwriteSpec, latest_base_entries
from core.engines import EngineSettings, choose_engine, engine_choice
from core.errors import CommitConflictError, CorruptMetadataError, UnsupportedTableError, UsageError
from core.fileio import join
from core.manifest import ManifestEntry
from core.option_rules import WRITE, check_options
from core.replan import lost_race, replan_on_lost_race
from core.schema import TableSchema
from core.table_handle import TableHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RescaleResult:
    table: str
    branch: str
    snapshot_id: int | None  # the OVERWRITE snapshot; None on a dry run or when nothing needed it
    buckets_before: tuple[int, ...]  # the bucket counts the rescaled partitions' files had
    buckets: int  # the new count
    partitions_rewritten: int  # partitions rewritten (or to rewrite)
    files_before: int
    records_before: int  # records in the files read (before merging)
    records_written: int | None  # rows written; None on a dry run
    files_after: int | None
    schema_id: int | None  # the schema carrying bucket=N (whole table); None with --partition
    dry_run: bool
    engine: str | None = None


def rescale(table: TableHandle, buckets: int, *, partitions: Sequence[Mapping[str, str]] | None = None,
            dry_run: bool = False, engine_settings: EngineSettings | None = None) -> RescaleResult:
    """Rewrite the table (or ``partitions``) into ``buckets`` buckets as one OVERWRITE snapshot.

    Raises:
        UsageError: ``buckets`` below 1, a bad partition spec, or partitions holding no data.
        UnsupportedTableError: dynamic-bucket, postpone-bucket or row-tracking tables.
        StalePlanError: other commits changed the partitions every time it read them (exit 4).
    """
    table.location.refuse_on_server("rescale")  # before anything is written
    schema = table.schema
    branch_merge.refuse(schema, table.name, "rescale")
    _check_rescalable(schema, buckets, table.name)
    if not dry_run:
        check_options(schema, table.name, WRITE)
        if table.is_main:
            table.refuse_unfinished_fast_forward("rescale")
    if table.latest_snapshot() is None:
        raise UsageError(f"table {table.name} has no snapshot; nothing to rescale (set the bucket option with "
                         "lakectl alter-schema while it is empty)")
    if partitions:
        from core.ops.compact_planning import partition_filter

        partition_filter(schema, partitions)  # a bad spec fails before anything is written
    if partitions is None and not dry_run and schema.num_buckets != buckets:
        schema = _set_bucket_option(table, buckets)
    run = partial(_rescale_once, table, buckets, partitions, dry_run, engine_settings)
    return replan_on_lost_race(schema.core_options.commit_max_retries, run, "rescale", stale_plans=True)


def _check_rescalable(schema: TableSchema, buckets: int, name: str) -> None:
    if buckets < 1:
        raise UsageError(f"--buckets must be at least 1, got {buckets}")
    if schema.num_buckets == -1:
        raise UnsupportedTableError(f"table {name} has dynamic buckets (bucket=-1), which have no count to "
                                    "rescale (Paimon's rescale is for fixed-bucket tables)")
    if schema.num_buckets == -2:
        raise UnsupportedTableError(f"table {name} is a postpone-bucket table (bucket=-2), which lakectl does not "
                                    "write; rescale it with Paimon")
    if schema.num_buckets < 1:
        raise UnsupportedTableError(f"table {name} has bucket={schema.num_buckets}, not a fixed bucket count")
    if (schema.options.get("row-tracking.enabled") or "").strip().lower() == "true":
        raise UnsupportedTableError(f"table {name} tracks row ids (row-tracking.enabled), which a rewrite "
                                    "would renumber; lakectl does not rescale it")


def _set_bucket_option(table: TableHandle, buckets: int) -> TableSchema:
    """Publish the latest schema with bucket=N as the next schema (again on the winner's after
    a lost race), before any file is rewritten; returns it."""
    for _ in range(table.schema.core_options.commit_max_retries + 1):
        old = table.schema
        if old.num_buckets == buckets:
            return old
        new = replace(old, id=old.id + 1, options={**old.options, "bucket": str(buckets)},
                      time_millis=int(time.time() * 1000))
        if table.schemas.commit(new):
            log.info("%s: bucket option set to %d (schema %d); rewriting the table", table.name, buckets, new.id)
            return new
    raise CommitConflictError(f"rescale could not publish bucket={buckets}: other schema changes kept winning; "
                              "nothing was committed")


def _rescale_once(table: TableHandle, buckets: int, partitions: Sequence[Mapping[str, str]] | None,
                  dry_run: bool, engine_settings: EngineSettings | None) -> RescaleResult:
    schema = table.schema
    latest, live = latest_base_entries(table.snapshots, table.manifests(), schema.core_options.commit_max_retries)
    chosen = _chosen(schema, live, partitions)
    if partitions and not chosen:
        raise UsageError(f"no data files in partition(s) {'; '.join(_spec_text(s) for s in partitions)} of "
                         f"{table.name}; nothing to rescale")
    rewritten = {e.partition for e in chosen}
    before = tuple(sorted({e.total_buckets for e in chosen}))
    nothing = before in ((), (buckets,)) and (partitions is not None or schema.num_buckets == buckets)
    bytes_in = sum(e.file.file_size for e in chosen)
    result = RescaleResult(table.name, table.branch, None, before, buckets, len(rewritten), len(chosen),
                           sum(e.file.row_count for e in chosen), None if dry_run else 0, None if dry_run else 0,
                           None if partitions or dry_run else schema.id, dry_run)
    if nothing:
        log.info("%s: every file already uses %d buckets; nothing to rescale", table.name, buckets)
        return result
    if dry_run:
        return replace(result, engine=engine_choice(engine_settings, bytes_in)[0])
    engine, why = choose_engine(engine_settings, data_bytes=bytes_in)
    log.info("engine: %s (%s)", engine.name, why)
    target = _routing_schema(schema, buckets)
    try:
        rows = _read_rows(table, latest, rewritten if partitions else None, engine)
        messages = _write_rows(table, target, latest, rows, engine)
    except CorruptMetadataError as e:
        raise lost_race(table.snapshots, latest, e) or e
    spec = OverwriteSpec(frozenset(rewritten) if partitions else None,
                         expected=frozenset(e.identifier for e in chosen))
    committer = FileStoreCommit(table.file_io, table.path, target, branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit())
    try:
        snapshot = committer.commit(messages, overwrite=spec)
    except CommitConflictError:
        _discard(table, messages)  # nothing references them; the next try writes its own
        raise
    _after(table, engine)
    files = [f for m in messages for f in m.new_files]
    return replace(result, snapshot_id=snapshot.id if snapshot else None, records_written=rows.num_rows,
                   files_after=len(files), engine=engine.name)


def _routing_schema(schema: TableSchema, buckets: int) -> TableSchema:
    """The schema the rows are written in: the table's (same id, so the commit's schema check
    holds) routing into ``buckets``. No changelog: the rows are the ones already there, and
    an overwrite's streaming readers skip it (Java), so a producer would only report every
    row as new to consumers of the changelog files."""
    return replace(schema, options={**schema.options, "bucket": str(buckets), "changelog-producer": "none"})


def _chosen(schema: TableSchema, live: list[ManifestEntry],
            partitions: Sequence[Mapping[str, str]] | None) -> list[ManifestEntry]:
    """The live files the rescale replaces: all, or those of the partitions the specs match."""
    if partitions is None:
        return list(live)
    from core.ops.compact_planning import partition_filter

    test = partition_filter(schema, partitions)
    verdict: dict[bytes, bool] = {}
    for e in live:
        if e.partition not in verdict:
            verdict[e.partition] = test(schema.partition_values(e.partition))
    return [e for e in live if verdict[e.partition]]


def _read_rows(table: TableHandle, latest: Any, partitions: frozenset[bytes] | None, engine: Any) -> Any:
    """The merged rows of ``partitions`` (None: all) at ``latest``, in the table's columns."""
    import pyarrow as pa

    from core.arrow_values import empty_table
    from core.ops.scan import output_schema, plan

    read_schema = table.schema
    scan_plan = plan(table, latest, read_schema=read_schema)
    if partitions is not None:
        scan_plan = replace(scan_plan, splits=tuple(s for s in scan_plan.splits if s.partition in partitions))
    schema = output_schema(read_schema, None)
    parts = [p if p.schema.equals(schema) else p.cast(schema)
             for p in engine.read_parts(scan_plan.splits, read_schema, scan_plan.schemas, table.file_io)
             if p.num_rows]
    return pa.concat_tables(parts) if parts else empty_table(schema)


def _write_rows(table: TableHandle, target: TableSchema, latest: Any, rows: Any, engine: Any) -> list[CommitMessage]:
    """Data files of ``rows`` routed by ``target``'s bucket count (no commit)."""
    from core.ops.write import plan_job

    job = plan_job(table, target, None, overwrite=True, planned_on=latest)
    messages, _ = engine.write(job, rows, table.file_io)
    return messages


def _discard(table: TableHandle, messages: Sequence[CommitMessage]) -> None:
    for m in messages:
        directory = table.schema.bucket_dir(table.path, m.partition, m.bucket)
        for f in (*m.new_files, *m.changelog_files):
            table.file_io.delete_quietly(f.external_path or join(directory, f.file_name))


def _after(table: TableHandle, engine: Any) -> None:
    """What a write does after its commit (compaction where batch reads hide level 0, expire,
    tags): a deletion-vector or first-row table shows Java's readers nothing of level 0."""
    from core.ops.maintenance import after_commit

    after_commit(table, engine, batch=True, overwrite=True)


def _spec_text(spec: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in spec.items())


__all__ = ["RescaleResult", "rescale"]
