"""expire: remove old snapshots and the files only they reference (spec §9.1).

Which snapshots expire follows Paimon's ``ExpireSnapshotsImpl`` exactly: with latest L and
earliest E, ``lowest_kept_by_max = max(L - max + 1, E)``, ``end = L - min + 1`` capped by the
consumers' ``nextSnapshot`` and by ``E + limit``; walking from ``lowest_kept_by_max`` towards
``end``, the first snapshot not older than the cutoff becomes ``end``. Snapshots ``[E, end)``
expire and ``end`` becomes the earliest.

Order, chosen so that a kill at any point leaves every listed snapshot readable:
(1) plan everything below from the metadata, deleting nothing, and write the plan as a
    journal (``snapshot/.expire-<end>-<uuid>.json``: the snapshots to retire, the snapshot
    ``end`` as it was, the files to delete);
(2) write ``EARLIEST = end``, then retire the snapshots ``[E, end)``, oldest first: a kill
    here leaves a contiguous tail of snapshots whose files are all still there (EARLIEST is
    written first so that an id is never free again while EARLIEST is at or below it: a
    stalled committer that re-creates a retired id finds it below EARLIEST and undoes it,
    see docs/architecture.md "Commit protocol");
(3) only then delete what only the retired snapshots referenced: (a) data files DELETEd by
    the delta lists of ``(E, end]`` that are not live at ``end`` (not re-ADDed later in that
    range) and not live in any tag; (b) changelog files of ``[E, end)`` not in any tag's
    changelog; (c) manifest lists and manifests of ``[E, end)`` not referenced by ``end`` or
    any tag, then the index files (``index/``: HASH and deletion-vector files) of their index
    manifests that the index manifests of ``end`` and the tags do not list, then those index
    manifests (Java's ``cleanUnusedIndexManifests``); then delete the journal.
"Any tag" above includes every snapshot and tag of the table's other branches (main, when
expiring a branch): branches share the table's data and manifest files.
A kill in (2) or (3) leaves unreferenced files, never a snapshot that names a missing one.
On a full disk (the journal write fails with ENOSPC or EDQUOT) the run goes on without a
journal in the same order, so a kill leaves orphans for ``remove-orphan-files``; if
``EARLIEST`` cannot be written either, it is written after the files are deleted.
The next expire first finishes every journal it finds, if ``end`` is still the snapshot the
journal recorded (a rollback past it, which could make a retired snapshot's files live
again, voids the journal: its files are left to ``remove-orphan-files``). Paimon deletes the
files first and the snapshot files last, so a kill there leaves listed snapshots that
cannot be read.

Cost: only snapshots ``[E, end]``, their manifest lists and delta manifests, and the tags
are read, never the rest of the history. ``end``'s live set is not materialised: a file a
delta of ``(E, end]`` DELETEs is live at ``end`` exactly when a later delta of that range
ADDs it back (a level upgrade), which the replay of those deltas sees.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from core.branch import pinned_snapshots
from core.changelog_manager import ChangelogManager, changelog_retention
from core.busy import working
from core.consumer import ConsumerManager, stale_consumers
from core.engines import ProgressCallback
from core.errors import CommitConflictError, CorruptMetadataError, NotFoundError, TableGoneError, UsageError
from core.fileio import FileIO, is_storage_full, join
from core.index_manifest import IndexManifestEntry, IndexManifestIO
from core.manifest import ADD, DELETE, FILE_SOURCE_APPEND, DataFileMeta, ManifestEntry, ManifestFileMeta, ManifestIO
from core.options import (DEFAULT_EXPIRE_LIMIT, DEFAULT_RETAIN_MAX, DEFAULT_RETAIN_MIN, DEFAULT_TIME_RETAINED,
                          CoreOptions, parse_int)
from core.option_parsing import duration_millis, older_than_cutoff  # noqa: F401  (expire's names)
from core.option_rules import EXPIRE, check_options
from core.rewrite import EXPIRE as EXPIRE_MARKER, MARKER_NAME, acquire, finish_rollback_marker, is_live, read_marker, release
from core.snapshot import JOURNAL_PREFIX, Snapshot, SnapshotManager
from core.table_handle import TableHandle

log = logging.getLogger(__name__)




@dataclass(frozen=True, slots=True)
class ExpireResult:
    table: str
    branch: str
    snapshots_expired: list[int]
    earliest_before: int | None
    earliest_after: int | None
    data_files_deleted: int
    manifest_files_deleted: int  # manifests and manifest lists
    bytes_deleted: int
    dry_run: bool
    consumers_expired: list[str] = field(default_factory=list)  # by consumer.expiration-time
    index_files_deleted: int = 0  # index manifests and the index files (deletion vectors, hash) under index/
    changelogs_written: list[int] = field(default_factory=list)  # changelog/changelog-N kept (decoupled lifecycle)
    changelogs_expired: list[int] = field(default_factory=list)  # changelog/changelog-N past their own retention


@dataclass(frozen=True, slots=True)
class _Plan:
    earliest: int
    end: int  # first retained snapshot; [earliest, end) expire


def _consumers(table: TableHandle, now_ms: int, dry_run: bool) -> tuple[int | None, list[str]]:
    """(smallest ``nextSnapshot`` of the live consumers, ids of the consumers that expire now).

    With ``consumer.expiration-time`` set, a consumer not updated within it is removed first
    (not in a dry run) and no longer holds snapshots back, as in Paimon."""
    manager = ConsumerManager(table.file_io, table.branch_path)
    consumers = manager.consumers()
    text = table.schema.options.get("consumer.expiration-time")
    stale = stale_consumers(consumers, duration_millis(text, "option consumer.expiration-time"), now_ms) \
        if text else []
    stale_ids = {c.consumer_id for c in stale}
    if not dry_run:
        for consumer in stale:
            manager.delete(consumer.consumer_id)
            log.info("consumer %s expired (not updated within %s)", consumer.consumer_id, text)
    positions = [c.next_snapshot for c in consumers if c.consumer_id not in stale_ids]
    return (min(positions) if positions else None), sorted(stale_ids)


def _plan(table: TableHandle, retain_min: int, retain_max: int, cutoff_ms: int, limit: int,
          consumer: int | None) -> _Plan | None:
    snapshots = table.snapshots
    latest = snapshots.latest_id()
    earliest = snapshots.earliest_id()
    if latest is None or earliest is None:
        return None
    lowest_kept_by_max = max(latest - retain_max + 1, earliest)
    end = latest - retain_min + 1
    if consumer is not None:
        end = min(end, consumer)
    end = min(end, earliest + limit)
    for sid in range(lowest_kept_by_max, end):
        if not snapshots.exists(sid):
            continue
        try:
            snap = snapshots.snapshot(sid)
        except NotFoundError:
            continue  # expired by a concurrent run
        if cutoff_ms <= snap.time_millis:
            end = sid
            break
    if end <= earliest:
        return None
    return _Plan(earliest, end)


# ---- tolerant metadata reads ----------------------------------------------------------
def _unless_deleted(read: Callable[[str], list], file_io: FileIO, directory: str, name: str | None) -> list:
    """``read(name)``, or nothing when the file is gone: an interrupted run deleted it after
    retiring every snapshot that needed it (a file that is there but unreadable still raises)."""
    if not name:
        return []
    try:
        return read(name)
    except CorruptMetadataError:
        if file_io.exists(join(directory, name)):
            raise
        return []


def _read_list(mio: ManifestIO, name: str | None,
               cache: dict[str, list[ManifestFileMeta]] | None = None) -> list[ManifestFileMeta]:
    """A manifest list, read once per run when ``cache`` is given: a delta list is read for
    the files it deletes and again for the manifests it names, the retained end's lists for
    what they protect and again as a delta."""
    if cache is None:
        return _unless_deleted(mio.read_manifest_list, mio.file_io, mio.dir, name)
    if name not in cache:
        cache[name] = _unless_deleted(mio.read_manifest_list, mio.file_io, mio.dir, name)
    return cache[name]


def _read_manifest(mio: ManifestIO, name: str, cache: dict[str, list[ManifestEntry]]) -> list[ManifestEntry]:
    if name not in cache:
        cache[name] = _unless_deleted(mio.read_manifest, mio.file_io, mio.dir, name)
    return cache[name]


def _file_key(e: ManifestEntry) -> tuple:
    """Where a data file lives: its directory (partition, bucket) and name, or its external path."""
    return (e.partition, e.bucket, e.file.file_name, e.file.external_path)


def _live_keys(mio: ManifestIO, lists: Iterable[str | None], cache: dict[str, list[ManifestEntry]],
               list_cache: dict[str, list[ManifestFileMeta]] | None = None) -> set[tuple]:
    live: dict[tuple, tuple] = {}
    for list_name in lists:
        for meta in _read_list(mio, list_name, list_cache):
            for e in _read_manifest(mio, meta.file_name, cache):
                if e.kind == ADD:
                    live[e.identifier] = _file_key(e)
                else:
                    live.pop(e.identifier, None)
    return set(live.values())


def _read_index(imio: IndexManifestIO, name: str | None) -> list[IndexManifestEntry]:
    return _unless_deleted(imio.read, imio.file_io, imio.dir, name)


def _list_names(snap: Snapshot) -> list[str]:
    return [n for n in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list) if n]


def _retain_conflict(retain_max: int, retain_min: int, retain_min_given: bool) -> str:
    """Paimon's refusal, naming where retain-min came from and how to get past it."""
    message = f"retain-max ({retain_max}) must not be smaller than retain-min ({retain_min})"
    if retain_min_given:
        return message
    return (f"{message}: retain-min comes from the table option snapshot.num-retained.min "
            f"({retain_min}); pass --retain-min N (N <= {retain_max}) or set the option")


