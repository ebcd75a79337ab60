"""Rename a table: Paimon's filesystem catalog renames the table's directory.

On local disk this is one ``os.rename``: atomic, so readers see the table at the old name or
at the new one, never half of it. Object stores have no rename (only copy every object, then
delete), and a copy that dies half-way would leave two partial tables; lakectl refuses there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.errors import NotFoundError, TableExistsError, UnsupportedTableError, UsageError
from core.table import Table
from core.warehouse import Warehouse, looks_like_path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RenameResult:
    table: str  # the old name
    new_name: str
    path: str
    new_path: str


def rename_table(warehouse: Warehouse, old: str, new: str) -> RenameResult:
    """Rename table ``old`` (DB.TABLE) to ``new`` (DB.TABLE, in an existing database).

    Raises:
        UsageError: a name given as a path.
        NotFoundError: ``old`` is not a table, or ``new``'s database does not exist.
        TableExistsError: something already exists at ``new``.
        UnsupportedTableError: the warehouse is on an object store (no atomic rename).
    """
    for name in (old, new):
        if looks_like_path(name):
            raise UsageError(f"rename takes DB.TABLE names inside the warehouse, not a path ({name})")
    source, target = Table(warehouse.locate(old)), Table(warehouse.locate(new))
    if not source.exists():
        raise NotFoundError(f"table {source.name} does not exist (looked in {source.path})")
    if source.path == target.path:
        raise UsageError(f"{source.name} and {target.name} are the same table")
    io = warehouse.file_io
    if io.exists(target.path):
        raise TableExistsError(f"{target.name} already exists ({target.path}); nothing was renamed")
    target_db = target.path.rsplit("/", 1)[0]
    if not io.exists(target_db):
        raise NotFoundError(f"database {target.name.split('.')[0]} does not exist in {warehouse.uri}")
    if not io.local:
        raise UnsupportedTableError(
            f"{io.scheme}:// has no atomic rename; lakectl does not rename tables there (copying every object "
            "and deleting the old ones could leave two partial tables if interrupted). Nothing was changed")
    io.rename_dir(source.path, target.path)
    log.info("renamed %s to %s", source.name, target.name)
    return RenameResult(source.name, target.name, source.path, target.path)


__all__ = ["RenameResult", "rename_table"]
