"""check --deep: open the files a snapshot lists and decode them, beyond their presence and size.

``core.ops.check`` proves every file is there with its recorded size; a file whose bytes were
damaged in place (a bad disk block, a partial overwrite, a hand) passes that and still fails
every read. Here each file is read the way a reader would:

- a ``.blob`` file (a BLOB column of a data-evolution table): every record against its index
  entry, magic number and CRC, and its rows against the manifest's ``row_count``;
- a data or changelog file (Parquet, ORC, Avro, by its extension as the readers pick it): the
  footer's row count against the manifest's ``row_count``, every row group (ORC stripe, Avro
  block) decoded, one at a time so memory stays at one group, and the columns its schema
  names present. Parquet page checksums are verified where the writer stored them (Java's
  parquet-mr does by default); without them a damaged page is caught when it no longer
  decompresses or decodes;
- a HASH index file (dynamic-bucket tables): whole int32s, as many as the index manifest
  records; and, for the latest snapshot of each branch (the one the next write assigns
  buckets from), every key of every live data file of a bucket among that bucket's hashes: a
  key missing there would be written to a second bucket by the next upsert.

Deletion-vector files are decoded (checksums and all) by the plain check already.

This module imports pyarrow and numpy; ``core.ops.check`` imports it only for ``--deep``.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow.parquet as pq

from core import formats
from core.fileio import FileIO, join, local_path
from core.index_manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry, index_dir
from core.kernels.records import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from core.manifest import DataFileMeta, ManifestEntry
from core.schema import TableSchema

# A deep read reports any failure of a file's decoding as a problem of that file rather than
# stopping the check: damaged bytes make the decoders raise whatever they meet (pyarrow's
# ArrowInvalid/OSError, fastavro's ValueError or EOFError, a codec's own error class), and the
# point of the check is to name every damaged file in one run.
_DECODE_ERRORS = (Exception,)


def data_file_problem(path: str, meta: DataFileMeta, file_schema: TableSchema | None, file_io: FileIO) -> str | None:
    """What is wrong with the contents of one data or changelog file, or None when every row
    group decodes, the rows add up to the manifest's ``row_count`` and the columns of the
    schema it was written with are there. ``file_schema`` None: that schema is missing (the
    caller reports it; only the rows are checked then)."""
    if meta.file_name.endswith(".blob"):
        return _blob_file_problem(path, meta, file_io)
    fmt = formats.format_of(meta.file_name)
    if fmt is None:
        return f"is in no format lakectl reads (by its extension; lakectl reads {', '.join(formats.FORMATS)})"
    try:
        footer_rows, decoded_rows, columns = _READERS[fmt](path, file_io)
    except _DECODE_ERRORS as e:
        return f"cannot be decoded as {fmt}: {_first_line(e)}"
    if footer_rows != meta.row_count:
        return f"holds {footer_rows} rows by its {fmt} footer, the manifest records {meta.row_count}"
    if decoded_rows != footer_rows:
        return f"decodes to {decoded_rows} rows, its {fmt} footer says {footer_rows}"
    missing = [c for c in _expected_columns(meta, file_schema) if c not in columns]
    if missing:
        return f"lacks column {missing[0]} of the schema it was written with (schema {meta.schema_id})"
    return None


def _blob_file_problem(path: str, meta: DataFileMeta, file_io: FileIO) -> str | None:
    """What is wrong with a data-evolution table's ``.blob`` file (``core.blob_file``): every
    record against its index entry, magic number and CRC, and the rows against the manifest."""
    from core.blob_file import blob_rows

    try:
        rows = len(blob_rows(file_io.read_bytes(path), path))
    except _DECODE_ERRORS as e:
        return f"cannot be decoded as a blob file: {_first_line(e)}"
    if rows != meta.row_count:
        return f"holds {rows} rows by its blob index, the manifest records {meta.row_count}"
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


def _expected_columns(meta: DataFileMeta, schema: TableSchema | None) -> list[str]:
    """The columns a reader takes from the file: the fields of its schema (or the columns a
    data-evolution file says it holds), and in a primary-key table's files the key copies,
    sequence number and row kind."""
    if schema is None:
        return []
    if meta.write_cols is not None:
        return list(meta.write_cols)
    names = list(schema.field_names)
    if schema.has_primary_key:
        names += [KEY_PREFIX + k for k in schema.trimmed_primary_keys] + [SEQUENCE_NUMBER, VALUE_KIND]
    return names


def _bytes_source(path: str, file_io: FileIO) -> str | io.BytesIO:
    """A local file by its path; a remote one fetched whole (one GET, as the readers do)."""
    if file_io.local:
        return local_path(path)
    with file_io.open_input(path) as fh:
        return io.BytesIO(fh.read())


def _read_parquet(path: str, file_io: FileIO) -> tuple[int, int, list[str]]:
    """(rows by the footer, rows decoded, top-level columns): every column of every row group."""
    parquet = pq.ParquetFile(_bytes_source(path, file_io), page_checksum_verification=True, pre_buffer=False)
    try:
        decoded = sum(parquet.read_row_group(g, use_threads=False).num_rows
                      for g in range(parquet.metadata.num_row_groups))
        return parquet.metadata.num_rows, decoded, parquet.schema_arrow.names
    finally:
        parquet.close()


def _read_orc(path: str, file_io: FileIO) -> tuple[int, int, list[str]]:
    import pyarrow.orc

    orc = pyarrow.orc.ORCFile(_bytes_source(path, file_io))
    decoded = sum(orc.read_stripe(i).num_rows for i in range(orc.nstripes))
    return orc.nrows, decoded, orc.schema.names


def _read_avro(path: str, file_io: FileIO) -> tuple[int, int, list[str]]:
    """Avro has no row count apart from its blocks': both counts are the records decoded."""
    import fastavro

    source = _bytes_source(path, file_io)
    with (open(source, "rb") if isinstance(source, str) else source) as fh:
        reader = fastavro.reader(fh)
        columns = [f["name"] for f in formats._top_record(reader.writer_schema)["fields"]]
        rows = sum(1 for _ in reader)
    return rows, rows, columns


