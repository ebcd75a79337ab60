"""Row predicates for ``scan --where``: SQL text to a typed tree, an Arrow filter, and stats pruning.

``core.where.parse_where`` reads the text with sqlglot and builds a ``Predicate`` (with
``compare``, ``in_list``, ``like`` ... here) whose literals are already coerced to the
compared column's type, so evaluation never guesses types. A predicate answers two questions:

* ``to_arrow()``: an exact row filter with SQL three-valued logic. Rows where the
  condition is NULL are dropped, and NOT/OR/AND follow Kleene logic
  (``NOT NULL`` is NULL, ``TRUE OR NULL`` is TRUE).
* ``may_match(stats)``: a conservative answer from per-column min/max/null counts. It is
  False only when the stats prove that no row can make the condition TRUE.

Semantics the SQL text alone does not pin down:

* A literal that falls between two values of the column's type is compared exactly, not
  rounded: on an INT column ``id > 5.5`` is ``id > 5`` and ``id = 5.5`` is never true; the
  same holds for DECIMAL scale, timestamp units and ``date_col < TIMESTAMP '...'``.
* A literal outside an integer or DECIMAL range is compared exactly too (``tiny < 300`` holds
  for every non-null TINYINT).
* FLOAT literals are rounded to float32, as the stored values are. Float comparisons follow
  Java's total order, as Paimon's predicates compare (``Double.compare``): -0.0 < 0.0, and
  NaN equals NaN and lies above +Infinity (not IEEE, where -0.0 = 0.0 and NaN is unordered).
* ``LIKE`` escapes with backslash unless ``ESCAPE 'c'`` names another character (Spark, MySQL).
* TIMESTAMP_LTZ literals without an offset are read as UTC; lakectl has no session zone.
* Column names match exactly; an unquoted name that matches no column exactly may match
  one column case-insensitively.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import operator
import re
import struct
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from decimal import ROUND_FLOOR, Context, Decimal, InvalidOperation
from fractions import Fraction
from itertools import product
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa

from core import nano_datetime
from core.stats import java_float_key
from core.errors import UsageError
from core.types import DataField, DataType, to_arrow

if TYPE_CHECKING:
    import pyarrow.compute as pc  # imported where a filter is built: its import is ~0.03 s of a scan

# A truth value of SQL's three-valued logic; None is NULL (unknown).
Truth = bool | None


@dataclass(frozen=True, slots=True)
class ColumnRange:
    """What stats say about one column of a file or partition.

    ``min``/``max`` are bounds on the non-null values (None: unknown), in the Python form
    pyarrow's ``as_py()`` gives for the column's Arrow type. ``null_count`` and
    ``row_count`` are None when unknown. A partition value v is ``ColumnRange(v, v, 0, 1)``,
    a null partition value ``ColumnRange(None, None, 1, 1)``.
    """

    min: Any = None
    max: Any = None
    null_count: int | None = None
    row_count: int | None = None


# ---- the predicate tree ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Predicate:
    """A boolean condition over the columns of one row."""

    @property
    def columns(self) -> frozenset[str]:
        """Names of the columns the condition reads."""
        raise NotImplementedError

    def to_arrow(self) -> pc.Expression:
        """An Arrow expression for ``Table.filter``: TRUE keeps a row, FALSE and NULL drop it."""
        raise NotImplementedError

    def may_match(self, stats: Mapping[str, ColumnRange]) -> bool:
        """Whether some row described by ``stats`` could satisfy the condition.

        Args:
            stats: column name to ``ColumnRange``; a column absent from it is unknown.

        Returns:
            False only if the stats prove that no row makes the condition TRUE.
        """
        return True in self._outcomes(stats)

    def must_match(self, stats: Mapping[str, ColumnRange]) -> bool:
        """Whether every row described by ``stats`` makes the condition TRUE: True only if the
        stats prove it (FALSE and NULL are both ruled out), as a partition's values can for a
        condition on its partition columns alone."""
        return self._outcomes(stats) == {True}

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        """The truth values some row within ``stats`` might give (a superset of the real ones)."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Constant(Predicate):
    """TRUE, FALSE or NULL, from the text or from folding literals (``1 = 1``, ``x = NULL``)."""

    value: Truth

    @property
    def columns(self) -> frozenset[str]:
        return frozenset()

    def to_arrow(self) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.scalar(pa.scalar(self.value, pa.bool_()))

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        return frozenset({self.value})


