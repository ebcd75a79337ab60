"""``lakectl maintain``: bring each table to the state its own Paimon options ask for.

Per table: measure its health (``core.health``), plan the verbs its options and the policy
call for, take its lease (``core.lease``) and run the plan in Paimon's safe order --
compaction, manifest compaction, snapshot expiry (which also expires consumers by ``consumer.expiration-time``),
partition expiry, tag expiry, then orphan removal last, so that orphans never race files a
compaction or expiry is still writing or deleting. Every verb is an existing operation of
``core.ops``; this module only decides which to call.

Each branch of a table (``branch/branch-NAME/``) is maintained after main, under the same
lease, by its own schema's options: its compaction, manifest compaction, snapshot and consumer
expiry, partition expiry and tag expiry, each reported as its own ``TableReport`` (``branch``)
in the main report's ``branches``. Orphan removal runs once per table, after every branch,
since a file is an orphan only when no branch references it (Paimon's ``RemoveOrphanFiles``).

One table's failure is recorded and the run goes on with the next table; one branch's failure
is recorded and the run goes on with the table's next branch (orphan removal then waits for a
run in which every branch finished).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from core import branch_merge
from core.branch import MAIN_BRANCH, branch_names
from core.errors import CommitConflictError, LakectlError, NotFoundError, UsageError
from core.health import Health, measure
from core.ops.full_compaction import full_compaction_reason
from core.ops.orphans import orphan_age_seconds
from core import lease as leases
from core.table_handle import TableHandle

VERBS = ("compact", "compact-manifests", "expire", "expire-partitions", "expire-tags", "remove-orphan-files")


@dataclass(frozen=True, slots=True)
class Policy:
    """What maintain may do to a table; the TOML config's defaults and table patterns build it."""
    skip: bool = False                       # leave the table alone
    skip_verbs: frozenset[str] = frozenset()
    orphan_age: str = "1d"                   # Paimon's default: younger files may be in-flight writes
    orphan_force: bool = False               # allow an orphan_age under the floor: no writer runs
    full_compaction: bool = False            # compact every bucket in full, whatever the triggers
    # append tables: compact at this many small files (None: the table's compaction.min.file-num, 5)
    small_files_trigger: int | None = None
    deletion_vector_ratio_trigger: float = 0.2


def with_overrides(policy: Policy, overrides: dict[str, Any]) -> Policy:
    """``policy`` with the fields ``overrides`` names (``skip_verbs`` given as any iterable)."""
    fields = {k: frozenset(v) if k == "skip_verbs" else v for k, v in overrides.items()}
    return dataclasses.replace(policy, **fields)


def policy_for(name: str, default: Policy, patterns: Iterable[tuple[str, dict[str, Any]]]) -> Policy:
    """The default overridden by every pattern (``db.*``, ``*.events_*``) that matches ``name``,
    in order, so later patterns win."""
    policy = default
    for pattern, overrides in patterns:
        if fnmatch.fnmatchcase(name, pattern):
            policy = with_overrides(policy, overrides)
    return policy


@dataclass(frozen=True, slots=True)
class Action:
    verb: str
    reason: str
    full: bool = False  # compact: full compaction rather than the triggered buckets


