"""remove-orphan-files: delete files under the table directory that no metadata references.

What counts as referenced (read first, from every ``snapshot-N`` present and every tag, of
main and of every branch, since branches share the table's files):
their manifest lists, the manifests those name, the data files of each one's live set (ADD
minus DELETE, spec §4.3; a file only a DELETE entry names is read by no snapshot) with their
extra files, every changelog file, the index manifest and the index files it lists, and the
statistics file; and every long-lived changelog (``changelog/changelog-N``, decoupled changelog
retention) with the lists of it still there, their manifests and every file they name. Files
are matched by name:
data and manifest names carry a UUID.

Never touched: a partition's ``_SUCCESS`` file (``mark-partition-done``), ``schema/``, ``tag/``, ``consumer/``, ``branch/``, ``changelog/``,
``commit-user/`` (streaming commit users' progress markers), ``metadata/`` (Iceberg metadata) and the
snapshot files and hints in ``snapshot/`` (only stale ``.snapshot-N.*.tmp``-style temp files
there are candidates). A candidate is deleted only when its modification time is older than
``older_than``: a concurrent writer's fresh files are not yet referenced by any snapshot.
A crash part-way is harmless: every deleted file was unreferenced, and a rerun finishes.

The age has a floor (``MIN_AGE_SECONDS``, one hour): a commit writes its data files and
manifests first and publishes the snapshot that references them last, so a younger
unreferenced file may be a running write's, and deleting it makes that write publish a
snapshot whose files are gone. Only a caller that knows every writer is stopped goes lower
(``force``: ``--force`` on the command line, ``orphan-force`` in a maintain policy).
"""

from __future__ import annotations

import logging
import posixpath
import time
from dataclasses import dataclass

from core.branch import all_branch_paths, pinned_snapshots
from core.changelog_manager import ChangelogManager
from core.engines import ProgressCallback
from core.errors import UsageError
from core.fileio import FileStatus
from core.index_manifest import read_index_manifest
from core.manifest import ManifestEntry, merge_entries
from core.options import parse_duration
from core.option_rules import EXPIRE, check_options
from core.ops.migrate import pending_migration_files
from core.ops.partition_done import SUCCESS_FILE
from core.snapshot import Snapshot
from core.table_handle import TableHandle

log = logging.getLogger(__name__)

# Files younger than this may belong to a commit in progress (written, not yet published).
MIN_AGE_SECONDS = 3600

# Metadata directories whose files are never candidates.
# ``metadata/``: Iceberg metadata a table with metadata.iceberg.storage=table-location keeps
# (core/iceberg/), which no Paimon snapshot names and no partition directory is called; it
# prunes its own old versions.
_PROTECTED_DIRS = frozenset({"schema", "tag", "consumer", "branch", "changelog", "commit-user", "metadata"})


@dataclass(frozen=True, slots=True)
class OrphanResult:
    table: str
    branch: str
    files: int
    bytes: int
    dry_run: bool
    older_than: int  # seconds: only files not modified for this long were candidates
    paths: tuple[str, ...]


def referenced_files(table: TableHandle) -> set[str]:
    """Names of every file some snapshot or tag of any branch of ``table`` references (see module doc)."""
    mio = table.manifests()
    # Branches share the table's data and manifests: every branch's snapshots and tags count.
    roots: list[Snapshot] = pinned_snapshots(table, include_own=True)

    names: set[str] = set()
    list_cache: dict[str, list[str]] = {}
    manifest_cache: dict[str, list[ManifestEntry]] = {}

    def manifests_of(list_name: str) -> list[str]:
        if list_name not in list_cache:
            list_cache[list_name] = [m.file_name for m in mio.read_manifest_list(list_name)]
            names.add(list_name)
            names.update(list_cache[list_name])
        return list_cache[list_name]

    def entries_of(manifest: str) -> list[ManifestEntry]:
        if manifest not in manifest_cache:
            manifest_cache[manifest] = mio.read_manifest(manifest)
        return manifest_cache[manifest]

    for snap in roots:
        data_manifests = [m for name in (snap.base_manifest_list, snap.delta_manifest_list) if name
                          for m in manifests_of(name)]
        for entry in merge_entries(e for m in data_manifests for e in entries_of(m)):
            names.add(entry.file.file_name)
            names.update(entry.file.extra_files)
        if snap.changelog_manifest_list:
            for m in manifests_of(snap.changelog_manifest_list):
                for entry in entries_of(m):
                    names.add(entry.file.file_name)
                    names.update(entry.file.extra_files)
        if snap.index_manifest and snap.index_manifest not in names:
            names.add(snap.index_manifest)
            names.update(e.index_file.file_name for e in read_index_manifest(mio.file_io, table.path,
                                                                             snap.index_manifest))
        if snap.statistics:
            names.add(snap.statistics)
    # Long-lived changelogs (changelog/changelog-N of every branch) are roots too, as in Java's
    # OrphanFilesClean: every list of theirs still there, its manifests and every file those name
    # (a table without a changelog producer reads its changelogs from their data lists).
    for path in all_branch_paths(table):
        for changelog in ChangelogManager(mio.file_io, path).changelogs():
            for list_name in (changelog.changelog_manifest_list, changelog.delta_manifest_list,
                              changelog.base_manifest_list):
                if not list_name or not mio.file_io.exists(posixpath.join(mio.dir, list_name)):
                    continue  # a producer table's data lists went with the snapshot
                for m in manifests_of(list_name):
                    for entry in entries_of(m):
                        names.add(entry.file.file_name)
                        names.update(entry.file.extra_files)
    return names


