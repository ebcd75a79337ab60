"""Row tracking (Paimon 2.x, ``row-tracking.enabled=true`` on append tables).

Each row has a stable ``_ROW_ID``: a data file's rows are ``first_row_id``, ``first_row_id + 1``,
... in file order. A commit gives each new file (``_FILE_SOURCE`` APPEND, no ``first_row_id``
yet) the next free ids, in the order the commit lists the files, from the latest snapshot's
``nextRowId``, and the new snapshot's ``nextRowId`` is past the last one given (Paimon's
``RowTrackingCommitUtils``; pypaimon 2.1 is the reference, Java 1.0 has no row tracking).

Compaction keeps each row's id: it rewrites only runs of files whose row ids follow on without
a gap, and the new files take the run's ids in order (``contiguous_runs``, ``number_on``).
Delete, which would drop rows from the middle of a range, is refused.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from core.errors import UnsupportedTableError
from core.manifest import ADD, FILE_SOURCE_APPEND, DataFileMeta, ManifestEntry
from core.schema import TableSchema

OPTION = "row-tracking.enabled"

def enabled(schema: TableSchema) -> bool:
    return schema.options.get(OPTION, "false").strip().lower() == "true"


def assign_first_row_ids(entries: Sequence[ManifestEntry], next_row_id: int,
                         snapshot_id: int) -> tuple[list[ManifestEntry], int]:
    """``entries`` with first_row_ids given to the new files that lack one, and the next free id.

    Those files also take the commit's snapshot id as their sequence numbers, as Paimon's
    writers leave them to the commit: data-evolution reads pick a column's newest file by
    it, so a later update of these rows (numbered by its own snapshot) must win over them."""
    assigned = []
    for entry in entries:
        f = entry.file
        if entry.kind == ADD and f.file_source == FILE_SOURCE_APPEND and f.first_row_id is None:
            numbered = dataclasses.replace(f, first_row_id=next_row_id, min_sequence_number=snapshot_id,
                                           max_sequence_number=snapshot_id)
            entry = dataclasses.replace(entry, file=numbered)
            next_row_id += f.row_count
        assigned.append(entry)
    return assigned, next_row_id


def refuse_rewrite(schema: TableSchema, table_name: str, action: str) -> None:
    """Refuse ``action`` (a rewrite of data files) on a row-tracking table.

    Raises:
        UnsupportedTableError: the table tracks row ids.
    """
    if enabled(schema):
        raise UnsupportedTableError(
            f"table {table_name} uses {OPTION}=true, which lakectl does not support for {action} (Paimon "
            "keeps the _ROW_ID of every row that stays; rewriting a file without some of its rows would "
            "renumber the rest)")


def contiguous_runs(files: Sequence[DataFileMeta], rewritable: Callable[[DataFileMeta], bool]
                    ) -> list[list[DataFileMeta]]:
    """``files`` (in sequence order) cut into runs whose row ids follow on without a gap, so
    that concatenating a run's rows keeps each row's id: a file without a first_row_id, or
    that ``rewritable`` rejects (one with deleted rows would shift the ids after them), is in
    no run."""
    runs: list[list[DataFileMeta]] = []
    for f in files:
        if f.first_row_id is None or not rewritable(f):
            runs.append([])
            continue
        last = runs[-1][-1] if runs and runs[-1] else None
        if last is not None and last.first_row_id + last.row_count == f.first_row_id:
            runs[-1].append(f)
        else:
            runs.append([f])
    return [r for r in runs if r]


def number_on(files: Sequence[DataFileMeta], first_row_id: int) -> list[DataFileMeta]:
    """The files a run was rewritten into, each with the first_row_id of its first row, the
    rows numbered on from ``first_row_id`` (the run's first) in file order."""
    numbered = []
    for f in files:
        numbered.append(dataclasses.replace(f, first_row_id=first_row_id))
        first_row_id += f.row_count
    return numbered


def rewritten_range_conflict(entries: Sequence[ManifestEntry], live: Sequence[ManifestEntry]) -> str | None:
    """Why a data-evolution compaction's files cannot be committed on ``live``, or None.

    A compacted file holds every column of its row-id range. If a file another commit added
    meanwhile also lies in that range (pypaimon's update of a column by row id), committing
    would leave two files of different ranges over the same rows, which Paimon's readers
    refuse: the compaction must plan again. ``.blob`` files stay beside a compacted file and
    do not count."""
    deleted = {e.identifier for e in entries if e.kind != ADD}
    ranges = [(e.file.first_row_id, e.file.first_row_id + e.file.row_count, e.file.file_name) for e in entries
              if e.kind == ADD and e.file.file_source != FILE_SOURCE_APPEND and e.file.first_row_id is not None]
    for e in live:
        f = e.file
        if e.identifier in deleted or f.first_row_id is None or f.file_name.endswith(".blob"):
            continue
        for start, end, name in ranges:
            if start < f.first_row_id + f.row_count and f.first_row_id < end:
                return (f"file {f.file_name}, committed meanwhile, holds row ids of the rewritten file {name} "
                        "(a concurrent update by row id); nothing was committed")
    return None