def plan_table(table: TableHandle, health: Health, policy: Policy) -> list[Action]:
    """The verbs the table needs, in the order they run."""
    if policy.skip:
        return []
    opts = table.schema.options
    actions = [a for a in (_compaction(table, health, policy), _manifest_compaction(health)) if a is not None]
    # A REST table: the verbs it refuses are planned unconditionally, so that the run lists
    # them as not run with the reason (``_run_action``) rather than asking what they would do.
    on_server = table.location.server_owns_chain
    # Each verb only when running it now would change something (its own metadata-only
    # check), so that a recommendation goes quiet once the verb has run.
    if on_server:
        actions.append(Action("expire", _ON_SERVER))
    elif _expire_due(table):
        retain_min = int(opts.get("snapshot.num-retained.min", "10"))
        actions.append(Action("expire", f"{health.snapshots} snapshots, snapshot.num-retained.min {retain_min}, "
                                        f"snapshot.time-retained {opts.get('snapshot.time-retained', '1h')}"))
    expiring = _partitions_due(table) if "partition.expiration-time" in opts and table.schema.partition_keys else 0
    if expiring:
        count = "partitions" if expiring < 0 else f"{expiring} partition(s)"
        actions.append(Action("expire-partitions", f"{count} past partition.expiration-time "
                                                   f"{opts['partition.expiration-time']} "
                                                   f"({opts.get('partition.expiration-strategy', 'values-time')})"))
    if on_server:
        actions.append(Action("expire-tags", _ON_SERVER))
    elif health.tags and _tags_due(table):
        actions.append(Action("expire-tags", f"{health.tags} tags (TTL)"))
    actions.append(Action("remove-orphan-files", _ON_SERVER if on_server else
                          f"files unreferenced for {policy.orphan_age}"))
    return [a for a in actions if a.verb not in policy.skip_verbs]


def _expire_due(table: TableHandle) -> bool:
    from core.ops.expire import expire_due

    return expire_due(table)


def _partitions_due(table: TableHandle) -> int:
    """How many partitions expire-partitions would drop now (its own dry run: manifests, no
    data). -1 for a table it refuses (unreadable partition values, a bad option): planned
    anyway, so that the run reports why at that verb, after the verbs before it."""
    from core.ops.partitions import expire_partitions

    try:
        return len(expire_partitions(table, dry_run=True).partitions)
    except UsageError:
        return -1


def _tags_due(table: TableHandle) -> bool:
    from core.ops.tags import expire_tags

    return bool(expire_tags(table, dry_run=True))


def check_policy(policy: Policy, actions: list[Action]) -> None:
    """Refuse a plan whose orphan removal would go under the age floor without ``orphan_force``.
    The config check refuses such a section; this catches what only the patterns' combination
    says (a later pattern setting ``orphan-force = false`` alone), before the table is touched."""
    if any(a.verb == "remove-orphan-files" for a in actions):
        orphan_age_seconds(policy.orphan_age, force=policy.orphan_force, name="policy orphan-age",
                           force_name="orphan-force = true")


def _compaction(table: TableHandle, h: Health, policy: Policy) -> Action | None:
    if h.files == 0:
        return None
    if policy.full_compaction:
        return Action("compact", "full compaction by policy", full=True)
    if h.postponed_files:
        # Their rows are invisible to batch readers until the postpone compaction (core.postpone).
        return Action("compact", f"{h.postponed_files} postponed files wait in bucket-postpone/ "
                                 "(postpone compaction)")
    due = full_compaction_reason(table)
    # Past the interval a table settled in full would be compacted again for nothing, run after run.
    if due is not None and _compaction_due(table, full=True):
        return Action("compact", due, full=True)
    if h.deletion_vector_ratio > policy.deletion_vector_ratio_trigger:
        return Action("compact", f"{h.deletion_vector_ratio:.0%} of files carry deletion vectors", full=True)
    # At the trigger Paimon's universal compaction may still pick nothing (the size ratio and
    # amplification rules): planned only when its own dry run would compact a bucket.
    if h.has_primary_key and h.max_sorted_runs >= h.sorted_run_trigger and _compaction_due(table, full=False):
        return Action("compact", f"{h.max_sorted_runs} sorted runs in a bucket "
                                 f"(num-sorted-run.compaction-trigger {h.sorted_run_trigger})")
    trigger = policy.small_files_trigger
    if trigger is None:  # Paimon's append compaction waits for this many small files
        trigger = max(1, table.schema.core_options.compaction_min_file_num)
    # Counted over the table, the small files may lie in buckets a full compaction leaves
    # alone (fewer than three in a bucketed one, as Paimon): planned only when it would act.
    if not h.has_primary_key and h.small_files >= trigger and _compaction_due(table, full=True):
        return Action("compact", f"{h.small_files} small files (target-file-size {h.target_file_size}, "
                                 f"trigger {trigger})", full=True)
    return None


