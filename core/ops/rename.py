"""Rename a table: Paimon's filesystem catalog renames the table's directory.

On local disk this is one ``os.rename``: atomic, so readers see the table at the old name or at
the new one, never half of it.

Object stores have no rename, so there the table is copied (by the store: CopyObject) and the
source deleted, in an order where every intermediate state is a whole table at one of the two
names and a rerun of the same ``lakectl rename`` finishes the job:

1. ``RENAMING`` is created in the target (create-if-absent; ``core/renaming.py``). From here on
   lakectl refuses the target with "a rename from X into this table is in progress or failed;
   rerun ...", and a rerun of the same rename resumes instead of refusing an existing target.
2. Copy rounds. Each lists the source and copies what the target lacks: data, manifest and
   index files first (a few at a time; nothing reads them before a snapshot names them), then
   tags, branches, consumers, changelog and snapshot files, the hints after the snapshots, and
   the schema files last, the latest first. Until a schema file lands the target is no table to
   lakectl, Java or pypaimon; then it is the source as of the round's listing (a reader of an
   older schema file that is not there yet fails loudly). Files the source no longer has are
   deleted from the target (a rollback, an expire between rounds).
3. A concurrent writer: the rounds repeat until a listing of the source equals the previous
   one (every file, its size and ETag): then nothing was committed, tagged, branched, expired
   or rolled back on the source while the last round copied, and the target holds all of it.
   A commit that lands during a round is copied by the next one. If the source still moves
   after ``MAX_ROUNDS`` rounds the rename gives up: it removes the partial target (schema
   files first) and leaves the source untouched (CommitConflictError, exit 4). Copying again
   beats aborting for the occasional commit; a source that never stops needs its writers
   stopped, which only the user can do.
4. ``RENAMED`` (naming the target) is written into the source. A commit that finds it after
   publishing takes its snapshot back (exit 4, core/commit.py); one that published after the
   last listing and looked before RENAMED was there exited 0, so the source is listed once
   more and, if it changed, copied again until it holds still. Then ``RENAMING`` is deleted:
   the target is the table now, and what is left of the source reads as no table (exit 3).
5. The source is deleted: its schema files first, oldest first (it stops being a table for
   every reader, and until the newest goes its latest schema stays right), then every other
   file, ``RENAMED`` last. A kill here leaves files without a schema and with ``RENAMED``:
   not a table to anyone, removed by a rerun of the rename or by ``lakectl drop``.

Before step 1 the rename takes the source's closing marker and waits for commands of several
steps (core/busy.py), which then stay away until it ends; commits go on and are copied. An
error (not a kill) during the copy leaves the target with its ``RENAMING`` marker for the
rerun: the source is untouched until step 4.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection

from core.busy import closing, is_marker as is_busy_marker
from core.copying import Progress, copy_files, copy_in_order, delete_files
from core.errors import (CommitConflictError, LakectlError, NotFoundError, RenameInProgressError,
                         TableExistsError, UsageError)
from core.fileio import FileIO, FileStatus, join
from core.renaming import MARKERS, RENAMED, RENAMING, RenameMarker, read_marker
from core.table_handle import TableHandle
from core.warehouse import looks_like_path

if TYPE_CHECKING:
    from core.catalog.base import Catalog
    from core.warehouse import Warehouse

log = logging.getLogger(__name__)

MAX_ROUNDS = 5  # copy rounds before a source that keeps changing makes the rename give up
_NUMBERED = re.compile(r"^(.*-)(\d+)$")
# The copy order of metadata, by top-level directory; everything else (bucket directories,
# manifest/, index/, statistics/) has unique, never rewritten names and goes first.
_RANK = {"tag": 1, "branch": 2, "consumer": 3, "changelog": 4, "snapshot": 5, "schema": 9}
_DATA_RANK = 0

Listing = dict[str, FileStatus]  # path relative to the table directory -> its status


@dataclass(frozen=True, slots=True)
class RenameResult:
    table: str  # the old name
    new_name: str
    path: str
    new_path: str
    method: str  # "rename" (one atomic rename: local disk) or "copy" (object stores: copy, then delete)
    files_copied: int  # by a copy (or that would be, on a dry run)
    bytes_copied: int
    files_deleted: int  # the source's files deleted after the copy
    rounds: int  # copy rounds (a commit on the source during a round adds one)
    resumed: bool  # a rerun that finished an interrupted rename
    dry_run: bool


def rename_table(catalog: Catalog | Warehouse, old: str, new: str, *, dry_run: bool = False,
                 progress: Progress | None = None) -> RenameResult:
    """Rename table ``old`` (DB.TABLE) to ``new`` (DB.TABLE, in an existing database). Through a
    catalog with a registry the files move first and the row after (``_rename_registered``).

    Raises:
        UsageError: a name given as a path, or the same table twice.
        NotFoundError: ``old`` is not a table, or ``new``'s database does not exist.
        TableExistsError: something already exists at ``new`` (other than this rename's own copy).
        RenameInProgressError: another rename into ``new`` (or of ``old``) is unfinished; or
            the copy stopped on an error (the message names the rerun).
        CommitConflictError: the source kept changing for ``MAX_ROUNDS`` copy rounds; the partial
            copy was removed and the source is untouched.
    """
    from core.catalog.filesystem import as_catalog

    catalog = as_catalog(catalog)
    for name in (old, new):
        if looks_like_path(name):
            raise UsageError(f"rename takes DB.TABLE names inside the warehouse, not a path ({name})")
    if catalog.server_owns_chain:
        return _rename_on_server(catalog, old, new, dry_run)
    source, target = TableHandle(catalog.locate(old)), TableHandle(catalog.locate(new))
    if source.path == target.path:
        raise UsageError(f"{source.name} and {target.name} are the same table")
    if source.location.catalog is not None:
        result = _rename_registered(catalog, source, target, dry_run, progress)
    else:
        result = _rename_files(catalog, source, target, dry_run, progress)
    if not dry_run:
        _iceberg_after_rename(source, TableHandle(catalog.locate(new)))
    return result


def _iceberg_after_rename(source: TableHandle, target: TableHandle) -> None:
    """A table keeping Iceberg metadata (core/iceberg/) gets it anew at its new path."""
    options = target.schema.options
    if not any(k.startswith("metadata.iceberg") for k in options):
        return
    from core import iceberg

    if iceberg.enabled(options):
        iceberg.after_move(target.file_io, source.path, target.path, target.schema, target.latest_snapshot())


def _rename_on_server(catalog: Catalog, old: str, new: str, dry_run: bool) -> RenameResult:
    """A REST table: the server's renameTable alone (the server moves the files if it keeps
    them under the name); the new path is the server's answer after it."""
    source = catalog.locate(old)  # NotFoundError when the server does not know it
    target = catalog.locate(new, must_exist=False)  # type: ignore[call-arg]
    if source.name == target.name:
        raise UsageError(f"{source.name} and {target.name} are the same table")
    if target.placed:
        raise TableExistsError(f"table {target.name} already exists in the REST catalog; nothing was renamed")
    new_path = target.path
    if not dry_run:
        catalog.rename_table(source, target)
        new_path = catalog.locate(target.name).path
    return RenameResult(source.name, target.name, source.path, new_path, "server", 0, 0, 0, 0, False, dry_run)


