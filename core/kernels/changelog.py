"""Changelog: the -U/+U/-D/+I records that turn a bucket's state before into its state after.

Two producers compute it from the same function, ``changes``:
- ``lookup`` (write kernel): the state before is the bucket's files, looked up for the keys
  the write touches; the state after is that merged with the written records.
- ``full-compaction`` (compaction kernel): the state before is the top level, the result of
  the previous full compaction; the state after is the new full compaction.

Per touched key: absent before and alive after gives +I(after); alive before and gone after
gives -D(before); alive on both sides gives -U(before), +U(after), unless
``changelog-producer.row-deduplicate`` is set and the values are equal. first-row tables
only ever gain keys, so they yield +I records only. Records keep their sequence numbers; the
output is sorted by key, -U before +U.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.fileio import FileIO, join
from core.kernels.data_file import read_file
from core.kernels.records import (DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_AFTER, UPDATE_BEFORE, retract_kinds,
                                  VALUE_KIND, alive, key_columns_sorted)
from core.types import arrow_field
from core.kernels.merge import MergeEngine, segment_starts
from core.kernels.write_task import WriteTask


_OLD = "_LAKECTL_OLD"  # marks the records of the state before while they are sorted together


def changes(rows: pa.Table, is_old: np.ndarray, engine: MergeEngine, *, row_deduplicate: bool = False) -> pa.Table:
    """Changelog records for the keys that records not in the old state touch.

    Args:
        rows: records of one bucket in the engine's merge order (``MergeEngine.sorted``: key,
            sequence.field, sequence number), ignored deletes dropped.
        is_old: marks the records that make up the state before.
        engine: the table's merge engine.
        row_deduplicate: no -U/+U pair for a key whose value did not change.
    """
    if rows.num_rows == 0:
        return rows
    starts = segment_starts(rows, engine.keys)
    has_old = np.maximum.reduceat(is_old.astype(np.int8), starts).astype(bool)
    touched = np.maximum.reduceat((~is_old).astype(np.int8), starts).astype(bool)
    after = engine.merge(rows)
    before_part = engine.merge(rows.filter(pa.array(is_old)))
    # before_part has one record per key that has old records, in key order.
    before_index = np.cumsum(has_old) - 1
    after_alive = _alive_mask(after)
    before_alive = np.zeros(len(starts), bool)
    before_alive[has_old] = _alive_mask(before_part)
    before_at = np.where(has_old, before_index, 0)
    if engine.kind == "first-row":
        insert = touched & ~before_alive & after_alive
        delete = update = np.zeros(len(starts), bool)
    else:
        insert = touched & ~before_alive & after_alive
        delete = touched & before_alive & ~after_alive
        update = touched & before_alive & after_alive
        if row_deduplicate and update.any():
            same = _equal_rows(before_part.take(pa.array(before_at)), after, engine)
            update &= ~same
    pieces = []  # (segment, order within segment, table of one record per segment)
    if insert.any():
        pieces.append((np.flatnonzero(insert), 1, _with_kind(after.filter(pa.array(insert)), INSERT)))
    if update.any():
        seg = np.flatnonzero(update)
        pieces.append((seg, 0, _with_kind(before_part.take(pa.array(before_at[update])), UPDATE_BEFORE)))
        pieces.append((seg, 1, _with_kind(after.filter(pa.array(update)), UPDATE_AFTER)))
    if delete.any():
        pieces.append((np.flatnonzero(delete), 0, _with_kind(before_part.take(pa.array(before_at[delete])), DELETE)))
    if not pieces:
        return rows.slice(0, 0)
    table = pa.concat_tables([p[2] for p in pieces])
    order = np.lexsort((np.concatenate([np.full(len(p[0]), p[1]) for p in pieces]),
                        np.concatenate([p[0] for p in pieces])))
    return table.take(pa.array(order))


def _alive_mask(table: pa.Table) -> np.ndarray:
    retract = pc.is_in(table.column(VALUE_KIND), retract_kinds())
    return ~np.asarray(retract.to_numpy(zero_copy_only=False), dtype=bool)


def _with_kind(table: pa.Table, kind: int) -> pa.Table:
    i = table.column_names.index(VALUE_KIND)
    return table.set_column(i, VALUE_KIND, pa.array(np.full(table.num_rows, kind, np.int8)))


def _equal_rows(a: pa.Table, b: pa.Table, engine: MergeEngine) -> np.ndarray:
    """Row-wise equality of the table columns of two aligned tables (nulls equal nulls)."""
    same = np.ones(a.num_rows, bool)
    for name in a.column_names:
        if name in (SEQUENCE_NUMBER, VALUE_KIND):
            continue
        x, y = a.column(name), b.column(name)
        eq = pc.fill_null(pc.equal(x, y), False)
        both_null = pc.and_(pc.is_null(x), pc.is_null(y))
        same &= np.asarray(pc.or_(eq, both_null).to_numpy(zero_copy_only=False), dtype=bool)
    return same


def tagged_sort(old: pa.Table, new: pa.Table, engine: MergeEngine) -> tuple[pa.Table, np.ndarray]:
    """Old and new records sorted together in ``engine``'s merge order, and the mask of old ones."""
    both = pa.concat_tables([
        old.append_column(_OLD, pa.array(np.ones(old.num_rows, bool))),
        new.append_column(_OLD, pa.array(np.zeros(new.num_rows, bool))),
    ])
    ordered = engine.sorted(both)
    mask = np.asarray(ordered.column(_OLD).to_numpy(zero_copy_only=False), dtype=bool)
    return ordered.drop_columns([_OLD]), mask


