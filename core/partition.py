"""Partition values as directory names, exactly as Paimon's Java computes them (spec §1.3).

Data-file paths are rebuilt by every reader from partition + bucket + file name, so a
directory name that differs from Java's by one escaped character makes the file unreadable.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, Sequence

from core.types import DataField, DataType

_EPOCH = dt.date(1970, 1, 1)
_ESCAPED = set('"#%\'*/:=?\\{}[]^') | {chr(c) for c in range(0x20)} | {chr(0x7F)}


def escape(text: str) -> str:
    """Percent-escape the characters Paimon escapes in partition paths (upper-case hex)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def _java_float(value: float) -> str:
    """A close rendering of Java's Double.toString for the common cases."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(float(value))
    if "e" in text or "E" in text:
        mantissa, exp = text.lower().split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}E{int(exp)}"
    return text


def _java_local_date_time(value: dt.datetime) -> str:
    """Java LocalDateTime.toString(): seconds and fraction only when non-zero."""
    text = value.strftime("%Y-%m-%dT%H:%M")
    nanos = value.microsecond * 1000 + getattr(value, "nanosecond", 0)  # NanoDatetime: TIMESTAMP(7..9)
    if value.second or nanos:
        text += f":{value.second:02d}"
        if nanos:
            frac = f"{nanos:09d}"  # 3, 6 or 9 digits, as Java prints them
            text += "." + (frac[:3] if frac.endswith("000000") else frac[:6] if frac.endswith("000") else frac)
    return text


def render_value(value: Any, data_type: DataType) -> str | None:
    """Text of one partition value in the legacy naming; None for null/blank (default name)."""
    if value is None:
        return None
    if isinstance(value, str):
        return None if value.strip() == "" else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if data_type.name == "DATE" and isinstance(value, dt.date):
        return str((value - _EPOCH).days)
    if isinstance(value, dt.datetime):
        return _java_local_date_time(value.replace(tzinfo=None))
    if isinstance(value, float):
        return _java_float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def partition_path(values: Sequence[Any], fields: Sequence[DataField], default_name: str) -> str:
    """``k1=v1/k2=v2`` for a partition; empty string for an unpartitioned table."""
    parts = []
    for value, f in zip(values, fields):
        text = render_value(value, f.type)
        parts.append(f"{escape(f.name)}={escape(default_name if text is None else text)}")
    return "/".join(parts)


def partition_spec_text(values: Sequence[Any], fields: Sequence[DataField]) -> dict[str, Any]:
    """A JSON-friendly {column: value} view of a partition, for output."""
    out = {}
    for value, f in zip(values, fields):
        if isinstance(value, (dt.date, dt.datetime, dt.time)):
            value = value.isoformat()
        out[f.name] = value
    return out