def _rename_registered(catalog: Catalog, source: TableHandle, target: TableHandle, dry_run: bool,
                       progress: Progress | None) -> RenameResult:
    """The files as on the filesystem catalog, then the registry row (Java renames the row
    first; lakectl keeps "files first" for every change). A crash between the two leaves the
    old name registered without files and the new directory unregistered: commands on either
    name say so, and this rename run again sees that state and moves the row alone."""
    if catalog.is_registered(target.location):
        raise TableExistsError(f"{target.name} is already registered in the catalog; nothing was renamed")
    if not catalog.is_registered(source.location):
        if not source.exists():
            raise NotFoundError(f"table {source.name} does not exist (it is not registered in the catalog)")
        source.location.catalog.check_registered(source.location, has_files=True)  # type: ignore[union-attr]
    if not source.exists() and not source.file_io.walk(source.path) and target.exists():
        # An interrupted rename of ours: the files moved, the row did not.
        if not dry_run:
            catalog.rename_table(source.location, target.location)
        return _result(source, target, "rename" if target.file_io.local else "copy", resumed=True, dry_run=dry_run)
    result = _rename_files(catalog, source, target, dry_run, progress)
    if not dry_run:
        catalog.rename_table(source.location, target.location)
    return result


def _rename_files(catalog: Catalog, source: TableHandle, target: TableHandle, dry_run: bool,
                  progress: Progress | None) -> RenameResult:
    io = catalog.file_io
    if not io.local:
        return _rename_by_copy(catalog, source, target, dry_run, progress)
    if not source.exists():
        raise NotFoundError(f"table {source.name} does not exist (looked in {source.path})")
    if io.exists(target.path):
        raise TableExistsError(f"{target.name} already exists ({target.path}); nothing was renamed")
    _require_database(catalog, target)
    if not dry_run:
        # Once no command of several steps is at work on it (core/busy.py).
        with closing(io, source.path, source.name, f"rename {source.name} to {target.name}") as held:
            try:
                io.rename_dir(source.path, target.path)
            except FileNotFoundError:  # dropped or renamed by another command since we looked
                raise NotFoundError(f"table {source.name} no longer exists (dropped or renamed meanwhile); "
                                    "nothing was renamed") from None
            held.moved_to(target.path)
        log.info("renamed %s to %s", source.name, target.name)
    return _result(source, target, "rename", dry_run=dry_run)


