"""Writing a snapshot's Iceberg metadata, after commits, moves and drops."""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

from core.errors import CorruptMetadataError, NotFoundError, UsageError
from core.fileio import FileIO, join
from core.iceberg.avro_files import avro_records
from core.iceberg.deletion_vectors import PaimonVector, table_vectors
from core.iceberg.history import (WRITER_KEY, ManifestWriter, Step, change_of, first_step, next_step,
                                  snapshot_json, vector_step, visible)
from core.iceberg.metadata import (NAME_MAPPING, first_row_id, history_metadata_json,
                                   iceberg_location, metadata_dir, name_mapping)
from core.iceberg.options import (CODECS, VERSION_HINT, format_version, manifest_compression, previous_versions_kept,
                                  refusal, storage)
from core.schema import TableSchema

log = logging.getLogger(__name__)
_METADATA_NAME = re.compile(r"v(\d+)\.metadata\.json")


@dataclass(frozen=True, slots=True)
class IcebergSyncResult:
    """What one sync wrote (or, dry, would write)."""

    snapshot_id: int | None
    metadata_file: str | None
    data_files: int
    record_count: int
    deleted_versions: int
    dry_run: bool = False
    skipped: bool = False  # a newer snapshot's metadata was current already: nothing written


def visible_entries(schema: TableSchema, entries: list[Any]) -> list[Any]:
    """The live files Iceberg readers get (``history.visible``)."""
    return [e for e in entries if visible(schema, e)]


