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
from core.iceberg.avro_files import (avro_records, data_file_path, delete_manifest_file, manifest_file,
                                     manifest_list)
from core.iceberg.deletion_vectors import DeleteManifest, puffin_file, visible_vectors
from core.iceberg.history import (WRITER_KEY, ManifestWriter, change_of, first_step, next_step, snapshot_json,
                                  visible)
from core.iceberg.metadata import (NAME_MAPPING, current_metadata, file_schemas, first_row_id, history_metadata_json,
                                   iceberg_location, metadata_dir, metadata_json, name_mapping)
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
        self.file_io, self.schema = file_io, schema
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
    if format_version(schema.options) >= 3:
        # Format 3 (deletion vectors, row lineage) is still written for the latest snapshot
        # alone, with no history (docs/iceberg.md, Not done).
        return _sync_latest_only(file_io, table_path, schema, snapshot, paimon.live(snapshot))
    previous_version = _hint(file_io, directory)
    previous = current_metadata(file_io, directory)
    replaced = _read_json(file_io, join(directory, name))  # this snapshot's earlier metadata, if any
    writer = ManifestWriter(file_io, directory, table_path, schema, CODECS[manifest_compression(schema.options)],
                            paimon.schema_of)
    earliest = min(paimon.snapshots.earliest_id() or snapshot.id, snapshot.id)
    base = None if full else _extendable(previous, paimon, table_path, snapshot, earliest)
    chain = _history(writer, paimon, snapshot, earliest, base)
    metadata = _metadata(paimon, table_path, directory, chain, previous, previous_version)
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


