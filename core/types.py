"""Paimon data types: the type strings of schema files, SQL-ish type text, and Arrow types.

A Paimon atomic type is a JSON string such as ``"DECIMAL(10, 2) NOT NULL"``; composite
types (ARRAY, MAP, MULTISET, ROW) are JSON objects. ``DataType`` holds either, and
``to_json``/``parse_json`` convert exactly as Paimon's Java writes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from core.errors import UsageError

if TYPE_CHECKING:
    import pyarrow as pa

MAX_LENGTH = 2147483647  # STRING is VARCHAR(MAX_LENGTH), BYTES is VARBINARY(MAX_LENGTH)

# Roots that take no parameters.
_PLAIN = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "VARIANT", "BLOB"}
_ALIASES = {"INTEGER": "INT", "BOOL": "BOOLEAN", "TIMESTAMP_LTZ": "TIMESTAMP_LTZ",
            "LONG": "BIGINT", "SHORT": "SMALLINT", "BYTE": "TINYINT", "REAL": "FLOAT", "NUMERIC": "DECIMAL",
            "DEC": "DECIMAL", "TEXT": "STRING"}
COMPOSITE = {"ARRAY", "MAP", "MULTISET", "ROW"}


@dataclass(frozen=True, slots=True)
class DataField:
    """One column (or nested ROW field) with its stable field id."""

    id: int
    name: str
    type: "DataType"
    description: str | None = None

    def __hash__(self) -> int:
        # Id and name only (fields equal in all four hash alike, as they must): reads key
        # their per-schema plans by fields, and hashing each type in full cost more than the
        # rest of a small file's read plan.
        return hash((self.id, self.name))


@dataclass(frozen=True, slots=True)
class DataType:
    """A Paimon type.

    ``name`` is the canonical root (``BIGINT``, ``VARCHAR``, ``TIMESTAMP_LTZ``, ``ROW``...).
    STRING and BYTES are VARCHAR/VARBINARY of ``MAX_LENGTH``.
    """

    name: str
    nullable: bool = True
    precision: int | None = None  # DECIMAL precision; TIME/TIMESTAMP fractional digits
    scale: int | None = None
    length: int | None = None  # CHAR/VARCHAR/BINARY/VARBINARY; VECTOR's element count
    element: "DataType | None" = None  # ARRAY, MULTISET, VECTOR
    key: "DataType | None" = None  # MAP
    value: "DataType | None" = None  # MAP
    fields: tuple[DataField, ...] = field(default=())  # ROW

    # ---- text form -------------------------------------------------------------------
    def root_text(self) -> str:
        """The type without nullability, as Java's ``asSQLString`` prints it."""
        n = self.name
        if n in _PLAIN:
            return n
        if n == "DECIMAL":
            return f"DECIMAL({self.precision}, {self.scale})"
        if n == "VARCHAR":
            return "STRING" if self.length == MAX_LENGTH else f"VARCHAR({self.length})"
        if n == "VARBINARY":
            return "BYTES" if self.length == MAX_LENGTH else f"VARBINARY({self.length})"
        if n in ("CHAR", "BINARY"):
            return f"{n}({self.length})"
        if n == "TIME":
            return f"TIME({self.precision})"
        if n == "TIMESTAMP":
            return f"TIMESTAMP({self.precision})"
        if n == "TIMESTAMP_LTZ":
            return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        if n in ("ARRAY", "MULTISET"):
            return f"{n}<{self.element}>"
        if n == "MAP":
            return f"MAP<{self.key}, {self.value}>"
        if n == "VECTOR":
            return f"VECTOR<{self.element}, {self.length}>"
        if n == "ROW":
            return "ROW<" + ", ".join(f"{f.name} {f.type}" for f in self.fields) + ">"
        return n

    def __str__(self) -> str:
        return self.root_text() + ("" if self.nullable else " NOT NULL")

    def with_nullable(self, nullable: bool) -> "DataType":
        return replace(self, nullable=nullable)

    @property
    def is_string(self) -> bool:
        return self.name in ("CHAR", "VARCHAR")

    @property
    def is_binary(self) -> bool:
        return self.name in ("BINARY", "VARBINARY")

    @property
    def is_composite(self) -> bool:
        return self.name in COMPOSITE

    # ---- schema JSON -----------------------------------------------------------------
    def to_json(self) -> Any:
        """The value stored under ``"type"`` in a schema file."""
        suffix = "" if self.nullable else " NOT NULL"
        if self.name in ("ARRAY", "MULTISET"):
            return {"type": self.name + suffix, "element": self.element.to_json()}
        if self.name == "MAP":
            return {"type": "MAP" + suffix, "key": self.key.to_json(), "value": self.value.to_json()}
        if self.name == "VECTOR":  # as pypaimon 2.1 writes it
            return {"type": "VECTOR" + suffix, "element": self.element.to_json(), "length": self.length,
                    "nullable": self.nullable}
        if self.name == "ROW":
            return {"type": "ROW" + suffix, "fields": [field_to_json(f) for f in self.fields]}
        return self.root_text() + suffix


