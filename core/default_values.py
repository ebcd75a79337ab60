"""``fields.<col>.default-value``: Paimon fills a column's default into its nulls when it reads.

Java Paimon 1.0 (DefaultValueAssigner, applied by AbstractDataTableRead after the merge) writes
nulls as they come and replaces them on every read: batch, incremental and streaming. The data
files hold nulls, so their stats and indexes know nothing of the default: a condition on such
a column must not prune files or row groups (``prunable``), only filter the filled rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.errors import UnsupportedTableError

if TYPE_CHECKING:
    import pyarrow as pa

    from core.predicate import Predicate
    from core.schema import TableSchema


def default_texts(schema: "TableSchema") -> dict[str, str]:
    """Column name -> its default-value text, for top-level columns that have one."""
    names = {f.name for f in schema.fields}
    out = {}
    for key, value in schema.options.items():
        if key.startswith("fields.") and key.endswith(".default-value"):
            name = key[len("fields."):-len(".default-value")]
            if name in names:
                out[name] = value
    return out


def _default_scalar(name: str, text: str, t: "pa.DataType") -> "pa.Scalar":
    """The default as an Arrow scalar of the column's type, cast from its text as Java's
    string casts do (binary: the text's UTF-8 bytes; boolean in any letter case)."""
    import pyarrow as pa

    from core.text_values import decode_value

    try:
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
            value: Any = text.encode()
        elif pa.types.is_boolean(t):
            value = decode_value(text.strip().lower(), t)
        elif pa.types.is_nested(t):
            raise ValueError("Paimon casts no string to a nested type")
        else:
            value = decode_value(text.strip() if not pa.types.is_string(t) else text, t)
        return pa.scalar(value, t)
    except (ValueError, TypeError, ArithmeticError, pa.ArrowException) as e:
        raise UnsupportedTableError(f"option fields.{name}.default-value={text!r} is not a value of the "
                                    f"column's type {t} ({e})") from None


def fill_defaults(data: "pa.Table", schema: "TableSchema") -> "pa.Table":
    """``data`` with each defaulted column's nulls replaced by its default."""
    texts = default_texts(schema)
    for name, text in texts.items():
        i = data.schema.get_field_index(name)
        if i < 0:
            continue  # not read (--select)
        column = data.column(i)
        if column.null_count:
            import pyarrow.compute as pc  # here: most tables have no default, most reads no nulls

            filled = pc.coalesce(column, _default_scalar(name, text, column.type))
            data = data.set_column(i, data.schema.field(i), filled)
        else:
            _default_scalar(name, text, column.type)  # a bad default fails every read alike
    return data


def prunable(predicate: "Predicate | None", schema: "TableSchema") -> "Predicate | None":
    """``predicate`` for pruning files and row groups by their stats and indexes, or None when
    it names a defaulted column (the files' stats describe the nulls, not the default)."""
    if predicate is None or not (predicate.columns & default_texts(schema).keys()):
        return predicate
    return None


def check_defaults(schema: "TableSchema") -> None:
    """Each default value casts to its column's type (Java's SchemaValidation checks this when
    a table is created). Raises UnsupportedTableError naming the option."""
    from core.types import arrow_field

    by_name = {f.name: f for f in schema.fields}
    for name, text in default_texts(schema).items():
        _default_scalar(name, text, arrow_field(by_name[name]).type)
