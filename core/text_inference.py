"""Column types for ``write --auto-create`` from CSV, JSON lines or JSON input, chosen so that no
value changes: a column gets a type only when every value's text is exactly the text ``scan``
prints for that type (``core.text_columns``), so reading the input in that type and printing it
again gives the same text, cell for cell.

The rules (README, "Types of a table created from text"), in order:

- no value at all: STRING;
- ``true``/``false`` only: BOOLEAN;
- integers without leading zeros (``-0`` is not one): BIGINT, or DECIMAL(p, 0) beyond 64 bits
  (up to 38 digits);
- numbers with one and the same count of digits after the point (``12.50``, ``3.00``):
  DECIMAL(18, s) of that scale (a DOUBLE would print ``12.5``), or DECIMAL(p, s) up to 38
  when a value has more than 18 digits;
- numbers as Python and ``scan`` print doubles (``0.1``, ``2.25``, ``1e+20``, with ``NaN`` and
  ``Infinity`` among them): DOUBLE;
- anything else, dates and timestamps included: STRING. ``2024-01-02`` could be a DATE, but
  it is just as much the text of a STRING, and a wrong guess would change what readers see;
  ``--like`` (or ``create``) gives a column the type it should have.

JSON keeps its own kinds: a JSON string becomes STRING, or DECIMAL when it holds a fixed-scale
number (``scan -f jsonl`` prints decimals as strings, to keep their digits); numbers become
BIGINT, DECIMAL or DOUBLE by the rules above applied to their literal text; objects become ROW
and arrays ARRAY of the same rules applied inside; a column that mixes kinds is STRING holding
each value's JSON text. In CSV a nested value's JSON text stays STRING.

The input is read once here, as text, a batch at a time (a CSV file streams; JSON is parsed
record by record), and the write then reads it again in these types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from core.text_values import FloatText

_INTEGER = r"^-?(0|[1-9][0-9]*)$"
_FIXED_POINT = r"^-?(0|[1-9][0-9]*)\.[0-9]+$"
_NEGATIVE_ZERO = r"^-0(\.0*)?$"
_FLOAT_WORDS = ("NaN", "Infinity", "-Infinity")
_MAX_DECIMAL_PRECISION = 38
_ROOMY_PRECISION = 18
_INT64_DIGITS = 18  # every integer of up to 18 digits fits 64 bits; 19 digits are checked


@dataclass
class TextFacts:
    """What the values of one text column seen so far allow; ``merge`` folds in the next batch."""

    values: int = 0
    booleans: bool = True
    integers: bool = True  # canonical integers that fit 64 bits
    fixed_scale: int | None = None  # the one scale of canonical fixed-point numbers (0: integers)
    fixed: bool = True
    digits: int = 0  # the most significant digits of the fixed-point numbers
    doubles: bool = True  # every value is the text scan prints for its double
    finite_double: bool = False

    @staticmethod
    def of(text: pa.Array) -> "TextFacts":
        """The facts of one batch of text (nulls are nulls in every type)."""
        text = text.drop_null()
        facts = TextFacts(values=len(text))
        if not len(text):
            return facts
        facts.booleans = _all(pc.is_in(text, value_set=pa.array(["true", "false"])))
        integer = pc.match_substring_regex(text, _INTEGER)
        fixed = pc.match_substring_regex(text, _FIXED_POINT)
        numeric = pc.or_(integer, fixed)
        facts.fixed = _all(numeric) and not _any(pc.match_substring_regex(text, _NEGATIVE_ZERO))
        if facts.fixed:
            facts.fixed_scale, facts.digits = _scale_and_digits(text)
        facts.integers = facts.fixed and facts.fixed_scale == 0 and _fits_int64(text)
        facts.doubles, facts.finite_double = _canonical_doubles(text)
        return facts

    def merge(self, other: "TextFacts") -> "TextFacts":
        if not other.values:
            return self
        if not self.values:
            return other
        same_scale = self.fixed_scale is not None and self.fixed_scale == other.fixed_scale
        return TextFacts(values=self.values + other.values, booleans=self.booleans and other.booleans,
                         integers=self.integers and other.integers,
                         fixed_scale=self.fixed_scale if same_scale else None,
                         fixed=self.fixed and other.fixed and same_scale,
                         digits=max(self.digits, other.digits), doubles=self.doubles and other.doubles,
                         finite_double=self.finite_double or other.finite_double)

    def type(self, kinds: str = "any") -> pa.DataType:
        """The type that keeps every value's text; ``kinds`` narrows it for JSON's kinds:
        "string" (a JSON string: STRING or DECIMAL), "number" (BIGINT, DECIMAL, DOUBLE)."""
        if not self.values:
            return pa.string()
        if kinds == "any" and self.booleans:
            return pa.bool_()
        if kinds != "string" and self.integers:
            return pa.int64()
        if self.fixed and self.fixed_scale is not None and (kinds != "string" or self.fixed_scale > 0):
            # room for larger values of later writes, and still Paimon's compact decimal
            # (precision up to 18 is stored as a long)
            precision = max(self.digits, _ROOMY_PRECISION)
            if precision <= _MAX_DECIMAL_PRECISION:
                return pa.decimal128(precision, self.fixed_scale)
        if kinds != "string" and self.doubles and self.finite_double:
            return pa.float64()
        return pa.string()


def _all(mask: pa.Array) -> bool:
    return bool(pc.all(mask).as_py())


def _any(mask: pa.Array) -> bool:
    return bool(pc.any(mask).as_py())


def _scale_and_digits(text: pa.Array) -> tuple[int | None, int]:
    """The one scale of canonical fixed-point texts (None if they differ) and the most digits
    a value needs (its integer part without a lone 0, plus the scale)."""
    length = pc.utf8_length(text)
    point = pc.find_substring(text, ".")
    scale = pc.if_else(pc.equal(point, -1), 0, pc.subtract(pc.subtract(length, point), 1))
    low, high = pc.min_max(scale).values()
    if low.as_py() != high.as_py():
        return None, 0
    unsigned = pc.utf8_ltrim(text, "-")
    whole = pc.if_else(pc.equal(point, -1), pc.utf8_length(unsigned), pc.find_substring(unsigned, "."))
    whole = pc.if_else(pc.starts_with(unsigned, "0"), 0, whole)  # "0.5": no digit before the point
    digits = pc.max(pc.add(whole, scale)).as_py() or 0
    return low.as_py(), int(digits)


def _fits_int64(text: pa.Array) -> bool:
    long = pc.greater(pc.utf8_length(pc.utf8_ltrim(text, "-")), _INT64_DIGITS)
    if not _any(long):
        return True
    try:
        pc.cast(text.filter(long), pa.int64(), safe=True)
        return True
    except (pa.ArrowInvalid, OverflowError):
        return False


def _canonical_doubles(text: pa.Array) -> tuple[bool, bool]:
    """Whether every text is what scan prints for its double, and whether one is finite."""
    from core.text_columns import canonical_text

    words = pc.is_in(text, value_set=pa.array(_FLOAT_WORDS))
    numbers = text.filter(pc.invert(words))
    if not len(numbers):
        return True, False
    if not _all(pc.match_substring_regex(numbers, r"^-?[0-9.]+(e[-+][0-9]+)?$")):
        return False, False
    try:
        doubles = pc.cast(numbers, pa.float64(), safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False, False
    same = _all(pc.equal(canonical_text(doubles), numbers))
    return same, same and _any(pc.is_finite(doubles))


# ---- CSV ---------------------------------------------------------------------------------------
def csv_schema(batches: Iterable[pa.Table]) -> pa.Schema:
    """The column types of CSV text read as strings, batch by batch."""
    facts: dict[str, TextFacts] = {}
    for batch in batches:
        for name, column in zip(batch.column_names, batch.columns):
            text = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            if pa.types.is_null(text.type):
                text = text.cast(pa.string())
            facts[name] = facts.get(name, TextFacts()).merge(TextFacts.of(text))
    return pa.schema([pa.field(name, f.type()) for name, f in facts.items()])


# ---- JSON --------------------------------------------------------------------------------------
@dataclass
class _JsonColumn:
    """The values of one JSON column (or of a nested field or array element), by kind."""

    kinds: set[str] = field(default_factory=set)
    strings: list[str] = field(default_factory=list)
    numbers: list[str] = field(default_factory=list)
    fields: dict[str, "_JsonColumn"] = field(default_factory=dict)
    elements: "_JsonColumn | None" = None

    def add(self, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool):
            self.kinds.add("boolean")
        elif isinstance(value, str):
            self.kinds.add("number" if value in _FLOAT_WORDS and "number" in self.kinds else "string")
            self.strings.append(value)
        elif isinstance(value, (int, float)):
            self.kinds.add("number")
            self.numbers.append(value.text if isinstance(value, FloatText) else json.dumps(value))
        elif isinstance(value, dict):
            self.kinds.add("object")
            for key, item in value.items():
                self.fields.setdefault(key, _JsonColumn()).add(item)
        elif isinstance(value, list):
            self.kinds.add("array")
            self.elements = self.elements or _JsonColumn()
            for item in value:
                self.elements.add(item)

    def type(self) -> pa.DataType | None:
        """The type that keeps every value; None where no type does (kinds mixed)."""
        kinds = set(self.kinds)
        if kinds == {"number", "string"} and all(s in _FLOAT_WORDS for s in self.strings):
            kinds = {"number"}  # NaN and the infinities among the numbers of a DOUBLE column
        if not kinds:
            return pa.string()
        if len(kinds) > 1:
            return None
        kind = kinds.pop()
        if kind == "boolean":
            return pa.bool_()
        if kind == "string":
            return TextFacts.of(pa.array(self.strings, pa.string())).type("string")
        if kind == "number":
            facts = TextFacts.of(pa.array(self.numbers + self.strings, pa.string()))
            chosen = facts.type("number")
            return None if pa.types.is_string(chosen) else chosen
        if kind == "array":
            inner = self.elements.type() if self.elements is not None else pa.string()
            return None if inner is None else pa.list_(inner)
        fields = [(name, column.type()) for name, column in self.fields.items()]
        if not fields or any(t is None for _, t in fields) or any(not name for name, _ in fields):
            return None
        return pa.struct(fields)


def json_schema(records: Iterator[dict[str, Any]]) -> pa.Schema:
    """The column types of JSON records (objects parsed by ``parse_json``)."""
    columns: dict[str, _JsonColumn] = {}
    for record in records:
        for key, value in record.items():
            columns.setdefault(key, _JsonColumn()).add(value)
    return pa.schema([pa.field(name, column.type() or pa.string()) for name, column in columns.items()])
