"""Branches of a table: create, list, delete (metadata only).

A branch starts as a copy of one snapshot of main (Paimon's ``BranchManager.createBranch``):
the snapshot file, the tag file when created from a tag, and the schema files up to the
snapshot's schema id, all under ``<table>/branch/branch-NAME/``. Its data and manifest files
are main's, shared; expire and remove-orphan-files keep every file a branch references
(``core.branch.pinned_snapshots``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from core.branch import MAIN_BRANCH, branch_exists, branch_names, branch_path, validate_branch_name
from core.errors import BranchExistsError, CommitConflictError, NotFoundError, UsageError
from core.ops.check import require_whole
from core.schema import SchemaManager
from core.snapshot import Snapshot, SnapshotManager
from core.table import Table
from core.tag import TagManager


@dataclass(frozen=True, slots=True)
class BranchInfo:
    name: str
    earliest_snapshot_id: int | None
    latest_snapshot_id: int | None
    schema_id: int | None  # the branch's latest schema
    tags: int
    record_count: int  # rows live at the branch's latest snapshot


@dataclass(frozen=True, slots=True)
class BranchDeleteResult:
    table: str
    branch: str
    files: int  # the branch's own metadata files (snapshots, schemas, tags, hints)
    dry_run: bool


def _info(table: Table, name: str) -> BranchInfo:
    path = branch_path(table.path, name)
    snapshots = SnapshotManager(table.file_io, path)
    latest = snapshots.latest()
    schemas = SchemaManager(table.file_io, path).list_ids()
    return BranchInfo(name, snapshots.earliest_id(), latest.id if latest else None,
                      schemas[-1] if schemas else None, len(TagManager(table.file_io, path).names()),
                      (latest.total_record_count or 0) if latest else 0)




def create_branch(table: Table, name: str, *, tag: str | None = None, snapshot_id: int | None = None) -> BranchInfo:
    """Create branch ``name`` of ``table`` (main) at a tag, a snapshot, or the latest snapshot.

    Raises:
        UsageError: a bad name, both ``tag`` and ``snapshot_id``, or a table opened on a branch.
        BranchExistsError: the name is taken.
        NotFoundError: the tag or snapshot does not exist (or the table has no snapshot).
        CorruptMetadataError: the snapshot's manifests or data files are missing.
    """
    if not table.is_main:
        raise UsageError("branches are created from main; open the table without a branch")
    validate_branch_name(name)
    if tag is not None and snapshot_id is not None:
        raise UsageError("give --tag or --snapshot-id, not both")
    if branch_exists(table, name):
        if SchemaManager(table.file_io, branch_path(table.path, name)).list_ids():
            raise BranchExistsError(f"branch {name} of table {table.name} already exists")
        _remove_files(table, name)  # a create that was killed before its schemas: never a branch
    snapshot = _source_snapshot(table, tag, snapshot_id)
    require_whole(table, snapshot, f"cannot create branch {name}")

    fio, path = table.file_io, branch_path(table.path, name)
    # The branch counts as existing once its schema files are there (Table.on_branch), so they
    # are written last: a kill before leaves a directory `branch delete` removes, not a branch
    # without a schema. Every file is created only if absent: two racing creators cannot mix.
    if tag is not None:
        fio.try_create(TagManager(fio, path).path(tag), fio.read_bytes(table.tags.path(tag)))
    branch_snapshots = SnapshotManager(fio, path)
    if table.snapshots.exists(snapshot.id):
        fio.try_create(branch_snapshots.path(snapshot.id), fio.read_bytes(table.snapshots.path(snapshot.id)))
    else:  # a tag whose snapshot expired on main: the tag holds the whole snapshot
        branch_snapshots.try_publish(snapshot)
    branch_schemas = SchemaManager(fio, path)
    for sid in table.schemas.list_ids():
        if sid <= snapshot.schema_id:  # as Paimon: every schema up to the snapshot's
            fio.try_create(branch_schemas.path(sid), fio.read_bytes(table.schemas.path(sid)))
    return _info(table, name)


def _source_snapshot(table: Table, tag: str | None, snapshot_id: int | None) -> Snapshot:
    if tag is not None:
        return table.tags.snapshot(tag)
    if snapshot_id is not None:
        return table.snapshots.snapshot(snapshot_id)
    latest = table.latest_snapshot()
    if latest is None:
        raise NotFoundError(f"table {table.name} has no snapshot to branch from")
    return latest


def list_branches(table: Table) -> list[BranchInfo]:
    """The table's branches (main not included), by name."""
    return [_info(table, name) for name in branch_names(table)]


def delete_branch(table: Table, name: str, *, dry_run: bool = False) -> BranchDeleteResult:
    """Remove ``branch/branch-NAME``. Its snapshots' data files stay: main or other branches may
    share them, and those only the branch used become orphans for remove-orphan-files.

    Raises:
        UsageError: ``main`` or a bad name.
        NotFoundError: no such branch.
    """
    validate_branch_name(name)
    if not branch_exists(table, name):
        raise NotFoundError(f"branch {name} of table {table.name} does not exist")
    files = len(table.file_io.walk(branch_path(table.path, name)))
    if not dry_run:
        _remove_files(table, name)
    return BranchDeleteResult(table.name, name, files, dry_run)


