"""check --repair: make a damaged table sound again, deleting only snapshot and tag files.

A crash of an older lakectl (or a hand) can leave snapshots or tags whose schema, manifest
lists, manifests, data, changelog or index files are gone or corrupt, an unparsable snapshot
JSON, or stale hints. Readers assume the snapshot ids run without gaps from EARLIEST to
LATEST, so repair keeps the longest contiguous run of readable snapshots that ends at the
newest readable one and removes every snapshot outside it:

(1) the ones newer than the run (all unreadable), newest first, then ``LATEST`` is written;
(2) the ones older than the run, oldest first, then ``EARLIEST`` is written;
(3) the tags whose snapshot cannot be read.

This is the order of rollback (1) and expire (2), so a kill of repair itself leaves a
contiguous run whose every snapshot is readable, and a rerun finishes the job. Readable tags
stay even when their snapshot is removed: a tag is a whole snapshot on its own.

Nothing else is deleted: data files, manifests and index files the removed snapshots used stay
for ``remove-orphan-files`` (which keeps whatever a kept snapshot or tag references), and
leftover expire journals are left to the next expire. Run it with the writers stopped: a
commit landing during the repair is not looked at.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from core.errors import CorruptMetadataError, LakectlError
from core.fileio import join
from core.ops.check import CheckResult, Problem, _check_schemas, _check_snapshot, check
from core.schema import TableSchema
from core.snapshot import Snapshot
from core.table import Table

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RemovedSnapshot:
    snapshot_id: int
    reason: str  # "unreadable: <first problem>" or "older than unreadable snapshot N"


@dataclass(frozen=True, slots=True)
class RemovedTag:
    tag: str
    reason: str


@dataclass(slots=True)
class RepairResult:
    table: str
    snapshots_removed: list[RemovedSnapshot] = field(default_factory=list)
    tags_removed: list[RemovedTag] = field(default_factory=list)
    latest_after: int | None = None
    earliest_after: int | None = None
    hints_rewritten: list[str] = field(default_factory=list)  # LATEST, EARLIEST
    problems_left: list[Problem] = field(default_factory=list)  # what repair cannot fix
    ok: bool = True  # the table checks sound afterwards (in a dry run: would)
    dry_run: bool = False


class _Health:
    """The first problem of each snapshot and tag, each checked on its own.

    ``check`` reports a broken file once for the whole table; here every snapshot that uses it
    must learn of it, so after each one the caches forget what failed (good reads stay cached,
    which keeps a long history cheap)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        scratch = CheckResult(table.name)
        self.schemas: dict[int, TableSchema] = _check_schemas(table, scratch)
        self.schema_problems: list[Problem] = scratch.problems
        self._sizes: dict[str, int] = {}
        self._manifests: dict[str, list | None] = {}

    def first_problem(self, snap: Snapshot, path: str) -> Problem | None:
        scratch = CheckResult(self.table.name)
        _check_snapshot(self.table, snap, path, self.schemas, scratch, self._sizes, self._manifests)
        self._forget_failures(scratch.problems)
        return scratch.problems[0] if scratch.problems else None

    def _forget_failures(self, problems: list[Problem]) -> None:
        for key in [k for k, v in self._manifests.items() if v is None]:
            del self._manifests[key]
        for p in problems:
            self._sizes.pop(p.path, None)


def _describe(p: Problem) -> str:
    return f"unreadable: {p.kind} {p.path} {p.detail}"


def _snapshot_problems(table: Table, health: _Health) -> dict[int, str | None]:
    """Snapshot id -> None when readable, else why not."""
    out: dict[int, str | None] = {}
    for sid in table.snapshots.list_ids():
        path = table.snapshots.path(sid)
        try:
            snap = table.snapshots.snapshot(sid)
        except (LakectlError, OSError) as e:
            out[sid] = _describe(Problem("snapshot", path, str(e)))
            continue
        if snap.id != sid:
            out[sid] = _describe(Problem("snapshot", path, f"holds id {snap.id}"))
            continue
        problem = health.first_problem(snap, path)
        out[sid] = None if problem is None else _describe(problem)
    return out


def _plan_snapshots(status: dict[int, str | None]) -> tuple[list[RemovedSnapshot], list[RemovedSnapshot], int, int]:
    """(newer ones to remove, newest first; older ones to remove, oldest first; first kept; last kept)."""
    readable = [sid for sid, why in status.items() if why is None]
    latest = readable[-1]
    earliest = latest
    while status.get(earliest - 1, "missing") is None:
        earliest -= 1
    newer = [RemovedSnapshot(sid, status[sid] or "") for sid in sorted(status, reverse=True) if sid > latest]
    blocker = earliest - 1  # unreadable, or a gap in the ids
    older_reason = (f"older than unreadable snapshot {blocker}" if blocker in status
                    else f"older than missing snapshot {blocker}")
    older = [RemovedSnapshot(sid, status[sid] or older_reason) for sid in sorted(status) if sid < earliest]
    return newer, older, earliest, latest