# ---- lookup --------------------------------------------------------------------------------
class FileCache:
    """Files read for lookups, least recently used first out, within a byte budget
    (``lookup.cache-max-memory-size``). Data files never change, so entries never go stale;
    a streaming writer that commits many times in one process reads each file once."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, int], pa.Table] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # the local engine writes buckets on several threads

    def get(self, key: tuple, load, budget: int) -> pa.Table:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit
        table = load()
        if table.nbytes <= budget:
            with self._lock:
                if key not in self._entries:
                    self._entries[key] = table
                    self._bytes += table.nbytes
                while self._bytes > budget:
                    _, dropped = self._entries.popitem(last=False)
                    self._bytes -= dropped.nbytes
        return table

    @property
    def bytes(self) -> int:
        return self._bytes


LOOKUP_CACHE = FileCache()


def old_records(task: WriteTask, file_io: FileIO, *, keys_of: pa.Table | None = None,
                level: int | None = None) -> pa.Table:
    """The records of the bucket's files before this write (``task.lookup_files``, read through
    the lookup cache), those of one ``level`` only if given, restricted to the keys of
    ``keys_of`` if given; ignored deletes dropped, and above level 0 only each key's newest
    record where the engine counts only that one (``MergeEngine.newest_upper_only``)."""
    schema = task.schema
    keys = schema.trimmed_primary_keys
    budget = schema.core_options.lookup_cache_bytes
    engine = MergeEngine.of(schema)
    parts = []
    for meta in task.lookup_files:
        if level is not None and meta.level != level:
            continue
        path = meta.external_path or join(task.bucket_dir, meta.file_name)
        file_schema = (task.schemas or {}).get(meta.schema_id, schema)
        deletion = task.deletion(meta)
        table = LOOKUP_CACHE.get((path, schema.id, deletion), lambda: read_file(
            path, meta, file_schema, list(schema.fields), file_io, system_columns=True, deletion=deletion), budget)
        table = _restrict(table, keys_of, keys) if keys_of is not None else table
        parts.append(engine.with_level(table.cast(physical_records(schema)), meta.level))
    empty = physical_records(schema).empty_table()
    old = pa.concat_tables(parts) if parts else empty
    if engine.newest_upper_only and parts:
        old = engine.newest_upper(engine.sorted(old))
    return engine.drop_ignored(old)


def physical_records(schema) -> pa.Schema:
    """Columns of records in the kernels: the table columns, _SEQUENCE_NUMBER, _VALUE_KIND."""
    return pa.schema([arrow_field(f).with_nullable(True) for f in schema.fields]
                     + [pa.field(SEQUENCE_NUMBER, pa.int64()), pa.field(VALUE_KIND, pa.int8())])


def overwrite_changelog(old: pa.Table, written: pa.Table, engine: MergeEngine, *,
                        row_deduplicate: bool = False) -> pa.Table:
    """The changelog of replacing a bucket's records ``old`` by ``written`` (an overwrite): the
    diff of the two states, with -D for every key the overwrite removes."""
    keys = list(engine.keys)
    before = alive(engine.merge(engine.sorted(old))).cast(written.schema)
    # The new records replace the old ones whatever the engine: compare as "newest wins".
    replace = MergeEngine("deduplicate", engine.keys)
    rows, is_old = tagged_sort(before, written, replace)
    touched = changes(rows, is_old, replace, row_deduplicate=row_deduplicate)
    removed = _with_kind(without_existing_keys(before, written, keys), DELETE)
    return key_columns_sorted(pa.concat_tables([touched, removed]), keys, SEQUENCE_NUMBER)


def without_existing_keys(table: pa.Table, other: pa.Table, keys: list[str]) -> pa.Table:
    """Rows of ``table`` whose key is not in ``other``, in ``table``'s order (first-row: drop
    keys already stored; an overwrite: the keys it removes)."""
    if table.num_rows == 0 or other.num_rows == 0:
        return table
    try:
        marked = table.append_column("_LAKECTL_ROW", pa.array(np.arange(table.num_rows)))
        kept = marked.join(other.select(keys), keys, join_type="left anti")
        order = pc.sort_indices(kept.column("_LAKECTL_ROW"))
        return table.take(pc.take(kept.column("_LAKECTL_ROW"), order))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        seen = set(zip(*(other.column(k).to_pylist() for k in keys)))
        mask = [key not in seen for key in zip(*(table.column(k).to_pylist() for k in keys))]
        return table.filter(pa.array(mask, pa.bool_()))


def _restrict(old: pa.Table, written: pa.Table, keys: list[str]) -> pa.Table:
    """The records of ``old`` whose key was written (all of them where Arrow cannot join the key types)."""
    try:
        return old.join(written.select(keys), keys, join_type="left semi")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return old


__all__ = ["FileCache", "LOOKUP_CACHE", "changes", "old_records", "overwrite_changelog",
           "physical_records", "tagged_sort", "without_existing_keys"]
