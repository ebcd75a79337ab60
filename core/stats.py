"""SimpleStats: per-column min, max and null count of a data file (spec 5.4, 4.2).

This module owns the ``SimpleStats`` record (``_MIN_VALUES``, ``_MAX_VALUES``,
``_NULL_COUNTS`` in manifests: two BinaryRows and a list), computing it from an Arrow
table under Paimon's ``metadata.stats-mode`` (``none``, ``counts``, ``full``,
``truncate(N)``), and decoding it back to per-column values.

Which column set the stats cover (``_VALUE_STATS_COLS``) is the caller's decision;
``compute`` covers exactly the fields it is given, in that order.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core import binary_row as br
from core.errors import InvalidDataError, UsageError
from core.types import DataField, DataType

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Serialized stats: BinaryRows of per-column minima and maxima, and null counts."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...]

    def to_avro(self) -> dict[str, Any]:
        """The Avro record as manifests store it."""
        return {"_MIN_VALUES": self.min_values, "_MAX_VALUES": self.max_values,
                "_NULL_COUNTS": list(self.null_counts)}

    @classmethod
    def from_avro(cls, record: Mapping[str, Any]) -> SimpleStats:
        """Read the Avro record; a null ``_NULL_COUNTS`` (older writers) means no counts."""
        counts = record.get("_NULL_COUNTS")
        return cls(bytes(record["_MIN_VALUES"]), bytes(record["_MAX_VALUES"]),
                   tuple(counts) if counts is not None else ())


EMPTY_STATS = SimpleStats(br.EMPTY_ROW, br.EMPTY_ROW, ())


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """One column's decoded stats; ``None`` min/max/count means unknown."""

    min: Any
    max: Any
    null_count: int | None


# ---- stats modes ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Mode:
    name: str  # none, counts, full, truncate
    length: int = 0  # truncate length


_TRUNCATE = re.compile(r"truncate\((\d+)\)")


@functools.lru_cache(maxsize=64)  # a write parses its table's mode for every file
def _parse_mode(mode: str) -> _Mode:
    text = mode.strip().lower()
    if text in ("none", "counts", "full"):
        return _Mode(text)
    m = _TRUNCATE.fullmatch(text)
    if m and int(m.group(1)) > 0:
        return _Mode("truncate", int(m.group(1)))
    raise UsageError(f"metadata.stats-mode {mode!r} is not none, counts, full or truncate(N) with N > 0")


# ---- string truncation (Java TruncateSimpleColStatsCollector) --------------------------
_SURROGATES = range(0xD800, 0xE000)


def truncate_min(value: str, length: int) -> str:
    """A lower bound of ``value``: its first ``length`` code points."""
    return value[:length]


def truncate_max(value: str, length: int) -> str | None:
    """An upper bound of ``value`` at most ``length`` code points long, or None if none exists.

    Like Java: keep the first ``length`` code points and increment the last one that can
    be incremented, dropping what follows it. Unlike Java, a code point is never
    incremented into the surrogate range (Java's UTF-8 encoder turns a lone surrogate
    into ``?``, which is no upper bound); it skips to U+E000 instead.
    """
    if len(value) <= length:
        return value
    prefix = value[:length]
    for i in range(length - 1, -1, -1):
        nxt = ord(prefix[i]) + 1
        if nxt in _SURROGATES:
            nxt = _SURROGATES.stop
        if nxt <= sys.maxunicode:
            return prefix[:i] + chr(nxt)
    return None


# ---- compute ----------------------------------------------------------------------------
_UNORDERED = {"ARRAY", "MAP", "MULTISET", "ROW"}
# Java Paimon 1.0 writes no min/max for BINARY and VARBINARY columns, only null counts, and its
# filters compare bytes signed where current Paimon and Parquet compare them unsigned: bounds
# in either order would make one of those readers skip files holding matching rows.
_UNBOUNDED = _UNORDERED | {"BINARY", "VARBINARY"}