@dataclass(frozen=True, slots=True)
class Comparison(Predicate):
    """``column op value`` with ``value`` a non-null value of the column's type."""

    column: str
    type: DataType
    op: str  # one of = <> < <= > >=
    value: Any

    @property
    def columns(self) -> frozenset[str]:
        return frozenset({self.column})

    def to_arrow(self) -> pc.Expression:
        import pyarrow.compute as pc

        if _is_float(self.type):
            return _float_compare(self.column, self.op, self.value, self.type)
        return _ARROW_OPS[self.op](pc.field(self.column), _arrow_literal(self.value, self.type))

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        known = _Known.of(stats, self.column, self.type)
        out: set[Truth] = set()
        if known.nulls:
            out.add(None)
        if known.values:
            value = java_float_key(self.value) if _is_float(self.type) else self.value
            can_true, can_false = _compare_outcomes(self.op, value, known.lo, known.hi)
            if known.nan:
                # NaN, which min/max may leave out, is a value above +Infinity in Java's order.
                nan_truth = _ARROW_OPS[self.op](_NAN_KEY, value)
                can_true, can_false = can_true or nan_truth, can_false or not nan_truth
            out.update(_truths(can_true, can_false))
        return frozenset(out)


@dataclass(frozen=True, slots=True)
class ColumnComparison(Predicate):
    """``left op right`` between two columns; pruning treats it as unknown. ``floats``: one
    side is FLOAT or DOUBLE, so both compare as doubles in Java's total order, as a column
    compares with a literal (-0.0 below 0.0, NaN equal to NaN and above everything else)."""

    left: str
    op: str
    right: str
    floats: bool = False

    @property
    def columns(self) -> frozenset[str]:
        return frozenset({self.left, self.right})

    def to_arrow(self) -> pc.Expression:
        import pyarrow.compute as pc

        if self.floats:
            x, y = (pc.field(name).cast(pa.float64()) for name in (self.left, self.right))
            equal = _java_equal(x, y)
            return {"=": equal, "<>": ~equal, "<": _java_below(x, y), "<=": _java_below(x, y) | equal,
                    ">": _java_below(y, x), ">=": _java_below(y, x) | equal}[self.op]
        return _ARROW_OPS[self.op](pc.field(self.left), pc.field(self.right))

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        a, b = _Known.of(stats, self.left, None), _Known.of(stats, self.right, None)
        out: set[Truth] = set()
        if a.nulls or b.nulls:
            out.add(None)
        if a.values and b.values:
            out.update((True, False))
        return frozenset(out)


@dataclass(frozen=True, slots=True)
class IsNull(Predicate):
    """``column IS NULL``; never NULL itself. ``IS NOT NULL`` is ``Not(IsNull)``."""

    column: str
    type: DataType

    @property
    def columns(self) -> frozenset[str]:
        return frozenset({self.column})

    def to_arrow(self) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.field(self.column).is_null()

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        known = _Known.of(stats, self.column, self.type)
        return frozenset(_truths(known.nulls, known.values))


@dataclass(frozen=True, slots=True)
class InList(Predicate):
    """``column IN (values)`` over non-null values of the column's type.

    A NULL in the SQL list is kept outside, as ``InList OR NULL``, which gives SQL's answer:
    TRUE on a hit, NULL otherwise.
    """

    column: str
    type: DataType
    values: tuple[Any, ...]

    @property
    def columns(self) -> frozenset[str]:
        return frozenset({self.column})

    def to_arrow(self) -> pc.Expression:
        import pyarrow.compute as pc

        if _is_float(self.type):
            # Java's IN is its `=` on each value: -0.0 and 0.0 apart, NaN matching NaN.
            return functools.reduce(operator.or_, (_float_compare(self.column, "=", v, self.type)
                                                   for v in self.values))
        values = list(self.values)
        field = pc.field(self.column)
        hit = pc.is_in(field, value_set=pa.array(values, to_arrow(self.type)))
        # is_in answers FALSE for a null input; SQL answers NULL, which matters under NOT.
        return pc.if_else(field.is_valid(), hit, _null())

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        known = _Known.of(stats, self.column, self.type)
        out: set[Truth] = set()
        if known.nulls:
            out.add(None)
        if known.values:
            values = [java_float_key(v) for v in self.values] if _is_float(self.type) else list(self.values)
            can_true = any(_compare_outcomes("=", v, known.lo, known.hi)[0] for v in values)
            can_true = can_true or (known.nan and _NAN_KEY in values)
            single = known.lo is not None and known.lo == known.hi
            can_false = known.nan or not (single and known.lo in values)
            out.update(_truths(can_true, can_false))
        return frozenset(out)


@dataclass(frozen=True, slots=True)
class Like(Predicate):
    """``column LIKE pattern`` on a string column; ``%`` is any run, ``_`` one character."""

    column: str
    pattern: str
    escape: str = "\\"

    @property
    def columns(self) -> frozenset[str]:
        return frozenset({self.column})

    def to_arrow(self) -> pc.Expression:
        import pyarrow.compute as pc

        return pc.match_like(pc.field(self.column), pattern=_arrow_like_pattern(_like_tokens(self.pattern, self.escape)))

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        known = _Known.of(stats, self.column, None)
        out: set[Truth] = set()
        if known.nulls:
            out.add(None)
        if known.values:
            out.update(_truths(*self._value_outcomes(known.lo, known.hi)))
        return frozenset(out)

    def _value_outcomes(self, lo: Any, hi: Any) -> tuple[bool, bool]:
        parts = _like_tokens(self.pattern, self.escape)
        if lo is not None and lo == hi:
            hit = _like_regex(parts).fullmatch(lo) is not None
            return hit, not hit
        prefix, rest = _like_prefix(parts)
        if not rest:
            return _compare_outcomes("=", prefix, lo, hi)
        upper = _next_prefix(prefix)
        can_true = (hi is None or hi >= prefix) and (lo is None or upper is None or lo < upper)
        if all(p == _ANY for p in rest):
            # Every string between two strings that start with the prefix starts with it too.
            can_false = not (lo is not None and hi is not None and lo.startswith(prefix) and hi.startswith(prefix))
        else:
            can_false = True
        return can_true, can_false