def expire_snapshots(table: TableHandle, *, retain_min: int | None = None, retain_max: int | None = None,
                     older_than: str | None = None, max_deletes: int | None = None,
                     dry_run: bool = False, progress: ProgressCallback | None = None,
                     skip_if_busy: bool = False) -> ExpireResult:
    """Expire old snapshots and delete the files only they reference.

    Args:
        table: the table.
        retain_min: keep at least this many newest snapshots (option ``snapshot.num-retained.min``, 10).
        retain_max: keep at most this many (``snapshot.num-retained.max``, Integer.MAX); older ones
            expire whatever their age.
        older_than: a duration back from now (``1h``, ``7d``, ``0s``) or an ISO 8601 time; only
            snapshots committed before it expire (``snapshot.time-retained``, 1h).
        max_deletes: at most this many snapshots in this run (``snapshot.expire.limit``, 10).
        dry_run: plan and report, delete nothing.
        progress: called as ``progress(done, total, what)`` while planning and deleting.
        skip_if_busy: expire nothing (rather than wait) while another expire or a rollback
            holds the branch's rewrite marker (a writer's expire after its commit).

    Returns:
        An ExpireResult; ``snapshots_expired`` is empty when nothing was due.

    Raises:
        UsageError: retain_min or retain_max < 1, retain_max < retain_min, max_deletes < 0, a bad duration.
    """
    table.location.refuse_on_server("expire")  # before anything is written
    check_options(table.schema, table.name, EXPIRE)
    retain_min, retain_max, cutoff, max_deletes, now_ms = _retention(table, retain_min, retain_max, older_than,
                                                                     max_deletes)

    if progress is not None:
        progress(0, 0, "planning expiration")
    if dry_run or not _work_due(table, retain_min, retain_max, cutoff, max_deletes, now_ms):
        # Nothing to retire: no marker, and no journal is touched (one that appeared since
        # belongs to a live expire holding the marker).
        return _expire_under_marker(table, retain_min, retain_max, cutoff, max_deletes, now_ms, dry_run, progress,
                                    held=False)
    # Retiring snapshots rewrites the chain: under the branch's rewrite marker, so that two
    # expires (a cron run and a writer's own) or an expire and a rollback never interleave
    # (core/rewrite.py; a journal is only ever carried out by the marker's holder).
    if skip_if_busy:
        current = read_marker(table.file_io, table.snapshots.dir)
        if current is not None and is_live(current):
            log.info("expire of %s skipped: %s is running", table.name, current.describe())
            earliest = table.snapshots.earliest_id()
            return ExpireResult(table.name, table.branch, [], earliest, earliest, 0, 0, 0, dry_run)
    with ExitStack() as stack:
        # The table must not be renamed or dropped while snapshots are retired (core/busy.py).
        try:
            stack.enter_context(working(table.file_io, table.path, table.name, "expire snapshots"))
        except (CommitConflictError, TableGoneError):
            if not skip_if_busy:
                raise
            log.info("expire of %s skipped: the table is being renamed or dropped", table.name)
            earliest = table.snapshots.earliest_id()
            return ExpireResult(table.name, table.branch, [], earliest, earliest, 0, 0, 0, dry_run)
        except OSError as e:
            if not is_storage_full(e):
                raise
            log.warning("no space for the busy marker of %s (%s); expiring without one", table.name, e)
        # A JDBC catalog with lock.enabled: the table's lock, held for the whole run (stricter than Java,
        # whose expire takes none: docs/jdbc-catalog.md); writers wait for it (core/catalog/).
        stack.enter_context(table.location.rewriting_chain("expire snapshots"))
        try:
            marker = acquire(table.file_io, table.snapshots.dir, EXPIRE_MARKER, what="expire snapshots",
                             table=table.name, on_abandoned=lambda m: finish_rollback_marker(table.snapshots, table.tags, m))
        except OSError as e:
            if not is_storage_full(e):
                raise
            # A full disk is when expire is needed most: go on without the marker, as without the
            # journal (a concurrent rewriter is then not kept out; one run at a time is the rule).
            log.warning("no space for the rewrite marker of %s (%s); expiring without one", table.name, e)
            marker = None
        try:
            table.refuse_unfinished_fast_forward("expire snapshots")
            result = _expire_under_marker(table, retain_min, retain_max, cutoff, max_deletes, now_ms, dry_run,
                                          progress)
        finally:
            if marker is not None:
                release(table.file_io, marker)
    if result.snapshots_expired:
        # A table keeping Iceberg metadata: the expired snapshots leave it (core/iceberg/).
        from core.ops.iceberg_sync import refresh_iceberg

        refresh_iceberg(table)
    return result


