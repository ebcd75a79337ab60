"""Rename a branch on an object store: copy ``branch/branch-OLD`` to ``branch/branch-NEW``, then
delete the old directory (Paimon's ``rename_branch`` is one filesystem rename, which object
stores do not have). Only the branch's own metadata moves: its snapshot, schema, tag, consumer
and changelog files; data, manifest and index files are the table's and stay.

The order keeps every intermediate state a whole branch under exactly one name for readers,
and a rerun of the same ``lakectl branch rename`` finishes whatever a kill left:

1. ``UNFINISHED`` is created in NEW (create-if-absent), naming the rename
   (``core.branch.rename_marker``). Until it goes, NEW is a leftover to every command, and the
   rerun recognises it as its own copy and resumes it.
2. Copy rounds (``core.ops.rename.copy_until_stable``: schema files last, the same rounds as a
   table rename) until a listing of OLD equals the previous one. A commit to OLD during a round
   is copied by the next; one that keeps coming makes the rename give up after a few rounds
   (exit 4), removing the partial copy and leaving OLD as it was.
3. ``RENAMED`` is written into OLD, naming NEW. A commit to OLD that finds it after publishing
   takes its snapshot back (exit 4, ``core/commit.py``); one that looked just before it was
   there exited 0, so OLD is listed once more and copied again if it changed.
4. NEW's ``UNFINISHED`` is deleted: NEW is the branch from here on, and OLD, holding
   ``RENAMED`` that names a whole branch, is a leftover (``core.branch.branch_state``).
5. OLD's files are deleted, schema files first, ``RENAMED`` last; a kill here leaves a leftover
   that the rerun, ``branch delete OLD`` or ``check --repair`` removes.

The whole rename runs under the table's closing marker (``core/busy.py``), as the local rename
does, so no command of several steps (a rollback, expire or tag change on the branch, a branch
create or delete) is half-way through while the branch moves. An error (not a kill) during the
copy leaves NEW's ``UNFINISHED`` for the rerun; OLD is untouched until step 3.
"""

from __future__ import annotations

import logging
import posixpath

from core.branch import (LEFTOVER, RENAMED, UNFINISHED, WHOLE, branch_path, branch_state, rename_marker, renamed_to,
                         renaming_from)
from core.busy import closing
from core.copying import delete_files
from core.errors import BranchExistsError, CommitConflictError, LakectlError, NotFoundError, RenameInProgressError
from core.fileio import FileIO, join
from core.ops.rename import copy_until_stable, source_changed
from core.table_handle import TableHandle

log = logging.getLogger(__name__)

_OWN_MARKERS = (UNFINISHED, RENAMED)  # top-level names of the two directories that are not the branch's


def rename_branch_by_copy(table: TableHandle, old: str, new: str, *, dry_run: bool) -> None:
    """Rename branch ``old`` to ``new`` by copy and delete (validated names, object store).

    Raises:
        NotFoundError: no branch ``old`` (and no rename of it to ``new`` left to finish).
        BranchExistsError: ``new`` is a branch, or a leftover that is not this rename's copy.
        CommitConflictError: OLD kept changing through every copy round (nothing renamed), or
            a command of several steps stayed at work on the table.
        RenameInProgressError: the copy stopped on an error; the message names the rerun.
    """
    io = table.file_io
    source, target = branch_path(table.path, old), branch_path(table.path, new)
    rerun = f"lakectl branch rename {table.name} {old} {new}"
    old_state, new_state = branch_state(table, old), branch_state(table, new)
    if old_state == LEFTOVER and new_state == WHOLE and renamed_to(io, table.path, old) == new:
        # A kill while the copied branch was deleted here: finish the delete.
        if not dry_run:
            with closing(io, table.path, table.name, f"rename branch {old} to {new}"):
                _delete_source(io, source)
        return
    if old_state != WHOLE:
        raise NotFoundError(f"branch {old} of table {table.name} does not exist")
    if new_state == WHOLE:
        raise BranchExistsError(f"branch {new} of table {table.name} already exists; nothing was renamed")
    resuming = new_state == LEFTOVER and renaming_from(io, table.path, new) == old
    if new_state == LEFTOVER and not resuming:
        raise BranchExistsError(f"branch/branch-{new} of table {table.name} holds what an interrupted branch create "
                                f"or delete left; remove it with `lakectl branch delete {table.name} {new}` first")
    if dry_run:
        return
    with closing(io, table.path, table.name, f"rename branch {old} to {new}"):
        if branch_state(table, old) != WHOLE:  # deleted or renamed while we waited
            raise NotFoundError(f"branch {old} of table {table.name} no longer exists; nothing was renamed")
        if not resuming and not io.try_create(join(target, UNFINISHED), rename_marker(old, new)):
            raise BranchExistsError(f"branch {new} of table {table.name} appeared while renaming; nothing was renamed")
        try:
            _copy(io, table, source, target, old, new)
        except LakectlError:
            raise
        except Exception as e:
            raise RenameInProgressError(f"the rename of branch {old} of {table.name} to {new} stopped ({e}); "
                                        f"rerun {rerun} to finish it") from e
        _delete_source(io, source)


def _copy(io: FileIO, table: TableHandle, source: str, target: str, old: str, new: str) -> None:
    """Steps 2 to 4: copy until OLD holds still, mark it RENAMED, look once more, make NEW the branch."""
    what = f"branch {old} of {table.name}"
    copied = copy_until_stable(io, source, target, what, skip=_OWN_MARKERS)
    if copied is None:
        _remove_partial(io, target)
        raise CommitConflictError(f"{what} kept changing during the rename (every copy round saw a new commit); "
                                  f"nothing was renamed and the partial copy was removed. Stop its writers and rerun")
    io.write_bytes(join(source, RENAMED), rename_marker(old, new))
    # A commit that published after the last listing and looked for RENAMED before it was
    # there exited 0: copy it too. Later commits find RENAMED and take themselves back.
    if source_changed(io, source, copied[3], skip=_OWN_MARKERS):
        if copy_until_stable(io, source, target, what, skip=_OWN_MARKERS) is None:
            io.delete(join(source, RENAMED))  # OLD stays the branch
            _remove_partial(io, target)
            raise CommitConflictError(f"{what} kept changing during the rename; nothing was renamed and the partial "
                                      "copy was removed. Stop its writers and rerun")
    io.delete(join(target, UNFINISHED))  # NEW is the branch from here on; OLD a leftover
    log.info("copied %s to branch %s in %d round(s); deleting the old directory", what, new, copied[2])


def _delete_source(io: FileIO, source: str) -> None:
    """Step 5: OLD's files, RENAMED last (a kill leaves a leftover the rerun finishes)."""
    _delete_dir(io, source, RENAMED)


def _remove_partial(io: FileIO, target: str) -> None:
    """A partial copy given up, UNFINISHED last (a kill leaves a leftover the rerun resumes)."""
    _delete_dir(io, target, UNFINISHED)


def _delete_dir(io: FileIO, root: str, last: str) -> None:
    """Delete a branch directory: schema files first (it is no branch to anyone without them),
    then the rest, the marker ``last`` after them, then the emptied directories."""
    files = io.walk(root)
    marker = join(root, last)
    schemas = sorted(f.path for f in files if posixpath.basename(posixpath.dirname(f.path)) == "schema")
    for path in schemas:
        io.delete(path)
    delete_files(io, sorted(f.path for f in files if f.path not in schemas and f.path != marker))
    io.delete(marker)
    io.delete_tree(root)


__all__ = ["rename_branch_by_copy"]