def _numpy_min_max(column: pa.ChunkedArray | pa.Array) -> tuple[Any, Any] | None:
    """``_min_max`` of a null-free integer, float, boolean or timestamp column through numpy, or None
    for other columns. A data file of a small commit holds a few hundred rows, where numpy's
    reductions take a few microseconds and ``pc.min_max`` with its two scalars ~15."""
    import numpy as np
    import pyarrow as pa

    arrow_type = column.type
    timestamp = pa.types.is_timestamp(arrow_type)
    floating = pa.types.is_float32(arrow_type) or pa.types.is_float64(arrow_type)
    boolean = pa.types.is_boolean(arrow_type)
    if column.null_count or not (timestamp or floating or boolean or pa.types.is_integer(arrow_type)):
        return None
    from core.arrow_values import numpy_bool_values, numpy_numbers  # from the buffers: no pandas

    if boolean:
        flags = numpy_bool_values(column)
        return bool(flags.min()), bool(flags.max())
    values = numpy_numbers(column)
    if timestamp:
        # Exact epoch nanos from the stored counts, as the Arrow path below computes them.
        counts = values
        factor = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[arrow_type.unit]
        return int(counts.min()) * factor, int(counts.max()) * factor
    if not floating:
        return int(values.min()), int(values.max())
    if np.isnan(values).any():
        return None, None  # as below: NaN has no place in an ordering readers agree on
    return _total_order_bounds(float(values.min()), float(values.max()))


def java_float_key(x: float) -> tuple[float, int]:
    """A sort key of a FLOAT or DOUBLE value in Java's total order (``Double.compare``), by
    which Paimon's predicates and stats compare: -0.0 below 0.0, and NaN equal to itself and
    above +Infinity."""
    if math.isnan(x):
        return math.inf, 2
    return x, 0 if math.copysign(1.0, x) < 0 else 1  # the sign bit tells -0.0 from 0.0


def _total_order_bounds(lo: float, hi: float) -> tuple[float, float]:
    """Float bounds that hold in Java's total order (``Double.compare``: -0.0 < 0.0), by which
    Paimon's readers prune: numpy and Arrow take the zeros as equal and return either, so a zero
    bound is widened (-0.0 below, 0.0 above), as Parquet's writers widen theirs."""
    return (-0.0 if lo == 0.0 else lo), (0.0 if hi == 0.0 else hi)


def _min_max(column: pa.ChunkedArray | pa.Array, t: DataType) -> tuple[Any, Any]:
    """Column min and max as ``core.binary_row`` values; (None, None) when not meaningful."""
    import pyarrow as pa
    import pyarrow.compute as pc  # here, not at import: metadata commands decode stats only

    if t.name in _UNBOUNDED or column.null_count == len(column):
        return None, None
    fast = _numpy_min_max(column)
    if fast is not None:
        return fast
    if t.name in ("FLOAT", "DOUBLE") and pc.any(pc.is_nan(column)).as_py():
        # NaN has no place in an ordering readers agree on; unknown keeps pruning safe.
        return None, None
    result = pc.min_max(column)
    lo, hi = result["min"], result["max"]
    if pa.types.is_timestamp(column.type):
        # Exact epoch nanos: as_py() would drop (or refuse) sub-microsecond digits.
        factor = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[column.type.unit]
        return lo.cast(pa.int64()).as_py() * factor, hi.cast(pa.int64()).as_py() * factor
    if t.name in ("FLOAT", "DOUBLE"):
        return _total_order_bounds(lo.as_py(), hi.as_py())
    return lo.as_py(), hi.as_py()


def _column_stats(column: pa.ChunkedArray | pa.Array, t: DataType, mode: _Mode) -> ColumnStats:
    nulls = column.null_count
    if mode.name == "counts":
        return ColumnStats(None, None, nulls)
    lo, hi = _min_max(column, t)
    if mode.name == "truncate" and t.is_string and lo is not None:
        hi = truncate_max(hi, mode.length)
        # Java drops both bounds when the max cannot be bounded.
        lo = truncate_min(lo, mode.length) if hi is not None else None
    return ColumnStats(lo, hi, nulls)


# ---- from a Parquet footer ----------------------------------------------------------------
# Per column of a Parquet file just written: (min, max, null count) as the footer stores them
# (physical values, folded over the row groups), or None where a row group has no usable
# min/max (all nulls or NaNs, or values beyond the writer's statistics size).
FooterStats = Mapping[str, "tuple[Any, Any, int] | None"]


def footer_stats(metadata: Any) -> dict[str, tuple[Any, Any, int] | None]:
    """The ``FooterStats`` of a ``pyarrow.parquet.FileMetaData`` (top-level columns by name).

    Reading them back costs ~15 us a file where computing min/max column by column over the
    rows costs ~180 us: the writer has already seen every value."""
    out: dict[str, tuple[Any, Any, int] | None] = {}
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        seen = set()
        for c in range(group.num_columns):
            chunk = group.column(c)
            name = chunk.path_in_schema
            st = chunk.statistics
            if name in seen:  # a column "a.b" beside a nested a.b: neither is known
                out[name] = None
                continue
            seen.add(name)
            if name in out and out[name] is None:
                continue
            if st is None or not st.has_null_count or (not st.has_min_max and st.null_count != chunk.num_values):
                out[name] = None  # unknown: the caller computes this column itself
                continue
            lo, hi = (st.min_raw, st.max_raw) if st.has_min_max else (None, None)
            if name in out:
                lo0, hi0, nulls0 = out[name]
                lo = lo0 if lo is None else lo if lo0 is None else min(lo0, lo)
                hi = hi0 if hi is None else hi if hi0 is None else max(hi0, hi)
                out[name] = (lo, hi, nulls0 + st.null_count)
            else:
                out[name] = (lo, hi, st.null_count)
    return out