def _said(e: Exception) -> str:
    """A table's failure as its report carries it: lakectl's own message, or what the system
    said of a file (no exception class names: the report is read by people and alerts)."""
    if isinstance(e, OSError) and not isinstance(e, LakectlError) and e.strerror:
        return f"{e.strerror}: {e.filename}" if e.filename else e.strerror
    return str(e)


def _compaction_due(table: TableHandle, *, full: bool) -> bool:
    """Whether compaction would rewrite a bucket: its plan, from metadata alone (running the
    compaction's dry run would load its data libraries, most of a dry run's time)."""
    from core.ops.compact_planning import plan
    from core.replan import replan_on_lost_race

    tasks = replan_on_lost_race(table.schema.core_options.commit_max_retries,
                                lambda: plan(table, full=full).tasks, "compaction plan")
    return len(tasks) > 0


def _manifest_compaction(h: Health) -> Action | None:
    """More small manifests than a commit's merge leaves (manifest.merge-min-count and the
    delta): a table written before lakectl merged them, or by a writer that does not."""
    if h.small_manifests > max(h.manifest_merge_min_count, 1) + 1:
        return Action("compact-manifests", f"{h.small_manifests} small manifests "
                                           f"(manifest.merge-min-count {h.manifest_merge_min_count})")
    return None


@dataclass(frozen=True, slots=True)
class Recommendation:
    problem: str
    command: str  # the lakectl command that fixes it


def recommendations(table: TableHandle, health: Health, policy: Policy = Policy()) -> list[Recommendation]:
    """What ``lakectl health`` recommends: exactly the verbs maintain would run on the table
    under ``policy``, each as the command that runs it alone. Orphan removal, which maintain
    always runs, is left out: health reads metadata only and cannot see orphans."""
    return [Recommendation(a.reason, command_for(table.name, a, table.branch))
            for a in plan_table(table, health, policy) if a.verb != "remove-orphan-files"
            and not (a.verb in _REWRITING_VERBS and branch_merge.enabled(table.schema))]


def command_for(name: str, action: Action, branch: str = MAIN_BRANCH) -> str:
    """The lakectl command line that runs ``action`` on table ``name`` (on ``branch``) by itself."""
    return (f"lakectl {action.verb} {name}" + ("" if branch == MAIN_BRANCH else f" --branch {branch}")
            + (" --full" if action.full else ""))


@dataclass
class ActionReport:
    verb: str
    reason: str
    done: bool
    detail: dict[str, Any] = field(default_factory=dict)
    bytes_freed: int = 0
    error: str | None = None


@dataclass
class TableReport:
    table: str
    status: str  # "done", "planned" (dry run), "skipped", "failed"
    reason: str | None = None  # why skipped / the failure
    actions: list[ActionReport] = field(default_factory=list)
    bytes_freed: int = 0
    duration_seconds: float = 0.0
    health: Health | None = None
    finished_at: float | None = None  # epoch seconds of a successful maintenance
    started_at: float | None = None   # epoch seconds the lease was taken (None: never held)
    released_at: float | None = None  # epoch seconds the lease was given back
    branch: str = MAIN_BRANCH
    # main's report: one report per branch of the table, maintained under the same lease
    # (None: the run did not get to the branches: the table was skipped, or failed before)
    branches: list["TableReport"] | None = None


# Orphan paths a report lists (their count is always there): a dry run shows the first few.
ORPHAN_PATHS_SHOWN = 10


def _detail(result: Any) -> dict[str, Any]:
    """What the command prints for ``result``, as the action's detail: the same fields, table
    and branch included, and values (``snapshots_expired`` is expire's list of ids); lakectl
    prints them under the JSON vocabulary's names (lakectl.output.JSON_NAMES), as the command does."""
    out = dataclasses.asdict(result)
    if "paths" in out:  # remove-orphan-files: its count, and the first few of the files
        out["paths"] = list(out["paths"])[:ORPHAN_PATHS_SHOWN]
    return out


