"""TableHandle: one Paimon table as every operation takes it: where it lives (path, FileIO),
which branch it is seen through, and its metadata (schemas, snapshots, tags, manifests).

It holds no operations: those are ``core.ops`` functions taking a handle, and ``core.table.Table``
is the Python API that calls them as methods. Keeping the handle apart keeps the layers one way:
metadata and operations import the handle, only the API imports the operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from core.branch import (MAIN_BRANCH, UNFINISHED, branch_path, refuse_unfinished_fast_forward,
                         validate_branch_name)
from core.errors import NotFoundError
from core.fileio import FileIO, join
from core.renaming import refuse_renaming
from core.schema import SchemaManager, TableSchema
from core.snapshot import Snapshot, SnapshotManager
from core.tag import TagManager
from core.warehouse import TableLocation, Warehouse

if TYPE_CHECKING:
    from core.catalog.base import Catalog
    from core.manifest import ManifestIO

DEFAULT_WAREHOUSE = "./warehouse"


@dataclass(frozen=True)
class TableHandle:
    location: TableLocation
    branch: str = MAIN_BRANCH

    # ---- opening -------------------------------------------------------------------
    @classmethod
    def locate(cls, name: str, *, warehouse: str | None = None,
               storage_options: dict[str, Any] | None = None, catalog: Catalog | None = None) -> "TableHandle":
        """The table at ``name`` whether or not it exists yet: through ``catalog`` when one is
        given, else in the filesystem warehouse ``warehouse``."""
        if catalog is not None and catalog.server_owns_chain:  # REST: unplaced until the server creates it
            return cls(catalog.locate(name, must_exist=False))  # type: ignore[call-arg]
        if catalog is not None:
            return cls(catalog.locate(name))
        wh = Warehouse.open(warehouse or DEFAULT_WAREHOUSE, storage_options)
        return cls(wh.locate(name))

    @classmethod
    def open(cls, name: str, *, warehouse: str | None = None, storage_options: dict[str, Any] | None = None,
             branch: str | None = None, catalog: Catalog | None = None) -> "TableHandle":
        """Open an existing table (on ``branch``, main by default); NotFoundError if there is none
        (or, through a catalog with a registry, if it is not registered)."""
        table = cls.locate(name, warehouse=warehouse, storage_options=storage_options, catalog=catalog)
        # A rename on an object store copies file by file: say so rather than open half a table.
        refuse_renaming(table.file_io, table.path, table.name)
        exists = table.exists()
        if table.location.catalog is not None:  # registered (and not only on disk) in its catalog
            table.location.catalog.check_registered(table.location, has_files=exists)
        if not table.location.placed:
            raise NotFoundError(f"table {table.name} does not exist in its REST catalog")
        if not exists:
            table.file_io.refuse_file_in_the_way(table.path)
            raise NotFoundError(f"table {name} does not exist (looked in {table.path})")
        return table.on_branch(branch) if branch else table

    def on_branch(self, branch: str) -> "TableHandle":
        """The same table seen through ``branch``: its snapshots, schemas and tags are the
        branch's; NotFoundError if the branch does not exist."""
        if branch == MAIN_BRANCH:
            return type(self)(self.location)
        validate_branch_name(branch)
        table = type(self)(self.location, branch)
        if not table.schemas.list_ids() or self.file_io.exists(join(table.branch_path, UNFINISHED)):
            # No schema, or a create or delete was killed part-way (core/branch.py): not a branch.
            hint = ""
            if self.file_io.exists(table.branch_path) and self.file_io.walk(table.branch_path):
                hint = (f" (an interrupted branch create or delete left its directory: "
                        f"`lakectl branch delete {self.name} {branch}` or `lakectl check --repair` removes it)")
            raise NotFoundError(f"branch {branch} of table {self.name} does not exist{hint}")
        return table

    def refuse_unfinished_fast_forward(self, what: str) -> None:
        """Raise FastForwardUnfinishedError if an interrupted ``branch fast-forward`` left main
        half-way and ``what`` would change main or the branch being fast-forwarded."""
        refuse_unfinished_fast_forward(self.file_io, self.path, self.name, self.branch, what)

    @property
    def is_main(self) -> bool:
        return self.branch == MAIN_BRANCH

    @property
    def branch_path(self) -> str:
        """The directory holding this branch's snapshot/, schema/ and tag/ (the table's for main)."""
        return branch_path(self.path, self.branch)

    @property
    def name(self) -> str:
        return self.location.name

    @property
    def path(self) -> str:
        return self.location.path

    @property
    def file_io(self) -> FileIO:
        return self.location.file_io

    @cached_property
    def schemas(self) -> SchemaManager:
        return SchemaManager(self.file_io, self.branch_path, None if self.is_main else self.path)

    @cached_property
    def snapshots(self) -> SnapshotManager:
        return SnapshotManager(self.file_io, self.branch_path)

    @cached_property
    def tags(self) -> TagManager:
        return TagManager(self.file_io, self.branch_path)

    def manifests(self) -> ManifestIO:
        from core.manifest import ManifestIO  # fastavro: not for commands that read snapshots only

        return ManifestIO(self.file_io, self.path, self.schema.core_options.manifest_compression)

    def exists(self) -> bool:
        return self.location.placed and bool(self.schemas.list_ids())

    def placed(self) -> "TableHandle":
        """This table after a server created it (REST: the server chose its path); itself when
        its location was known already."""
        if self.location.placed or self.location.catalog is None:
            return self
        return type(self)(self.location.catalog.locate(self.name), self.branch)

    @property
    def schema(self) -> TableSchema:
        """The latest schema, looked up on every access (another process may have altered it);
        on an object store an unchanged one costs one LIST (SchemaManager._latest_listed)."""
        return self.schemas.require_latest(self.name)

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshots.latest()

