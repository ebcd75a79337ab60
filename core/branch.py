"""Branches in Paimon's layout: names, directories, and the snapshots every branch pins.

A branch NAME keeps its own ``snapshot/``, ``schema/`` and ``tag/`` directories in
``<table>/branch/branch-NAME/`` (Paimon's ``BranchManager.branchPath``); its data, manifest
and index files are the table's, shared with main and every other branch. So a file may be
deleted only when no snapshot or tag of *any* branch references it: ``pinned_snapshots``
gives expire and remove-orphan-files that list.

Two markers make the branch commands crash safe (``core/ops/branches.py``):

- ``UNFINISHED`` at the top of ``branch/branch-NAME/``: ``branch create`` writes it before any
  other file and deletes it after the last, ``branch delete`` writes it before deleting
  anything and deletes it last. A directory holding it, or holding no schema file, is a
  *leftover*: not a branch to any command, reported by ``check`` and removed by the next
  ``branch create`` or ``branch delete`` of that name or by ``check --repair``. So a kill
  leaves no branch or a whole one, never half of one.
- ``RENAMED`` at the top of ``branch/branch-OLD/``: a ``branch rename`` on an object store
  (a copy, then a delete: ``core/ops/branch_rename.py``) has copied the branch to NEW and is
  deleting it here, JSON naming NEW. Commits to OLD that find it take themselves back, and
  once NEW is a whole branch OLD is a leftover, so the name moves in one step for readers.
- ``FAST-FORWARD`` in main's ``snapshot/``: written before ``branch fast-forward`` changes main,
  deleted once main is the branch's. While it is there every command that would change main
  (or the branch it names) is refused with the fast-forward to rerun, so no commit lands in a
  main that the rerun would then rewrite.
"""

from __future__ import annotations

import json
import posixpath
from typing import Protocol

from core.errors import CommitConflictError, CorruptMetadataError, FastForwardUnfinishedError, NotFoundError, UsageError
from core.fileio import FileIO, check_name_length, join
from core.snapshot import Snapshot, SnapshotManager
from core.tag import TagManager

MAIN_BRANCH = "main"
BRANCH_DIR = "branch"
BRANCH_DIR_PREFIX = "branch-"
UNFINISHED = "UNFINISHED"  # in branch/branch-NAME/: a create or delete has not finished
RENAMED = "RENAMED"  # in branch/branch-OLD/: a rename by copy has copied it to the name it holds
FAST_FORWARD = "FAST-FORWARD"  # in main's snapshot/: a fast-forward has not finished

# What ``branch_state`` finds under branch/branch-NAME.
ABSENT, WHOLE, LEFTOVER = "absent", "whole", "leftover"


def validate_branch_name(name: str) -> None:
    """Paimon's rules (BranchManager.validateBranch): not blank, not ``main``, not a pure number;
    and lakectl's: a plain directory name."""
    if not name or not name.strip():
        raise UsageError("branch name must not be empty")
    if name == MAIN_BRANCH:
        raise UsageError(f"branch name {name!r} is the main branch")
    if name.isdigit():
        raise UsageError(f"branch name {name!r} must not be a number")
    if "/" in name or "\\" in name or name in (".", "..") or name != name.strip():
        raise UsageError(f"branch name {name!r} must be a plain name: no '/', no '\\\\', no surrounding spaces")
    check_name_length("branch", name)


def branch_path(table_path: str, branch: str) -> str:
    """Where a branch keeps its snapshot/, schema/ and tag/ directories: the table itself for
    main, ``<table>/branch/branch-NAME`` otherwise. Data, manifest and index files are shared
    and always stay under the table's own directories."""
    if branch == MAIN_BRANCH:
        return table_path
    return join(table_path, BRANCH_DIR, BRANCH_DIR_PREFIX + branch)


class TablePlace(Protocol):
    """What the functions here read of a table (a ``core.table_handle.TableHandle``): where it
    lives and which branch it is seen through. The handle is built from this module's paths,
    so it is named by what it offers rather than imported."""

    @property
    def path(self) -> str: ...

    @property
    def file_io(self) -> FileIO: ...

    @property
    def branch(self) -> str: ...