# Paimon types whose footer min/max are exactly the values ``_min_max`` computes, once
# converted by ``_from_footer``: Parquet orders these as Arrow does (signed integers, unsigned
# bytes for strings) and stores them as Arrow holds them. Binaries get no bounds (_UNBOUNDED).
_FOOTER_TYPES = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR", "VARCHAR",
                 "DECIMAL", "TIMESTAMP", "TIMESTAMP_LTZ"}


def _from_footer(found: tuple[Any, Any, int] | None, column: pa.ChunkedArray | pa.Array, t: DataType,
                 mode: _Mode) -> ColumnStats | None:
    """``_column_stats`` from the footer's ``found`` values, or None where they cannot stand in
    for the rows' own (the caller then computes the column)."""
    import pyarrow as pa

    if found is None or t.name not in _FOOTER_TYPES or found[2] != column.null_count:
        return None
    lo, hi, nulls = found
    if mode.name == "counts":
        return ColumnStats(None, None, nulls)
    if lo is None:  # no value but nulls (else the footer would have bounds)
        return ColumnStats(None, None, nulls) if nulls == len(column) else None
    arrow_type = column.type
    if t.name in ("FLOAT", "DOUBLE"):
        # Parquet skips NaN and turns a zero bound into -0.0 (min) or +0.0 (max): ask the rows.
        if lo == 0.0 or hi == 0.0 or _has_nan(column):
            return None
    elif t.is_string:
        lo, hi = lo.decode("utf-8"), hi.decode("utf-8")
    elif t.name == "DECIMAL":
        if not (pa.types.is_decimal(arrow_type) and isinstance(lo, int)):
            return None  # stored as fixed bytes, not as an integer
        from decimal import Decimal

        lo, hi = Decimal(lo).scaleb(-t.scale), Decimal(hi).scaleb(-t.scale)
    elif t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        # milli and microsecond counts are stored as they are; seconds become millis and
        # nanoseconds may be INT96 in a file: those are computed from the rows
        if not pa.types.is_timestamp(arrow_type) or arrow_type.unit not in ("ms", "us"):
            return None
        factor = 1_000_000 if arrow_type.unit == "ms" else 1_000
        lo, hi = lo * factor, hi * factor
    if mode.name == "truncate" and t.is_string:
        hi = truncate_max(hi, mode.length)
        lo = truncate_min(lo, mode.length) if hi is not None else None
    return ColumnStats(lo, hi, nulls)


def _has_nan(column: pa.ChunkedArray | pa.Array) -> bool:
    import numpy as np
    import pyarrow.compute as pc

    if not column.null_count:  # numpy: a few microseconds, where Arrow's two kernels take ~30
        from core.arrow_values import numpy_numbers

        return bool(np.isnan(numpy_numbers(column)).any())
    return bool(pc.any(pc.is_nan(column)).as_py())


def compute(table: pa.Table, fields: Sequence[DataField], mode: str = "full",
            footer: FooterStats | None = None) -> SimpleStats:
    """Stats of ``table``'s columns named by ``fields``, in ``fields`` order.

    Args:
        table: the rows of one data file.
        fields: the columns to cover, each looked up by name.
        mode: ``metadata.stats-mode``: ``none`` (returns ``EMPTY_STATS``; the caller
            writes ``_VALUE_STATS_COLS = []``), ``counts`` (null counts only),
            ``full``, or ``truncate(N)`` (strings cut to N code points).
        footer: the ``footer_stats`` of the Parquet file just written from ``table``: columns
            it covers exactly are taken from it instead of being computed from the rows.

    Returns:
        The stats; composite and binary columns, all-null columns and float columns
        holding NaN get null min/max; a zero float bound is widened to -0.0 (min) or 0.0 (max).

    Raises:
        UsageError: an unknown mode.
        InvalidDataError: a field has no column in ``table``.
    """
    if _parse_mode(mode).name == "none":
        return EMPTY_STATS
    names = set(table.column_names)
    for f in fields:
        if f.name not in names:
            raise InvalidDataError(f"no column {f.name!r} to compute stats of")
    columns = [table.column(f.name) for f in fields]
    return from_columns(column_stats(columns, fields, mode, footer), [f.type for f in fields])