_READERS = {"parquet": _read_parquet, "orc": _read_orc, "avro": _read_avro}


# ---- HASH index files ---------------------------------------------------------------------------
def hash_index_problem(file_io: FileIO, table_path: str, meta: IndexFileMeta) -> str | None:
    """What is wrong with one HASH index file: not whole int32s, or not as many as recorded."""
    from core.dynamic_bucket import read_hash_index

    try:
        hashes = read_hash_index(file_io, join(index_dir(table_path), meta.file_name))
    except _DECODE_ERRORS as e:
        return f"cannot be decoded: {_first_line(e)}"
    if len(hashes) != meta.row_count:
        return f"holds {len(hashes)} hashes, the index manifest records {meta.row_count}"
    return None


def uncovered_keys(table_path: str, file_io: FileIO, schema: TableSchema, schemas: Mapping[int, TableSchema],
                   data: Iterable[ManifestEntry], index: Sequence[IndexManifestEntry],
                   bucket_dir: Any) -> list[tuple[str, str]]:
    """(path, detail) for each bucket of a dynamic-bucket snapshot whose live data files hold a
    key whose hash its HASH index files lack. ``data`` are the snapshot's live entries,
    ``index`` its index entries, ``schema`` its schema (whose key the index hashes),
    ``bucket_dir(entry)`` where an entry's file lives. A data file that cannot be read is left
    to ``data_file_problem``."""
    import numpy as np

    from core.bucket import hash_codes
    from core.dynamic_bucket import read_hash_index
    from core.kernels.data_file import read_file

    stored: dict[tuple[bytes, int], list[Any]] = {}
    names: dict[tuple[bytes, int], str] = {}
    for e in index:
        if e.index_file.index_type == HASH_INDEX:
            path = join(index_dir(table_path), e.index_file.file_name)
            names[(e.partition, e.bucket)] = path
            try:
                stored.setdefault((e.partition, e.bucket), []).append(read_hash_index(file_io, path))
            except _DECODE_ERRORS:
                return []  # hash_index_problem reports the file
    known = {where: np.unique(np.concatenate(parts)) for where, parts in stored.items()}
    key_fields = schema.key_fields
    out = []
    for e in data:
        where = (e.partition, e.bucket)
        path = e.file.external_path or join(bucket_dir(e), e.file.file_name)
        file_schema = schemas.get(e.file.schema_id)
        if file_schema is None:
            continue
        try:
            keys = read_file(path, e.file, file_schema, key_fields, file_io, system_columns=False)
            hashes = hash_codes([keys.column(f.name) for f in key_fields], [f.type for f in key_fields])
        except _DECODE_ERRORS:
            continue
        missing = np.setdiff1d(hashes, known.get(where, np.zeros(0, np.int32)))
        if not len(missing):
            continue
        if where not in known:
            out.append((bucket_dir(e), f"bucket {e.bucket} holds data file {e.file.file_name} but no HASH index file "
                                       "lists its keys; the next write of those keys would put them in another bucket"))
        else:
            out.append((names[where], f"lacks the hashes of {len(missing)} key(s) of data file {e.file.file_name} "
                                      f"(e.g. {int(missing[0])}); the next write of such a key would put it in "
                                      "a second bucket"))
    return out


__all__ = ["data_file_problem", "hash_index_problem", "uncovered_keys"]
