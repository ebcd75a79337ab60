"""The in-process engine: runs the kernels in this Python process.

Used for small data, tests and the metadata-heavy commands; the Spark engine calls the
same kernels on executors, so both produce the same table for the same input.

Groups (buckets to write, splits to read, buckets to compact) run on a small thread pool:
the kernels spend their time in Arrow and Parquet code that releases the GIL, so the
machine's cores work in parallel. Results keep the group order, so the outcome is the same
as one at a time. ``LAKECTL_LOCAL_THREADS`` sets the pool size (1 = sequential).
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from typing import Callable, Iterator, Mapping, Sequence, TypeVar

import pyarrow as pa

from core.commit import CommitMessage
from core.engines import ProgressCallback
from core.fileio import FileIO
from core.kernels.compact import CompactTask, compact_bucket
from core.kernels.read import ReadSplit, read_split
from core.kernels.write import WriteJob, write_bucket
from core.rows import group_indices, prepare_rows
from core.schema import TableSchema
from core.sources import read_input


T = TypeVar("T")
R = TypeVar("R")


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
        groups = group_indices(rows, job.schema, by_key=True)

        def write_group(group: tuple) -> CommitMessage:
            values, bucket, indices = group
            part = rows if indices is None else rows.take(pa.array(indices))
            return write_bucket(job.task_for(values, bucket), part, file_io)

        messages = list(self._in_order(write_group, groups, "writing buckets"))
        return messages, data.num_rows

    def read(self, splits: Sequence[ReadSplit], read_schema: TableSchema, schemas: Mapping[int, TableSchema],
             file_io: FileIO) -> Iterator[pa.Table]:
        return self._in_order(lambda split: read_split(split, read_schema, schemas, file_io), splits,
                              "reading splits")

    def compact(self, tasks: Sequence[CompactTask], file_io: FileIO) -> list[CommitMessage]:
        """Run the compaction kernel per bucket."""
        return list(self._in_order(lambda task: compact_bucket(task, file_io), tasks, "compacting buckets"))

    def _in_order(self, work: Callable[[T], R], items: Sequence[T], what: str) -> Iterator[R]:
        """``work`` over ``items`` on the thread pool, results in item order; at most
        threads + 1 results wait unread, so a reader's memory stays a few splits."""
        total = len(items)
        threads = local_threads()
        if threads <= 1 or total <= 1:
            for i, item in enumerate(items):
                yield work(item)
                self._report(i + 1, total, what)
            return
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lakectl") as pool:
            pending: deque[Future[R]] = deque()
            queue = iter(items)
            for item in islice(queue, threads + 1):
                pending.append(pool.submit(work, item))
            done = 0
            while pending:
                result = pending.popleft().result()
                for item in islice(queue, 1):
                    pending.append(pool.submit(work, item))
                done += 1
                self._report(done, total, what)
                yield result


def local_threads() -> int:
    """Threads of the local engine: LAKECTL_LOCAL_THREADS, else the machine's cores (at most 8)."""
    text = os.environ.get("LAKECTL_LOCAL_THREADS", "")
    if text.strip().isdigit():
        return max(1, int(text))
    return max(1, min(8, os.cpu_count() or 1))