class _Paimon:
    """What a sync reads of the Paimon table: snapshots, their files, schemas, tags."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema) -> None:
        from core.manifest import ManifestIO
        from core.schema import SchemaManager
        from core.snapshot import SnapshotManager
        from core.tag import TagManager

        self.snapshots = SnapshotManager(file_io, table_path)
        self.manifests = ManifestIO(file_io, table_path, schema.core_options.manifest_compression)
        self.schema_manager = SchemaManager(file_io, table_path)
        self.tag_manager = TagManager(file_io, table_path)
        self.file_io, self.table_path, self.schema = file_io, table_path, schema
        self.no_vectors: dict[str, PaimonVector] = {}
        self._vectors_of: tuple[str | None, dict[str, PaimonVector]] = (None, self.no_vectors)
        self._schemas: dict[int, TableSchema] = {schema.id: schema}

    def live(self, snapshot: Any) -> list[Any]:
        from core.manifest import live_entries

        return live_entries(self.manifests, snapshot)

    def delta(self, snapshot: Any) -> list[Any]:
        from core.manifest import read_entries

        return read_entries(self.manifests, [snapshot.delta_manifest_list])

    def schema_of(self, schema_id: int) -> TableSchema:
        if schema_id not in self._schemas:
            self._schemas[schema_id] = self.schema_manager.schema(schema_id)
        return self._schemas[schema_id]

    def all_schemas(self) -> list[TableSchema]:
        return [self.schema_of(i) for i in self.schema_manager.list_ids() if i <= self.schema.id]

    def tags(self) -> dict[str, int]:
        return {t.name: t.snapshot.id for t in self.tag_manager.tags()}

    def vectors(self, snapshot: Any) -> dict[str, PaimonVector]:
        """Format 3: data file path -> deletion vector at ``snapshot`` (none in format 2, which
        has no deletion vectors). Snapshots sharing an index manifest get the same dict, read once."""
        if format_version(self.schema.options) < 3 or not snapshot.index_manifest:
            return self.no_vectors
        if snapshot.index_manifest != self._vectors_of[0]:
            self._vectors_of = (snapshot.index_manifest,
                                table_vectors(self.file_io, self.table_path, self.schema, snapshot))
        return self._vectors_of[1]


def sync(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Any, *, full: bool = False,
         dry_run: bool = False) -> IcebergSyncResult:
    """Write the Iceberg metadata of ``snapshot``, the table's latest (or a rollback's target):
    ``v<id>.metadata.json`` with the Iceberg snapshots of every Paimon snapshot from the
    earliest to it, extending the current version where it can (``full``: rebuilt from the
    Paimon snapshots, as ``iceberg-sync`` does). The same id again (after an expire, a tag
    change) replaces that version in place, as Java does for tags."""
    why = refusal(schema)
    if why is not None:
        raise UsageError(f"cannot write Iceberg metadata: {why}")
    directory = metadata_dir(table_path, schema.options)
    name = f"v{snapshot.id}.metadata.json"
    newer = _newer_live_version(file_io, table_path, directory, snapshot.id)
    if newer is not None:
        # A later commit's sync landed first (two writers): its metadata stays the current one.
        log.info("Iceberg metadata of snapshot %d not written: snapshot %d's is there already", snapshot.id, newer)
        return IcebergSyncResult(newer, join(directory, f"v{newer}.metadata.json"), 0, 0, 0, dry_run=dry_run,
                                 skipped=True)
    paimon = _Paimon(file_io, table_path, schema)
    if dry_run:
        shown = visible_entries(schema, paimon.live(snapshot))
        return IcebergSyncResult(snapshot.id, join(directory, name), len(shown),
                                 sum(e.file.row_count for e in shown), 0, dry_run=True)
    previous_version = _hint(file_io, directory)
    previous = None if previous_version is None else \
        _read_json(file_io, join(directory, f"v{previous_version}.metadata.json"))
    replaced = _read_json(file_io, join(directory, name))  # this snapshot's earlier metadata, if any
    # Format 3: row ids already handed out (the previous version's next-row-id) are never reused.
    writer = ManifestWriter(file_io, directory, table_path, schema, CODECS[manifest_compression(schema.options)],
                            paimon.schema_of, format_version=format_version(schema.options),
                            next_row_id=first_row_id(previous))
    earliest = min(paimon.snapshots.earliest_id() or snapshot.id, snapshot.id)
    base = None if full else _extendable(previous, paimon, table_path, snapshot, earliest)
    chain = _history(writer, paimon, snapshot, earliest, base)
    metadata = _metadata(writer, paimon, table_path, directory, chain, previous, previous_version)
    # Replaced whole where the store allows (readers see the old or the new file), so a sync
    # killed midway leaves the version the hint names readable: nothing is deleted before this.
    file_io.overwrite_hint(join(directory, name), json.dumps(metadata))
    if _newer_live_version(file_io, table_path, directory, snapshot.id) is None:
        file_io.overwrite_hint(join(directory, VERSION_HINT), str(snapshot.id))
    ids = {s["snapshot-id"] for s in chain}
    lost = any(s.get("snapshot-id") not in ids for s in _snapshots(previous))
    deleted = _prune(file_io, table_path, directory, schema.options, snapshot.id, metadata, replaced,
                     check_history=base is None or lost, earliest=earliest)
    summary = chain[-1]["summary"]
    return IcebergSyncResult(snapshot.id, join(directory, name), int(summary["total-data-files"]),
                             int(summary["total-records"]), deleted)


def _history(writer: ManifestWriter, paimon: _Paimon, snapshot: Any, earliest: int,
             base: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The Iceberg snapshots up to ``snapshot``: extending ``base``, else (or when the base's
    manifests do not read: gone, truncated) rebuilt from the earliest Paimon snapshot."""
    try:
        return _chain(writer, paimon, snapshot, earliest, base)
    except (OSError, ValueError, EOFError) as e:
        if base is None:
            raise
        log.info("Iceberg metadata of snapshot %d rebuilt: the current version's manifests did not read (%s)",
                 snapshot.id, e)
        for path in writer.written:  # this attempt's: no version names them
            writer.file_io.delete_quietly(path)
        writer.written.clear()
        return _chain(writer, paimon, snapshot, earliest, None)


def _metadata(writer: ManifestWriter, paimon: _Paimon, table_path: str, directory: str, chain: list[dict[str, Any]],
              previous: dict[str, Any] | None, previous_version: int | None) -> dict[str, Any]:
    """The metadata file of ``chain``: the schemas its snapshots use and the current one, the
    tags of its snapshots as refs, the table uuid kept from the previous version of this
    location, the metadata log, and the name mapping."""
    schema = paimon.schema
    ids = {s["snapshot-id"] for s in chain}
    schemas = [paimon.schema_of(i) for i in sorted({s["schema-id"] for s in chain} | {schema.id})]
    refs = {tag: sid for tag, sid in paimon.tags().items() if sid in ids}
    same_table = previous is not None and previous.get("location") == iceberg_location(table_path, schema.options)
    table_uuid = (previous or {}).get("table-uuid") if same_table else None
    metadata = history_metadata_json(table_path, schema, schemas, chain, refs, table_uuid or str(uuid.uuid4()),
                                     _metadata_log(directory, previous, previous_version, chain[-1]["snapshot-id"],
                                                   schema.options),
                                     format_version=writer.format_version, next_row_id=writer.next_row_id)
    every_schema = {s.id: s for s in paimon.all_schemas()}  # a kept snapshot's files may be of any
    metadata["properties"][NAME_MAPPING] = json.dumps(name_mapping(paimon.file_io, table_path, schema, [],
                                                                        every_schema))
    return metadata


