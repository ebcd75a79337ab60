"""Merge-engine options of a primary-key table, read and checked without touching any data.

``merge_options(schema)`` turns ``merge-engine``, ``ignore-delete``,
``<engine>.remove-record-on-delete`` and the ``fields.<col>.*`` aggregation options into a
``MergeOptions``, refusing what lakectl cannot honour with the option named. Schema
validation (create, alter-schema) calls it; the kernels build their ``MergeEngine`` from it.
Pure Python, so metadata commands stay light.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import UsageError
from core.options import parse_bool
from core.types import DataField

ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")

_NUMERIC = {"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL"}
_ORDERED = _NUMERIC | {"BOOLEAN", "CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES", "DATE", "TIME",
                       "TIMESTAMP", "TIMESTAMP_LTZ"}
_STRINGS = {"CHAR", "VARCHAR", "STRING"}
# Aggregate function -> the type roots it takes (None: any type).
AGGREGATE_TYPES: dict[str, set[str] | None] = {
    "sum": _NUMERIC, "product": _NUMERIC, "max": _ORDERED, "min": _ORDERED,
    "last_value": None, "last_non_null_value": None, "first_value": None, "first_non_null_value": None,
    "listagg": _STRINGS, "bool_and": {"BOOLEAN"}, "bool_or": {"BOOLEAN"},
}
RETRACTABLE = {"sum", "product", "last_value", "last_non_null_value"}
# Paimon functions lakectl does not implement (nested types, sketches, bitmaps).
_NOT_IMPLEMENTED = {"collect", "merge_map", "merge_map_with_keytime", "nested_update", "nested_partial_update",
                    "theta_sketch", "hll_sketch", "rbm32", "rbm64"}


def _type_root(field: DataField) -> str:
    root = field.type.root_text().split("(")[0].strip().upper()
    if root.startswith("TIMESTAMP") and "LOCAL TIME ZONE" in field.type.root_text().upper():
        return "TIMESTAMP_LTZ"
    return root.split()[0]


@dataclass(frozen=True, slots=True)
class FieldAggregate:
    """How one non-key column aggregates (aggregation engine)."""

    name: str
    function: str
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False
    nullable: bool = True  # a NOT NULL column keeps a restarting -D's value (remove-record-on-delete)

    @property
    def retracts(self) -> bool:
        return self.function in RETRACTABLE and not self.ignore_retract


@dataclass(frozen=True, slots=True)
class MergeOptions:
    kind: str
    keys: tuple[str, ...]  # trimmed primary key: the columns files are sorted and merged by
    ignore_delete: bool = False
    remove_record_on_delete: bool = False
    aggregates: tuple[FieldAggregate, ...] = ()  # aggregation only: one per non-key column


def merge_options(schema) -> MergeOptions:
    """The merge options of ``schema`` (a TableSchema); UsageError for options lakectl cannot honour."""
    opts = dict(schema.options)
    kind = (opts.get("merge-engine") or "deduplicate").strip().lower()
    if kind not in ENGINES:
        raise UsageError(f"option merge-engine={kind} is not supported (supported: {', '.join(ENGINES)})")
    # Java's ignore-delete falls back to the older per-engine keys, in this order, whatever the engine.
    keys = ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete",
            f"{kind}.ignore-delete")
    ignore_key = next((k for k in keys if k in opts), None)
    ignore = parse_bool(opts[ignore_key], ignore_key) if ignore_key else False
    remove_key = f"{kind}.remove-record-on-delete"
    remove = parse_bool(opts[remove_key], remove_key) if remove_key in opts else False
    for key in opts:
        if key.endswith(".sequence-group"):
            raise UsageError(f"option {key}: partial-update sequence groups are not supported by lakectl yet")
        if key.endswith(".aggregate-function") and kind != "aggregation":
            raise UsageError(f"option {key} needs merge-engine=aggregation (this table uses {kind})")
    if "sequence.field" in opts:
        raise UsageError("option sequence.field is not supported by lakectl yet")
    aggregates = _aggregates(schema, opts) if kind == "aggregation" else ()
    return MergeOptions(kind, tuple(schema.trimmed_primary_keys), ignore, remove, aggregates)


def _aggregates(schema, opts: dict[str, str]) -> tuple[FieldAggregate, ...]:
    names = set(schema.field_names)
    for key in opts:
        if key.startswith("fields.") and key.endswith(".aggregate-function"):
            column = key[len("fields."):-len(".aggregate-function")]
            if column not in names:
                raise UsageError(f"option {key} names column {column!r}, which the table does not have")
            if column in schema.primary_keys:
                raise UsageError(f"option {key}: {column!r} is a primary key column, which is not aggregated")
    default = opts.get("fields.default-aggregate-function", "last_non_null_value").strip().lower()
    out = []
    for field in schema.fields:
        if field.name in schema.primary_keys:
            continue
        fn = (opts.get(f"fields.{field.name}.aggregate-function") or default).strip().lower()
        key = f"fields.{field.name}.aggregate-function"
        if fn in _NOT_IMPLEMENTED:
            raise UsageError(f"option {key}={fn} is a Paimon function lakectl does not support yet")
        if fn not in AGGREGATE_TYPES:
            hint = " (Paimon has no count; use sum over a 0/1 column)" if fn == "count" else ""
            raise UsageError(f"option {key}={fn} is not an aggregate function{hint}; supported: "
                             f"{', '.join(sorted(AGGREGATE_TYPES))}")
        allowed = AGGREGATE_TYPES[fn]
        if allowed is not None and _type_root(field) not in allowed:
            raise UsageError(f"option {key}={fn} does not take column {field.name} of type {field.type.root_text()}")
        ignore_key = f"fields.{field.name}.ignore-retract"
        ignore = parse_bool(opts[ignore_key], ignore_key) if ignore_key in opts else False
        distinct_key = f"fields.{field.name}.distinct"
        distinct = parse_bool(opts[distinct_key], distinct_key) if distinct_key in opts else False
        delimiter = opts.get(f"fields.{field.name}.list-agg-delimiter", ",")
        out.append(FieldAggregate(field.name, fn, ignore, delimiter, distinct, field.type.nullable))
    return tuple(out)
