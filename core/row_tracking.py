"""Row tracking (Paimon 2.x, ``row-tracking.enabled=true`` on append tables).

Each row has a stable ``_ROW_ID``: a data file's rows are ``first_row_id``, ``first_row_id + 1``,
... in file order. A commit gives each new file (``_FILE_SOURCE`` APPEND, no ``first_row_id``
yet) the next free ids, in the order the commit lists the files, from the latest snapshot's
``nextRowId``, and the new snapshot's ``nextRowId`` is past the last one given (Paimon's
``RowTrackingCommitUtils``; pypaimon 2.1 is the reference, Java 1.0 has no row tracking).

lakectl writes such tables; it does not rewrite their files (compaction, delete), which would
have to keep each row's id as Paimon's row-tracking compaction does.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from core.errors import UnsupportedTableError
from core.manifest import ADD, FILE_SOURCE_APPEND, ManifestEntry
from core.schema import TableSchema

OPTION = "row-tracking.enabled"

def enabled(schema: TableSchema) -> bool:
    return schema.options.get(OPTION, "false").strip().lower() == "true"


def assign_first_row_ids(entries: Sequence[ManifestEntry], next_row_id: int) -> tuple[list[ManifestEntry], int]:
    """``entries`` with first_row_ids given to the new files that lack one, and the next free id."""
    assigned = []
    for entry in entries:
        f = entry.file
        if entry.kind == ADD and f.file_source == FILE_SOURCE_APPEND and f.first_row_id is None:
            entry = dataclasses.replace(entry, file=dataclasses.replace(f, first_row_id=next_row_id))
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
            "keeps each row's _ROW_ID when it rewrites files; lakectl's writes assign new rows their ids, "
            "but its rewrites would not keep them)")