def _metadata(paimon: _Paimon, table_path: str, directory: str, chain: list[dict[str, Any]],
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
                                                   schema.options))
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
    if previous is None or previous.get("format-version") != 2 or \
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
    one step per Paimon snapshot after its last (each from that snapshot's delta); without a
    base, the earliest snapshot's visible files in one manifest first."""
    if base is None:
        first = snapshot if earliest == snapshot.id else paimon.snapshots.snapshot(earliest)
        step = first_step(writer, first.id, paimon.live(first))
        base = [snapshot_json(first, writer.manifest_list(first.id, step.manifests), step, None)]
        manifests = step.manifests
    else:
        manifests = writer.read(base[-1]["manifest-list"])
    chain = list(base)
    for sid in range(chain[-1]["snapshot-id"] + 1, snapshot.id + 1):
        paimon_snapshot = snapshot if sid == snapshot.id else paimon.snapshots.snapshot(sid)
        change = change_of(writer.table_path, writer.schema, paimon.delta(paimon_snapshot))
        step = next_step(writer, manifests, sid, paimon_snapshot.commit_kind, change)
        chain.append(snapshot_json(paimon_snapshot, writer.manifest_list(sid, step.manifests), step, chain[-1]))
        manifests = step.manifests
    return chain


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


def _sync_latest_only(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Any,
                      entries: list[Any]) -> IcebergSyncResult:
    """Format 3: the metadata of ``snapshot`` alone, one manifest of its visible files and, with
    deletion vectors, a Puffin file of their vectors and a delete manifest; nothing reused."""
    visible = visible_entries(schema, entries)
    directory = metadata_dir(table_path, schema.options)
    name = f"v{snapshot.id}.metadata.json"
    records = sum(e.file.row_count for e in visible)
    codec = CODECS[manifest_compression(schema.options)]
    version = format_version(schema.options)
    token = uuid.uuid4().hex
    manifest_path = join(directory, f"{token}-m0.avro")
    list_path = join(directory, f"snap-{snapshot.id}-1-{token}.avro")
    schemas = file_schemas(file_io, table_path, schema, visible)  # each file's stats are in its schema's columns
    manifest_bytes = manifest_file(table_path, schema, snapshot.id, visible, codec, schemas,
                                   format_version=version)
    file_io.write_bytes(manifest_path, manifest_bytes)
    deletes = _write_deletes(file_io, table_path, schema, snapshot, visible, directory, token, codec) \
        if version >= 3 and schema.core_options.deletion_vectors_enabled else None
    previous = current_metadata(file_io, directory)
    first_row = first_row_id(previous)
    file_io.write_bytes(list_path, manifest_list(manifest_path, len(manifest_bytes), snapshot.id, visible,
                                                  codec, schema, format_version=version, first_row_id=first_row,
                                                  deletes=deletes))
    written = {manifest_path, list_path, *((deletes.path, deletes.puffin_path) if deletes else ())}
    replaced = _files_named(file_io, directory, snapshot.id)  # an earlier sync of this snapshot's
    metadata = metadata_json(table_path, schema, snapshot, list_path, previous, format_version=version,
                             row_ids=(first_row, records))
    metadata["properties"][NAME_MAPPING] = json.dumps(name_mapping(file_io, table_path, schema, visible,
                                                                        schemas))
    # A metadata file is written once per snapshot id; iceberg-sync of the same snapshot
    # replaces it whole (as a hint is replaced: readers see the old or the new file).
    file_io.overwrite_hint(join(directory, name), json.dumps(metadata, indent=2))
    file_io.overwrite_hint(join(directory, VERSION_HINT), str(snapshot.id))
    for path in sorted(replaced - written):
        file_io.delete_quietly(path)
    deleted = _delete_old_versions(file_io, directory, schema.options, snapshot.id)
    return IcebergSyncResult(snapshot.id, join(directory, name), len(visible), records, deleted)


def _write_deletes(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Any, visible: list[Any],
                   directory: str, token: str, codec: str) -> DeleteManifest | None:
    """Format 3: the visible files' deletion vectors as one Puffin file and a delete manifest
    (core/iceberg/deletion_vectors.py), or None when no visible file has a vector."""
    vectors = visible_vectors(file_io, table_path, snapshot, visible,
                              lambda e: data_file_path(table_path, schema, e))
    if not vectors:
        return None
    puffin_path = join(directory, f"{token}-dv.puffin")
    puffin, placed = puffin_file(vectors)
    file_io.write_bytes(puffin_path, puffin)
    manifest_path = join(directory, f"{token}-m1.avro")
    manifest = delete_manifest_file(schema, snapshot.id, puffin_path, len(puffin), placed, codec)
    file_io.write_bytes(manifest_path, manifest)
    return DeleteManifest(manifest_path, len(manifest), puffin_path, placed)


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
        named = set().union(*(_manifests(file_io, p) for p in kept_lists))
        for path in sorted(set().union(*(_manifests(file_io, p) for p in dropped)) - named):
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


def _manifests(file_io: FileIO, list_path: str) -> set[str]:
    """The manifests a manifest list names (none when it is unreadable or gone)."""
    try:
        return {r["manifest_path"] for r in avro_records(file_io.read_bytes(list_path))}
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return set()


# ---- old versions of the format-3 path ---------------------------------------------------------
def _delete_old_versions(file_io: FileIO, directory: str, options: Mapping[str, str], current: int) -> int:
    """Delete metadata files older than the newest ``previous-versions-max`` before ``current``
    (with ``delete-after-commit.enabled``, true by default), and the manifest lists and
    manifests that only they name. Files a newer version names are kept."""
    kept_count = previous_versions_kept(options)
    keep = 10**9 if kept_count is None else kept_count
    versions = sorted(int(m.group(1)) for n in file_io.list_names(directory)
                      if (m := _METADATA_NAME.fullmatch(n)))
    older = [v for v in versions if v < current]
    # Versions past the current one describe snapshots a rollback removed (a newer live one
    # would have stopped this sync before it wrote anything).
    doomed = older[:max(0, len(older) - keep)] + [v for v in versions if v > current]
    kept = [v for v in versions if v not in doomed]
    if not doomed:
        return 0
    named_by_kept = set().union(*(_files_named(file_io, directory, v) for v in kept))
    for v in doomed:
        for path in sorted(_files_named(file_io, directory, v) - named_by_kept):
            file_io.delete_quietly(path)
        file_io.delete_quietly(join(directory, f"v{v}.metadata.json"))
    return len(doomed)


def _files_named(file_io: FileIO, directory: str, version: int) -> set[str]:
    """The manifest lists, manifests and Puffin files of deletion vectors a metadata file names
    (none when unreadable)."""
    text = file_io.read_text_if_exists(join(directory, f"v{version}.metadata.json"))
    try:
        snapshots = json.loads(text).get("snapshots", []) if text else []
    except ValueError:
        return set()
    names: set[str] = set()
    for snap in snapshots:
        list_path = snap.get("manifest-list")
        if not list_path:
            continue
        names.add(list_path)
        try:
            manifests = avro_records(file_io.read_bytes(list_path))
            names.update(r["manifest_path"] for r in manifests)
            for r in manifests:
                if r.get("content") == 1:  # a delete manifest: the Puffin files it lists
                    names.update(_delete_files_in(file_io, directory, r["manifest_path"]))
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            continue
    return names


def _delete_files_in(file_io: FileIO, directory: str, manifest_path: str) -> set[str]:
    """The delete files a delete manifest lists that lakectl wrote (inside ``directory``)."""
    entries = avro_records(file_io.read_bytes(manifest_path))
    return {p for e in entries if (p := e["data_file"]["file_path"]).startswith(directory.rstrip("/") + "/")}