# The verbs that rewrite or remove data files, which a branch-merge.enabled table refuses.
_REWRITING_VERBS = frozenset({"compact", "compact-manifests", "expire-partitions"})


def _run_action(table: TableHandle, action: Action, policy: Policy, engine_settings: Any,
                dry_run: bool = False) -> ActionReport:
    """Call the existing operation for one verb (with ``dry_run``: what it would do); bytes
    freed as the operation reports them."""
    rep = ActionReport(action.verb, action.reason, done=not dry_run)
    if table.location.server_owns_chain and action.verb in _SERVER_REFUSED:
        # Skipped, not failed: a REST catalog has no call for the verb (core/warehouse.py).
        from core.warehouse import SERVER_REFUSALS

        rep.done, rep.error = False, f"not run: {SERVER_REFUSALS[action.verb]}"
        return rep
    if action.verb in _REWRITING_VERBS and branch_merge.enabled(table.schema):
        # Skipped, not failed: the table's own option forbids the rewrite (core/branch_merge.py).
        rep.done, rep.error = False, f"not run: {branch_merge.refusal(table.name, action.verb)}"
        return rep
    if action.verb == "compact":
        from core.ops.compact import compact

        r = compact(table, full=action.full, engine_settings=engine_settings, dry_run=dry_run)
        rep.detail = _detail(r)
        rep.bytes_freed = 0  # compaction rewrites: the old files are freed by expire, not now
    elif action.verb == "compact-manifests":
        from core.ops.compact_manifests import compact_manifests

        rep.detail = _detail(compact_manifests(table, dry_run=dry_run))
    elif action.verb == "expire":
        from core.ops.expire import expire_snapshots

        r = expire_snapshots(table, dry_run=dry_run)
        rep.detail = _detail(r)
        rep.bytes_freed = 0 if dry_run else r.bytes_deleted
    elif action.verb == "expire-partitions":
        from core.ops.partitions import expire_partitions

        rep.detail = _detail(expire_partitions(table, dry_run=dry_run))
    elif action.verb == "expire-tags":
        from core.ops.tags import ExpireTagsResult, expire_tags

        rep.detail = _detail(ExpireTagsResult(table.name, table.branch, expire_tags(table, dry_run=dry_run), dry_run))
    elif action.verb == "remove-orphan-files":
        from core.ops.orphans import remove_orphan_files

        r = remove_orphan_files(table, older_than=policy.orphan_age, force=policy.orphan_force, dry_run=dry_run)
        rep.detail = _detail(r)
        rep.bytes_freed = 0 if dry_run else r.bytes
    return rep


# How long a lease lasts without renewal: a crashed run on another host blocks the table this
# long. A live run renews it every third of this, however long its work takes.
LEASE_SECONDS = 600.0

# on_step(table, verbs done, verbs planned, what is running now)
StepCallback = Callable[[str, int, int, str], None]


ORPHANS = "remove-orphan-files"
# The verbs a REST table refuses (TableLocation.refuse_on_server): skipped with the reason.
_SERVER_REFUSED = frozenset({"expire", "expire-tags", ORPHANS})
_ON_SERVER = "the REST catalog's server owns the snapshot chain"


@dataclass
class _BranchWork:
    """One branch's part of a table's run: its handle (None when it could not be planned), its
    report, and the verbs its own options call for (orphan removal is the table's, once)."""
    handle: TableHandle | None
    report: TableReport
    actions: list[Action]
    planning_seconds: float = 0.0


def _plan_branch(table: TableHandle, name: str, policy: Policy) -> _BranchWork:
    """Measure branch ``name`` and plan it by its own schema's options under the table's policy."""
    start = time.monotonic()
    rep = TableReport(table.name, "done", branch=name)
    try:
        handle = table.on_branch(name)
        rep.health = measure(handle)
        actions = [a for a in plan_table(handle, rep.health, policy) if a.verb != ORPHANS]
    except NotFoundError as e:  # deleted since the branches were listed: not a failure
        return _BranchWork(None, _finish(rep, start, "skipped", f"the branch went away meanwhile: {e}"), [])
    except (LakectlError, OSError) as e:
        return _BranchWork(None, _finish(rep, start, "failed", _said(e)), [])
    return _BranchWork(handle, rep, actions, time.monotonic() - start)


