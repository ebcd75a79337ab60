"""Streaming k-way merge of a bucket's sorted runs, in batches (Paimon's merge readers).

Each run is an iterator of tables sorted by the merge key, in which a key appears at most
once (Paimon folds a key's versions before it writes a run). Holding the current batch of
every run, the *frontier* is the smallest of the runs' last keys: every record of a key at or
below it is in memory now, from every run that has not ended, so those keys can be merged
completely. Each held batch is cut at the frontier, the heads are concatenated, put in merge
order (``MergeEngine.sorted``) and merged, and the tails wait for the next round. A run's
last batch does not bound the frontier (each run reads one batch ahead to know it), so the
rounds follow the batches of the long runs, not the number of runs. Memory is at most
(number of runs) x 2 batches, whatever the bucket holds; the output is the same
rows, in the same key order, as merging the whole bucket at once, because every key is
merged from all of its records in exactly one chunk.

See /work/shared/notes/merge-in-chunks.md for the design.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

import pyarrow as pa

from core.arrow_values import values_array
if TYPE_CHECKING:
    from core.kernels.merge import MergeEngine  # read.py reads append files with BATCH_ROWS alone

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
    """One run's current batch, the batch after it (read ahead, so that the last batch of a
    run is known as the last), and the rest of its stream; the first and last key of the
    current batch are kept, so a round compares tuples and touches Arrow only where it cuts."""

    def __init__(self, stream: Iterator[pa.Table], keys: list[str]):
        self.stream = stream
        self.keys = keys
        self.held: pa.Table | None = self._next()
        self.upcoming: pa.Table | None = self._next() if self.held is not None else None
        self._keys_of_held()

    def _next(self) -> pa.Table | None:
        for batch in self.stream:
            if batch.num_rows:
                return batch
        return None

    def _keys_of_held(self) -> None:
        if self.held is not None:
            self.first = _key_at(self.held, self.keys, 0)
            self.last = _key_at(self.held, self.keys, self.held.num_rows - 1)

    @property
    def more(self) -> bool:
        """Whether rows follow the current batch."""
        return self.upcoming is not None

    @property
    def rows(self) -> int:
        return (0 if self.held is None else self.held.num_rows) + \
            (0 if self.upcoming is None else self.upcoming.num_rows)

    def cut(self, frontier: tuple | None) -> pa.Table:
        """Take the rows of the current batch with a key at or below ``frontier`` (all of them
        for None); the rest stay, or the next batch comes up when none is left."""
        held = self.held
        if frontier is None or self.last <= frontier:
            n = held.num_rows
        else:
            n = _count_at_or_below(held, self.keys, frontier)
        if n == held.num_rows:
            self.held, self.upcoming = self.upcoming, (self._next() if self.upcoming is not None else None)
        else:
            self.held = held.slice(n)
        self._keys_of_held()
        return held.slice(0, n)


def merge_runs(engine: MergeEngine, runs: Sequence[Iterable[pa.Table]], *, alive_only: bool = False,
               columns: Sequence[str] | None = None) -> Iterator[pa.Table]:
    """The merged records of ``runs`` (each sorted by key, a key once per run), in chunks
    sorted by key; concatenated they equal ``engine.merge(engine.sorted(all rows))``.
    ``alive_only``: without the retracted keys, in ``columns`` (default all), as
    ``records.alive`` of that (``MergeEngine.merged_alive``).

    A round costs a tuple comparison per run and Arrow work only for the runs it cuts; runs
    that have no batch after the current one do not bound the frontier, so k runs of one
    batch each (k one-row commits) merge in one round, not k."""
    global peak_rows_held
    peak_rows_held = 0
    keys = list(engine.keys)
    live = [run for run in (_Run(iter(r), keys) for r in runs) if run.held is not None]
    while live:
        peak_rows_held = max(peak_rows_held, sum(run.rows for run in live))
        frontier = min((run.last for run in live if run.more), default=None)
        heads = []
        for run in live:
            if frontier is None or run.first <= frontier:
                heads.append(run.cut(frontier))
        live = [run for run in live if run.held is not None]
        chunk = pa.concat_tables(heads, promote_options="permissive") if len(heads) > 1 else heads[0]
        yield engine.merged_alive(chunk, columns) if alive_only else engine.merge(engine.sorted(chunk))


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


def _count_at_or_below(table: pa.Table, keys: list[str], frontier: tuple) -> int:
    """Rows of the key-sorted ``table`` whose key is <= ``frontier`` (they form a prefix)."""
    import pyarrow.compute as pc

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