def _plan_tags(table: Table, health: _Health) -> list[RemovedTag]:
    out = []
    for name in table.tags.names():
        path = table.tags.path(name)
        try:
            tag = table.tags.tag(name)
        except (LakectlError, OSError) as e:
            out.append(RemovedTag(name, _describe(Problem("tag", path, str(e)))))
            continue
        problem = health.first_problem(tag.snapshot, path)
        if problem is not None:
            out.append(RemovedTag(name, _describe(problem)))
    return out


def _stale_hint(table: Table, name: str, wanted: int, removed_at_that_end: bool) -> bool:
    """A hint is rewritten when it is present but not ``wanted`` (or garbled), and always after
    snapshots were removed at its end, so readers find the new end in two existence checks."""
    if removed_at_that_end:
        return True
    if not table.file_io.exists(join(table.snapshots.dir, name)):
        return False
    current = table.snapshots.latest_hint() if name == "LATEST" else table.snapshots.earliest_hint()
    return current != wanted


def repair(table: Table, dry_run: bool = False) -> RepairResult:
    """Remove the unreadable snapshots and tags of ``table`` (and the readable snapshots older
    than an unreadable one) and rewrite stale hints; see the module docstring for the order.

    Args:
        table: the table.
        dry_run: work out and report the same result, change nothing.

    Returns:
        A RepairResult; ``ok`` when the table checks sound afterwards.

    Raises:
        CorruptMetadataError: the table has snapshots but none of them is readable (nothing
            is changed: repair never turns a table into an empty one).
    """
    health = _Health(table)
    status = _snapshot_problems(table, health)
    result = RepairResult(table.name, dry_run=dry_run)
    if status and all(why is not None for why in status.values()):
        first = min(status)
        raise CorruptMetadataError(f"cannot repair {table.name}: none of its {len(status)} snapshots can be read "
                                   f"(snapshot {first}: {status[first]}); nothing was changed")
    tags = _plan_tags(table, health)
    newer, older = [], []
    if status:
        newer, older, result.earliest_after, result.latest_after = _plan_snapshots(status)
        for name, wanted, removed in (("LATEST", result.latest_after, newer),
                                      ("EARLIEST", result.earliest_after, older)):
            if _stale_hint(table, name, wanted, bool(removed)):
                result.hints_rewritten.append(name)
    result.snapshots_removed = newer + older
    result.tags_removed = tags
    # What is left once the plan is carried out: repair keeps only readable snapshots and tags
    # in a contiguous run, so only broken schema files no kept snapshot uses remain.
    result.problems_left = list(health.schema_problems)
    if not dry_run:
        _carry_out(table, result, newer, older)
        _add_unforeseen(table, result)
    result.ok = not result.problems_left
    return result


def _carry_out(table: Table, result: RepairResult, newer: list[RemovedSnapshot],
               older: list[RemovedSnapshot]) -> None:
    fio, sm = table.file_io, table.snapshots
    for removed in newer:  # newest first: a kill leaves a contiguous run below
        log.info("removing snapshot %d of %s (%s)", removed.snapshot_id, table.name, removed.reason)
        fio.delete(sm.path(removed.snapshot_id))
    if "LATEST" in result.hints_rewritten:
        fio.overwrite_hint(join(sm.dir, "LATEST"), str(result.latest_after))
    for removed in older:  # oldest first, as expire retires them
        log.info("removing snapshot %d of %s (%s)", removed.snapshot_id, table.name, removed.reason)
        fio.delete(sm.path(removed.snapshot_id))
    if "EARLIEST" in result.hints_rewritten:
        sm.write_earliest_hint(result.earliest_after)
    for tag in result.tags_removed:
        log.info("removing tag %s of %s (%s)", tag.tag, table.name, tag.reason)
        fio.delete(table.tags.path(tag.tag))


def _add_unforeseen(table: Table, result: RepairResult) -> None:
    """Check the repaired table; anything the plan did not foresee (a file broken while we
    worked, say) is reported too rather than hidden behind ``ok``."""
    known = {(p.kind, p.path) for p in result.problems_left}
    for p in check(table).problems:
        if (p.kind, p.path) not in known:
            result.problems_left.append(p)


__all__ = ["RemovedSnapshot", "RemovedTag", "RepairResult", "repair"]
