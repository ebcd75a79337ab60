"""Iceberg snapshots built from Paimon's, one per Paimon snapshot, incrementally.

Each Iceberg snapshot has a manifest list. The first one written (a rebuild) holds one manifest
of every visible file; each later snapshot's list is the previous one's, with a new manifest of
the files its Paimon snapshot added, the manifests holding files it removed rewritten (those
entries DELETED, the rest EXISTING), and the others reused as they are. So a commit's work grows
with what it changed, not with the table (Java Paimon's IcebergCommitCallback does the same; the
facts are in docs/iceberg.md). Format 3 adds row ids (a data manifest's ``first_row_id``, given
once) and deletion vectors: delete manifests built the same way from how the table's vectors
changed (``vector_step``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from core.fileio import FileIO, join
from core.iceberg.avro_files import (ADDED, DELETED, EXISTING, avro_records, data_file_path, data_file_record,
                                     delete_file_record, entry_record, records_list_record, records_manifest,
                                     records_manifest_list)
from core.iceberg.deletion_vectors import PaimonVector, puffin_file, read_changed
from core.iceberg.options import compaction_limits
from core.iceberg.types import comparable, from_single_value
from core.schema import TableSchema

# Marks the snapshots lakectl wrote (a key of the snapshot's summary map): metadata whose current
# snapshot lacks it (Java Paimon committed on top) is rebuilt rather than extended, since its
# manifests may not be readable by every reader (docs/iceberg.md).
WRITER_KEY = "lakectl.paimon-commit-kind"


def visible(schema: TableSchema, entry: Any) -> bool:
    """Does an Iceberg reader see this file? Every file of an append table; only the top level
    (``num-levels - 1``, what a full compaction writes) of a primary-key table, whose files
    there hold each key once, merged; with deletion vectors (format 3), every level but 0, as
    Paimon's own batch reads: a key's older rows there are deleted by the vectors."""
    if not schema.has_primary_key:
        return True
    if schema.core_options.deletion_vectors_enabled:  # format 3: vectors delete older rows below
        return entry.file.level > 0
    return entry.file.level == schema.core_options.num_levels - 1


@dataclass
class Change:
    """The visible files one Paimon snapshot added and removed, by absolute path."""

    added: dict[str, Any] = field(default_factory=dict)  # path -> Paimon manifest entry
    removed: dict[str, Any] = field(default_factory=dict)


def change_of(table_path: str, schema: TableSchema, delta: list[Any]) -> Change:
    """A snapshot's delta entries (ADD/DELETE, in order) as a change of the visible files: a
    file deleted and added again (a level change) counts as added only."""
    from core.manifest import ADD

    change = Change()
    for e in delta:
        if not visible(schema, e):
            continue
        path = data_file_path(table_path, schema, e)
        if e.kind == ADD:
            change.removed.pop(path, None)
            change.added[path] = e
        else:
            change.added.pop(path, None)
            change.removed[path] = e
    return change


class ManifestWriter:
    """Writes one sync's manifests and manifest lists into the metadata directory, and
    remembers them (the sync deletes those it ends up not naming)."""

    def __init__(self, file_io: FileIO, directory: str, table_path: str, schema: TableSchema, codec: str,
                 schema_of: Callable[[int], TableSchema], *, format_version: int = 2, next_row_id: int = 0) -> None:
        self.file_io, self.directory, self.table_path = file_io, directory, table_path
        self.schema, self.codec, self.schema_of = schema, codec, schema_of
        self.format_version = format_version
        self.next_row_id = next_row_id  # format 3: the first row id not handed out yet
        self.token = uuid.uuid4().hex
        self.written: list[str] = []

    def manifest(self, snapshot_id: int, records: list[dict[str, Any]], content: int = 0) -> dict[str, Any]:
        """Write a manifest of ``records`` (``content`` 1: of deletion vectors); its manifest-list record."""
        path = join(self.directory, f"{self.token}-m{len(self.written)}.avro")
        data = records_manifest(self.schema, records, self.codec, format_version=self.format_version,
                                content=content)
        self.file_io.write_bytes(path, data)
        self.written.append(path)
        return records_list_record(path, len(data), snapshot_id, records, self.schema, content)

    def puffin(self, data: bytes) -> str:
        """Write a Puffin file of deletion vectors; its path."""
        path = join(self.directory, f"{self.token}-dv{len(self.written)}.puffin")
        self.file_io.write_bytes(path, data)
        self.written.append(path)
        return path

    def assign_row_ids(self, manifests: list[dict[str, Any]]) -> tuple[int, int]:
        """Format 3: give each data manifest listed for the first time its ``first_row_id``
        (a manifest keeps it in every later list, so its files keep their row ids), from the
        ids not handed out yet, its added and existing rows' worth each, as Iceberg's
        writers do. (first id handed out, how many) for the snapshot's row lineage."""
        first = self.next_row_id
        for meta in manifests:
            if meta["content"] == 0 and meta.get("first_row_id") is None:
                meta["first_row_id"] = self.next_row_id
                self.next_row_id += meta["added_rows_count"] + meta["existing_rows_count"]
        return first, self.next_row_id - first

    def data_file(self, entry: Any) -> dict[str, Any]:
        """A Paimon file's ``data_file`` record, column stats in the columns of its own schema."""
        return data_file_record(self.table_path, self.schema, entry, self.schema_of(entry.file.schema_id))

    def manifest_list(self, snapshot_id: int, records: list[dict[str, Any]]) -> str:
        path = join(self.directory, f"snap-{snapshot_id}-{len(self.written)}-{self.token}.avro")
        self.file_io.write_bytes(path, records_manifest_list(records, snapshot_id, self.codec,
                                                             format_version=self.format_version))
        self.written.append(path)
        return path

    def read(self, path: str) -> list[dict[str, Any]]:
        return avro_records(self.file_io.read_bytes(path))

    def read_listed(self, meta: dict[str, Any]) -> list[dict[str, Any]]:
        """The entries of a listed manifest, in format 3 each data file with its row ids made
        explicit (those it inherits from the manifest's ``first_row_id``), so that they stay
        the same when the entry moves to another manifest."""
        records = self.read(meta["manifest_path"])
        next_id = meta.get("first_row_id")
        if self.format_version < 3 or next_id is None or meta["content"] != 0:
            return records
        out = []
        for r in records:  # Iceberg's inheritance: in order, each live file with none after the last
            if r["status"] != DELETED and r["data_file"].get("first_row_id") is None:
                r = {**r, "data_file": {**r["data_file"], "first_row_id": next_id}}
                next_id += r["data_file"]["record_count"]
            out.append(r)
        return out


