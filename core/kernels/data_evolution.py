"""Data-evolution reads (Paimon 2.x, ``data-evolution.enabled=true``), as pypaimon 2.1 reads them.

In such a table a data file may hold only some columns (its ``write_cols``) for a range of
row ids that starts at its ``first_row_id``: pypaimon's ``update_by_arrow_with_row_id``
rewrites one column of existing rows by writing a new file for that column alone. A read
puts the rows back together:

- files are grouped by ``first_row_id`` (a file without one is a group of its own);
- in a group, each column comes from the newest file holding it (highest max sequence
  number); a column no file of the group holds reads as null;
- groups are concatenated in ``first_row_id`` order;
- a BLOB column's values are in ``.blob`` files (``core.blob_file``) naming it in their
  ``write_cols``, which join the group whose range holds their ``first_row_id``: a group's
  blob files may cover its range in several pieces, and a newer one's placeholders leave
  the older value. They are opened only when the BLOB column is read.

lakectl's appends add files of whole rows, which the commit numbers on from ``nextRowId``
(``core.row_tracking``): a group of their own, as pypaimon reads them. Compaction merges
consecutive groups into one file of whole rows keeping their ids (``core.kernels.compact``);
delete marks rows in deletion vectors keyed by each group's anchor (``anchor_file``;
``core.ops.data_evolution_delete``), which reads apply over the group's rows.

Every file of a group holds the same rows, in row-id order, so columns line up by position.
Java Paimon 1.0 has no such tables; pypaimon 2.1's ``DataEvolutionSplitRead`` is the
reference for these rules.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa

from core.errors import CorruptMetadataError, UnsupportedTableError
from core.fileio import FileIO, join
from core.arrow_values import boolean_array, int_array
from core.deletion_vectors import DeletionFile, deleted_mask, read_vector
from core.blob_file import PLACEHOLDER, blob_rows
from core.kernels.data_file import read_file, stored_sequence_numbers, with_row_tracking
from core.kernels.records import SEQUENCE_NUMBER
from core.manifest import DataFileMeta
# The option and the refusals live with the other option rules (no data libraries to load).
from core.option_rules import DATA_EVOLUTION as OPTION, data_evolution_enabled as enabled  # noqa: F401
from core.option_rules import refuse_incremental  # noqa: F401
from core.schema import TableSchema
from core.types import DataField, arrow_field

def is_blob_file(meta: DataFileMeta) -> bool:
    return meta.file_name.endswith(".blob")


def row_id_groups(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """The files grouped by the row-id range they cover, groups in row-id order and each
    group's data files newest first, then its blob files by first row id, newest first
    (pypaimon's ``_split_by_row_id``).

    Raises:
        CorruptMetadataError: two groups' row-id ranges overlap (pypaimon refuses them too), or
            a blob file lies outside every data file's range.
    """
    without_id = [[f] for f in files if f.first_row_id is None and not is_blob_file(f)]
    if any(f.first_row_id is None for f in files if is_blob_file(f)):
        raise CorruptMetadataError("a blob file has no first row id")
    with_id = sorted((f for f in files if f.first_row_id is not None),
                     key=lambda f: (f.first_row_id, is_blob_file(f), -f.max_sequence_number))
    groups: list[list[DataFileMeta]] = []
    next_free = 0
    for meta in with_id:
        if is_blob_file(meta):
            if not groups or not (groups[-1][0].first_row_id <= meta.first_row_id
                                  and meta.first_row_id + meta.row_count <= next_free):
                raise CorruptMetadataError(f"blob file {meta.file_name} holds row ids {meta.first_row_id}.."
                                           f"{meta.first_row_id + meta.row_count - 1}, outside the range of "
                                           "every data file")
            groups[-1].append(meta)
            continue
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
                schemas: Mapping[int, TableSchema], file_io: FileIO, system: Sequence[str]) -> pa.Table:
    """One row-id range: each read column from the newest data file of ``group`` holding it,
    a BLOB column from the group's blob files; then the ``system`` columns, of the newest
    data file (pypaimon takes them from the first file that holds whole rows' ids)."""
    data_files = [m for m in group if not is_blob_file(m)]
    if not data_files:
        raise CorruptMetadataError(f"blob file {group[0].file_name} has no data file of its row ids")
    blob_ids = {f.id for f in read_fields if f.type.name == "BLOB"}
    source: dict[int, int] = {}  # read field id -> index of the file it comes from
    for i, meta in enumerate(data_files):  # newest first, so the first holder wins
        for fid in file_field_ids(meta, schemas[meta.schema_id]) - blob_ids:
            source.setdefault(fid, i)
    columns: dict[int, pa.ChunkedArray] = {}
    anchor = data_files[0]
    rows = anchor.row_count
    for i, meta in enumerate(data_files):
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
    for f in read_fields:
        if f.id in blob_ids:
            columns[f.id] = pa.chunked_array([_blob_column(f, anchor, group, bucket_dir, schemas, file_io)])
    arrays = [columns.get(f.id, pa.chunked_array([pa.nulls(rows, arrow_field(f).type)])) for f in read_fields]
    schema = pa.schema([arrow_field(f).with_nullable(True) for f in read_fields])
    table = pa.Table.from_arrays(arrays, schema=schema)
    if system:
        path = anchor.external_path or join(bucket_dir, anchor.file_name)
        stored = stored_sequence_numbers(path, anchor, file_io) if SEQUENCE_NUMBER in system else None
        table = with_row_tracking(table, anchor, system, int_array(np.arange(rows, dtype=np.int64)), stored)
    return table


def _blob_column(field: DataField, anchor: DataFileMeta, group: Sequence[DataFileMeta], bucket_dir: str,
                 schemas: Mapping[int, TableSchema], file_io: FileIO) -> pa.Array:
    """The BLOB column ``field`` over ``anchor``'s row ids: each row from the newest blob file of
    the group that holds a value for it (not a placeholder); null where none does."""
    unset = object()
    values: list = [unset] * anchor.row_count
    holders = [m for m in group if is_blob_file(m) and field.id in file_field_ids(m, schemas[m.schema_id])]
    for meta in sorted(holders, key=lambda m: -m.max_sequence_number):  # newest first: the first value wins
        path = meta.external_path or join(bucket_dir, meta.file_name)
        try:
            data = file_io.read_bytes(path)
        except FileNotFoundError as e:
            raise CorruptMetadataError(f"blob file {path} listed in a manifest is missing") from e
        found = blob_rows(data, path)
        if len(found) != meta.row_count:
            raise CorruptMetadataError(f"blob file {path} holds {len(found)} rows where its manifest entry "
                                       f"says {meta.row_count}")
        start = meta.first_row_id - anchor.first_row_id
        for i, value in enumerate(found):
            if values[start + i] is unset and value is not PLACEHOLDER:
                values[start + i] = value
    return _large_binary([None if v is unset else v for v in values])


def _large_binary(values: list[bytes | None]) -> pa.Array:
    """Python bytes and Nones as an Arrow large_binary array, built from memory (``pa.array``
    of Python values would import pandas)."""
    valid = np.array([v is not None for v in values], dtype=bool)
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v) if v is not None else 0 for v in values], out=offsets[1:])
    data = pa.py_buffer(b"".join(v for v in values if v is not None))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.large_binary(), len(values), [bitmap, pa.py_buffer(offsets), data],
                                 null_count=int(len(values) - valid.sum()))


