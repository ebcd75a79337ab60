"""Diff kernel: what one bucket's rows became between two snapshots, as Paimon's ``diff``
incremental read gives it (``IncrementalDiffSplitRead``, Paimon 1.1+; tag ranges in 1.0).

Paimon drops the files both snapshots share and merges the rest of each side on its own, by
the table's merge engine, keeping retractions (as its ``audit_log`` table reads, which shows
row kinds). Then, per key:

- only on the before side: ``-D`` of its merged record, if that record is an insert or update;
- only on the after side: its merged record as it is (``-D`` included);
- on both: the after record, unless value and add/retract agree with the before record.

Because the shared files are left out, a side is not a whole snapshot: a key whose older
records sit in a shared file merges only its newer ones. That is Paimon's answer, so it is
lakectl's. An append table has no keys: its rows are those of the after side's files, ``+I``.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from core.arrow_values import empty_table
from core.default_values import fill_defaults
from core.fileio import FileIO, join
from core.kernels.data_file import read_file
from core.kernels.merge import MergeEngine
from core.kernels.read import ROW_KIND_COLUMN, changes_schema, read_changes, ReadSplit
from core.kernels.records import KIND_NAMES, VALUE_KIND
from core.manifest import DataFileMeta
from core.schema import TableSchema

_ADDS = ("+I", "+U")


def read_diff(bucket_dir: str, before: Sequence[DataFileMeta], after: Sequence[DataFileMeta],
              read_schema: TableSchema, schemas: Mapping[int, TableSchema], file_io: FileIO,
              partition: bytes = b"") -> pa.Table:
    """The diff rows of one bucket of ``partition`` (its BinaryRow: the values of partition
    columns a file lacks, as migrated Hive files do) (``_row_kind`` first): the rows the after
    side gives, then the ``-D`` rows of keys only the before side has."""
    if not read_schema.has_primary_key:
        split = ReadSplit(partition, 0, bucket_dir, tuple(after), changes=True)
        return read_changes(split, read_schema, schemas, file_io)
    engine = MergeEngine.of(read_schema)
    old = _merged_with_kinds(bucket_dir, before, read_schema, schemas, file_io, engine)
    new = _merged_with_kinds(bucket_dir, after, read_schema, schemas, file_io, engine)
    changed, removed = _diff_rows(old, new, list(engine.keys))
    schema = changes_schema(read_schema)
    parts = [new.take(pa.array(changed, pa.int64()))]
    if removed:
        gone = old.take(pa.array(removed, pa.int64()))
        parts.append(gone.set_column(0, ROW_KIND_COLUMN, pa.array(["-D"] * gone.num_rows, pa.string())))
    return fill_defaults(pa.concat_tables(parts).cast(schema), read_schema)


def _merged_with_kinds(bucket_dir: str, files: Sequence[DataFileMeta], read_schema: TableSchema,
                       schemas: Mapping[int, TableSchema], file_io: FileIO, engine: MergeEngine) -> pa.Table:
    """One merged record per key of ``files``, ``_row_kind`` first, retractions kept."""
    schema = changes_schema(read_schema)
    if not files:
        return empty_table(schema)
    fields = list(read_schema.fields)
    parts = []
    for meta in files:
        path = meta.external_path or join(bucket_dir, meta.file_name)
        records = read_file(path, meta, schemas[meta.schema_id], fields, file_io, system_columns=True)
        parts.append(engine.with_level(records, meta.level))
    # A key whose fold removed it (partial-update.remove-record-on-delete) is a -D of its
    # not-null columns, as Paimon 1.1+ merges it (Java 1.0's merge gave no record at all).
    merged = engine.merge(engine.sorted(pa.concat_tables(parts, promote_options="permissive")))
    names = pa.array([KIND_NAMES[k] for k in sorted(KIND_NAMES)])
    kinds = pc.take(names, pc.cast(merged.column(VALUE_KIND), pa.int64()))
    values = merged.select([f.name for f in fields])
    return values.add_column(0, ROW_KIND_COLUMN, kinds).cast(schema)


def _diff_rows(before: pa.Table, after: pa.Table, keys: list[str]) -> tuple[list[int], list[int]]:
    """(rows of ``after`` to emit, rows of ``before`` whose key is gone, to emit as -D)."""
    old = _rows_by_key(before, keys)
    new = _rows_by_key(after, keys)
    changed = [i for key, (i, row) in new.items() if key not in old or not _same(old[key][1], row)]
    removed = [i for key, (i, row) in old.items() if key not in new and row[0] in _ADDS]
    return changed, removed


def _rows_by_key(table: pa.Table, keys: list[str]) -> dict[tuple, tuple[int, tuple]]:
    """key -> (row index, the row's values, kind first), in exactly comparable Python values."""
    columns = [_comparable(table.column(name)) for name in table.column_names]
    rows = list(zip(*columns)) if columns else []
    positions = [table.column_names.index(k) for k in keys]
    return {tuple(row[p] for p in positions): (i, row) for i, row in enumerate(rows)}


def _comparable(column: pa.ChunkedArray) -> list:
    """Python values that compare as the stored ones: temporal types as their integers (a
    nanosecond time or timestamp has no exact Python value)."""
    if pa.types.is_temporal(column.type):
        width = pa.int32() if pa.types.is_date32(column.type) or column.type in (pa.time32("s"), pa.time32("ms")) \
            else pa.int64()
        return column.cast(width).to_pylist()
    if pa.types.is_floating(column.type):
        # Paimon compares the serialized bytes: NaN equals NaN, -0.0 differs from 0.0
        return [None if v is None else ("nan" if math.isnan(v) else (v, math.copysign(1.0, v)))
                for v in column.to_pylist()]
    return column.to_pylist()


def _same(before: tuple, after: tuple) -> bool:
    """Paimon compares the values and whether both add or both retract (kind first)."""
    return (before[0] in _ADDS) == (after[0] in _ADDS) and before[1:] == after[1:]


__all__ = ["read_diff"]