@dataclass
class Step:
    """One Iceberg snapshot's manifests, and what its summary reports."""

    manifests: list[dict[str, Any]]
    operation: str
    added_files: int
    added_records: int
    deleted_files: int
    deleted_records: int


def first_step(writer: ManifestWriter, snapshot_id: int, entries: list[Any]) -> Step:
    """Every visible file of the snapshot in one manifest (a rebuild's first snapshot)."""
    shown = [e for e in entries if visible(writer.schema, e)]
    records = [entry_record(ADDED, snapshot_id, snapshot_id, writer.data_file(e))
               for e in shown]
    manifests = [writer.manifest(snapshot_id, records)] if records else []
    return Step(manifests, "append", len(shown), sum(e.file.row_count for e in shown), 0, 0)


def next_step(writer: ManifestWriter, base: list[Any], snapshot_id: int, commit_kind: str,
              change: Change) -> Step:
    """The manifests of ``snapshot_id`` from its parent's (``base``, manifest-list records)."""
    removed_partitions = [tuple(comparable(v, f.type) for f, v in
                                zip(writer.schema.partition_fields, writer.schema.partition_values(e.partition)))
                          for e in change.removed.values()]
    manifests: list[dict[str, Any]] = []
    deleted_files = deleted_records = 0
    added = dict(change.added)
    for meta in base:
        if meta["added_files_count"] + meta["existing_files_count"] == 0:
            continue  # only entries an earlier snapshot deleted: nothing live to carry
        if not change.removed or not _may_hold(writer.schema, meta, removed_partitions):
            manifests.append(meta)
            continue
        records = writer.read_listed(meta)
        live = [r for r in records if r["status"] != DELETED]
        for r in live:
            added.pop(r["data_file"]["file_path"], None)  # listed already: not twice
        gone = {r["data_file"]["file_path"] for r in live} & change.removed.keys()
        if not gone:
            manifests.append(meta)
            continue
        deleted_files += len(gone)
        deleted_records += sum(r["data_file"]["record_count"] for r in live if r["data_file"]["file_path"] in gone)
        manifests.append(writer.manifest(snapshot_id, [
            {**r, "status": DELETED, "snapshot_id": snapshot_id} if r["data_file"]["file_path"] in gone
            else {**r, "status": EXISTING} for r in live]))
    if added:
        manifests.append(writer.manifest(snapshot_id, [
            entry_record(ADDED, snapshot_id, snapshot_id, writer.data_file(e))
            for e in added.values()]))
    manifests = _compacted(writer, manifests, snapshot_id)
    operation = "append" if not deleted_files else "replace" if commit_kind == "COMPACT" else "overwrite"
    return Step(manifests, operation, len(added), sum(e.file.row_count for e in added.values()),
                deleted_files, deleted_records)


def _may_hold(schema: TableSchema, meta: dict[str, Any], partitions: list[tuple[Any, ...]]) -> bool:
    """Could the manifest hold a file of one of these partitions? By its partition summaries
    (an unpartitioned table's manifests could hold anything)."""
    summaries = meta.get("partitions") or []
    if not schema.partition_fields or len(summaries) != len(schema.partition_fields):
        return True
    return any(all(_within(s, f.type, v) for s, f, v in zip(summaries, schema.partition_fields, values))
               for values in partitions)


def _within(summary: dict[str, Any], t: Any, value: Any) -> bool:
    if value is None:
        return bool(summary["contains_null"])
    if summary.get("lower_bound") is None or summary.get("upper_bound") is None or value != value:
        return True  # no bounds (or NaN): cannot rule it out
    try:
        return from_single_value(summary["lower_bound"], t) <= value <= from_single_value(summary["upper_bound"], t)
    except (TypeError, ValueError, ArithmeticError):
        return True


