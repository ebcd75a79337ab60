"""Branches of a table: create, list, delete (metadata only).

A branch starts as a copy of one snapshot of main (Paimon's ``BranchManager.createBranch``):
the snapshot file, the tag file when created from a tag, and the schema files up to the
snapshot's schema id, all under ``<table>/branch/branch-NAME/``. Its data and manifest files
are main's, shared; expire and remove-orphan-files keep every file a branch references
(``core.branch.pinned_snapshots``).

Crash safety (markers in ``core/branch.py``): create and delete bracket their work with an
``UNFINISHED`` file in the branch's directory, so a kill leaves no branch or a whole one and a
leftover directory that the next create or delete of the name, or ``check --repair``, removes;
fast-forward brackets its work with a ``FAST-FORWARD`` file in main's ``snapshot/`` that
refuses every change to main until the fast-forward is rerun.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

from core.branch import (ABSENT, LEFTOVER, MAIN_BRANCH, UNFINISHED, WHOLE, branch_names, branch_path, branch_state,
                         fast_forward_marker, fast_forward_marker_path, fast_forward_rerun,
                         refuse_unfinished_fast_forward, validate_branch_name)
from core.errors import (BranchExistsError, CommitConflictError, CorruptMetadataError, FastForwardUnfinishedError,
                         NotFoundError, TableGoneError, UsageError)
from core.fileio import join
from core.schema import SchemaManager
from core.snapshot import Snapshot, SnapshotManager
from core.table_handle import TableHandle
from core.tag import TagManager
from core.ops.tags import still_retained
from core.busy import closing, working
from core.rewrite import FAST_FORWARD, acquire, finish_rollback_marker, release


@dataclass(frozen=True, slots=True)
class BranchInfo:
    table: str
    branch: str
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
    leftover: bool = False  # it was what an interrupted create or delete left, not a branch


def _info(table: TableHandle, name: str) -> BranchInfo:
    path = branch_path(table.path, name)
    snapshots = SnapshotManager(table.file_io, path)
    latest = snapshots.latest()
    schemas = SchemaManager(table.file_io, path).list_ids()
    return BranchInfo(table.name, name, snapshots.earliest_id(), latest.id if latest else None,
                      schemas[-1] if schemas else None, len(TagManager(table.file_io, path).names()),
                      (latest.total_record_count or 0) if latest else 0)




def create_branch(table: TableHandle, name: str, *, tag: str | None = None, snapshot_id: int | None = None) -> BranchInfo:
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
    catalog = table.location.catalog
    if catalog is not None and catalog.kind == "rest":  # the server writes the branch: its createBranch
        if snapshot_id is not None:
            table.location.refuse_on_server("branch create --snapshot-id")
        catalog.create_branch(table.location.name, name, from_tag=tag)
        return _info(table, name)
    # main mid-way through a fast-forward is a real snapshot, but not one any command made:
    # a branch made from it would hold rows no order of the commands gives (exit 4 while it runs).
    refuse_unfinished_fast_forward(table.file_io, table.path, table.name, MAIN_BRANCH, f"create branch {name}")
    if tag is not None and snapshot_id is not None:
        raise UsageError("give --tag or --snapshot-id, not both")
    state = branch_state(table, name)
    if state == WHOLE:
        raise BranchExistsError(f"branch {name} of table {table.name} already exists")
    snapshot = _source_snapshot(table, tag, snapshot_id)
    from core.ops.check import require_whole  # here: listing branches reads no manifest

    require_whole(table, snapshot, f"cannot create branch {name}")
    with working(table.file_io, table.path, table.name, f"create branch {name}"):
        if state == LEFTOVER:
            _remove_files(table, name)  # an interrupted create or delete: never a branch

        fio, path = table.file_io, branch_path(table.path, name)
        # UNFINISHED first, deleted last: until it goes the directory is not a branch to any
        # command, so a kill leaves a leftover for the next create, delete or check --repair.
        # Create-if-absent: a second creator racing this one stops here.
        if not fio.try_create(join(path, UNFINISHED), _marker("create")):
            raise CommitConflictError(f"another branch create or delete of {name} on table {table.name} is running; "
                                      "nothing was changed")
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
        if tag is None and not still_retained(table, snapshot):
            # An expire retired the snapshot while we copied it, and may have planned its file
            # deletions before our branch pinned them: no branch (a tag pins its own files).
            _remove_files(table, name)
            raise CommitConflictError(f"snapshot {snapshot.id} was expired while branch {name} was created; the branch "
                                      "was not created (exit 4): branch from a snapshot that expire retains, or a tag")
        fio.delete(join(path, UNFINISHED))  # the branch exists from here on
        return _info(table, name)


def _source_snapshot(table: TableHandle, tag: str | None, snapshot_id: int | None) -> Snapshot:
    if tag is not None:
        return table.tags.snapshot(tag)
    if snapshot_id is not None:
        return table.snapshots.snapshot(snapshot_id)
    latest = table.latest_snapshot()
    if latest is None:
        raise NotFoundError(f"table {table.name} has no snapshot to branch from")
    return latest


def list_branches(table: TableHandle) -> list[BranchInfo]:
    """The table's branches (main not included), by name."""
    return [_info(table, name) for name in branch_names(table)]


