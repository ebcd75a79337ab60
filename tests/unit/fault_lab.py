"""Fault-injection harness shared by tests/unit/test_fault_injection.py (local files) and
tests/s3/test_s3_faults.py (a real S3 server).

A ``Lab`` is a table plus a model of what every snapshot of it holds (id -> (id, v, dt)),
computed from the batches the test wrote, never read back from lakectl. An ``Op`` is one
command (write, overwrite, compact, expire, rollback, alter-schema) with an unfaulted
``prepare`` step, the command itself, and how to tell whether it landed.

``fail_loop`` prepares the op once on a template table, then for n = 1, 2, ... runs it on a
fresh copy of the template with ``inject_fault("fail", KIND, n)``, until the op completes
without reaching its n-th operation of that kind (a copy per n keeps every run identical, so
the loop ends). After every injected fault:

1. the latest snapshot is one the model allows (before or after the op; for rollback any
   snapshot between the target and the old latest); every snapshot the table still lists
   scans exactly to the model's rows for it; no snapshot the op must keep has gone;
2. rerunning the op (without a fault) completes, unless the first run already landed;
3. the op's result is there and the model's rows with it.

``kill_loop`` does the same with ``kill`` in a forked child: the child is SIGKILLed right
before its n-th mutating operation (write, create, delete). The table's persistent state
only changes at mutations, so killing before each one reaches every state a crash can leave.
"""

from __future__ import annotations

import os
import signal
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa

from core.errors import LakectlError
from core.evolution import AddColumn
from core.fileio import inject_fault
from core.snapshot import APPEND, COMPACT, OVERWRITE
from core.table import Table
from core.types import parse_type

Rows = dict[int, tuple[int, str, str]]
DTS = ("a", "b")  # two partitions x two buckets: every op touches several files
LOOP_LIMIT = 400  # no op of these small tables takes this many operations of one kind


def batch(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                     "v": pa.array([r[1] for r in rows], pa.string()),
                     "dt": pa.array([r[2] for r in rows], pa.string())})


@dataclass
class Tally:
    """What the loops did, for the figures the tests print."""

    runs: int = 0  # faulted runs
    faults: int = 0  # faults that were actually reached
    errors: int = 0  # runs that raised
    late_errors: list[str] = field(default_factory=list)  # raised although the op had landed
    retries: int = 0  # reruns needed to complete

    def add(self, other: "Tally") -> None:
        self.runs += other.runs
        self.faults += other.faults
        self.errors += other.errors
        self.late_errors += other.late_errors
        self.retries += other.retries


@dataclass
class Lab:
    """A table and the rows each of its snapshots must scan to."""

    open_table: Callable[[], Table]  # a new Table object (with a new FileIO) on the table
    states: dict[int, Rows] = field(default_factory=dict)
    table: Table | None = None
    next_key: int = 0
    tally: Tally = field(default_factory=Tally)
    thorough: bool = True  # scan every snapshot after each rerun (else the latest and the kept ones)

    def copy_to(self, open_table: Callable[[], Table]) -> "Lab":
        """The model for a copy of this table (the caller copied the files)."""
        return Lab(open_table, {k: dict(v) for k, v in self.states.items()}, None, self.next_key, self.tally,
                   self.thorough)

    @property
    def t(self) -> Table:
        if self.table is None:
            self.table = self.open_table()
        return self.table

    def reopen(self) -> None:
        """A forked child must not use the parent's filesystem clients (s3fs is not fork-safe)."""
        self.table = self.open_table()

    # ---- the model -------------------------------------------------------------------------
    def latest_rows(self) -> Rows:
        latest = self.t.snapshots.latest_id()
        return dict(self.states[latest]) if latest else {}

    def new_rows(self, count: int, tag: str, dts: tuple[str, ...] = DTS) -> list[tuple[int, str, str]]:
        rows = [(self.next_key + i, f"{tag}{self.next_key + i}", dts[(self.next_key + i) % len(dts)])
                for i in range(count)]
        self.next_key += count
        return rows

    def record(self, snapshot_id: int, rows: Rows) -> None:
        self.states[snapshot_id] = dict(rows)

    # ---- reading the table -----------------------------------------------------------------
    def scan(self, snapshot_id: int | None = None) -> Rows:
        data = self.t.scan(snapshot_id=snapshot_id, select=["id", "v", "dt"])
        out: Rows = {}
        for i, v, d in zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))):
            assert i not in out, f"key {i} twice in snapshot {snapshot_id}"
            out[i] = (i, v, d)
        return out

    def check_snapshot(self, sid: int, context: str) -> None:
        assert sid in self.states, f"{context}: snapshot {sid} is not one the model knows"
        assert self.scan(sid) == self.states[sid], f"{context}: snapshot {sid} does not scan to its rows"

    def check_latest(self, allowed: set[int], context: str) -> int:
        t = self.t
        latest = t.snapshots.latest_id()
        assert latest in allowed, f"{context}: latest snapshot {latest}, expected one of {sorted(allowed)}"
        got = self.scan()
        assert got == self.states[latest], f"{context}: the latest snapshot {latest} does not scan to its rows"
        return latest

    def check_all(self, context: str) -> None:
        """Every snapshot the table lists scans to the model's rows for it."""
        for sid in self.t.snapshots.list_ids():
            self.check_snapshot(sid, context)


