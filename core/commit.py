"""Commit: CommitMessages -> manifests -> an atomically published ``snapshot-N``.

``try_commit`` loops around ``try_commit_once`` the way Paimon's FileStoreCommitImpl does:
each attempt re-reads the latest snapshot, re-plans the delta against it (so an overwrite
deletes what is live *now*), checks for conflicts, writes manifests and then tries to create
``snapshot-(latest+1)``. Losing that race means someone else committed: retry. A retry first
checks whether our own commit already landed (same commit user and kind), so an attempt whose
outcome was unknown is never committed twice.

Winning the create is not enough: a committer that stalled between reading the latest snapshot
L and creating ``snapshot-(L+1)`` can find that id free again because ``expire`` removed it
meanwhile. So every publish (and every own snapshot found after an unknown outcome) is verified
before LATEST moves (``_illegitimate``): in the common case EARLIEST is at most N-1 and the base
``snapshot-(N-1)`` is still the very snapshot the attempt built on (for N = 1: no expire journal
retires id 1); EARLIEST above N with the base gone is a re-used id unless our snapshot was
already expired or a successor was built on it. A re-used id is undone (our ``snapshot-N`` and
this attempt's manifests deleted; the data files are kept) and the commit retried on the real
latest. Base files that vanish while an attempt reads them are a lost race against expire when
the base snapshot is gone too: also a retry. docs/architecture.md ("Publishing next to a
running expire") argues why this covers every interleaving.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from core import branch_merge
from core.branch import MAIN_BRANCH, refuse_unfinished_fast_forward, table_name
from core.deletion_vectors import read_index_file, write_index_file, writes_bitmap64
from core.errors import (CommitConflictError, CorruptMetadataError, ExpiredWhileReadingError, LakectlError,
                         NotFoundError, StalePlanError, TableGoneError, UnsupportedTableError)
from core.fileio import FileIO, after_publish, before_publish, join
from core.index_manifest import ADD as INDEX_ADD
from core.index_manifest import DELETE as INDEX_DELETE
from core.index_manifest import DELETION_VECTORS, IndexFileMeta, IndexManifestEntry, IndexManifestIO, combine, index_dir
from core.manifest import (ADD, DELETE, DataFileMeta, ManifestEntry, ManifestFileMeta, ManifestIO, live_entries,
                           merge_entries)
from core.manifest_merge import MergeRules, merge_manifests
from core.option_rules import data_evolution_enabled
from core.options import BATCH_COMMIT_IDENTIFIER
from core.replan import lost_race, replan_on_lost_race
from core import row_tracking
from core.schema import SchemaManager, TableSchema
from core.busy import announcing, running_closer
from core.renaming import RENAMED
from core.rewrite import rollback_in_progress
from core.snapshot import APPEND, COMPACT, OVERWRITE, Snapshot, SnapshotManager, same_snapshot
from core.tag import TagManager

if TYPE_CHECKING:
    from core.snapshot import SnapshotCommit

log = logging.getLogger(__name__)


def now_millis() -> int:
    """A snapshot's commit time (epoch millis). Module-level so tests can set the clock: the
    automatic tags of ``tag.automatic-creation=process-time`` follow it."""
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class CommitMessage:
    """What one (partition, bucket) task produced; plain data that travels executor -> driver."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    # Index files of the bucket (deletion vectors): added, or replaced ones to drop.
    new_index_files: tuple[IndexFileMeta, ...] = ()
    deleted_index_files: tuple[IndexFileMeta, ...] = ()


@dataclass(frozen=True, slots=True)
class Success:
    snapshot: Snapshot | None  # None only for a manifest compaction of a table without snapshots


@dataclass(frozen=True, slots=True)
class Retry:
    reason: str
    expired: bool = False  # lost a race against expire (the base went away), not against a committer
    rewrite: str | None = None  # held off by a running rollback (described)


def _landed_earlier(entries: list[ManifestEntry], live: list[ManifestEntry]) -> bool:
    """Whether a file this commit ADDs is already live: file names are unique to the commit
    that wrote them, so only an earlier attempt of the same commit can have put it there."""
    ours = {(e.partition, e.bucket, e.file.file_name) for e in entries if e.kind == ADD}
    return bool(ours) and any((e.partition, e.bucket, e.file.file_name) in ours for e in live)


@dataclass(frozen=True, slots=True)
class _Attempt:
    """What one attempt published on, and wrote: enough to verify and undo its snapshot."""

    base: Snapshot | None
    written: tuple[str, ...]
    written_index: tuple[str, ...]
    chain: tuple[str, ...]  # the manifests a snapshot built on ours lists in its base list
    # What a snapshot built on ours starts from, as far as this commit knows it without reading
    # its manifests back (an expire may delete its base's manifests once a successor merged
    # them): its entries, and its base's live files when it read them. Only the rare chain
    # check turns them into sets (``adds``, ``deletes``, ``result``).
    entries: tuple[ManifestEntry, ...] = ()
    base_live: tuple[ManifestEntry, ...] | None = None

    @property
    def adds(self) -> frozenset[tuple]:
        return frozenset(e.identifier for e in self.entries if e.kind == ADD)

    @property
    def deletes(self) -> frozenset[tuple]:
        return frozenset(e.identifier for e in self.entries if e.kind == DELETE)

    @property
    def result(self) -> frozenset[tuple] | None:
        """The live set after this commit, when its base's was read."""
        if self.base_live is None:
            return None
        return frozenset({e.identifier for e in self.base_live} - self.deletes | self.adds)


@dataclass(frozen=True, slots=True)
class IndexChanges:
    """Index files a commit adds or deletes (``core.index_manifest``), and the index manifest
    the writer planned against (``planned_on``). A dynamic-bucket write assigned its buckets
    from that manifest's hash index: landing on top of another index manifest (a concurrent
    writer that placed new keys) could put one key in two buckets, so that is a conflict."""

    entries: tuple[IndexManifestEntry, ...] = ()
    planned_on: str | None = None


@dataclass(frozen=True, slots=True)
class OverwriteSpec:
    """Which live files an OVERWRITE replaces: whole table, or these partitions (BinaryRow bytes)."""

    partitions: frozenset[bytes] | None = None  # None = the whole table
    # The live files the overwrite planned to replace (ManifestEntry identifiers), or None.
    # Given (rescale: its new files are the old ones' rows), any other live file in the
    # replaced partitions is a concurrent commit the overwrite would drop: StalePlanError.
    expected: frozenset[tuple] | None = None


