"""``--where`` text to a ``core.predicate.Predicate``: the SQL is read by sqlglot (imported
only by commands given a condition) and each node becomes a typed predicate, its literals
coerced to the compared column's type (``core.predicate.compare``, ``in_list``, ``like``).
The semantics are ``core.predicate``'s."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Sequence

from sqlglot import exp, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, SqlglotError

from core.errors import UsageError
from core.predicate import (And, Comparison, Constant, IsNull, Literal, Not, Operand, Or, Predicate,
                            base64_bytes, compare, flat, hex_bytes, in_list, like, literal_text_value)
from core.types import DataField


class _WhereDialect(Dialect):
    """sqlglot's default SQL, plus backquoted identifiers as Spark and Flink users write them."""

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ['"', "`"]
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]  # SQL's binary literal X'0700ff'

    class Parser(parser.Parser):
        def _warn_unsupported(self) -> None:
            # sqlglot would log a warning and return an opaque Command; a --where must
            # either parse fully or fail with a message, and core writes nothing itself.
            self.raise_error("Unsupported syntax")


_DIALECT = _WhereDialect()


_COMPARE_NODES: dict[type[exp.Expression], str] = {
    exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.DPipe, exp.BitwiseAnd, exp.BitwiseOr,
               exp.BitwiseXor, exp.BitwiseNot, exp.BitwiseLeftShift, exp.BitwiseRightShift)
_CAST_KINDS = {exp.DataType.Type.DATE: "date", exp.DataType.Type.TIME: "time", exp.DataType.Type.TIMESTAMP: "timestamp",
               exp.DataType.Type.DATETIME: "timestamp", exp.DataType.Type.TIMESTAMPNTZ: "timestamp",
               exp.DataType.Type.TIMESTAMPTZ: "timestamp", exp.DataType.Type.TIMESTAMPLTZ: "timestamp"}


def _shorten(text: str) -> str:
    text = " ".join(text.split())  # messages are one line
    return text if len(text) <= 60 else text[:57] + "..."


def _snippet(node: exp.Expression) -> str:
    return _shorten(node.sql(dialect=_WhereDialect))


def _unsupported(node: exp.Expression) -> UsageError:
    if isinstance(node, (exp.Subquery, exp.Query, exp.Exists)):
        what = "subqueries are"
    elif isinstance(node, _ARITHMETIC) or isinstance(node, exp.Neg):
        what = "arithmetic is"
    elif isinstance(node, exp.Func):
        what = "function calls are"
    elif isinstance(node, (exp.Placeholder, exp.Parameter)):
        what = "parameters are"
    else:
        what = f"{node.key.upper()} is"
    return UsageError(f"{what} not supported in --where: {_snippet(node)}")


