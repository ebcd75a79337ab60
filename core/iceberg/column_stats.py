"""A data file's column statistics for its Iceberg manifest entry, from Paimon's own file stats.

Paimon writes each data file's value stats (min, max and null count per column, under
``metadata.stats-mode``) into its manifests; Iceberg readers prune files by the
``null_value_counts``, ``lower_bounds`` and ``upper_bounds`` maps of a manifest's data file,
keyed by field id, bounds in Iceberg's single-value encoding. Paimon's Iceberg writer fills
those three maps (no value counts, column sizes or NaN counts) from the value stats, under the
ids of the file's own schema; bounds for primitive columns only, and only where both the min
and the max are known. What Paimon does not know is left out, never written as a guess.
"""

from __future__ import annotations

import math
from typing import Any

from core import stats
from core.iceberg.types import iceberg_type, single_value
from core.schema import TableSchema
from core.types import DataField

# Types whose Paimon bounds are not Iceberg bounds: composites have none; binaries are ordered
# signed by Java Paimon 1.0's collectors and unsigned by Iceberg, and the stats do not say
# which writer made them (lakectl writes none for binaries, as Java 1.0).
_UNBOUNDED = {"ARRAY", "MAP", "MULTISET", "ROW", "BINARY", "VARBINARY"}

StatsMaps = dict[str, list[dict[str, Any]]]


def empty_stats() -> StatsMaps:
    # Empty maps, never nulls: the Java 1.0 bundle jar's manifest reader cannot take a null map.
    return {"null_value_counts": [], "lower_bounds": [], "upper_bounds": []}


def data_file_stats(schema: TableSchema, file_schema: TableSchema, file: Any) -> StatsMaps:
    """The three stats maps of ``file`` (a DataFileMeta written under ``file_schema``) as Avro
    map entries, for the Iceberg schema of ``schema`` (the current one).

    A column the current schema no longer has is left out; one whose type changed since the
    file was written keeps its null count but not its bounds (encoded in the old type, they
    would not decode as the new one)."""
    out = empty_stats()
    covered = _covered_fields(file_schema, file)
    if not covered:
        return out
    try:
        decoded = stats.decode(file.value_stats, [f.type for f in covered])
    except Exception:  # noqa: BLE001 - stats another writer laid out otherwise: none rather than wrong ones
        return out
    current = {f.id: f for f in schema.fields}
    for f, column in zip(covered, decoded):
        now = current.get(f.id)
        if now is None:
            continue
        if column.null_count is not None:
            out["null_value_counts"].append({"key": f.id, "value": column.null_count})
        bounds = _bounds(now, f, column)
        if bounds is not None:
            out["lower_bounds"].append({"key": f.id, "value": bounds[0]})
            out["upper_bounds"].append({"key": f.id, "value": bounds[1]})
    return out


def _covered_fields(file_schema: TableSchema, file: Any) -> list[DataField]:
    """The columns the file's value stats cover, in their order: every field of its schema, or
    those ``_VALUE_STATS_COLS`` names (none under ``metadata.stats-mode=none``)."""
    if file.value_stats_cols is None:
        return list(file_schema.fields)
    by_name = {f.name: f for f in file_schema.fields}
    if any(n not in by_name for n in file.value_stats_cols):
        return []
    return [by_name[n] for n in file.value_stats_cols]


def _bounds(now: DataField, then: DataField, column: stats.ColumnStats) -> tuple[bytes, bytes] | None:
    """The lower and upper bound of a column, encoded, or None where there are none to give."""
    t = now.type
    if t.name in _UNBOUNDED or iceberg_type(t) is None or t.root_text() != then.type.root_text():
        return None
    lo, hi = column.min, column.max
    if lo is None or hi is None:
        return None
    if isinstance(lo, float) and (math.isnan(lo) or math.isnan(hi)):
        return None  # Iceberg bounds are never NaN (lakectl's stats have none; another writer's may)
    return single_value(lo, t), single_value(hi, t)
