"""expire-changelogs: remove long-lived changelogs past their retention (Paimon's ``expire_changelogs``).

Which changelogs expire follows Java 1.0's ``ExpireChangelogImpl``: with L the latest
snapshot and CE/CL the earliest/latest changelog, ``lowest = max(L - max + 1, CE)``,
``end = L - min + 1`` capped by the consumers' ``nextSnapshot``, by ``CE + limit`` and by CL
(the newest changelog is never removed); walking from ``lowest`` up to ``end`` (inclusive),
the first changelog not older than the cutoff becomes ``end``. Changelogs ``[CE, end)`` expire.
Retention comes from ``changelog.num-retained.min`` / ``.max`` / ``changelog.time-retained``,
each defaulting to its ``snapshot.*`` option; the limit is ``snapshot.expire.limit``.

What goes with changelog N (Java's ``ChangelogDeletion``): the files its changelog manifest
list ADDs; when its delta list is there (a table without a changelog producer), the data files
that delta DELETEs; then its changelog, delta and base manifest lists and their manifests,
except those the changelog ``end``, the earliest snapshot, the tags and the other branches use.
Data files a tag (or another branch) holds stay.

Order, as expire's (core/ops/expire.py), so that a kill leaves every retained changelog and
every snapshot readable and a rerun finishes: (1) plan and write a journal
(``changelog/.expire-changelogs-<end>-<uuid>.json``); (2) write ``changelog/EARLIEST = end``
and remove ``changelog-N`` oldest first; (3) delete the files, then the journal. Java deletes
the files first and writes EARLIEST last. The run holds the branch's rewrite marker, as expire
does, so an expire-changelogs and an expire (or a rollback) never interleave.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from dataclasses import dataclass

from core.branch import pinned_snapshots
from core.changelog_manager import JOURNAL_PREFIX, ChangelogManager, changelog_retention
from core.consumer import ConsumerManager
from core.engines import ProgressCallback
from core.errors import CorruptMetadataError, NotFoundError, UsageError
from core.fileio import is_storage_full, join
from core.manifest import ADD, DELETE, ManifestEntry, ManifestFileMeta
from core.option_parsing import older_than_cutoff
from core.options import DEFAULT_EXPIRE_LIMIT, parse_int
from core.snapshot import Snapshot
from core.table_handle import TableHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ExpireChangelogsResult:
    table: str
    branch: str
    changelogs_expired: list[int]
    earliest_before: int | None  # the earliest changelog before and after the run
    earliest_after: int | None
    data_files_deleted: int  # changelog files, and the data files of changelog deltas
    manifest_files_deleted: int  # manifests and manifest lists
    bytes_deleted: int
    dry_run: bool


@dataclass(frozen=True)
class _Journal:
    expired: list[int]  # changelog ids to remove, oldest first
    end: int  # the earliest changelog kept
    files: list[str]  # data, changelog and metadata files only the expired changelogs referenced
    end_time_millis: int | None = None  # changelog end as planned (None: there was none)
    delete_all: bool = False  # --delete-all: no changelog is kept, the hints go at the end


def retention(table: TableHandle, retain_min: int | None, retain_max: int | None, older_than: str | None,
              max_deletes: int | None) -> tuple[int, int, int, int]:
    """(retain_min, retain_max, cutoff millis, max_deletes) from the flags, else the options."""
    opts = table.schema.options
    r = changelog_retention(opts)
    retain_min = r.retain_min if retain_min is None else retain_min
    retain_max = r.retain_max if retain_max is None else retain_max
    if max_deletes is None:
        max_deletes = parse_int(opts.get("snapshot.expire.limit", str(DEFAULT_EXPIRE_LIMIT)), "snapshot.expire.limit")
    if retain_min < 1:
        raise UsageError(f"retain-min must be at least 1 (got {retain_min})")
    if retain_max < retain_min:
        raise UsageError(f"retain-max ({retain_max}) must not be smaller than retain-min ({retain_min})")
    if max_deletes < 0:
        raise UsageError(f"max-deletes must not be negative (got {max_deletes})")
    now_ms = int(time.time() * 1000)
    cutoff = now_ms - r.time_retained_ms if older_than is None else older_than_cutoff(older_than, now_ms)
    return retain_min, retain_max, cutoff, max_deletes


def plan_end(table: TableHandle, retain_min: int, retain_max: int, cutoff: int, limit: int) -> tuple[int, int] | None:
    """(earliest changelog, end): changelogs [earliest, end) are due; None when none is."""
    cm = ChangelogManager(table.file_io, table.branch_path)
    latest = table.snapshots.latest_id()
    ce, cl = cm.earliest_id(), cm.latest_id()
    if latest is None or ce is None or cl is None:
        return None
    lowest = max(latest - retain_max + 1, ce)
    end = latest - retain_min + 1
    consumer = ConsumerManager(table.file_io, table.branch_path).consumers()
    if consumer:
        end = min(end, min(c.next_snapshot for c in consumer))
    end = min(end, ce + limit, cl)
    for cid in range(lowest, end + 1):
        try:
            if cutoff <= cm.changelog(cid).time_millis:
                end = cid
                break
        except NotFoundError:
            continue
    if end <= ce:
        return None
    return ce, end


def plan_all(table: TableHandle) -> tuple[int, int] | None:
    """(earliest changelog, latest + 1) for --delete-all: every changelog is due, whatever
    the retention and the consumers (Java's ``expireAll``); None when there is none."""
    cm = ChangelogManager(table.file_io, table.branch_path)
    ce, cl = cm.earliest_id(), cm.latest_id()
    if ce is None or cl is None:
        return None
    earliest = table.snapshots.earliest_id()
    if earliest is not None and cl >= earliest:
        # Java refuses the same way: a changelog at or above the earliest snapshot shares its
        # files, and deleting "all changelogs" would take the snapshot's.
        raise CorruptMetadataError(f"changelog-{cl} of {table.name} is not below its earliest snapshot "
                                   f"({earliest}); run `lakectl check {table.name}`")
    return ce, cl + 1


def _lists(snap: Snapshot) -> list[str]:
    return [n for n in (snap.changelog_manifest_list, snap.delta_manifest_list, snap.base_manifest_list) if n]


def expire_changelogs_held(table: TableHandle, retain_min: int, retain_max: int, cutoff: int, limit: int,
                           dry_run: bool, progress: ProgressCallback | None = None, *,
                           delete_all: bool = False) -> ExpireChangelogsResult:
    """The work, for a caller holding the branch's rewrite marker (or a dry run)."""
    fio = table.file_io
    cm = ChangelogManager(fio, table.branch_path)
    if not dry_run:
        finish_interrupted(table)
    earliest_before = cm.earliest_id()
    planned = plan_all(table) if delete_all else plan_end(table, retain_min, retain_max, cutoff, limit)
    if planned is None:
        return ExpireChangelogsResult(table.name, table.branch, [], earliest_before, earliest_before, 0, 0, 0,
                                      dry_run)
    ce, end = planned
    mio = table.manifests()
    schema = table.schema
    expiring: dict[int, Snapshot] = {}
    for cid in range(ce, end):
        try:
            expiring[cid] = cm.changelog(cid)
        except NotFoundError:
            pass

    def read_list(name: str) -> list[ManifestFileMeta]:
        if not fio.exists(join(mio.dir, name)):
            return []  # a producer table's data lists went with the snapshot (as in Java)
        return mio.read_manifest_list(name)

    cache: dict[str, list[ManifestEntry]] = {}

    def entries(name: str) -> list[ManifestEntry]:
        if name not in cache:
            try:
                cache[name] = mio.read_manifest(name)
            except CorruptMetadataError:
                if fio.exists(join(mio.dir, name)):
                    raise
                cache[name] = []
        return cache[name]

    # What stays: the lists and manifests of changelog end, the earliest snapshot, the tags and
    # the other branches; the data and changelog files the tags and other branches hold.
    keepers: list[Snapshot] = []
    end_time = None
    try:
        keepers.append(cm.changelog(end))
        end_time = keepers[0].time_millis
    except NotFoundError:
        pass
    earliest_snapshot = table.snapshots.earliest_id()
    if earliest_snapshot is not None:
        keepers.append(table.snapshots.snapshot(earliest_snapshot))
    tags = []
    for name in table.tags.names():
        try:
            tags.append(table.tags.snapshot(name))
        except NotFoundError:
            continue
    pinned = tags + pinned_snapshots(table, include_own=False)
    protected_meta: set[str] = set()
    held_files: set[tuple] = set()
    for snap in keepers + pinned:
        for name in _lists(snap):
            protected_meta.add(name)
            protected_meta.update(m.file_name for m in read_list(name))
    for snap in pinned:
        for name in _lists(snap):
            for m in read_list(name):
                held_files.update((e.partition, e.bucket, e.file.file_name) for e in entries(m.file_name))

    def data_path(e: ManifestEntry) -> str:
        return e.file.external_path or join(schema.bucket_dir(table.path, e.partition, e.bucket), e.file.file_name)

    data_files: dict[str, int] = {}
    meta_files: dict[str, int | None] = {}
    for cid in sorted(expiring):
        snap = expiring[cid]
        if snap.changelog_manifest_list:
            for m in read_list(snap.changelog_manifest_list):
                for e in entries(m.file_name):
                    if e.kind == ADD and (e.partition, e.bucket, e.file.file_name) not in held_files:
                        data_files[data_path(e)] = e.file.file_size
        if snap.delta_manifest_list:
            doomed: dict[tuple, ManifestEntry] = {}
            for m in read_list(snap.delta_manifest_list):
                for e in entries(m.file_name):
                    key = (e.partition, e.bucket, e.file.file_name)
                    if e.kind == DELETE:
                        doomed[key] = e
                    else:
                        doomed.pop(key, None)
            for key, e in doomed.items():
                if key not in held_files:
                    data_files[data_path(e)] = e.file.file_size
                    for extra in e.file.extra_files:
                        data_files[join(data_path(e).rsplit("/", 1)[0], extra)] = 0
        for name in _lists(snap):
            if name in protected_meta or not fio.exists(join(mio.dir, name)):
                continue
            for m in read_list(name):
                if m.file_name not in protected_meta:
                    meta_files[m.file_name] = m.file_size
            meta_files[name] = None
    expired = sorted(expiring)
    result = ExpireChangelogsResult(table.name, table.branch, expired, ce, None if delete_all else end,
                                    len(data_files), len(meta_files),
                                    sum(data_files.values()) + sum(s or 0 for s in meta_files.values()), dry_run)
    if dry_run:
        return result
    journal = _Journal(expired, end, list(data_files) + [join(mio.dir, n) for n in meta_files], end_time,
                       delete_all)
    journal_path = join(cm.dir, f"{JOURNAL_PREFIX}{end}-{uuid.uuid4()}.json")
    try:
        fio.write_bytes(journal_path, json.dumps(dataclasses.asdict(journal)).encode("utf-8"))
    except OSError as e:
        if not is_storage_full(e):
            raise
        # As expire on a full disk: the same order without the journal; a kill then leaves
        # only unreferenced files, for remove-orphan-files.
        log.warning("no space for the expire-changelogs journal of %s (%s); going on without one", table.name, e)
        fio.delete(journal_path)
        _carry_out(table, journal, progress)
        return result
    _carry_out(table, journal, progress)
    fio.delete(journal_path)
    log.info("expired changelogs %d..%d of %s", ce, end - 1, table.name)
    return result


def _carry_out(table: TableHandle, journal: _Journal, progress: ProgressCallback | None = None) -> None:
    """EARLIEST first, then the changelog files oldest first, then the files they alone used."""
    fio = table.file_io
    cm = ChangelogManager(fio, table.branch_path)
    total = len(journal.expired) + len(journal.files)
    cm.write_hint("EARLIEST", journal.end)
    for done, cid in enumerate(journal.expired, 1):
        fio.delete(cm.path(cid))
        if progress is not None:
            progress(done, total, "removing expired changelogs")
    for done, path in enumerate(journal.files, len(journal.expired) + 1):
        fio.delete(path)
        if progress is not None:
            progress(done, total, "deleting expired changelog files")
    if journal.delete_all and not cm.list_ids():
        # No changelog is left for the hints to name (Java deletes both after an expireAll).
        cm.delete_hint("EARLIEST")
        cm.delete_hint("LATEST")


def finish_interrupted(table: TableHandle) -> list[int]:
    """Finish the changelog expirations a kill interrupted; returns the ids they removed now."""
    fio = table.file_io
    cm = ChangelogManager(fio, table.branch_path)
    try:
        names = sorted(n for n in fio.list_names(cm.dir) if n.startswith(JOURNAL_PREFIX))
    except FileNotFoundError:
        return []
    done: list[int] = []
    for name in names:
        path = join(cm.dir, name)
        try:
            journal = _Journal(**json.loads(fio.read_text(path)))
        except (ValueError, TypeError, CorruptMetadataError, FileNotFoundError):
            fio.delete(path)  # torn while being written: its run deleted nothing
            continue
        if _intact(cm, journal):
            done += [cid for cid in journal.expired if cm.exists(cid)]
            _carry_out(table, journal)
        fio.delete(path)
    return done


def _intact(cm: ChangelogManager, journal: _Journal) -> bool:
    """Is changelog ``end`` still the one the journal planned around? A rollback below it since
    (which removes newer changelogs, whose ids later commits take again) voids the journal: its
    ids may name new changelogs now, and its files are left to remove-orphan-files."""
    if journal.end_time_millis is None:
        return True
    try:
        return cm.changelog(journal.end).time_millis == journal.end_time_millis
    except NotFoundError:
        return False


def changelogs_due(table: TableHandle) -> bool:
    """Whether expire-changelogs with the table's options would remove anything or finish a
    killed run (expire's and maintain's test)."""
    cm = ChangelogManager(table.file_io, table.branch_path)
    try:
        if any(n.startswith(JOURNAL_PREFIX) for n in table.file_io.list_names(cm.dir)):
            return True
    except FileNotFoundError:
        pass
    if not changelog_retention(table.schema.options).decoupled and not ChangelogManager(
            table.file_io, table.branch_path).list_ids():
        return False
    return plan_end(table, *retention(table, None, None, None, None)) is not None


def expire_changelogs(table: TableHandle, *, retain_min: int | None = None, retain_max: int | None = None,
                      older_than: str | None = None, max_deletes: int | None = None, dry_run: bool = False,
                      delete_all: bool = False, progress: ProgressCallback | None = None) -> ExpireChangelogsResult:
    """Remove the long-lived changelogs past their retention and the files only they use.

    Args:
        table: the table (or a branch of it).
        retain_min: keep at least this many newest ids (``changelog.num-retained.min``, else
            ``snapshot.num-retained.min``, 10).
        retain_max: keep at most this many (``changelog.num-retained.max``, else the snapshot's).
        older_than: a duration back from now or an ISO 8601 time (``changelog.time-retained``,
            else ``snapshot.time-retained``, 1h).
        max_deletes: at most this many changelogs in this run (``snapshot.expire.limit``, 10).
        dry_run: plan and report, delete nothing.
        delete_all: remove every changelog (Paimon's ``delete_all``), whatever the retention and
            the consumers' positions; not with the retention arguments.
        progress: called as ``progress(done, total, what)``.

    Raises:
        UsageError: a bad retention.
        CommitConflictError: another expire or a rollback holds the branch's rewrite marker.
    """
    table.location.refuse_on_server("expire-changelogs")  # before anything is written
    from contextlib import ExitStack

    from core.busy import working
    from core.option_rules import EXPIRE, check_options
    from core.rewrite import EXPIRE as EXPIRE_MARKER, acquire, finish_rollback_marker, release

    check_options(table.schema, table.name, EXPIRE)
    if delete_all:
        given = [flag for flag, value in (("--retain-min", retain_min), ("--retain-max", retain_max),
                                          ("--older-than", older_than), ("--max-deletes", max_deletes))
                 if value is not None]
        if given:
            raise UsageError(f"--delete-all removes every changelog; it does not take {', '.join(given)}")
    retain_min, retain_max, cutoff, max_deletes = retention(table, retain_min, retain_max, older_than, max_deletes)
    if dry_run:
        return expire_changelogs_held(table, retain_min, retain_max, cutoff, max_deletes, True, progress,
                                      delete_all=delete_all)
    with ExitStack() as stack:
        stack.enter_context(working(table.file_io, table.path, table.name, "expire changelogs"))
        marker = acquire(table.file_io, table.snapshots.dir, EXPIRE_MARKER, what="expire changelogs",
                         table=table.name,
                         on_abandoned=lambda m: finish_rollback_marker(table.snapshots, table.tags, m))
        try:
            table.refuse_unfinished_fast_forward("expire changelogs")
            return expire_changelogs_held(table, retain_min, retain_max, cutoff, max_deletes, False, progress,
                                          delete_all=delete_all)
        finally:
            release(table.file_io, marker)
