"""clone: copy one snapshot of a table into a new, independent table.

The copy gets its own copies of the files the snapshot reads (data files with their side
files, index files: deletion vectors and hash indexes) and the schema versions those files
were written with (every schema id up to the snapshot's), and a fresh history of one APPEND
snapshot, ``snapshot-1``, committed through ``core.commit`` with new manifests that list the
copied files. No tags, consumers or changelog files are copied. The source may be a branch's
view: its snapshot becomes the copy's main. Nothing is shared with the
source, so writing, compacting or expiring either table never touches the other's files.

Order, so that an interrupted clone never leaves something that reads as a complete table:

1. copy data files and index files;
2. commit ``snapshot-1`` (manifests, index manifest, snapshot, ``LATEST``) and ``EARLIEST``;
3. write the schema files last, the snapshot's own schema first: a directory without
   ``schema/`` is not a table (``Table.open`` says it does not exist).

On a local disk all of this happens in a hidden sibling directory ``.<name>.clone-<hex>``
which is renamed to the target at the end, so the target is either absent or complete; a
killed clone leaves only that hidden directory (remove it with ``rm -r``). On an object store
there is no rename: a killed clone leaves a partial target, which is not a table before step 3
and fails ``check`` (a missing schema file) during it; remove the target prefix and re-run.
A clone that fails with an error (rather than being killed) removes what it wrote.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import uuid
from dataclasses import dataclass

from core.commit import CommitMessage, FileStoreCommit, IndexChanges
from core.copying import Progress, copy_files, copy_in_order, remove_quietly
from core.busy import running_closer
from core.errors import (CommitConflictError, CorruptMetadataError, NotFoundError, TableExistsError, TableGoneError,
                         UsageError)
from core.fileio import FileIO, join
from core.index_manifest import IndexManifestEntry, index_dir, live_index_entries
from core.manifest import ManifestEntry, live_entries
from core.schema import TableSchema
from core.rewrite import wait_for_rollback
from core.snapshot import APPEND, Snapshot, same_snapshot
from core.table_handle import TableHandle
from core.travel import choose_snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CloneResult:
    source: str
    branch: str  # the source's branch the snapshot came from
    target: str
    snapshot_id: int  # the source's snapshot that was copied
    files_copied: int  # data, side and index files
    bytes_copied: int
    schemas_copied: tuple[int, ...]  # the schema ids, as branch fast-forward lists them
    dry_run: bool


@dataclass(frozen=True, slots=True)
class _CopyPlan:
    """Every file to copy (source path, path relative to the table directory, size)."""

    files: tuple[tuple[str, str, int], ...]
    entries: tuple[ManifestEntry, ...]
    index_entries: tuple[IndexManifestEntry, ...]
    schema_ids: tuple[int, ...]


def clone(source: TableHandle, target: TableHandle, *, snapshot_id: int | None = None, tag: str | None = None,
          timestamp: str | None = None, dry_run: bool = False, progress: Progress | None = None) -> CloneResult:
    """Clone ``source`` as of the chosen snapshot (default: the latest) into ``target``.

    Raises:
        UsageError: more than one of snapshot_id, tag, timestamp.
        NotFoundError: the snapshot or tag does not exist, or the source has no snapshot.
        UsageError: the target lies inside the source's directory or the source inside the target's.
        TableExistsError: the target is a table, or a directory that is not empty.
    """
    target.location.refuse_on_server("clone")  # before anything is written
    _refuse_nesting(source, target)
    if source.is_main:  # main mid-way through a fast-forward: a copy would hold neither side
        source.refuse_unfinished_fast_forward(f"clone {source.name}")
    snapshot = choose_snapshot(source, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag) \
        if (snapshot_id, tag, timestamp) != (None, None, None) else _settled_latest(source)
    if snapshot is None:
        raise NotFoundError(f"table {source.name} has no snapshot to clone")
    _refuse_existing(target)
    if target.location.catalog is not None and target.location.catalog.is_registered(target.location):
        raise TableExistsError(f"{target.name} is already registered in the catalog; nothing was cloned")
    try:
        plan = _plan(source, snapshot)
    except (FileNotFoundError, CorruptMetadataError, NotFoundError) as e:
        if _going(source):
            raise TableGoneError(f"table {source.name} is being renamed or dropped; nothing was cloned") from e
        raise
    total_bytes = sum(size for _, _, size in plan.files)
    result = CloneResult(source.name, source.branch, target.name, snapshot.id, len(plan.files), total_bytes,
                         tuple(sorted(plan.schema_ids)), dry_run)
    if dry_run:
        return result

    staging = _staging_dir(target)
    try:
        _build(source, target.file_io, staging or target.path, snapshot, plan, progress)
        if staging:
            target.file_io.rename_dir(staging, target.path)
    except Exception as e:
        # An error (not a kill) removes what this clone wrote: the staging directory, or on an
        # object store the target itself, which was empty when the clone began.
        remove_quietly(target.file_io, staging or target.path, "the unfinished clone")
        if isinstance(e, (FileNotFoundError, CorruptMetadataError, NotFoundError)) and _going(source):
            # The source was dropped or renamed while we copied it: a lost race, not damage.
            raise TableGoneError(f"table {source.name} was renamed or dropped while it was cloned; nothing was "
                                 "cloned") from None
        raise
    if target.location.catalog is not None:
        # Files first, then the registry (as create): a kill in between leaves a whole table
        # the catalog does not register, which every command on the name reports.
        target.location.catalog.register_table(target.location)
    return result


def _going(source: TableHandle) -> bool:
    """Was the source dropped or renamed, or is a drop or rename of it under way (on an object
    store it deletes object by object)? Then a file missing under us is a lost race, not damage."""
    return not source.schemas.list_ids() or running_closer(source.file_io, source.path) is not None


def _build(source: TableHandle, file_io: FileIO, build_at: str, snapshot: Snapshot, plan: _CopyPlan,
           progress: Progress | None) -> None:
    copy_files(source.file_io, file_io, [(src, join(build_at, relative), size) for src, relative, size in plan.files],
               progress=progress)
    _commit_copy(file_io, build_at, source.schemas.schema(snapshot.schema_id), snapshot, plan)
    # Schemas last, the snapshot's own first: the directory becomes a table with its right
    # latest schema, and an interruption before the older ones fails loudly on their files.
    copy_in_order(source.file_io, file_io, [(source.schemas.readable_path(sid), join(build_at, "schema", f"schema-{sid}"), 0)
                                            for sid in sorted(plan.schema_ids, reverse=True)])


def _settled_latest(source: TableHandle) -> Snapshot | None:
    """The latest snapshot, as no rollback is removing it. A rollback removes snapshots from
    the top, so while one runs the latest is a snapshot it is about to remove, which a copy must
    not take: wait for it (the rewriters' wait), else exit 4 naming it. The latest is read
    before the marker is looked for and read again after: a rollback that both started and
    ended in between removed that snapshot, so it reads as gone or another snapshot."""
    while True:
        snapshot = source.latest_snapshot()
        wait_for_rollback(source.snapshots, source.tags, f"clone {source.name}", source.name)
        if snapshot is None or _unchanged(source, snapshot):
            return snapshot


def _unchanged(source: TableHandle, snapshot: Snapshot) -> bool:
    try:
        return same_snapshot(source.snapshots.snapshot(snapshot.id), snapshot)
    except (NotFoundError, CorruptMetadataError):
        return False


def _refuse_nesting(source: TableHandle, target: TableHandle) -> None:
    """A copy inside its source would be copied into itself (and listed by the source's orphan
    cleanup as garbage); a source inside the target's directory would make the target non-empty
    and be removed with it. Both are mistakes in the command line, refused before anything is written."""
    if not source.file_io.same_store(target.file_io):
        return
    src, dst = _comparable(source.file_io, source.path), _comparable(target.file_io, target.path)
    if src is None or dst is None or src == dst:  # the source itself: _refuse_existing says it exists
        return
    if dst.startswith(src + "/"):
        raise UsageError(f"clone target {target.path} lies inside the source table's directory {source.path}")
    if src.startswith(dst + "/"):
        raise UsageError(f"clone target {target.path} contains the source table's directory {source.path}")


def _comparable(file_io: FileIO, path: str) -> str | None:
    """``path`` in a form two tables' paths can be compared by prefix: a resolved absolute local
    path (symlinks followed), or ``s3://bucket/key`` (``s3a://`` is the same store); None for a
    scheme whose paths lakectl cannot compare."""
    if file_io.local:
        return os.path.realpath(file_io.normalize(path)).rstrip("/") or "/"
    scheme, sep, rest = path.partition("://")
    if not sep:
        return None
    scheme = "s3" if scheme == "s3a" else scheme
    return f"{scheme}://{rest.strip('/')}"


def _refuse_existing(target: TableHandle) -> None:
    if target.exists():
        raise TableExistsError(f"table {target.name} already exists; clone makes a new table")
    if target.file_io.exists(target.path) and target.file_io.list_names(target.path):
        raise TableExistsError(f"{target.path} exists and is not empty (a clone left half way? remove it with "
                               "rm -r and re-run)")


def _plan(source: TableHandle, snapshot: Snapshot) -> _CopyPlan:
    """The snapshot's live files and index files, where they are and where they go."""
    schema = source.schemas.schema(snapshot.schema_id)
    entries = live_entries(source.manifests(), snapshot)
    index_entries = live_index_entries(source.file_io, source.path, snapshot.index_manifest)
    files: list[tuple[str, str, int]] = []
    for e in entries:
        bucket_dir = schema.bucket_dir("", e.partition, e.bucket).lstrip("/")
        src_dir = schema.bucket_dir(source.path, e.partition, e.bucket)
        src = e.file.external_path or join(src_dir, e.file.file_name)
        files.append((src, join(bucket_dir, e.file.file_name), e.file.file_size))
        side_dir = src.rsplit("/", 1)[0]  # side files (a file index) sit next to their data file
        for extra in e.file.extra_files:
            files.append((join(side_dir, extra), join(bucket_dir, extra), source.file_io.size(join(side_dir, extra))))
    for ie in index_entries:
        name = ie.index_file.file_name
        files.append((join(index_dir(source.path), name), join("index", name), ie.index_file.file_size))
    # Every schema up to the snapshot's: data files may name any older one, and a reader maps
    # columns through them by field id. Later schemas are the source's future, not the copy's.
    schema_ids = tuple(sid for sid in source.schemas.readable_ids() if sid <= schema.id)
    return _CopyPlan(tuple(files), tuple(entries), tuple(index_entries), schema_ids)


def _staging_dir(target: TableHandle) -> str | None:
    """A hidden sibling of the target to build the copy in, on a local disk (renamed into place
    at the end); None on object stores, which cannot rename a directory."""
    if not target.file_io.local:
        return None
    parent, name = os.path.split(target.path.rstrip("/"))
    return join(parent, f".{name}.clone-{uuid.uuid4().hex[:12]}")


def _commit_copy(file_io: FileIO, table_path: str, schema: TableSchema, snapshot: Snapshot, plan: _CopyPlan) -> None:
    """Commit the copied files as ``snapshot-1`` of the new table (then ``EARLIEST``)."""
    by_bucket: dict[tuple[bytes, int, int], list] = {}
    for e in plan.entries:
        # The copy lives in its bucket directory, wherever the source kept it.
        by_bucket.setdefault((e.partition, e.bucket, e.total_buckets), []).append(
            dataclasses.replace(e.file, external_path=None))
    messages = [CommitMessage(partition, bucket, total_buckets, new_files=tuple(files))
                for (partition, bucket, total_buckets), files in by_bucket.items()]
    committer = FileStoreCommit(file_io, table_path, schema, table_must_exist=False)  # schema files come last
    committed = committer.commit(messages, kind=APPEND, watermark=snapshot.watermark,
                                 index=IndexChanges(entries=plan.index_entries))
    if committed is None:  # an empty snapshot: nothing to commit, but the copy still needs one
        committed = _empty_snapshot(committer, schema, snapshot)
    committer.snapshots.write_earliest_hint(committed.id)


def _empty_snapshot(committer: FileStoreCommit, schema: TableSchema, snapshot: Snapshot) -> Snapshot:
    """``snapshot-1`` with empty manifest lists, for a source snapshot with no live files."""
    base, base_size = committer.manifests.write_manifest_list([])
    delta, delta_size = committer.manifests.write_manifest_list([])
    empty = Snapshot(id=1, schema_id=schema.id, base_manifest_list=base, base_manifest_list_size=base_size,
                     delta_manifest_list=delta, delta_manifest_list_size=delta_size,
                     commit_user=committer.commit_user, commit_identifier=committer.identifier,
                     commit_kind=APPEND, time_millis=int(time.time() * 1000), watermark=snapshot.watermark)
    committer.snapshots.try_publish(empty)
    committer.snapshots.write_latest_hint(1)
    return empty