def branches_dir(table_path: str) -> str:
    return join(table_path, BRANCH_DIR)


def _dir_names(table: TablePlace) -> list[str]:
    """Every NAME with a directory ``branch/branch-NAME`` (branch or leftover or emptied)."""
    directory = branches_dir(table.path)
    if not table.file_io.exists(directory):
        return []
    return sorted(n[len(BRANCH_DIR_PREFIX):] for n in table.file_io.list_names(directory)
                  if n.startswith(BRANCH_DIR_PREFIX) and len(n) > len(BRANCH_DIR_PREFIX))


def branch_state(table: TablePlace, name: str) -> str:
    """ABSENT when ``branch/branch-NAME`` holds no file (not the directory alone: some object
    stores, SeaweedFS, keep a prefix listed after every object under it was deleted); WHOLE
    when it holds schema files and no UNFINISHED marker, and no RENAMED marker naming a branch
    that is whole now; LEFTOVER otherwise (what a killed create, delete or rename left, or a
    hand: not a branch)."""
    path = branch_path(table.path, name)
    io = table.file_io
    if not io.exists(path):
        return ABSENT
    files = io.walk(path)
    if not files:
        return ABSENT
    parents = {(posixpath.basename(posixpath.dirname(f.path)), posixpath.basename(f.path)) for f in files}
    has_schema = any(parent == "schema" and base.startswith("schema-") for parent, base in parents)
    top = f"/{BRANCH_DIR_PREFIX}{name}/"
    marked = any(f.path.endswith(top + UNFINISHED) for f in files)
    if marked or not has_schema:
        return LEFTOVER
    if any(f.path.endswith(top + RENAMED) for f in files):
        new = renamed_to(io, table.path, name)
        if new is not None and new != name and branch_state(table, new) == WHOLE:
            return LEFTOVER  # copied to its new name, which is the branch now
    return WHOLE


def rename_marker(old: str, new: str) -> bytes:
    """What a branch rename by copy writes: UNFINISHED into NEW first, RENAMED into OLD once the
    copy is complete; both name the rename, so that a rerun knows its own."""
    return json.dumps({"command": "branch rename", "from": old, "to": new}).encode("utf-8")