def _retention(table: TableHandle, retain_min: int | None, retain_max: int | None, older_than: str | None,
               max_deletes: int | None) -> tuple[int, int, int, int, int]:
    """The retention an expire applies, from the flags given and else the table's options:
    (retain_min, retain_max, cutoff millis, max_deletes, now millis)."""
    opts = table.schema.options
    retain_min_given = retain_min is not None
    if retain_min is None:
        retain_min = parse_int(opts.get("snapshot.num-retained.min", str(DEFAULT_RETAIN_MIN)),
                               "snapshot.num-retained.min")
    if retain_max is None:
        retain_max = parse_int(opts.get("snapshot.num-retained.max", str(DEFAULT_RETAIN_MAX)),
                               "snapshot.num-retained.max")
    if max_deletes is None:
        max_deletes = parse_int(opts.get("snapshot.expire.limit", str(DEFAULT_EXPIRE_LIMIT)), "snapshot.expire.limit")
    if retain_min < 1:
        raise UsageError(f"retain-min must be at least 1 (got {retain_min}): the latest snapshot is always kept")
    if retain_max < 1:  # before the comparison with retain-min, whose hint would ask for N <= 0
        raise UsageError(f"retain-max must be at least 1 (got {retain_max}): the latest snapshot is always kept")
    if retain_max < retain_min:
        raise UsageError(_retain_conflict(retain_max, retain_min, retain_min_given))
    if max_deletes < 0:
        raise UsageError(f"max-deletes must not be negative (got {max_deletes})")
    now_ms = int(time.time() * 1000)
    if older_than is None:
        cutoff = now_ms - duration_millis(opts.get("snapshot.time-retained", DEFAULT_TIME_RETAINED),
                                         "option snapshot.time-retained")
    else:
        cutoff = older_than_cutoff(older_than, now_ms)

    return retain_min, retain_max, cutoff, max_deletes, now_ms


