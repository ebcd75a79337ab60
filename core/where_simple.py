"""``--where`` conditions of the simplest shape read without sqlglot.

Importing sqlglot costs a scan with a condition more CPU than a small key-range read itself
(about 0.3 s against 0.15 s). The common conditions (``id BETWEEN 5 AND 10``, ``id IN (1, 2)``,
``dt = '2024-01-01' AND id >= 3``) are a conjunction of a column compared with a literal, and
are read here into the very predicate ``core.where.parse_where`` builds from them: the same
``core.predicate`` functions (``compare``, ``in_list``, ``flat``) on the same operands. Any
other text, and any text this reader is unsure of (quoting, keywords, a literal that does not
fit its column), goes to ``parse_where``, so its answers and its error messages are unchanged.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Sequence

from core.errors import UsageError
from core.predicate import And, Literal, Operand, Predicate, compare, flat, in_list
from core.types import DataField

# identifiers, numbers (no exponent), plain quoted strings, operators, parentheses and commas
_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>-?\d+(?:\.\d+)?(?![\w.]))"
                    r"|'(?P<string>[^'\\]*)'(?!')|(?P<op><>|!=|<=|>=|=|<|>)|(?P<punct>[(),]))")
_OPS = {"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# Words sqlglot may read as something other than a column: a name among them takes the full parser.
_KEYWORDS = frozenset("""
    ALL AND ANY ARRAY AS ASC BETWEEN BY CASE CAST COLLATE CROSS CURRENT_DATE CURRENT_TIME
    CURRENT_TIMESTAMP DATE DATETIME DESC DISTINCT DIV ELSE END ESCAPE EXCEPT EXISTS FALSE FILTER
    FROM FULL GLOB GROUP HAVING ILIKE IN INTERSECT INTERVAL INTO IS JOIN LEFT LIKE LIMIT MAP MOD
    NATURAL NOT NULL ON OR ORDER OVER OVERLAPS REGEXP RIGHT RLIKE ROW SELECT SIMILAR SOME STRUCT
    THEN TIME TIMESTAMP TRUE UNION UNNEST USING VALUES WHEN WHERE WINDOW WITH XOR
""".split())


class _NotSimple(Exception):
    """The text is not of the simple shape: the full parser reads it."""


def parse_condition(text: str, fields: Sequence[DataField]) -> Predicate:
    """``core.where.parse_where(text, fields)``, without importing sqlglot when the text is a
    conjunction of ``column op literal``, ``column BETWEEN literal AND literal`` and
    ``column IN (literals)`` (numbers and plain quoted strings).

    Raises:
        UsageError: as ``parse_where``.
    """
    try:
        return _Reader(text, fields).conjunction()
    except (_NotSimple, UsageError):
        from core.where import parse_where  # sqlglot: only for conditions beyond the simple shape

        return parse_where(text, fields)


class _Reader:
    def __init__(self, text: str, fields: Sequence[DataField]) -> None:
        self.tokens = _tokens(text)
        self.at = 0
        self.fields = list(fields)

    def conjunction(self) -> Predicate:
        parts = [self.term()]
        while self.at < len(self.tokens):
            self.keyword("AND")
            parts.append(self.term())
        return flat(And, parts)

    def term(self) -> Predicate:
        column = self.column()
        kind, value = self.next()
        if kind == "op":
            return compare(column, _OPS[value], self.literal())
        if kind == "name" and value.upper() == "BETWEEN":
            low = self.literal()
            self.keyword("AND")
            high = self.literal()
            return And((compare(column, ">=", low), compare(column, "<=", high)))
        if kind == "name" and value.upper() == "IN":
            self.punct("(")
            items = [self.literal()]
            while self.peek() == ("punct", ","):
                self.at += 1
                items.append(self.literal())
            self.punct(")")
            return in_list(column, items)
        raise _NotSimple

    def column(self) -> DataField:
        kind, name = self.next()
        if kind != "name" or name.upper() in _KEYWORDS:
            raise _NotSimple
        exact = [f for f in self.fields if f.name == name]
        if exact:
            return exact[0]
        folded = [f for f in self.fields if f.name.lower() == name.lower()]
        if len(folded) != 1:
            raise _NotSimple  # unknown or ambiguous: the full parser says so
        return folded[0]

    def literal(self) -> Operand:
        kind, value = self.next()
        if kind == "string":
            return Literal(value, "string", _shorten(f"'{value}'"))
        if kind != "number":
            raise _NotSimple
        # as sqlglot gives a negative number: the literal of its digits, negated
        digits = value.lstrip("-")
        try:
            number = Decimal(digits)
        except InvalidOperation:
            raise _NotSimple from None
        parsed: int | Decimal = int(number) if "." not in digits else number
        if value.startswith("-"):
            negated = parsed.copy_negate() if isinstance(parsed, Decimal) else -parsed
            return Literal(negated, "number", value)
        return Literal(parsed, "number", digits)

    def keyword(self, word: str) -> None:
        kind, value = self.next()
        if kind != "name" or value.upper() != word:
            raise _NotSimple

    def punct(self, char: str) -> None:
        if self.next() != ("punct", char):
            raise _NotSimple

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def next(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise _NotSimple
        self.at += 1
        return token


def _shorten(text: str) -> str:
    """A literal's text in messages, as ``core.where`` shortens it."""
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _NotSimple
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    if not out:
        raise _NotSimple
    return out
