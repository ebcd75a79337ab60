"""Data file formats other than Parquet: ORC (through pyarrow) and Avro (through fastavro).

A Paimon table's ``file.format`` can change over its life, so a data file is read by its
extension and written in the format the table's options ask for at write time. Both formats
store the same columns as Parquet (``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the
row for primary-key tables) and are laid out as Java Paimon 1.0 lays them out:

- ORC: TINYINT as byte, TIME as int (milliseconds of the day), TIMESTAMP as ORC timestamp and
  TIMESTAMP WITH LOCAL TIME ZONE as ORC's timestamp instant; pyarrow reads every timestamp
  back in nanoseconds, which ``core.kernels.read`` casts to the column's unit.
- Avro: one record (inside a union with null) named ``org.apache.paimon.avro.generated.record``;
  nullable fields are ``["null", T]`` unions; TINYINT and SMALLINT as int; DECIMAL as bytes
  with the decimal logical type; DATE, TIME (millis) and TIMESTAMP (millis up to precision
  3, micros up to 6; local-timestamp-* for WITH LOCAL TIME ZONE) as logical types; ROW as a
  nested record named after its parent; MAP with string keys as an Avro map, other MAPs as Java writes them: an array
  (logicalType "map") of key-value records.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO, Mapping, Sequence

import fastavro
import pyarrow as pa

from core.errors import InvalidDataError, UsageError
from core.types import DataType, to_arrow

FORMATS = ("parquet", "orc", "avro")


def _orc() -> Any:
    """pyarrow.orc, imported when an ORC file is read or written (not by every write)."""
    import pyarrow.orc

    return pyarrow.orc


_RECORD_NAME = "org.apache.paimon.avro.generated.record"


def format_of(file_name: str) -> str | None:
    """The format of a data file by its extension; None when it is none of Paimon's."""
    suffix = file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""
    return suffix if suffix in FORMATS else None


# ---- ORC ----------------------------------------------------------------------------------
_ORC_COMPRESSION = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "zlib": "zlib", "gzip": "zlib",
                    "deflate": "zlib", "none": "uncompressed", "uncompressed": "uncompressed"}


def read_orc(source: str | BinaryIO, columns: Mapping[str, DataType]) -> pa.Table:
    """The named columns of an ORC file (name -> the Paimon type the file was written with),
    in the Arrow types pyarrow gives them (timestamps in nanoseconds, TIME as int)."""
    if not columns:
        # No column wanted (only partition columns the file lacks, or columns added later):
        # the rows still count, and pyarrow reads zero columns as zero rows.
        rows = _orc().ORCFile(source).nrows
        return pa.table({"_": pa.nulls(rows)}).drop_columns(["_"])

    import pyarrow.compute as pc

    try:
        table = _orc().ORCFile(source).read(columns=list(columns))
    except pa.ArrowInvalid as e:
        if "out of range for nanosecond" in str(e):
            # pyarrow's ORC reader only produces nanosecond timestamps (years 1677 to 2262).
            raise ValueError(f"column {_orc_culprit(source, columns)} holds a timestamp outside 1677-09-21 to "
                             f"2262-04-11, which lakectl's ORC reader cannot hold ({e}); read the other columns "
                             "with --select") from e
        raise
    for name, t in columns.items():
        if t.name == "CHAR":
            i = table.schema.get_field_index(name)
            # Java's ORC reader returns CHAR values without their trailing spaces (ORC pads
            # CHAR to its length); so do we, whoever wrote the file.
            table = table.set_column(i, name, pc.utf8_rtrim(table.column(i), characters=" "))
    return table


def orc_column_names(source: str | BinaryIO) -> list[str]:
    """The top-level column names of an ORC file (its footer only)."""
    names = _orc().ORCFile(source).schema.names
    if not isinstance(source, str):
        source.seek(0)
    return names


def _orc_culprit(source: str | BinaryIO, columns: Mapping[str, DataType]) -> str:
    """The first column of ``columns`` that pyarrow's ORC reader cannot read on its own."""
    for name in columns:
        if hasattr(source, "seek"):
            source.seek(0)
        try:
            _orc().ORCFile(source).read(columns=[name])
        except pa.ArrowInvalid:
            return name
    return "?"