def field_to_json(f: DataField) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": f.type.to_json()}
    if f.description is not None:
        out["description"] = f.description
    return out


# Types Paimon 2.x added (pypaimon 2.1 writes them; Java Paimon 1.0 has none). lakectl reads
# VARIANT (its encoding: a struct of value and metadata binaries, as pypaimon returns it) and
# VECTOR (a fixed-size list); BLOB values live in .blob files of data-evolution tables, which
# lakectl reads for a plain BLOB column (``core.blob_file``); a read touching any other column
# holding a BLOB is refused, naming it (``unreadable_columns``, ``option_rules``). Writes to tables with any of them are refused (``paimon2_columns``).
PAIMON2_TYPES = ("BLOB", "VARIANT", "VECTOR")


def _has_type(t: "DataType", names: tuple[str, ...]) -> bool:
    if t.name in names:
        return True
    inner = [t.element, t.key, t.value] + [f.type for f in t.fields]
    return any(i is not None and _has_type(i, names) for i in inner)


def paimon2_columns(fields: "Sequence[DataField]") -> list[DataField]:
    """The columns whose type is or holds a Paimon 2.x type."""
    return [f for f in fields if _has_type(f.type, PAIMON2_TYPES)]


def unreadable_columns(fields: "Sequence[DataField]") -> list[DataField]:
    """The columns lakectl cannot read: BLOB (its values are in .blob files)."""
    return [f for f in fields if _has_type(f.type, ("BLOB",))]


def field_from_json(obj: dict[str, Any]) -> DataField:
    return DataField(int(obj["id"]), obj["name"], parse_json(obj["type"]), obj.get("description"))


def parse_json(obj: Any) -> DataType:
    """Parse the ``"type"`` value of a schema-file field (string or object)."""
    if isinstance(obj, str):
        return parse_type(obj)
    if not isinstance(obj, dict) or "type" not in obj:
        raise UsageError(f"not a Paimon type: {obj!r}")
    head = obj["type"].strip()
    nullable = True
    if head.upper().endswith("NOT NULL"):
        head, nullable = head[: -len("NOT NULL")].strip(), False
    root = head.upper()
    if root in ("ARRAY", "MULTISET"):
        return DataType(root, nullable, element=parse_json(obj["element"]))
    if root == "MAP":
        return DataType("MAP", nullable, key=parse_json(obj["key"]), value=parse_json(obj["value"]))
    if root == "VECTOR":
        return DataType("VECTOR", nullable, element=parse_json(obj["element"]), length=int(obj["length"]))
    if root == "ROW":
        return DataType("ROW", nullable, fields=tuple(field_from_json(f) for f in obj["fields"]))
    raise UsageError(f"not a Paimon type: {obj!r}")


# ---- type text parser ----------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z_0-9]*)|(?P<num>\d+)|(?P<punct>[(),<>])|(?P<quoted>`[^`]+`))")