def _rename_names(io: FileIO, path: str) -> tuple[str, str] | None:
    """(from, to) of a branch rename's marker at ``path``; None if absent or not a rename's."""
    try:
        d = json.loads(io.read_bytes(path).decode("utf-8"))
    except (FileNotFoundError, CorruptMetadataError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(d, dict) or d.get("command") != "branch rename":
        return None
    old, new = d.get("from"), d.get("to")
    return (old, new) if isinstance(old, str) and isinstance(new, str) else None


def renamed_to(io: FileIO, table_path: str, name: str) -> str | None:
    """The new name in branch NAME's RENAMED marker, or None (no marker, or not readable)."""
    names = _rename_names(io, join(branch_path(table_path, name), RENAMED))
    return names[1] if names is not None and names[0] == name else None


def renaming_from(io: FileIO, table_path: str, name: str) -> str | None:
    """The old name whose rename by copy is filling branch NAME (its UNFINISHED marker), or None."""
    names = _rename_names(io, join(branch_path(table_path, name), UNFINISHED))
    return names[0] if names is not None and names[1] == name else None


def branch_names(table: TablePlace) -> list[str]:
    """The table's branches other than main, sorted: the WHOLE ones (``branch_state``)."""
    return [n for n in _dir_names(table) if branch_state(table, n) == WHOLE]


def leftover_branches(table: TablePlace) -> list[str]:
    """Names whose directory is a LEFTOVER: a killed create or delete, not a branch."""
    return [n for n in _dir_names(table) if branch_state(table, n) == LEFTOVER]


def branch_exists(table: TablePlace, name: str) -> bool:
    """Whether branch ``name`` is a whole branch (``branch_state``)."""
    return branch_state(table, name) == WHOLE


# ---- the fast-forward marker ----------------------------------------------------------------
def fast_forward_marker_path(table_path: str) -> str:
    return join(table_path, "snapshot", FAST_FORWARD)


def fast_forward_marker(file_io: FileIO, table_path: str) -> dict | None:
    """The unfinished fast-forward of the table (``branch``, ``startSnapshotId``,
    ``latestBefore``), or None."""
    path = fast_forward_marker_path(table_path)
    text = file_io.read_text_if_exists(path)
    if text is None:
        return None
    try:
        d = json.loads(text)
        return {"branch": str(d["branch"]), "startSnapshotId": int(d["startSnapshotId"]),
                "latestBefore": int(d["latestBefore"])}
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptMetadataError(f"{path} is not a fast-forward marker lakectl can read ({e})") from e


def table_name(table_path: str) -> str:
    """``db.t`` of a table directory ``.../db.db/t`` (for messages of code that has no TableHandle)."""
    parent, name = posixpath.split(table_path.rstrip("/"))
    database = posixpath.basename(parent)
    return f"{database.removesuffix('.db')}.{name}"


def fast_forward_rerun(table_name: str, branch: str) -> str:
    return f"lakectl branch fast-forward {table_name} {branch}"


def refuse_unfinished_fast_forward(file_io: FileIO, table_path: str, table_name: str, branch: str,
                                   what: str) -> None:
    """Raise FastForwardUnfinishedError if a fast-forward of the table is unfinished and
    ``branch`` (the one ``what`` would change) is main or the branch being fast-forwarded:
    the rerun would otherwise rewrite main over the change, or find its branch changed."""
    marker = fast_forward_marker(file_io, table_path)
    if marker is None or branch not in (MAIN_BRANCH, marker["branch"]):
        return
    # core.rewrite (commit users, holders: hashlib, socket, uuid) only when a marker exists:
    # a listing's open of the table never gets here
    from core.rewrite import FAST_FORWARD as FAST_FORWARD_KIND, is_live, read_marker

    running = read_marker(file_io, join(table_path, "snapshot"))
    if running is not None and running.kind == FAST_FORWARD_KIND and is_live(running):
        # Not interrupted: at work right now. A lost race, nothing changed (exit 4).
        raise CommitConflictError(
            f"cannot {what}: {running.describe()} of {table_name} to branch {marker['branch']} is running; "
            "nothing was changed, re-run it when the fast-forward has finished")
    raise FastForwardUnfinishedError(
        f"cannot {what}: a fast-forward of {table_name} to branch {marker['branch']} was interrupted and main "
        f"is half-way; rerun `{fast_forward_rerun(table_name, marker['branch'])}` first; nothing was changed")


def _roots(snapshots: SnapshotManager, tags: TagManager) -> list[Snapshot]:
    out: list[Snapshot] = []
    for sid in snapshots.list_ids():
        try:
            out.append(snapshots.snapshot(sid))
        except NotFoundError:
            continue  # removed while we listed: its files are not this branch's to keep
    for name in tags.names():
        try:
            out.append(tags.snapshot(name))
        except NotFoundError:
            continue
    return out


def all_branch_paths(table: TablePlace) -> list[str]:
    """The directories of every branch of the table, main first (leftovers included, as
    ``pinned_snapshots`` counts them)."""
    return [branch_path(table.path, b)
            for b in [MAIN_BRANCH, *(n for n in _dir_names(table) if branch_state(table, n) != ABSENT)]]


def pinned_snapshots(table: TablePlace, *, include_own: bool) -> list[Snapshot]:
    """Every snapshot and tag of every branch of the table (main included), each one a set of
    files that must survive. Without ``include_own``, those of ``table``'s own branch are left
    out (the caller decides about them itself, as expire does)."""
    out: list[Snapshot] = []
    # Leftovers too: a branch being created pins its snapshot before it is whole, and one
    # being deleted keeps pinning until its snapshot files are gone (keeping more is safe).
    for branch in [MAIN_BRANCH, *(n for n in _dir_names(table) if branch_state(table, n) != ABSENT)]:
        if branch == table.branch and not include_own:
            continue
        path = branch_path(table.path, branch)
        out.extend(_roots(SnapshotManager(table.file_io, path), TagManager(table.file_io, path)))
    return out
