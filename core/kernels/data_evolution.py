"""Data-evolution reads (Paimon 2.x, ``data-evolution.enabled=true``), as pypaimon 2.1 reads them.

In such a table a data file may hold only some columns (its ``write_cols``) for a range of
row ids that starts at its ``first_row_id``: pypaimon's ``update_by_arrow_with_row_id``
rewrites one column of existing rows by writing a new file for that column alone. A read
puts the rows back together:

- files are grouped by ``first_row_id`` (a file without one is a group of its own);
- in a group, each column comes from the newest file holding it (highest max sequence
  number); a column no file of the group holds reads as null;
- groups are concatenated in ``first_row_id`` order.

lakectl's appends add files of whole rows, which the commit numbers on from ``nextRowId``
(``core.row_tracking``): a group of their own, as pypaimon reads them. Rewrites (compaction,
delete) are refused (``refuse_rewrite``).

Every file of a group holds the same rows, in row-id order, so columns line up by position.
Java Paimon 1.0 has no such tables; pypaimon 2.1's ``DataEvolutionSplitRead`` is the
reference for these rules.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pyarrow as pa

from core.errors import CorruptMetadataError, UnsupportedTableError
from core.fileio import FileIO, join
from core.kernels.data_file import read_file
from core.manifest import DataFileMeta
# The option and the refusals live with the other option rules (no data libraries to load).
from core.option_rules import DATA_EVOLUTION as OPTION, data_evolution_enabled as enabled  # noqa: F401
from core.option_rules import refuse_incremental, refuse_rewrite  # noqa: F401
from core.schema import TableSchema
from core.types import DataField, arrow_field

def row_id_groups(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """The files grouped by the row-id range they cover, groups in row-id order and each
    group newest first (pypaimon's ``_split_by_row_id``).

    Raises:
        CorruptMetadataError: two groups' row-id ranges overlap (pypaimon refuses them too).
    """
    without_id = [[f] for f in files if f.first_row_id is None]
    with_id = sorted((f for f in files if f.first_row_id is not None),
                     key=lambda f: (f.first_row_id, -f.max_sequence_number))
    groups: list[list[DataFileMeta]] = []
    next_free = 0
    for meta in with_id:
        if groups and groups[-1][0].first_row_id == meta.first_row_id:
            groups[-1].append(meta)
            continue
        if meta.first_row_id < next_free:
            raise CorruptMetadataError(f"data file {meta.file_name} starts at row id {meta.first_row_id}, "
                                       f"inside the range of an earlier file (up to {next_free - 1})")
        groups.append([meta])
        next_free = meta.first_row_id + meta.row_count
    return without_id + groups


def file_field_ids(meta: DataFileMeta, file_schema: TableSchema) -> set[int]:
    """The ids of the columns ``meta`` holds: its ``write_cols`` if it names them (by the
    names of the schema it was written with), else every column of that schema."""
    if not meta.write_cols:
        return {f.id for f in file_schema.fields}
    by_name = {f.name: f.id for f in file_schema.fields}
    return {by_name[name] for name in meta.write_cols if name in by_name}


def _read_group(group: list[DataFileMeta], read_fields: Sequence[DataField], bucket_dir: str,
                schemas: Mapping[int, TableSchema], file_io: FileIO) -> pa.Table:
    """One row-id range: each read column from the newest file of ``group`` holding it."""
    source: dict[int, int] = {}  # read field id -> index of the file it comes from
    for i, meta in enumerate(group):  # newest first, so the first holder wins
        for fid in file_field_ids(meta, schemas[meta.schema_id]):
            source.setdefault(fid, i)
    columns: dict[int, pa.ChunkedArray] = {}
    rows = group[0].row_count
    for i, meta in enumerate(group):
        fields = [f for f in read_fields if source.get(f.id) == i]
        if not fields:
            continue
        path = meta.external_path or join(bucket_dir, meta.file_name)
        part = read_file(path, meta, schemas[meta.schema_id], fields, file_io, system_columns=False)
        if part.num_rows != rows:
            raise CorruptMetadataError(f"data file {path} holds {part.num_rows} rows where the other files "
                                       f"of row ids {meta.first_row_id}.. hold {rows}")
        for f in fields:
            columns[f.id] = part.column(f.name)
    arrays = [columns.get(f.id, pa.chunked_array([pa.nulls(rows, arrow_field(f).type)])) for f in read_fields]
    schema = pa.schema([arrow_field(f).with_nullable(True) for f in read_fields])
    return pa.Table.from_arrays(arrays, schema=schema)


def read_merged(files: Sequence[DataFileMeta], bucket_dir: str, read_schema: TableSchema,
                schemas: Mapping[int, TableSchema], file_io: FileIO, *, has_deletions: bool,
                changes: bool) -> pa.Table:
    """All rows of one bucket of a data-evolution table, in the read schema.

    Raises:
        UnsupportedTableError: an incremental read, or files with deletion vectors (pypaimon
            maps a group's vector by row id, which lakectl does not).
    """
    if changes:
        refuse_incremental(read_schema, "the table")
    if has_deletions:
        raise UnsupportedTableError(f"{OPTION}=true with deletion vectors is not supported (Paimon applies "
                                    "them by row id across the files of a row-id range)")
    read_fields = list(read_schema.fields)
    parts = [_read_group(g, read_fields, bucket_dir, schemas, file_io) for g in row_id_groups(files)]
    if not parts:
        return pa.schema([arrow_field(f).with_nullable(True) for f in read_fields]).empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]