def _remove_files(table: Table, name: str) -> None:
    """Delete ``branch/branch-NAME``. Schemas first: from then on the branch no longer opens,
    while its remaining snapshots still pin their files for expire and remove-orphan-files
    until they go too; a kill part-way leaves a directory that a rerun removes."""
    path = branch_path(table.path, name)
    files = table.file_io.walk(path)
    for status in sorted(files, key=lambda s: (posixpath.basename(posixpath.dirname(s.path)) != "schema", s.path)):
        table.file_io.delete(status.path)
    # Emptied directories too, also those a killed run already emptied (no file names them).
    subdirs = {s.path for s in table.file_io.list_dir(path) if s.is_dir}
    for d in sorted({posixpath.dirname(s.path) for s in files} | subdirs | {path}, key=lambda p: -p.count("/")):
        table.file_io.remove_empty_dir(d)


@dataclass(frozen=True, slots=True)
class FastForwardResult:
    table: str
    branch: str
    start_snapshot_id: int  # the branch's earliest snapshot: where it and main part
    latest_before: int  # main's
    latest_after: int
    snapshots_removed: tuple[int, ...]  # main's after the start, newest first
    snapshots_copied: tuple[int, ...]  # the branch's after the start, oldest first
    schemas_copied: tuple[int, ...]
    tags_removed: tuple[str, ...]  # main's on the start or later
    tags_copied: tuple[str, ...]
    dry_run: bool


def fast_forward(table: Table, name: str, *, dry_run: bool = False) -> FastForwardResult:
    """Make main equal to branch ``name`` (Paimon's ``fastForward``): main's snapshots after the
    branch's earliest, its schemas after that snapshot's schema and its tags from that
    snapshot on are replaced by the branch's. The branch stays.

    Order, so that a kill leaves main readable at a real snapshot and a rerun finishes: main's
    later snapshots go newest first (rollback's order), then its later tags and schemas
    (nothing main keeps references them), then the branch's schemas, snapshots (oldest first)
    and tags are copied in, each created only if absent. Data files of the removed snapshots
    are left to remove-orphan-files.

    Raises:
        UsageError: the table is opened on a branch, or the branch has no snapshot.
        NotFoundError: no such branch.
        CommitConflictError: main no longer holds the branch's earliest snapshot as the branch
            has it (expired, or rolled back and committed again): nothing to fast-forward from.
    """
    if not table.is_main:
        raise UsageError("fast-forward moves main; open the table without a branch")
    branch = table.on_branch(name)
    ids = branch.snapshots.list_ids()
    if not ids:
        raise UsageError(f"branch {name} has no snapshot to fast-forward to")
    start = branch.snapshots.snapshot(ids[0])
    main_ids = table.snapshots.list_ids()
    if start.id not in main_ids or table.snapshots.snapshot(start.id).to_dict() != start.to_dict():
        raise CommitConflictError(f"main no longer holds snapshot {start.id}, where branch {name} starts "
                                  "(expired, or rolled back and committed again); nothing was changed")
    removed = tuple(n for n in reversed(main_ids) if n > start.id)
    main_tags = [t for t in table.tags.tags() if t.snapshot.id >= start.id]
    branch_tags = branch.tags.names()
    main_schemas = [i for i in table.schemas.list_ids() if i > start.schema_id]
    branch_schemas = [i for i in branch.schemas.list_ids() if i > start.schema_id]
    result = FastForwardResult(table.name, name, start.id, main_ids[-1], ids[-1], removed, tuple(ids[1:]),
                               tuple(branch_schemas), tuple(t.name for t in main_tags), tuple(branch_tags), dry_run)
    if dry_run:
        return result
    fio = table.file_io
    for n in removed:
        fio.delete(table.snapshots.path(n))
    table.snapshots.write_latest_hint(start.id, rewind=True)
    for tag in main_tags:
        fio.delete(table.tags.path(tag.name))
    for sid in reversed(main_schemas):
        fio.delete(table.schemas.path(sid))
    for sid in branch_schemas:
        fio.try_create(table.schemas.path(sid), fio.read_bytes(branch.schemas.path(sid)))
    for n in ids[1:]:
        fio.try_create(table.snapshots.path(n), fio.read_bytes(branch.snapshots.path(n)))
    table.snapshots.write_latest_hint(ids[-1])
    for tag_name in branch_tags:
        data = fio.read_bytes(branch.tags.path(tag_name))
        if not fio.try_create(table.tags.path(tag_name), data) and fio.read_bytes(table.tags.path(tag_name)) != data:
            fio.delete(table.tags.path(tag_name))  # main's tag of that name, on an older snapshot
            fio.try_create(table.tags.path(tag_name), data)
    return result


__all__ = ["BranchDeleteResult", "BranchInfo", "FastForwardResult", "MAIN_BRANCH", "create_branch",
           "delete_branch", "fast_forward", "list_branches"]
