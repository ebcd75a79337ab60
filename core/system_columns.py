"""Paimon's system columns a scan may name in ``--select`` and ``--where``.

Row-tracking tables (``row-tracking.enabled=true``) show ``_ROW_ID`` and ``_SEQUENCE_NUMBER``
as pypaimon 2.1 does (its ``SpecialFields``; Java Paimon 1.0 has no row tracking):

- ``_ROW_ID``: the file's ``first_row_id`` plus the row's position in the file (in a
  data-evolution table, in the row-id range's newest file holding whole rows); pypaimon
  computes it even where a file stores a ``_ROW_ID`` column;
- ``_SEQUENCE_NUMBER``: the file's stored ``_SEQUENCE_NUMBER`` column where it has one, its
  nulls, and every row of a file without the column, the file's max sequence number.

They are never part of a plain scan's rows, and no user column can carry their names
(Paimon reserves them). Primary-key tables' ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` are
refused: Paimon's batch read of such a table returns neither (pypaimon 2.1 drops them from a
projection; Paimon shows a record's kind, and with ``table-read.sequence-number.enabled`` its
sequence number, only in the ``$audit_log`` and ``$binlog`` system tables).
"""

from __future__ import annotations

from typing import Sequence

from core import row_tracking
from core.errors import UsageError
from core.schema import TableSchema
from core.types import DataField, parse_type

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
NAMES = (ROW_ID, SEQUENCE_NUMBER, VALUE_KIND)

# Paimon's field ids for them (SpecialFields): past any user column's id.
_FIELDS = {
    ROW_ID: DataField(2147483642, ROW_ID, parse_type("BIGINT NOT NULL")),
    SEQUENCE_NUMBER: DataField(2147483646, SEQUENCE_NUMBER, parse_type("BIGINT NOT NULL")),
    VALUE_KIND: DataField(2147483645, VALUE_KIND, parse_type("TINYINT NOT NULL")),
}


def available(schema: TableSchema) -> list[DataField]:
    """The system columns a scan of ``schema`` can name."""
    if row_tracking.enabled(schema) and not schema.has_primary_key:
        return [_FIELDS[ROW_ID], _FIELDS[SEQUENCE_NUMBER]]
    return []


def named(schema: TableSchema, names: Sequence[str] | frozenset[str]) -> tuple[str, ...]:
    """The system columns among ``names``, in Paimon's order (``_ROW_ID`` first).

    Raises:
        UsageError: a system column the table does not have (it is no row-tracking table).
    """
    wanted = [n for n in NAMES if n in names]
    have = {f.name for f in available(schema)}
    for name in wanted:
        if name not in have:
            raise UsageError(_missing(name, schema))
    return tuple(wanted)


def _missing(name: str, schema: TableSchema) -> str:
    if schema.has_primary_key:
        return (f"system column {name} is not read from primary-key tables: Paimon's batch read of one "
                "returns neither _SEQUENCE_NUMBER nor _VALUE_KIND (pypaimon 2.1 leaves them out of a projection; "
                "Paimon shows them only in its $audit_log system table); row-tracking append tables have "
                "_ROW_ID and _SEQUENCE_NUMBER")
    if name == VALUE_KIND:
        return f"system column {name} belongs to primary-key tables; this table has no primary key"
    return (f"system column {name} exists only on row-tracking tables (row-tracking.enabled=true); "
            "this table does not track rows")


def fields_with(schema: TableSchema) -> list[DataField]:
    """The table's columns and Paimon's system columns: what ``--where`` and ``--select`` may
    name (``named`` then refuses a system column the table does not have, saying why)."""
    return list(schema.fields) + list(_FIELDS.values())


def refuse_in_changes(schema: TableSchema, select: Sequence[str] | None, where: str | None) -> None:
    """Refuse system columns in a read of changes (``--follow``): its first snapshot would
    show them and the changes after it could not (they are read by batch scans only).

    Raises:
        UsageError: ``select`` or ``where`` names a system column.
    """
    named = set(select or ())
    if where is not None and any(n in where for n in NAMES):
        from core.where_simple import parse_condition

        named |= parse_condition(where, fields_with(schema)).columns
    found = [n for n in NAMES if n in named]
    if found:
        raise UsageError(f"system column {found[0]} is read by batch scans only, not by --follow or "
                         "--incremental-between")