def _extendable(previous: dict[str, Any] | None, paimon: _Paimon, table_path: str, snapshot: Any,
                earliest: int) -> list[dict[str, Any]] | None:
    """The snapshots of the current metadata a new version can start from: those Paimon still
    has, up to ``snapshot`` (fewer after an expire or a rollback). None, for a rebuild, when
    there is no current metadata, it is another table's or location's, Java Paimon wrote its
    current snapshot, or its newest kept snapshot is not the Paimon snapshot of that id (a
    rollback and new commits reused the id)."""
    if previous is None or previous.get("format-version") != format_version(paimon.schema.options) or \
            previous.get("location") != iceberg_location(table_path, paimon.schema.options):
        return None
    snapshots = previous.get("snapshots") or []
    current = next((s for s in snapshots if s.get("snapshot-id") == previous.get("current-snapshot-id")), None)
    if current is None or WRITER_KEY not in (current.get("summary") or {}):
        return None
    kept = [s for s in snapshots if earliest <= s.get("snapshot-id", -1) <= snapshot.id]
    if not kept:
        return None
    anchor = kept[-1]["snapshot-id"]
    try:
        paimon_anchor = snapshot if anchor == snapshot.id else paimon.snapshots.snapshot(anchor)
    except (NotFoundError, CorruptMetadataError):
        return None
    return kept if paimon_anchor.time_millis == kept[-1].get("timestamp-ms") else None


