"""delete on data-evolution tables, as Paimon 2.1 deletes from them (Flink's ``DELETE``,
``DataEvolutionDeleteSink``; pypaimon 2.1's ``delete_by_row_id``, ``TableDeleteByRowId``).

No data file is rewritten: a row-id range's files (its whole rows and the column files of
later updates) stay, and the deleted rows are marked in a deletion vector keyed by the
range's anchor, its oldest data file (``data_evolution.anchor_file``), at the row's position
in the range (its ``_ROW_ID`` minus the range's first row id). Each touched bucket's vectors
(the old ones and the new positions) go into one new index file that replaces the bucket's
old one, in one APPEND snapshot, as pypaimon commits them. Paimon requires
``deletion-vectors.enabled=true`` and a bucket-unaware table for this, and so does lakectl.

The rows to delete are those ``--where`` matches in a read of the latest snapshot with their
``_ROW_ID`` (vectors already there applied). The commit checks that every anchor is still
live and that the bucket's index file was not replaced meanwhile (``core.commit``), so a
concurrent compaction or delete makes this one plan again instead of losing either.

A compaction of such a table keeps the deleted rows (their row ids stay) and moves the
vectors onto the compacted file (``move_deletion_vectors``).
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Any, Mapping, Sequence

import numpy as np

from core import row_tracking
from core.arrow_values import numpy_ints
from core.commit import CommitMessage, FileStoreCommit
from core.deletion_vectors import (bitmap_class, bucket_index_files, read_index_file, write_index_file,
                                   writes_bitmap64)
from core.errors import CorruptMetadataError, UnsupportedTableError
from core.fileio import FileIO
from core.index_manifest import IndexFileMeta
from core.kernels import data_evolution
from core.kernels.read import ReadSplit, read_split
from core.manifest import DataFileMeta
from core.ops.scan import PreparedScan, prepare
from core.replan import lost_race
from core.snapshot import APPEND
from core.system_columns import ROW_ID
from core.table_handle import TableHandle


def check_deletable(table: TableHandle) -> None:
    """Refuse a data-evolution table Paimon does not delete from.

    Raises:
        UnsupportedTableError: row tracking or deletion vectors are off, or the table has fixed
            buckets (Paimon's data-evolution delete takes bucket-unaware tables only).
    """
    schema = table.schema
    if not row_tracking.enabled(schema):
        raise UnsupportedTableError(
            f"cannot delete from {table.name}: Paimon's data-evolution delete finds rows by _ROW_ID, which "
            "needs option row-tracking.enabled=true")
    if not schema.core_options.deletion_vectors_enabled:
        raise UnsupportedTableError(
            f"cannot delete from {table.name}: Paimon deletes from data-evolution.enabled=true tables only by "
            "deletion vectors, which need option deletion-vectors.enabled=true")
    if schema.num_buckets != -1:
        raise UnsupportedTableError(
            f"cannot delete from {table.name}: Paimon's data-evolution delete takes bucket-unaware tables "
            f"only (bucket=-1), not bucket={schema.num_buckets}")


def plan_delete(table: TableHandle, where: str, *, dry_run: bool) -> tuple[PreparedScan, int, list[CommitMessage]]:
    """The rows ``where`` matches at the latest snapshot, and (unless ``dry_run``) one message
    per touched bucket replacing its index file; returns the scan, the rows matched and the
    messages."""
    prepared = prepare(table, select=[ROW_ID], where=where)
    plan = prepared.plan
    assert prepared.predicate is not None
    index_files = bucket_index_files(table.file_io, table.path, plan.snapshot)
    matched, messages = 0, []
    try:
        for split in plan.splits:
            row_ids = _matching_row_ids(split, prepared, table.file_io)
            matched += len(row_ids)
            if len(row_ids) and not dry_run:
                index_file = index_files.get((split.partition, split.bucket))
                messages.append(_vector_message(table, split, row_ids, index_file))
    except CorruptMetadataError as e:  # a file the plan reads is gone: damage, or expired meanwhile
        raise lost_race(table.snapshots, plan.snapshot, e) or e
    return prepared, matched, messages


def commit_delete(table: TableHandle, messages: Sequence[CommitMessage]) -> Any:
    """One APPEND snapshot of the messages' index files (pypaimon commits its delete so)."""
    committer = FileStoreCommit(table.file_io, table.path, table.schema, branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit())
    return committer.commit(messages, kind=APPEND)


def _matching_row_ids(split: ReadSplit, prepared: PreparedScan, file_io: FileIO) -> np.ndarray:
    """The _ROW_IDs of the split's rows the condition matches (merged as a scan reads them)."""
    rows = read_split(split, prepared.plan.read_schema, prepared.plan.schemas, file_io)
    rows = rows.filter(prepared.predicate.to_arrow())
    return numpy_ints(rows.column(ROW_ID)) if rows.num_rows else np.zeros(0, dtype=np.int64)


def _vector_message(table: TableHandle, split: ReadSplit, row_ids: np.ndarray,
                    index_file: IndexFileMeta | None) -> CommitMessage:
    """The bucket's vectors with ``row_ids`` marked at their anchors, as one new index file."""
    anchors = sorted((data_evolution.anchor_file(g) for g in data_evolution.row_id_groups(split.files)
                      if g[0].first_row_id is not None), key=lambda f: f.first_row_id)
    # The bucket's vectors of files still live (a vector of a file gone would name no data).
    live = {f.file_name for f in split.files}
    old = read_index_file(table.file_io, table.path, index_file) if index_file is not None else {}
    vectors = {name: bitmap for name, bitmap in old.items() if name in live}
    for anchor, positions in _positions(anchors, row_ids).items():
        bitmap = vectors.get(anchor)
        if bitmap is None:
            bitmap = vectors[anchor] = bitmap_class()()
        bitmap.update(int(p) for p in positions)
    new_index = write_index_file(table.file_io, table.path, vectors, bitmap64=writes_bitmap64(table.schema.options))
    return CommitMessage(split.partition, split.bucket, table.schema.num_buckets, new_index_files=(new_index,),
                         deleted_index_files=(index_file,) if index_file is not None else ())


def _positions(anchors: Sequence[DataFileMeta], row_ids: np.ndarray) -> Mapping[str, list[int]]:
    """Anchor file name -> the positions of ``row_ids`` in its range."""
    starts = [a.first_row_id for a in anchors]
    out: dict[str, list[int]] = {}
    for row_id in row_ids.tolist():
        i = bisect.bisect_right(starts, row_id) - 1
        anchor = anchors[i]
        assert i >= 0 and row_id < anchor.first_row_id + anchor.row_count, row_id  # read from these files
        out.setdefault(anchor.file_name, []).append(row_id - anchor.first_row_id)
    return out


# ---- compaction ----------------------------------------------------------------------------
def move_deletion_vectors(table: TableHandle, snapshot: Any, messages: list[CommitMessage]) -> list[CommitMessage]:
    """A data-evolution compaction's messages with the deletion vectors moved, as Paimon 2.1's
    ``DataEvolutionCompactDeletionVectorRewriter`` moves them: the compacted file holds its
    bin's deleted rows too (row ids are kept), so each replaced range's vector (its anchor's)
    becomes positions of the compacted file, shifted by where the range starts in it. Each
    touched bucket's index file is replaced by one holding the vectors that stay and the
    moved ones (on the bucket's first message)."""
    index_files = bucket_index_files(table.file_io, table.path, snapshot)
    by_bucket: dict[tuple[bytes, int], list[int]] = {}
    for i, m in enumerate(messages):
        by_bucket.setdefault((m.partition, m.bucket), []).append(i)
    out = list(messages)
    for key, positions in by_bucket.items():
        index_file = index_files.get(key)
        if index_file is None:
            continue
        vectors = dict(read_index_file(table.file_io, table.path, index_file))
        for i in positions:
            _move(vectors, messages[i])
        first = positions[0]
        new_index = (write_index_file(table.file_io, table.path, vectors,
                                      bitmap64=writes_bitmap64(table.schema.options)),) \
            if any(map(len, vectors.values())) else ()
        out[first] = dataclasses.replace(messages[first], new_index_files=new_index, deleted_index_files=(index_file,))
    return out


def _move(vectors: dict[str, Any], message: CommitMessage) -> None:
    """Move the vectors of ``message``'s replaced ranges onto its compacted file, in place."""
    (after,) = message.compact_after
    merged = bitmap_class()()
    for group in data_evolution.row_id_groups(message.compact_before):
        anchor = data_evolution.anchor_file(group)
        old = vectors.get(anchor.file_name)
        if old is not None:
            shift = anchor.first_row_id - after.first_row_id
            merged.update(p + shift for p in old)
    for f in message.compact_before:  # none of the replaced files keeps a vector
        vectors.pop(f.file_name, None)
    if len(merged):
        vectors[after.file_name] = merged
