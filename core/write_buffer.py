"""The local engine's write buffer: input rows routed to their (partition, bucket) group, held
in memory up to ``write-buffer-size`` and spilled to Arrow IPC files past it, then handed out
one group at a time.

Paimon's writers share a buffer of ``write-buffer-size`` (256 MiB by default) and, when
``write-buffer-spillable``, spill it to local disk when it fills. Here that bounds what a
large write holds: the buffer, one input batch and the groups being written, not the table.
Spill files live in a local temporary directory that the caller removes; nothing here touches
the table, so input that fails validation halfway leaves nothing behind.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.arrow_values import int_array, sole_int_key, stable_int_order
from core.rows import group_indices, py_values
from core.schema import TableSchema

GroupKey = tuple[tuple[Any, ...], int]  # (partition values, bucket)


@dataclass(frozen=True, slots=True)
class Routed:
    """One batch of prepared rows split into its groups (``route``)."""

    parts: list[tuple[GroupKey, pa.Table]]  # zero-copy slices of the batch put in group order
    partition_values: list[list[Any]]  # per partition column: its values by first appearance
    rows: int
    nbytes: int


def route(rows: pa.Table, schema: TableSchema, buckets: np.ndarray | None = None) -> Routed:
    """Split one batch of prepared rows (``core.rows.prepare_rows``) by (partition, bucket);
    ``buckets`` gives each row's bucket when a dynamic-bucket assigner chose them.

    One take puts the batch in group order (input order within a group, or, for a table whose
    key is a single integer column, key order, stably: see ``_by_key``); each group gets a
    zero-copy slice of it. A pure function of the batch, so batches can be routed in parallel
    and added to the buffer in input order.
    """
    groups = _by_key(group_indices(rows, schema, buckets), rows, schema)
    ordered = rows
    if groups and groups[0][2] is not None:
        order = np.concatenate([indices for _, _, indices in groups])
        # over numpy's buffer (int_array): pa.array of a numpy array imports numpy.ma
        ordered = rows.take(int_array(order) if order.dtype in (np.int32, np.int64) else pa.array(order))
    parts = []
    start = 0
    for values, bucket, indices in groups:
        count = rows.num_rows if indices is None else len(indices)
        parts.append(((values, bucket), ordered.slice(start, count)))
        start += count
    values = [py_values(pc.unique(rows.column(key))) for key in schema.partition_keys]
    return Routed(parts, values, rows.num_rows, ordered.nbytes)


def _by_key(groups: list[tuple[tuple[Any, ...], int, np.ndarray | None]], rows: pa.Table,
            schema: TableSchema) -> list[tuple[tuple[Any, ...], int, np.ndarray | None]]:
    """``groups`` (``group_indices``) with each group's indices in key order, stably, when the
    table's key is a single integer column (never null in prepared rows); else as given.

    The writer sorts each group by key (stably: input order among equal keys) before writing.
    Done here, in the one take that routes the batch, the group of a one-batch write arrives
    sorted and needs no second take of its own, which on a small commit's few hundred rows
    per group costs more than the sort. Sorting each batch's part stably keeps input order
    among equal keys, so the writer's own sort of a group gathered from several batches
    gives the same order as before."""
    keys = schema.trimmed_primary_keys if schema.has_primary_key else []
    values = sole_int_key(rows, keys) if groups else None
    if values is None:
        return groups
    out = []
    for partition, bucket, indices in groups:
        if indices is None:
            order = stable_int_order(values)
        else:
            order = indices[stable_int_order(values[indices])]
        out.append((partition, bucket, order))
    return out


class WriteBuffer:
    """Routed batches (``route``) grouped by (partition, bucket), in memory up to ``limit``
    bytes (None: no limit), the rest in spill files under ``directory``.

    ``groups()`` lists the groups in the order the in-memory write takes them (partition
    values by first appearance in the input, nulls first, then bucket), and ``take(group)``
    returns a group's rows in input order, releasing them.
    """

    def __init__(self, schema: TableSchema, limit: int | None, directory: str) -> None:
        self._limit = limit
        self._directory = directory
        self._held: dict[GroupKey, list[pa.Table]] = {}
        self._held_bytes = 0
        self._spilled: dict[GroupKey, list[tuple[str, list[int]]]] = {}  # group -> (file, batch indices)
        self._spill_files = 0
        # per partition column: value -> rank of its first appearance in the input
        self._ranks: list[dict[Any, int]] = [{} for _ in schema.partition_keys]
        self.rows = 0
        self.spilled_bytes = 0

    def add(self, routed: Routed) -> None:
        """Take in one routed batch (in input order); spill everything held once over the limit."""
        for key, part in routed.parts:
            self._held.setdefault(key, []).append(part)
        self._held_bytes += routed.nbytes
        for ranks, values in zip(self._ranks, routed.partition_values):
            for value in values:
                ranks.setdefault(value, len(ranks))
        self.rows += routed.rows
        if self._limit is not None and self._held_bytes > self._limit:
            self.spill()

    def spill(self) -> None:
        """Write every held group to one new IPC file (each group's rows as one batch)."""
        if not self._held:
            return
        path = os.path.join(self._directory, f"spill-{self._spill_files}.arrow")
        self._spill_files += 1
        schema = next(iter(self._held.values()))[0].schema
        index = 0
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            for key, parts in self._held.items():
                batches = pa.concat_tables(parts).combine_chunks().to_batches()
                for batch in batches:
                    writer.write_batch(batch)
                self._spilled.setdefault(key, []).append((path, list(range(index, index + len(batches)))))
                index += len(batches)
        self.spilled_bytes += os.path.getsize(path)
        self._held.clear()
        self._held_bytes = 0

    @property
    def nbytes(self) -> int:
        """Bytes of the rows taken in: Arrow bytes held, plus the size of the spill files."""
        return self._held_bytes + self.spilled_bytes

    def groups(self) -> list[GroupKey]:
        def order(key: GroupKey) -> tuple:
            values, bucket = key
            return (*(-1 if v is None else ranks.get(v, len(ranks)) for ranks, v in zip(self._ranks, values)), bucket)

        return sorted({*self._held, *self._spilled}, key=order)

    def take(self, key: GroupKey) -> pa.Table:
        """One group's rows in input order (spilled parts first: they came first)."""
        tables = []
        for path, indices in self._spilled.pop(key, []):
            # Memory-mapped: the batches' buffers are the file's pages, read once by the
            # caller's sort and released with the batches.
            with pa.memory_map(path) as source:
                reader = pa.ipc.open_file(source)
                tables.append(pa.Table.from_batches([reader.get_batch(i) for i in indices]))
        tables.extend(self._held.pop(key, []))
        return pa.concat_tables(tables)
