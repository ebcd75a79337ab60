"""Incremental reads: what changed between two snapshots, as rows with a ``_row_kind``.

``changes(table, A, B)`` covers the snapshots after A up to and including B, as Paimon's
``incremental-between`` does. Where the table has a changelog producer, the rows come from
the snapshots' changelog files (exact -U/+U/-D/+I for ``lookup`` and ``full-compaction``,
the input records for ``input``). Otherwise they come from the data files each APPEND or
OVERWRITE snapshot added, with the row kinds they were stored with: the merged state each
commit wrote, not a diff against the previous one; where batch reads skip level 0 (deletion
vectors, first-row) those files are skipped here too, as Java's incremental-between does. COMPACT snapshots add no changes of
their own; their changelog (full-compaction) is read like any other.

Rows come out snapshot by snapshot, and within one snapshot per (partition, bucket) in file
order, so replaying them in order reproduces the changes in commit order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa

from core.engines import EngineSettings, choose_engine
from core.errors import NotFoundError, UsageError
from core.kernels.read import ROW_KIND_COLUMN, ReadSplit, changes_schema
from core.manifest import ADD, ManifestEntry, read_entries
from core.ops.scan import ScanStream, filtered
from core.kernels import data_evolution
from core.options import check_limit
from core.option_rules import READ, check_options
from core.schema import TableSchema
from core.snapshot import COMPACT
from core.table_handle import TableHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ChangesPlan:
    start: int
    end: int
    source: str  # "changelog" or "delta"
    read_schema: TableSchema
    schemas: dict[int, TableSchema]
    splits: tuple[ReadSplit, ...]

    @property
    def data_bytes(self) -> int:
        return sum(f.file_size for s in self.splits for f in s.files)


def parse_between(text: str) -> tuple[int, int]:
    """``"3,7"`` -> (3, 7)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise UsageError(f"--incremental-between {text!r} must be two snapshot ids, START,END (e.g. 3,7)")
    return int(parts[0]), int(parts[1])


def plan_changes(table: TableHandle, start: int, end: int, *, streaming: bool = False) -> ChangesPlan:
    """The files holding the changes of snapshots ``start+1 .. end``. A batch incremental read
    skips level-0 files where batch scans do (``TableSchema.hides_level0``); a ``streaming``
    one (following) reads them, as Java's streaming follow-up scans do.

    Raises:
        UsageError: start after end, or a negative id.
        NotFoundError: end is past the latest snapshot, or a snapshot in the range expired.
    """
    if start < 0 or end < start:
        raise UsageError(f"incremental range {start},{end} needs 0 <= START <= END")
    latest = table.snapshots.latest_id()
    if latest is None or end > latest:
        raise NotFoundError(f"snapshot {end} does not exist in table {table.name} (latest: {latest})")
    end_snapshot = table.snapshots.snapshot(end)
    read_schema = table.schemas.schema(end_snapshot.schema_id)
    check_options(read_schema, table.name, READ)
    data_evolution.refuse_incremental(read_schema, table.name)
    source = "changelog" if read_schema.core_options.changelog_producer != "none" else "delta"
    schemas: dict[int, TableSchema] = {read_schema.id: read_schema}
    mio = table.manifests()
    splits: list[ReadSplit] = []
    for sid in range(start + 1, end + 1):
        if not table.snapshots.exists(sid):
            raise NotFoundError(f"snapshot {sid} of table {table.name} has expired; "
                                f"incremental reads need every snapshot after {start}")
        snap = table.snapshots.snapshot(sid)
        if source == "changelog":
            entries = read_entries(mio, [snap.changelog_manifest_list])
            if read_schema.core_options.deletion_vectors_enabled and read_schema.has_primary_key and not streaming:
                # Java's batch scan skips level 0 there, changelog files included (its lookup
                # compactions write theirs at the level they compact to, as lakectl's do).
                entries = [e for e in entries if e.file.level > 0]
        elif snap.commit_kind == COMPACT:
            continue
        else:
            entries = read_entries(mio, [snap.delta_manifest_list])
            if read_schema.hides_level0 and not streaming:
                # Java's incremental-between is a batch scan: with deletion vectors (or
                # first-row) it skips level-0 files, which is every file an APPEND adds.
                entries = [e for e in entries if e.file.level > 0]
        splits.extend(_splits(table, read_schema, [e for e in entries if e.kind == ADD], schemas))
    return ChangesPlan(start, end, source, read_schema, schemas, tuple(splits))


def _splits(table: TableHandle, read_schema: TableSchema, entries: list[ManifestEntry],
            schemas: dict[int, TableSchema]) -> list[ReadSplit]:
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault((e.partition, e.bucket), []).append(e)
        if e.file.schema_id not in schemas:
            schemas[e.file.schema_id] = table.schemas.schema(e.file.schema_id)
    out = []
    for (part, bucket), group in groups.items():
        files = sorted((e.file for e in group), key=lambda f: (f.min_sequence_number, f.file_name))
        directory = read_schema.bucket_dir(table.path, part, bucket)
        out.append(ReadSplit(part, bucket, directory, tuple(files), changes=True))
    return out


def changes_stream(table: TableHandle, start: int, end: int, *, select: Sequence[str] | None = None,
                   where: str | None = None, limit: int | None = None,
                   engine_settings: EngineSettings | None = None, streaming: bool = False) -> ScanStream:
    """The changes of snapshots ``start+1 .. end`` part by part as they are read (for stdout
    and ``--output``: never whole in memory): ``_row_kind`` and the table's columns (or
    ``select``), filtered by ``where``, at most ``limit`` rows (``streaming``: see
    ``plan_changes``)."""
    check_limit(limit)
    plan = plan_changes(table, start, end, streaming=streaming)
    for name in select or ():
        plan.read_schema.field(name)  # raises UsageError naming the columns
    predicate = None
    if where is not None:
        from core.where import parse_where  # sqlglot: only for a condition

        predicate = parse_where(where, plan.read_schema.fields)
    engine, why = choose_engine(engine_settings, data_bytes=plan.data_bytes)
    log.info("engine: %s (%s); %d files of %s", engine.name, why, sum(len(s.files) for s in plan.splits),
             plan.source)
    schema = _output_schema(plan.read_schema, select)
    columns = [ROW_KIND_COLUMN, *select] if select else None
    parts = filtered(engine.read_parts(plan.splits, plan.read_schema, plan.schemas, table.file_io), predicate, columns,
                     limit)
    return ScanStream(schema, (p.cast(schema) for p in parts), engine.name)


def changes(table: TableHandle, start: int, end: int, *, select: Sequence[str] | None = None,
            where: str | None = None, limit: int | None = None,
            engine_settings: EngineSettings | None = None, streaming: bool = False) -> pa.Table:
    """``changes_stream`` as one table."""
    stream = changes_stream(table, start, end, select=select, where=where, limit=limit,
                            engine_settings=engine_settings, streaming=streaming)
    parts = list(stream.parts)
    return pa.concat_tables(parts) if parts else stream.schema.empty_table()


def _output_schema(read_schema: TableSchema, select: Sequence[str] | None) -> pa.Schema:
    full = changes_schema(read_schema)
    if not select:
        return full
    return pa.schema([full.field(ROW_KIND_COLUMN)] + [full.field(n) for n in select])


__all__ = ["ChangesPlan", "changes", "changes_stream", "parse_between", "plan_changes"]
