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

Every branch is repaired the same way, each in its own ``snapshot/`` and ``tag/`` (main
first, then the branches by name): a branch's ids, hints and tags are its own, so a branch
that is damaged (a torn rollback on it, a stale hint) never costs main a snapshot, and the
other way round. Repairing a branch's view repairs that branch alone.

Before that, on main, the directories that a killed ``branch create`` or ``branch delete``
left (``core/branch.py``: not branches) are removed as ``branch delete`` removes them; an
unfinished ``branch fast-forward`` is reported in ``problems_left`` (only its rerun can
finish it).

Nothing else is deleted: data files, manifests and index files the removed snapshots used stay
for ``remove-orphan-files`` (which keeps whatever a kept snapshot or tag references), and
leftover expire journals are left to the next expire. Run it with the writers stopped: a
commit landing during the repair is not looked at.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from core.branch import MAIN_BRANCH, branch_names, branch_path, leftover_branches
from core.busy import working
from core.errors import CorruptMetadataError, LakectlError
from core.fileio import join
from core.ops.check import CheckResult, Problem, _check_schemas, _check_snapshot, check, interrupted_branch_commands
from core.schema import TableSchema
from core.snapshot import Snapshot
from core.table_handle import TableHandle

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
class BranchRepair:
    """What repair did (or would do) to one branch (main's is spread into RepairResult)."""

    branch: str
    snapshots_removed: list[RemovedSnapshot] = field(default_factory=list)
    tags_removed: list[RemovedTag] = field(default_factory=list)
    latest_after: int | None = None
    earliest_after: int | None = None
    hints_rewritten: list[str] = field(default_factory=list)  # LATEST, EARLIEST
    problems_left: list[Problem] = field(default_factory=list)  # what repair cannot fix
    ok: bool = True  # the branch checks sound afterwards (in a dry run: would)


@dataclass(slots=True)
class RepairResult:
    """Main's repair (or, for a branch's view, that branch's) in the top-level fields, and
    the other branches' in ``branches``; ``ok`` only when all of them are sound."""

    table: str
    branch: str = MAIN_BRANCH
    snapshots_removed: list[RemovedSnapshot] = field(default_factory=list)
    tags_removed: list[RemovedTag] = field(default_factory=list)
    latest_after: int | None = None
    earliest_after: int | None = None
    hints_rewritten: list[str] = field(default_factory=list)  # LATEST, EARLIEST
    problems_left: list[Problem] = field(default_factory=list)  # what repair cannot fix
    ok: bool = True  # the table checks sound afterwards (in a dry run: would)
    dry_run: bool = False
    branches: list[BranchRepair] = field(default_factory=list)
    # Directories an interrupted branch create or delete left (not branches), removed.
    leftovers_removed: list[str] = field(default_factory=list)


class _Health:
    """The first problem of each snapshot and tag, each checked on its own.

    ``check`` reports a broken file once for the whole table; here every snapshot that uses it
    must learn of it, so after each one the caches forget what failed (good reads stay cached,
    which keeps a long history cheap)."""

    def __init__(self, table: TableHandle) -> None:
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


def _snapshot_problems(table: TableHandle, health: _Health) -> dict[int, str | None]:
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


def _plan_tags(table: TableHandle, health: _Health) -> list[RemovedTag]:
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


def _stale_hint(table: TableHandle, name: str, wanted: int, removed_at_that_end: bool) -> bool:
    """A hint is rewritten when it is present but not ``wanted`` (or garbled), and always after
    snapshots were removed at its end, so readers find the new end in two existence checks."""
    if removed_at_that_end:
        return True
    if not table.file_io.exists(join(table.snapshots.dir, name)):
        return False
    current = table.snapshots.latest_hint() if name == "LATEST" else table.snapshots.earliest_hint()
    return current != wanted


