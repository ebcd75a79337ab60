"""Truncate a table or drop some of its partitions: one OVERWRITE snapshot that DELETEs the
live files of the whole table or of the named partitions and ADDs nothing, as Paimon's
TRUNCATE TABLE and ALTER TABLE ... DROP PARTITION (``sys.drop_partition``) commit.

Data files stay on disk: earlier snapshots still reference them and still scan; snapshot
expiration deletes them later, as after every overwrite.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Mapping, Sequence

from core import branch_merge
from core.commit import FileStoreCommit, OverwriteSpec, latest_base_entries
from core.errors import UsageError
from core.manifest import ManifestEntry
from core.partition import partition_path, render_value
from core.ops.auto_tags import run_quietly
from core.table_handle import TableHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TruncateResult:
    table: str
    branch: str
    snapshot_id: int | None  # the OVERWRITE snapshot; None on a dry run or when no file was live
    files_deleted: int
    records_deleted: int
    dry_run: bool


@dataclass(frozen=True, slots=True)
class DropPartitionResult:
    table: str
    branch: str
    snapshot_id: int | None  # the OVERWRITE snapshot; None on a dry run or when nothing was live
    partitions: tuple[dict[str, str], ...]  # dropped (or to drop): {column: value}, as `files` shows them
    missing: tuple[dict[str, str], ...]  # named partitions that held no live file
    files_deleted: int
    records_deleted: int
    dry_run: bool


def truncate(table: TableHandle, *, dry_run: bool = False) -> TruncateResult:
    """Delete every live file of the table as one OVERWRITE snapshot.

    Nothing to do is no commit (lakectl's one rule for truncate, delete, drop-partition,
    expire and compact): a table with no live file gets no snapshot (``snapshot_id`` None),
    where Paimon's TRUNCATE would commit an empty OVERWRITE.

    Raises:
        CommitConflictError: the commit did not land.
    """
    branch_merge.refuse(table.schema, table.name, "truncate")
    entries = _latest_entries(table)
    files, records = len(entries), sum(e.file.row_count for e in entries)
    if not entries:
        return TruncateResult(table.name, table.branch, None, 0, 0, dry_run)
    if dry_run:
        return TruncateResult(table.name, table.branch, None, files, records, True)
    committed = _commit_overwrite(table, OverwriteSpec(None))
    _tags_after(table, committed)
    log.info("truncated %s: %d file(s), %d record(s)", table.name, files, records)
    return TruncateResult(table.name, table.branch, committed, files, records, False)


def drop_partitions(table: TableHandle, partitions: Sequence[Mapping[str, str]], *,
                    dry_run: bool = False) -> DropPartitionResult:
    """Delete the live files of the given partitions as one OVERWRITE snapshot.

    Each spec must name every partition column (``{"dt": "2024-01-01", "hr": "10"}``); the
    partition-default-name stands for null. A named partition with no live file is reported
    in ``missing``; when none of them holds a live file nothing is committed (``snapshot_id``
    None, every spec in ``missing``), lakectl's one rule for nothing to do: ``missing`` is
    where a typo in a value shows.

    Raises:
        UsageError: the table is not partitioned, no spec, or a spec that does not name
            exactly the partition columns.
        CommitConflictError: the commit did not land.
    """
    branch_merge.refuse(table.schema, table.name, "drop-partition")
    from core.ops.compact_planning import partition_filter

    schema = table.schema
    fields = schema.partition_fields
    if not fields:
        raise UsageError(f"table {table.name} is not partitioned; there are no partitions to drop")
    if not partitions:
        raise UsageError("name at least one partition to drop (--partition COLUMN=VALUE[,...])")
    columns = [f.name for f in fields]
    for spec in partitions:
        if sorted(spec) != sorted(columns):
            raise UsageError(f"--partition {_render_spec(spec)} must name every partition column "
                             f"({', '.join(columns)}) and no other")
    tests = [partition_filter(schema, [spec]) for spec in partitions]
    entries = _latest_entries(table)
    default_name = schema.core_options.partition_default_name
    dropped_parts: set[bytes] = set()
    found = [False] * len(partitions)
    names: dict[bytes, tuple[str, dict[str, str]]] = {}
    values_of: dict[bytes, tuple] = {}
    for e in entries:
        if e.partition not in values_of:
            values_of[e.partition] = schema.partition_values(e.partition)
        values = values_of[e.partition]
        hits = [i for i, test in enumerate(tests) if test(values)]
        if not hits:
            continue
        for i in hits:
            found[i] = True
        if e.partition not in names:
            texts = {f.name: (default_name if v is None else render_value(v, f.type)) for f, v in zip(fields, values)}
            names[e.partition] = (partition_path(values, fields, default_name), texts)
        dropped_parts.add(e.partition)
    missing = tuple(dict(spec) for spec, hit in zip(partitions, found) if not hit)
    if not dropped_parts:
        log.info("no live files in partition(s) %s of %s; nothing was dropped",
                 "; ".join(_render_spec(s) for s in partitions), table.name)
        return DropPartitionResult(table.name, table.branch, None, (), missing, 0, 0, dry_run)
    dropped = [e for e in entries if e.partition in dropped_parts]
    files, records = len(dropped), sum(e.file.row_count for e in dropped)
    ordered = sorted(names.values())
    texts = tuple(t for _, t in ordered)
    if dry_run:
        return DropPartitionResult(table.name, table.branch, None, texts, missing, files, records, True)
    committed = _commit_overwrite(table, OverwriteSpec(frozenset(dropped_parts)))
    _tags_after(table, committed)
    log.info("dropped %d partition(s) of %s: %s", len(ordered), table.name, ", ".join(n for n, _ in ordered))
    return DropPartitionResult(table.name, table.branch, committed, texts, missing, files, records, False)


def _latest_entries(table: TableHandle) -> list[ManifestEntry]:
    return latest_base_entries(table.snapshots, table.manifests(), table.schema.core_options.commit_max_retries)[1]


def _commit_overwrite(table: TableHandle, spec: OverwriteSpec) -> int | None:
    """The same commit path expire-partitions takes: no new files, DELETE what ``spec`` covers."""
    committed = FileStoreCommit(table.file_io, table.path, table.schema,
                                branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit()).commit([], overwrite=spec)
    return committed.id if committed else None


def _tags_after(table: TableHandle, committed: int | None) -> None:
    """Java's truncate and drop-partition commits run no tag step; Java's next commit tags
    their snapshot by the same rules, so running the step now gives the same tags. They are
    no batch sink's jobs: ``batch`` mode makes no tag here."""
    if committed is not None:
        run_quietly(table, batch=False)


def _render_spec(spec: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in spec.items())


__all__ = ["DropPartitionResult", "TruncateResult", "drop_partitions", "truncate"]