def expire_due(table: TableHandle) -> bool:
    """Whether ``expire`` with the table's own options would change anything now (snapshots
    past their retention, a stale consumer, an interrupted run to finish): what ``maintain``
    plans it by, so that its recommendation goes quiet after a run. Metadata only."""
    retain_min, retain_max, cutoff, max_deletes, now_ms = _retention(table, None, None, None, None)
    return _work_due(table, retain_min, retain_max, cutoff, max_deletes, now_ms)


def _work_due(table: TableHandle, retain_min: int, retain_max: int, cutoff: int, limit: int, now_ms: int) -> bool:
    """Whether an expire has anything to retire or finish: snapshots due, an interrupted run's
    journal, or a stale consumer. Most runs (a writer's after each commit) have none and take
    no marker."""
    try:
        names = table.file_io.list_names(table.snapshots.dir)
        # A journal to finish, or a rewrite marker (an abandoned one is finished and removed).
        if any(n.startswith(JOURNAL_PREFIX) or n == MARKER_NAME for n in names):
            return True
    except FileNotFoundError:
        return False
    consumer_min, stale = _consumers(table, now_ms, dry_run=True)
    if bool(stale) or _plan(table, retain_min, retain_max, cutoff, limit, consumer_min) is not None:
        return True
    if changelog_retention(table.schema.options).decoupled:
        from core.ops.expire_changelogs import changelogs_due

        return changelogs_due(table)
    return False