def maintain_table(table: TableHandle, policy: Policy, *, dry_run: bool = False, engine_settings: Any = None,
                   holder: str | None = None, lease_seconds: float = LEASE_SECONDS,
                   on_step: StepCallback | None = None) -> TableReport:
    """Plan and (unless ``dry_run``) run the table's maintenance under its lease, renewed while
    the work runs: main's verbs, then each branch's by the branch's own options (each branch
    its own report in ``branches``), then orphan removal once for the whole table. Never raises
    for the table's own errors: they are the report's.
    ``engine_settings`` (the --engine choice) goes to compaction, which sends big compactions to
    Spark under ``auto``. ``on_step`` hears each verb start (progress bars)."""
    start = time.monotonic()
    rep = TableReport(table.name, "done")
    try:
        rep.health = measure(table)
        actions = plan_table(table, rep.health, policy)
        check_policy(policy, actions)
        names = [] if policy.skip else branch_names(table)
    except NotFoundError as e:  # dropped or renamed since the tables were listed: not a failure
        return _finish(rep, start, "skipped", f"the table went away meanwhile: {e}")
    except (LakectlError, OSError) as e:
        return _finish(rep, start, "failed", _said(e))
    if policy.skip:
        return _finish(rep, start, "skipped", "policy skips the table")
    # Main's verbs, then each branch's, then orphan removal once: an orphan is a file no branch
    # references, so it is the table's verb and runs after every branch has expired its own.
    own = [a for a in actions if a.verb != ORPHANS]
    orphans = [a for a in actions if a.verb == ORPHANS]
    branches = [_plan_branch(table, name, policy) for name in names]
    if dry_run:
        # What each verb would do now, from each command's own dry run (a later verb's
        # figures do not include what an earlier one would change first).
        rep.branches = [b.report for b in branches]
        failure = _dry_run(table, rep, own, policy, engine_settings)
        for b in branches:
            if b.handle is not None:
                t0 = time.monotonic()
                why = _dry_run(b.handle, b.report, b.actions, policy, engine_settings)
                _finish(b.report, t0, "failed" if why else "planned", why, spent=b.planning_seconds)
        if failure is None:
            failure = _dry_run(table, rep, orphans, policy, engine_settings)
        return _finish(rep, start, "failed" if failure else "planned", failure)
    try:
        held = leases.acquire(table.file_io, table.path, holder=holder or leases.new_holder(),
                              ttl_seconds=lease_seconds)
        holding = None if held is not None else leases.holder_of(table.file_io, table.path)
    except FileNotFoundError:  # the lease never re-creates a dropped or renamed table's directory
        return _finish(rep, start, "skipped", "the table went away meanwhile (dropped or renamed)")
    except (LakectlError, OSError) as e:
        return _finish(rep, start, "failed", f"lease: {_said(e)}")
    if held is None:
        return _finish(rep, start, "skipped", _held_message(holding))
    rep.started_at = time.time()
    rep.branches = [b.report for b in branches]
    steps = _Steps(on_step, table.name, len(actions) + sum(len(b.actions) for b in branches))
    stop: tuple[str, str] | None = None
    try:
        with leases.kept(table.file_io, held, lease_seconds) as keeper, _stamp_release(rep):
            stop = _run_verbs(table, rep, own, policy, engine_settings, keeper, steps, left_after=orphans)
            for b in branches:  # a failure of main's own verbs leaves its branches' histories to maintain
                if b.handle is None:
                    continue
                t0 = time.monotonic()
                ended = _run_verbs(b.handle, b.report, b.actions, policy, engine_settings, keeper, steps)
                b.report.bytes_freed = sum(a.bytes_freed for a in b.report.actions)
                _finish(b.report, t0, *(ended or ("done", None)), spent=b.planning_seconds)
            unfinished = [b.report.branch for b in branches if b.report.status == "failed"]
            if stop is None and unfinished and orphans:
                # Orphan removal waits for a run in which every branch finished (as it waits for
                # main's verbs): later verbs assume the earlier ones finished. The lease is checked.
                stop = _run_verbs(table, rep, [], policy, engine_settings, keeper, steps, left_after=orphans)
                if stop is None:
                    rep.actions.append(ActionReport(
                        ORPHANS, orphans[0].reason, done=False,
                        error=f"not run: branch {', '.join(unfinished)} failed; orphan removal waits for a run "
                              f"in which every branch finishes"))
            elif stop is None:
                stop = _run_verbs(table, rep, orphans, policy, engine_settings, keeper, steps)
    finally:
        if rep.released_at is None:  # the lease was never kept (kept() failed to start)
            rep.released_at = time.time()
    rep.bytes_freed = sum(a.bytes_freed for a in rep.actions)
    for b in branches:  # maintained under the table's lease
        b.report.started_at, b.report.released_at = rep.started_at, rep.released_at
        if b.handle is not None and b.report.status == "done":
            b.report.finished_at = rep.released_at
            with contextlib.suppress(LakectlError, OSError):
                b.report.health = measure(b.handle)  # after: what the metrics report
    if stop is not None:
        return _finish(rep, start, *stop)
    rep.finished_at = time.time()
    try:
        rep.health = measure(table)  # after: what the metrics report
    except (LakectlError, OSError):
        pass
    return _finish(rep, start, "done", None)