def orphan_age_seconds(older_than: str, *, force: bool, name: str = "--older-than",
                       force_name: str = "--force") -> float:
    """``older_than`` in seconds, refused under the one-hour floor unless ``force``.

    ``name`` and ``force_name`` are how the caller's user spells the age and the override
    (a flag, or a maintain policy's config key), so the message points at what to change.

    Raises:
        UsageError: not a duration, or under the floor without ``force``.
    """
    age = parse_duration(older_than, name).total_seconds()
    if age < MIN_AGE_SECONDS and not force:
        raise UsageError(
            f"{name} {older_than!r} is under the {MIN_AGE_SECONDS // 3600}h floor: a commit in progress writes "
            f"its files before it publishes the snapshot that references them, so younger unreferenced files "
            f"may be a running write's; go lower only with every writer stopped ({force_name})")
    return age


def _is_candidate(table_path: str, status: FileStatus) -> bool:
    rel = posixpath.relpath(status.path, table_path)
    top, _, rest = rel.partition("/")
    if not rest or top in _PROTECTED_DIRS:
        return False  # files directly in the table dir are not Paimon's; leave them alone
    if posixpath.basename(rel) == SUCCESS_FILE:
        return False  # a partition's done-mark (mark-partition-done), which no snapshot lists
    if top == "snapshot":
        base = posixpath.basename(rel)
        return "/" not in rest and base.startswith(".") and base.endswith(".tmp")
    return True


def remove_orphan_files(table: TableHandle, *, older_than: str = "1d", dry_run: bool = False,
                        force: bool = False, progress: ProgressCallback | None = None) -> OrphanResult:
    """Delete unreferenced files older than ``older_than`` under the table directory.

    Args:
        table: the table.
        older_than: a duration (``1d``, ``12h``); files modified more recently are kept.
        dry_run: list what would be deleted; delete nothing.
        force: allow an age under the one-hour floor (every writer of the table is stopped).
        progress: called as ``progress(done, total, what)`` while reading, listing and deleting.

    Returns:
        Count, bytes and paths of the files deleted (or that would be).

    Raises:
        UsageError: a bad duration, or one under the floor without ``force`` (a dry run too:
            it shows what the same command would delete).
        CorruptMetadataError: a manifest cannot be read; nothing is deleted then.
    """
    table.location.refuse_on_server("remove-orphan-files")  # before anything is written
    check_options(table.schema, table.name, EXPIRE)
    age = orphan_age_seconds(older_than, force=force)
    threshold = time.time() - age
    table_path = table.path
    report = progress or (lambda done, total, what: None)
    report(0, 0, "reading snapshots and manifests")
    keep = referenced_files(table)  # before listing: a file committed later is fresh anyway
    # The files an unfinished migrate moved in are no snapshot's yet, and a move keeps their old
    # modification time: they are the user's data, which the migrate's rerun commits.
    keep |= pending_migration_files(table.file_io, table_path)
    report(0, 0, "listing files")
    orphans = []
    for status in table.file_io.walk(table_path):
        if not _is_candidate(table_path, status):
            continue
        if posixpath.basename(status.path) in keep:
            continue
        if status.mtime is None or status.mtime >= threshold:
            continue  # unknown or recent: may belong to a commit in progress
        orphans.append(status)
    orphans.sort(key=lambda s: s.path)
    if not dry_run:
        dirs: set[str] = set()
        for done, status in enumerate(orphans, 1):
            table.file_io.delete(status.path)
            dirs.add(posixpath.dirname(status.path))
            report(done, len(orphans), "deleting orphan files")
        _remove_empty_dirs(table, dirs)
    log.info("%s %d orphan files (%d bytes) older than %s", "would remove" if dry_run else "removed",
             len(orphans), sum(s.size for s in orphans), older_than)
    return OrphanResult(table.name, table.branch, len(orphans), sum(s.size for s in orphans), dry_run, round(age),
                        tuple(s.path for s in orphans))


def _remove_empty_dirs(table: TableHandle, dirs: set[str]) -> None:
    """Remove emptied bucket/partition directories, walking up, never the table dir or metadata dirs."""
    root = table.path.rstrip("/")
    for d in sorted(dirs, key=lambda p: -p.count("/")):
        while d.startswith(root + "/"):
            top = posixpath.relpath(d, root).split("/", 1)[0]
            if top in _PROTECTED_DIRS or top in ("snapshot", "manifest", "index", "statistics"):
                break
            if not table.file_io.remove_empty_dir(d):
                break
            d = posixpath.dirname(d)