def repair(table: TableHandle, dry_run: bool = False) -> RepairResult:
    """Remove the unreadable snapshots and tags of ``table`` (and the readable snapshots older
    than an unreadable one) and rewrite stale hints, on main and then on every branch (on a
    branch's view: that branch only); see the module docstring for the order.

    Args:
        table: the table.
        dry_run: work out and report the same result, change nothing.

    Returns:
        A RepairResult; ``ok`` when the table (every branch) checks sound afterwards.

    Raises:
        CorruptMetadataError: main (or the branch of the view) has snapshots but none of them
            is readable (nothing is changed: repair never turns a table into an empty one).
            Such a branch seen from main is reported in its ``problems_left`` instead.
    """
    table.location.refuse_on_server("check --repair")  # before anything is written
    if dry_run:
        return _repair(table, True)
    with working(table.file_io, table.path, table.name, "check --repair"):  # not moved half-way (core/busy.py)
        return _repair(table, False)


def _repair(table: TableHandle, dry_run: bool) -> RepairResult:
    own = _repair_branch(table, dry_run)
    result = RepairResult(table.name, table.branch, own.snapshots_removed, own.tags_removed, own.latest_after,
                          own.earliest_after, own.hints_rewritten, own.problems_left, own.ok, dry_run)
    if table.is_main:
        _remove_leftovers(table, result)
    for name in branch_names(table) if table.is_main else ():
        try:
            result.branches.append(_repair_branch(table.on_branch(name), dry_run))
        except LakectlError as e:  # a branch that does not open, or has no readable snapshot
            problem = Problem("branch", branch_path(table.path, name), str(e), name)
            result.branches.append(BranchRepair(name, problems_left=[problem], ok=False))
    result.ok = not result.problems_left and all(b.ok for b in result.branches)
    return result


def _remove_leftovers(table: TableHandle, result: RepairResult) -> None:
    """Clear what killed branch creates and deletes left, as the next ``branch delete`` of the
    name would; an interrupted fast-forward only its rerun can finish (reported, kept)."""
    from core.ops.branches import delete_branch

    result.leftovers_removed = leftover_branches(table)
    if not result.dry_run:
        for name in result.leftovers_removed:
            log.info("removing %s, left by an interrupted branch create or delete", branch_path(table.path, name))
            delete_branch(table, name)
    # A dry run's leftovers are still there but would go; the fast-forward stays either way.
    result.problems_left.extend(p for p in interrupted_branch_commands(table)
                                if p.kind == "fast-forward" or not result.dry_run)


def _repair_branch(table: TableHandle, dry_run: bool) -> BranchRepair:
    """Repair one branch (main or another) in its own directories."""
    health = _Health(table)
    status = _snapshot_problems(table, health)
    result = BranchRepair(table.branch)
    if status and all(why is not None for why in status.values()):
        first = min(status)
        where = table.name if table.is_main else f"branch {table.branch} of {table.name}"
        raise CorruptMetadataError(f"cannot repair {where}: none of its {len(status)} snapshots can be read "
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
    result.problems_left = [replace(p, branch=table.branch) for p in health.schema_problems]
    if not dry_run:
        _carry_out(table, result, newer, older)
        _add_unforeseen(table, result)
    result.ok = not result.problems_left
    return result


def _carry_out(table: TableHandle, result: BranchRepair, newer: list[RemovedSnapshot],
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
        sm.write_earliest_hint(result.earliest_after, rewind=True)
    for tag in result.tags_removed:
        log.info("removing tag %s of %s (%s)", tag.tag, table.name, tag.reason)
        fio.delete(table.tags.path(tag.tag))


def _add_unforeseen(table: TableHandle, result: BranchRepair) -> None:
    """Check the repaired branch; anything the plan did not foresee (a file broken while we
    worked, say) is reported too rather than hidden behind ``ok``."""
    known = {(p.kind, p.path) for p in result.problems_left}
    for p in check(table, all_branches=False).problems:
        if (p.kind, p.path) not in known:
            result.problems_left.append(p)


__all__ = ["BranchRepair", "RemovedSnapshot", "RemovedTag", "RepairResult", "repair"]