class Op:
    """One command under test. ``prepare`` runs once, unfaulted, on the template table; every
    other method gets a copy of it. ``before`` is the template's latest snapshot id."""

    name = "op"

    def prepare(self, lab: Lab) -> None:
        """Unfaulted steps that give the op something to do."""

    def run(self, lab: Lab) -> Any:
        raise NotImplementedError

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before, before + 1}

    def landed(self, lab: Lab, before: int) -> bool:
        raise NotImplementedError

    def after(self, lab: Lab, before: int) -> None:
        """Update the model once the op landed; check what only this op changes."""

    def keep(self, lab: Lab, before: int) -> set[int]:
        """Snapshots that must survive the op, faulted or not."""
        return set(lab.states) & set(range(1, before + 1))


def _commit_landed(lab: Lab, before: int, kind: str) -> bool:
    snapshots = lab.t.snapshots
    if snapshots.latest_id() != before + 1:
        return False
    assert snapshots.snapshot(before + 1).commit_kind == kind
    return True


class Write(Op):
    """Append a fresh batch: new keys plus an update of an existing one (primary-key upsert)."""

    name = "write"
    kind = APPEND

    def prepare(self, lab: Lab) -> None:
        self.base = lab.latest_rows()
        rows = lab.new_rows(4, "w")
        if self.base:
            k = min(self.base)
            rows.append((k, f"u{lab.next_key}", self.base[k][2]))
        self.pending = rows

    def run(self, lab: Lab) -> Any:
        return lab.t.write(batch(self.pending))

    def expected(self) -> Rows:
        rows = dict(self.base)
        rows.update({r[0]: r for r in self.pending})
        return rows

    def landed(self, lab: Lab, before: int) -> bool:
        return _commit_landed(lab, before, self.kind)

    def after(self, lab: Lab, before: int) -> None:
        lab.record(before + 1, self.expected())

    provisional = after  # the model of a run that landed, to check it before any retry


class Overwrite(Write):
    """Overwrite partition dt='b' with a fresh batch."""

    name = "overwrite"
    kind = OVERWRITE

    def prepare(self, lab: Lab) -> None:
        self.base = lab.latest_rows()
        self.pending = lab.new_rows(3, "o", dts=("b",))

    def run(self, lab: Lab) -> Any:
        return lab.t.write(batch(self.pending), mode="overwrite")

    def expected(self) -> Rows:
        rows = {k: r for k, r in self.base.items() if r[2] != "b"}
        rows.update({r[0]: r for r in self.pending})
        return rows


def write_now(lab: Lab) -> None:
    """An unfaulted write of a fresh batch, recorded in the model."""
    w = Write()
    w.prepare(lab)
    before = lab.t.snapshots.latest_id() or 0
    w.run(lab)
    assert w.landed(lab, before)
    w.after(lab, before)


