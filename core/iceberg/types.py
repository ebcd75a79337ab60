"""Paimon types as Iceberg types, and values in Iceberg's encodings (Avro, single-value bytes)."""

from __future__ import annotations

from typing import Any

from core.types import DataField, DataType

_SIMPLE = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
           "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "CHAR": "string", "VARCHAR": "string",
           "BINARY": "binary", "VARBINARY": "binary"}


# Ids of list elements and map keys and values, which no Paimon schema holds: Paimon derives
# them from the id of the field the list or map belongs to and the nesting depth (its
# SpecialFields), and its Iceberg schemas use them; lakectl numbers them the same way.
_STRUCTURED_ID_BASE = (2**31 - 1) // 4
_DEPTH_LIMIT = 1024


def list_element_id(field_id: int, depth: int) -> int:
    return _STRUCTURED_ID_BASE + field_id * _DEPTH_LIMIT + depth


def map_key_id(field_id: int, depth: int) -> int:
    return _STRUCTURED_ID_BASE - field_id * _DEPTH_LIMIT - depth


map_value_id = list_element_id  # Paimon's formula: a value sits where an element would


def iceberg_type(t: DataType, field_id: int = 0, depth: int = 0) -> Any:
    """The Iceberg type of a Paimon type (a name, or a struct/list/map object), or None where
    lakectl has none: TIME (millis in Paimon's Parquet files, micros in Iceberg's; pyiceberg
    refuses the files' column), timestamps finer than microseconds (format version 3),
    MULTISET (Paimon's Iceberg map of counts; lakectl's files hold it as a list) and the
    types Iceberg 2 lacks. ``field_id`` is the id of the top field or row field the type
    belongs to and ``depth`` how many lists and maps deep it sits: they number the elements,
    keys and values as Paimon does."""
    if t.name in _SIMPLE:
        return _SIMPLE[t.name]
    if t.name == "DECIMAL":
        return f"decimal({t.precision}, {t.scale})"
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) <= 6:
        return "timestamp" if t.name == "TIMESTAMP" else "timestamptz"
    if t.name == "ROW":
        fields = [iceberg_field(f) for f in t.fields]
        return None if any(f is None for f in fields) else {"type": "struct", "fields": fields}
    if t.name == "ARRAY":
        element = iceberg_type(t.element, field_id, depth + 1)
        return None if element is None else {
            "type": "list", "element-id": list_element_id(field_id, depth + 1),
            "element-required": not t.element.nullable, "element": element}
    if t.name == "MAP":
        key, value = iceberg_type(t.key, field_id, depth + 1), iceberg_type(t.value, field_id, depth + 1)
        return None if key is None or value is None else {
            "type": "map", "key-id": map_key_id(field_id, depth + 1), "key": key,
            "value-id": map_value_id(field_id, depth + 1), "value-required": not t.value.nullable, "value": value}
    return None


def iceberg_field(f: DataField) -> dict[str, Any] | None:
    """A schema field (top level or in a struct) with Paimon's id, or None without an Iceberg type."""
    kind = iceberg_type(f.type, f.id)
    if kind is None:
        return None
    out = {"id": f.id, "name": f.name, "required": not f.type.nullable, "type": kind}
    if f.description is not None:
        out["doc"] = f.description
    return out


def field_ids(t: Any) -> list[int]:
    """Every field id inside an Iceberg type object (struct fields, elements, keys, values)."""
    if not isinstance(t, dict):
        return []
    if t["type"] == "struct":
        return [i for f in t["fields"] for i in (f["id"], *field_ids(f["type"]))]
    if t["type"] == "list":
        return [t["element-id"], *field_ids(t["element"])]
    return [t["key-id"], t["value-id"], *field_ids(t["key"]), *field_ids(t["value"])]


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
    """Iceberg's binary single-value serialization of a partition value or a column bound
    (a primitive type's value as ``core.binary_row`` decodes it)."""
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
    magnitude = unscaled if unscaled >= 0 else ~unscaled  # -128 fits one byte, 128 takes two
    return unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)



def comparable(value: Any, t: DataType) -> Any:
    """A partition value in one order whatever its source (Paimon's row, an Avro record read
    back, a decoded bound): timestamps as epoch microseconds, the rest as they are."""
    if value is not None and t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return epoch_micros(value)
    return value


def from_single_value(data: bytes, t: DataType) -> Any:
    """The inverse of ``single_value``, as ``comparable`` orders it."""
    import datetime as dt
    import decimal
    import struct

    name = iceberg_type(t)
    if name == "boolean":
        return data != b"\x00"
    if name == "int":
        return struct.unpack("<i", data)[0]
    if name in ("long", "timestamp", "timestamptz"):
        return struct.unpack("<q", data)[0]
    if name == "float":
        return struct.unpack("<f", data)[0]
    if name == "double":
        return struct.unpack("<d", data)[0]
    if name == "date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=struct.unpack("<i", data)[0])
    if name == "string":
        return data.decode("utf-8")
    if name == "binary":
        return bytes(data)
    return decimal.Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-t.scale)
