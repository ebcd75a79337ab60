"""alter: publish a schema change as ``schema-(N+1)``; no data file is ever rewritten.

The rules live in ``core.evolution``; this module adds what needs the table's files: the
proof that a column going NOT NULL holds no nulls anywhere a snapshot or tag can read
(Paimon refuses nullable -> NOT NULL outright by default,
``alter-column-null-to-not-null.disabled``), and the commit. A commit is create-if-absent
of ``schema-(N+1)``; on a lost race the changes are applied again to the winner's schema,
as Java's ``SchemaManager.commitChanges`` loop does.

A writer that planned against schema N and commits after N+1 exists fails in
``core.commit`` (CommitConflictError, exit 4) before anything is published.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

from core.default_values import check_defaults
from core.errors import CommitConflictError, InvalidDataError, UnsupportedTableError, UsageError
from core.evolution import SchemaChange, SetOption, apply_changes
from core.manifest import ADD, ManifestEntry, read_entries
from core.ops.schemas import column_text, describe_changes
from core.ops.check import require_manifest_lists
from core.option_values import check_value
from core.options import DEFAULT_COMMIT_MAX_RETRIES
from core.schema import TableSchema
from core.table_handle import TableHandle
from core.types import DataField

log = logging.getLogger(__name__)


# ---- proving a column null-free --------------------------------------------------------------
def _referenced_files(table: TableHandle) -> list[ManifestEntry]:
    """Every data and changelog file entry any snapshot or tag can reach (ADDs, deduplicated)."""
    lists: set[str] = set()
    snaps = [table.snapshots.snapshot(i) for i in table.snapshots.list_ids()]
    snaps += [table.tags.snapshot(n) for n in table.tags.names()]
    for s in snaps:
        lists.update(x for x in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list) if x)
    seen: dict[tuple, ManifestEntry] = {}
    for e in read_entries(table.manifests(), sorted(lists)):
        seen.setdefault(e.identifier, e)
    return [e for e in seen.values() if e.kind == ADD]  # every file that ever became live


def _null_count(entry: ManifestEntry, file_schema: TableSchema, field_id: int) -> int | None:
    """Nulls of the field in one file: all rows when the file predates the column, else its
    stats' null count (None when the stats do not say)."""
    by_id = {f.id: f for f in file_schema.fields}
    if field_id not in by_id:
        return entry.file.row_count
    name = by_id[field_id].name
    covered = file_schema.field_names if entry.file.value_stats_cols is None else list(entry.file.value_stats_cols)
    counts = entry.file.value_stats.null_counts
    if name not in covered or covered.index(name) >= len(counts):
        return None
    return counts[covered.index(name)]


def check_null_free(table: TableHandle, fields: Sequence[DataField]) -> None:
    """Prove that no row any snapshot or tag can read holds a null in ``fields``.

    Raises:
        InvalidDataError: some file holds nulls in one of them.
        UsageError: the stats of some file do not say (e.g. ``metadata.stats-mode=none``).
    """
    if not fields:
        return
    schemas: dict[int, TableSchema] = {}
    for e in _referenced_files(table):
        if e.file.schema_id not in schemas:
            schemas[e.file.schema_id] = table.schemas.schema(e.file.schema_id)
        for f in fields:
            nulls = _null_count(e, schemas[e.file.schema_id], f.id)
            if nulls is None:
                raise UsageError(f"cannot make {f.name!r} NOT NULL: data file {e.file.file_name} has no null count "
                                 "for it, so lakectl cannot prove the column holds no nulls")
            if nulls:
                raise InvalidDataError(f"cannot make {f.name!r} NOT NULL: data file {e.file.file_name} holds "
                                       f"{nulls} null(s) in it (snapshots and tags that reach the file keep them)")


def _tightened(old: TableSchema, new: TableSchema) -> list[DataField]:
    """Fields that go from nullable to NOT NULL (new columns cannot be NOT NULL)."""
    before = {f.id: f for f in old.fields}
    return [f for f in new.fields if f.id in before and before[f.id].type.nullable and not f.type.nullable]