def _expire_under_marker(table: TableHandle, retain_min: int, retain_max: int, cutoff: int, max_deletes: int,
                         now_ms: int, dry_run: bool, progress: ProgressCallback | None, *,
                         held: bool = True) -> ExpireResult:
    resumed, earliest_before = _Resumed(), None
    if not dry_run and held:
        earliest_before = table.snapshots.earliest_id()
        resumed = finish_interrupted(table)
    consumer_min, consumers_expired = _consumers(table, now_ms, dry_run or not held)
    plan = _plan(table, retain_min, retain_max, cutoff, max_deletes, consumer_min)
    if plan is not None and not held and not dry_run:
        plan = None  # due only since we looked (new commits): without the marker, leave it to the next run
    if plan is None:
        earliest = table.snapshots.earliest_id()
        hint = table.snapshots.earliest_hint()
        if not dry_run and earliest is not None and hint != earliest:
            # Nothing due, but the hint is stale, or missing (a table that never expired
            # anything, or a run killed before writing it): write it, as Java's expire does
            # here, so that earliest_id stays two existence checks rather than a listing of
            # snapshot/ (which a writer's expire after each commit would pay, growing with
            # the history).
            table.snapshots.write_earliest_hint(earliest)
        result = ExpireResult(table.name, table.branch, [], earliest, earliest, 0, 0, 0, dry_run, consumers_expired)
    else:
        result = replace(_expire(table, plan, dry_run, progress), consumers_expired=consumers_expired)
    result = resumed.add_to(result, earliest_before) if resumed.snapshots or resumed.files else result
    if changelog_retention(table.schema.options).decoupled and (held or dry_run):
        # Java's expire after a commit also expires the changelogs past their own retention.
        from core.ops.expire_changelogs import expire_changelogs_held, retention

        cl = expire_changelogs_held(table, *retention(table, None, None, None, None), dry_run, progress)
        result = replace(result, changelogs_expired=cl.changelogs_expired,
                         data_files_deleted=result.data_files_deleted + cl.data_files_deleted,
                         manifest_files_deleted=result.manifest_files_deleted + cl.manifest_files_deleted,
                         bytes_deleted=result.bytes_deleted + cl.bytes_deleted)
    return result


