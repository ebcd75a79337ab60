"""The markers of a rename on an object store (``core/ops/rename.py``), and the check every
command makes before it opens a table there.

- ``RENAMING`` in the target, from the rename's first write until the copy is complete: the
  source's name and path (and its latest snapshot id when the copy began). A rerun of the same
  rename resumes the copy; anything else is refused with the command to rerun.
- ``RENAMED`` in the source, from just before the copy is declared complete until the source's
  last file is deleted: the target's name and path. It marks what is left of the source as a
  leftover that the rerun (or ``drop``) removes.

Both are small JSON files at the table directory's top level, where Paimon (Java, pypaimon)
never looks: to them a directory is a table when ``schema/`` holds schema files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from core.errors import CommitConflictError, CorruptMetadataError, NotFoundError, RenameInProgressError
from core.fileio import FileIO, join

RENAMING = "RENAMING"
RENAMED = "RENAMED"
MARKERS = (RENAMING, RENAMED)


@dataclass(frozen=True, slots=True)
class RenameMarker:
    source_name: str
    source_path: str
    target_name: str
    target_path: str
    source_snapshot_id: int | None  # the source's latest snapshot when the copy began

    def to_json(self) -> bytes:
        return json.dumps({"source": self.source_name, "sourcePath": self.source_path, "target": self.target_name,
                           "targetPath": self.target_path, "sourceSnapshotId": self.source_snapshot_id},
                          indent=2).encode("utf-8")

    @property
    def rerun(self) -> str:
        return f"lakectl rename {self.source_name} {self.target_name}"


def read_marker(io: FileIO, table_path: str, name: str) -> RenameMarker | None:
    """The marker ``name`` (RENAMING or RENAMED) in ``table_path``; None if there is none."""
    path = join(table_path, name)
    text = io.read_text_if_exists(path)
    if text is None:
        return None
    try:
        d = json.loads(text)
        return RenameMarker(d["source"], d["sourcePath"], d["target"], d["targetPath"], d.get("sourceSnapshotId"))
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptMetadataError(f"{path} is not a rename marker lakectl can read ({e})") from e


def marker_names(io: FileIO, table_path: str) -> set[str]:
    """Which markers ``table_path`` holds (one listing of its top level)."""
    return {n for n in io.list_names(table_path) if n in MARKERS}


def refuse_renaming(io: FileIO, table_path: str, table_name: str) -> None:
    """Refuse a table that a rename on an object store is copying into or deleting, rather than
    let a command read or write half a table: the target of a copy under way is exit 4
    (CommitConflictError) while the rename runs and exit 1 (RenameInProgressError, naming the
    rerun) if it stopped; a source whose copy is complete is exit 3 (NotFoundError: the table has
    its new name). Local renames are atomic and leave no markers, so nothing is looked up there."""
    if io.local:
        return
    found = marker_names(io, table_path)
    if RENAMING in found:
        m = read_marker(io, table_path, RENAMING)
        if m is not None:
            _refuse_while_running(io, m)
            raise RenameInProgressError(f"a rename from {m.source_name} into {table_name} is in progress or failed; "
                                        f"rerun {m.rerun}")
    if RENAMED in found:
        m = read_marker(io, table_path, RENAMED)
        if m is not None and not _copy_unfinished(io, m):
            # The copy is complete: the table is the target now, and this is what is left of the
            # source, being deleted (or left by a rename that stopped while deleting it).
            raise NotFoundError(f"table {table_name} does not exist: it was renamed to {m.target_name} (what is left "
                                f"of it here is being deleted; should that rename have stopped, {m.rerun} finishes "
                                "it)")


def _refuse_while_running(io: FileIO, m: RenameMarker) -> None:
    """A rename still at work (its closing marker live in the source, core/busy.py) is a lost race,
    exit 4; one that stopped is exit 1, naming its rerun."""
    from core.busy import running_closer  # here: core.busy reaches core.rewrite, which opening needs not

    closer = running_closer(io, m.source_path)
    if closer is not None:
        raise CommitConflictError(f"{m.source_name} is being renamed to {m.target_name} by {closer.describe()}; "
                                  "nothing was changed, re-run the command on the new name when it has finished")


def _copy_unfinished(io: FileIO, renamed: RenameMarker) -> bool:
    """True while the target still holds this rename's ``RENAMING``: a run stopped between writing
    ``RENAMED`` and deleting ``RENAMING``, so the source is still the table and the target not."""
    renaming = read_marker(io, renamed.target_path, RENAMING)
    return renaming is not None and renaming.source_path == renamed.source_path
