"""ORC and Avro data files: the same metadata, stats and rows as the Parquet file of the same data."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import CorruptMetadataError, UsageError
from core.fileio import FileIO
from core.formats import avro_codec, format_of
from core.kernels.data_file import read_file
from core.kernels.records import SEQUENCE_NUMBER, VALUE_KIND
from core.kernels.write import write_files
from core.options import CoreOptions
from core.schema import new_table_schema
from core.types import parse_columns

COLUMNS = ("id INT, name STRING, code CHAR(3), price DECIMAL(12, 3), day DATE, at TIME, ts TIMESTAMP(3), "
           "ts6 TIMESTAMP(6) WITH LOCAL TIME ZONE, raw BYTES, ok BOOLEAN, f FLOAT, tags ARRAY<STRING>, "
           "attrs MAP<STRING NOT NULL, INT>, point ROW<x DOUBLE, y BIGINT>")


def rows(n: int = 40) -> pa.Table:
    """Sorted by id with each id once, as the write kernel hands files their rows."""
    ids = list(range(n))
    return pa.table({
        "id": pa.array(ids, pa.int32()),
        "name": [None if i % 7 == 0 else f"n{i:03d}" for i in ids],
        "code": [f"c{i % 10}" for i in ids],
        "price": pa.array([None if i % 5 == 0 else Decimal(i * 7) / 8 for i in ids], pa.decimal128(12, 3)),
        "day": pa.array([dt.date(1960 + i, 2, 28) for i in ids], pa.date32()),
        "at": pa.array([dt.time(i % 24, i, 0) for i in ids], pa.time32("ms")),
        "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(days=i, milliseconds=i) for i in ids], pa.timestamp("ms")),
        "ts6": pa.array([dt.datetime(1950, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=i * 100, seconds=i)
                         for i in ids], pa.timestamp("us", tz="UTC")),
        "raw": [bytes([i]) * (i % 4) for i in ids],
        "ok": [i % 3 == 0 for i in ids],
        "f": pa.array([i / 4 for i in ids], pa.float32()),
        "tags": [None if i % 2 else [f"t{i}", None] for i in ids],
        "attrs": pa.array([[(f"k{i}", i)] if i % 3 else [] for i in ids], pa.map_(pa.string(), pa.int32())),
        "point": [None if i % 4 == 0 else {"x": i * 1.5, "y": -i} for i in ids],
        SEQUENCE_NUMBER: pa.array(range(100, 100 + n), pa.int64()),
        VALUE_KIND: pa.array([3 if i % 9 == 4 else 0 for i in ids], pa.int8()),
    })


def schema_in(fmt: str):
    return new_table_schema(parse_columns(COLUMNS), primary_keys=["id"],
                            options={"bucket": "1", "file.format": fmt, "metadata.stats-mode": "full"})


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_orc_and_avro_files_carry_the_same_meta_and_rows_as_parquet(tmp_path: Path, fmt: str) -> None:
    io = FileIO.for_uri(str(tmp_path))
    data = rows()
    written = {}
    for f in ("parquet", fmt):
        schema = schema_in(f)
        (meta,) = write_files(data, schema, str(tmp_path / f), io)
        assert meta.file_name.endswith(f".{f}") and format_of(meta.file_name) == f
        back = read_file(str(tmp_path / f / meta.file_name), meta, schema, list(schema.fields), io, system_columns=True)
        written[f] = (meta, back)
    (parquet, parquet_rows), (other, other_rows) = written["parquet"], written[fmt]
    for attr in ("row_count", "min_key", "max_key", "key_stats", "value_stats", "min_sequence_number",
                 "max_sequence_number", "delete_row_count", "level", "schema_id", "value_stats_cols"):
        assert getattr(other, attr) == getattr(parquet, attr), attr
    assert other_rows.schema == parquet_rows.schema
    assert other_rows.to_pylist() == parquet_rows.to_pylist()


def test_an_unknown_data_file_extension_names_the_file(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    schema = schema_in("parquet")
    (meta,) = write_files(rows(3), schema, str(tmp_path), io)
    odd = meta.file_name.replace(".parquet", ".csv")
    (tmp_path / meta.file_name).rename(tmp_path / odd)
    meta = dataclasses.replace(meta, file_name=odd)
    with pytest.raises(CorruptMetadataError, match=r"\.csv.*parquet, orc, avro"):
        read_file(str(tmp_path / odd), meta, schema, list(schema.fields), io, system_columns=True)


def test_file_format_defaults_and_values() -> None:
    assert CoreOptions({}).file_format == "parquet"  # Paimon 1.0's default
    assert CoreOptions({"file.format": "ORC"}).file_format == "orc"
    with pytest.raises(UsageError, match="file.format=csv"):
        schema_in("csv")


def test_avro_codec_follows_java() -> None:
    assert avro_codec({}) == "zstandard"
    assert avro_codec({"file.compression": "zstd", "avro.codec": "deflate"}) == "deflate"
    # Java maps only zstd; any other file.compression leaves Avro's own default, snappy.
    assert avro_codec({"file.compression": "lz4"}) == "snappy"
    assert avro_codec({"file.compression": "deflate"}) == "snappy"
    assert avro_codec({"file.compression": "lz4", "avro.codec": "xz"}) == "xz"
    with pytest.raises(UsageError, match="avro.codec=lzo"):
        avro_codec({"avro.codec": "lzo"})


def test_an_orc_file_of_a_slice_keeps_its_struct_values() -> None:
    """A file after the first of a rolled write is a slice of the rows; pyarrow's ORC writer
    misplaces a sliced struct column's values unless lakectl hands it a copy."""
    import io

    import pyarrow.orc as orc

    from core.formats import encode_orc

    values = [None if i % 3 == 0 else {"x": float(i), "y": i} for i in range(20)]
    table = pa.table({"point": pa.array(values, pa.struct([("x", pa.float64()), ("y", pa.int64())]))})
    written = orc.read_table(io.BytesIO(encode_orc(table.slice(7), "zstd")))
    assert written.column("point").to_pylist() == values[7:]
