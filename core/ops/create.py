"""create: write ``schema-0`` of a new table (and its database directory), then register it in
its catalog (nothing to do on the filesystem catalog).

Files first, then the registry, as Java's ``JdbcCatalog.createTableImpl``: a crash in between
leaves a directory the catalog does not register, which every command reports (never reads) and
a rerun of the same create finishes (it registers a table whose schema is the one asked for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from core.default_values import check_defaults
from core.errors import TableExistsError, UnsupportedTableError, UsageError
from core.renaming import refuse_renaming
from core.schema import SchemaManager, TableSchema, new_table_schema
from core.table_handle import TableHandle
from core.types import DataType, from_arrow, paimon2_columns, parse_columns

if TYPE_CHECKING:
    import pyarrow as pa


def create(table: TableHandle, schema: str | Sequence[tuple[str, DataType, str | None]], *,
           primary_keys: Sequence[str] = (), partition_keys: Sequence[str] = (),
           options: dict[str, str] | None = None, comment: str | None = None,
           if_not_exists: bool = False) -> tuple[TableSchema, bool]:
    """Create the table. Returns (schema, created); created is False for an existing table
    with ``if_not_exists``.

    Raises:
        UsageError: a malformed schema, key or option.
        TableExistsError: the table exists and ``if_not_exists`` is false.
    """
    columns = parse_columns(schema) if isinstance(schema, str) else list(schema)
    new = new_table_schema(columns, primary_keys=primary_keys, partition_keys=partition_keys,
                           options=options, comment=comment)
    found = paimon2_columns(new.fields)
    if found:
        raise UsageError(f"column {found[0].name} has type {found[0].type}, a Paimon 2.x type lakectl reads but "
                         "does not write; create the table with pypaimon or Paimon 2.x")
    try:
        check_defaults(new)
    except UnsupportedTableError as e:
        raise UsageError(str(e)) from None
    catalog = table.location.catalog
    if catalog is not None and catalog.server_owns_chain:
        return _create_on_server(table, new, if_not_exists)
    refuse_renaming(table.file_io, table.path, table.name)  # not a table yet, but a rename's target
    existing = table.schemas.latest()
    if existing is not None:
        if catalog is not None and not catalog.is_registered(table.location):
            return _finish_registration(table, existing, new)
        if if_not_exists:
            return existing, False
        raise TableExistsError(f"table {table.name} already exists")
    if not SchemaManager(table.file_io, table.path).commit(new):
        if catalog is not None and not catalog.is_registered(table.location):
            return _finish_registration(table, table.schema, new)
        if if_not_exists:
            return table.schema, False
        raise TableExistsError(f"table {table.name} was created concurrently by another writer")
    if catalog is not None:
        catalog.register_table(table.location)
    return new, True


def _create_on_server(table: TableHandle, new: TableSchema, if_not_exists: bool) -> tuple[TableSchema, bool]:
    """A REST table: the server's createTable, which writes ``schema-0`` where the server
    chooses (lakectl never writes it). The caller takes the new path from ``table.placed()``."""
    catalog = table.location.catalog
    assert catalog is not None
    if table.exists():
        if if_not_exists:
            return table.schema, False
        raise TableExistsError(f"table {table.name} already exists")
    try:
        location = catalog.create_table(table.name, new)  # type: ignore[attr-defined]
    except TableExistsError:  # created by another client since we looked
        if not if_not_exists:
            raise
        return table.placed().schema, False
    return TableHandle(location).schema, True


def _finish_registration(table: TableHandle, existing: TableSchema, asked: TableSchema) -> tuple[TableSchema, bool]:
    """A table on disk its catalog does not register: an interrupted create of this very table
    (same columns, keys, options and comment) is finished by registering it; anything else is
    refused rather than adopted."""
    assert table.location.catalog is not None
    if existing.id != 0 or not same_definition(existing, asked):
        raise TableExistsError(
            f"{table.path} holds a table that the catalog does not register and that is not the one asked for "
            f"(a table of another catalog, or of an interrupted rename: rerun the rename); nothing was created")
    table.location.catalog.register_table(table.location)
    return existing, True


def same_definition(a: TableSchema, b: TableSchema) -> bool:
    """Whether two schemas define the same table (the time they were written aside)."""
    return (a.fields, tuple(a.primary_keys), tuple(a.partition_keys), dict(a.options), a.comment) == \
        (b.fields, tuple(b.primary_keys), tuple(b.partition_keys), dict(b.options), b.comment)


@dataclass(frozen=True, slots=True)
class Layout:
    """What ``--like`` takes from another table: its columns (types, comments), keys,
    partitioning and options, as Paimon's ``CREATE TABLE ... LIKE`` does."""

    columns: tuple[tuple[str, DataType, str | None], ...]
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    options: dict[str, str]
    comment: str | None

    @classmethod
    def of(cls, source: TableHandle) -> "Layout":
        schema = source.schema
        return cls(tuple((f.name, f.type, f.description) for f in schema.fields), tuple(schema.primary_keys),
                   tuple(schema.partition_keys), dict(schema.options), schema.comment)

    def with_flags(self, primary_keys: Sequence[str], partition_keys: Sequence[str],
                   options: dict[str, str] | None) -> "Layout":
        """The layout with what the command line gave over it: keys replace, options add."""
        return Layout(self.columns, tuple(primary_keys) or self.primary_keys,
                      tuple(partition_keys) or self.partition_keys, {**self.options, **(options or {})}, self.comment)

    def schema(self) -> TableSchema:
        """The schema a table created with this layout gets (written nowhere)."""
        return new_table_schema(list(self.columns), primary_keys=self.primary_keys,
                                partition_keys=self.partition_keys, options=self.options, comment=self.comment)

    def create(self, table: TableHandle, *, comment: str | None = None,
               if_not_exists: bool = False) -> tuple[TableSchema, bool]:
        """``create`` of ``table`` with this layout (``comment`` over its own)."""
        return create(table, list(self.columns), primary_keys=self.primary_keys, partition_keys=self.partition_keys,
                      options=self.options, comment=comment if comment is not None else self.comment,
                      if_not_exists=if_not_exists)


def parse_key_list(text: str | None) -> list[str]:
    """``"id, dt"`` -> ["id", "dt"]; rejects empty names."""
    if not text:
        return []
    names = [p.strip() for p in text.split(",")]
    if any(not n for n in names):
        raise UsageError(f"empty column name in list {text!r}")
    return names


def columns_from_arrow(schema: "pa.Schema", row_kind_column: str | None = None) -> list[tuple[str, DataType, None]]:
    """Table columns for ``write --auto-create``, taken from the input's Arrow schema."""
    return [(f.name, from_arrow(f.type, f.nullable), None) for f in schema if f.name != row_kind_column]
