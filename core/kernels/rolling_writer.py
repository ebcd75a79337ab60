"""The rolling writer: rows that arrive chunk by chunk, already in file order, written as data
files of about target-file-size, each file encoded a row group at a time as its rows pass.

Full compaction feeds it the merged chunks of a bucket (``core.kernels.compact``). What it
holds is one row group being gathered and one chunk, never a file's decoded rows: each Parquet
file is written through a ``pyarrow.parquet.ParquetWriter`` straight into its output stream,
and the file's metadata (row count, key range, key and value stats, sequence range, delete
rows) is folded in chunk by chunk (``core.stats.StatsCollector``), so it equals what
``write.write_files`` computes from the whole file. The files are cut at the same rows and
cut into the same row groups as ``write_files(..., measure_size=True)`` would cut from the
chunks' concatenation, so both write the same bytes.

ORC and Avro files are still gathered whole before they are encoded: lakectl's Avro encoder
(``core.formats``) takes a whole table, and ORC's stripes are sized by the writer, not by
row groups we could fold stats along; those formats keep the file-sized buffer.
"""

from __future__ import annotations

import logging
import uuid
from typing import IO, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core import binary_row, stats
from core.fileio import FileIO, join
from core.kernels import write
from core.kernels.records import SEQUENCE_NUMBER, VALUE_KIND, retract_kinds
from core.manifest import DataFileMeta
from core.schema import TableSchema

log = logging.getLogger(__name__)


def write_files_streamed(chunks: Iterable[pa.Table], schema: TableSchema, bucket_dir: str, file_io: FileIO, *,
                         level: int, file_source: int) -> list[DataFileMeta]:
    """``write.write_files(..., measure_size=True)`` fed chunk by chunk.

    The chunks must already be in file order (sorted by key, each key once, keys rising from
    chunk to chunk); the files are the same slices ``write_files`` cuts from their
    concatenation. Rows per file are measured, as there, by encoding the first
    ``write.SIZE_SAMPLE_ROWS`` rows, which are held until then; a stream shorter than that
    is written by ``write_files`` itself.
    """
    stream = iter(chunks)
    sample, sampled = _take_rows(stream, write.SIZE_SAMPLE_ROWS)
    if sampled < write.SIZE_SAMPLE_ROWS:  # the whole stream is in ``sample``
        rows = pa.concat_tables(sample) if sample else None
        if rows is None:
            return []
        return write.write_files(rows, schema, bucket_dir, file_io, level=level, file_source=file_source,
                                 measure_size=True)
    head = pa.concat_tables(sample).slice(0, write.SIZE_SAMPLE_ROWS)
    rows_per_file = write.measured_rows_per_file(head, schema)
    rest = _chain(sample, stream)
    if schema.core_options.file_format != "parquet" or not schema.has_primary_key:
        # Whole files: see the module docstring (append files also need the whole file for
        # their bloom-filter index, and full compaction does not stream them).
        del head
        return _write_whole_files(rest, schema, bucket_dir, file_io, rows_per_file, level, file_source)
    group_rows = _key_sorted_group_rows(write.file_table(head, schema, True), schema.core_options.parquet_block_size)
    del head
    return _write_streamed_files(rest, schema, bucket_dir, file_io, rows_per_file, group_rows, level, file_source)