def _chain(node: exp.Expression) -> list[exp.Expression]:
    """The operands of ``a AND b AND c`` (sqlglot nests it left-deep) without a call per operand."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is type(node):
            stack += [n.expression, n.this]
        else:
            out.append(n)
    return out


class _Builder:
    def __init__(self, fields: Sequence[DataField]) -> None:
        self.fields = list(fields)
        self.by_name = {f.name: f for f in self.fields}

    def condition(self, node: exp.Expression) -> Predicate:
        negate = bool(node.args.get("negate")) if isinstance(node, (exp.Like, exp.In, exp.Between, exp.Is)) else False
        pred = self._positive(node)
        return Not(pred) if negate else pred

    def _positive(self, node: exp.Expression) -> Predicate:
        if isinstance(node, exp.Paren):
            return self.condition(node.this)
        if isinstance(node, exp.And):
            return flat(And, [self.condition(n) for n in _chain(node)])
        if isinstance(node, exp.Or):
            return flat(Or, [self.condition(n) for n in _chain(node)])
        if isinstance(node, exp.Not):
            return Not(self.condition(node.this))
        if type(node) in _COMPARE_NODES:
            return compare(self.operand(node.this), _COMPARE_NODES[type(node)], self.operand(node.expression))
        if isinstance(node, exp.Is):
            return self._is(node)
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None:
                raise _unsupported(node.args.get("query") or node.args["unnest"])
            if node.args.get("field") is not None or not node.expressions:
                raise UsageError(f"IN needs a list of values in --where: {_snippet(node)}")
            return in_list(self.operand(node.this), [self.operand(e) for e in node.expressions])
        if isinstance(node, exp.Between):
            return self._between(node)
        if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
            escape = self.operand(node.expression)
            if not isinstance(escape, Literal) or escape.kind != "string":
                raise UsageError(f"LIKE ESCAPE needs a string literal in --where: {_snippet(node)}")
            pred = like(self.operand(node.this.this), self.operand(node.this.expression), escape.value)
            return Not(pred) if node.this.args.get("negate") else pred
        if isinstance(node, exp.Like):
            return like(self.operand(node.this), self.operand(node.expression), None)
        if isinstance(node, exp.Boolean):
            return Constant(bool(node.this))
        if isinstance(node, exp.Null):
            return Constant(None)
        if isinstance(node, exp.Column):
            f = self.column(node)
            if f.type.name != "BOOLEAN":
                raise UsageError(f"column {f.name!r} is {f.type.root_text()}, not a condition; compare it, e.g. {f.name} = ...")
            return Comparison(f.name, f.type, "=", True)
        if isinstance(node, (exp.Literal, exp.Neg, exp.Cast)):
            raise UsageError(f"{_snippet(node)} is a value, not a condition, in --where")
        raise _unsupported(node)

    def _is(self, node: exp.Is) -> Predicate:
        if not isinstance(node.expression, exp.Null):
            raise UsageError(f"only IS NULL and IS NOT NULL are supported in --where: {_snippet(node)}")
        target = self.operand(node.this)
        if isinstance(target, Literal):
            return Constant(target.value is None)
        return IsNull(target.name, target.type)

    def _between(self, node: exp.Between) -> Predicate:
        x, low, high = self.operand(node.this), self.operand(node.args["low"]), self.operand(node.args["high"])
        pred = And((compare(x, ">=", low), compare(x, "<=", high)))
        if node.args.get("symmetric"):
            return Or((pred, And((compare(x, ">=", high), compare(x, "<=", low)))))
        return pred

    def _base64(self, node: exp.Expression) -> Literal:
        args = [node.this] if isinstance(node, exp.FromBase64) else node.expressions
        if len(args) != 1 or not isinstance(args[0], exp.Literal) or not args[0].is_string:
            raise UsageError(f"base64 literals take one string: {_snippet(node)}")
        return Literal(base64_bytes(args[0].this), "binary", _snippet(node))

    def column(self, node: exp.Column) -> DataField:
        ident = node.this
        if node.args.get("table") is not None:
            raise UsageError(f"qualified column names are not supported in --where: {_snippet(node)}")
        if not isinstance(ident, exp.Identifier):
            raise _unsupported(node)
        name = ident.name
        if name in self.by_name:
            return self.by_name[name]
        if not ident.quoted:
            folded = [f for f in self.fields if f.name.lower() == name.lower()]
            if len(folded) == 1:
                return folded[0]
        names = ", ".join(f.name for f in self.fields)
        raise UsageError(f"unknown column {name!r} in --where; columns are: {names}")

    def operand(self, node: exp.Expression) -> Operand:
        if isinstance(node, exp.Paren):
            return self.operand(node.this)
        if isinstance(node, exp.Column):
            return self.column(node)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return Literal(node.this, "string", _snippet(node))
            return Literal(_parse_number(node.this), "number", node.this)
        if isinstance(node, exp.Neg):
            inner = self.operand(node.this)
            if isinstance(inner, Literal) and inner.kind == "number":
                negated = inner.value.copy_negate() if isinstance(inner.value, Decimal) else -inner.value
                return Literal(negated, "number", "-" + inner.text)
            raise _unsupported(node)
        if isinstance(node, exp.Boolean):
            return Literal(bool(node.this), "bool", _snippet(node))
        if isinstance(node, exp.Null):
            return Literal(None, "null", "NULL")
        if isinstance(node, exp.HexString):
            return Literal(hex_bytes(node.this), "binary", f"X'{node.this}'")
        if _is_base64_call(node):
            return self._base64(node)
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
            kind = _CAST_KINDS.get(node.to.this)
            if kind is None:
                raise UsageError(f"only DATE, TIME and TIMESTAMP literals may be cast in --where: {_snippet(node)}")
            text = node.this.this
            value, nanos = literal_text_value(kind, text)
            return Literal(value, kind, f"{kind.upper()} '{text}'", nanos)
        if isinstance(node, exp.Cast):
            raise UsageError(f"CAST is supported only for DATE, TIME and TIMESTAMP literals in --where: {_snippet(node)}")
        raise _unsupported(node)


def _is_base64_call(node: exp.Expression) -> bool:
    """``FROM_BASE64('...')`` (MySQL, Flink) or ``UNBASE64('...')`` (Spark, Hive): the base64
    that scan prints for a BYTES value, as a binary literal."""
    return isinstance(node, exp.FromBase64) or (isinstance(node, exp.Anonymous) and str(node.this).upper() == "UNBASE64")


def _parse_number(text: str) -> int | Decimal:
    try:
        d = Decimal(text)
    except InvalidOperation:
        raise UsageError(f"cannot read number {text!r} in --where") from None
    return int(d) if d == d.to_integral_value() and not any(c in text for c in ".eE") else d


def parse_where(text: str, fields: Sequence[DataField]) -> Predicate:
    """Parse a SQL condition over ``fields`` into a ``Predicate``.

    Args:
        text: a SQL boolean expression, e.g. ``dt = '2024-01-01' AND id > 5``.
        fields: the table's columns; literals are coerced to the compared column's type.

    Returns:
        The predicate, with every literal already of its column's type.

    Raises:
        UsageError: a syntax error, an unknown column, a literal that does not fit its
            column, or a construct lakectl does not evaluate (functions, subqueries, arithmetic).
    """
    if not text.strip():
        raise UsageError("--where is empty; give a condition such as \"id > 5\"")
    try:
        return _parse(text, fields)
    except RecursionError:
        # sqlglot recurses per parenthesis level, about 50 levels under the default limit.
        raise UsageError("--where nests too deeply; use fewer parentheses, or IN (...) for long lists") from None


def _parse(text: str, fields: Sequence[DataField]) -> Predicate:
    try:
        parsed = _DIALECT.parse_into(exp.Condition, text)
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        what = first.get("description") or str(e).splitlines()[0]
        what = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", what)  # sqlglot names node classes
        if first.get("highlight"):
            what += f" at {_shorten(first['highlight'])!r}"
        if first.get("line"):
            what += f" (line {first['line']}, column {first['col']})"
        raise UsageError(f"cannot parse --where {_shorten(text)!r}: {what}") from None
    except SqlglotError as e:
        raise UsageError(f"cannot parse --where {_shorten(text)!r}: {str(e).splitlines()[0]}") from None
    statements = [s for s in parsed if s is not None]
    if len(statements) != 1:
        raise UsageError(f"--where takes one condition, not {len(statements)} statements")
    return _Builder(fields).condition(statements[0])
