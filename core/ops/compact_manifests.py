"""compact-manifests: rewrite the latest snapshot's manifests into as few as
``manifest.target-file-size`` allows, as one COMPACT snapshot (Paimon's ``compact_manifest``
procedure).

Every lakectl commit merges the manifests it builds on (core/manifest_merge.py), so a table
lakectl writes keeps about ``manifest.merge-min-count`` of them. This command is for tables
written before that, or by writers that do not merge: it rewrites every manifest that holds
DELETE entries or is under the target size, keeping only the live ADD entries. The new
snapshot changes no data file: its base list holds the new manifests and its delta list is
empty, so it reads exactly as the snapshot before it. It commits as every write does (the
same retries and checks); the old manifests stay referenced by the earlier snapshots and go
when those expire.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core import branch_merge
from core.commit import FileStoreCommit
from core.manifest import ManifestIO, live_entries, rolled_parts
from core.option_rules import WRITE, check_options
from core.table_handle import TableHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CompactManifestsResult:
    table: str
    branch: str
    snapshot_id: int | None  # the COMPACT snapshot; None for a dry run or when nothing changed
    manifests_before: int  # in the latest snapshot's base and delta lists
    bytes_before: int
    manifests_after: int  # for a dry run, what the rewrite would leave (every manifest rewritten)
    bytes_after: int
    live_files: int
    dry_run: bool


def compact_manifests(table: TableHandle, *, dry_run: bool = False) -> CompactManifestsResult:
    check_options(table.schema, table.name, WRITE)
    branch_merge.refuse(table.schema, table.name, "compact-manifests")  # a COMPACT snapshot
    latest = table.latest_snapshot()
    if latest is None:
        return CompactManifestsResult(table.name, table.branch, None, 0, 0, 0, 0, 0, dry_run)
    mio = table.manifests()
    before = [m for name in (latest.base_manifest_list, latest.delta_manifest_list)
              for m in mio.read_manifest_list(name)]
    live = live_entries(mio, latest)
    if dry_run:
        after, size = _estimate(mio, live, table.schema.core_options.manifest_target_file_size)
        return CompactManifestsResult(table.name, table.branch, None, len(before), sum(m.file_size for m in before),
                                      after, size, len(live), True)
    commit = FileStoreCommit(table.file_io, table.path, table.schema, branch_path=table.branch_path, snapshot_commit=table.location.snapshot_commit())
    committed = commit.compact_manifests()
    if committed is None or committed.id == latest.id:
        return CompactManifestsResult(table.name, table.branch, None, len(before), sum(m.file_size for m in before),
                                      len(before), sum(m.file_size for m in before), len(live), False)
    # What this commit wrote, not read back: once the snapshot is published a rename or drop
    # may move the table's files, and the commit has landed all the same.
    now = commit.base_lists[committed.base_manifest_list]
    log.info("compacted the manifests of %s: %d -> %d (snapshot %d)", table.name, len(before), len(now), committed.id)
    return CompactManifestsResult(table.name, table.branch, committed.id, len(before),
                                  sum(m.file_size for m in before), len(now), sum(m.file_size for m in now),
                                  sum(m.num_added_files for m in now), False)


def _estimate(mio: ManifestIO, live: list, target: int) -> tuple[int, int]:
    """How many manifests, and bytes, the live entries make when written anew."""
    if not live:
        return 0, 0
    size = len(mio.encode_entries(live))  # live entries are ADDs only
    return rolled_parts(size, len(live), target), size


__all__ = ["CompactManifestsResult", "compact_manifests"]