class Compact(Op):
    """Full compaction after a fresh write, so there is always a level-0 file to rewrite."""

    name = "compact"

    def prepare(self, lab: Lab) -> None:
        write_now(lab)

    def run(self, lab: Lab) -> Any:
        return lab.t.compact(full=True)

    def landed(self, lab: Lab, before: int) -> bool:
        return _commit_landed(lab, before, COMPACT)

    def after(self, lab: Lab, before: int) -> None:
        lab.record(before + 1, lab.states[before])
        assert all(f.level > 0 for f in lab.t.files()), "a full compaction leaves no level-0 file"

    provisional = after


class Expire(Op):
    """Expire all but the newest two snapshots, after a write and a compaction (so the expired
    snapshots take data files, manifests and manifest lists with them)."""

    name = "expire"

    def prepare(self, lab: Lab) -> None:
        write_now(lab)
        before = lab.t.snapshots.latest_id()
        lab.t.compact(full=True)
        lab.record(before + 1, lab.states[before])

    def run(self, lab: Lab) -> Any:
        return lab.t.expire(retain_min=1, retain_max=2, max_deletes=1000, dry_run=False)

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def keep(self, lab: Lab, before: int) -> set[int]:
        return {before - 1, before}

    def landed(self, lab: Lab, before: int) -> bool:
        return lab.t.snapshots.list_ids() == [before - 1, before]

    def after(self, lab: Lab, before: int) -> None:
        for sid in [s for s in lab.states if s < before - 1]:
            del lab.states[sid]
        assert lab.t.snapshots.earliest_id() == before - 1


class Rollback(Op):
    """Roll back over the two writes ``prepare`` made."""

    name = "rollback"

    def prepare(self, lab: Lab) -> None:
        self.target = lab.t.snapshots.latest_id()
        write_now(lab)
        write_now(lab)

    def run(self, lab: Lab) -> Any:
        return lab.t.rollback(snapshot_id=self.target, dry_run=False)

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return set(range(self.target, before + 1))

    def keep(self, lab: Lab, before: int) -> set[int]:
        return set(lab.states) & set(range(1, self.target + 1))

    def landed(self, lab: Lab, before: int) -> bool:
        return lab.t.snapshots.list_ids()[-1] == self.target

    def after(self, lab: Lab, before: int) -> None:
        for sid in [s for s in lab.states if s > self.target]:
            del lab.states[sid]


class Alter(Op):
    """Add a nullable column (scans compare the first three columns)."""

    name = "alter-schema"

    def prepare(self, lab: Lab) -> None:
        self.schema_before = lab.t.schema.id

    def run(self, lab: Lab) -> Any:
        return lab.t.alter([AddColumn("extra", parse_type("INT"))])

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        schema = lab.t.schema
        if "extra" not in schema.field_names:
            assert schema.id == self.schema_before
            return False
        assert schema.id == self.schema_before + 1
        return True


OPS: dict[str, Callable[[], Op]] = {op.name: op for op in (Write, Overwrite, Compact, Expire, Rollback, Alter)}


def seed(lab: Lab, writes: int = 2) -> None:
    for _ in range(writes):
        write_now(lab)


# ---- the loops -------------------------------------------------------------------------------
Clone = Callable[[Lab, str], Lab]  # (template, name) -> a lab on a fresh copy of its table


def _check_after_fault(lab: Lab, op: Op, before: int, context: str) -> None:
    if hasattr(op, "provisional") and op.landed(lab, before):
        op.provisional(lab, before)
    lab.check_latest(op.allowed_latest(lab, before), context)
    lost = op.keep(lab, before) - set(lab.t.snapshots.list_ids())
    assert not lost, f"{context}: committed snapshots {sorted(lost)} are gone"
    # Whatever a crash leaves, no listed snapshot may be unreadable: every one the table still
    # lists scans to the model's rows for it (not only the ones the op keeps).
    lab.check_all(context)


