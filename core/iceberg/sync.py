"""Writing a snapshot's Iceberg metadata, after commits, moves and drops."""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

from core.errors import UsageError
from core.fileio import FileIO, join
from core.iceberg.avro_files import (avro_records, data_file_path, delete_manifest_file, manifest_file,
                                     manifest_list)
from core.iceberg.deletion_vectors import DeleteManifest, puffin_file, visible_vectors
from core.iceberg.metadata import (NAME_MAPPING, current_metadata, file_schemas, first_row_id, iceberg_location,
                                   metadata_dir, metadata_json, name_mapping)
from core.iceberg.options import (CODECS, DELETE_AFTER_COMMIT, PREVIOUS_VERSIONS_MAX, VERSION_HINT,
                                  format_version, manifest_compression, refusal, storage)
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
    """The live files Iceberg readers get: every file of an append table; only the top level
    (``num-levels - 1``, what a full compaction writes) of a primary-key table, whose files
    there hold each key once, merged; with deletion vectors (format 3), every level but 0, as
    Paimon's own batch reads: a key's older rows there are deleted by the vectors."""
    if not schema.has_primary_key:
        return list(entries)
    if schema.core_options.deletion_vectors_enabled:
        return [e for e in entries if e.file.level > 0]
    top = schema.core_options.num_levels - 1
    return [e for e in entries if e.file.level == top]


def sync(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Any, entries: list[Any], *,
         dry_run: bool = False) -> IcebergSyncResult:
    """Write the Iceberg metadata of ``snapshot`` (whose live files are ``entries``)."""
    why = refusal(schema)
    if why is not None:
        raise UsageError(f"cannot write Iceberg metadata: {why}")
    visible = visible_entries(schema, entries)
    directory = metadata_dir(table_path, schema.options)
    name = f"v{snapshot.id}.metadata.json"
    newer = _newer_live_version(file_io, table_path, directory, snapshot.id)
    if newer is not None:
        # A later commit's sync landed first (two writers): its metadata stays the current one.
        log.info("Iceberg metadata of snapshot %d not written: snapshot %d's is there already", snapshot.id, newer)
        return IcebergSyncResult(newer, join(directory, f"v{newer}.metadata.json"), 0, 0, 0, dry_run=dry_run,
                                 skipped=True)
    records = sum(e.file.row_count for e in visible)
    if dry_run:
        return IcebergSyncResult(snapshot.id, join(directory, name), len(visible), records, 0, dry_run=True)
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


def sync_after_commit(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Any,
                      entries_of: Any) -> None:
    """After a published commit: write the Iceberg metadata, or warn. Never raises: the Paimon
    commit has landed whatever happens here (``entries_of(snapshot)`` reads its live files)."""
    try:
        sync(file_io, table_path, schema, snapshot, entries_of(snapshot))
    except Exception as e:  # noqa: BLE001 - a derived artifact: any failure is a warning
        log.warning("snapshot %d committed, but its Iceberg metadata was not written (%s); the next commit "
                    "or `lakectl iceberg-sync` writes it", snapshot.id, e)


def after_move(file_io: FileIO, old_path: str, new_path: str, schema: TableSchema, snapshot: Any,
               entries_of: Any) -> None:
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
            sync(file_io, new_path, schema, snapshot, entries_of(snapshot))
    except Exception as e:  # noqa: BLE001 - a derived artifact: any failure is a warning
        log.warning("the table moved, but its Iceberg metadata was not rewritten (%s); `lakectl iceberg-sync` "
                    "writes it", e)


def after_drop(file_io: FileIO, table_path: str, options: Mapping[str, str]) -> None:
    """After a drop: a hadoop-catalog directory outside the table goes too (the table's own
    ``metadata/`` went with its directory)."""
    if storage(options) == "hadoop-catalog":
        file_io.delete_tree(iceberg_location(table_path, options))



# ---- old versions ---------------------------------------------------------------------------
def _delete_old_versions(file_io: FileIO, directory: str, options: Mapping[str, str], current: int) -> int:
    """Delete metadata files older than the newest ``previous-versions-max`` before ``current``
    (with ``delete-after-commit.enabled``, true by default), and the manifest lists and
    manifests that only they name. Files a newer version names are kept."""
    keep_all = options.get(DELETE_AFTER_COMMIT, "true").strip().lower() != "true"
    keep = 10**9 if keep_all else max(0, int(options.get(PREVIOUS_VERSIONS_MAX, "0").strip() or 0))
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