def _result(source: TableHandle, target: TableHandle, method: str, *, files: int = 0, nbytes: int = 0, deleted: int = 0,
            rounds: int = 0, resumed: bool = False, dry_run: bool = False) -> RenameResult:
    return RenameResult(source.name, target.name, source.path, target.path, method, files, nbytes, deleted,
                        rounds, resumed, dry_run)


def _require_database(catalog: Catalog, target: TableHandle) -> None:
    database = target.path.rsplit("/", 1)[0]
    if target.location.catalog is None:  # the filesystem catalog: the database's directory
        if not catalog.file_io.exists(database):
            raise NotFoundError(f"database {target.name.split('.')[0]} does not exist in {catalog.warehouse_uri}")
        return
    db = target.name.split(".")[0]
    if not catalog.database_exists(db):
        raise NotFoundError(f"database {db} does not exist in the catalog")
    if catalog.file_io.local and not catalog.file_io.exists(database):
        catalog.file_io.mkdirs(database)  # registered by `create database` before its first table


# ---- object stores: copy, then delete -------------------------------------------------------

def _rename_by_copy(catalog: Catalog, source: TableHandle, target: TableHandle, dry_run: bool,
                    progress: Progress | None) -> RenameResult:
    io = catalog.file_io
    renaming = read_marker(io, target.path, RENAMING)
    renamed = read_marker(io, source.path, RENAMED)
    if renaming is not None and renaming.source_path != source.path:
        raise RenameInProgressError(f"a rename from {renaming.source_name} into {target.name} is in progress or "
                                    f"failed; rerun {renaming.rerun}")
    if renamed is not None and renamed.target_path != target.path:
        raise RenameInProgressError(f"{source.name} is being renamed to {renamed.target_name} (or that rename "
                                    f"failed); rerun {renamed.rerun}")
    if renamed is not None and renaming is None:
        # The copy was complete and the source being deleted when the last run stopped; unless
        # the target is gone since (dropped): then what is left here is the only copy.
        if not target.exists():
            raise RenameInProgressError(f"{source.path} holds a rename's RENAMED marker but {target.name} is not a "
                                        f"table; nothing was deleted (remove {join(source.path, RENAMED)} to keep "
                                        f"{source.name} if it still has its schema files)")
        left = list(_listing(io, source.path).values())  # the table's files, without the marker
        if not dry_run:
            _delete_source(io, source, left)
        return _result(source, target, "copy", deleted=len(left), resumed=True, dry_run=dry_run)
    if not source.exists():
        raise NotFoundError(f"table {source.name} does not exist (looked in {source.path})")
    if renaming is None and io.walk(target.path):  # objects, not an empty prefix a store may show
        raise TableExistsError(f"{target.name} already exists ({target.path}); nothing was renamed")
    _require_database(catalog, target)
    if dry_run:
        listing = _listing(io, source.path)
        return _result(source, target, "copy", files=len(listing), nbytes=sum(f.size for f in listing.values()),
                       deleted=len(listing), resumed=renaming is not None, dry_run=True)
    # Once no command of several steps is at work on the source (core/busy.py); commits may
    # go on, and the copy rounds take them along.
    with closing(io, source.path, source.name, f"rename {source.name} to {target.name}"):
        marker = renaming or RenameMarker(source.name, source.path, target.name, target.path,
                                          source.snapshots.latest_id())
        if renaming is None and not io.try_create(join(target.path, RENAMING), marker.to_json()):
            raise RenameInProgressError(f"another rename into {target.name} began at the same moment; nothing was "
                                        "renamed")
        try:
            files, nbytes, rounds, listing = _copy_until_stable(io, source, target, progress)
            io.write_bytes(join(source.path, RENAMED), marker.to_json())
            # A commit that published after the last listing and looked for RENAMED before it
            # was there exited 0: look once more and copy it too. Commits from here on find
            # RENAMED and take themselves back (core/commit.py), so the rounds settle.
            if not _same(_listing(io, source.path), listing):
                try:
                    more, more_bytes, more_rounds, listing = _copy_until_stable(io, source, target, progress)
                except CommitConflictError:
                    io.delete(join(source.path, RENAMED))  # the source stays the table
                    raise
                files, nbytes, rounds = files + more, nbytes + more_bytes, rounds + more_rounds
            io.delete(join(target.path, RENAMING))  # the target is the table from here on
            log.info("copied %s to %s in %d round(s); deleting the source", source.name, target.name, rounds)
            deleted = _delete_source(io, source, list(listing.values()))
        except LakectlError:
            raise
        except Exception as e:
            raise RenameInProgressError(f"the rename of {source.name} to {target.name} stopped ({e}); "
                                        f"rerun {marker.rerun} to finish it") from e
    return _result(source, target, "copy", files=files, nbytes=nbytes, deleted=deleted, rounds=rounds,
                   resumed=renaming is not None)


