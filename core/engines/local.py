"""The in-process engine: runs the kernels one group at a time in this Python process.

Used for small data, tests and the metadata-heavy commands; the Spark engine calls the
same kernels on executors, so both produce the same table.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa

from core.commit import CommitMessage
from core.fileio import FileIO
from core.kernels.read import ReadSplit, read_split
from core.kernels.write import WriteTask, write_bucket
from core.schema import TableSchema


class LocalEngine:
    name = "local"

    def write(self, tasks: Iterable[tuple[WriteTask, pa.Table]], file_io: FileIO) -> list[CommitMessage]:
        return [write_bucket(task, rows, file_io) for task, rows in tasks]

    def read(self, splits: Sequence[ReadSplit], read_schema: TableSchema, schemas: Mapping[int, TableSchema],
             file_io: FileIO) -> Iterator[pa.Table]:
        for split in splits:
            yield read_split(split, read_schema, schemas, file_io)
