"""Schema evolution rules: a list of changes turns one ``TableSchema`` into the next.

Changes carry Paimon's names (``SchemaChange.addColumn``, ``renameColumn``, ...) and are
applied in order by ``apply_changes``, a pure function, the way Java's
``SchemaManager.generateTableSchema`` does: each change is checked against the rules Paimon
enforces, then the result is validated like a new table's schema. Old data files stay
readable because readers pair columns by field id (``core.kernels.read``): a renamed column
keeps its id, a dropped id is never reused, an added column reads as null in older files,
and a widened type is cast on read.

Beyond Java, lakectl refuses:

- type changes other than lossless widenings (spec §2.2: "allow widenings only"). Java's
  implicit casts also allow BIGINT -> DOUBLE or VARCHAR(20) -> VARCHAR(10), which change
  values on read;
- ``bucket`` on a table with data: that is a rescale, which needs every file rewritten;
- ``partition.default-name`` on a table with data: null partitions live in directories
  named after it.

Nullable -> NOT NULL is allowed here; ``core.ops.alter`` proves the data null-free first,
which takes IO.
"""


from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass, replace
from typing import Sequence, Union

from core import types as T
from core.errors import UsageError
from core.merge_options import merge_options
from core.options import CoreOptions, parse_bool, validate
from core.tag_options import auto_tag_options
from core.schema import TableSchema, assign_nested_ids
from core.types import DataField, DataType


# ---- changes -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AddColumn:
    """A new nullable column at the end, first, or after ``after``; it reads as null in older rows."""

    name: str
    type: DataType
    comment: str | None = None
    first: bool = False
    after: str | None = None


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class RenameColumn:
    name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    """A widening of ``name`` to ``type``; the column keeps its nullability (``type``'s is ignored)."""

    name: str
    type: DataType


@dataclass(frozen=True, slots=True)
class UpdateColumnNullability:
    name: str
    nullable: bool


@dataclass(frozen=True, slots=True)
class UpdateColumnComment:
    name: str
    comment: str | None  # None removes the comment