class _Steps:
    """``on_step`` over a whole table's verbs, main's and its branches' (one progress bar)."""

    def __init__(self, on_step: StepCallback | None, name: str, total: int) -> None:
        self.on_step, self.name, self.total, self.done = on_step, name, total, 0

    def __call__(self, table: TableHandle, verb: str) -> None:
        if self.on_step is not None:
            self.on_step(self.name, self.done, self.total, verb if table.is_main else f"{verb} (branch {table.branch})")
        self.done += 1


def _dry_run(table: TableHandle, rep: TableReport, actions: list[Action], policy: Policy,
             engine_settings: Any) -> str | None:
    """Each verb's own dry run into ``rep.actions``; the failure, or None."""
    try:
        for a in actions:
            rep.actions.append(_run_action(table, a, policy, engine_settings, dry_run=True))
    except (LakectlError, OSError) as e:
        return f"dry run: {_said(e)}"
    return None


def _run_verbs(table: TableHandle, rep: TableReport, actions: list[Action], policy: Policy, engine_settings: Any,
               keeper: leases.Keeper, steps: _Steps, *, left_after: list[Action] = ()) -> tuple[str, str] | None:
    """Run ``actions`` on ``table`` (main or a branch) into ``rep.actions``, checking the lease
    before each and after the last; None when all ran, else the (status, reason) they stopped
    with (``left_after``: verbs of the table that would have run next, for a lost lease's reason)."""
    for i, action in enumerate([*actions, None]):
        # Before each verb and after the last: a run stopped longer than its lease (Ctrl-Z,
        # a paused VM) may find the table taken over by another run, and leaves it to it.
        try:
            lost_to = keeper.lost_to()
        except (LakectlError, OSError) as e:
            return "failed", f"lease: {_said(e)}"
        if lost_to is not None:
            rep.bytes_freed = sum(a.bytes_freed for a in rep.actions)
            if _gone(table):  # dropped or renamed (its lease went with it): not a failure
                return "skipped", _gone_message(table)
            return "failed", _lost_message(lost_to, [*actions[i:], *left_after])
        if action is None:
            return None
        steps(table, action.verb)
        try:
            rep.actions.append(_run_action(table, action, policy, engine_settings))
        except (LakectlError, OSError) as e:
            # Stop: later verbs (orphans above all) assume the earlier ones finished.
            rep.actions.append(ActionReport(action.verb, action.reason, done=False,
                                            error=_said(e)))
            rep.bytes_freed = sum(a.bytes_freed for a in rep.actions)
            if isinstance(e, (CommitConflictError, NotFoundError)) or _gone(table):
                # A lost race (another command's rewrite, the table renamed or dropped, the
                # branch deleted): nothing was changed, and the next run maintains what is there then.
                return "skipped", f"{action.verb} lost a race: {e}"
            return "failed", f"{action.verb}: {e}"
    return None


