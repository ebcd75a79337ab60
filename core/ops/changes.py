"""Incremental reads: what changed between two snapshots, as rows with a ``_row_kind``.

``changes(table, A, B)`` covers the snapshots after A up to and including B, as Paimon's
``incremental-between`` does. Where the table has a changelog producer, the rows come from
the snapshots' changelog files (exact -U/+U/-D/+I for ``lookup`` and ``full-compaction``,
the input records for ``input``). Otherwise they come from the data files each APPEND
snapshot added, with the row kinds they were stored with: the merged state each commit
wrote, not a diff against the previous one; where batch reads skip level 0 (deletion
vectors, first-row) those files are skipped here too, as Java's incremental-between does.
COMPACT snapshots add no changes of their own; their changelog (full-compaction) is read
like any other. OVERWRITE snapshots are skipped in both cases, as Paimon's incremental scans
skip them (a follower reads them with ``streaming-read-overwrite``: ``streaming=True``).

Rows come out snapshot by snapshot, and within one snapshot per (partition, bucket) in file
order, so replaying them in order reproduces the changes in commit order.

That is Paimon's ``incremental-between`` since 1.1 (its delta and changelog scans read each
record as streaming reads do, PR apache/paimon#5361) and pypaimon 2.1's. Java Paimon 1.0
merged the range's files per key instead (one row per key); lakectl follows the later
release. ``incremental-between-scan-mode`` (the table option, or ``mode``) chooses the files:
``delta``, ``changelog``, ``auto`` (changelog where the table has a producer, else delta) or
``diff``: what each key's merged row became between the two snapshots (``core.kernels.diff``),
which is also how Paimon reads a range of two tag names.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa

from core.engines import EngineSettings, choose_engine
from core.errors import NotFoundError, UsageError
from core.kernels.read import ROW_KIND_COLUMN, ReadSplit, changes_schema
from core.manifest import ADD, DataFileMeta, ManifestEntry, live_entries, read_entries
from core.ops.scan import ScanStream, filtered
from core.kernels import data_evolution
from core.options import check_limit
from core.option_rules import READ, check_options
from core.schema import TableSchema
from core.snapshot import COMPACT, OVERWRITE, Snapshot
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


SCAN_MODES = ("auto", "delta", "changelog", "diff")
SCAN_MODE_OPTION = "incremental-between-scan-mode"


def parse_between(text: str) -> tuple[str, str]:
    """``"3,7"`` -> ("3", "7"); ``"tagA,tagB"`` -> ("tagA", "tagB"): snapshot ids or tag names,
    told apart against the table (``resolve_range``)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise UsageError(f"--incremental-between {text!r} must be START,END: two snapshot ids (e.g. 3,7) "
                         f"or two tag names")
    return parts[0], parts[1]


@dataclass(frozen=True, slots=True)
class IncrementalRange:
    """The two ends of an incremental read: snapshot ids, or tags (then their snapshots,
    which may have expired from the snapshot directory)."""

    start: int
    end: int
    tags: tuple[Snapshot, Snapshot] | None = None


def resolve_range(table: TableHandle, start: int | str, end: int | str) -> IncrementalRange:
    """As Paimon: two existing tags make a tag range; otherwise both must be snapshot ids.

    Raises:
        NotFoundError: a name that is neither a tag of the table nor a snapshot id.
        UsageError: the end tag's snapshot is before the start tag's.
    """
    names = [str(start), str(end)]
    if all(table.tags.exists(n) for n in names):  # Paimon looks for two tags first
        before, after = (table.tags.snapshot(n) for n in names)
        if after.id < before.id:
            raise UsageError(f"--incremental-between: the end tag {names[1]} (snapshot {after.id}) is before "
                             f"the start tag {names[0]} (snapshot {before.id})")
        return IncrementalRange(before.id, after.id, (before, after))
    for name in names:
        if not _is_number(name) and not table.tags.exists(name):
            raise NotFoundError(f"tag {name} of table {table.name} does not exist "
                                f"(--incremental-between takes two snapshot ids or two tag names)")
    if not all(_is_number(n) for n in names):
        raise UsageError(f"--incremental-between {names[0]},{names[1]} mixes a tag and a snapshot id; "
                         f"give two tags or two snapshot ids")
    return IncrementalRange(int(names[0]), int(names[1]))


