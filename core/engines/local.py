"""The in-process engine: runs the kernels in this Python process.

Used for small data, tests and the metadata-heavy commands; the Spark engine calls the
same kernels on executors, so both produce the same table for the same input.

Groups (buckets to write, splits to read, buckets to compact) run on a small thread pool:
the kernels spend their time in Arrow and Parquet code that releases the GIL, so the
machine's cores work in parallel. Results keep the group order, so the outcome is the same
as one at a time. ``LAKECTL_LOCAL_THREADS`` sets the pool size (1 = sequential).

Writes stream: the input is read batch by batch (an ``InputFile``, or slices of an Arrow
table), each batch validated and routed into a ``WriteBuffer`` that spills to local disk past
``write-buffer-size``, and then each group is written in turn. Reads hand over each split part
by part as it is read (a merged split chunk by chunk): a few splits are read at once on the
pool, each a few parts ahead of the reader. Memory follows the buffer and the largest bucket
when writing, and a few parts per split being read when reading, not the table.

Dynamic-bucket tables: batches are still checked and their key hashes computed on the pool,
but buckets are assigned on the calling thread in input order (``core.dynamic_bucket``), as
Java's single assigner sees the records.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence, TypeVar

import numpy as np
import pyarrow as pa

from core.arrow_values import sole_int_key, stable_int_order
from core.engines.settings import ProgressCallback
from core.fileio import FileIO
from core.schema import TableSchema

# The write side (routing, buffering, file writing, commit messages) is imported by the
# methods that write, and the read side by those that read: a scan or lookup does not load the
# write side (about 0.04 CPU s of a process), nor a write the read kernels and predicates.
if TYPE_CHECKING:
    from core.commit import CommitMessage
    from core.kernels.compact_plan import CompactTask
    from core.kernels.delete import MatchingRows
    from core.kernels.read import ReadSplit
    from core.kernels.write import WriteJob
    from core.sources import InputFile, InputFiles
    from core.write_buffer import GroupKey, Routed


T = TypeVar("T")
R = TypeVar("R")


@dataclass
class LocalEngine:
    progress: ProgressCallback | None = None
    name: str = "local"

    def _report(self, done: int, total: int, what: str) -> None:
        if self.progress is not None:
            self.progress(done, total, what)

    def read_input(self, paths: list[str], fmt: str, hint: pa.Schema | None,
                   whole: bool = False) -> pa.Table | InputFiles:
        """The input files as ``InputFiles`` that ``write`` reads batch by batch when they go
        into an existing table; else (``whole``, or no ``hint``) as a whole table: the table
        is about to be created from the input, and ``ops.write`` checks the whole input
        against it before creating it."""
        from core.sources import InputFiles, read_inputs

        if hint is not None and paths != ["-"] and not whole:  # stdin is read once, whole
            return InputFiles(tuple(paths), fmt, hint)
        return read_inputs(paths, fmt, hint)

    def input_schema(self, data: pa.Table) -> pa.Schema:
        return data.schema  # the input of a table still to be created is read whole

    def input_columns(self, data: pa.Table | InputFiles) -> list[str]:
        return data.column_names if isinstance(data, pa.Table) else data.column_names()

    def write(self, job: WriteJob, data: pa.Table | InputFile | InputFiles | MatchingRows,
              file_io: FileIO) -> tuple[list[CommitMessage], int]:
        """Validate and route every row into a WriteBuffer first (a bad row stops the write
        before any data file), then write group by group.

        ``MatchingRows`` (a delete's -D records) are read split by split here and routed as
        they come, so the rows a delete removes pass through the buffer, never whole in memory.

        The input comes a batch at a time (an ``InputFile``, or slices of an Arrow table); the
        buffer holds the routed rows up to ``write-buffer-size`` and spills the rest to local
        disk (unless ``write-buffer-spillable`` is false). Each group is then sorted by key
        (input order among equal keys) on the thread pool and written by the kernel.
        """
        from core.kernels.write import write_bucket
        from core.rows import prepare_rows
        from core.sources import InputFile, InputFiles
        from core.tempdirs import spill_prefix, sweep_now_and_then
        from core.write_buffer import WriteBuffer, route

        schema = job.schema
        options = schema.core_options
        whole = whole_batch_bytes(options.write_buffer_size)
        if isinstance(data, (InputFile, InputFiles)):
            # Decoding the next batch (Arrow, off the GIL) overlaps routing this one.
            batches = _whole_or_streamed(data.batches() if local_threads() <= 1 else _read_ahead(data.batches()),
                                         whole)
        elif isinstance(data, pa.Table):
            # listed: a table of one batch is then routed without the pool
            batches = list(_slices(data, whole))
        else:
            # a delete's MatchingRows; the read and delete kernels (and the predicate module
            # they use) are imported by the commands that read, not by every write
            from core.kernels.delete import matching_parts

            batches = matching_parts(data, self.read(data.splits, data.read_schema, data.schemas, file_io))
        keys = schema.trimmed_primary_keys if schema.has_primary_key else []
        assigner = job.assigner

        def route_batch(item: tuple[int, pa.Table]) -> Routed | tuple[pa.Table, np.ndarray]:
            offset, batch = item
            rows = prepare_rows(batch, schema, job.row_kind_column, row_offset=offset)
            if assigner is not None:
                return rows, assigner.hashes(rows)  # buckets are assigned below, in input order
            return route(rows, schema)

        sweep_now_and_then()  # spill directories of killed writes (core.tempdirs)
        import tempfile  # here: the spill directory of a write (a read makes none)

        with tempfile.TemporaryDirectory(prefix=spill_prefix()) as directory:
            buffer = WriteBuffer(schema, options.write_buffer_size if options.write_buffer_spillable else None, directory)
            # Batches are checked and routed on the pool, and added in input order: the first
            # bad row in input order is the one reported.
            numbered = _numbered(batches)
            for routed in self._in_order(route_batch, list(numbered) if isinstance(batches, list) else numbered,
                                         "routing input"):
                if assigner is not None:
                    rows, hashes = routed
                    routed = route(rows, schema, assigner.bucket_column(rows, hashes))
                buffer.add(routed)

            def write_group(group: GroupKey) -> CommitMessage:
                values, bucket = group
                rows = buffer.take(group)
                if keys and bucket != -2:  # postponed rows keep their input order (core.postpone)
                    rows = _sorted_by_key(rows, keys)
                return write_bucket(job.task_for(values, bucket), rows, file_io)

            groups = buffer.groups()
            # Small groups are written on this thread (see SMALL_GROUP_BYTES)
            threads = 1 if buffer.nbytes < SMALL_GROUP_BYTES * len(groups) else None
            messages = list(self._in_order(write_group, groups, "writing buckets", threads=threads))
        return messages, buffer.rows

    def read(self, splits: Sequence[ReadSplit], read_schema: TableSchema, schemas: Mapping[int, TableSchema],
             file_io: FileIO) -> Iterator[pa.Table]:
        """Each split's rows as one table, in split order (for callers that pair splits with
        their rows, such as lookups)."""
        from core.kernels.read import read_split

        return self._key_bounded_or(splits, read_schema, schemas, file_io, lambda: self._in_order(
            lambda split: read_split(split, read_schema, schemas, file_io), splits, "reading splits"))

    def read_parts(self, splits: Sequence[ReadSplit], read_schema: TableSchema, schemas: Mapping[int, TableSchema],
                   file_io: FileIO) -> Iterator[pa.Table]:
        """The splits' rows in split order, each split part by part as it is read
        (``read_split_parts``): what a scan writes out, never a whole split at once."""
        from core.kernels.read import read_split_parts

        return self._key_bounded_or(splits, read_schema, schemas, file_io, lambda: self._in_order_parts(
            lambda split: read_split_parts(split, read_schema, schemas, file_io), splits, "reading splits"))

    def _key_bounded_or(self, splits: Sequence[ReadSplit], read_schema: TableSchema,
                        schemas: Mapping[int, TableSchema], file_io: FileIO,
                        otherwise: Callable[[], Iterator[pa.Table]]) -> Iterator[pa.Table]:
        """Each split's rows from one merge across all splits where a key condition leaves
        few records (``key_read``), else ``otherwise()``: split by split on the pool."""
        if not read_schema.has_primary_key:  # key_read's first test, without importing it
            yield from otherwise()
            return
        from core.kernels import key_read

        if key_read.eligible(splits, read_schema, file_io):
            tables = key_read.read_key_bounded(splits, read_schema, schemas, file_io)
            if tables is not None:
                self._report(len(splits), len(splits), "reading splits")
                yield from tables
                return
        yield from otherwise()

    def compact(self, tasks: Sequence["CompactTask"], file_io: FileIO) -> list[CommitMessage]:
        """Run the compaction kernel per bucket."""
        from core.kernels.compact import compact_bucket  # not loaded by an engine that only writes or reads

        return list(self._in_order(lambda task: compact_bucket(task, file_io), tasks, "compacting buckets"))

    def run_tasks(self, work: Callable[[T], R], tasks: Sequence[T], what: str) -> list[R]:
        """``work`` (a module-level function: the Spark engine ships it) on each task."""
        return list(self._in_order(work, tasks, what))

    def _in_order(self, work: Callable[[T], R], items: Sequence[T] | Iterator[T], what: str,
                  threads: int | None = None) -> Iterator[R]:
        """``work`` over ``items`` on the thread pool (of ``threads``, else ``local_threads()``),
        results in item order; at most threads + 1 results wait unread, so a reader's memory
        stays a few splits. An iterator of items is drawn as the pool needs them (progress
        then reports no total)."""
        total = len(items) if isinstance(items, Sequence) else 0
        threads = local_threads() if threads is None else threads
        if threads <= 1 or (isinstance(items, Sequence) and total <= 1):
            for i, item in enumerate(items):
                yield work(item)
                self._report(i + 1, total, what)
            return
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lakectl") as pool:
            pending: deque[Future[R]] = deque()
            queue = iter(items)
            failed: list[Exception] = []

            def draw(count: int) -> None:
                # An item that cannot be drawn (an unreadable input batch) fails the run
                # after the items before it, whose own errors come first in item order.
                if failed:
                    return
                try:
                    for item in islice(queue, count):
                        pending.append(pool.submit(work, item))
                except Exception as e:
                    failed.append(e)

            draw(threads + 1)
            done = 0
            while pending:
                result = pending.popleft().result()
                draw(1)
                done += 1
                self._report(done, total, what)
                yield result
            if failed:
                raise failed[0]


    def _in_order_parts(self, work: Callable[[T], Iterator[R]], items: Sequence[T], what: str) -> Iterator[R]:
        """The parts ``work`` yields for each item, item after item. Up to threads + 1 items
        are worked on at once on the pool, each at most ``PARTS_AHEAD`` parts ahead of the
        reader (a bounded queue), so an item is never held whole; closing the iterator early
        (a ``--limit``) stops the workers."""
        threads = local_threads()
        if threads <= 1 or len(items) <= 1:
            for i, item in enumerate(items):
                yield from work(item)
                self._report(i + 1, len(items), what)
            return
        stop = threading.Event()
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lakectl") as pool:
            pending: deque[tuple[Future[None], queue.Queue]] = deque()
            todo = iter(items)

            def submit() -> None:
                for item in islice(todo, 1):
                    parts: queue.Queue = queue.Queue(maxsize=PARTS_AHEAD)
                    pending.append((pool.submit(_pump, work, item, parts, stop), parts))

            try:
                for _ in range(threads + 1):
                    submit()
                done = 0
                while pending:
                    future, parts = pending[0]
                    while (part := parts.get()) is not _END:
                        yield part
                    future.result()  # the worker's error, if it failed
                    pending.popleft()
                    submit()
                    done += 1
                    self._report(done, len(items), what)
            finally:
                # The reader stopped early or failed: workers not started are dropped, one
                # waiting to hand over a part gives up, and the pool then closes.
                for future, _ in pending:
                    future.cancel()
                stop.set()


# Arrow bytes per (partition, bucket) group, on average, below which a write's groups are
# written one after the other on the calling thread. A small group's file costs about a
# millisecond, most of it Python holding the GIL (stats, metadata, the writer's set-up), so a
# second thread mostly trades the GIL back and forth: on the bench's small commits (upsert of
# 15,000 rows into 32 groups, ~470 rows or ~37 KiB each) the pool took ~30% more CPU for no
# gain in wall time (bench/small_commits.py). Larger groups spend their time encoding, off the
# GIL. Measured on 2 cores (the suite's base rows into 32 groups, medians of 6 warm writes in
# 3 alternating processes each): at ~60 KiB a group the pool gained no wall time; at ~250 KiB
# wall 0.75-0.9x for 1.15-1.4x the CPU; at ~375 KiB and ~500 KiB wall 0.6-0.75x for
# 1.05-1.2x the CPU. The pool is taken from 256 KiB a group.
SMALL_GROUP_BYTES = 256 << 10

# Arrow bytes of input up to which a write routes it as one batch (``_slices``). Measured on 2
# cores, the suite's rows, whole against sliced in the same process (alternating, medians of
# 12-16, three runs): the 1M-row table's upsert of 75,000 rows (5.9 MB, two slices) 0.78-0.86x
# the CPU and wall time, the same rows from a Parquet file 0.82-0.99x; a 200k-row base write
# (15 MB) 0.94x the CPU at the same wall time; a 1M-row base write (78 MB) 0.97x the CPU but
# 1.33x the wall time, where routing its 16 slices on two threads pays.
WHOLE_BATCH_BYTES = 32 << 20

# Parts a split's worker may have read ahead of the reader (a bounded queue per split).
PARTS_AHEAD = 2


def _pump(work: Callable[[T], Iterator[R]], item: T, parts: queue.Queue, stop: threading.Event) -> None:
    """Put ``work(item)``'s parts into ``parts``, then ``_END`` (also after an error, which the
    future then raises); give up once ``stop`` is set (the reader went away)."""
    stream = work(item)
    try:
        for part in stream:
            if not _put(parts, part, stop):
                return
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        _put(parts, _END, stop)


def _put(parts: queue.Queue, item: object, stop: threading.Event) -> bool:
    """Put ``item`` into the bounded queue, waiting for room unless ``stop`` is set."""
    while not stop.is_set():
        try:
            parts.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _sorted_by_key(rows: pa.Table, keys: list[str]) -> pa.Table:
    """``rows`` sorted by ``keys``, stably; as they are when a single integer key is already in
    order (``write_buffer.route`` sorts a batch's groups so), saving a take of every column."""
    values = sole_int_key(rows, keys)
    if values is not None and np.all(values[1:] >= values[:-1]):
        return rows
    return rows.take(_key_order(rows, keys, values))


def _key_order(rows: pa.Table, keys: list[str], values: np.ndarray | None) -> pa.Array:
    """Indices that sort ``rows`` by ``keys`` ascending, stably (input order among equal keys).

    A single integer key (never null: ``prepare_rows`` refuses null keys) is sorted by numpy
    (``stable_int_order``), several times faster than Arrow's sort on a group's rows.
    ``values``: the key's values where it is such a key (``sole_int_key``), else None."""
    if values is not None:
        return pa.array(stable_int_order(values))
    import pyarrow.compute as pc  # its import parses every function's docstring: only where it sorts

    return pc.sort_indices(rows, sort_keys=[(k, "ascending") for k in keys])


_END = object()


def _read_ahead(items: Iterator[T]) -> Iterator[T]:
    """``items`` in order, the next one produced on a helper thread while the caller works
    on the current one (one item ahead)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lakectl-read") as pool:
        ahead = pool.submit(next, items, _END)
        while True:
            item = ahead.result()
            if item is _END:
                return
            ahead = pool.submit(next, items, _END)
            yield item


def _numbered(batches: Iterator[pa.Table]) -> Iterator[tuple[int, pa.Table]]:
    """Each batch with the number of input rows before it."""
    offset = 0
    for batch in batches:
        yield offset, batch
        offset += batch.num_rows


def whole_batch_bytes(write_buffer_size: int) -> int:
    """Arrow bytes up to which a write's input is routed as one batch (``_slices``): at most
    half the write buffer, which holds that much anyway."""
    return min(WHOLE_BATCH_BYTES, write_buffer_size // 2)


def _whole_or_streamed(batches: Iterator[pa.Table], whole_bytes: int) -> Iterator[pa.Table]:
    """An input read batch by batch as one batch when all of it holds at most ``whole_bytes``
    of Arrow data and its batches share one schema (as ``_slices`` routes a small table
    whole); else its batches as they come, holding at most that much plus a batch."""
    held: list[pa.Table] | None = []
    size = 0
    try:
        for batch in batches:
            if held is None:
                yield batch
                continue
            held.append(batch)
            size += batch.nbytes
            if size > whole_bytes or not batch.schema.equals(held[0].schema):
                yield from held
                held = None
    except Exception:
        # A later batch is unreadable: the rows before it are checked first, so that the
        # first bad row in input order is the one reported.
        if held:
            yield from held
        raise
    if held:
        yield pa.concat_tables(held) if len(held) > 1 else held[0]


def _slices(data: pa.Table, whole_bytes: int) -> Iterator[pa.Table]:
    """An Arrow table as one batch when it has at most ``whole_bytes`` of Arrow data, else as
    zero-copy slices of BATCH_ROWS rows (an empty table as itself, so its columns are still
    checked).

    Routed whole, a table takes one thread and one take, and each group arrives in key order
    (``write_buffer._by_key``). Sliced, the slices are routed on the pool, and every group
    gathered from several slices is sorted and taken again when written. See
    ``WHOLE_BATCH_BYTES`` for where each pays.
    """
    from core.sources import BATCH_ROWS

    if data.num_rows == 0 or data.nbytes <= whole_bytes:
        yield data
        return
    for start in range(0, data.num_rows, BATCH_ROWS):
        yield data.slice(start, BATCH_ROWS)


def local_threads() -> int:
    """Threads of the local engine: LAKECTL_LOCAL_THREADS, else the machine's cores (at most 8)."""
    text = os.environ.get("LAKECTL_LOCAL_THREADS", "")
    if text.strip().isdigit():
        return max(1, int(text))
    return max(1, min(8, os.cpu_count() or 1))