def _orc_column(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as the ORC writer takes it: TIME as int milliseconds, as Java Paimon stores it."""
    import pyarrow.compute as pc

    if pa.types.is_time(column.type):
        return pc.cast(column, pa.int32())
    return column


def _unsliced(table: pa.Table) -> pa.Table:
    """``table`` with every column starting at offset 0. pyarrow's ORC writer misplaces the
    values of a struct column that is a slice of a longer array (pyarrow 26: the struct's
    validity is read from the slice's offset, its children from 0), which every file after the
    first of a rolled write is; a copy of the rows is written instead."""
    table = table.combine_chunks()
    if all(chunk.offset == 0 for column in table.columns for chunk in column.chunks):
        return table
    return table.take(pa.array(range(table.num_rows), pa.int64()))


def encode_orc(table: pa.Table, compression: str) -> bytes:
    """An ORC file of ``table`` (file columns, file order). The ORC writer of pyarrow has no
    compression level, so ``file.compression.zstd-level`` only changes Parquet and Avro files."""
    codec = _ORC_COMPRESSION.get(compression.lower())
    if codec is None:
        raise UsageError(f"option file.compression={compression} is not supported for file.format=orc "
                         f"(supported: {', '.join(sorted(_ORC_COMPRESSION))})")
    for name in table.column_names:
        _check_orc_timestamps(name, table.column(name))
    if any(_contains_time(f.type) for f in table.schema):
        table = pa.table({n: _orc_column(table.column(n)) for n in table.column_names})
    buf = io.BytesIO()
    _orc().write_table(_unsliced(table), buf, compression=codec)
    return buf.getvalue()


def _check_orc_timestamps(name: str, column: pa.ChunkedArray) -> None:
    """Refuse what pyarrow's ORC writer stores in a form Java cannot read: a timestamp before
    1970 with a sub-millisecond part (it is split into seconds and a negative nanosecond
    part, which Java Paimon's ORC reader rejects)."""
    import pyarrow.compute as pc

    t = column.type
    if not pa.types.is_timestamp(t) or t.unit in ("s", "ms"):
        return
    per_milli = 1000 if t.unit == "us" else 1_000_000
    values = pc.cast(column, pa.int64())
    whole_millis = pc.multiply(pc.divide(values, per_milli), per_milli)  # integer division truncates
    bad = pc.and_(pc.less(values, 0), pc.not_equal(values, whole_millis))
    if pc.any(bad).as_py():
        raise InvalidDataError(f"column {name}: lakectl cannot write a timestamp before 1970 with a "
                               "sub-millisecond part to an ORC file (Java Paimon could not read it back); "
                               "use file.format=parquet or avro")


def _contains_time(t: pa.DataType) -> bool:
    if pa.types.is_time(t):
        return True
    if pa.types.is_struct(t):
        return any(_contains_time(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _contains_time(t.key_type) or _contains_time(t.item_type)
    if pa.types.is_list(t):
        return _contains_time(t.value_type)
    return False


# ---- Parquet -------------------------------------------------------------------------------
def int96_columns(schema: Any) -> list[str]:
    """The top-level columns of the Parquet schema ``schema`` holding an INT96 leaf: the column
    itself, or a timestamp inside a ROW, ARRAY or MAP (Java writes TIMESTAMP(7..9) as INT96
    at any depth)."""
    return list(dict.fromkeys(schema.column(i).path.split(".")[0] for i in range(len(schema))
                              if schema.column(i).physical_type == "INT96"))


def int96_out_of_range(source: Any, parquet: Any, names: Sequence[str]) -> tuple[str, str] | None:
    """The first top-level column among ``names`` of the Parquet file ``parquet`` (opened from
    ``source``) holding an INT96 value outside 1677-2262, at any depth, with that value as ISO
    text; None if there is none.

    pyarrow reads INT96 timestamps (Paimon's TIMESTAMP(7..9), Spark's and Impala's legacy
    timestamps) as nanoseconds and wraps such a value into a wrong date without a word, on
    either side of the range; the columns are read again in milliseconds, which hold every
    year, to find them.
    """
    import pyarrow.parquet as pq

    int96 = [name for name in int96_columns(parquet.metadata.schema) if name in names]
    if not int96:
        return None
    if hasattr(source, "seek"):
        source.seek(0)
    with pq.ParquetFile(source, coerce_int96_timestamp_unit="ms") as again:
        millis = again.read(columns=int96)
    for name in int96:
        for stamps in _timestamp_leaves(millis.column(name)):
            outside = _outside_nanos(stamps)
            if outside is not None:
                return name, outside
    return None


def _timestamp_leaves(column: pa.ChunkedArray | pa.Array) -> list[pa.Array]:
    """The timestamp values of ``column`` at any depth, one array per leaf and chunk (the
    values under a null ROW, ARRAY or MAP are left out)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    found: list[pa.Array] = []
    for chunk in chunks:
        t = chunk.type
        if pa.types.is_timestamp(t):
            found.append(chunk)
        elif pa.types.is_struct(t):
            for child in chunk.flatten():  # flatten() masks the children of null rows
                found += _timestamp_leaves(child)
        elif pa.types.is_map(t):
            found += _timestamp_leaves(chunk.keys) + _timestamp_leaves(chunk.items)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            found += _timestamp_leaves(chunk.flatten())
    return found


def _outside_nanos(stamps: pa.Array) -> str | None:
    """The first millisecond timestamp of ``stamps`` that nanoseconds cannot hold, as ISO text."""
    import pyarrow.compute as pc

    lo, hi = -(2 ** 63) // 1_000_000, (2 ** 63 - 1) // 1_000_000
    counts = pc.cast(stamps, pa.int64())
    bounds = pc.min_max(counts)  # one pass; the rare offender is looked for only when there is one
    if bounds["min"].as_py() is None or lo <= bounds["min"].as_py() and bounds["max"].as_py() <= hi:
        return None
    outside = pc.or_(pc.less(counts, lo), pc.greater(counts, hi))
    return pc.filter(stamps, outside)[0].as_py().isoformat()


# ---- Avro ---------------------------------------------------------------------------------
# fastavro's names of the Avro codecs lakectl writes (``avro.codec``); snappy through cramjam,
# which fastavro[snappy] brings.
_AVRO_CODECS = {"null": "null", "deflate": "deflate", "zstandard": "zstandard", "zstd": "zstandard",
                "bzip2": "bzip2", "xz": "xz", "snappy": "snappy"}


def avro_codec(options: Mapping[str, str]) -> str:
    """The codec Java Paimon writes Avro data files with: ``avro.codec`` if set, else
    zstandard when file.compression is zstd (the default), else Avro's default, snappy
    (whatever other file.compression is set: Java maps only zstd)."""
    name = options.get("avro.codec")
    if name is None:
        compression = options.get("file.compression", "zstd")
        return "zstandard" if compression.strip().lower() == "zstd" else "snappy"
    codec = _AVRO_CODECS.get(name.strip().lower())
    if codec is None:
        raise UsageError(f"option avro.codec={name} names a codec lakectl cannot write; "
                         "use null, deflate, snappy, zstandard, bzip2 or xz")
    return codec


def _timestamp_unit(t: DataType) -> str:
    """Avro stores precision 0-3 in milliseconds and 4-6 in microseconds; Java Paimon refuses
    more (and so does ``avro_schema``)."""
    return "ms" if t.precision <= 3 else "us"


def avro_type(t: DataType, name: str) -> Any:
    """The Avro schema of a Paimon type (``name``: the record name nested records derive theirs from)."""
    n = t.name
    plain = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
             "FLOAT": "float", "DOUBLE": "double", "CHAR": "string", "VARCHAR": "string",
             "BINARY": "bytes", "VARBINARY": "bytes"}
    if n in plain:
        out: Any = plain[n]
    elif n == "DECIMAL":
        out = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif n == "DATE":
        out = {"type": "int", "logicalType": "date"}
    elif n == "TIME":
        out = {"type": "int", "logicalType": "time-millis"}
    elif n in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if t.precision > 6:
            raise UsageError(f"file.format=avro cannot store {t} (Avro timestamps go to precision 6); "
                             "use file.format=parquet or orc")
        local = "local-" if n == "TIMESTAMP_LTZ" else ""
        out = {"type": "long", "logicalType": f"{local}timestamp-{'millis' if t.precision <= 3 else 'micros'}"}
    elif n == "ARRAY":
        out = {"type": "array", "items": avro_type(t.element, name)}
    elif n == "MAP" and t.key.is_string:
        out = {"type": "map", "values": avro_type(t.value, name)}
    elif n == "MAP":
        # Avro maps have string keys; Java Paimon stores other maps as an array of key-value
        # records (logicalType "map"), named after the map's field.
        entry = {"type": "record", "name": name,
                 "fields": [avro_field("key", t.key, f"{name}_key"), avro_field("value", t.value, f"{name}_value")]}
        out = {"type": "array", "logicalType": "map", "items": entry}
    elif n == "ROW":
        out = {"type": "record", "name": name,
               "fields": [avro_field(f.name, f.type, f"{name}_{f.name}") for f in t.fields]}
    else:
        raise UsageError(f"file.format=avro: lakectl cannot store {t} in Avro files yet; "
                         "use file.format=parquet or orc")
    return ["null", out] if t.nullable else out


def avro_field(name: str, t: DataType, record_name: str) -> dict[str, Any]:
    schema = avro_type(t, record_name)
    return {"name": name, "type": schema, "default": None} if t.nullable else {"name": name, "type": schema}


def avro_schema(fields: Sequence[tuple[str, DataType]]) -> dict[str, Any] | list[Any]:
    """The schema of an Avro data file with these columns (file order)."""
    record = {"type": "record", "name": _RECORD_NAME,
              "fields": [avro_field(n, t, f"{_RECORD_NAME}_{n}") for n, t in fields]}
    return ["null", record]


def _avro_arrow(t: DataType) -> pa.DataType:
    """The Arrow type of a Paimon type's raw Avro values (timestamps in the file's unit)."""
    n = t.name
    if n == "TIMESTAMP":
        return pa.timestamp(_timestamp_unit(t))
    if n == "TIMESTAMP_LTZ":
        return pa.timestamp(_timestamp_unit(t), tz="UTC")
    if n == "ARRAY":
        return pa.list_(pa.field("element", _avro_arrow(t.element), t.element.nullable))
    if n == "MAP":
        return pa.map_(pa.field("key", _avro_arrow(t.key), False),
                       pa.field("value", _avro_arrow(t.value), t.value.nullable))
    if n == "ROW":
        return pa.struct([pa.field(f.name, _avro_arrow(f.type), f.type.nullable) for f in t.fields])
    return to_arrow(t)


def _raw_arrow(t: pa.DataType) -> pa.DataType:
    """``t`` with its temporal leaves as the integers Avro stores (same unit)."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _raw_arrow(t.value_type), t.value_field.nullable))
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", _raw_arrow(t.key_type), False),
                       pa.field("value", _raw_arrow(t.item_type), t.item_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _raw_arrow(f.type), f.nullable) for f in t])
    return t


def _python_value(value: Any, t: DataType) -> Any:
    """A value as fastavro reads it (logical types applied: datetime, date, time, Decimal) as
    Arrow takes it for ``_avro_arrow(t)``: maps as key-value pairs."""
    if value is None:
        return None
    n = t.name
    if n == "ARRAY":
        return [_python_value(v, t.element) for v in value]
    if n == "MAP":
        # An Avro map is a dict; a map with non-string keys is a list of key-value records.
        pairs = value.items() if isinstance(value, dict) else ((e["key"], e["value"]) for e in value)
        return [(_python_value(k, t.key), _python_value(v, t.value)) for k, v in pairs]
    if n == "ROW":
        return {f.name: _python_value(value.get(f.name), f.type) for f in t.fields}
    return value


def _needs_conversion(t: DataType) -> bool:
    if t.name in ("MAP", "ROW"):
        return True
    return t.name == "ARRAY" and _needs_conversion(t.element)


def read_avro(source: BinaryIO, columns: Mapping[str, DataType]) -> pa.Table:
    """The named columns of an Avro data file (name -> the Paimon type the file was written
    with), in Arrow types with Avro's timestamp units (``core.kernels.read`` casts them on)."""
    writer_schema = fastavro.reader(source).writer_schema
    source.seek(0)
    record = _top_record(writer_schema)
    stored = {f["name"] for f in record["fields"]}
    missing = [c for c in columns if c not in stored]
    if missing:
        raise ValueError(f"the Avro file has no column {missing[0]}")
    projected = dict(record, fields=[f for f in record["fields"] if f["name"] in columns])
    records = list(fastavro.reader(source, reader_schema=projected))
    arrays = []
    for name, t in columns.items():
        values = [r[name] for r in records]
        if _needs_conversion(t):
            values = [_python_value(v, t) for v in values]
        # Timestamps come as aware (UTC) or naive datetimes; Arrow takes both as UTC.
        arrays.append(pa.array(values, _avro_arrow(t)))
    return pa.Table.from_arrays(arrays, names=list(columns))


def _top_record(schema: Any) -> dict[str, Any]:
    """The record of a data file's schema (Java writes it inside a union with null)."""
    if isinstance(schema, list):
        return next(s for s in schema if isinstance(s, dict) and s.get("type") == "record")
    return schema


def _avro_values(column: pa.ChunkedArray, t: DataType) -> list[Any]:
    """A column as the Python values fastavro writes for ``avro_type(t)``: temporal values as
    the integers Avro stores (cast in Arrow, exact), decimals as Decimal, maps as dicts."""
    import pyarrow.compute as pc

    target = _avro_arrow(t)
    raw = _raw_arrow(target)
    if column.type != target:
        column = pc.cast(column, target)
    if raw != target:
        column = column.cast(raw)
    values = column.to_pylist()
    return [_map_as_dict(v, t) for v in values] if _has_map(t) else values


def _has_map(t: DataType) -> bool:
    if t.name == "MAP":
        return True
    if t.name == "ARRAY":
        return _has_map(t.element)
    return t.name == "ROW" and any(_has_map(f.type) for f in t.fields)


def _map_as_dict(value: Any, t: DataType) -> Any:
    if value is None:
        return None
    if t.name == "MAP" and not t.key.is_string:
        return [{"key": _map_as_dict(k, t.key), "value": _map_as_dict(v, t.value)} for k, v in value]
    if t.name == "MAP":
        return {k: _map_as_dict(v, t.value) for k, v in value}
    if t.name == "ARRAY":
        return [_map_as_dict(v, t.element) for v in value]
    if t.name == "ROW":
        return {f.name: _map_as_dict(value[f.name], f.type) for f in t.fields}
    return value


def encode_avro(table: pa.Table, fields: Sequence[tuple[str, DataType]], codec: str, zstd_level: int) -> bytes:
    """An Avro file of ``table``, whose columns are ``fields`` (name, Paimon type) in file order."""
    schema = fastavro.parse_schema(avro_schema(fields))
    names = [n for n, _ in fields]
    columns = [_avro_values(table.column(n), t) for n, t in fields]
    records = [dict(zip(names, row)) for row in zip(*columns)]
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, codec=codec,
                    codec_compression_level=zstd_level if codec == "zstandard" else None)
    return buf.getvalue()


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """Columns worth dictionary encoding: strings and binaries. Numbers and times of a key-
    sorted file are mostly distinct, where a dictionary only costs time before Parquet falls
    back to plain encoding (measured: a third faster and a few percent smaller files). Used
    for data files and for ``scan --output`` files alike."""
    return [f.name for f in schema
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_binary(f.type)
            or pa.types.is_large_binary(f.type) or pa.types.is_fixed_size_binary(f.type)]