def _key_sorted_group_rows(sample: pa.Table, block_size: int) -> int:
    """Rows per row group of a key-sorted file, as ``write.row_group_rows`` sizes them for a
    whole file: KEY_SORTED_ROW_GROUP_ROWS, or fewer when that many rows exceed
    parquet.block.size at the sample's Arrow size per row (only tiny block sizes; there the
    whole-file writer measures the whole file, so its groups may differ by a few rows)."""
    per_row = max(1, sample.nbytes // max(1, sample.num_rows))
    if write.KEY_SORTED_ROW_GROUP_ROWS * per_row <= block_size:
        return write.KEY_SORTED_ROW_GROUP_ROWS
    return max(1, block_size * sample.num_rows // max(1, sample.nbytes))


def _take_rows(stream: Iterator[pa.Table], rows: int) -> tuple[list[pa.Table], int]:
    """Chunks from ``stream`` until they hold at least ``rows`` rows (or it ends)."""
    taken: list[pa.Table] = []
    count = 0
    while count < rows:
        chunk = next(stream, None)
        if chunk is None:
            break
        if chunk.num_rows:
            taken.append(chunk)
            count += chunk.num_rows
    return taken, count


def _chain(first: list[pa.Table], rest: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """The held chunks, each let go once handed out, then the rest of the stream."""
    while first:
        yield first.pop(0)
    for chunk in rest:
        if chunk.num_rows:
            yield chunk


def _file_slices(chunks: Iterator[pa.Table], rows_per_file: int) -> Iterator[tuple[int, pa.Table]]:
    """(file number, rows of that file) pieces: each chunk cut where a file reaches
    ``rows_per_file`` rows."""
    index, in_file = 0, 0
    for chunk in chunks:
        start = 0
        while start < chunk.num_rows:
            take = min(rows_per_file - in_file, chunk.num_rows - start)
            yield index, chunk.slice(start, take)
            start += take
            in_file += take
            if in_file == rows_per_file:
                index, in_file = index + 1, 0


def _write_whole_files(chunks: Iterator[pa.Table], schema: TableSchema, bucket_dir: str, file_io: FileIO,
                       rows_per_file: int, level: int, file_source: int) -> list[DataFileMeta]:
    """Each file's rows gathered, then written by ``write.write_file`` (formats that cannot be
    written a row group at a time)."""
    prefix = f"{schema.core_options.data_file_prefix}{uuid.uuid4()}"
    external = write.external_provider(schema, bucket_dir, file_io)
    files: list[DataFileMeta] = []
    held: list[pa.Table] = []
    current = 0

    def emit() -> None:
        name = f"{prefix}-{current}.{schema.core_options.file_format}"
        files.append(write.write_file(pa.concat_tables(held).combine_chunks(), schema, bucket_dir, file_io, name,
                                      primary_key=schema.has_primary_key, level=level, file_source=file_source,
                                      external=external))

    for index, piece in _file_slices(chunks, rows_per_file):
        if index != current:
            emit()
            held, current = [], index
        held.append(piece)
    if held:
        emit()
    return files


def _write_streamed_files(chunks: Iterator[pa.Table], schema: TableSchema, bucket_dir: str, file_io: FileIO,
                          rows_per_file: int, group_rows: int, level: int, file_source: int) -> list[DataFileMeta]:
    """Primary-key Parquet files written a row group at a time."""
    prefix = f"{schema.core_options.data_file_prefix}{uuid.uuid4()}"
    external = write.external_provider(schema, bucket_dir, file_io)
    files: list[DataFileMeta] = []
    current: StreamedFile | None = None
    try:
        for index, piece in _file_slices(chunks, rows_per_file):
            if current is not None and index != current.index:
                files.append(current.close(level=level, file_source=file_source))
                current = None
            if current is None:
                name = f"{prefix}-{index}.parquet"
                external_path = external.next_path(name) if external is not None else None
                current = StreamedFile(schema, file_io, index, name, external_path or join(bucket_dir, name),
                                       external_path, group_rows)
            current.add(piece)
        if current is not None:
            files.append(current.close(level=level, file_source=file_source))
            current = None
    finally:
        if current is not None:  # failed mid-file: the partial file is no one's
            current.abandon()
    return files


class StreamedFile:
    """One primary-key Parquet data file being written: rows come in as ``add``ed chunks, go
    out in row groups of ``group_rows`` rows, and the file's metadata is folded as they pass."""

    def __init__(self, schema: TableSchema, file_io: FileIO, index: int, name: str, path: str,
                 external_path: str | None, group_rows: int):
        self.schema = schema
        self.index = index
        self.name = name
        self.path = path
        self.external_path = external_path
        self.group_rows = group_rows
        self.file_io = file_io
        self.sink: IO[bytes] = file_io.open_output(path)
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[pa.Table] = []  # rows of the next row group, as file columns
        self.pending_rows = 0
        self.rows = 0
        self.key_stats = stats.StatsCollector(schema.key_fields, "full")
        stats_mode = schema.core_options.stats_mode
        self.value_stats = stats.StatsCollector(schema.fields, stats_mode) if stats_mode != "none" else None
        self.first_key: list | None = None
        self.last_key: list | None = None
        self.min_sequence: int | None = None
        self.max_sequence: int | None = None
        self.delete_rows = 0

    def add(self, chunk: pa.Table) -> None:
        """Fold a chunk of rows (table columns plus ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``,
        keys rising) into the file; every full row group gathered so far is written."""
        keys = self.schema.trimmed_primary_keys
        if self.first_key is None:
            self.first_key = [write.key_value(chunk.column(k), 0) for k in keys]
        self.last_key = [write.key_value(chunk.column(k), chunk.num_rows - 1) for k in keys]
        self.key_stats.add(chunk)
        if self.value_stats is not None:
            self.value_stats.add(chunk)
        lo, hi = pc.min_max(chunk.column(SEQUENCE_NUMBER)).values()
        self.min_sequence = lo.as_py() if self.min_sequence is None else min(self.min_sequence, lo.as_py())
        self.max_sequence = hi.as_py() if self.max_sequence is None else max(self.max_sequence, hi.as_py())
        self.delete_rows += int(pc.sum(pc.is_in(chunk.column(VALUE_KIND), retract_kinds())).as_py() or 0)
        self.rows += chunk.num_rows
        self.pending.append(write.file_table(chunk, self.schema, True))
        self.pending_rows += chunk.num_rows
        if self.pending_rows >= self.group_rows:
            # Whole row groups only, so the groups fall where a whole-file write puts them.
            gathered = pa.concat_tables(self.pending)
            whole = self.pending_rows - self.pending_rows % self.group_rows
            self._write(gathered.slice(0, whole))
            rest = gathered.slice(whole)
            self.pending, self.pending_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def _write(self, out: pa.Table) -> None:
        # One contiguous chunk, as a slice of a whole file's table is: Parquet's column writers
        # cut pages per Arrow chunk, so the bytes match the whole-file writer's only this way.
        laid_out, int96 = write.timestamp_layout(out.combine_chunks())
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.sink, laid_out.schema, **write.parquet_options(self.schema, int96,
                                                                                               laid_out.schema))
        self.writer.write_table(laid_out, row_group_size=self.group_rows)

    def close(self, *, level: int, file_source: int) -> DataFileMeta:
        """Write the last row group, finish the file and return its metadata."""
        if self.pending:
            self._write(pa.concat_tables(self.pending))
            self.pending, self.pending_rows = [], 0
        assert self.writer is not None and self.first_key is not None and self.last_key is not None
        self.writer.close()
        size = self.sink.tell()
        self.sink.close()
        key_types = [f.type for f in self.schema.key_fields]
        value_stats, value_stats_cols = ((self.value_stats.result(), None) if self.value_stats is not None
                                         else (stats.EMPTY_STATS, ()))
        return DataFileMeta(
            file_name=self.name,
            file_size=size,
            row_count=self.rows,
            min_key=binary_row.encode(self.first_key, key_types),
            max_key=binary_row.encode(self.last_key, key_types),
            key_stats=self.key_stats.result(),
            value_stats=value_stats,
            min_sequence_number=int(self.min_sequence),
            max_sequence_number=int(self.max_sequence),
            schema_id=self.schema.id,
            level=level,
            extra_files=(),  # Java Paimon 1.0 writes no file index into primary-key tables
            creation_time=write.local_wall_clock_millis(),
            delete_row_count=self.delete_rows,
            file_source=file_source,
            value_stats_cols=value_stats_cols,
            embedded_index=None,
            external_path=self.external_path,
        )

    def abandon(self) -> None:
        """Close and delete a file that failed part-way (best effort: it is in no manifest)."""
        try:
            if self.writer is not None:
                self.writer.close()
            self.sink.close()
        except (OSError, ValueError):
            log.debug("closing the abandoned file %s failed", self.path, exc_info=True)
        self.file_io.delete_quietly(self.path)


__all__ = ["StreamedFile", "write_files_streamed"]