def _expire(table: TableHandle, plan: _Plan, dry_run: bool,
            progress: ProgressCallback | None = None) -> ExpireResult:
    fio = table.file_io
    sm = table.snapshots
    mio = table.manifests()
    cache: dict[str, list[ManifestEntry]] = {}
    lists: dict[str, list[ManifestFileMeta]] = {}
    E, end = plan.earliest, plan.end
    end_snap = sm.snapshot(end)  # retained: must exist (NotFoundError if a concurrent run went further)
    expiring: dict[int, Snapshot] = {}
    for sid in range(E, end):
        try:
            expiring[sid] = sm.snapshot(sid)
        except NotFoundError:
            pass  # deleted by an interrupted or concurrent run

    # What tags pin: their live data and changelog files, their lists and manifests.
    tag_data: set[tuple] = set()
    tag_changelog: set[tuple] = set()
    tag_snaps: list[Snapshot] = []
    protected_meta: set[str] = set(_list_names(end_snap))
    for meta_list in _list_names(end_snap):
        protected_meta.update(m.file_name for m in _read_list(mio, meta_list, lists))
    own_tags = []
    for name in table.tags.names():
        try:
            own_tags.append(table.tags.snapshot(name))
        except NotFoundError:
            continue
    # Other branches (main, when this is a branch) share the data and manifest files: each of
    # their snapshots and tags pins its files just as a tag does.
    for tag in own_tags + pinned_snapshots(table, include_own=False):
        tag_snaps.append(tag)
        tag_data |= _live_keys(mio, [tag.base_manifest_list, tag.delta_manifest_list], cache, lists)
        if tag.changelog_manifest_list:
            tag_changelog |= _live_keys(mio, [tag.changelog_manifest_list], cache, lists)
        for meta_list in _list_names(tag):
            protected_meta.add(meta_list)
            protected_meta.update(m.file_name for m in _read_list(mio, meta_list, lists))

    # Index manifests and index files that end and the tags still use.
    imio = IndexManifestIO(fio, table.path)
    protected_index: set[str] = set()
    for snap in [end_snap, *tag_snaps]:
        if snap.index_manifest and snap.index_manifest not in protected_index:
            protected_index.add(snap.index_manifest)
            protected_index.update(e.index_file.file_name for e in _read_index(imio, snap.index_manifest))

    schema = table.schema
    dirs: dict[tuple[bytes, int], str] = {}

    def data_path(key: tuple) -> str:
        partition, bucket, file_name, external = key
        if external:
            return external
        if (partition, bucket) not in dirs:
            dirs[(partition, bucket)] = schema.bucket_dir(table.path, partition, bucket)
        return join(dirs[(partition, bucket)], file_name)

    # (a) data files the deltas of (E, end] DELETE and nothing retained re-ADDs.
    doomed: dict[tuple, DataFileMeta] = {}
    delta_snaps = [expiring[s] for s in range(E + 1, end) if s in expiring] + [end_snap]
    for snap in delta_snaps:
        for meta in _read_list(mio, snap.delta_manifest_list, lists):
            for e in _read_manifest(mio, meta.file_name, cache):
                key = _file_key(e)
                if e.kind == DELETE:
                    doomed[key] = e.file
                else:
                    doomed.pop(key, None)  # re-ADDed (a level upgrade): live at end
    # A decoupled changelog lifecycle (Java's SnapshotDeletion): on a table without a changelog
    # producer the changelog is the delta, so the APPEND-source files stay for the changelogs
    # (expire-changelogs deletes them); compacted files go as before.
    decoupled = changelog_retention(table.schema.options).decoupled
    produce = CoreOptions(table.schema.options).changelog_producer != "none"
    if decoupled and not produce:
        doomed = {k: f for k, f in doomed.items()
                  if f.file_source is not None and f.file_source != FILE_SOURCE_APPEND}
    data_files = [(data_path(k), f.file_size) for k, f in doomed.items() if k not in tag_data]
    # Their extra files (Paimon's file indexes written beside a data file, `<data file>.index`,
    # in its external directory too) go with them; sizes are not in the manifest.
    data_files += [(join(data_path(k).rsplit("/", 1)[0], name), 0)
                   for k, f in doomed.items() if k not in tag_data for name in f.extra_files]

    # (b) changelog files of [E, end) that no tag's changelog holds.
    changelog_files = []
    for sid in sorted(expiring) if not decoupled else ():  # decoupled: the changelog-N keep them
        snap = expiring[sid]
        for meta in _read_list(mio, snap.changelog_manifest_list, lists):
            for e in _read_manifest(mio, meta.file_name, cache):
                if e.kind == ADD and _file_key(e) not in tag_changelog:
                    changelog_files.append((data_path(_file_key(e)), e.file.file_size))

    # (c) manifest lists and manifests of [E, end) that end and the tags do not reference.
    meta_files: dict[str, int | None] = {}
    for sid in sorted(expiring):
        snap = expiring[sid]
        sizes = {snap.base_manifest_list: snap.base_manifest_list_size,
                 snap.delta_manifest_list: snap.delta_manifest_list_size,
                 snap.changelog_manifest_list: snap.changelog_manifest_list_size}
        for list_name in _list_names(snap):
            if decoupled and (list_name == snap.changelog_manifest_list if produce else
                              list_name in (snap.base_manifest_list, snap.delta_manifest_list)):
                continue  # what changelog-N reads: its changelog list, or (no producer) its data lists
            for m in _read_list(mio, list_name, lists):
                if m.file_name not in protected_meta:
                    meta_files[m.file_name] = m.file_size
            if list_name not in protected_meta:
                meta_files[list_name] = sizes.get(list_name)
    index_files: dict[str, int] = {}
    index_manifests: dict[str, None] = {}
    for sid in sorted(expiring):
        name = expiring[sid].index_manifest
        if not name or name in protected_index or name in index_manifests:
            continue
        for e in _read_index(imio, name):
            if e.index_file.file_name not in protected_index:
                index_files[e.index_file.file_name] = e.index_file.file_size
        index_manifests[name] = None

    expired_ids = sorted(expiring)
    bytes_deleted = sum(s for _, s in data_files) + sum(s for _, s in changelog_files) \
        + sum(s or 0 for s in meta_files.values()) + sum(index_files.values())
    result = ExpireResult(table.name, table.branch, expired_ids, E, end, len(data_files) + len(changelog_files),
                          len(meta_files), bytes_deleted, dry_run,
                          index_files_deleted=len(index_files) + len(index_manifests),
                          changelogs_written=expired_ids if decoupled else [])
    if dry_run:
        return result

    log.info("expiring snapshots %d..%d of %s (%d data, %d metadata files)", E, end - 1, table.name,
             len(data_files) + len(changelog_files), len(meta_files))
    files = [p for p, _ in data_files] + [p for p, _ in changelog_files] + [join(mio.dir, n) for n in meta_files] \
        + [imio.index_path(n) for n in index_files] + [join(imio.dir, n) for n in index_manifests]
    journal = _Journal(expired_ids, end, end_snap.commit_user, end_snap.time_millis, files,
                       changelogs=decoupled)
    journal_path = join(sm.dir, f"{JOURNAL_PREFIX}{end}-{uuid.uuid4()}.json")
    try:
        fio.write_bytes(journal_path, json.dumps(dataclasses.asdict(journal)).encode("utf-8"))
    except OSError as e:
        if not is_storage_full(e):
            raise
        # A full disk is when expire is needed most. The same safe order without the journal:
        # a kill then leaves only unreferenced files, for remove-orphan-files.
        log.warning("no space for the expire journal of %s (%s); expiring without one", table.name, e)
        fio.delete(journal_path)  # a torn journal, if the write got that far
        _carry_out(table, journal, progress, hint_after_files=True)
        return result
    _carry_out(table, journal, progress)
    fio.delete(journal_path)
    return result