@dataclass(slots=True)
class FileStoreCommit:
    file_io: FileIO
    table_path: str
    schema: TableSchema
    commit_user: str = field(default_factory=lambda: str(uuid.uuid4()))
    identifier: int = BATCH_COMMIT_IDENTIFIER
    min_retry_wait: float = 0.01
    max_retry_wait: float = 10.0
    # A branch's snapshot/ and schema/ live in its own directory; manifests stay in the table's.
    branch_path: str | None = None
    # Whether the table's schema must be there (and be ours) around the publish: not for a
    # clone, which commits its snapshot before it writes the schema files (core/ops/clone.py).
    table_must_exist: bool = True
    # Whether a file this commit adds may already be live (StalePlanError then): branch merge adds
    # files other commits may have added meanwhile, as Paimon's checkAppendFiles refuses.
    refuse_live_adds: bool = False
    # The snapshot this commit's messages were planned on, when they hold only on it: a
    # snapshot landed since whose kind is not in ``tolerated_since`` (or that snapshot gone or
    # replaced) makes the attempt a StalePlanError, for the caller to plan again, instead of
    # re-basing the same messages on the new latest. rollback --as-latest tolerates none (its
    # deletes and adds are the difference to one state); branch merge tolerates APPEND and
    # ANALYZE (its check of a pure-append history still holds after them).
    planned_on: Snapshot | None = None
    tolerated_since: frozenset[str] = frozenset()
    # How a snapshot becomes the table's (``TableLocation.snapshot_commit()``): None is the
    # filesystem catalog's create-if-absent; a JDBC catalog with lock.enabled takes its lock
    # around it, a REST catalog posts the snapshot to its server (core/catalog/).
    snapshot_commit: SnapshotCommit | None = None
    snapshots: SnapshotManager = field(init=False)
    manifests: ManifestIO = field(init=False)
    index_manifests: IndexManifestIO = field(init=False)
    files_deleted: int = field(init=False, default=0)  # DELETE entries of the commit that landed
    retries: int = field(init=False, default=0)  # lost attempts of the last commit() call
    _attempts: dict[int, _Attempt] = field(init=False, default_factory=dict)  # by snapshot id tried
    # The base manifest lists the last commit wrote, by name: what a caller reports after it
    # without reading them back (once published, a rename or drop may move them).
    base_lists: dict[str, list[ManifestFileMeta]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.snapshots = SnapshotManager(self.file_io, self.branch_path or self.table_path)
        self.manifests = ManifestIO(self.file_io, self.table_path, self.schema.core_options.manifest_compression)
        self.index_manifests = IndexManifestIO(self.file_io, self.table_path,
                                               self.schema.core_options.manifest_compression)

    # ---- public --------------------------------------------------------------------
    def commit(self, messages: Sequence[CommitMessage], *, kind: str = APPEND,
               overwrite: OverwriteSpec | None = None,
               properties: dict[str, str] | None = None, watermark: int | None = None,
               index: IndexChanges | None = None) -> Snapshot | None:
        """Commit the messages as one snapshot. Returns None when there is nothing to commit.

        ``index``: index files the commit adds (a dynamic-bucket write's HASH files); an
        overwrite also drops the index entries of the partitions it replaces, as Java does.

        ``properties`` go into the snapshot's ``properties`` map (e.g. marking a full compaction).
        ``watermark`` (epoch millis, from a streaming writer): the snapshot's watermark is the
        larger of it and the latest snapshot's, as in Paimon, so it never goes back; without
        one the latest snapshot's is carried forward.
        """
        if overwrite is not None:
            kind = OVERWRITE
        self._refuse_rewrite_of_append_history(kind, messages)
        has_changes = any(m.new_files or m.compact_before or m.compact_after or m.changelog_files
                          or m.new_index_files or m.deleted_index_files for m in messages)
        if not has_changes and overwrite is None:
            return None
        return self._commit_with_retries(
            kind, lambda: self._try_commit_once(messages, kind, overwrite, properties, watermark, index))

    def compact_manifests(self) -> Snapshot | None:
        """Rewrite the latest snapshot's manifests into as few as ``manifest.target-file-size``
        allows (only live ADD entries), as one COMPACT snapshot whose delta list is empty
        (Paimon's ``compact_manifest``). Returns the latest snapshot unchanged when they are
        already that (or the table has none: None)."""
        rules = MergeRules.forced(self.schema.core_options)
        self._refuse_rewrite_of_append_history(COMPACT, ())
        return self._commit_with_retries(COMPACT, lambda: self._try_commit_once((), COMPACT, None, rules=rules))

    def _refuse_rewrite_of_append_history(self, kind: str, messages: Sequence[CommitMessage]) -> None:
        """A ``branch-merge.enabled`` table takes only APPEND commits of new files: the backstop
        behind each command's own refusal (core/branch_merge.py), before anything is written."""
        if branch_merge.enabled(self.schema) and (kind != APPEND or any(
                m.compact_before or m.compact_after or m.deleted_index_files for m in messages)):
            raise UnsupportedTableError(branch_merge.refusal(table_name(self.table_path), f"a commit of kind {kind}"))

    @property
    def on_server(self) -> bool:
        """Whether a server publishes (and owns) the chain: a REST catalog. Then the commit
        writes no hint or marker file, never deletes a published snapshot (no undo), and skips
        the checks after the publish that read the chain on the filesystem: the server decided
        (against ``baseSnapshotUuid``) and a published snapshot is the table's."""
        return bool(getattr(self.snapshot_commit, "server_owns_chain", False))

    def _latest_hint(self, snapshot_id: int) -> None:
        if not self.on_server:  # the server keeps its own hints, if any
            self.snapshots.write_latest_hint(snapshot_id)

    def _commit_with_retries(self, kind: str, attempt_once: Callable[[], Success | Retry]) -> Snapshot | None:
        if not self.on_server:  # the server publishes, not a create of ours
            self.file_io.check_atomic_create()  # refuse before writing manifests nobody would reference
        if self.branch_path in (None, self.table_path):  # main: not while a fast-forward is half-way
            refuse_unfinished_fast_forward(self.file_io, self.table_path, table_name(self.table_path),
                                           MAIN_BRANCH, "commit")
        retries = max(0, self.schema.core_options.commit_max_retries)  # at least one attempt, whatever the option says
        rewrite: str | None = None
        first_latest = self.snapshots.latest_id()
        self._attempts, self.retries, self.base_lists = {}, 0, {}
        expired = 0
        for attempt in range(retries + 1):
            if attempt:
                landed = self._find_own_commit(first_latest, kind)
                if landed is not None:
                    self._latest_hint(landed.id)
                    self._derived_metadata(landed)
                    return landed
                self._wait(attempt)
            result = attempt_once()
            if isinstance(result, Success):
                if result.snapshot is not None:
                    self._latest_hint(result.snapshot.id)
                    self._derived_metadata(result.snapshot)
                return result.snapshot
            self.retries += 1
            expired += result.expired
            rewrite = result.rewrite
            log.info("commit attempt %d of %d lost, retrying: %s", attempt + 1, retries + 1, result.reason)
        if rewrite is not None:
            raise CommitConflictError(
                f"commit did not land after {retries + 1} attempts: {rewrite} kept rewriting the snapshots of "
                f"{table_name(self.table_path)}; nothing was committed, re-run it when the rollback has finished")
        if expired:
            raise CommitConflictError(
                f"commit did not land after {retries + 1} attempts: a concurrent expire removed the snapshot "
                f"it built on {expired} times (other writers won the rest); nothing was committed, re-run it "
                "or let expire retain more snapshots (--retain-min)")
        raise CommitConflictError(f"commit did not land after {retries + 1} attempts: other writers kept winning")

    def _derived_metadata(self, snapshot: Snapshot) -> None:
        """What a landed commit of main keeps beside the table: Iceberg metadata where the
        table asks for it (core/iceberg/). Written after the publish, it never fails the commit."""
        options = self.schema.options
        if self.branch_path not in (None, self.table_path) or not (
                "metadata.iceberg.storage" in options or "metadata.iceberg-compatible" in options):
            return
        from core import iceberg  # only tables with the option pay for the import

        if iceberg.enabled(options):
            iceberg.sync_after_commit(self.file_io, self.table_path, self.schema, snapshot)

    # ---- one attempt ---------------------------------------------------------------
    def _try_commit_once(self, messages: Sequence[CommitMessage], kind: str,
                         overwrite: OverwriteSpec | None,
                         properties: dict[str, str] | None = None,
                         watermark: int | None = None, index: IndexChanges | None = None,
                         rules: MergeRules | None = None) -> Success | Retry:
        """One attempt; ``rules``: how to merge the manifests it builds on, given only for a
        manifest compaction, whose attempt commits nothing else (and nothing when the merge
        leaves the manifests as they are)."""
        manifests_only = rules is not None
        rollback = self._rollback_running()
        if rollback is not None:  # it is removing snapshots: commit on what it leaves
            return Retry(f"{rollback} is rewriting the snapshots", rewrite=rollback)
        try:
            latest = self.snapshots.latest()
        except NotFoundError as e:  # the latest id was expired between finding and reading it
            return Retry(f"the latest snapshot went away while it was read ({e})", expired=True)
        self._check_schema()
        if self.planned_on is not None:
            self._check_planned_on(latest)
        try:
            base_metas = self._base_manifests(latest)
        except ExpiredWhileReadingError as e:
            return Retry(str(e), expired=True)
        old_index = latest.index_manifest if latest else None
        if index is not None and overwrite is None and index.planned_on != old_index:
            raise CommitConflictError(
                "another writer changed the table's bucket index while this write assigned buckets "
                "(dynamic bucket mode); nothing was committed, re-run the write")
        live: list[ManifestEntry] | None = None
        # After an attempt of ours published, the live files also tell whether it landed: see
        # _landed_earlier.
        needs_live = overwrite is not None or any(m.compact_before for m in messages) or bool(self._attempts)
        # A data-evolution delete's vectors are keyed by files that must still be live.
        needs_live = needs_live or (data_evolution_enabled(self.schema) and any(m.new_index_files for m in messages))
        needs_live = needs_live or self.refuse_live_adds
        if needs_live and latest is not None:
            try:
                live = base_entries(self.manifests, latest, self.snapshots)
            except ExpiredWhileReadingError as e:
                return Retry(str(e), expired=True)
        entries = self._delta_entries(messages, overwrite, live or [])
        changelog = [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f)
                     for m in messages for f in m.changelog_files]
        index_changes = any(m.new_index_files or m.deleted_index_files for m in messages)
        if manifests_only and latest is None:
            return Success(None)
        if overwrite is None and not entries and not changelog and not index_changes and not manifests_only:
            return Success(latest) if latest else Retry("nothing to commit")
        if overwrite is not None and not entries and not changelog and not index_changes:
            # It replaces nothing with nothing: no snapshot, as truncate and drop-partition
            # leave none when there is nothing to drop.
            return Success(None)
        # (Not for a commit that refuses live adds: another commit may have added the same
        # files; _check_conflicts then makes its caller plan again.)
        if self._attempts and not self.refuse_live_adds and _landed_earlier(entries, live or []):
            # An earlier attempt of ours landed, and a concurrent expire retired its snapshot
            # before it could be read back (retain-min 1): its new files are live. Committing
            # again would add them twice, or conflict with our own replacement and make the
            # caller delete files the table now references.
            log.info("an earlier attempt of this commit landed (its files are live in snapshot-%d); "
                     "not committing again", latest.id if latest else 0)
            self.files_deleted = sum(1 for e in entries if e.kind == DELETE)
            return Success(latest)
        try:
            self._check_conflicts(entries, live or [], base_metas)
            if data_evolution_enabled(self.schema):
                self._check_vector_anchors(messages, entries, live or [], latest)
        except ExpiredWhileReadingError as e:
            return Retry(str(e), expired=True)
        next_row_id = None
        if row_tracking.enabled(self.schema):  # new files take the next row ids, as in Paimon
            start = latest.next_row_id if latest is not None and latest.next_row_id is not None else 0
            entries, next_row_id = row_tracking.assign_first_row_ids(entries, start,
                                                                     (latest.id + 1) if latest else 1)

        written: list[str] = []
        written_index: list[str] = []
        try:
            index_manifest = self._index_manifest(messages, entries, latest, written, written_index,
                                                  self._index_entries(index, overwrite, old_index))
            partition_types = [f.type for f in self.schema.partition_fields]
            # The manifests we build on, merged as Paimon merges them (core/manifest_merge.py).
            before = [m.file_name for m in base_metas]
            base_metas = merge_manifests(self.manifests, base_metas, rules or MergeRules.of(self.schema.core_options),
                                         self.schema.id, partition_types, written)
            if manifests_only and [m.file_name for m in base_metas] == before:
                return Success(latest)  # already as few as the target size allows
            # One delta manifest per bucket count, so that each records its count (a rescale
            # mixes them): later commits check bucket counts from manifest metadata alone.
            delta_metas = [self.manifests.write_manifest(group, self.schema.id, partition_types)
                           for group in _by_total_buckets(entries)]
            written.extend(m.file_name for m in delta_metas)
            base_name, base_size = self.manifests.write_manifest_list(base_metas)
            written.append(base_name)
            self.base_lists[base_name] = base_metas
            delta_name, delta_size = self.manifests.write_manifest_list(delta_metas)
            written.append(delta_name)
            changelog_name = changelog_size = None
            if changelog:
                changelog_meta = self.manifests.write_manifest(changelog, self.schema.id, partition_types)
                written.append(changelog_meta.file_name)
                changelog_name, changelog_size = self.manifests.write_manifest_list([changelog_meta])
                written.append(changelog_name)
        except CorruptMetadataError as e:
            self._clean(written, written_index)  # nothing references these yet
            if latest is not None and self.snapshots.retired(latest):  # its index files went with it
                return Retry(f"snapshot {latest.id} was expired while this commit read it ({e})", expired=True)
            raise
        except Exception:
            self._clean(written, written_index)  # nothing references these yet
            raise

        delta_count = sum(e.file.row_count if e.kind == ADD else -e.file.row_count for e in entries)
        new_id = (latest.id + 1) if latest else 1
        snapshot = Snapshot(
            id=new_id,
            schema_id=self.schema.id,
            base_manifest_list=base_name,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta_name,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog_name,
            changelog_manifest_list_size=changelog_size,
            changelog_record_count=sum(e.file.row_count for e in changelog) if changelog else None,
            commit_user=self.commit_user,
            commit_identifier=self.identifier,
            commit_kind=kind,
            time_millis=now_millis(),
            total_record_count=(latest.total_record_count if latest else 0) + delta_count,
            delta_record_count=delta_count,
            index_manifest=index_manifest,
            watermark=next_watermark(watermark, latest.watermark if latest else None),
            properties=dict(properties) if properties else None,
            next_row_id=next_row_id,
        )
        chain = tuple(m.file_name for m in base_metas) + tuple(m.file_name for m in delta_metas)
        self._attempts[new_id] = _Attempt(latest, tuple(written), tuple(written_index), chain, tuple(entries),
                                          None if live is None else tuple(live))
        announced = ExitStack()
        try:
            before_publish()  # LAKECTL_FAULT=stall:publish:N holds a test's committer right here
            announced.enter_context(self._announced())
        except FileNotFoundError as e:  # the table directory went (a local rename or drop)
            self._clean(written, written_index)
            raise TableGoneError(f"table {table_name(self.table_path)} was renamed or dropped while this command "
                                 "ran; nothing was committed") from e
        except CommitConflictError:  # a rename or drop is under way: publish nothing
            self._clean(written, written_index)
            raise
        except OSError as e:  # as a failed publish: the retry's idempotence check looks
            return Retry(f"publishing snapshot-{snapshot.id} failed ({e}); state unknown")
        with announced:
            return self._publish_and_verify(snapshot, latest, messages, entries, written, written_index)

    def _announced(self) -> AbstractContextManager[None]:
        """On a local disk, a busy marker held from the publish to the end of its checks: a
        local rename or drop (one os.rename or the first deletion, core/busy.py) then waits
        for them, so it never moves a just-published snapshot away under a check that would
        report it as not committed (exit 4 for a commit that is in the renamed table). An
        object store's rename copies and marks RENAMED, which the checks look for instead."""
        if not self.file_io.local or not self.table_must_exist or self.on_server:
            return nullcontext()  # (a REST table is renamed and dropped by its server)
        return announcing(self.file_io, self.table_path, table_name(self.table_path))

    def _publish_and_verify(self, snapshot: Snapshot, latest: Snapshot | None, messages: Sequence[CommitMessage],
                            entries: list[ManifestEntry], written: list[str],
                            written_index: list[str]) -> Success | Retry:
        """Publish ``snapshot`` and verify it landed legitimately (else undo it)."""
        new_id = snapshot.id
        try:
            if self.snapshot_commit is None:
                published = self.snapshots.try_publish(snapshot, make_dirs=latest is None)
            else:
                published = self.snapshot_commit.publish(self.snapshots, snapshot, make_dirs=latest is None)
        except FileNotFoundError as e:
            self._clean(written, written_index)
            if not self._table_still_there():
                raise TableGoneError(f"table {table_name(self.table_path)} was renamed or dropped while this "
                                     "command ran; nothing was committed") from e
            return Retry(f"publishing snapshot-{new_id} failed ({e}); state unknown")
        except OSError as e:
            # The outcome is unknown: the snapshot may exist. Delete nothing; the retry's
            # idempotence check finds it if it landed (and verifies it as below).
            return Retry(f"publishing snapshot-{new_id} failed ({e}); state unknown")
        if not published:
            self._clean(written, written_index)  # another committer owns snapshot-{new_id}; ours are unreferenced
            return Retry(f"snapshot-{new_id} was taken by another writer")
        after_publish()  # LAKECTL_FAULT=stall:published:N holds it between the publish and its checks
        if self.on_server:  # the server accepted it on our base: it is the table's, nothing to verify or undo
            self.files_deleted = sum(1 for e in entries if e.kind == DELETE)
            return Success(snapshot)
        try:
            why = self._illegitimate(snapshot, latest)
        except OSError as e:
            # Landed but not verified: as an unknown outcome, the retry finds it and verifies it.
            return Retry(f"verifying snapshot-{new_id} failed ({e}); state unknown")
        if why is not None:
            self._undo(snapshot)
            return Retry(f"snapshot-{new_id} was free only because expire had removed it ({why}); undone", expired=True)
        if not self._table_still_there():  # renamed, dropped or re-created between our checks
            self._undo(snapshot)
            raise TableGoneError(f"table {table_name(self.table_path)} was renamed, dropped or re-created while "
                                 "this command ran; nothing was committed")
        if latest is None and not self.file_io.local and self.table_must_exist:
            # Snapshot 1 of a table with a schema: a new table, or one a drop on an object store
            # has half deleted (its snapshots first): then it must not land on what is left.
            closer = running_closer(self.file_io, self.table_path)
            if closer is not None:
                self._undo(snapshot)
                raise CommitConflictError(f"{closer.describe()} is under way on {table_name(self.table_path)}; "
                                          "nothing was committed")
        if self._renamed_away():
            # A rename on an object store has copied the table and is about to delete it here:
            # it lists once more after writing RENAMED and copies a snapshot that landed before,
            # so one that finds RENAMED takes itself back (core/ops/rename.py).
            self._undo(snapshot)
            what = table_name(self.table_path) if self.branch_path in (None, self.table_path) else \
                f"branch {self.branch_path.rsplit('/', 1)[-1].removeprefix('branch-')} of {table_name(self.table_path)}"
            raise CommitConflictError(f"{what} is being renamed (its copy is complete); "
                                      "nothing was committed, re-run the command on the new name")
        try:
            rollback = self._rollback_running()
        except OSError as e:  # landed, not verified: the retry finds it and verifies it
            return Retry(f"verifying snapshot-{new_id} failed ({e}); state unknown")
        if rollback is not None:
            # The rollback may remove our snapshot or leave it above a gap: take it back and
            # commit again on what the rollback leaves.
            self._undo(snapshot)
            return Retry(f"{rollback} started while snapshot-{new_id} was published; undone", rewrite=rollback)
        missing = self._missing_new_file(messages)
        if missing is not None:
            # Orphan removal (forced under its one-hour floor) took the files of this commit
            # while it was in flight: a snapshot naming them would make the table unreadable.
            self._undo(snapshot)
            raise CommitConflictError(f"file {missing} of this commit was deleted before the commit landed "
                                      "(remove-orphan-files --force next to a running write?); nothing was "
                                      "committed, re-run the command")
        self.files_deleted = sum(1 for e in entries if e.kind == DELETE)
        return Success(snapshot)

    # ---- verifying a publish -------------------------------------------------------
    def _illegitimate(self, snapshot: Snapshot, base: Snapshot | None) -> str | None:
        """Why our freshly created ``snapshot-N`` re-used an id expire had retired, or None.

        Expire retires oldest first and never the latest. So if ``snapshot-N`` was free because
        expire removed the original N, the original base N-1 was gone before we created ours,
        and the snapshot that expire kept (its end) lies above N. The fast path (one snapshot
        read): the base is still the very snapshot we built on, so our id was never retired.

        A base gone is not enough to undo: an expire may retire it right after we published
        (ours is then the latest, or others committed on it). Then ours stands if it is in the
        gapless chain: the newest, or built on by ``snapshot-(N+1)``; a re-created id is
        neither (the expire's end lies above it, and the snapshot above it was built on the
        original). The base is looked at before EARLIEST: read the other way round, an expire
        that ran between the two reads (EARLIEST still below N, the base just retired) made a
        legitimate latest snapshot look re-created, and undoing it left the table with no
        snapshot at all. The arguments are in docs/architecture.md ("Commit protocol")."""
        n = snapshot.id
        base_same = base is None or self._still_there(base)
        if base is not None and base_same:
            return None  # the expire has not reached our base, so not our id either
        earliest = self.snapshots.earliest_hint()
        if base is None and (earliest is None or earliest <= 1):
            # Snapshot 1 has no base to tell: a journal that retires 1 does.
            return "an expire journal retires snapshot 1" if self.snapshots.journal_retires(1) else None
        if base is not None and self._cut_from_top(base, earliest):
            return f"base snapshot {base.id} was removed or replaced by a rollback or fast-forward"
        if earliest is not None and earliest > n and not self._still_ours(snapshot):
            # Landed, and already expired. A re-created id is never retired: expire plans from
            # EARLIEST, which is above it (SnapshotManager.earliest_id), and finishes a killed
            # run's journal only on snapshots older than the journal's end (expire._carry_out).
            return None
        if self._in_chain(snapshot):
            return None
        if earliest is None:
            return f"base snapshot {base.id if base else 0} is gone or re-created"
        return f"EARLIEST is {earliest} and base snapshot {base.id if base else 0} is gone"

    def _cut_from_top(self, base: Snapshot, earliest: int | None) -> bool:
        """Was our base (gone or replaced) removed from the top of the chain? Expire retires
        oldest first and writes EARLIEST past what it retires before it starts, so a base it
        retired has no snapshot left below it from EARLIEST on. A snapshot still there below a
        base that is not means a rollback or fast-forward cut the chain while this attempt was
        between its check and its publish: ours would stand above a gap, on rows the rewrite
        took away (the rollback's marker is gone by then, so only the chain tells). Snapshots
        below EARLIEST (a killed committer's re-created id) do not count; neither does a base
        below EARLIEST (an expire, or a rollback that a later expire passed)."""
        if earliest is not None and earliest > base.id:
            return False
        floor = earliest or 0
        return any(floor <= i < base.id for i in self.snapshots.list_ids())

    def _still_there(self, base: Snapshot) -> bool:
        try:
            return same_snapshot(self.snapshots.snapshot(base.id), base)
        except (NotFoundError, CorruptMetadataError):
            return False

    def _still_ours(self, snapshot: Snapshot) -> bool:
        try:
            return same_snapshot(self.snapshots.snapshot(snapshot.id), snapshot)
        except (NotFoundError, CorruptMetadataError):
            return False

    def _missing_new_file(self, messages: Sequence[CommitMessage]) -> str | None:
        """The first data or changelog file this commit adds that is not there, or None. One
        existence check per new file (a stat on a local disk)."""
        for m in messages:
            directory = None
            for f in (*m.new_files, *m.compact_after, *m.changelog_files):
                if f.external_path:
                    path = f.external_path
                else:
                    directory = directory or self.schema.bucket_dir(self.table_path, m.partition, m.bucket)
                    path = f"{directory}/{f.file_name}"
                try:
                    if not self.file_io.exists(path):
                        return path
                except OSError:
                    return None  # unknown: a failed check is not a missing file
        return None

    def _in_chain(self, snapshot: Snapshot) -> bool:
        """Is our ``snapshot-N`` part of the gapless chain: built on by ``snapshot-(N+1)``, or
        the newest with nothing above it? ``snapshot-(N+1)`` is looked for again when the
        listing shows ids above ours: a successor may have landed on ours between the two."""
        if self.snapshots.exists(snapshot.id + 1):
            return self._built_on(snapshot)
        ids = self.snapshots.list_ids()
        if not ids or ids[-1] <= snapshot.id:
            return True
        if snapshot.id + 1 in ids or self.snapshots.exists(snapshot.id + 1):
            return self._built_on(snapshot)
        # Ids above ours and none right above: ours is below a gap, unless a successor landed
        # on it and was expired since, which retires ours first (oldest first).
        return not self._still_ours(snapshot)

    def _built_on(self, snapshot: Snapshot) -> bool:
        """Does ``snapshot-(N+1)`` build on our N? Its base list holds our base and delta
        manifests, or, when its commit merged them, manifests whose live files are ours: the
        very set when this commit knew its base's (``_Attempt.result``), else every file it
        added and none it deleted (file names are unique to the commit that wrote them, so a
        successor of a re-used id's original holds none of ours). A snapshot-(N+1) gone
        meanwhile was expired after ours (oldest first), so then ours counts as built on if
        it is gone too."""
        attempt = self._attempts.get(snapshot.id)
        if attempt is None:
            return False
        try:
            successor = self.snapshots.snapshot(snapshot.id + 1)
            metas = self.manifests.read_manifest_list(successor.base_manifest_list)
            names = tuple(m.file_name for m in metas)
            if names == attempt.chain:
                return True
            theirs = self._live_ids(names)
            result, adds = attempt.result, attempt.adds
            if result is not None:
                return theirs == result
            if adds:
                return adds <= theirs and not attempt.deletes & theirs
            ours = self._live_ids(attempt.chain)
        except (NotFoundError, CorruptMetadataError):
            return not self._still_ours(snapshot)
        return theirs == ours

    def _live_ids(self, manifest_names: Sequence[str]) -> set[tuple]:
        entries = (e for name in manifest_names for e in self.manifests.read_manifest(name))
        return {e.identifier for e in merge_entries(entries)}

    def _undo(self, snapshot: Snapshot) -> None:
        """Delete our re-created ``snapshot-N`` and the manifests its attempt wrote. Nobody
        builds on it: readers never take an id below EARLIEST or below a gap for the latest."""
        try:
            if same_snapshot(self.snapshots.snapshot(snapshot.id), snapshot):
                self.file_io.delete(self.snapshots.path(snapshot.id))
        except (NotFoundError, CorruptMetadataError):
            pass  # the expire that retired the id (or its journal) removed ours too
        attempt = self._attempts.pop(snapshot.id, None)
        if attempt is not None:
            self._clean(list(attempt.written), attempt.written_index)
        log.info("undid snapshot-%d: its id had been retired by expire", snapshot.id)

    def _index_manifest(self, messages: Sequence[CommitMessage], entries: list[ManifestEntry],
                        latest: Snapshot | None, written: list[str], written_index: list[str],
                        bucket_index: list[IndexManifestEntry]) -> str | None:
        """The new snapshot's index manifest: the latest one, with ``bucket_index`` (a dynamic-
        bucket write's HASH files, an overwrite's drops) and the messages' deletion-vector
        files applied, and the deletion vectors of files this commit deletes dropped (a
        bucket's index file is rewritten without them, or deleted when none is left)."""
        previous = latest.index_manifest if latest else None
        changes = list(bucket_index)
        changes += [IndexManifestEntry(INDEX_DELETE, m.partition, m.bucket, f)
                    for m in messages for f in m.deleted_index_files]
        changes += [IndexManifestEntry(INDEX_ADD, m.partition, m.bucket, f)
                    for m in messages for f in m.new_index_files]
        deleted: dict[tuple[bytes, int], set[str]] = {}
        for e in entries:
            if e.kind == DELETE:
                deleted.setdefault((e.partition, e.bucket), set()).add(e.file.file_name)
        if not changes and (not previous or not deleted):
            return previous
        live = [e for e in self.index_manifests.read(previous) if e.kind == INDEX_ADD]
        replaced = {f.file_name for m in messages for f in m.deleted_index_files}
        gone_index = replaced - {e.index_file.file_name for e in live}
        replaced |= {e.index_file.file_name for e in bucket_index if e.kind == INDEX_DELETE}
        if gone_index:
            raise StalePlanError(f"index file {sorted(gone_index)[0]} is no longer live (another commit "
                                 "replaced the deletion vectors); nothing was committed")
        for e in live:
            gone = deleted.get((e.partition, e.bucket))
            if e.index_file.index_type != DELETION_VECTORS or e.index_file.file_name in replaced or not gone:
                continue
            if not any(r.data_file in gone for r in e.index_file.dv_ranges or ()):
                continue
            vectors = read_index_file(self.file_io, self.table_path, e.index_file)
            kept = {name: bitmap for name, bitmap in vectors.items() if name not in gone}
            changes.append(IndexManifestEntry(INDEX_DELETE, e.partition, e.bucket, e.index_file))
            if kept:
                meta = write_index_file(self.file_io, self.table_path, kept,
                                        bitmap64=writes_bitmap64(self.schema.options))
                written_index.append(meta.file_name)
                changes.append(IndexManifestEntry(INDEX_ADD, e.partition, e.bucket, meta))
        if not changes:
            return previous
        # Deletion vectors of bucket-unaware (append) tables are matched by file name, as in Java.
        bucket_unaware = self.schema.num_buckets == -1 and not self.schema.has_primary_key
        name = self.index_manifests.write(combine(live, changes, bucket_unaware=bucket_unaware))
        written.append(name)
        return name

    def _delta_entries(self, messages: Sequence[CommitMessage], overwrite: OverwriteSpec | None,
                       live: list[ManifestEntry]) -> list[ManifestEntry]:
        entries: list[ManifestEntry] = []
        if overwrite is not None:
            _check_expected(overwrite, live)
            for e in live:
                if overwrite.partitions is None or e.partition in overwrite.partitions:
                    entries.append(ManifestEntry(DELETE, e.partition, e.bucket, e.total_buckets, e.file))
        for m in messages:
            for f in m.compact_before:
                entries.append(ManifestEntry(DELETE, m.partition, m.bucket, m.total_buckets, f))
            for f in (*m.new_files, *m.compact_after):
                entries.append(ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f))
        return entries

    def _index_entries(self, index: IndexChanges | None, overwrite: OverwriteSpec | None,
                       old_index: str | None) -> list[IndexManifestEntry]:
        """The commit's index changes: an overwrite first DELETEs every index entry of the
        partitions it replaces (Java's tryOverwrite), then the writer's own entries."""
        out = []
        if overwrite is not None and old_index:
            out = [e.to_delete() for e in self.index_manifests.read(old_index)
                   if overwrite.partitions is None or e.partition in overwrite.partitions]
        return out + list(index.entries if index else ())

    def _check_planned_on(self, latest: Snapshot | None) -> None:
        """StalePlanError when the chain moved past ``planned_on`` in a way its plan does not
        survive (see the field)."""
        planned = self.planned_on
        assert planned is not None
        if latest is None or latest.id < planned.id or not self._still_there(planned):
            raise StalePlanError(f"snapshot {planned.id}, which this commit was planned on, was rolled back, "
                                 "replaced or expired meanwhile; nothing was committed")
        for sid in range(planned.id + 1, latest.id + 1):
            try:
                kind = latest.commit_kind if sid == latest.id else self.snapshots.snapshot(sid).commit_kind
            except NotFoundError:
                raise StalePlanError(f"snapshot {sid} went away while this commit checked what landed since its "
                                     "plan; nothing was committed") from None
            if kind not in self.tolerated_since:
                raise StalePlanError(f"snapshot {sid} ({kind}) landed after this commit was planned on snapshot "
                                     f"{planned.id}; nothing was committed")

    def _check_schema(self) -> None:
        schemas = SchemaManager(self.file_io, self.branch_path or self.table_path)
        current = schemas.list_ids()
        if not self.table_must_exist:
            return
        if not current or not self._same_table(schemas):
            raise TableGoneError(
                f"table {table_name(self.table_path)} was renamed, dropped or re-created while this command ran (or a "
                "fast-forward replaced its schema); nothing was committed")
        if current[-1] != self.schema.id:
            raise StalePlanError(
                f"the table schema changed to {current[-1]} while this write used schema {self.schema.id}; "
                "re-run the write against the new schema")

    def _same_table(self, schemas: SchemaManager) -> bool:
        """Is our schema still the table's (same id and creation time)? A table dropped and
        created again under the same name has schema files of its own."""
        try:
            return schemas.schema(self.schema.id).time_millis == self.schema.time_millis
        except (NotFoundError, CorruptMetadataError):
            return False

    def _table_still_there(self) -> bool:
        if not self.table_must_exist:
            return True
        try:
            return self._same_table(SchemaManager(self.file_io, self.branch_path or self.table_path))
        except OSError:
            return True  # unknown: the next attempt's schema check decides

    def _renamed_away(self) -> bool:
        """Has a rename on an object store written RENAMED into the table, or into the branch
        this commit goes to (its copy complete)? A local rename is one atomic rename, which
        ``_table_still_there`` sees."""
        if self.file_io.local or not self.table_must_exist:
            return False
        places = {self.table_path, self.branch_path or self.table_path}
        try:
            return any(self.file_io.exists(join(place, RENAMED)) for place in places)
        except OSError:
            return False  # unknown: the rename's listing after RENAMED decides

    def _rollback_running(self) -> str | None:
        """A live rollback of this branch (its rewrite marker), described; an abandoned one is
        finished here, as by any command that finds it (core/rewrite.py)."""
        return rollback_in_progress(self.snapshots, TagManager(self.file_io, self.branch_path or self.table_path))

    def _base_manifests(self, latest: Snapshot | None) -> list[ManifestFileMeta]:
        """The manifests of the snapshot this commit builds on (its base and delta lists), read
        before anything is written: committing on a snapshot whose lists are gone would carry
        the damage into every later snapshot."""
        if latest is None:
            return []
        out = []
        try:
            for name in (latest.base_manifest_list, latest.delta_manifest_list):
                out.extend(self.manifests.read_manifest_list(name))
        except CorruptMetadataError as e:
            raise damaged_base(latest, e, self.snapshots) from e
        return out

    def _check_conflicts(self, entries: list[ManifestEntry], live: list[ManifestEntry],
                         base_metas: list[ManifestFileMeta]) -> None:
        live_ids = {e.identifier for e in live}
        for e in entries:
            if self.refuse_live_adds and e.kind == ADD and e.identifier in live_ids:
                raise StalePlanError(f"file {e.file.file_name} is already live (another commit added it); "
                                     "nothing was committed")
            if e.kind == DELETE and e.identifier not in live_ids:
                raise StalePlanError(
                    f"file {e.file.file_name} is no longer live (another commit replaced it); nothing was committed")
        if data_evolution_enabled(self.schema):
            conflict = row_tracking.rewritten_range_conflict(entries, live)
            if conflict:
                raise StalePlanError(conflict)
        self._check_bucket_counts(entries, live, base_metas)

    def _check_bucket_counts(self, entries: list[ManifestEntry], live: list[ManifestEntry],
                             base_metas: list[ManifestFileMeta]) -> None:
        """A partition's files all use one bucket count (readers merge a key's records per
        bucket), as Java's writer checks per partition. A manifest recording only the counts
        this commit adds passes at once; otherwise (a rescaled table, or manifests that record
        no count: Java 1.0 writes none) the live files of the partitions written are compared."""
        counts = {e.total_buckets for e in entries if e.kind == ADD}
        if not counts or min(counts) < 1 or all(m.total_buckets in counts for m in base_metas):
            return  # nothing added, no fixed count (dynamic or unaware buckets), or all agree
        # A file's ADD and DELETE both sit in manifests recording its count (or none), so
        # those manifests alone tell which files of another count are live.
        other = [m.file_name for m in base_metas if m.total_buckets is None or m.total_buckets not in counts]
        if live:
            others = live
        else:
            try:
                others = merge_entries(self.manifests.read_manifests(other))
            except (FileNotFoundError, CorruptMetadataError) as e:
                # Gone since this attempt listed it (expire): the next attempt reads the latest.
                raise ExpiredWhileReadingError(f"a manifest went away while it was read ({e})") from e
        adding = {e.partition: e.total_buckets for e in entries if e.kind == ADD}
        removed = {e.identifier for e in entries if e.kind == DELETE}
        for e in others:
            if e.bucket == -2:
                continue  # postponed files have no bucket count (core.postpone); a compaction gives them one
            want = adding.get(e.partition)
            if e.kind == ADD and want is not None and e.total_buckets != want and e.identifier not in removed:
                name = table_name(self.table_path)
                where = self._partition_text(e.partition)
                hint = f" --partition {where}" if self.schema.partition_keys else ""
                raise CommitConflictError(
                    f"bucket count mismatch: {where or 'the table'} of {name} has files in {e.total_buckets} "
                    f"buckets, this write uses {want}; nothing was committed. Rescale it first "
                    f"(Paimon: INSERT OVERWRITE): lakectl rescale {name} --buckets {want}{hint}")

    def _partition_text(self, partition: bytes) -> str:
        """``dt=2024-01-01,hh=08`` as ``--partition`` takes it ('' when unpartitioned)."""
        if not self.schema.partition_keys:
            return ""
        return self.schema.partition_dir(self.schema.partition_values(partition)).replace("/", ",")

    def _check_vector_anchors(self, messages: Sequence[CommitMessage], entries: list[ManifestEntry],
                              live: list[ManifestEntry], latest: Snapshot | None) -> None:
        """Data-evolution tables: a new deletion vector is keyed by a row-id range's anchor
        file, which must still be live (a compaction meanwhile replaced it by a file of other
        positions); and no file this commit deletes may carry one in an index file the commit
        does not replace (a delete landed meanwhile; its vectors were not moved, and the rows
        would come back).

        Raises:
            StalePlanError: either happened; the command plans again."""
        deleted = {e.file.file_name for e in entries if e.kind == DELETE}
        live_names = ({e.file.file_name for e in live} - deleted) | {e.file.file_name for e in entries if e.kind == ADD}
        for m in messages:
            for f in m.new_index_files:
                for r in f.dv_ranges or ():
                    if r.data_file not in live_names:
                        raise StalePlanError(f"file {r.data_file} is no longer live (another commit replaced "
                                             "it); nothing was committed")
        if not deleted or latest is None or not latest.index_manifest:
            return
        replaced = {f.file_name for m in messages for f in m.deleted_index_files}
        for e in self.index_manifests.read(latest.index_manifest):
            if e.kind == INDEX_ADD and e.index_file.file_name not in replaced \
                    and any(r.data_file in deleted for r in e.index_file.dv_ranges or ()):
                raise StalePlanError("rows of files this commit rewrites were deleted meanwhile (deletion "
                                     "vectors); nothing was committed")

    def _find_own_commit(self, since: int | None, kind: str) -> Snapshot | None:
        """Our snapshot, if an attempt with an unknown outcome landed after all; one that landed
        on an id expire had retired is undone like a verified publish."""
        latest = self.snapshots.latest_id()
        if latest is None:
            return None
        for sid in range((since or 0) + 1, latest + 1):
            try:
                snap = self.snapshots.snapshot(sid)
            except NotFoundError:
                continue
            if snap.commit_user == self.commit_user and snap.commit_kind == kind \
                    and snap.commit_identifier == self.identifier:
                attempt = self._attempts.get(sid)
                if self.on_server:  # the server published it: ours, never undone
                    return snap
                why = self._illegitimate(snap, attempt.base) if attempt is not None else None
                if why is None:
                    return snap
                log.info("own snapshot-%d landed on a retired id (%s)", sid, why)
                self._undo(snap)
        return None

    def _wait(self, attempt: int) -> None:
        wait = min(self.max_retry_wait, self.min_retry_wait * (2 ** (attempt - 1)))
        time.sleep(wait + random.uniform(0, wait))

    def _clean(self, names: list[str], index_names: Sequence[str] = ()) -> None:
        for name in names:
            self.file_io.delete_quietly(f"{self.manifests.dir}/{name}")
        for name in index_names:
            self.file_io.delete_quietly(f"{index_dir(self.table_path)}/{name}")