def _compacted(writer: ManifestWriter, manifests: list[dict[str, Any]], snapshot_id: int) -> list[dict[str, Any]]:
    """Merge the small manifests into one once there are many (Java's rule and options:
    ``metadata.iceberg.compaction.min.file-num``/``max.file-num`` against the manifest target
    size), so that a long history of small commits does not leave readers opening a manifest
    per commit. Entries an older snapshot added become EXISTING; those it deleted are dropped."""
    target, min_files, max_files = compaction_limits(writer.schema)
    small = [m for m in manifests if m["manifest_length"] < target * 2 // 3]
    if len(small) < min_files or (len(small) < max_files and sum(m["manifest_length"] for m in small) < target):
        return manifests
    records: list[dict[str, Any]] = []
    for meta in small:
        for r in writer.read_listed(meta):
            own = r["snapshot_id"] == snapshot_id
            if r["status"] == DELETED and not own:
                continue
            records.append(r if own or r["status"] != ADDED else {**r, "status": EXISTING})
        if meta["added_snapshot_id"] == snapshot_id and meta["manifest_path"] in writer.written:
            # Written by this very step, so named by nothing now (a rebuild's earlier steps'
            # manifests are named by their snapshots' lists).
            writer.written.remove(meta["manifest_path"])
            writer.file_io.delete_quietly(meta["manifest_path"])
    # Files without row ids first (this step's added ones), so that they inherit theirs from
    # the merged manifest's first_row_id whichever way a reader counts the files before them.
    records.sort(key=lambda r: r["data_file"].get("first_row_id") is not None)
    merged = writer.manifest(snapshot_id, records) if records else None
    return [m for m in manifests if m not in small] + ([merged] if merged else [])


def vector_step(writer: ManifestWriter, base: list[dict[str, Any]], snapshot_id: int,
                before: dict[str, PaimonVector], after: dict[str, PaimonVector]) -> list[dict[str, Any]]:
    """Format 3: the delete manifests of ``snapshot_id`` from its parent's (``base``), the
    table's vectors having gone from ``before`` to ``after`` (data file path -> vector). New
    and changed vectors go into a Puffin file of this snapshot and a delete manifest of it;
    the entries of vectors replaced, or gone with their data file, become DELETED in the
    manifests holding them, rewritten; the other manifests are reused as they are."""
    changed = {path: v for path, v in after.items() if before.get(path) != v}
    gone = {path for path in before if path not in after} | changed.keys()
    manifests: list[dict[str, Any]] = []
    for meta in base:
        if meta["added_files_count"] + meta["existing_files_count"] == 0:
            continue  # only entries an earlier snapshot deleted
        if not gone:
            manifests.append(meta)
            continue
        live = [r for r in writer.read(meta["manifest_path"]) if r["status"] != DELETED]
        if not {r["data_file"]["referenced_data_file"] for r in live} & gone:
            manifests.append(meta)
            continue
        manifests.append(writer.manifest(snapshot_id, [
            {**r, "status": DELETED, "snapshot_id": snapshot_id} if r["data_file"]["referenced_data_file"] in gone
            else {**r, "status": EXISTING} for r in live], content=1))
    vectors = read_changed(writer.file_io, changed) if changed else []
    if vectors:
        data, placed = puffin_file(vectors)
        puffin = writer.puffin(data)
        manifests.append(writer.manifest(snapshot_id, [
            entry_record(ADDED, snapshot_id, snapshot_id, delete_file_record(writer.schema, puffin, len(data), v))
            for v in placed], content=1))
    return manifests


def snapshot_json(snapshot: Any, list_path: str, step: Step, parent: dict[str, Any] | None,
                  row_ids: tuple[int, int] | None = None) -> dict[str, Any]:
    """An Iceberg snapshot of a Paimon one: same id and sequence number, its commit time and
    schema; the summary counts what changed and what is visible (totals from the parent's);
    in format 3 ``row_ids`` (first id handed out, how many) as its row lineage."""
    before = parent["summary"] if parent else {}
    files = _int(before.get("total-data-files")) + step.added_files - step.deleted_files
    records = _int(before.get("total-records")) + step.added_records - step.deleted_records
    summary = {"operation": step.operation, WRITER_KEY: snapshot.commit_kind,
               "added-data-files": str(step.added_files), "added-records": str(step.added_records),
               "deleted-data-files": str(step.deleted_files), "deleted-records": str(step.deleted_records),
               "total-data-files": str(max(0, files)), "total-records": str(max(0, records))}
    out = {"snapshot-id": snapshot.id, "sequence-number": snapshot.id, "timestamp-ms": snapshot.time_millis,
           "summary": summary, "manifest-list": list_path, "schema-id": snapshot.schema_id}
    if snapshot.id > 1:
        out["parent-snapshot-id"] = snapshot.id - 1  # Paimon's ids are consecutive; it may be expired
    if row_ids is not None:
        out["first-row-id"], out["added-rows"] = row_ids
    return out


def _int(text: Any) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return 0