# ---- the journal: what a run killed in its deletions still has to do ---------------------------


@dataclass(frozen=True)
class _Journal:
    expired: list[int]  # snapshot ids to retire, oldest first
    end: int  # the first retained snapshot, identified by its commit user and time
    end_user: str
    end_time_millis: int
    files: list[str]  # data, changelog and metadata files only the expired snapshots referenced
    changelogs: bool = False  # write changelog/changelog-N for each retired snapshot first (decoupled)


def _carry_out(table: TableHandle, journal: _Journal, progress: ProgressCallback | None = None, *,
               hint_after_files: bool = False, resuming: bool = False) -> None:
    """Steps (2) and (3): write EARLIEST, retire the snapshots oldest first, then delete their files.

    EARLIEST goes first (Java writes it last) so that by the time any id is free again, every
    reader and committer can tell that an id below it is not live: a stalled committer that
    re-creates a retired id sees its id below EARLIEST and undoes its snapshot, and readers
    never take such a snapshot for the latest (``SnapshotManager.latest_id``).

    ``hint_after_files`` (a run without a journal on a full disk): if ``EARLIEST`` cannot be
    written yet, retire and delete first and write it after, once they freed space. Until then
    a committer tells a retired id by its vanished base (the verification's other rule).

    ``resuming`` (a killed run's journal): a snapshot committed after the journal's end is not
    the one the journal planned to retire but a stalled committer's re-creation of an id the
    killed run had already removed; it is left to that committer, which undoes it (deleting it
    here would make the committer take its commit for landed and expired)."""
    fio, sm = table.file_io, table.snapshots
    total = len(journal.expired) + len(journal.files)
    if journal.changelogs:
        # Every changelog-N before EARLIEST moves past N: a streaming reader at any id finds the
        # snapshot or its changelog whenever a kill comes (a rerun writes the same bytes again).
        changelogs = ChangelogManager(fio, table.branch_path)
        for sid in journal.expired:
            if resuming and _re_created(sm, sid, journal):
                continue
            try:
                changelogs.write(sm.snapshot(sid))
            except NotFoundError:
                pass  # retired by the killed run, which wrote its changelog first
    hint_pending = False
    try:
        sm.write_earliest_hint(journal.end)
    except OSError as e:
        if not (hint_after_files and is_storage_full(e)):
            raise
        hint_pending = True
    for done, sid in enumerate(journal.expired, 1):
        if not resuming or not _re_created(sm, sid, journal):
            fio.delete(sm.path(sid))
        if progress is not None:
            progress(done, total, "retiring expired snapshots")
    # A tag or branch created on a retired snapshot after the plan was made (its creator saw
    # EARLIEST still at or below it, so it exited 0) pins that snapshot's files: read the tags
    # and branches again now that EARLIEST is written, and keep what they reference.
    pinned = _pinned_paths(table, journal.expired)
    for done, path in enumerate((f for f in journal.files if f not in pinned), len(journal.expired) + 1):
        fio.delete(path)
        if progress is not None:
            progress(done, total, "deleting expired files")
    if hint_pending:
        sm.write_earliest_hint(journal.end)