def _by_total_buckets(entries: list[ManifestEntry]) -> list[list[ManifestEntry]]:
    """The entries grouped by bucket count, each group in commit order (one group as a rule)."""
    groups: dict[int, list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault(e.total_buckets, []).append(e)
    return list(groups.values())


def _check_expected(overwrite: OverwriteSpec, live: list[ManifestEntry]) -> None:
    """Refuse an overwrite that planned on other live files than there are now (StalePlanError:
    its caller plans again on the new latest)."""
    if overwrite.expected is None:
        return
    now = {e.identifier for e in live if overwrite.partitions is None or e.partition in overwrite.partitions}
    if now != overwrite.expected:
        raise StalePlanError("another commit changed the files of the partitions this overwrite replaces "
                             "after it read them; nothing was committed")


def damaged_base(latest: Snapshot, cause: CorruptMetadataError,
                 snapshots: SnapshotManager | None = None) -> LakectlError:
    """The error of a command that would build on a snapshot it cannot read: a lost race
    (ExpiredWhileReadingError, to retry) when ``snapshots`` shows that the snapshot itself was
    expired meanwhile; a lost race with a drop or rename on an object store deleting the table
    object by object (CommitConflictError, exit 4); else damage."""
    lost = lost_race(snapshots, latest, cause) if snapshots is not None else None
    if lost is not None:
        return lost
    if snapshots is not None and not snapshots.file_io.local:
        root = snapshots.dir.rsplit("/snapshot", 1)[0].split("/branch/branch-", 1)[0]
        closer = running_closer(snapshots.file_io, root)
        if closer is not None:
            return CommitConflictError(f"cannot commit: {closer.describe()} is under way on this table ({cause}); "
                                       "nothing was committed")
    return CorruptMetadataError(f"cannot commit on snapshot {latest.id}: {cause}; nothing was committed "
                                "(`lakectl check --repair` removes snapshots that cannot be read)")


def base_entries(manifests: ManifestIO, latest: Snapshot,
                 snapshots: SnapshotManager | None = None) -> list[ManifestEntry]:
    """The live files of the snapshot a write, compaction or overwrite builds on; its missing
    manifest list or manifest stops the command before it writes anything (with
    ``snapshots``: as ExpiredWhileReadingError when the snapshot was expired meanwhile)."""
    try:
        return live_entries(manifests, latest)
    except CorruptMetadataError as e:
        raise damaged_base(latest, e, snapshots) from e


def latest_base_entries(snapshots: SnapshotManager, manifests: ManifestIO,
                        max_retries: int) -> tuple[Snapshot | None, list[ManifestEntry]]:
    """The latest snapshot and its live files (None and none without one), read again on the
    new latest when a concurrent expire retires the snapshot while it is read: for commands
    that decide from the live files what their OVERWRITE replaces (truncate, drop-partition,
    expire-partitions); the commit itself re-plans the overwrite on whatever is latest."""
    def read() -> tuple[Snapshot | None, list[ManifestEntry]]:
        try:
            latest = snapshots.latest()
        except NotFoundError as e:  # the latest id was expired between finding and reading it
            raise ExpiredWhileReadingError(f"the latest snapshot went away while it was read ({e})") from e
        return latest, (base_entries(manifests, latest, snapshots) if latest is not None else [])

    return replan_on_lost_race(max_retries, read, "planning")


def next_watermark(new: int | None, latest: int | None) -> int | None:
    """Paimon's rule for a snapshot's watermark: the max of the commit's and the latest
    snapshot's when both exist, else whichever exists."""
    if new is None or latest is None:
        return latest if new is None else new
    return max(new, latest)


__all__ = ["base_entries", "latest_base_entries", "damaged_base", "CommitMessage", "FileStoreCommit", "IndexChanges", "OverwriteSpec", "APPEND", "COMPACT", "OVERWRITE"]