class _Tokens:
    def __init__(self, text: str) -> None:
        self.text = text
        self.items: list[str] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise UsageError(f"cannot parse type {text!r} near {text[pos:pos + 12]!r}")
            self.items.append(m.group().strip())
            pos = m.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.items[self.i] if self.i < len(self.items) else None

    def peek_upper(self) -> str | None:
        t = self.peek()
        return t.upper() if t is not None else None

    def take(self) -> str:
        t = self.peek()
        if t is None:
            raise UsageError(f"type {self.text!r} ends too early")
        self.i += 1
        return t

    def expect(self, tok: str) -> None:
        t = self.take()
        if t.upper() != tok:
            raise UsageError(f"expected {tok!r} in type {self.text!r}, found {t!r}")

    def int_arg(self) -> int:
        t = self.take()
        if not t.isdigit():
            raise UsageError(f"expected a number in type {self.text!r}, found {t!r}")
        return int(t)


def _params(tok: _Tokens) -> list[int]:
    if tok.peek() != "(":
        return []
    tok.take()
    out = [tok.int_arg()]
    while tok.peek() == ",":
        tok.take()
        out.append(tok.int_arg())
    tok.expect(")")
    return out


def _parse_one(tok: _Tokens) -> DataType:
    word = tok.take().upper()
    word = _ALIASES.get(word, word)
    dt: DataType
    if word in _PLAIN:
        dt = DataType(word)
    elif word == "DECIMAL":
        p = _params(tok) or [10, 0]
        precision, scale = p[0], (p[1] if len(p) > 1 else 0)
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise UsageError(f"DECIMAL({precision}, {scale}) is out of range (precision 1..38, scale 0..precision)")
        dt = DataType("DECIMAL", precision=precision, scale=scale)
    elif word in ("STRING", "BYTES"):
        dt = DataType("VARCHAR" if word == "STRING" else "VARBINARY", length=MAX_LENGTH)
    elif word in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        p = _params(tok)
        length = p[0] if p else (1 if word in ("CHAR", "BINARY") else MAX_LENGTH)
        if length < 1:
            raise UsageError(f"{word} length must be at least 1")
        dt = DataType(word, length=length)
    elif word == "TIME":
        p = _params(tok)
        dt = DataType("TIME", precision=p[0] if p else 0)
    elif word in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = _params(tok)
        precision = p[0] if p else 6
        if not 0 <= precision <= 9:
            raise UsageError(f"TIMESTAMP precision {precision} is out of range 0..9")
        ltz = word == "TIMESTAMP_LTZ"
        if tok.peek_upper() == "WITH":
            tok.take()
            if tok.peek_upper() == "LOCAL":
                tok.take()
                ltz = True
            tok.expect("TIME")
            tok.expect("ZONE")
        elif tok.peek_upper() == "WITHOUT":
            tok.take()
            tok.expect("TIME")
            tok.expect("ZONE")
        dt = DataType("TIMESTAMP_LTZ" if ltz else "TIMESTAMP", precision=precision)
    elif word in ("ARRAY", "MULTISET"):
        tok.expect("<")
        inner = _parse_full(tok)
        tok.expect(">")
        dt = DataType(word, element=inner)
    elif word == "VECTOR":
        tok.expect("<")
        inner = _parse_full(tok)
        tok.expect(",")
        count = int(tok.take())
        tok.expect(">")
        dt = DataType("VECTOR", element=inner, length=count)
    elif word == "MAP":
        tok.expect("<")
        k = _parse_full(tok)
        tok.expect(",")
        v = _parse_full(tok)
        tok.expect(">")
        dt = DataType("MAP", key=k, value=v)
    elif word == "ROW":
        tok.expect("<")
        fields = []
        while True:
            name = tok.take().strip("`")
            fields.append(DataField(-1, name, _parse_full(tok)))
            if tok.peek() == ",":
                tok.take()
                continue
            tok.expect(">")
            break
        dt = DataType("ROW", fields=tuple(fields))
    else:
        raise UsageError(f"unknown type {word!r}")
    return dt