def delete_branch(table: TableHandle, name: str, *, dry_run: bool = False) -> BranchDeleteResult:
    """Remove ``branch/branch-NAME``. Its snapshots' data files stay: main or other branches may
    share them, and those only the branch used become orphans for remove-orphan-files.

    Raises:
        UsageError: ``main`` or a bad name.
        NotFoundError: no such branch.
    """
    validate_branch_name(name)
    state = branch_state(table, name)
    if state == ABSENT:
        raise NotFoundError(f"branch {name} of table {table.name} does not exist")
    refuse_unfinished_fast_forward(table.file_io, table.path, table.name, name, f"delete branch {name}")
    files = len(table.file_io.walk(branch_path(table.path, name)))
    catalog = table.location.catalog
    if catalog is not None and catalog.kind == "rest":  # the server removes it: its dropBranch
        if not dry_run:
            catalog.drop_branch(table.location.name, name)
        return BranchDeleteResult(table.name, name, files, dry_run, state == LEFTOVER)
    if not dry_run:
        with working(table.file_io, table.path, table.name, f"delete branch {name}"):
            if state == WHOLE:
                # The branch is gone from here on: a kill leaves a leftover, never half a branch.
                table.file_io.try_create(join(branch_path(table.path, name), UNFINISHED), _marker("delete"))
            _remove_files(table, name)
    return BranchDeleteResult(table.name, name, files, dry_run, state == LEFTOVER)


@dataclass(frozen=True, slots=True)
class BranchRenameResult:
    table: str
    branch: str  # the old name
    new_name: str
    dry_run: bool


def rename_branch(table: TableHandle, old: str, new: str, *, dry_run: bool = False) -> BranchRenameResult:
    """Rename branch ``old`` to ``new`` (Paimon 1.4's ``rename_branch``): its directory
    ``branch/branch-OLD`` becomes ``branch/branch-NEW`` with every snapshot, schema, tag and
    consumer in it; data files are shared with main and stay where they are.

    On local disk the rename is one atomic directory rename, held under the table's closing
    marker (core/busy.py) so that no command of several steps (a rollback, expire or tag change
    on the branch, a branch delete) is half-way through when the branch moves; a commit to the
    old name after it fails whole (exit 4, as after a table rename). Object stores have no
    rename: there the branch's files are copied and the old directory deleted, in an order a
    rerun finishes (core/ops/branch_rename.py).

    Raises:
        UsageError: a bad name, main, the same name twice, or the table's
            ``scan.fallback-branch`` (Java reads missing partitions from it by name).
        NotFoundError: no branch ``old``.
        BranchExistsError: ``new`` is taken (or holds what an interrupted create or delete
            left: ``branch delete NEW`` removes it).
        FastForwardUnfinishedError: a fast-forward from ``old`` waits for its rerun.
        CommitConflictError: a command of several steps stayed at work on the table.
    """
    for name in (old, new):
        validate_branch_name(name)
    if old == new:
        raise UsageError(f"branch {old} already has that name")
    if table.schema.options.get("scan.fallback-branch") == old:
        raise UsageError(f"branch {old} is table {table.name}'s scan.fallback-branch; readers find it by that "
                         "name, so it is not renamed (change the option first)")
    catalog = table.location.catalog
    if catalog is not None and catalog.kind == "rest":  # the server moves it: its renameBranch
        if branch_state(table, old) != WHOLE:
            raise NotFoundError(f"branch {old} of table {table.name} does not exist")
        if not dry_run:
            catalog.rename_branch(table.location.name, old, new)  # type: ignore[attr-defined]
        return BranchRenameResult(table.name, old, new, dry_run)
    if not table.file_io.local:
        from core.ops.branch_rename import rename_branch_by_copy

        refuse_unfinished_fast_forward(table.file_io, table.path, table.name, old, f"rename branch {old}")
        rename_branch_by_copy(table, old, new, dry_run=dry_run)
        return BranchRenameResult(table.name, old, new, dry_run)
    if branch_state(table, old) != WHOLE:
        raise NotFoundError(f"branch {old} of table {table.name} does not exist")
    target = branch_state(table, new)
    if target == WHOLE:
        raise BranchExistsError(f"branch {new} of table {table.name} already exists; nothing was renamed")
    if target == LEFTOVER:
        raise BranchExistsError(f"branch/branch-{new} of table {table.name} holds what an interrupted branch create "
                                f"or delete left; remove it with `lakectl branch delete {table.name} {new}` first")
    refuse_unfinished_fast_forward(table.file_io, table.path, table.name, old, f"rename branch {old}")
    if not dry_run:
        with closing(table.file_io, table.path, table.name, f"rename branch {old} to {new}"):
            if branch_state(table, old) != WHOLE:  # deleted or renamed while we waited
                raise NotFoundError(f"branch {old} of table {table.name} no longer exists; nothing was renamed")
            try:
                table.file_io.rename_dir(branch_path(table.path, old), branch_path(table.path, new))
            except FileNotFoundError:
                raise NotFoundError(f"branch {old} of table {table.name} no longer exists; nothing was renamed") \
                    from None
            except OSError as e:  # the new name was created meanwhile (a non-empty directory)
                raise BranchExistsError(f"branch {new} of table {table.name} appeared while renaming ({e}); "
                                        "nothing was renamed") from e
    return BranchRenameResult(table.name, old, new, dry_run)


