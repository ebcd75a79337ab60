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

from core.branch import MAIN_BRANCH, branch_names, branch_path, validate_branch_name
from core.errors import BranchExistsError, NotFoundError, UsageError
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


def _exists(table: Table, name: str) -> bool:
    return table.file_io.exists(branch_path(table.path, name))


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
    if _exists(table, name):
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
    if not _exists(table, name):
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


__all__ = ["BranchDeleteResult", "BranchInfo", "MAIN_BRANCH", "create_branch", "delete_branch", "list_branches"]