def column_stats(columns: Sequence[pa.ChunkedArray | pa.Array], fields: Sequence[DataField], mode: str,
                 footer: FooterStats | None = None) -> list[ColumnStats]:
    """Each of ``columns``' stats as ``fields`` (paired in order) and ``mode`` (not ``none``)
    make them: what ``compute`` serializes. A data file's writer takes its columns by
    position and serializes the key stats from the value stats' columns
    (``same_in_full``), where looking every column up by name again costs more than the
    stats themselves on a small file.

    Raises:
        UsageError: an unknown mode.
    """
    parsed = _parse_mode(mode)
    out = []
    for column, f in zip(columns, fields):
        known = _from_footer(footer.get(f.name), column, f.type, parsed) if footer is not None else None
        out.append(known if known is not None else _column_stats(column, f.type, parsed))
    return out


def same_in_full(mode: str, t: DataType) -> bool:
    """Whether a column of type ``t`` has the same stats under ``mode`` as under ``full``
    (the key stats' mode): truncation changes strings only, and ``counts`` every bound."""
    name = _parse_mode(mode).name
    return name == "full" or (name == "truncate" and not t.is_string)


class StatsCollector:
    """``compute`` folded chunk by chunk, for a file written as its rows pass (the streamed
    writer of ``core.kernels.write``): ``add`` each chunk, then ``result`` equals ``compute``
    over the chunks' concatenation.

    Per column it keeps the null count and each chunk's min and max (two values per chunk, not
    the rows): the min and max of those are the column's, and the rules of ``_column_stats``
    (NaN, all nulls, unordered types, truncation) are applied to them once at the end."""

    def __init__(self, fields: Sequence[DataField], mode: str = "full"):
        self._fields = list(fields)
        self._mode = _parse_mode(mode)
        self._nulls = [0] * len(self._fields)
        self._nan = [False] * len(self._fields)
        self._extremes: list[list["pa.Array"]] = [[] for _ in self._fields]

    def add(self, table: "pa.Table") -> None:
        """Fold one chunk of the file's rows in (``table`` holds each field's column by name).

        Raises:
            InvalidDataError: a field has no column in ``table``.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        if self._mode.name == "none":
            return
        for i, f in enumerate(self._fields):
            if f.name not in table.column_names:
                raise InvalidDataError(f"no column {f.name!r} to compute stats of")
            column = table.column(f.name)
            self._nulls[i] += column.null_count
            if self._mode.name == "counts" or f.type.name in _UNBOUNDED or self._nan[i] \
                    or column.null_count == len(column):
                continue
            if f.type.name in ("FLOAT", "DOUBLE") and pc.any(pc.is_nan(column)).as_py():
                self._nan[i] = True  # one NaN anywhere makes the file's min/max unknown
                self._extremes[i] = []
                continue
            result = pc.min_max(column)
            self._extremes[i].append(pa.array([result["min"], result["max"]], column.type))

    def result(self) -> SimpleStats:
        """The stats of every row added so far."""
        import pyarrow as pa

        if self._mode.name == "none":
            return EMPTY_STATS
        columns = []
        for f, nulls, nan, extremes in zip(self._fields, self._nulls, self._nan, self._extremes):
            if self._mode.name == "counts" or nan or not extremes:
                columns.append(ColumnStats(None, None, nulls))
                continue
            folded = _column_stats(pa.chunked_array(extremes), f.type, self._mode)
            columns.append(ColumnStats(folded.min, folded.max, nulls))
        return from_columns(columns, [f.type for f in self._fields])


def from_columns(columns: Sequence[ColumnStats], types: Sequence[DataType]) -> SimpleStats:
    """Serialize per-column stats (e.g. merged ones) into a ``SimpleStats``."""
    return SimpleStats(br.encode([c.min for c in columns], types),
                       br.encode([c.max for c in columns], types),
                       tuple(c.null_count for c in columns))


def decode(stats: SimpleStats, types: Sequence[DataType]) -> list[ColumnStats]:
    """Per-column stats of ``types``; empty stats give all-unknown columns.

    Raises:
        ValueError: the rows hold fewer fields than ``types``.
    """
    if stats.min_values == br.EMPTY_ROW and stats.max_values == br.EMPTY_ROW and not stats.null_counts:
        return [ColumnStats(None, None, None) for _ in types]
    mins = br.decode(stats.min_values, types)
    maxs = br.decode(stats.max_values, types)
    counts = list(stats.null_counts) + [None] * (len(types) - len(stats.null_counts))
    return [ColumnStats(lo, hi, n) for lo, hi, n in zip(mins, maxs, counts)]