def _listing(io: FileIO, root: str, skip: Collection[str] = ()) -> Listing:
    """Every file below ``root`` by its path relative to ``root``, without rename markers (and
    without the top-level names in ``skip``: a branch rename's own markers)."""
    prefix = root.rstrip("/") + "/"
    out = {}
    for f in io.walk(root):
        relative = f.path[len(prefix):] if f.path.startswith(prefix) else f.path.rsplit("/", 1)[-1]
        if relative not in MARKERS and relative not in skip and not is_busy_marker(relative):
            out[relative] = f
    return out


def _version(f: FileStatus | None) -> tuple[object, ...] | None:
    """What changes when a file is rewritten: its size and the store's ETag (the mtime on disk)."""
    return None if f is None else (f.size, f.etag if f.etag is not None else f.mtime)


def _same(a: Listing, b: Listing) -> bool:
    return a.keys() == b.keys() and all(_version(a[k]) == _version(b[k]) for k in a)


def _rank(relative: str) -> int:
    parts = relative.split("/")
    if len(parts) == 1:
        return _DATA_RANK
    return _RANK.get(parts[0], _DATA_RANK)


def _copy_order(relative: str) -> tuple[object, ...]:
    """Metadata in copy order: by directory rank; within a branch, its schema files last; within
    a directory numbered files (snapshot-N) ascending before hints (LATEST, EARLIEST), except
    the table's schema files, which go latest first."""
    rank = _rank(relative)
    parts = relative.split("/")
    branch_schema = rank == _RANK["branch"] and len(parts) > 2 and parts[2] == "schema"
    numbered = _NUMBERED.match(parts[-1])
    number = int(numbered.group(2)) if numbered else 0
    if rank == _RANK["schema"]:
        number = -number
    return rank, branch_schema, numbered is None, number, relative


def _copy_until_stable(io: FileIO, source: TableHandle, target: TableHandle,
                       progress: Progress | None) -> tuple[int, int, int, Listing]:
    """Copy rounds until the source's listing stays the same for one whole round; returns the
    files and bytes copied, the rounds and the last listing."""
    copied = copy_until_stable(io, source.path, target.path, source.name, progress)
    if copied is not None:
        return copied
    _remove_target(io, target)
    raise CommitConflictError(f"{source.name} kept changing during the rename ({MAX_ROUNDS} copy rounds); nothing "
                              f"was renamed: {source.name} is unchanged and the partial copy at {target.path} was "
                              "removed. Stop its writers and rerun")


def copy_until_stable(io: FileIO, src_root: str, dst_root: str, name: str, progress: Progress | None = None,
                      skip: Collection[str] = ()) -> tuple[int, int, int, Listing] | None:
    """Copy rounds from ``src_root`` into ``dst_root`` until the source's listing stays the same
    for one whole round: the files and bytes copied, the rounds and the last listing; None when
    it still changed after ``MAX_ROUNDS`` rounds. ``skip``: top-level names neither copied nor
    deleted from the target (a branch rename's markers)."""
    previous: Listing | None = None
    files = nbytes = 0
    for rounds in range(MAX_ROUNDS + 1):
        listing = _listing(io, src_root, skip)
        if previous is not None and _same(listing, previous):
            return files, nbytes, rounds, listing
        if rounds == MAX_ROUNDS:
            return None
        if previous is not None:
            log.info("%s changed while it was copied; copying the difference (round %d)", name, rounds + 1)
        n, b = _copy_round(io, src_root, dst_root, listing, previous, progress, skip)
        files, nbytes, previous = files + n, nbytes + b, listing
    return None


