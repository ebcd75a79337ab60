"""The in-process engine: runs the kernels one group at a time in this Python process.

Used for small data, tests and the metadata-heavy commands; the Spark engine calls the
same kernels on executors, so both produce the same table for the same input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import pyarrow as pa

from core.commit import CommitMessage
from core.engines import ProgressCallback
from core.fileio import FileIO
from core.kernels.compact import CompactTask, compact_bucket
from core.kernels.read import ReadSplit, read_split
from core.kernels.write import WriteJob, write_bucket
from core.rows import group_rows, prepare_rows
from core.schema import TableSchema
from core.sources import read_input


@dataclass
class LocalEngine:
    progress: ProgressCallback | None = None
    name: str = "local"

    def _report(self, done: int, total: int, what: str) -> None:
        if self.progress is not None:
            self.progress(done, total, what)

    def read_input(self, path: str, fmt: str, hint: pa.Schema | None) -> pa.Table:
        return read_input(path, fmt, hint)

    def input_schema(self, data: pa.Table) -> pa.Schema:
        return data.schema

    def write(self, job: WriteJob, data: pa.Table, file_io: FileIO) -> tuple[list[CommitMessage], int]:
        """Validate every row first (nothing is written for bad input), then write per group."""
        rows = prepare_rows(data, job.schema, job.row_kind_column)
        groups = group_rows(rows, job.schema)
        messages = []
        for i, (values, bucket, group) in enumerate(groups):
            messages.append(write_bucket(job.task_for(values, bucket), group, file_io))
            self._report(i + 1, len(groups), "writing buckets")
        return messages, data.num_rows

    def read(self, splits: Sequence[ReadSplit], read_schema: TableSchema, schemas: Mapping[int, TableSchema],
             file_io: FileIO) -> Iterator[pa.Table]:
        for i, split in enumerate(splits):
            yield read_split(split, read_schema, schemas, file_io)
            self._report(i + 1, len(splits), "reading splits")

    def compact(self, tasks: Sequence[CompactTask], file_io: FileIO) -> list[CommitMessage]:
        """Run the compaction kernel bucket by bucket."""
        messages = []
        for i, task in enumerate(tasks):
            messages.append(compact_bucket(task, file_io))
            self._report(i + 1, len(tasks), "compacting buckets")
        return messages
