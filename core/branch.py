"""Branches in Paimon's layout: names, directories, and the snapshots every branch pins.

A branch NAME keeps its own ``snapshot/``, ``schema/`` and ``tag/`` directories in
``<table>/branch/branch-NAME/`` (Paimon's ``BranchManager.branchPath``); its data, manifest
and index files are the table's, shared with main and every other branch. So a file may be
deleted only when no snapshot or tag of *any* branch references it: ``pinned_snapshots``
gives expire and remove-orphan-files that list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import NotFoundError, UsageError
from core.fileio import check_name_length, join
from core.snapshot import Snapshot, SnapshotManager
from core.tag import TagManager

if TYPE_CHECKING:
    from core.table import Table

MAIN_BRANCH = "main"
BRANCH_DIR = "branch"
BRANCH_DIR_PREFIX = "branch-"


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


def branches_dir(table_path: str) -> str:
    return join(table_path, BRANCH_DIR)


def branch_names(table: "Table") -> list[str]:
    """The table's branches other than main, sorted (directories ``branch/branch-NAME`` that
    hold a file: see ``branch_exists``)."""
    directory = branches_dir(table.path)
    if not table.file_io.exists(directory):
        return []
    names = [n[len(BRANCH_DIR_PREFIX):] for n in table.file_io.list_names(directory)
             if n.startswith(BRANCH_DIR_PREFIX) and len(n) > len(BRANCH_DIR_PREFIX)]
    return sorted(n for n in names if branch_exists(table, n))


def branch_exists(table: "Table", name: str) -> bool:
    """Whether ``branch/branch-NAME`` holds any file. Not the directory alone: some object
    stores (SeaweedFS) keep a prefix listed after every object under it was deleted, and a
    deleted branch must not come back as one."""
    path = branch_path(table.path, name)
    return table.file_io.exists(path) and bool(table.file_io.walk(path))


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


def pinned_snapshots(table: "Table", *, include_own: bool) -> list[Snapshot]:
    """Every snapshot and tag of every branch of the table (main included), each one a set of
    files that must survive. Without ``include_own``, those of ``table``'s own branch are left
    out (the caller decides about them itself, as expire does)."""
    out: list[Snapshot] = []
    for branch in [MAIN_BRANCH, *branch_names(table)]:
        if branch == table.branch and not include_own:
            continue
        path = branch_path(table.path, branch)
        out.extend(_roots(SnapshotManager(table.file_io, path), TagManager(table.file_io, path)))
    return out