def _is_number(text: str) -> bool:
    """A snapshot id as Paimon parses one (a negative one is then refused as a range)."""
    return text.removeprefix("-").isdigit()


def scan_mode(table_schema: TableSchema, mode: str | None) -> str:
    """``delta``, ``changelog`` or ``diff``: ``mode``, else the table's
    ``incremental-between-scan-mode`` (of its latest schema, as Paimon reads table options),
    with ``auto`` chosen as Paimon does."""
    given = mode if mode is not None else table_schema.options.get(SCAN_MODE_OPTION, "auto")
    chosen = given.strip().lower()
    if chosen not in SCAN_MODES:
        raise UsageError(f"incremental-between-scan-mode {given!r} must be one of {', '.join(SCAN_MODES)}")
    if chosen == "auto":
        return "changelog" if table_schema.core_options.changelog_producer != "none" else "delta"
    return chosen


def plan_changes(table: TableHandle, start: int, end: int, *, streaming: bool = False,
                 mode: str | None = None) -> ChangesPlan:
    """The files holding the changes of snapshots ``start+1 .. end``: delta or changelog files
    as ``mode`` (``scan_mode``) chooses. A batch incremental read skips level-0 files where
    batch scans do (``TableSchema.hides_level0``), and OVERWRITE snapshots (and COMPACT ones
    in delta mode), as Paimon's incremental scans do; a ``streaming`` one (following, which
    chooses its snapshots itself) reads them, as Java's streaming follow-up scans do.

    Raises:
        UsageError: start after end, or a negative id.
        NotFoundError: end is past the latest snapshot, or a snapshot in the range expired.
    """
    if start < 0 or end < start:
        raise UsageError(f"incremental range {start},{end} needs 0 <= START <= END")
    latest = table.snapshots.latest_id()
    if latest is None or end > latest:
        raise NotFoundError(f"snapshot {end} does not exist in table {table.name} (latest: {latest})")
    end_snapshot = _snapshot(table, end, streaming)
    read_schema = table.schemas.schema(end_snapshot.schema_id)
    check_options(read_schema, table.name, READ)
    data_evolution.refuse_incremental(read_schema, table.name)
    # following chooses by the producer alone, whatever the table's incremental-between-scan-mode
    source = ("changelog" if read_schema.core_options.changelog_producer != "none" else "delta") if streaming \
        else scan_mode(table.schema, mode)
    if source == "diff":
        raise UsageError("plan_diff plans a diff read")  # the callers route diff there
    schemas: dict[int, TableSchema] = {read_schema.id: read_schema}
    mio = table.manifests()
    splits: list[ReadSplit] = []
    for sid in range(start + 1, end + 1):
        snap = _snapshot(table, sid, streaming, start)
        if snap.commit_kind == OVERWRITE and not streaming:
            continue  # Paimon's incremental scans skip an overwrite in both modes
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


def _snapshot(table: TableHandle, sid: int, streaming: bool, start: int | None = None) -> Snapshot:
    """Snapshot ``sid``; a streaming read (following) falls back to the retained
    ``changelog/changelog-N`` below the earliest snapshot, as Java's streaming scan does (its
    batch incremental read does not)."""
    from core.changelog_manager import EXPIRED_HINT, streaming_snapshot

    if streaming:
        snap = streaming_snapshot(table.file_io, table.branch_path, table.snapshots, table.schema.options, sid)
    else:
        try:
            snap = table.snapshots.snapshot(sid)
        except NotFoundError:
            snap = None
    if snap is None:
        needs = f"incremental reads need every snapshot after {start}" if start is not None else "it is needed"
        raise NotFoundError(f"snapshot {sid} of table {table.name} has expired; {needs} ({EXPIRED_HINT})")
    return snap


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