def source_changed(io: FileIO, src_root: str, listing: Listing, skip: Collection[str] = ()) -> bool:
    """Does ``src_root`` list differently from ``listing`` (a commit landed since)?"""
    return not _same(_listing(io, src_root, skip), listing)


def _copy_round(io: FileIO, src_root: str, dst_root: str, listing: Listing, previous: Listing | None,
                progress: Progress | None, skip: Collection[str] = ()) -> tuple[int, int]:
    """Copy into the target what it lacks of ``listing``: data files it does not have, metadata
    that is new or changed since ``previous`` (all of it in a run's first round: an earlier run's
    copy may be stale), schema files last; then delete what the source no longer has."""
    present = _listing(io, dst_root, skip)
    data, metadata = [], []
    for relative, f in listing.items():
        pair = (f.path, join(dst_root, relative), f.size)
        if _rank(relative) == _DATA_RANK:
            have = present.get(relative)
            if have is None or have.size != f.size:
                data.append(pair)
        elif previous is None or _version(previous.get(relative)) != _version(f):
            metadata.append((_copy_order(relative), pair))
    metadata.sort(key=lambda item: item[0])
    # A file the source lost meanwhile (expired) is skipped: the next listing shows the loss.
    copy_files(io, io, data, progress=progress, missing_ok=True)
    copy_in_order(io, io, [pair for _, pair in metadata], missing_ok=True)
    stale = sorted((r for r in present if r not in listing), key=lambda r: _rank(r) == _DATA_RANK)
    for relative in stale:  # metadata first: nothing the target keeps names a data file deleted here
        io.delete(join(dst_root, relative))
    return len(data) + len(metadata), sum(p[2] for p in data) + sum(p[2] for _, p in metadata)


def _schema_files(io: FileIO, root: str) -> list[str]:
    """The table's schema files, oldest first."""
    schema_dir = join(root, "schema")
    return [join(schema_dir, f"schema-{sid}") for sid in io.list_numbered(schema_dir, "schema-")]


def _delete_source(io: FileIO, source: TableHandle, known: list[FileStatus]) -> int:
    """Delete the copied source: schema files first, oldest first (no reader takes it for a table
    after the newest goes, and until then its latest schema is right), every other file next,
    ``RENAMED`` last, so whatever a kill leaves is recognisably this rename's leftover."""
    deleted = 0
    schemas = _schema_files(io, source.path)
    for path in schemas:
        io.delete(path)
        deleted += 1
    marker = join(source.path, RENAMED)
    left = ({f.path for f in known} | {f.path for f in io.walk(source.path)}) - set(schemas)
    late = {p for p in left - {f.path for f in known} - {marker} if not is_busy_marker(p.rsplit("/", 1)[-1])}
    if late:  # a writer that kept going after the last listing: its files are not in the target
        log.warning("%d file(s) appeared in %s after the rename's last look at it (a writer still running?); "
                    "they are deleted with it and are not in the renamed table", len(late), source.path)
    rest = sorted(left - {marker})
    delete_files(io, rest)  # a few at a time: their order does not matter, only that RENAMED stays
    io.delete(marker)
    io.delete_tree(source.path)  # prefixes some stores keep as directories once emptied
    return deleted + sum(1 for p in rest if not is_busy_marker(p.rsplit("/", 1)[-1]))  # the table's files


def _remove_target(io: FileIO, target: TableHandle) -> None:
    """Remove a partial copy: schema files first (it stops being a table), ``RENAMING`` last (a
    kill meanwhile leaves something a rerun resumes)."""
    for path in _schema_files(io, target.path):  # oldest first, as for the source
        io.delete(path)
    marker = join(target.path, RENAMING)
    delete_files(io, [f.path for f in io.walk(target.path) if f.path != marker])
    io.delete(marker)
    io.delete_tree(target.path)


__all__ = ["MAX_ROUNDS", "RenameResult", "copy_until_stable", "rename_table", "source_changed"]