@dataclass(frozen=True, slots=True)
class And(Predicate):
    children: tuple[Predicate, ...]

    @property
    def columns(self) -> frozenset[str]:
        return frozenset().union(*(c.columns for c in self.children))

    def to_arrow(self) -> pc.Expression:
        expr = self.children[0].to_arrow()
        for child in self.children[1:]:
            expr = expr & child.to_arrow()  # and_kleene
        return expr

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        return _combine(_and3, (c._outcomes(stats) for c in self.children))


@dataclass(frozen=True, slots=True)
class Or(Predicate):
    children: tuple[Predicate, ...]

    @property
    def columns(self) -> frozenset[str]:
        return frozenset().union(*(c.columns for c in self.children))

    def to_arrow(self) -> pc.Expression:
        expr = self.children[0].to_arrow()
        for child in self.children[1:]:
            expr = expr | child.to_arrow()  # or_kleene
        return expr

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        return _combine(_or3, (c._outcomes(stats) for c in self.children))


@dataclass(frozen=True, slots=True)
class Not(Predicate):
    child: Predicate

    @property
    def columns(self) -> frozenset[str]:
        return self.child.columns

    def to_arrow(self) -> pc.Expression:
        return ~self.child.to_arrow()  # invert keeps NULL as NULL

    def _outcomes(self, stats: Mapping[str, ColumnRange]) -> frozenset[Truth]:
        return frozenset(None if t is None else not t for t in self.child._outcomes(stats))


def pinned_values(predicate: Predicate, column: str) -> frozenset[Any] | None:
    """The values ``column`` must hold for ``predicate`` to be TRUE, when the predicate pins
    it to a list (``column = v``, ``column IN (...)``, under AND, or in every branch of an OR);
    None when it does not. An empty set: nothing makes the predicate TRUE."""
    if isinstance(predicate, (Comparison, InList)) and _is_float(predicate.type):
        return None  # a set takes -0.0 and 0.0 for one value, which Paimon tells apart
    if isinstance(predicate, Comparison):
        return frozenset({predicate.value}) if predicate.column == column and predicate.op == "=" else None
    if isinstance(predicate, InList):
        return frozenset(predicate.values) if predicate.column == column else None
    if isinstance(predicate, Constant):
        return None if predicate.value is True else frozenset()
    if isinstance(predicate, And):
        pins = [p for p in (pinned_values(c, column) for c in predicate.children) if p is not None]
        return functools.reduce(frozenset.intersection, pins) if pins else None
    if isinstance(predicate, Or):
        pins = [pinned_values(c, column) for c in predicate.children]
        return None if any(p is None for p in pins) else frozenset().union(*pins)
    return None


# ---- three-valued logic and stats reasoning ---------------------------------------------
@functools.cache
def _null() -> pc.Expression:
    """A null boolean, built on first use: the first ``pa.scalar`` of a process makes pyarrow
    import pandas (to ask whether the value is a pandas object), which an import must not do."""
    import pyarrow.compute as pc

    return pc.scalar(pa.scalar(None, pa.bool_()))
_ARROW_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _and3(a: Truth, b: Truth) -> Truth:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or3(a: Truth, b: Truth) -> Truth:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _combine(op: Callable[[Truth, Truth], Truth], sets: Iterable[frozenset[Truth]]) -> frozenset[Truth]:
    """Every value ``op`` can give when each operand takes any of its possible values.

    Treating children as independent loses correlation (``x < 3 AND x > 5`` stays possible),
    which costs pruning but never soundness.
    """
    it = iter(sets)
    acc = next(it)
    for s in it:
        acc = frozenset(op(a, b) for a, b in product(acc, s))
    return acc


def _truths(can_true: bool, can_false: bool) -> set[Truth]:
    return {t for t, ok in ((True, can_true), (False, can_false)) if ok}


def _is_float(t: DataType | None) -> bool:
    return t is not None and t.name in ("FLOAT", "DOUBLE")


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