@contextlib.contextmanager
def _stamp_release(rep: TableReport):
    """Record ``released_at`` just before the lease is given back (the context inside
    ``leases.kept``), so that another run's ``lease_taken_at`` is never before it."""
    try:
        yield
    finally:
        rep.released_at = time.time()


def _gone(table: TableHandle) -> bool:
    """Has the table been dropped or renamed (or the branch deleted) since the run began (no
    schema file left)?"""
    try:
        return not table.schemas.list_ids()
    except (LakectlError, OSError):
        return False


def _gone_message(table: TableHandle) -> str:
    if table.is_main:
        return "the table went away meanwhile (dropped or renamed)"
    return "the branch went away meanwhile (deleted, or its table dropped or renamed)"


def _held_message(holding: leases.Holder | None) -> str:
    if holding is None:  # released between our try and our look
        return "another maintain run held the table's lease; the next run takes the table"
    return (f"another maintain run holds the table's lease: {holding}; a run after that expiry takes it over "
            f"(at once if that process has died on this host)")


def _lost_message(holder: str, left: list[Action]) -> str:
    verbs_left = ", ".join(a.verb for a in left) or "none"
    return (f"lease lost to {holder}: this run was stopped past its lease and another run took the table "
            f"over; verbs not run: {verbs_left}")


def _finish(rep: TableReport, start: float, status: str, reason: str | None, *, spent: float = 0.0) -> TableReport:
    rep.status, rep.reason = status, reason
    rep.duration_seconds = time.monotonic() - start + spent
    return rep


def overdue_first(names: list[str], locate: Callable[[str], TableHandle],
                  last_success: dict[str, float]) -> list[str]:
    """The order a run with a time budget starts tables in, so that every table is reached
    within a few runs: the oldest last success first (never maintained: before all), then the
    oldest earliest snapshot (the most expiry waiting; two small reads per table), then name."""
    def earliest_time(name: str) -> float:
        try:
            table = locate(name)
            earliest = table.snapshots.earliest_id()
            return table.snapshots.snapshot(earliest).time_millis / 1000 if earliest is not None else float("inf")
        except (LakectlError, OSError):
            return float("-inf")  # cannot tell: early, so that its problem shows
    return sorted(names, key=lambda n: (last_success.get(n, float("-inf")), earliest_time(n), n))


def maintain(names: list[str], open_table: Callable[[str], TableHandle], policy_of: Callable[[str], Policy], *,
             dry_run: bool = False, engine_settings: Any = None, parallel: int = 1, time_budget: float | None = None,
             on_done: Callable[[TableReport], None] | None = None,
             on_step: StepCallback | None = None) -> list[TableReport]:
    """Maintain the named tables, ``parallel`` at a time; with ``time_budget`` (seconds), tables
    not started when it runs out are reported skipped. One run uses one lease holder name."""
    holder = leases.new_holder()
    deadline = None if time_budget is None else time.monotonic() + time_budget

    def one(name: str) -> TableReport:
        if deadline is not None and time.monotonic() >= deadline:
            rep = TableReport(name, "skipped", "time budget spent before the table started")
        else:
            try:
                table = open_table(name)
            except NotFoundError as e:  # dropped or renamed since the tables were listed: not a failure
                rep = TableReport(name, "skipped", f"the table went away meanwhile: {e}")
            except (LakectlError, OSError) as e:
                rep = TableReport(name, "failed", _said(e))
            else:
                rep = maintain_table(table, policy_of(name), dry_run=dry_run, engine_settings=engine_settings,
                                     holder=holder, on_step=on_step)
        if on_done is not None:
            on_done(rep)
        return rep

    if parallel <= 1:
        return [one(n) for n in names]
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(one, names))