# ---- the operation ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ColumnPair:
    """One column before and after, as ``name TYPE``; None where it does not exist."""

    id: int
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class AlterResult:
    table: str
    previous_schema_id: int
    schema_id: int  # the new schema's id (the would-be id in a dry run; the old one when nothing changed)
    committed: bool
    dry_run: bool
    changes: tuple[str, ...]  # what changed, one line each
    columns: tuple[ColumnPair, ...] = field(default=())  # the new schema beside the old one


def _side_by_side(old: TableSchema, new: TableSchema) -> tuple[ColumnPair, ...]:
    before = {f.id: column_text(f) for f in old.fields}
    rows = [ColumnPair(f.id, before.get(f.id), column_text(f)) for f in new.fields]
    kept = {f.id for f in new.fields}
    rows += [ColumnPair(f.id, before[f.id], None) for f in old.fields if f.id not in kept]
    return tuple(rows)


def _same(a: TableSchema, b: TableSchema) -> bool:
    return (a.fields, a.highest_field_id, a.primary_keys, dict(a.options), a.comment) == \
        (b.fields, b.highest_field_id, b.primary_keys, dict(b.options), b.comment)


def _commit_retries(table: TableHandle) -> int:
    """The table's commit.max-retries, or Paimon's default when its value does not parse: this
    alter may be the one that repairs it (``--reset-option commit.max-retries``)."""
    try:
        return table.schema.core_options.commit_max_retries
    except UsageError:
        return DEFAULT_COMMIT_MAX_RETRIES


def alter(table: TableHandle, changes: Sequence[SchemaChange], *, dry_run: bool = False) -> AlterResult:
    """Apply ``changes`` to the latest schema and publish it as one new ``schema-N``.

    Args:
        table: an existing table.
        changes: applied in order, atomically: all of them land in one schema or none does.
        dry_run: compute and check the new schema, publish nothing.

    Returns:
        What changed; ``committed`` is False for a dry run or when nothing changed.

    Raises:
        UsageError: no changes, or a change Paimon forbids (nothing is written).
        InvalidDataError: NOT NULL on a column that holds nulls.
        CommitConflictError: other schema changes kept winning the race for the next id.
        CorruptMetadataError: the latest snapshot's manifest lists are missing.
    """
    if not changes:
        raise UsageError("give at least one change (see lakectl alter-schema --help)")
    # Each value set must be one Paimon reads, whatever the table already carries: the schema
    # checks of apply_changes skip the options of a table that is already invalid
    # (core.evolution.validate_schema), and a bad value must not be added to it.
    for change in changes:
        if isinstance(change, SetOption):
            check_value(change.key, change.value)
    if not dry_run:
        table.refuse_unfinished_fast_forward("alter the schema")
    latest = table.latest_snapshot()
    if latest is not None and not dry_run:
        require_manifest_lists(table, latest, "cannot alter the schema")
    retries = _commit_retries(table)
    for attempt in range(retries + 1):
        old = table.schema
        new = apply_changes(old, changes, has_data=table.latest_snapshot() is not None)
        try:
            check_defaults(new)  # Java validates the schema an alter makes as it does at create
        except UnsupportedTableError as e:
            raise UsageError(str(e)) from None
        if _same(old, new):
            return AlterResult(table.name, old.id, old.id, False, dry_run, ())
        tightened = _tightened(old, new)
        if tightened and (table.snapshots.list_ids() or table.tags.names()):
            check_null_free(table, tightened)
        result = AlterResult(table.name, old.id, new.id, not dry_run, dry_run, tuple(describe_changes(old, new)),
                             _side_by_side(old, new))
        if dry_run:
            return result
        if table.location.server_owns_chain:
            # A REST table's schema is the server's: its alterTable applies the changes checked
            # here to its latest schema and writes the next schema file itself.
            catalog = table.location.catalog
            catalog.alter_table(table.name, list(changes), branch=table.branch)  # type: ignore[union-attr]
            served = table.schema  # what the server wrote is what the result reports
            return AlterResult(table.name, old.id, served.id, True, False, tuple(describe_changes(old, served)),
                               _side_by_side(old, served))
        if table.schemas.commit(new):
            return result
        log.info("alter attempt %d: schema-%d was taken by another writer; applying the changes again",
                 attempt + 1, new.id)
    raise CommitConflictError(f"alter-schema did not land after {retries + 1} attempts: other schema changes "
                              "kept winning")


__all__ = ["AlterResult", "ColumnPair", "alter", "check_null_free"]