def _parse_full(tok: _Tokens) -> DataType:
    dt = _parse_one(tok)
    if tok.peek_upper() == "NOT":
        tok.take()
        tok.expect("NULL")
        dt = dt.with_nullable(False)
    elif tok.peek_upper() == "NULL":
        tok.take()
    return dt


def parse_type(text: str) -> DataType:
    """Parse a type such as ``DECIMAL(10, 2) NOT NULL`` or ``TIMESTAMP(3) WITH LOCAL TIME ZONE``."""
    tok = _Tokens(text)
    dt = _parse_full(tok)
    if tok.peek() is not None:
        raise UsageError(f"unexpected {tok.peek()!r} in type {text!r}")
    return dt


def parse_columns(text: str) -> list[tuple[str, DataType, str | None]]:
    """Parse ``"id BIGINT NOT NULL, name STRING COMMENT 'x'"`` into (name, type, comment)."""
    out: list[tuple[str, DataType, str | None]] = []
    for part in _split_top_level(text):
        part = part.strip()
        if not part:
            raise UsageError(f"empty column in schema {text!r}")
        comment = None
        m = re.search(r"\s+COMMENT\s+'((?:[^']|'')*)'\s*$", part, re.IGNORECASE)
        if m:
            comment = m.group(1).replace("''", "'")
            part = part[: m.start()]
        m = re.match(r"\s*(`[^`]+`|[A-Za-z_][A-Za-z_0-9]*)\s+(.+)$", part, re.DOTALL)
        if not m:
            raise UsageError(f"column {part!r} needs a name and a type, e.g. 'id BIGINT'")
        name = m.group(1).strip("`")
        out.append((name, parse_type(m.group(2)), comment))
    names = [n for n, _, _ in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"duplicate column {dupes[0]!r} in schema")
    return out


def _split_top_level(text: str) -> list[str]:
    parts, depth, cur, quoted = [], 0, [], False
    for ch in text:
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch in "(<":
            depth += 1
        elif not quoted and ch in ")>":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


# ---- Arrow -----------------------------------------------------------------------------
def _time_unit(precision: int) -> str:
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


_SIMPLE: dict[str, pa.DataType] = {}  # the parameterless types, built on first use (reads map every column of every file)


def _simple_types() -> dict[str, pa.DataType]:
    import pyarrow as pa

    if not _SIMPLE:
        _SIMPLE.update({
            "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
            "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
            "BLOB": pa.large_binary(),
            # Paimon's variant encoding, as pypaimon 2.1 stores and returns it (its fields are
            # NOT NULL there; nullable here, since a null variant's children come back null
            # from Spark's Arrow batches)
            "VARIANT": pa.struct([pa.field("value", pa.binary()), pa.field("metadata", pa.binary())])})
    return _SIMPLE


def to_arrow(dt: DataType) -> pa.DataType:
    """The Arrow type lakectl uses in memory and in Parquet for a Paimon type."""
    import pyarrow as pa

    n = dt.name
    simple = _SIMPLE or _simple_types()
    if n in simple:
        return simple[n]
    if n == "DECIMAL":
        return pa.decimal128(dt.precision, dt.scale)
    if n in ("CHAR", "VARCHAR"):
        return pa.string()
    if n in ("BINARY", "VARBINARY"):
        return pa.binary()
    if n == "TIME":
        return pa.time32("ms")
    if n == "TIMESTAMP":
        return pa.timestamp(_time_unit(dt.precision))
    if n == "TIMESTAMP_LTZ":
        return pa.timestamp(_time_unit(dt.precision), tz="UTC")
    if n in ("ARRAY", "MULTISET"):
        return pa.list_(pa.field("element", to_arrow(dt.element), dt.element.nullable))
    if n == "VECTOR":
        return pa.list_(pa.field("element", to_arrow(dt.element), dt.element.nullable), dt.length)
    if n == "MAP":
        return pa.map_(pa.field("key", to_arrow(dt.key), False), pa.field("value", to_arrow(dt.value), dt.value.nullable))
    if n == "ROW":
        return pa.struct([pa.field(f.name, to_arrow(f.type), f.type.nullable) for f in dt.fields])
    raise UsageError(f"type {dt} has no Arrow mapping")