@dataclass(frozen=True, slots=True)
class _Known:
    """One column's stats reduced to what pruning needs."""

    nulls: bool  # some row may hold NULL
    values: bool  # some row may hold a non-null value
    nan: bool  # some non-null value may be NaN, which min/max do not bound
    lo: Any  # bounds on the non-NaN values, None when unknown (of a float: ``java_float_key``s)
    hi: Any

    @staticmethod
    def of(stats: Mapping[str, ColumnRange], column: str, type_: DataType | None) -> "_Known":
        r = stats.get(column)
        if r is None:
            return _Known(True, True, _is_float(type_), None, None)
        if r.row_count == 0:
            return _Known(False, False, False, None, None)
        nulls = r.null_count is None or r.null_count > 0
        values = not (r.null_count is not None and r.row_count is not None and r.null_count >= r.row_count)
        lo = None if r.min is None or _is_nan(r.min) else r.min
        hi = None if r.max is None or _is_nan(r.max) else r.max
        if _is_nano_stamp(type_):
            # Values of a nanosecond column compare as epoch nanos (ints). A bound that arrives
            # as a datetime lost its digits past the microsecond: rounded down, it is still a
            # lower bound, and 999 nanos more make it an upper one.
            lo = _bound_nanos(lo, 0)
            hi = _bound_nanos(hi, 999)
        # Writers may leave NaN out of min/max; only one known non-null value rules it out.
        one_value = r.null_count is not None and r.row_count is not None and r.row_count - r.null_count == 1
        nan = values and _is_float(type_) and not (one_value and lo is not None)
        if _is_float(type_):
            lo, hi = _float_bound_keys(lo, hi)
        return _Known(nulls, values, nan, lo, hi)


def _float_bound_keys(lo: float | None, hi: float | None) -> tuple[Any, Any]:
    """Float bounds as keys of Java's total order. A zero bound is widened to both zeros:
    writers that compare IEEE-style (ORC's, Arrow's) may keep either zero as the bound of a
    file holding both (Java's ORC files hold max -0.0 beside a 0.0)."""
    return (None if lo is None else java_float_key(-0.0 if lo == 0.0 else lo),
            None if hi is None else java_float_key(0.0 if hi == 0.0 else hi))


def _is_nano_stamp(t: DataType | None) -> bool:
    """A TIMESTAMP(7..9) column: its literals and bounds are epoch nanos, not datetimes."""
    return t is not None and t.name in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 6


def _bound_nanos(v: Any, slack: int) -> int | None:
    """A stats bound of a nanosecond column as epoch nanos; ``slack`` is added to a bound
    that kept only microseconds (a datetime), 0 for a lower bound and 999 for an upper one."""
    if v is None or isinstance(v, int):
        return v
    exact = getattr(v, "value", None)  # pandas' Timestamp (Parquet stats) holds its epoch nanos
    if isinstance(exact, int):
        return exact
    return epoch_nanos(v) + slack


def epoch_nanos(stamp: datetime, nanos: int = 0) -> int:
    """Epoch nanoseconds of a datetime (naive: wall clock as UTC) plus sub-microsecond ``nanos``
    (a NanoDatetime brings its own)."""
    return nano_datetime.epoch_nanos(stamp, True) + nanos


_INT64 = range(-2 ** 63, 2 ** 63)


def _compare_outcomes(op: str, v: Any, lo: Any, hi: Any) -> tuple[bool, bool]:
    """Whether some non-NaN value in [lo, hi] makes ``value op v`` TRUE, and whether one makes it FALSE."""
    if _is_nan(v):
        return op == "<>", op != "<>"
    in_range = (lo is None or lo <= v) and (hi is None or v <= hi)
    only_v = lo is not None and hi is not None and lo == v == hi
    if op == "=":
        return in_range, not only_v
    if op == "<>":
        return not only_v, in_range
    if op == "<":
        return lo is None or lo < v, hi is None or hi >= v
    if op == "<=":
        return lo is None or lo <= v, hi is None or hi > v
    if op == ">":
        return hi is None or hi > v, lo is None or lo <= v
    if op == ">=":
        return hi is None or hi >= v, lo is None or lo < v
    raise ValueError(f"unknown comparison {op!r}")


def _arrow_literal(value: Any, type_: DataType) -> pc.Expression:
    import pyarrow.compute as pc

    return pc.scalar(pa.scalar(value, to_arrow(type_)))


# ---- floats in Java's total order ---------------------------------------------------------
_NAN_KEY = java_float_key(math.nan)


def _float_compare(column: str, op: str, value: float, type_: DataType) -> pc.Expression:
    """``column op value`` on a FLOAT or DOUBLE column in Java's total order, as Paimon's
    predicates compare: -0.0 < 0.0, NaN = NaN and NaN above everything else; NULL stays NULL."""
    import pyarrow.compute as pc

    field = pc.field(column)
    equal = _float_equal(field, value, type_)
    if op == "=":
        return equal
    if op == "<>":
        return ~equal
    below = _float_below(field, value, type_)
    return {"<": below, "<=": below | equal, ">": ~(below | equal), ">=": ~below}[op]


def _float_equal(field: pc.Expression, value: float, type_: DataType) -> pc.Expression:
    """Values equal to ``value`` in Java's total order: the same zero, or NaN for NaN."""
    import pyarrow.compute as pc

    if math.isnan(value):
        return pc.is_nan(field)
    if value == 0.0:
        negative = _negative_zero(field, type_)
        return (field == _arrow_literal(0.0, type_)) & (negative if math.copysign(1.0, value) < 0 else ~negative)
    return field == _arrow_literal(value, type_)