def _re_created(sm: SnapshotManager, sid: int, journal: _Journal) -> bool:
    """Is ``snapshot-sid`` newer than the end of the journal that retires it (re-created)?"""
    try:
        return sm.snapshot(sid).time_millis > journal.end_time_millis
    except (NotFoundError, CorruptMetadataError):
        return False  # gone (nothing to delete) or torn (deleted as planned)


def _pinned_paths(table: TableHandle, retired: list[int]) -> set[str]:
    """Every file that a tag or another branch's snapshot of a retired id references now:
    data and changelog files, manifest lists, manifests, index manifests and index files."""
    retired_ids = set(retired)
    roots = []
    for name in table.tags.names():
        try:
            snap = table.tags.snapshot(name)
        except NotFoundError:
            continue
        if snap.id in retired_ids:
            roots.append(snap)
    roots += [s for s in pinned_snapshots(table, include_own=False)]
    if not roots:
        return set()
    mio = table.manifests()
    imio = IndexManifestIO(table.file_io, table.path)
    schema = table.schema
    cache: dict[str, list[ManifestEntry]] = {}
    out: set[str] = set()
    for snap in roots:
        for list_name in _list_names(snap):
            out.add(join(mio.dir, list_name))
            out.update(join(mio.dir, m.file_name) for m in _read_list(mio, list_name))
        for key in _live_keys(mio, [snap.base_manifest_list, snap.delta_manifest_list], cache) \
                | _live_keys(mio, [snap.changelog_manifest_list], cache):
            partition, bucket, file_name, external = key
            path = external or join(schema.bucket_dir(table.path, partition, bucket), file_name)
            out.add(path)
        if snap.index_manifest:
            out.add(join(imio.dir, snap.index_manifest))
            out.update(imio.index_path(e.index_file.file_name) for e in _read_index(imio, snap.index_manifest))
    return out


@dataclass
class _Resumed:
    """What finishing interrupted expirations did, counted into the next run's result."""

    snapshots: list[int] = field(default_factory=list)  # retired now (the kill left them listed)
    data_files: int = 0
    manifest_files: int = 0
    index_files: int = 0

    @property
    def files(self) -> int:
        return self.data_files + self.manifest_files + self.index_files

    def count(self, path: str) -> None:
        if "/index/" in path or "/manifest/index-manifest-" in path:
            self.index_files += 1
        elif "/manifest/" in path:
            self.manifest_files += 1
        else:
            self.data_files += 1

    def add_to(self, result: ExpireResult, earliest_before: int | None) -> ExpireResult:
        # The kill's leftovers lie below EARLIEST, which earliest_before (earliest_id) names.
        lowest = min([*self.snapshots, *([earliest_before] if earliest_before is not None else [])], default=None)
        return replace(result, snapshots_expired=sorted({*self.snapshots, *result.snapshots_expired}),
                       earliest_before=lowest,
                       data_files_deleted=result.data_files_deleted + self.data_files,
                       manifest_files_deleted=result.manifest_files_deleted + self.manifest_files,
                       index_files_deleted=result.index_files_deleted + self.index_files)


def finish_interrupted(table: TableHandle) -> _Resumed:
    """Finish the expirations a kill interrupted (their journals); returns what that retired and
    deleted (bytes are not known: the journal keeps paths only).

    A journal is carried out only while its ``end`` snapshot is still the one it recorded (a
    rollback to a snapshot the kill left before it removes ``end``); otherwise it is dropped
    and its files stay for ``remove-orphan-files``."""
    fio, sm = table.file_io, table.snapshots
    resumed = _Resumed()
    try:
        names = [n for n in fio.list_names(sm.dir) if n.startswith(JOURNAL_PREFIX)]
    except FileNotFoundError:
        return resumed
    for name in sorted(names):
        path = join(sm.dir, name)
        try:
            journal = _Journal(**json.loads(fio.read_text(path)))
        except (ValueError, TypeError, CorruptMetadataError, FileNotFoundError):
            fio.delete(path)  # torn while being written: the run it belongs to deleted nothing
            continue
        try:
            end = sm.snapshot(journal.end)
            intact = end.commit_user == journal.end_user and end.time_millis == journal.end_time_millis
        except NotFoundError:
            intact = False
        if intact:
            log.info("finishing an interrupted expiration of snapshots %s of %s",
                     journal.expired[:1] + journal.expired[-1:], table.name)
            resumed.snapshots += [sid for sid in journal.expired if sm.exists(sid)]
            for file in journal.files:
                if fio.exists(file):
                    resumed.count(file)
            _carry_out(table, journal, resuming=True)
        fio.delete(path)
    return resumed