def arrow_field(f: DataField) -> pa.Field:
    import pyarrow as pa

    return pa.field(f.name, to_arrow(f.type), f.type.nullable)


def from_arrow(t: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type found in input data (used by --auto-create)."""
    import pyarrow as pa

    checks = [(pa.types.is_boolean, "BOOLEAN"), (pa.types.is_int8, "TINYINT"), (pa.types.is_int16, "SMALLINT"),
              (pa.types.is_int32, "INT"), (pa.types.is_int64, "BIGINT"), (pa.types.is_uint8, "SMALLINT"),
              (pa.types.is_uint16, "INT"), (pa.types.is_uint32, "BIGINT"), (pa.types.is_float16, "FLOAT"),
              (pa.types.is_float32, "FLOAT"), (pa.types.is_float64, "DOUBLE"), (pa.types.is_date, "DATE")]
    for check, name in checks:
        if check(t):
            return DataType(name, nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return DataType("VARCHAR", nullable, length=MAX_LENGTH)
    if pa.types.is_fixed_size_binary(t):
        return DataType("BINARY", nullable, length=t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return DataType("VARBINARY", nullable, length=MAX_LENGTH)
    if pa.types.is_decimal(t):
        return DataType("DECIMAL", nullable, precision=t.precision, scale=t.scale)
    if pa.types.is_time(t):
        return DataType("TIME", nullable, precision=0 if t.unit == "s" else 3)
    if pa.types.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return DataType("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", nullable, precision=precision)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return DataType("ARRAY", nullable, element=from_arrow(t.value_type, t.value_field.nullable))
    if pa.types.is_map(t):
        return DataType("MAP", nullable, key=from_arrow(t.key_type, False), value=from_arrow(t.item_type))
    if pa.types.is_struct(t):
        return DataType("ROW", nullable, fields=tuple(
            DataField(-1, t.field(i).name, from_arrow(t.field(i).type, t.field(i).nullable)) for i in range(t.num_fields)))
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type, nullable)
    if pa.types.is_null(t):
        return DataType("VARCHAR", True, length=MAX_LENGTH)
    raise UsageError(f"input type {t} has no Paimon equivalent")


def map_timestamps(t: pa.DataType, fn: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``fn`` applied to every timestamp type in it, at any depth."""
    import pyarrow as pa

    if pa.types.is_timestamp(t):
        return fn(t)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(map_timestamps(f.type, fn)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(map_timestamps(t.key_type, fn)),
                       t.item_field.with_type(map_timestamps(t.item_type, fn)))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(map_timestamps(t.value_type, fn)))
    return t


def timestamps_from_counts(file_type: pa.DataType, target: pa.DataType) -> pa.DataType:
    """The type a data file column must be cast through to become ``target``, where the file
    stores timestamps as plain INT64 counts (milliseconds for TIMESTAMP(0..3), microseconds
    for TIMESTAMP(4..6); see ``core.kernels.write``): those counts read as timestamps of
    their own unit, everything else as the file has it."""
    import pyarrow as pa

    if pa.types.is_int64(file_type) and pa.types.is_timestamp(target):
        return pa.timestamp("ms" if target.unit in ("s", "ms") else "us", target.tz)
    if pa.types.is_struct(file_type) and pa.types.is_struct(target) and file_type.num_fields == target.num_fields:
        return pa.struct([f.with_type(timestamps_from_counts(f.type, g.type)) for f, g in zip(file_type, target)])
    if pa.types.is_map(file_type) and pa.types.is_map(target):
        return pa.map_(file_type.key_field.with_type(timestamps_from_counts(file_type.key_type, target.key_type)),
                       file_type.item_field.with_type(timestamps_from_counts(file_type.item_type, target.item_type)))
    if pa.types.is_list(file_type) and (pa.types.is_list(target) or pa.types.is_large_list(target)):
        return pa.list_(file_type.value_field.with_type(timestamps_from_counts(file_type.value_type, target.value_type)))
    return file_type