def _float_below(field: pc.Expression, value: float, type_: DataType) -> pc.Expression:
    """Values strictly below ``value`` in Java's total order."""
    import pyarrow.compute as pc

    if math.isnan(value):
        return ~pc.is_nan(field)
    below = field < _arrow_literal(value, type_)  # IEEE: false for NaN, the zeros equal
    if value == 0.0 and math.copysign(1.0, value) > 0:
        return below | _negative_zero(field, type_)
    return below


def _java_equal(x: pc.Expression, y: pc.Expression) -> pc.Expression:
    """Two double expressions equal in Java's total order: NaN = NaN, -0.0 <> 0.0."""
    import pyarrow.compute as pc

    zero = pc.scalar(0.0)
    zeros_apart = (x == zero) & (y == zero) & (_sign_bit(x) != _sign_bit(y))
    return (pc.is_nan(x) & pc.is_nan(y)) | ((x == y) & ~zeros_apart)


def _java_below(x: pc.Expression, y: pc.Expression) -> pc.Expression:
    """``x`` strictly below ``y`` in Java's total order (doubles): NaN above all, -0.0 below 0.0."""
    import pyarrow.compute as pc

    zero = pc.scalar(0.0)
    zeros = (x == zero) & (y == zero)
    return (~pc.is_nan(x) & pc.is_nan(y)) | (x < y) | (zeros & _sign_bit(x) & ~_sign_bit(y))


def _sign_bit(zero: pc.Expression) -> pc.Expression:
    """Of a zero: is it -0.0 (its reciprocal is -Infinity; Arrow has no sign-bit kernel)?"""
    import pyarrow.compute as pc

    return pc.divide(pc.scalar(1.0), zero) < pc.scalar(0.0)


def _negative_zero(field: pc.Expression, type_: DataType) -> pc.Expression:
    """-0.0 in a FLOAT or DOUBLE column."""
    return (field == _arrow_literal(0.0, type_)) & _sign_bit(field)


# ---- LIKE patterns ------------------------------------------------------------------------
_ANY, _ONE = "%", "_"  # wildcard tokens; a literal character is the token "=" + char


def _like_tokens(pattern: str, escape: str) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape:
            if i + 1 == len(pattern) or pattern[i + 1] not in (_ANY, _ONE, escape):
                raise UsageError(f"LIKE pattern {pattern!r}: the escape {escape!r} must be followed by %, _ or itself")
            out.append("=" + pattern[i + 1])
            i += 2
            continue
        out.append(ch if ch in (_ANY, _ONE) else "=" + ch)
        i += 1
    return tuple(out)


