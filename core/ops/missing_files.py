"""remove-unexisting-files: drop the latest snapshot's entries of data files that are gone.

Paimon 1.1's ``remove_unexisting_files`` procedure, for a table whose data files were lost
(a hand, an orphan clean with too short an age, a Flink writer that re-committed a file after
a compaction had replaced it and expire had deleted it). Every read of the latest snapshot
fails on such a file; ``check --repair`` mends that by removing every snapshot that lists it,
which also drops every later good write. This commits instead: one APPEND snapshot whose
delta DELETEs the missing files' entries, as Java commits them (a commit message whose data
increment holds the files as deleted files). Every snapshot stays; the rows the missing files
held are lost (the result counts them), and the older snapshots that list those files stay
unreadable until they expire.

What is missing is decided by one listing per directory that holds live data files (a bucket
directory, or an external path's directory), as Java lists each bucket directory, rather
than a request per file. Only data files of the latest snapshot are looked at: changelog
files and index files are not entries a commit can remove, as in Java.

Next to other commands it is one more commit: a file another commit replaced meanwhile (a
compaction, an overwrite) is no longer live, so the commit finds its plan stale
(``StalePlanError``) and plans again on the new latest, where that file is not listed any
more; a snapshot expired while it was read is planned again the same way.
"""

from __future__ import annotations

import logging
import posixpath
from collections import defaultdict
from dataclasses import dataclass

from core import branch_merge
from core.commit import CommitMessage, FileStoreCommit, latest_base_entries
from core.fileio import join
from core.manifest import ManifestEntry
from core.ops.auto_tags import run_quietly
from core.replan import replan_on_lost_race
from core.table_handle import TableHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MissingFilesResult:
    table: str
    branch: str
    snapshot_id: int | None  # the APPEND snapshot; None on a dry run or when no file was missing
    files_deleted: int  # entries removed (or to remove)
    records_deleted: int  # the records those files held: lost with them
    missing_files: tuple[str, ...]  # their paths, relative to the table when under it
    dry_run: bool


def remove_unexisting_files(table: TableHandle, *, dry_run: bool = False) -> MissingFilesResult:
    """Remove the latest snapshot's entries of data files that no longer exist, in one commit.

    Nothing missing commits nothing (``snapshot_id`` None, zero counts).

    Raises:
        StalePlanError, ExpiredWhileReadingError: every try was overtaken by another commit or
            an expire (exit 4); nothing was committed.
        CommitConflictError: the commit did not land.
    """
    branch_merge.refuse(table.schema, table.name, "remove-unexisting-files")
    retries = table.schema.core_options.commit_max_retries
    return replan_on_lost_race(retries, lambda: _plan_and_commit(table, dry_run), "remove-unexisting-files",
                               stale_plans=True)


def _plan_and_commit(table: TableHandle, dry_run: bool) -> MissingFilesResult:
    _, live = latest_base_entries(table.snapshots, table.manifests(), table.schema.core_options.commit_max_retries)
    missing = _missing_entries(table, live)
    paths = tuple(sorted(_relative(table, _data_path(table, e)) for e in missing))
    records = sum(e.file.row_count for e in missing)

    def result(snapshot_id: int | None, is_dry_run: bool) -> MissingFilesResult:
        return MissingFilesResult(table.name, table.branch, snapshot_id, len(missing), records, paths, is_dry_run)

    if not missing or dry_run:
        return result(None, dry_run)
    committed = FileStoreCommit(table.file_io, table.path, table.schema,
                                branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit()).commit(_messages(missing))
    if committed is None:
        return result(None, False)
    run_quietly(table, batch=False)  # Java's next commit would tag this snapshot by the same rules
    log.info("removed %d missing data file(s) of %s from its latest snapshot (%d record(s) lost)",
                len(missing), table.name, records)
    return result(committed.id, False)


def _data_path(table: TableHandle, entry: ManifestEntry) -> str:
    meta = entry.file
    return meta.external_path or join(table.schema.bucket_dir(table.path, entry.partition, entry.bucket),
                                      meta.file_name)


def _missing_entries(table: TableHandle, live: list[ManifestEntry]) -> list[ManifestEntry]:
    """The live entries whose file is not there: each directory is listed once."""
    by_dir: dict[str, list[tuple[str, ManifestEntry]]] = defaultdict(list)
    for e in live:
        path = _data_path(table, e)
        directory, name = posixpath.split(path.rstrip("/"))
        by_dir[directory].append((name, e))
    missing = []
    for directory, files in by_dir.items():
        present = set(table.file_io.list_names(directory))
        missing.extend(e for name, e in files if name not in present)
    return missing


def _messages(missing: list[ManifestEntry]) -> list[CommitMessage]:
    """One message per (partition, bucket), its missing files as the files it deletes."""
    grouped: dict[tuple[bytes, int, int], list] = defaultdict(list)
    for e in missing:
        grouped[(e.partition, e.bucket, e.total_buckets)].append(e.file)
    return [CommitMessage(partition, bucket, total, compact_before=tuple(files))
            for (partition, bucket, total), files in grouped.items()]


def _relative(table: TableHandle, path: str) -> str:
    prefix = table.path.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


__all__ = ["MissingFilesResult", "remove_unexisting_files"]