def _chain(writer: ManifestWriter, paimon: _Paimon, snapshot: Any, earliest: int,
           base: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The Iceberg snapshots of Paimon snapshots ``earliest`` .. ``snapshot``: ``base``'s, then
    one step per Paimon snapshot after its last (each from that snapshot's delta, and in
    format 3 from how its deletion vectors differ from its parent's); without a base, the
    earliest snapshot's visible files in one manifest first."""
    if base is None:
        first = snapshot if earliest == snapshot.id else paimon.snapshots.snapshot(earliest)
        step = first_step(writer, first.id, paimon.live(first))
        vectors = paimon.vectors(first)
        deletes = vector_step(writer, [], first.id, {}, vectors) if vectors else []
        base = [_listed(writer, first, step, deletes, None)]
        manifests = step.manifests
    else:
        listed = writer.read(base[-1]["manifest-list"])
        manifests = [m for m in listed if m["content"] == 0]
        deletes = [m for m in listed if m["content"] != 0]
        vectors = paimon.vectors(paimon.snapshots.snapshot(base[-1]["snapshot-id"])) \
            if writer.format_version >= 3 else paimon.no_vectors
    chain = list(base)
    for sid in range(chain[-1]["snapshot-id"] + 1, snapshot.id + 1):
        paimon_snapshot = snapshot if sid == snapshot.id else paimon.snapshots.snapshot(sid)
        change = change_of(writer.table_path, writer.schema, paimon.delta(paimon_snapshot))
        step = next_step(writer, manifests, sid, paimon_snapshot.commit_kind, change)
        after = paimon.vectors(paimon_snapshot)
        if after is not vectors:  # the same index manifest: the same vectors
            deletes = vector_step(writer, deletes, sid, vectors, after)
            vectors = after
        chain.append(_listed(writer, paimon_snapshot, step, deletes, chain[-1]))
        manifests = step.manifests
    return chain


def _listed(writer: ManifestWriter, paimon_snapshot: Any, step: Step, deletes: list[dict[str, Any]],
            parent: dict[str, Any] | None) -> dict[str, Any]:
    """The Iceberg snapshot of a step: its manifest list written (data manifests, then delete
    manifests), in format 3 with the row ids its new data manifests took."""
    manifests = step.manifests + deletes
    if writer.format_version < 3:
        return snapshot_json(paimon_snapshot, writer.manifest_list(paimon_snapshot.id, manifests), step, parent)
    row_ids = writer.assign_row_ids(manifests)
    snapshot = snapshot_json(paimon_snapshot, writer.manifest_list(paimon_snapshot.id, manifests), step, parent,
                             row_ids)
    # The live deletion vectors, as Java's summary counts them.
    snapshot["summary"].update({
        "total-delete-files": str(sum(m["added_files_count"] + m["existing_files_count"] for m in deletes)),
        "total-position-deletes": str(sum(m["added_rows_count"] + m["existing_rows_count"] for m in deletes)),
        "total-equality-deletes": "0"})
    return snapshot


def _metadata_log(directory: str, previous: dict[str, Any] | None, previous_version: int | None, version: int,
                  options: Mapping[str, str]) -> list[dict[str, Any]]:
    """The earlier metadata files, oldest first, as many as are kept (``previous-versions-max``)."""
    if previous is None or previous_version is None:
        return []
    log_entries = list(previous.get("metadata-log") or [])
    if previous_version != version:
        log_entries.append({"metadata-file": join(directory, f"v{previous_version}.metadata.json"),
                            "timestamp-ms": previous.get("last-updated-ms", 0)})
    log_entries = [e for e in log_entries if (_version_of(e.get("metadata-file", "")) or version) < version]
    keep = previous_versions_kept(options)
    return log_entries if keep is None else log_entries[-keep:] if keep else []


def _version_of(path: str) -> int | None:
    m = _METADATA_NAME.fullmatch(path.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


def _hint(file_io: FileIO, directory: str) -> int | None:
    hint = file_io.read_text_if_exists(join(directory, VERSION_HINT))
    return int(hint.strip()) if hint is not None and hint.strip().isdigit() else None


def _read_json(file_io: FileIO, path: str) -> dict[str, Any] | None:
    text = file_io.read_text_if_exists(path)
    try:
        doc = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _newer_live_version(file_io: FileIO, table_path: str, directory: str, snapshot_id: int) -> int | None:
    """The version the hint names when it is newer than ``snapshot_id`` and its Paimon snapshot
    still exists; None otherwise (a hint past a rollback names a snapshot that is gone)."""
    hint = file_io.read_text_if_exists(join(directory, VERSION_HINT))
    if hint is None or not hint.strip().isdigit() or int(hint) <= snapshot_id:
        return None
    newer = int(hint)
    return newer if file_io.exists(join(table_path, "snapshot", f"snapshot-{newer}")) else None


def sync_after_commit(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Any) -> None:
    """After a published commit (or an expire, a tag change, a rollback): write the Iceberg
    metadata, or warn. Never raises: the Paimon change has landed whatever happens here."""
    try:
        sync(file_io, table_path, schema, snapshot)
    except Exception as e:  # noqa: BLE001 - a derived artifact: any failure is a warning
        log.warning("snapshot %d committed, but its Iceberg metadata was not written (%s); the next commit "
                    "or `lakectl iceberg-sync` writes it", snapshot.id, e)


def after_move(file_io: FileIO, old_path: str, new_path: str, schema: TableSchema, snapshot: Any) -> None:
    """After a rename: the metadata names files by absolute path, so the table's is written anew
    at its new place, and the moved one (table-location) or the old name's (hadoop-catalog) is
    removed. Never raises: the rename is done (a warning; iceberg-sync repairs)."""
    try:
        # Every file of the moved metadata names the old paths: none is worth keeping.
        if storage(schema.options) == "hadoop-catalog":
            file_io.delete_tree(iceberg_location(old_path, schema.options))
        else:
            file_io.delete_tree(metadata_dir(new_path, schema.options))
        if snapshot is not None:
            sync(file_io, new_path, schema, snapshot)
    except Exception as e:  # noqa: BLE001 - a derived artifact: any failure is a warning
        log.warning("the table moved, but its Iceberg metadata was not rewritten (%s); `lakectl iceberg-sync` "
                    "writes it", e)


def after_change(file_io: FileIO, table_path: str, schema: TableSchema) -> None:
    """After an expire, a tag created or deleted, or a rollback: the latest snapshot's metadata
    again, in place (its snapshots, refs, schemas as they are now). Never raises."""
    from core.snapshot import SnapshotManager

    try:
        latest = SnapshotManager(file_io, table_path).latest()
    except Exception as e:  # noqa: BLE001 - a derived artifact: any failure is a warning
        log.warning("the Iceberg metadata was not brought up to date (%s); `lakectl iceberg-sync` writes it", e)
        return
    if latest is not None:
        sync_after_commit(file_io, table_path, schema, latest)


def after_drop(file_io: FileIO, table_path: str, options: Mapping[str, str]) -> None:
    """After a drop: a hadoop-catalog directory outside the table goes too (the table's own
    ``metadata/`` went with its directory)."""
    if storage(options) == "hadoop-catalog":
        file_io.delete_tree(iceberg_location(table_path, options))



# ---- old versions ---------------------------------------------------------------------------
def _prune(file_io: FileIO, table_path: str, directory: str, options: Mapping[str, str], current: int,
           metadata: dict[str, Any], replaced: dict[str, Any] | None, *, check_history: bool, earliest: int) -> int:
    """Delete the metadata versions no longer kept, then the manifest lists and manifests that
    no kept version names. Doomed: versions past ``current`` whose Paimon snapshot is gone (a
    rollback removed it), those older than the newest ``previous-versions-max`` (with
    ``delete-after-commit.enabled``), and (``check_history``: this sync dropped snapshots or
    rebuilt) older versions naming a snapshot expired from Paimon, whose files may be gone.
    Lists and manifests are read only when some list is no longer named, so a plain commit
    reads none."""
    versions = sorted(v for n in file_io.list_names(directory) if (v := _version_of(n)) is not None)
    older = [v for v in versions if v < current]
    doomed = {v for v in versions if v > current and not file_io.exists(join(table_path, "snapshot", f"snapshot-{v}"))}
    keep = previous_versions_kept(options)
    if keep is not None:
        doomed.update(older[:max(0, len(older) - keep)])
    docs = {v: _read_json(file_io, join(directory, f"v{v}.metadata.json")) for v in versions
            if v != current and (v in doomed or check_history)}
    if check_history:
        doomed.update(v for v in older if any(s.get("snapshot-id", 0) < earliest for s in _snapshots(docs.get(v))))
    kept_lists = _lists(metadata)
    dropped = set().union(_lists(replaced), *(_lists(docs.get(v)) for v in doomed)) - kept_lists
    if dropped:  # only now are the kept versions' lists and their manifests worth reading
        kept_lists |= set().union(*(_lists(_read_json(file_io, join(directory, f"v{v}.metadata.json")))
                                    for v in versions if v != current and v not in doomed))
        dropped -= kept_lists
    for v in sorted(doomed):  # first, so that no version is left naming a file deleted below
        file_io.delete_quietly(join(directory, f"v{v}.metadata.json"))
    if dropped:
        kept_manifests = _listed_manifests(file_io, kept_lists)
        gone = _listed_manifests(file_io, dropped)
        # The Puffin files of the delete manifests going, unless a kept delete manifest names them.
        going = [m for p, m in gone.items() if p not in kept_manifests and m["content"] != 0]
        if going:
            kept_puffins = set().union(*(_puffins(file_io, directory, m) for m in kept_manifests.values()
                                         if m["content"] != 0))
            for path in sorted(set().union(*(_puffins(file_io, directory, m) for m in going)) - kept_puffins):
                file_io.delete_quietly(path)
        for path in sorted(gone.keys() - kept_manifests.keys()):
            file_io.delete_quietly(path)
        for path in sorted(dropped):
            file_io.delete_quietly(path)
    return len(doomed)


def _snapshots(doc: dict[str, Any] | None) -> list[dict[str, Any]]:
    snapshots = (doc or {}).get("snapshots")
    return [s for s in snapshots if isinstance(s, dict)] if isinstance(snapshots, list) else []


def _lists(doc: dict[str, Any] | None) -> set[str]:
    """The manifest lists a metadata file names."""
    return {s["manifest-list"] for s in _snapshots(doc) if s.get("manifest-list")}


def _listed_manifests(file_io: FileIO, list_paths: set[str]) -> dict[str, dict[str, Any]]:
    """Manifest path -> its list record, of the manifests these lists name (none of a list
    that is unreadable or gone)."""
    out: dict[str, dict[str, Any]] = {}
    for list_path in list_paths:
        try:
            out.update((r["manifest_path"], r) for r in avro_records(file_io.read_bytes(list_path)))
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            continue
    return out


def _puffins(file_io: FileIO, directory: str, delete_manifest: dict[str, Any]) -> set[str]:
    """The Puffin files a delete manifest points into that lakectl wrote (inside ``directory``)."""
    try:
        entries = avro_records(file_io.read_bytes(delete_manifest["manifest_path"]))
    except (OSError, ValueError, EOFError):
        return set()
    return {p for e in entries if (p := e["data_file"]["file_path"]).startswith(directory.rstrip("/") + "/")}
