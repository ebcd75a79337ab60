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

import functools
import math
from dataclasses import dataclass
from typing import Any

from core import stats
from core.iceberg.types import iceberg_type, single_value
from core.schema import TableSchema
from core.types import DataField, DataType

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
    plan = _plan(schema, file_schema, file.value_stats_cols)
    if not plan:
        return out
    try:
        decoded = stats.decode(file.value_stats, [c.file_type for c in plan])
    except Exception:  # noqa: BLE001 - stats another writer laid out otherwise: none rather than wrong ones
        return out
    for column, found in zip(plan, decoded):
        if column.field_id is None:
            continue
        if found.null_count is not None:
            out["null_value_counts"].append({"key": column.field_id, "value": found.null_count})
        if column.bounded and found.min is not None and found.max is not None and not _nan(found.min, found.max):
            out["lower_bounds"].append({"key": column.field_id, "value": single_value(found.min, column.file_type)})
            out["upper_bounds"].append({"key": column.field_id, "value": single_value(found.max, column.file_type)})
    return out


@dataclass(frozen=True, slots=True)
class _Column:
    """One column of a file's value stats: its type there, the field id it has now (None when
    dropped), and whether its bounds are Iceberg bounds (then its type is the current one)."""

    file_type: DataType
    field_id: int | None
    bounded: bool


@functools.lru_cache(maxsize=64)  # every file of a schema (and stats column set) has the same plan
def _plan(schema: TableSchema, file_schema: TableSchema, stats_cols: tuple[str, ...] | None) -> tuple[_Column, ...]:
    current = {f.id: f for f in schema.fields}
    out = []
    for f in _covered_fields(file_schema, stats_cols):
        now = current.get(f.id)
        bounded = now is not None and now.type.name not in _UNBOUNDED and iceberg_type(now.type) is not None \
            and now.type.root_text() == f.type.root_text()
        out.append(_Column(f.type, None if now is None else f.id, bounded))
    return tuple(out)


def _covered_fields(file_schema: TableSchema, stats_cols: tuple[str, ...] | None) -> list[DataField]:
    """The columns a file's value stats cover, in their order: every field of its schema, or
    those ``_VALUE_STATS_COLS`` names (none under ``metadata.stats-mode=none``)."""
    if stats_cols is None:
        return list(file_schema.fields)
    by_name = {f.name: f for f in file_schema.fields}
    if any(n not in by_name for n in stats_cols):
        return []
    return [by_name[n] for n in stats_cols]


def _nan(lo: Any, hi: Any) -> bool:
    # Iceberg bounds are never NaN (lakectl's stats have none; another writer's may).
    return isinstance(lo, float) and (math.isnan(lo) or math.isnan(hi))
