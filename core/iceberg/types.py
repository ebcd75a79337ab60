"""Paimon types as Iceberg types, and values in Iceberg's encodings (Avro, single-value bytes)."""

from __future__ import annotations

from typing import Any

from core.types import DataType

_SIMPLE = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
           "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "CHAR": "string", "VARCHAR": "string",
           "BINARY": "binary", "VARBINARY": "binary"}


def iceberg_type(t: DataType) -> str | None:
    """The Iceberg type of a Paimon column, or None where lakectl has none: nested types, TIME
    (millis in Paimon's files, micros in Iceberg's) and timestamps finer than microseconds."""
    if t.name in _SIMPLE:
        return _SIMPLE[t.name]
    if t.name == "DECIMAL":
        return f"decimal({t.precision}, {t.scale})"
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) <= 6:
        return "timestamp" if t.name == "TIMESTAMP" else "timestamptz"
    return None


def avro_partition_type(t: DataType, field_id: int) -> Any:
    """The Avro type of a partition value in a manifest (Iceberg's Avro mapping); a fixed type
    is named after the partition field's id, since Avro names must not repeat."""
    name = iceberg_type(t)
    if name in ("int", "long", "float", "double", "boolean", "string"):
        base: Any = name
    elif name == "binary":
        base = "bytes"
    elif name == "date":
        base = {"type": "int", "logicalType": "date"}
    elif name in ("timestamp", "timestamptz"):
        base = {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": name == "timestamptz"}
    else:  # decimal: Iceberg's fixed of the fewest bytes that hold the precision
        size = next(n for n in range(1, 17) if 2 ** (8 * n - 1) > 10 ** t.precision)
        base = {"type": "fixed", "name": f"decimal_{field_id}", "size": size, "logicalType": "decimal",
                "precision": t.precision, "scale": t.scale}
    return ["null", base]



def avro_value(value: Any, t: DataType) -> Any:
    """A partition value as fastavro writes the Avro type of ``avro_partition_type``."""
    if value is None:
        return None
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return epoch_micros(value)
    return value


def epoch_micros(value: Any) -> int:
    import datetime as dt

    if isinstance(value, int):
        return value
    epoch = dt.datetime(1970, 1, 1, tzinfo=value.tzinfo)
    delta = value - epoch
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds



def single_value(value: Any, t: DataType) -> bytes:
    """Iceberg's binary single-value serialization of a partition value."""
    import datetime as dt
    import struct

    name = iceberg_type(t)
    if name == "boolean":
        return b"\x01" if value else b"\x00"
    if name == "int":
        return struct.pack("<i", value)
    if name == "long":
        return struct.pack("<q", value)
    if name == "float":
        return struct.pack("<f", value)
    if name == "double":
        return struct.pack("<d", value)
    if name == "date":
        return struct.pack("<i", (value - dt.date(1970, 1, 1)).days)
    if name in ("timestamp", "timestamptz"):
        return struct.pack("<q", epoch_micros(value))
    if name == "string":
        return value.encode("utf-8")
    if name == "binary":
        return bytes(value)
    unscaled = int(value.scaleb(t.scale))  # decimal: the unscaled value, big-endian, fewest bytes
    return unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)

