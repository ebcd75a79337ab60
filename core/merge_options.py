"""Merge-engine options of a primary-key table, read and checked without touching any data.

``merge_options(schema)`` turns ``merge-engine``, ``ignore-delete``,
``<engine>.remove-record-on-delete``, ``sequence.field`` (with ``sequence.field.sort-order``),
partial-update sequence groups and the ``fields.<col>.*`` aggregation options into a
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
class SequenceGroup:
    """One ``fields.<sequence fields>.sequence-group=<columns>`` option."""

    sequence_fields: tuple[str, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MergeOptions:
    kind: str
    keys: tuple[str, ...]  # trimmed primary key: the columns files are sorted and merged by
    ignore_delete: bool = False
    remove_record_on_delete: bool = False
    aggregates: tuple[FieldAggregate, ...] = ()  # aggregation only: one per non-key column
    # sequence.field: the records of a key merge in the order of these columns (then of
    # _SEQUENCE_NUMBER), ascending unless sequence.field.sort-order=descending.
    sequence_fields: tuple[str, ...] = ()
    sequence_ascending: bool = True
    # partial-update sequence groups (fields.<seq,...>.sequence-group=<col,...>): each group's
    # columns change only with a record whose group sequence is not older.
    sequence_groups: tuple["SequenceGroup", ...] = ()
    # partial-update.remove-record-on-sequence-group: a -D that wins one of these groups
    # (named by a sequence field) deletes the whole record.
    remove_on_group_delete: tuple[str, ...] = ()
    # Columns declared NOT NULL (partition keys among them): a partial-update row that a
    # retraction starts (remove-record-on-delete) takes the retraction's values in these
    # columns only, as Java's PartialUpdateMergeFunction.initRow does.
    not_null: tuple[str, ...] = ()


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
        if key.endswith(".aggregate-function") and kind == "partial-update":
            # Paimon folds such columns by the function within their sequence group.
            raise UsageError(f"option {key}: aggregate functions in partial-update sequence groups are not "
                             "supported by lakectl (Paimon folds the column with that function)")
        if key.endswith(".aggregate-function") and kind != "aggregation":
            raise UsageError(f"option {key} needs merge-engine=aggregation (this table uses {kind})")
    sequence_fields, ascending = _sequence_fields(schema, opts, kind)
    aggregates = _aggregates(schema, opts, sequence_fields) if kind == "aggregation" else ()
    groups = _sequence_groups(schema, opts)
    remove_on_group = ()
    if kind == "partial-update":
        remove_on_group = _remove_on_group_delete(opts, groups)
        if groups and remove:
            raise UsageError("options fields.*.sequence-group and partial-update.remove-record-on-delete cannot be "
                             "used together (Java refuses the combination)")
        if remove and ignore:
            raise UsageError("options ignore-delete and partial-update.remove-record-on-delete cannot be used "
                             "together (Java refuses the combination)")
    else:
        groups = ()  # Java checks sequence groups on every table but only partial-update uses them
    not_null = tuple(f.name for f in schema.fields if not f.type.nullable)
    return MergeOptions(kind, tuple(schema.trimmed_primary_keys), ignore, remove, aggregates, sequence_fields,
                        ascending, groups, remove_on_group, not_null)


def _sequence_groups(schema, opts: dict[str, str]) -> tuple[SequenceGroup, ...]:
    """``fields.<seq,...>.sequence-group`` options, checked as Java's SchemaValidation checks them."""
    names = set(schema.field_names)
    groups, owner = [], {}
    for key in sorted(opts):
        if not (key.startswith("fields.") and key.endswith(".sequence-group")):
            continue
        sequence = tuple(key[len("fields."):-len(".sequence-group")].split(","))
        columns = tuple(opts[key].split(","))
        for name in sequence:
            if name not in names:
                raise UsageError(f"option {key}: sequence field {name!r} is not a column of the table")
        for name in columns:
            if name not in names:
                raise UsageError(f"option {key}: column {name!r} is not a column of the table")
            if name in owner:
                raise UsageError(f"option {key}: column {name!r} is already in the sequence group of {owner[name]}")
            owner[name] = key
        for name in sequence:
            if f"fields.{name}.aggregate-function" in opts:
                raise UsageError(f"option {key}: sequence field {name!r} must not have an aggregate function")
        groups.append(SequenceGroup(sequence, columns))
    return tuple(groups)


def _remove_on_group_delete(opts: dict[str, str], groups: tuple[SequenceGroup, ...]) -> tuple[str, ...]:
    key = "partial-update.remove-record-on-sequence-group"
    if key not in opts:
        return ()
    named = tuple(opts[key].split(","))
    sequence = {f for g in groups for f in g.sequence_fields}
    if not set(named) <= sequence:
        raise UsageError(f"option {key}={opts[key]}: each field must be a sequence field of a sequence group")
    return named


def _sequence_fields(schema, opts: dict[str, str], kind: str) -> tuple[tuple[str, ...], bool]:
    """``sequence.field`` (comma-separated, split as Java splits it: no trimming) and whether
    ``sequence.field.sort-order`` is ascending, checked as Java's SchemaValidation checks them."""
    order = (opts.get("sequence.field.sort-order") or "ascending").strip().lower()
    if order not in ("ascending", "descending"):
        raise UsageError(f"option sequence.field.sort-order={order} is not supported "
                         "(supported: ascending, descending)")
    text = opts.get("sequence.field")
    if text is None:
        return (), True
    fields = tuple(text.split(","))
    types = {f.name: f.type for f in schema.fields}
    for name in fields:
        if name not in types:
            raise UsageError(f"option sequence.field names column {name!r}, which the table does not have")
        if types[name].is_composite:
            # Java compares nested values element by element; Arrow cannot sort them.
            raise UsageError(f"option sequence.field: column {name!r} has nested type {types[name]}, which lakectl "
                             "cannot order records by (use a primitive column)")
        if fields.count(name) > 1:
            raise UsageError(f"option sequence.field names column {name!r} more than once")
        if f"fields.{name}.aggregate-function" in opts:
            raise UsageError(f"option sequence.field: column {name!r} must not have an aggregate function "
                             f"(fields.{name}.aggregate-function)")
    if kind == "first-row":
        raise UsageError("option sequence.field cannot be used with merge-engine=first-row "
                         "(the first record of a key always wins)")
    partition = list(schema.partition_keys)
    if partition and not set(partition) <= set(schema.primary_keys):
        raise UsageError("option sequence.field cannot be used when the primary key leaves out partition "
                         "columns (a cross-partition upsert table)")
    return fields, order == "ascending"


def _aggregates(schema, opts: dict[str, str], sequence_fields: tuple[str, ...] = ()) -> tuple[FieldAggregate, ...]:
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
        if field.name in sequence_fields:
            fn = "last_non_null_value"  # Java's rule: a sequence field is not aggregated, the newest value stays
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