def anchor_file(group: Sequence[DataFileMeta]) -> DataFileMeta:
    """The file a row-id range's deletion vector is keyed by: its oldest data file (lowest max
    sequence number, then name), as pypaimon 2.1 and Paimon pick it (``retrieve_anchor_file``)."""
    data_files = [m for m in group if not is_blob_file(m)]
    if not data_files:
        raise CorruptMetadataError(f"blob file {group[0].file_name} has no data file of its row ids")
    return min(data_files, key=lambda m: (m.max_sequence_number, m.file_name))


def _without_deleted(part: pa.Table, group: Sequence[DataFileMeta], vectors: Mapping[str, DeletionFile],
                     file_io: FileIO) -> pa.Table:
    """``part`` (a range's rows, system columns already numbered) without the rows its
    anchor's deletion vector marks."""
    deletion = vectors.get(anchor_file(group).file_name) if vectors else None
    if deletion is None:
        return part
    return part.filter(boolean_array(~deleted_mask(read_vector(file_io, deletion), part.num_rows)))


def _in_read_schema(part: pa.Table, read_schema: TableSchema) -> pa.Table:
    """``part`` with the read schema's columns it lacks (not needed) as nulls, in order, then
    the system columns it carries."""
    columns, fields = [], []
    for f in read_schema.fields:
        field = arrow_field(f).with_nullable(True)
        i = part.schema.get_field_index(f.name)
        columns.append(part.column(i) if i >= 0 else pa.nulls(part.num_rows, field.type))
        fields.append(field)
    names = {f.name for f in read_schema.fields}
    for i, field in enumerate(part.schema):
        if field.name not in names:
            columns.append(part.column(i))
            fields.append(field)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def read_merged(files: Sequence[DataFileMeta], bucket_dir: str, read_schema: TableSchema,
                schemas: Mapping[int, TableSchema], file_io: FileIO, *, has_deletions: bool,
                changes: bool, needed: frozenset[str] | None = None, system: Sequence[str] = (),
                deletion_files: Sequence[tuple[str, DeletionFile]] = ()) -> pa.Table:
    """All rows of one bucket of a data-evolution table, in the read schema, then the
    ``system`` columns. With ``needed``, the other columns are not read (null): a BLOB
    column not needed leaves its blob files unopened. ``deletion_files`` (data file name,
    vector) are applied as pypaimon 2.1 applies them: a range's vector is its anchor's
    (``anchor_file``), over the range's rows.

    Raises:
        UnsupportedTableError: an incremental read, or ``has_deletions`` without the vectors
            given (a caller that does not map them by row-id range).
    """
    if changes:
        refuse_incremental(read_schema, "the table")
    if has_deletions and not deletion_files:
        raise UnsupportedTableError(f"{OPTION}=true with deletion vectors is not supported here (Paimon applies "
                                    "them by row id across the files of a row-id range)")
    vectors = dict(deletion_files)
    read_fields = [f for f in read_schema.fields if needed is None or f.name in needed]
    parts = [_without_deleted(_read_group(g, read_fields, bucket_dir, schemas, file_io, system), g, vectors, file_io)
             for g in row_id_groups(files)]
    parts = [_in_read_schema(p, read_schema) for p in parts]
    if not parts:
        fields = [arrow_field(f).with_nullable(True) for f in read_schema.fields]
        return pa.schema(fields + [pa.field(n, pa.int64()) for n in system]).empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]