def _like_prefix(parts: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The literal text before the first wildcard, and the tokens from there on."""
    i = 0
    while i < len(parts) and parts[i] not in (_ANY, _ONE):
        i += 1
    return "".join(p[1:] for p in parts[:i]), parts[i:]


def _like_regex(parts: tuple[str, ...]) -> re.Pattern[str]:
    body = "".join(".*" if p == _ANY else "." if p == _ONE else re.escape(p[1:]) for p in parts)
    return re.compile(body, re.DOTALL)


def _arrow_like_pattern(parts: tuple[str, ...]) -> str:
    # Arrow's match_like escapes with backslash, whatever ESCAPE the SQL used.
    return "".join(p if p in (_ANY, _ONE) else ("\\" + p[1] if p[1] in "%_\\" else p[1]) for p in parts)


def _next_prefix(prefix: str) -> str | None:
    """The least string above every string starting with ``prefix``; None if there is none."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            return "".join(chars) + chr(last + 1)
    return None


# ---- literals ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Literal:
    """A literal as written: number (int or Decimal), string, bool, date, timestamp, time, or NULL."""

    value: Any
    kind: str
    text: str  # the SQL, for messages
    nanos: int | Fraction = 0  # a time or timestamp's digits past the microsecond (0 <= nanos < 1000), which datetime lacks


@dataclass(frozen=True, slots=True)
class _Fit:
    """Where a literal lands among a column type's values.

    ``exact``: ``value`` is the literal in the column's type. ``between``: the literal lies
    strictly between ``value`` and the next value of the type. ``below``/``above``: outside
    the type's range.
    """

    kind: str
    value: Any = None


_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_WIDE = Context(prec=200)  # DECIMAL(38) plus room; the default 28 digits would round


def _fit(lit: Literal, f: DataField) -> _Fit:
    """Coerce a non-null literal to column ``f``'s type, or raise UsageError."""
    t, v, kind = f.type, lit.value, lit.kind
    n = t.name

    def bad(why: str = "") -> UsageError:
        return UsageError(f"cannot compare column {f.name!r} ({t.root_text()}) with {lit.text}{why}")

    if n == "BOOLEAN":
        if kind == "bool":
            return _Fit("exact", v)
        if kind == "string" and v.strip().lower() in ("true", "false"):
            return _Fit("exact", v.strip().lower() == "true")
        raise bad()
    if n in _INT_BITS or n == "DECIMAL":
        d = _number(lit, bad)
        if d.is_infinite() or d.adjusted() > 40:  # beyond any column's range; skip building huge ints
            return _Fit("above" if d > 0 else "below")
        if n in _INT_BITS:
            limit = 2 ** (_INT_BITS[n] - 1)
            floor = int(d.to_integral_value(rounding=ROUND_FLOOR))
            if floor < -limit:
                return _Fit("below")
            if floor >= limit:
                return _Fit("above")
            return _Fit("exact" if floor == d else "between", floor)
        limit = Decimal(10) ** (t.precision - t.scale)
        if d >= limit:
            return _Fit("above")
        if d <= -limit:
            return _Fit("below")
        floor = d.quantize(Decimal(1).scaleb(-t.scale), rounding=ROUND_FLOOR, context=_WIDE)
        if floor <= -limit:
            return _Fit("below")
        return _Fit("exact" if _WIDE.compare(floor, d) == 0 else "between", floor)
    if n in ("FLOAT", "DOUBLE"):
        if kind == "number":
            x = float(v)
        elif kind == "string":
            try:
                x = float(v)
            except ValueError:
                raise bad() from None
        else:
            raise bad()
        return _Fit("exact", _float32(x) if n == "FLOAT" else x)
    if t.is_string:
        if kind == "string":
            return _Fit("exact", v)
        raise bad(" (quote string literals: 'text')")
    if t.is_binary:
        if kind == "binary":
            return _Fit("exact", v)
        if kind == "string":
            return _Fit("exact", v.encode("utf-8"))
        raise bad(" (binary literals: X'0700ff' or FROM_BASE64('BwD/'))")
    if n == "DATE":
        stamp, nanos = _temporal(lit, bad)
        if isinstance(stamp, datetime):
            if stamp.tzinfo is not None:
                raise bad(" (a DATE has no time zone)")
            day = stamp.date()
            return _Fit("exact" if stamp.time() == time() and not nanos else "between", day)
        return _Fit("exact", stamp)
    if n in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _fit_timestamp(t, *_temporal(lit, bad), bad)
    if n == "TIME":
        if kind == "time":
            clock, nanos = v, lit.nanos
        elif kind == "string":
            try:
                clock, nanos = _iso_with_nanos(time.fromisoformat, v)
            except ValueError:
                raise bad() from None
        else:
            raise bad()
        if clock.tzinfo is not None:
            raise bad(" (TIME has no time zone)")
        if clock.microsecond % 1000 or nanos:  # TIME is stored in milliseconds
            return _Fit("between", clock.replace(microsecond=clock.microsecond // 1000 * 1000))
        return _Fit("exact", clock)
    raise UsageError(f"column {f.name!r} has type {t.root_text()}; --where compares only atomic columns")


def _fit_timestamp(t: DataType, stamp: date | datetime, nanos: int | Fraction, bad: Callable[[str], UsageError]) -> _Fit:
    """A timestamp literal (``nanos`` past its microsecond) in a TIMESTAMP(_LTZ) column's
    terms: a datetime for precision up to 6, epoch nanos for 7 to 9 (a datetime would drop
    the last three digits and match nothing)."""
    if not isinstance(stamp, datetime):
        stamp = datetime.combine(stamp, time())
    if t.name == "TIMESTAMP" and stamp.tzinfo is not None:
        raise bad(" (the column is TIMESTAMP without time zone; drop the offset)")
    if t.name == "TIMESTAMP_LTZ":
        stamp = stamp.replace(tzinfo=timezone.utc) if stamp.tzinfo is None else stamp.astimezone(timezone.utc)
    if _is_nano_stamp(t):
        value = epoch_nanos(stamp, math.floor(nanos))
        if value not in _INT64:  # Arrow's nanosecond columns hold 1677-09-21 to 2262-04-11 only
            return _Fit("below" if value < 0 else "above")
        return _Fit("exact" if nanos == math.floor(nanos) else "between", value)
    if to_arrow(t).unit == "ms" and (stamp.microsecond % 1000 or nanos):
        return _Fit("between", stamp.replace(microsecond=stamp.microsecond // 1000 * 1000))
    return _Fit("between" if nanos else "exact", stamp)


def _number(lit: Literal, bad: Callable[[], UsageError]) -> Decimal:
    if lit.kind == "number":
        return Decimal(lit.value)
    if lit.kind == "string":
        try:
            d = Decimal(lit.value.strip())
        except InvalidOperation:
            raise bad() from None
        if not d.is_nan():
            return d
    raise bad()


def _float32(x: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _temporal(lit: Literal, bad: Callable[[str], UsageError]) -> tuple[date | datetime, int | Fraction]:
    """A date or timestamp literal and its nanos past the microsecond."""
    if lit.kind in ("date", "timestamp"):
        return lit.value, lit.nanos
    if lit.kind == "string":
        text = lit.value.strip()
        try:
            return date.fromisoformat(text), 0
        except ValueError:
            pass
        try:
            return _iso_with_nanos(datetime.fromisoformat, text)
        except ValueError:
            pass
    raise bad("")


_FRACTION = re.compile(r"(.*\d\d:\d\d:\d\d)[.,](\d+)(.*)", re.DOTALL)


def _iso_with_nanos(parse: Callable[[str], Any], text: str) -> tuple[Any, int | Fraction]:
    """``parse`` (a ``fromisoformat``) of ``text``, and the fraction's digits past the
    microsecond as nanos: Python's parsers drop those digits without a word. Digits past
    the nanosecond make the nanos a Fraction, a literal between two nanoseconds.

    Raises:
        ValueError: the text does not parse.
    """
    text = text.strip()
    m = _FRACTION.fullmatch(text)
    if m is None or len(m.group(2)) <= 6:
        return parse(text), 0
    digits = m.group(2)
    nanos = Fraction(int(digits[6:].ljust(3, "0")), 10 ** max(len(digits) - 9, 0))
    return parse(f"{m.group(1)}.{digits[:6]}{m.group(3)}"), int(nanos) if nanos.denominator == 1 else nanos


def text_value(text: str, f: DataField) -> Any:
    """The value of column ``f``'s type that ``text`` spells, read as ``--where f = 'text'``
    reads a string literal (``42``, ``2024-01-01``, ``true``, ``1.50``).

    Raises:
        UsageError: ``text`` spells no value of the type (``abc`` or ``4.5`` for an INT).
    """
    bad = UsageError(f"{text!r} is not a value of column {f.name!r} ({f.type.root_text()})")
    if f.type.is_binary:
        binary = _binary_key_text(text)
        if binary is not None:
            return binary
    try:
        fit = _fit(Literal(text, "string", repr(text)), f)
    except UsageError:
        raise bad from None
    if fit.kind != "exact":
        raise bad
    return fit.value


_HEX_TEXT = re.compile(r"[xX]'([0-9a-fA-F]*)'")
_BASE64_TEXT = re.compile(r"(?i:from_base64|unbase64)\('([^']*)'\)")


def _binary_key_text(text: str) -> bytes | None:
    """The bytes of a binary literal written as in --where (``X'0700ff'``, ``FROM_BASE64('BwD/')``);
    None for other text, which stands for its UTF-8 bytes."""
    text = text.strip()
    m = _HEX_TEXT.fullmatch(text)
    if m:
        return hex_bytes(m.group(1))
    m = _BASE64_TEXT.fullmatch(text)
    return base64_bytes(m.group(1)) if m else None


def literal_text_value(kind: str, text: str) -> tuple[Any, int | Fraction]:
    """The value of ``DATE '...'``, ``TIMESTAMP '...'`` or ``TIME '...'``, and its nanos past the microsecond."""
    parse: Callable[[str], Any] = {"date": date.fromisoformat, "timestamp": datetime.fromisoformat,
                                   "time": time.fromisoformat}[kind]
    try:
        return _iso_with_nanos(parse, text)
    except ValueError:
        raise UsageError(f"invalid {kind.upper()} literal {text!r} in --where") from None


# ---- building predicates -----------------------------------------------------------------
def _never(f: DataField) -> Predicate:
    """FALSE for a non-null value, NULL for NULL: what ``x = <unreachable literal>`` gives."""
    return And((IsNull(f.name, f.type), Constant(None)))


def _always(f: DataField) -> Predicate:
    """TRUE for a non-null value, NULL for NULL."""
    return Or((Not(IsNull(f.name, f.type)), Constant(None)))


def flat(cls: type[And] | type[Or], parts: Sequence[Predicate]) -> Predicate:
    if len(parts) == 1:
        return parts[0]
    children: list[Predicate] = []
    for p in parts:
        children.extend(p.children if isinstance(p, cls) else (p,))
    return cls(tuple(children))


Operand = DataField | Literal
_FAMILIES = {"BOOLEAN": "boolean", "TINYINT": "number", "SMALLINT": "number", "INT": "number", "BIGINT": "number",
             "FLOAT": "number", "DOUBLE": "number", "DECIMAL": "number", "CHAR": "string", "VARCHAR": "string",
             "BINARY": "binary", "VARBINARY": "binary", "DATE": "date", "TIME": "time", "TIMESTAMP": "timestamp",
             "TIMESTAMP_LTZ": "timestamp_ltz"}


def compare(left: Operand, op: str, right: Operand) -> Predicate:
    if isinstance(left, Literal) and isinstance(right, DataField):
        left, right, op = right, left, _FLIP[op]
    if isinstance(left, DataField) and isinstance(right, DataField):
        return _column_comparison(left, op, right)
    if isinstance(left, DataField):
        assert isinstance(right, Literal)
        return _compare_literal(left, op, right)
    assert isinstance(left, Literal) and isinstance(right, Literal)
    return _fold(left, op, right)


def _compare_literal(f: DataField, op: str, lit: Literal) -> Predicate:
    if lit.value is None:
        _check_atomic(f)
        return Constant(None)
    fit = _fit(lit, f)
    if fit.kind == "exact":
        return Comparison(f.name, f.type, op, fit.value)
    if op == "=":
        return _never(f)
    if op == "<>":
        return _always(f)
    if fit.kind == "between":
        # No column value lies strictly between fit.value and the literal.
        return Comparison(f.name, f.type, "<=" if op in ("<", "<=") else ">", fit.value)
    return _always(f) if (op in (">", ">=")) == (fit.kind == "below") else _never(f)


def _check_atomic(f: DataField) -> None:
    if f.type.name not in _FAMILIES:
        raise UsageError(f"column {f.name!r} has type {f.type.root_text()}; --where compares only atomic columns")


def _column_comparison(a: DataField, op: str, b: DataField) -> Predicate:
    _check_atomic(a)
    _check_atomic(b)
    pred = ColumnComparison(a.name, op, b.name, floats=_is_float(a.type) or _is_float(b.type))
    mismatch = UsageError(f"cannot compare column {a.name!r} ({a.type.root_text()}) "
                          f"with column {b.name!r} ({b.type.root_text()})")
    if _FAMILIES[a.type.name] != _FAMILIES[b.type.name]:
        raise mismatch
    # Arrow may still refuse a pair (two wide DECIMALs overflow precision 38); ask it now,
    # on no rows, rather than fail in the middle of a scan.
    probe = pa.table({a.name: pa.array([], to_arrow(a.type)), b.name: pa.array([], to_arrow(b.type))})
    try:
        probe.filter(pred.to_arrow())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise mismatch from None
    return pred


def _fold(a: Literal, op: str, b: Literal) -> Predicate:
    if a.value is None or b.value is None:
        return Constant(None)
    naive = (a.kind == "timestamp" and a.value.tzinfo is None, b.kind == "timestamp" and b.value.tzinfo is None)
    if a.kind != b.kind or naive[0] != naive[1]:
        raise UsageError(f"cannot compare {a.text} with {b.text} in --where")
    # Times and timestamps compare with their digits past the microsecond (0 for other kinds).
    return Constant(bool(_ARROW_OPS[op]((a.value, a.nanos), (b.value, b.nanos))))


def in_list(lhs: Operand, items: list[Operand]) -> Predicate:
    if isinstance(lhs, DataField) and all(isinstance(i, Literal) for i in items):
        lits = [i for i in items if isinstance(i, Literal)]
        _check_atomic(lhs)
        values: dict[Any, Any] = {}
        for lit in lits:
            if lit.value is None:
                continue
            fit = _fit(lit, lhs)
            # A value the column cannot hold can never match. Floats are told apart as Java
            # does (-0.0 from 0.0, NaN matching NaN), where keying by the value would merge the zeros.
            if fit.kind == "exact":
                values.setdefault(java_float_key(fit.value) if _is_float(lhs.type) else fit.value, fit.value)
        base = InList(lhs.name, lhs.type, tuple(values.values())) if values else _never(lhs)
        return Or((base, Constant(None))) if any(lit.value is None for lit in lits) else base
    return flat(Or, [compare(lhs, "=", i) for i in items])


def like(lhs: Operand, pattern: Operand, escape: str | None) -> Predicate:
    if escape is not None and len(escape) != 1:
        raise UsageError(f"LIKE ESCAPE must be one character, not {escape!r}")
    esc = "\\" if escape is None else escape
    if not isinstance(pattern, Literal):
        raise UsageError("LIKE needs a string literal pattern in --where")
    if pattern.value is not None and pattern.kind != "string":
        raise UsageError(f"LIKE needs a string literal pattern in --where, not {pattern.text}")
    if isinstance(lhs, DataField):
        if not lhs.type.is_string:
            raise UsageError(f"LIKE needs a string column; {lhs.name!r} is {lhs.type.root_text()}")
        if pattern.value is None:
            return Constant(None)
        _like_tokens(pattern.value, esc)  # reject a bad escape now, not at scan time
        return Like(lhs.name, pattern.value, esc)
    if lhs.value is None or pattern.value is None:
        return Constant(None)
    if lhs.kind != "string":
        raise UsageError(f"LIKE needs a string, not {lhs.text}")
    return Constant(_like_regex(_like_tokens(pattern.value, esc)).fullmatch(lhs.value) is not None)


# ---- sqlglot AST to predicate -------------------------------------------------------------


def hex_bytes(digits: str) -> bytes:
    try:
        return bytes.fromhex(digits) if len(digits) % 2 == 0 else bytes.fromhex("x")  # odd: refuse
    except ValueError:
        raise UsageError(f"X'{digits}' is not a binary literal: give an even number of hex digits") from None


def base64_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except binascii.Error:
        raise UsageError(f"{text!r} is not base64 text (A-Z a-z 0-9 + /, padded with =)") from None