def _marker(command: str) -> bytes:
    return json.dumps({"command": f"branch {command}"}).encode("utf-8")


def _remove_files(table: TableHandle, name: str) -> None:
    """Delete ``branch/branch-NAME``: schemas first, the UNFINISHED marker last, so the
    directory is never a whole branch on the way (and without a marker, no schema makes it
    none); its snapshots pin their files for expire and remove-orphan-files until they go.
    A kill part-way leaves a leftover that the next run removes."""
    path = branch_path(table.path, name)
    files = table.file_io.walk(path)
    marker = f"/{posixpath.basename(path)}/{UNFINISHED}"
    order = (lambda s: (s.path.endswith(marker), posixpath.basename(posixpath.dirname(s.path)) != "schema", s.path))
    for status in sorted(files, key=order):
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


def fast_forward(table: TableHandle, name: str, *, dry_run: bool = False) -> FastForwardResult:
    """Make main equal to branch ``name`` (Paimon's ``fastForward``): main's snapshots after the
    branch's earliest, its schemas after that snapshot's schema and its tags from that
    snapshot on are replaced by the branch's. The branch stays.

    A ``FAST-FORWARD`` marker in main's ``snapshot/`` is created first and deleted last: while
    it is there every command that would change main (or this branch) is refused with this
    fast-forward to rerun, so nothing lands in main that the rerun would then discard. Between
    the two, main's later snapshots go newest first (rollback's order), then its later tags and
    schemas (nothing main keeps references them), then the branch's schemas, snapshots (oldest
    first) and tags are copied in, each created only if absent: a kill leaves main readable at
    a real snapshot, and the rerun, finding its own marker, redoes the same steps. Data files
    of the removed snapshots are left to remove-orphan-files.

    Raises:
        UsageError: the table is opened on a branch, or the branch has no snapshot.
        NotFoundError: no such branch.
        FastForwardUnfinishedError: a fast-forward to another branch is unfinished.
        CommitConflictError: main no longer holds the branch's earliest snapshot as the branch
            has it (expired, or rolled back and committed again): nothing to fast-forward from.
    """
    if not table.is_main:
        raise UsageError("fast-forward moves main; open the table without a branch")
    fio = table.file_io
    marker = fast_forward_marker(fio, table.path)
    if marker is not None and marker["branch"] != name:
        raise FastForwardUnfinishedError(
            f"cannot fast-forward to branch {name}: a fast-forward of {table.name} to branch {marker['branch']} was "
            f"interrupted; rerun `{fast_forward_rerun(table.name, marker['branch'])}` first; nothing was changed")
    branch = table.on_branch(name)
    try:
        result = _plan_fast_forward(table, branch, dry_run, marker["latestBefore"] if marker else None)
    except CommitConflictError:
        if marker is None or dry_run or not _untouched(table, marker):
            raise
        # An interrupted fast-forward whose start was expired before it changed anything (an
        # older lakectl let expire run next to it): nothing to finish, so the marker goes.
        fio.delete(fast_forward_marker_path(table.path))
        raise CommitConflictError(f"branch {name} starts at snapshot {marker['startSnapshotId']}, which main no "
                                  "longer holds; the interrupted fast-forward had changed nothing and its marker "
                                  "was removed, so main takes writes again; nothing was fast-forwarded") from None
    if dry_run:
        return result
    catalog = table.location.catalog
    if catalog is not None and catalog.kind == "rest":  # the server moves main: its forwardBranch
        catalog.fast_forward(table.location.name, name)
        return result
    # main's chain is rewritten: under its rewrite marker too, so that no expire or rollback of
    # main runs meanwhile (an expire could retire the branch's start under us).
    with working(fio, table.path, table.name, f"fast-forward to branch {name}"), \
            table.location.rewriting_chain(f"fast-forward to branch {name}"):
        rewrite = acquire(fio, table.snapshots.dir, FAST_FORWARD, what=f"fast-forward to branch {name}",
                          table=table.name, on_abandoned=lambda m: finish_rollback_marker(table.snapshots, table.tags, m))
        try:
            if marker is None:
                body = json.dumps({"branch": name, "startSnapshotId": result.start_snapshot_id,
                                   "latestBefore": result.latest_before}).encode("utf-8")
                if not fio.try_create(fast_forward_marker_path(table.path), body):
                    raise CommitConflictError(f"another fast-forward of {table.name} started meanwhile; nothing was changed")
                try:
                    # Planned again behind the marker: a commit that landed before it is replaced too.
                    result = _plan_fast_forward(table, branch, False, result.latest_before)
                except BaseException:
                    fio.delete(fast_forward_marker_path(table.path))  # nothing was changed: no marker left
                    raise
            try:
                _carry_out_fast_forward(table, branch, result)
            except (CorruptMetadataError, FileNotFoundError, NotFoundError):
                if table.schemas.list_ids():
                    raise
                # Renamed (or dropped) under us: the renamed table carries the marker, and a rerun
                # there finishes the work; this run lost the race.
                raise TableGoneError(f"table {table.name} was renamed or dropped during the fast-forward; rerun it on "
                                     "the table's new name to finish it") from None
            fio.delete(fast_forward_marker_path(table.path))  # main is the branch's: writes may go on
        finally:
            release(fio, rewrite)
    return result


