"""Streaming k-way merge of a bucket's sorted runs, in batches (Paimon's merge readers).

Each run is an iterator of tables sorted by the merge key, in which a key appears at most
once (Paimon folds a key's versions before it writes a run). Holding the current batch of
every run, the *frontier* is the smallest of the runs' last keys: every record of a key at or
below it is in memory now, from every run that has not ended, so those keys can be merged
completely. Each held batch is cut at the frontier, the heads are concatenated, put in merge
order (``MergeEngine.sorted``) and merged, and the tails wait for the next round. Memory is
about (number of runs) x (batch size), whatever the bucket holds; the output is the same
rows, in the same key order, as merging the whole bucket at once, because every key is
merged from all of its records in exactly one chunk.

See /work/shared/notes/merge-in-chunks.md for the design.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from core.arrow_values import values_array
from core.kernels.merge import MergeEngine

# Rows per batch a run is sliced into before it is merged; small values are for tests.
BATCH_ROWS = 64 * 1024

# The most rows held in run buffers at once during the last merge (an instrumented counter for
# tests that memory follows runs x batch size, not the bucket's rows).
peak_rows_held = 0


def batches(tables: Iterable[pa.Table], batch_rows: int | None = None) -> Iterator[pa.Table]:
    """The rows of ``tables`` in order, as slices of at most ``batch_rows`` rows."""
    size = batch_rows or BATCH_ROWS
    for table in tables:
        for start in range(0, table.num_rows, size):
            yield table.slice(start, size)


class _Run:
    """One run's current batch and the rest of its stream."""

    def __init__(self, stream: Iterator[pa.Table]):
        self.stream = stream
        self.held: pa.Table | None = None
        self.ended = False

    def refill(self) -> None:
        """Read batches until one has rows or the stream ends."""
        while (self.held is None or self.held.num_rows == 0) and not self.ended:
            self.held = next(self.stream, None)
            if self.held is None:
                self.ended = True

    @property
    def rows(self) -> int:
        return 0 if self.held is None else self.held.num_rows


def merge_runs(engine: MergeEngine, runs: Sequence[Iterable[pa.Table]], *, alive_only: bool = False,
               columns: Sequence[str] | None = None) -> Iterator[pa.Table]:
    """The merged records of ``runs`` (each sorted by key, a key once per run), in chunks
    sorted by key; concatenated they equal ``engine.merge(engine.sorted(all rows))``.
    ``alive_only``: without the retracted keys, in ``columns`` (default all), as
    ``records.alive`` of that (``MergeEngine.merged_alive``)."""
    global peak_rows_held
    peak_rows_held = 0
    keys = list(engine.keys)
    state = [_Run(iter(r)) for r in runs]
    while True:
        for run in state:
            if run.rows == 0:
                run.refill()
        live = [run for run in state if run.rows > 0]
        if not live:
            return
        peak_rows_held = max(peak_rows_held, sum(run.rows for run in live))
        frontier = _frontier(state, keys)
        heads = [_cut(run, keys, frontier) for run in live]
        heads = [h for h in heads if h.num_rows]
        chunk = pa.concat_tables(heads, promote_options="permissive") if len(heads) > 1 else heads[0]
        yield engine.merged_alive(chunk, columns) if alive_only else engine.merge(engine.sorted(chunk))


def _frontier(state: Sequence[_Run], keys: list[str]) -> tuple | None:
    """The smallest last key of the held batches of runs that may still have more rows; None
    when every run with rows has ended (all held rows can be merged)."""
    lasts = [_key_at(run.held, keys, run.rows - 1) for run in state if run.rows > 0 and not run.ended]
    return min(lasts) if lasts else None


def _key_at(table: pa.Table, keys: list[str], i: int) -> tuple:
    return tuple(_comparable(table.column(k).slice(i, 1))[0].as_py() for k in keys)


def _comparable(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """The key column in a type whose Python values order as Arrow sorts it: temporal types as
    their integers (a nanosecond timestamp has no exact Python datetime; converting it would
    also import pandas)."""
    if pa.types.is_temporal(column.type):
        width = pa.int32() if pa.types.is_date32(column.type) or column.type == pa.time32("s") \
            or column.type == pa.time32("ms") else pa.int64()
        return column.cast(width)
    return column


def _cut(run: _Run, keys: list[str], frontier: tuple | None) -> pa.Table:
    """Take the rows of ``run``'s batch with a key at or below ``frontier``; keep the rest."""
    held = run.held
    n = held.num_rows if frontier is None else _count_at_or_below(held, keys, frontier)
    run.held = held.slice(n)
    return held.slice(0, n)


def _count_at_or_below(table: pa.Table, keys: list[str], frontier: tuple) -> int:
    """Rows of the key-sorted ``table`` whose key is <= ``frontier`` (they form a prefix)."""
    if _key_at(table, keys, table.num_rows - 1) <= frontier:
        return table.num_rows
    if _key_at(table, keys, 0) > frontier:
        return 0
    # Lexicographic key <= frontier, built from the last key column backwards.
    below = None
    for name, value in reversed(list(zip(keys, frontier))):
        col = _comparable(table.column(name))
        bound = values_array([value], col.type)[0]  # not pa.scalar: a first one imports pandas
        less = pc.less(col, bound)
        equal = pc.equal(col, bound)
        below = pc.or_(less, equal) if below is None else pc.or_(less, pc.and_(equal, below))
    # the true values counted by Arrow (a chunked array's to_numpy would import pandas)
    return int(pc.sum(below).as_py() or 0)