def _complete(lab: Lab, op: Op, before: int, context: str) -> None:
    if not op.landed(lab, before):
        lab.tally.retries += 1
        op.run(lab)  # the rerun must succeed
        assert op.landed(lab, before), f"{context}: the rerun did not complete the {op.name}"
    op.after(lab, before)
    lab.check_latest(op.allowed_latest(lab, before), f"{context}, after the rerun")
    if lab.thorough:
        lab.check_all(f"{context}, after the rerun")


def fail_loop(template: Lab, op: Op, kind: str, clone: Clone, *, limit: int = LOOP_LIMIT,
              stride: int = 1) -> int:
    """Fail the op at its n-th ``kind`` operation for n = 1, 1 + stride, ... until it completes
    without reaching the fault; returns how many faults were reached."""
    op.prepare(template)
    before = template.t.snapshots.latest_id() or 0
    reached = 0
    for n in range(1, limit + 1, stride):
        lab = clone(template, f"{op.name}-fail-{kind}-{n}")
        context = f"{op.name} with fail:{kind}:{n}"
        error: BaseException | None = None
        lab.tally.runs += 1
        with inject_fault("fail", kind, n) as fault:
            try:
                op.run(lab)
            except (OSError, LakectlError) as e:
                error = e
        hit = fault.seen >= n
        if error is not None:
            assert hit, f"{context}: failed without reaching the fault: {error!r}"
            lab.tally.errors += 1
            if op.landed(lab, before):
                lab.tally.late_errors.append(f"{context}: {type(error).__name__}: {error}")
        if hit:
            reached += 1
            lab.tally.faults += 1
        _check_after_fault(lab, op, before, context)
        _complete(lab, op, before, context)
        if not hit:
            lab.check_all(f"{op.name} after every fail:{kind}:N")
            return reached
    raise AssertionError(f"{op.name} still reached fail:{kind}:{limit}")


def kill_loop(template: Lab, op: Op, kind: str, clone: Clone, *, limit: int = LOOP_LIMIT,
              timeout: float = 120.0) -> int:
    """SIGKILL a forked child running the op right before its n-th ``kind`` operation, for every
    n until the child completes; returns how many kills there were."""
    op.prepare(template)
    before = template.t.snapshots.latest_id() or 0
    kills = 0
    for n in range(1, limit + 1):
        lab = clone(template, f"{op.name}-kill-{kind}-{n}")
        context = f"{op.name} with kill:{kind}:{n}"
        lab.tally.runs += 1
        status = _run_forked(lambda: _child(lab, op, kind, n), timeout, context)
        killed = os.WIFSIGNALED(status)
        if killed:
            assert os.WTERMSIG(status) == signal.SIGKILL, f"{context}: child died of signal {os.WTERMSIG(status)}"
            kills += 1
            lab.tally.faults += 1
        else:
            assert os.WEXITSTATUS(status) == 0, f"{context}: the child failed (exit {os.WEXITSTATUS(status)})"
        _check_after_fault(lab, op, before, context)
        _complete(lab, op, before, context)
        if not killed:
            lab.check_all(f"{op.name} after every kill:{kind}:N")
            return kills
    raise AssertionError(f"{op.name} was still killed at kill:{kind}:{limit}")


def _child(lab: Lab, op: Op, kind: str, n: int) -> None:
    lab.reopen()
    with inject_fault("kill", kind, n):
        op.run(lab)


def _run_forked(body: Callable[[], None], timeout: float, context: str) -> int:
    with warnings.catch_warnings():
        # Python 3.12+ warns about forking a process with threads (s3fs's IO loop): the child
        # only runs lakectl code on clients it creates itself, and exits with os._exit.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 0
        try:
            body()
        except BaseException:  # noqa: BLE001 - reported through the exit code
            import traceback

            traceback.print_exc()
            code = 3
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    reaped = False
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                reaped = True
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"{context}: the child did not finish within {timeout}s")
            time.sleep(0.005)
    finally:
        if not reaped:  # only a child we have not reaped still owns its pid
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