@dataclass(frozen=True, slots=True)
class DiffBucket:
    """One (partition, bucket) of a diff read: the files only the start snapshot has
    (``before``) and those only the end snapshot has (``after``)."""

    partition: bytes
    bucket: int
    bucket_dir: str
    before: tuple[DataFileMeta, ...]
    after: tuple[DataFileMeta, ...]


@dataclass(frozen=True, slots=True)
class DiffPlan:
    read_schema: TableSchema
    schemas: dict[int, TableSchema]
    buckets: tuple[DiffBucket, ...]


def plan_diff(table: TableHandle, before: Snapshot, after: Snapshot) -> DiffPlan:
    """The files a ``diff`` read merges: per bucket, the live files of each snapshot that the
    other does not hold (Paimon's ``readIncrementalDiff``), level 0 left out where batch
    scans leave it out.

    Raises:
        UsageError: a deletion-vector table (its vectors change rows of shared files, which
            this diff would not see; Paimon reads them, lakectl refuses).
    """
    read_schema = table.schemas.schema(after.schema_id)
    check_options(read_schema, table.name, READ)
    data_evolution.refuse_incremental(read_schema, table.name)
    if read_schema.core_options.deletion_vectors_enabled:
        raise UsageError(f"table {table.name} uses deletion vectors; lakectl does not read it in "
                         f"incremental-between-scan-mode diff (nor a range of two tags)")
    mio = table.manifests()
    sides = []
    for snapshot in (before, after):
        entries = live_entries(mio, snapshot)
        if read_schema.hides_level0:
            entries = [e for e in entries if e.file.level > 0]
        sides.append({(e.partition, e.bucket, e.file.file_name): e for e in entries})
    old, new = sides
    schemas: dict[int, TableSchema] = {read_schema.id: read_schema}
    grouped: dict[tuple[bytes, int], tuple[list[DataFileMeta], list[DataFileMeta]]] = {}
    for side, entries, other in ((0, old, new), (1, new, old)):
        for name, e in entries.items():
            if name in other:
                continue  # a file both snapshots hold changes nothing between them
            grouped.setdefault((e.partition, e.bucket), ([], []))[side].append(e.file)
            if e.file.schema_id not in schemas:
                schemas[e.file.schema_id] = table.schemas.schema(e.file.schema_id)
    buckets = tuple(DiffBucket(part, bucket, read_schema.bucket_dir(table.path, part, bucket),
                               tuple(b), tuple(sorted(a, key=lambda f: (f.min_sequence_number, f.file_name))))
                    for (part, bucket), (b, a) in grouped.items())
    return DiffPlan(read_schema, schemas, buckets)


def changes_stream(table: TableHandle, start: int | str, end: int | str, *, select: Sequence[str] | None = None,
                   where: str | None = None, limit: int | None = None,
                   engine_settings: EngineSettings | None = None, streaming: bool = False,
                   mode: str | None = None) -> ScanStream:
    """The changes of snapshots ``start+1 .. end`` (snapshot ids, or two tag names) part by
    part as they are read (for stdout and ``--output``: never whole in memory): ``_row_kind``
    and the table's columns (or ``select``), filtered by ``where``, at most ``limit`` rows
    (``streaming``: see ``plan_changes``; ``mode``: see ``scan_mode``). A range of two tags
    is read as a diff, as Paimon reads it."""
    check_limit(limit)
    # following reads one snapshot at a time by id, never a tag of that name
    span = IncrementalRange(int(start), int(end)) if streaming else resolve_range(table, start, end)
    if span.tags is not None:
        if mode is not None and scan_mode(table.schema, mode) != "diff" and mode.strip().lower() != "auto":
            raise UsageError(f"a range of two tags is read as a diff, as Paimon reads it; "
                             f"--incremental-between-scan-mode {mode} needs snapshot ids")
        return _diff_stream(table, span, select=select, where=where, limit=limit)
    if not streaming and scan_mode(table.schema, mode) == "diff":
        return _diff_stream(table, span, select=select, where=where, limit=limit)
    plan = plan_changes(table, span.start, span.end, streaming=streaming, mode=mode)
    predicate = _predicate(plan.read_schema, select, where)
    engine, why = choose_engine(engine_settings, data_bytes=plan.data_bytes)
    log.info("engine: %s (%s); %d files of %s", engine.name, why, sum(len(s.files) for s in plan.splits),
             plan.source)
    schema = _output_schema(plan.read_schema, select)
    columns = [ROW_KIND_COLUMN, *select] if select else None
    parts = filtered(engine.read_parts(plan.splits, plan.read_schema, plan.schemas, table.file_io), predicate, columns,
                     limit)
    return ScanStream(schema, (p.cast(schema) for p in parts), engine.name)