def _untouched(table: TableHandle, marker: dict) -> bool:
    """Had the fast-forward of ``marker`` changed nothing in main yet? It removes main's newest
    snapshot (``latestBefore``) first, so while that is there nothing was removed or copied."""
    latest_before = marker.get("latestBefore")
    return isinstance(latest_before, int) and table.snapshots.exists(latest_before) \
        and table.snapshots.latest_id() == latest_before


def _plan_fast_forward(table: TableHandle, branch: TableHandle, dry_run: bool, latest_before: int | None) -> FastForwardResult:
    """What fast-forward replaces; ``latest_before`` is main's latest when the (interrupted)
    first run began, if this is a rerun."""
    name = branch.branch
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
    branch_schemas = [i for i in branch.schemas.list_ids() if i > start.schema_id]
    return FastForwardResult(table.name, name, start.id, main_ids[-1] if latest_before is None else latest_before,
                             ids[-1], removed, tuple(ids[1:]), tuple(branch_schemas),
                             tuple(t.name for t in main_tags), tuple(branch_tags), dry_run)


def _carry_out_fast_forward(table: TableHandle, branch: TableHandle, plan: FastForwardResult) -> None:
    fio = table.file_io
    start = table.snapshots.snapshot(plan.start_snapshot_id)
    for n in plan.snapshots_removed:  # newest first
        fio.delete(table.snapshots.path(n))
    table.snapshots.write_latest_hint(start.id, rewind=True)
    for tag_name in plan.tags_removed:
        fio.delete(table.tags.path(tag_name))
    for sid in reversed([i for i in table.schemas.list_ids() if i > start.schema_id]):
        fio.delete(table.schemas.path(sid))
    for sid in plan.schemas_copied:
        fio.try_create(table.schemas.path(sid), fio.read_bytes(branch.schemas.path(sid)))
    for n in plan.snapshots_copied:  # oldest first
        fio.try_create(table.snapshots.path(n), fio.read_bytes(branch.snapshots.path(n)))
    table.snapshots.write_latest_hint(plan.latest_after)
    for tag_name in plan.tags_copied:
        data = fio.read_bytes(branch.tags.path(tag_name))
        if not fio.try_create(table.tags.path(tag_name), data) and fio.read_bytes(table.tags.path(tag_name)) != data:
            fio.delete(table.tags.path(tag_name))  # main's tag of that name, on an older snapshot
            fio.try_create(table.tags.path(tag_name), data)


__all__ = ["BranchDeleteResult", "BranchInfo", "FastForwardResult", "MAIN_BRANCH", "create_branch",
           "delete_branch", "fast_forward", "list_branches"]