@dataclass(frozen=True, slots=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class RemoveOption:
    key: str


SchemaChange = Union[AddColumn, DropColumn, RenameColumn, UpdateColumnType, UpdateColumnNullability,
                     UpdateColumnComment, SetOption, RemoveOption]


# ---- parsing the CLI's text forms ------------------------------------------------------------
_POSITION = re.compile(r"\s+(?:(FIRST)|AFTER\s+(`[^`]+`|[A-Za-z_][A-Za-z_0-9]*))\s*$", re.IGNORECASE)


def parse_add_column(text: str) -> AddColumn:
    """``"name TYPE [NOT NULL] [COMMENT 'x'] [FIRST | AFTER col]"`` -> AddColumn.

    Raises:
        UsageError: not one column, or a malformed type.
    """
    first, after = False, None
    m = _POSITION.search(text)
    if m:
        first, after = bool(m.group(1)), (m.group(2).strip("`") if m.group(2) else None)
        text = text[: m.start()]
    columns = T.parse_columns(text)
    if len(columns) != 1:
        raise UsageError(f"--add-column {text!r} must be one column (repeat --add-column for more)")
    name, dt, comment = columns[0]
    return AddColumn(name, dt, comment, first=first, after=after)


def split_pair(text: str, *, flag: str, shape: str) -> tuple[str, str]:
    """``"a:b"`` -> ("a", "b"), split at the first colon; a usage error names the flag."""
    left, sep, right = text.partition(":")
    if not sep or not left.strip():
        raise UsageError(f"{flag} {text!r} must be {shape}")
    return left.strip(), right.strip()


def parse_type_change(text: str) -> UpdateColumnType:
    """``"col:TYPE"`` -> UpdateColumnType; nullability is changed with its own flags, not here."""
    name, type_text = split_pair(text, flag="--alter-type", shape="COLUMN:TYPE")
    if re.search(r"\bNULL\s*$", type_text, re.IGNORECASE):
        raise UsageError(f"--alter-type {text!r}: give the type without NULL/NOT NULL; "
                         "use --set-not-null / --set-nullable to change nullability")
    return UpdateColumnType(name, T.parse_type(type_text))


# ---- type widening -------------------------------------------------------------------------
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_EXACT_IN = {"FLOAT": {"TINYINT", "SMALLINT"}, "DOUBLE": {"TINYINT", "SMALLINT", "INT"}}  # 24/53-bit mantissas
_LENGTHENS = {("VARCHAR", "VARCHAR"), ("CHAR", "VARCHAR"), ("VARBINARY", "VARBINARY"), ("BINARY", "VARBINARY")}
_PRECISION_UP = {"TIMESTAMP", "TIMESTAMP_LTZ", "TIME"}


def widening_refusal(old: DataType, new: DataType) -> str | None:
    """Why changing a column from ``old`` to ``new`` is refused, or None for a lossless widening.

    Allowed: TINYINT -> SMALLINT -> INT -> BIGINT; an integer to a DECIMAL with room for its
    digits, or to FLOAT/DOUBLE where every value is exact; FLOAT -> DOUBLE; DECIMAL to a
    larger scale and integer part; longer VARCHAR/VARBINARY (CHAR/BINARY to the VAR kind);
    more fractional digits of TIME/TIMESTAMP. Each is one of Paimon's implicit casts.
    """
    o, n = old.name, new.name
    if old.root_text() == new.root_text():
        return None
    if old.is_composite or new.is_composite:
        return "lakectl cannot change the type of a composite (ARRAY/MAP/MULTISET/ROW) column yet"
    if o in _INTEGERS and n in _INTEGERS:
        return None if _INTEGERS.index(n) > _INTEGERS.index(o) else "it narrows the integer type"
    if o in _INTEGERS and n == "DECIMAL":
        if new.precision - new.scale >= _INTEGER_DIGITS[o]:
            return None
        return f"DECIMAL({new.precision}, {new.scale}) has fewer than the {_INTEGER_DIGITS[o]} integer digits {o} needs"
    if o in _INTEGERS and n in _EXACT_IN:
        return None if o in _EXACT_IN[n] else f"{o} values do not all fit {n} exactly"
    if (o, n) == ("FLOAT", "DOUBLE"):
        return None
    if o == n == "DECIMAL":
        if new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale:
            return None
        return "a DECIMAL can only grow: no smaller scale, no fewer integer digits"
    if (o, n) in _LENGTHENS:
        return None if new.length >= old.length else "it shortens the column"
    if o == n and o in _PRECISION_UP:
        return None if new.precision >= old.precision else "it drops fractional digits"
    return "it is not a lossless widening (see lakectl alter-schema --help for the allowed ones)"


# ---- option rules --------------------------------------------------------------------------
# Paimon's CoreOptions fields marked @Immutable: fixed once the table has a snapshot.
IMMUTABLE_OPTIONS = frozenset({
    "bucket-key", "bucket-function.type", "data-file.path-directory", "merge-engine", "sequence.snapshot-ordering",
    "aggregation.remove-record-on-delete", "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group", "rowkind.field", "primary-key.nullable",
    "dynamic-bucket.initial-buckets", "force-lookup", "row-tracking.enabled", "data-evolution.enabled",
    "index-file-in-data-file-dir", "blob-field", "blob-descriptor-field", "blob-view-field", "pk-clustering-override",
})
# Options that are schema fields or the table's identity, never changeable by an option.
_NEVER = {"type": "the table type cannot change", "path": "the table path cannot change",
          "primary-key": "primary keys are fixed at creation", "partition": "partition keys are fixed at creation",
          "branch-merge.enabled": "it is set when the table is created (branch merge needs a pure-append history "
                                  "from the first snapshot)"}
# Once true, turning these off would resurrect what was dropped (Java: "from true to false");
# ignore-delete with the fallback keys Paimon reads it from.
_ONE_WAY = frozenset({"ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                      "partial-update.ignore-delete", "ignore-update-before"})
SYSTEM_FIELD_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})


def _check_option_change(options: dict[str, str], key: str, new: str | None, has_data: bool) -> None:
    """Refuse an option change Paimon forbids (``new`` None = reset), naming the reason."""
    if key in _NEVER:
        raise UsageError(f"option {key} cannot be changed: {_NEVER[key]}")
    if not has_data:
        return  # Java checks the rest only once the table has a snapshot
    old = options.get(key)
    if key in IMMUTABLE_OPTIONS:
        raise UsageError(f"option {key} cannot change once the table has data (Paimon treats it as immutable)")
    if key == "bucket":
        _check_bucket_change(CoreOptions(options).bucket, new)
    if key in _ONE_WAY and old is not None and parse_bool(old, key) and not parse_bool(new or "false", key):
        raise UsageError(f"option {key} cannot go from true to false: records it dropped would come back")
    if key == "partition.default-name":
        raise UsageError("option partition.default-name cannot change once the table has data: "
                         "existing null partitions live in directories named after it")


def _check_bucket_change(old: int, new: str | None) -> None:
    if new is None:
        raise UsageError(f"option bucket cannot be reset on a table with data (it has {old} buckets)")
    target = CoreOptions({"bucket": new}).bucket
    if target == old:
        return
    if old == -1:
        raise UsageError("option bucket cannot change when it is -1 (Paimon)")
    if target == -1:
        raise UsageError("option bucket cannot change to -1 (Paimon)")
    raise UsageError(f"option bucket: going from {old} to {target} buckets is a rescale, which needs every data "
                     f"file rewritten into the new buckets; alter-schema rewrites no data: run lakectl rescale "
                     f"DB.TABLE --buckets {target}")


def _rename_in_options(options: dict[str, str], old: str, new: str) -> dict[str, str]:
    """Options naming a renamed column follow it, as Java's applyRenameColumnsToOptions does:
    ``bucket-key`` and ``sequence.field`` values, ``fields.<col>.*`` keys, and both the key
    and the value of ``fields.<cols>.sequence-group`` / ``nested-key``."""
    def names(text: str) -> str:
        return ",".join(new if c.strip() == old else c for c in text.split(","))

    out = {}
    for key, value in options.items():
        if key in ("bucket-key", "sequence.field"):
            value = names(value)
        m = re.fullmatch(r"fields\.([^.]+)\.(.+)", key)
        if m and m.group(1) != "default-aggregate-function":
            if m.group(2) in ("sequence-group", "nested-key"):
                value = names(value)
            key = f"fields.{names(m.group(1))}.{m.group(2)}"
        out[key] = value
    return out


# ---- applying changes ----------------------------------------------------------------------
@dataclass(slots=True)
class _Draft:
    """The schema being built: mutable on purpose, local to one apply_changes call."""

    base: TableSchema  # the schema the changes apply to (the rules about keys look at it)
    has_data: bool
    fields: list[DataField]
    highest_field_id: int
    primary_keys: list[str]
    options: dict[str, str]

    def index(self, name: str) -> int:
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise UsageError(f"unknown column {name!r}; columns are: {', '.join(f.name for f in self.fields)}")

    def replace_field(self, column: str, **kw: object) -> None:
        i = self.index(column)
        self.fields[i] = replace(self.fields[i], **kw)

    def is_partition_key(self, name: str) -> bool:
        return name in self.base.partition_keys

    def is_primary_key(self, name: str) -> bool:
        return name in self.primary_keys


def _check_new_name(draft: _Draft, name: str) -> None:
    if not name or not name.strip():
        raise UsageError("a column name cannot be empty")
    if name in SYSTEM_FIELD_NAMES or name.startswith("_KEY_"):
        raise UsageError(f"column name {name!r} is reserved by Paimon (system fields and the _KEY_ prefix)")
    if any(f.name == name for f in draft.fields):
        raise UsageError(f"column {name!r} already exists")


@functools.singledispatch
def _apply(change: object, draft: _Draft) -> None:
    raise UsageError(f"unknown schema change {change!r}")


@_apply.register
def _(change: AddColumn, draft: _Draft) -> None:
    _check_new_name(draft, change.name)
    if not change.type.nullable:
        raise UsageError(f"column {change.name!r} cannot be added as NOT NULL: rows written before have no value "
                         "for it (Paimon refuses it; add it nullable)")
    if change.first and change.after is not None:
        raise UsageError(f"column {change.name!r}: give FIRST or AFTER, not both")
    draft.highest_field_id += 1
    fid = draft.highest_field_id
    dt, draft.highest_field_id = assign_nested_ids(change.type, draft.highest_field_id)
    new = DataField(fid, change.name, dt, change.comment)
    if change.first:
        at = 0
    elif change.after is not None:
        at = draft.index(change.after) + 1
    else:
        at = _default_position(draft)
    draft.fields.insert(at, new)


def _default_position(draft: _Draft) -> int:
    """The end, or before the first partition column with ``add-column-before-partition``."""
    opts = draft.options
    if draft.base.partition_keys and parse_bool(opts.get("add-column-before-partition", "false"),
                                                "add-column-before-partition"):
        return next(i for i, f in enumerate(draft.fields) if f.name in draft.base.partition_keys)
    return len(draft.fields)


@_apply.register
def _(change: DropColumn, draft: _Draft) -> None:
    i = draft.index(change.name)
    if draft.is_partition_key(change.name) or draft.is_primary_key(change.name):
        raise UsageError(f"cannot drop partition key or primary key column {change.name!r}")
    if len(draft.fields) == 1:
        raise UsageError("cannot drop the last column of a table")
    del draft.fields[i]


@_apply.register
def _(change: RenameColumn, draft: _Draft) -> None:
    draft.index(change.name)
    if change.new_name == change.name:
        return
    if draft.is_partition_key(change.name):
        raise UsageError(f"cannot rename partition column {change.name!r}: partition directories and "
                         "partition values are keyed by it")
    if draft.options.get("rowkind.field") == change.name:
        raise UsageError(f"cannot rename {change.name!r}: it is the rowkind.field column and that option "
                         "cannot change")
    _check_new_name(draft, change.new_name)
    draft.replace_field(change.name, name=change.new_name)
    draft.primary_keys = [change.new_name if k == change.name else k for k in draft.primary_keys]
    draft.options = _rename_in_options(draft.options, change.name, change.new_name)


@_apply.register
def _(change: UpdateColumnType, draft: _Draft) -> None:
    current = draft.fields[draft.index(change.name)]
    if draft.is_partition_key(change.name):
        raise UsageError(f"cannot change the type of partition column {change.name!r}")
    if draft.is_primary_key(change.name):
        raise UsageError(f"cannot change the type of primary key column {change.name!r}: files are sorted "
                         "and bucketed by its values")
    target = change.type.with_nullable(current.type.nullable)
    reason = widening_refusal(current.type, target)
    if reason is not None:
        raise UsageError(f"cannot change column {change.name!r} from {current.type.root_text()} to "
                         f"{target.root_text()}: {reason}")
    draft.replace_field(change.name, type=target)


@_apply.register
def _(change: UpdateColumnNullability, draft: _Draft) -> None:
    current = draft.fields[draft.index(change.name)]
    if change.nullable and draft.is_primary_key(change.name):
        raise UsageError(f"cannot make primary key column {change.name!r} nullable")
    draft.replace_field(change.name, type=current.type.with_nullable(change.nullable))


@_apply.register
def _(change: UpdateColumnComment, draft: _Draft) -> None:
    draft.replace_field(change.name, description=change.comment)


@_apply.register
def _(change: SetOption, draft: _Draft) -> None:
    if draft.options.get(change.key) == change.value:
        return  # unchanged: Java skips it, so even immutable options may be "set" to their value
    _check_option_change(draft.options, change.key, change.value, draft.has_data)
    draft.options[change.key] = change.value


@_apply.register
def _(change: RemoveOption, draft: _Draft) -> None:
    _check_option_change(draft.options, change.key, None, draft.has_data)
    draft.options.pop(change.key, None)


def apply_changes(schema: TableSchema, changes: Sequence[SchemaChange], *, has_data: bool) -> TableSchema:
    """The schema after ``changes`` (in order), as version ``schema.id + 1``.

    Args:
        schema: the latest schema.
        changes: what to change; each sees the result of those before it.
        has_data: whether the table has a snapshot (Paimon only guards options then).

    Returns:
        The next schema; equal to ``schema`` but for id and time when nothing changed.

    Raises:
        UsageError: a change Paimon forbids, or a result that would be an invalid table.
    """
    draft = _Draft(schema, has_data, list(schema.fields), schema.highest_field_id, list(schema.primary_keys),
                   dict(schema.options))
    for change in changes:
        _apply(change, draft)
    new = TableSchema(
        id=schema.id + 1,
        fields=tuple(draft.fields),
        highest_field_id=draft.highest_field_id,
        partition_keys=schema.partition_keys,
        primary_keys=tuple(draft.primary_keys),
        options=draft.options,
        comment=schema.comment,
        time_millis=int(time.time() * 1000),
    )
    validate_schema(new, previous=schema)
    return new


# ---- validating the result -----------------------------------------------------------------
def validate_schema(schema: TableSchema, *, previous: TableSchema | None = None) -> None:
    """The checks a new table's schema passes (``core.schema.new_table_schema``), for an evolved one.

    Whether lakectl supports the options (``core.options.validate``, the merge engine) is only
    checked when ``previous`` passes that check too: a table another engine created with options
    lakectl cannot write (say, dynamic buckets) can still have its columns evolved.

    Raises:
        UsageError: naming the option or column that makes the schema invalid.
    """
    names = set(schema.field_names)
    for k in schema.core_options.bucket_key:
        if k not in names:
            raise UsageError(f"bucket-key column {k!r} is not in the schema")
        if schema.primary_keys and k not in schema.primary_keys:
            raise UsageError(f"bucket-key column {k!r} must be part of the primary key")
    rowkind = schema.options.get("rowkind.field")
    if rowkind is not None and rowkind not in names:
        raise UsageError(f"option rowkind.field names column {rowkind!r}, which the table does not have")
    for key in schema.options:
        m = re.fullmatch(r"fields\.([^.]+)\..+", key)
        if m and m.group(1) != "default-aggregate-function":
            for column in m.group(1).split(","):
                if column not in names:
                    raise UsageError(f"option {key} names column {column!r}, which the table would not have; "
                                     f"reset it in the same alter-schema (--reset-option {key})")
    if previous is None or _supported(previous):
        _check_supported(schema)


def _check_supported(schema: TableSchema) -> None:
    """Options lakectl can honour, checked exactly as at create."""
    validate(schema.options, has_primary_key=schema.has_primary_key)
    auto_tag_options(schema.options)  # the tag.* options of automatic tags
    if schema.has_primary_key:
        merge_options(schema)  # e.g. an aggregate function that does not take a column's new type


def _supported(schema: TableSchema) -> bool:
    try:
        _check_supported(schema)
    except UsageError:
        return False
    return True


__all__ = ["AddColumn", "DropColumn", "IMMUTABLE_OPTIONS", "RemoveOption", "RenameColumn", "SchemaChange", "SetOption",
           "UpdateColumnComment", "UpdateColumnNullability", "UpdateColumnType", "apply_changes", "parse_add_column",
           "parse_type_change", "split_pair", "validate_schema", "widening_refusal"]
