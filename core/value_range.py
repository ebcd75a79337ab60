"""Why a value does not fit its column's type, in lakectl's words.

Arrow refuses such a value with its own vocabulary (``Value 128 too large to fit in C integer
type``, ``Rescaling Decimal value would cause data loss``) and without naming the value. The
write paths (``core.rows`` for typed input, ``core.text_values`` for CSV/JSON text) call
``first_misfit`` on that error path only, to name the value, the type and its range.
"""

from __future__ import annotations

import decimal
from typing import Any, Iterable

import pyarrow as pa

_INTEGERS = {8: "TINYINT", 16: "SMALLINT", 32: "INT", 64: "BIGINT"}


def type_name(t: pa.DataType) -> str:
    """Paimon's name of an integer or decimal Arrow type (Arrow's own for others)."""
    if pa.types.is_signed_integer(t):
        return _INTEGERS[t.bit_width]
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    return str(t).upper()


def misfit(value: Any, t: pa.DataType, name: str | None = None) -> str | None:
    """Why ``value`` does not fit type ``t`` (named ``name``, Paimon's spelling, if given);
    None when it fits or the type has no range to explain."""
    name = name or type_name(t)
    if value is None or isinstance(value, bool):
        return None
    if pa.types.is_signed_integer(t) and isinstance(value, int):
        low, high = -(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1
        if not low <= value <= high:
            return f"{value} is out of range for {name} ({low} to {high})"
        return None
    if pa.types.is_decimal(t) and isinstance(value, (int, float, decimal.Decimal)):
        return _decimal_misfit(decimal.Decimal(str(value)), t, name)
    return None


def _decimal_misfit(value: decimal.Decimal, t: pa.Decimal128Type, name: str) -> str | None:
    if not value.is_finite():
        return f"{value} is not a number {name} can hold"
    sign, digits, exponent = value.normalize().as_tuple()
    assert isinstance(exponent, int)
    fraction = max(0, -exponent)
    if fraction > t.scale:
        return (f"{value} has {fraction} digits after the point; {name} keeps {t.scale} "
                "(lakectl does not round)")
    whole = max(0, len(digits) + exponent) if value != 0 else 0
    if whole > t.precision - t.scale:
        bound = "9" * (t.precision - t.scale) or "0"
        if t.scale:
            bound += "." + "9" * t.scale
        return f"{value} is out of range for {name} (-{bound} to {bound})"
    return None


def first_misfit(values: Iterable[Any], t: pa.DataType, name: str | None = None) -> tuple[int, str] | None:
    """The index of the first value that does not fit ``t`` and why; None if none is found."""
    for i, value in enumerate(values):
        reason = misfit(value, t, name)
        if reason is not None:
            return i, reason
    return None
