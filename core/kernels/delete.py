"""The per-group work of ``delete``, shared by the local and the Spark engine.

- ``MatchingRows`` describes the rows a primary-key delete turns into ``-D`` records: the
  scan's splits and the predicate. Each engine reads it its own way (the local engine split by
  split in this process, the Spark engine on its executors straight into its write shuffle);
  ``matching_parts`` filters what they read, the same way on both; ``count_matches`` counts
  one split's for a dry run.
- ``rewrite_bucket`` is an append table's delete of one (partition, bucket): each candidate
  file read whole, the matching rows dropped, the rest written as a new file of the bucket.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.commit import CommitMessage
from core.default_values import fill_defaults
from core.fileio import FileIO
from core.kernels.read import ReadSplit, read_split
from core.kernels.write import WriteTask, write_bucket
from core.predicate import Predicate
from core.schema import TableSchema


# ---- primary-key tables ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MatchingRows:
    """The rows of ``splits`` (merged by key, as a scan reads them) that ``where`` matches,
    as write input: every table column plus ``kind_column`` saying ``-D``."""

    splits: tuple[ReadSplit, ...]
    read_schema: TableSchema
    schemas: Mapping[int, TableSchema]
    where: str
    kind_column: str


def matching_parts(rows: MatchingRows, parts: Iterable[pa.Table]) -> Iterator[pa.Table]:
    """The matching rows of each part read from ``rows.splits``, with the ``-D`` kind column
    (empty parts dropped). The whole rows go into the -D records, not only the keys, as
    Paimon's Spark DELETE writes them: the input changelog producer stores them as they are."""
    from core.where import parse_where  # sqlglot: loaded by a delete, not by every engine's import

    predicate = parse_where(rows.where, rows.read_schema.fields)
    for part in parts:
        part = part.filter(predicate.to_arrow())
        if part.num_rows:
            yield part.append_column(rows.kind_column, pa.array(["-D"] * part.num_rows, pa.string()))


def count_matches(split: ReadSplit, rows: MatchingRows, file_io: FileIO) -> int:
    """The matching rows of one split (``rows`` gives the schemas and the filter; its own
    splits are ignored, so a task ships one split): a dry run's count."""
    read = read_split(split, rows.read_schema, rows.schemas, file_io)
    return sum(part.num_rows for part in matching_parts(rows, [read]))


# ---- append tables -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RewriteTask:
    """One (partition, bucket) of an append table to delete from; small and picklable."""

    write: WriteTask  # where the rewrites go; its start_sequence continues the bucket's numbers
    split: ReadSplit  # the bucket's candidate files and their deletion vectors
    read_schema: TableSchema
    schemas: Mapping[int, TableSchema]
    predicate: Predicate
    dry_run: bool = False  # count only, write nothing


@dataclass(frozen=True, slots=True)
class RewriteOutcome:
    partition: bytes
    bucket: int
    matched: int  # rows the predicate matched
    files_removed: int  # files holding a matching row
    files_rewritten: int  # of those, files with rows left, written anew
    message: CommitMessage | None  # None: a dry run, or nothing matched


def matches(rows: pa.Table, predicate: Predicate) -> pa.Array:
    """Boolean mask of the rows the predicate holds for (null counts as no: SQL's DELETE
    removes only rows whose condition is true)."""
    numbered = rows.append_column("__row", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    hit = numbered.filter(predicate.to_arrow()).column("__row")
    return pc.is_in(numbered.column("__row"), value_set=hit.combine_chunks())


def rewrite_bucket(task: RewriteTask, file_io: FileIO) -> RewriteOutcome:
    """Delete the matching rows from one bucket's candidate files.

    Each file is read alone and whole (deletion vector applied, no row-group pruning: the rows
    that stay must all be read); a file without matching rows is left alone, one whose rows
    all match is dropped without a rewrite, any other is written again without them. The
    replaced files travel as ``compact_before``, which the commit turns into DELETE entries
    (and a conflict if another commit removed one first). Memory: one file at a time."""
    split, write = task.split, task.write
    sequence = write.start_sequence
    new_files: list = []
    replaced: list = []
    matched = rewritten = 0
    for meta in split.files:
        single = replace(split, files=(meta,), predicate=None,
                         deletion_files=tuple(d for d in split.deletion_files if d[0] == meta.file_name))
        # Rows are matched as reads show them (default values filled) but rewritten as stored:
        # Paimon's files keep the nulls.
        rows = read_split(single, task.read_schema, task.schemas, file_io, defaults=False)
        mask = matches(fill_defaults(rows, task.read_schema), task.predicate)
        hits = pc.sum(pc.cast(mask, pa.int64())).as_py() or 0
        if not hits:
            continue
        matched += hits
        replaced.append(meta)
        kept = rows.filter(pc.invert(mask))
        if not kept.num_rows:
            continue
        rewritten += 1
        if not task.dry_run:
            # Each rewrite continues the bucket's sequence numbers after the previous one. The
            # rows come from the table in its types (an append table: no row kinds to add).
            done = write_bucket(replace(write, start_sequence=sequence), kept.select(write.schema.field_names),
                                file_io)
            new_files.extend(done.new_files)
        sequence += kept.num_rows
    message = None
    if replaced and not task.dry_run:
        message = CommitMessage(write.partition, write.bucket, write.total_buckets, new_files=tuple(new_files),
                                compact_before=tuple(replaced))
    return RewriteOutcome(write.partition, write.bucket, matched, len(replaced), rewritten, message)
