"""The in-process engine: runs the kernels in this Python process.

Used for small data, tests and the metadata-heavy commands; the Spark engine calls the
same kernels on executors, so both produce the same table for the same input.

Groups (buckets to write, splits to read, buckets to compact) run on a small thread pool:
the kernels spend their time in Arrow and Parquet code that releases the GIL, so the
machine's cores work in parallel. Results keep the group order, so the outcome is the same
as one at a time. ``LAKECTL_LOCAL_THREADS`` sets the pool size (1 = sequential).

A write whose input outgrows ``write-buffer-size`` streams: the input is read batch by batch
(an ``InputFile``, or slices of an Arrow table), each batch validated and routed into a
``WriteBuffer`` that spills to local disk, and then each group is read back and written in
turn. Reads hand over one split at a time. Either way memory follows the buffer and the
largest bucket, not the table.
"""

from __future__ import annotations

import os
import tempfile
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from typing import Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from core.commit import CommitMessage
from core.engines import ProgressCallback
from core.fileio import FileIO
from core.kernels.compact import CompactTask, compact_bucket
from core.kernels.read import ReadSplit, read_split
from core.kernels.write import WriteJob, write_bucket
from core.rows import group_indices, prepare_rows
from core.schema import TableSchema
from core.sources import BATCH_ROWS, InputFile, read_input
from core.write_buffer import BufferOptions, WriteBuffer


T = TypeVar("T")
R = TypeVar("R")


@dataclass
class LocalEngine:
    progress: ProgressCallback | None = None
    name: str = "local"

    def _report(self, done: int, total: int, what: str) -> None:
        if self.progress is not None:
            self.progress(done, total, what)

    def read_input(self, path: str, fmt: str, hint: pa.Schema | None) -> pa.Table | InputFile:
        """The input as a whole table or, for a Parquet or CSV file going into an existing
        table (``hint`` given), an ``InputFile`` that ``write`` reads batch by batch. Without a
        hint the table is about to be created from the input, and ``ops.write`` checks the
        whole input against it before creating it."""
        if hint is not None and InputFile.streams(path, fmt):
            return InputFile(path, fmt, hint)
        return read_input(path, fmt, hint)

    def input_schema(self, data: pa.Table | InputFile) -> pa.Schema:
        return data.schema() if isinstance(data, InputFile) else data.schema

    def write(self, job: WriteJob, data: pa.Table | InputFile, file_io: FileIO) -> tuple[list[CommitMessage], int]:
        """Validate every row first (nothing is written for bad input), then write per group.

        Input that fits ``write-buffer-size`` (or any input when ``write-buffer-spillable`` is
        false) is written from memory; larger input streams through a spilling WriteBuffer.
        Both write the same files.
        """
        options = BufferOptions.of(job.schema)
        if isinstance(data, InputFile):
            batches = data.batches()
            held: deque[pa.Table] = deque()
            size = 0
            for batch in batches:
                held.append(batch)
                size += batch.nbytes
                if options.spillable and size > options.size:
                    return self._write_streamed(job, _drain(held, batches), options.size, file_io)
            table = pa.concat_tables(held) if held else data.read_all()
            held.clear()
            return self._write_in_memory(job, table, file_io)
        if options.spillable and data.nbytes > options.size:
            slices = (data.slice(start, BATCH_ROWS) for start in range(0, data.num_rows, BATCH_ROWS))
            return self._write_streamed(job, slices, options.size, file_io)
        return self._write_in_memory(job, data, file_io)

    def _write_in_memory(self, job: WriteJob, data: pa.Table, file_io: FileIO) -> tuple[list[CommitMessage], int]:
        rows = prepare_rows(data, job.schema, job.row_kind_column)
        groups = group_indices(rows, job.schema, by_key=True)

        def write_group(group: tuple) -> CommitMessage:
            values, bucket, indices = group
            part = rows if indices is None else rows.take(pa.array(indices))
            return write_bucket(job.task_for(values, bucket), part, file_io)

        messages = list(self._in_order(write_group, groups, "writing buckets"))
        return messages, data.num_rows

    def _write_streamed(self, job: WriteJob, batches: Iterable[pa.Table], limit: int,
                        file_io: FileIO) -> tuple[list[CommitMessage], int]:
        """Route every batch into a spilling WriteBuffer (validating it: a bad row stops the
        write before any data file), then write group by group. Each group is sorted by key
        (input order among equal keys) as the in-memory write's grouping sorts it."""
        schema = job.schema
        keys = [(k, "ascending") for k in schema.trimmed_primary_keys] if schema.has_primary_key else []
        with tempfile.TemporaryDirectory(prefix="lakectl-spill-") as directory:
            buffer = WriteBuffer(schema, limit, directory)
            for batch in batches:
                buffer.add(prepare_rows(batch, schema, job.row_kind_column, row_offset=buffer.rows))

            def write_group(group: tuple) -> CommitMessage:
                values, bucket = group
                rows = buffer.take(group)
                if keys:
                    rows = rows.take(pc.sort_indices(rows, sort_keys=keys))
                return write_bucket(job.task_for(values, bucket), rows, file_io)

            messages = list(self._in_order(write_group, buffer.groups(), "writing buckets"))
        return messages, buffer.rows

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


def _drain(held: deque[pa.Table], rest: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """``held`` then ``rest``, letting go of each held batch once it is handed out."""
    while held:
        yield held.popleft()
    yield from rest


def local_threads() -> int:
    """Threads of the local engine: LAKECTL_LOCAL_THREADS, else the machine's cores (at most 8)."""
    text = os.environ.get("LAKECTL_LOCAL_THREADS", "")
    if text.strip().isdigit():
        return max(1, int(text))
    return max(1, min(8, os.cpu_count() or 1))