def _diff_stream(table: TableHandle, span: IncrementalRange, *, select: Sequence[str] | None, where: str | None,
                 limit: int | None) -> ScanStream:
    """A diff read, bucket by bucket, on this machine (it merges each side whole per bucket)."""
    from core.kernels.diff import read_diff

    if span.tags is not None:
        before, after = span.tags
    else:
        if span.start < 0 or span.end < span.start:
            raise UsageError(f"incremental range {span.start},{span.end} needs 0 <= START <= END")
        before, after = (_existing_snapshot(table, sid) for sid in (span.start, span.end))
    plan = plan_diff(table, before, after)
    predicate = _predicate(plan.read_schema, select, where)
    log.info("engine: local (a diff read); %d buckets differ", len(plan.buckets))
    schema = _output_schema(plan.read_schema, select)
    columns = [ROW_KIND_COLUMN, *select] if select else None
    parts = (read_diff(b.bucket_dir, b.before, b.after, plan.read_schema, plan.schemas, table.file_io,
                                b.partition)
             for b in plan.buckets) if before.id != after.id else iter(())
    return ScanStream(schema, (p.cast(schema) for p in filtered(parts, predicate, columns, limit)), "local")


def _existing_snapshot(table: TableHandle, sid: int) -> Snapshot:
    if not table.snapshots.exists(sid):
        raise NotFoundError(f"snapshot {sid} of table {table.name} does not exist; a diff reads both "
                            f"ends of the range")
    return table.snapshots.snapshot(sid)


def _predicate(read_schema: TableSchema, select: Sequence[str] | None, where: str | None):
    for name in select or ():
        read_schema.field(name)  # raises UsageError naming the columns
    if where is None:
        return None
    from core.where import parse_where  # sqlglot: only for a condition

    return parse_where(where, read_schema.fields)


def changes(table: TableHandle, start: int | str, end: int | str, *, select: Sequence[str] | None = None,
            where: str | None = None, limit: int | None = None,
            engine_settings: EngineSettings | None = None, streaming: bool = False,
            mode: str | None = None) -> pa.Table:
    """``changes_stream`` as one table."""
    stream = changes_stream(table, start, end, select=select, where=where, limit=limit,
                            engine_settings=engine_settings, streaming=streaming, mode=mode)
    parts = list(stream.parts)
    return pa.concat_tables(parts) if parts else stream.schema.empty_table()


def _output_schema(read_schema: TableSchema, select: Sequence[str] | None) -> pa.Schema:
    full = changes_schema(read_schema)
    if not select:
        return full
    return pa.schema([full.field(ROW_KIND_COLUMN)] + [full.field(n) for n in select])


__all__ = ["SCAN_MODES", "ChangesPlan", "DiffPlan", "IncrementalRange", "changes", "changes_stream", "parse_between",
           "plan_changes", "plan_diff", "resolve_range", "scan_mode"]
