"""Fault-injection harness shared by tests/unit/test_fault_injection.py (local files) and
tests/s3/test_s3_faults.py (a real S3 server).

A ``Lab`` is a table plus a model of what every snapshot of it holds (id -> (id, v, dt)),
computed from the batches the test wrote, never read back from lakectl, and the rows each of
its tags must scan to. An ``Op`` is one command that writes (write, overwrite, CDC write,
stream write, compact, expire, expire-partitions, truncate, drop-partition, rollback, rollback
to an expired tag, alter-schema, tag create, delete, rename and replace, expire-tags,
remove-orphan-files, delete --where, expire with a branch, branch create, delete and
fast-forward, rollback and expire on a branch) with an unfaulted ``prepare`` step, the command itself, and how to tell whether
it landed.

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
With ``aftermath_steps`` it is the crash matrix of issue 17: after each kill and rerun, every
listed snapshot must be a valid rollback target and a seeded random sequence of further
commands (``aftermath``) runs, each checked against the model, then ``check`` must pass.

The branch commands (issue 24) add their own model to step 1: after a killed ``branch
create`` or ``branch delete`` every command sees the branch whole (listed, opening with all
its schemas, scanning to its rows) or not at all, and ``check`` reports a leftover directory
exactly when one is there, naming the commands that clear it (``whole_or_none``; with
``kill_then`` the next command is ``check --repair`` instead of the rerun). After a killed
``branch fast-forward`` main is untouched or marked unfinished, and then a write, rollback,
tag or expire on it is refused naming the rerun, and ``check`` reports it.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa

from core.errors import FastForwardUnfinishedError, LakectlError, NotFoundError
from core.evolution import AddColumn
from core.fileio import inject_fault
from core.branch import ABSENT, LEFTOVER, WHOLE, branch_state, fast_forward_marker
from core.ops.branches import create_branch, delete_branch, fast_forward, list_branches
from core.ops.check import check
from core.ops.orphans import remove_orphan_files
from core.ops.partitions import expire_partitions
from core.ops.stream_write import StreamWriter
from core.ops.tags import create_tag, delete_tag, expire_tags, rename_tag
from core.ops.truncate import drop_partitions, truncate
from core.snapshot import APPEND, COMPACT, OVERWRITE
from core.table import Table
from core.types import parse_type

Rows = dict[int, tuple[int, str, str]]
# Two partitions x two buckets: every op touches several files. The partition values are
# dates so that expire-partitions has something to drop (the first one, see ExpirePartitions).
DTS = ("2024-01-01", "2024-01-02")
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
    tags: dict[str, tuple[int, Rows]] = field(default_factory=dict)  # name -> (snapshot id, rows)
    branches: dict[str, Rows] = field(default_factory=dict)  # name -> rows of its latest snapshot
    # Branches an op changes (rollback, expire on a branch): the rows of each of their snapshots
    # and tags, so that every listed one is checked, not only the latest.
    branch_states: dict[str, dict[int, Rows]] = field(default_factory=dict)
    branch_tags: dict[str, dict[str, Rows]] = field(default_factory=dict)

    def copy_to(self, open_table: Callable[[], Table]) -> "Lab":
        """The model for a copy of this table (the caller copied the files)."""
        return Lab(open_table, {k: dict(v) for k, v in self.states.items()}, None, self.next_key, self.tally,
                   self.thorough, {k: (sid, dict(rows)) for k, (sid, rows) in self.tags.items()},
                   {k: dict(rows) for k, rows in self.branches.items()},
                   {b: {sid: dict(rows) for sid, rows in states.items()} for b, states in self.branch_states.items()},
                   {b: {n: dict(rows) for n, rows in tags.items()} for b, tags in self.branch_tags.items()})

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

    def record_tag(self, name: str, snapshot_id: int) -> None:
        self.tags[name] = (snapshot_id, dict(self.states[snapshot_id]))

    def forget_after(self, snapshot_id: int) -> None:
        """A rollback to ``snapshot_id``: newer snapshots and the tags on them are gone."""
        for sid in [s for s in self.states if s > snapshot_id]:
            del self.states[sid]
        for name in [n for n, (sid, _) in self.tags.items() if sid > snapshot_id]:
            del self.tags[name]

    # ---- reading the table -----------------------------------------------------------------
    def scan(self, snapshot_id: int | None = None, tag: str | None = None, branch: str | None = None) -> Rows:
        table = self.t.on_branch(branch) if branch else self.t
        data = table.scan(snapshot_id=snapshot_id, tag=tag, select=["id", "v", "dt"])
        out: Rows = {}
        for i, v, d in zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))):
            assert i not in out, f"key {i} twice in snapshot {snapshot_id} / tag {tag}"
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
        """Every snapshot and tag the table lists scans to the model's rows for it."""
        for sid in self.t.snapshots.list_ids():
            self.check_snapshot(sid, context)
        for name in self.t.tags.names():
            assert name in self.tags, f"{context}: tag {name} is not one the model knows"
            assert self.scan(tag=name) == self.tags[name][1], f"{context}: tag {name} does not scan to its rows"
        # Branches share the table's files: whatever main did, each still reads its rows.
        for name, rows in self.branches.items():
            assert self.scan(branch=name) == rows, f"{context}: branch {name} does not scan to its rows"
        for name, states in self.branch_states.items():
            view = self.t.on_branch(name)
            for sid in view.snapshots.list_ids():
                assert sid in states, f"{context}: snapshot {sid} of branch {name} is not one the model knows"
                assert self.scan(sid, branch=name) == states[sid], \
                    f"{context}: snapshot {sid} of branch {name} does not scan to its rows"
            for tag in view.tags.names():
                assert tag in self.branch_tags.get(name, {}), f"{context}: tag {tag} of branch {name} is unknown"
                assert self.scan(tag=tag, branch=name) == self.branch_tags[name][tag], \
                    f"{context}: tag {tag} of branch {name} does not scan to its rows"

    def check_tags_kept(self, context: str) -> None:
        """No tag the model holds has gone (between commands, not in the middle of one)."""
        lost = set(self.tags) - set(self.t.tags.names())
        assert not lost, f"{context}: tags {sorted(lost)} are gone"


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

    def observe(self, lab: Lab, before: int) -> None:
        """After a fault: put what the interrupted op already published into the model, so
        that it can be checked before the rerun (by default: all of it, once it landed)."""
        if self.landed(lab, before):
            self.provisional(lab, before)

    def provisional(self, lab: Lab, before: int) -> None:
        """The model update of a run that landed, when it is safe to make before the rerun."""

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
        self.pending = lab.new_rows(3, "o", dts=(DTS[1],))

    def run(self, lab: Lab) -> Any:
        return lab.t.write(batch(self.pending), mode="overwrite")

    def expected(self) -> Rows:
        rows = {k: r for k, r in self.base.items() if r[2] != DTS[1]}
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
        earliest = lab.t.snapshots.earliest_id()
        create_tag(lab.t, "pinned", snapshot_id=earliest)  # its files must outlive the snapshot
        lab.record_tag("pinned", earliest)
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
        lab.forget_after(self.target)


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


class CdcWrite(Write):
    """A change-data write: new keys (+I), an update (+U) and a delete (-D) of existing keys."""

    name = "cdc-write"

    def prepare(self, lab: Lab) -> None:
        self.base = lab.latest_rows()
        rows = lab.new_rows(3, "c")
        kinds = ["+I"] * len(rows)
        keys = sorted(self.base)
        if keys:
            rows.append(self.base[keys[0]])
            kinds.append("-D")
        if len(keys) > 1:
            rows.append((keys[1], f"c{lab.next_key}u", self.base[keys[1]][2]))
            kinds.append("+U")
        self.pending, self.kinds = rows, kinds

    def run(self, lab: Lab) -> Any:
        data = batch(self.pending).append_column("_kind", pa.array(self.kinds, pa.string()))
        return lab.t.write(data, row_kind_column="_kind")

    def expected(self) -> Rows:
        rows = dict(self.base)
        for row, kind in zip(self.pending, self.kinds):
            if kind == "-D":
                rows.pop(row[0], None)
            else:
                rows[row[0]] = row
        return rows


class StreamWrite(Op):
    """A streaming write of two batches under one commit user: each batch is one snapshot,
    and a rerun after a crash commits only the batches that had not landed (exactly once)."""

    name = "stream-write"
    batches = 2

    def prepare(self, lab: Lab) -> None:
        self.base = lab.latest_rows()
        self.pending = [lab.new_rows(2, f"s{i}") for i in range(self.batches)]
        self.user = f"fault-lab-stream-{lab.next_key}"

    def run(self, lab: Lab) -> Any:
        writer = StreamWriter(lab.t, self.user)
        for identifier, rows in enumerate(self.pending, 1):
            writer.write_batch(batch(rows), identifier)

    def expected(self, committed: int) -> Rows:
        rows = dict(self.base)
        for batch_rows in self.pending[:committed]:
            rows.update({r[0]: r for r in batch_rows})
        return rows

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return set(range(before, before + self.batches + 1))

    def landed(self, lab: Lab, before: int) -> bool:
        return lab.t.snapshots.latest_id() == before + self.batches

    def observe(self, lab: Lab, before: int) -> None:
        for sid in range(before + 1, (lab.t.snapshots.latest_id() or 0) + 1):
            snap = lab.t.snapshots.snapshot(sid)
            assert snap.commit_user == self.user and snap.commit_identifier == sid - before, \
                f"snapshot {sid} is not batch {sid - before} of the stream"
            lab.record(sid, self.expected(sid - before))

    after = observe


class ExpirePartitions(Op):
    """Drop the partition DTS[0] (a day older than ``NOW`` minus one day) as one OVERWRITE."""

    name = "expire-partitions"
    NOW = dt.datetime(2024, 1, 2, 12)

    def prepare(self, lab: Lab) -> None:
        self.base = lab.latest_rows()

    def run(self, lab: Lab) -> Any:
        return expire_partitions(lab.t, expiration_time="1d", now=self.NOW)

    def landed(self, lab: Lab, before: int) -> bool:
        return _commit_landed(lab, before, OVERWRITE)

    def after(self, lab: Lab, before: int) -> None:
        lab.record(before + 1, {k: r for k, r in self.base.items() if r[2] != DTS[0]})

    provisional = after


class Truncate(Op):
    """Delete every row as one OVERWRITE snapshot."""

    name = "truncate"

    def run(self, lab: Lab) -> Any:
        return truncate(lab.t)

    def landed(self, lab: Lab, before: int) -> bool:
        return _commit_landed(lab, before, OVERWRITE)

    def after(self, lab: Lab, before: int) -> None:
        lab.record(before + 1, {})

    provisional = after


class DropPartition(Op):
    """Drop the partition DTS[1] (the one expire-partitions keeps) as one OVERWRITE."""

    name = "drop-partition"

    def prepare(self, lab: Lab) -> None:
        self.base = lab.latest_rows()

    def run(self, lab: Lab) -> Any:
        return drop_partitions(lab.t, [{"dt": DTS[1]}])

    def landed(self, lab: Lab, before: int) -> bool:
        return _commit_landed(lab, before, OVERWRITE)

    def after(self, lab: Lab, before: int) -> None:
        lab.record(before + 1, {k: r for k, r in self.base.items() if r[2] != DTS[1]})

    provisional = after


class TagCreate(Op):
    name = "tag-create"

    def run(self, lab: Lab) -> Any:
        return create_tag(lab.t, "crash-tag")

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        return lab.t.tags.exists("crash-tag")

    def after(self, lab: Lab, before: int) -> None:
        lab.record_tag("crash-tag", before)

    provisional = after


class TagDelete(Op):
    """Delete a tag on a snapshot that was expired since (its files live on through the tag)."""

    name = "tag-delete"

    def prepare(self, lab: Lab) -> None:
        first = lab.t.snapshots.latest_id()
        create_tag(lab.t, "doomed")
        lab.record_tag("doomed", first)
        write_now(lab)
        _expire_now(lab, retain_max=1)

    def run(self, lab: Lab) -> Any:
        return delete_tag(lab.t, "doomed")

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        return not lab.t.tags.exists("doomed")

    def after(self, lab: Lab, before: int) -> None:
        lab.tags.pop("doomed", None)

    provisional = after


class TagRename(Op):
    """Rename a tag on a snapshot that was expired since: the new name is written before the
    old one goes, so a crash leaves one name or both, each scanning to the tag's rows."""

    name = "tag-rename"

    def prepare(self, lab: Lab) -> None:
        first = lab.t.snapshots.latest_id()
        create_tag(lab.t, "before-name")
        lab.record_tag("before-name", first)
        write_now(lab)
        _expire_now(lab, retain_max=1)

    def run(self, lab: Lab) -> Any:
        # Run again after a crash between its two steps, the rename finishes (deletes the old name).
        return rename_tag(lab.t, "before-name", "after-name")

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def observe(self, lab: Lab, before: int) -> None:
        # Both names may exist after a crash: the model knows the new one as soon as it does.
        names = set(lab.t.tags.names())
        assert names & {"before-name", "after-name"}, "a crashed rename lost both names"
        if "after-name" in names:
            lab.tags["after-name"] = lab.tags.get("after-name") or lab.tags["before-name"]
        if "before-name" not in names:
            lab.tags.pop("before-name", None)

    def landed(self, lab: Lab, before: int) -> bool:
        return not lab.t.tags.exists("before-name") and lab.t.tags.exists("after-name")

    def after(self, lab: Lab, before: int) -> None:
        self.observe(lab, before)


class TagReplace(Op):
    """tag create --replace: re-point a tag from an expired snapshot to the latest; a crash
    leaves the old tag or the new one, each scanning to its rows."""

    name = "tag-replace"

    def prepare(self, lab: Lab) -> None:
        first = lab.t.snapshots.latest_id()
        create_tag(lab.t, "moving")
        lab.record_tag("moving", first)
        write_now(lab)
        _expire_now(lab, retain_max=1)

    def run(self, lab: Lab) -> Any:
        return create_tag(lab.t, "moving", replace=True)

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        return lab.t.tags.snapshot("moving").id == before

    def after(self, lab: Lab, before: int) -> None:
        lab.record_tag("moving", before)

    provisional = after


class ExpireTags(Op):
    """expire-tags on two tags whose TTL has passed (one on a snapshot expired since) and one
    whose has not; the files of the expired ones stay for remove-orphan-files."""

    name = "expire-tags"

    def prepare(self, lab: Lab) -> None:
        first = lab.t.snapshots.latest_id()
        long_ago = dt.datetime.now() - dt.timedelta(days=2)
        for name, ttl in (("stale-1", dt.timedelta(hours=1)), ("fresh", dt.timedelta(days=7))):
            lab.t.tags.create(name, lab.t.snapshots.snapshot(first), time_retained=ttl, create_time=long_ago)
            lab.record_tag(name, first)
        write_now(lab)
        _expire_now(lab, retain_max=1)
        second = lab.t.snapshots.latest_id()
        lab.t.tags.create("stale-2", lab.t.snapshots.snapshot(second), time_retained=dt.timedelta(hours=1),
                          create_time=long_ago)
        lab.record_tag("stale-2", second)

    def run(self, lab: Lab) -> Any:
        return expire_tags(lab.t)

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def observe(self, lab: Lab, before: int) -> None:
        names = set(lab.t.tags.names())
        assert "fresh" in names, "expire-tags deleted a tag whose TTL has not passed"
        for name in ("stale-1", "stale-2"):
            if name not in names:
                lab.tags.pop(name, None)

    def landed(self, lab: Lab, before: int) -> bool:
        return set(lab.t.tags.names()) == {"fresh"}

    def after(self, lab: Lab, before: int) -> None:
        self.observe(lab, before)


class RemoveOrphans(Op):
    """remove-orphan-files after a rolled-back write left its files and manifests behind."""

    name = "remove-orphan-files"

    def prepare(self, lab: Lab) -> None:
        target = lab.t.snapshots.latest_id()
        write_now(lab)
        lab.t.rollback(snapshot_id=target, dry_run=False)
        lab.forget_after(target)

    def run(self, lab: Lab) -> Any:
        return remove_orphan_files(lab.t, older_than="0s", force=True)

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        return remove_orphan_files(lab.t, older_than="0s", force=True, dry_run=True).files == 0


class RollbackToTag(Rollback):
    """Roll back to a tag whose snapshot was expired: the tag is written back as a snapshot."""

    name = "rollback-to-tag"

    def prepare(self, lab: Lab) -> None:
        self.target = lab.t.snapshots.latest_id()
        create_tag(lab.t, "restore")
        lab.record_tag("restore", self.target)
        for _ in range(3):
            write_now(lab)
        _expire_now(lab, retain_max=2)
        assert not lab.t.snapshots.exists(self.target)
        lab.record(self.target, lab.tags["restore"][1])

    def run(self, lab: Lab) -> Any:
        return lab.t.rollback(tag="restore", dry_run=False)

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {self.target} | set(range(before - 1, before + 1))

    def keep(self, lab: Lab, before: int) -> set[int]:
        return set()  # every snapshot after the tag goes; the tag's comes back


class Delete(Op):
    """``delete --where``: on the primary-key template, -D records for the lower half of the
    keys (one APPEND); on an append table (``append_template`` in the tests), the files holding
    them rewritten without them (one OVERWRITE)."""

    name = "delete"

    def prepare(self, lab: Lab) -> None:
        self.base = lab.latest_rows()
        keys = sorted(self.base)
        self.cut = keys[len(keys) // 2]  # both partitions hold keys on both sides of it

    def run(self, lab: Lab) -> Any:
        return lab.t.delete(f"id <= {self.cut}")

    def landed(self, lab: Lab, before: int) -> bool:
        return _commit_landed(lab, before, OVERWRITE if not lab.t.schema.has_primary_key else APPEND)

    def after(self, lab: Lab, before: int) -> None:
        lab.record(before + 1, {k: r for k, r in self.base.items() if k > self.cut})

    provisional = after


class ExpireWithBranch(Expire):
    """Expire on main while a branch (no tag) holds the earliest snapshot: the compaction
    DELETEs the branch's files from main, and only the branch keeps them."""

    name = "expire-with-branch"

    def prepare(self, lab: Lab) -> None:
        earliest = lab.t.snapshots.earliest_id()
        create_branch(lab.t, "side", snapshot_id=earliest)
        lab.branches["side"] = dict(lab.states[earliest])
        write_now(lab)
        before = lab.t.snapshots.latest_id()
        lab.t.compact(full=True)
        lab.record(before + 1, lab.states[before])


def whole_or_none(lab: Lab, name: str, rows: Rows, schema_ids: list[int], context: str) -> bool:
    """Every command sees branch ``name`` whole or not at all, never half (issue 24): listed,
    it opens with ``schema_ids`` and scans to ``rows``; not listed, it does not open, and
    ``check`` reports a leftover directory (with the commands that clear it) exactly when one
    is there. Returns whether the branch is there."""
    t = lab.t
    state = branch_state(t, name)
    listed = name in [b.branch for b in list_branches(t)]
    assert listed == (state == WHOLE), f"{context}: branch {name} is {state} but listed={listed}"
    if listed:
        assert t.on_branch(name).schemas.list_ids() == schema_ids, f"{context}: branch {name} lacks schemas"
        assert lab.scan(branch=name) == rows, f"{context}: branch {name} does not scan to its rows"
        return True
    try:
        t.on_branch(name)
        raise AssertionError(f"{context}: branch {name} opens although it is not listed")
    except NotFoundError:
        pass
    reported = [p for p in check(t).problems if p.kind == "branch" and p.branch == name]
    if state == LEFTOVER:
        assert len(reported) == 1 and f"lakectl branch delete {t.name} {name}" in reported[0].detail \
            and "--repair" in reported[0].detail, f"{context}: check reports {reported}"
    else:
        assert not reported, f"{context}: check reports {reported} for an absent branch"
    return False


def _second_schema(lab: Lab) -> None:
    """Add a nullable column and commit under it: a branch of the latest snapshot then copies
    two schema files, so a kill can fall between them."""
    lab.t.alter([AddColumn("extra", parse_type("INT"))])
    write_now(lab)


class BranchCreate(Op):
    """Create a branch at the latest snapshot, which uses the second of two schemas (a marker,
    a snapshot, two schemas, the marker removed)."""

    name = "branch-create"

    def prepare(self, lab: Lab) -> None:
        _second_schema(lab)
        self.schemas = lab.t.schemas.list_ids()

    def run(self, lab: Lab) -> Any:
        return create_branch(lab.t, "fresh")

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        return branch_state(lab.t, "fresh") == WHOLE

    def observe(self, lab: Lab, before: int) -> None:
        if whole_or_none(lab, "fresh", lab.states[before], self.schemas, f"{self.name} killed"):
            self.provisional(lab, before)

    def after(self, lab: Lab, before: int) -> None:
        lab.branches["fresh"] = dict(lab.states[before])

    provisional = after


def _branch_commits(lab: Lab, name: str, writes: int) -> Table:
    """Fork branch ``name`` at main's latest and commit ``writes`` batches of new keys on it,
    modelling each of its snapshots."""
    fork = lab.t.snapshots.latest_id()
    assert fork is not None
    create_branch(lab.t, name)
    view = lab.t.on_branch(name)
    states = lab.branch_states[name] = {fork: dict(lab.states[fork])}
    for _ in range(writes):
        rows = lab.new_rows(3, name)
        base = states[max(states)]
        view.write(batch(rows))
        states[view.snapshots.latest_id()] = {**base, **{r[0]: r for r in rows}}
    lab.branches[name] = dict(states[max(states)])
    return view


class RollbackOnBranch(Op):
    """Roll a branch back over its two commits: only the branch's snapshot files and hint go;
    main (``allowed_latest``, ``keep``) and its files stay as they were."""

    name = "rollback-on-branch"

    def prepare(self, lab: Lab) -> None:
        view = _branch_commits(lab, "rb", 2)
        self.target = view.snapshots.list_ids()[0]
        lab.t.on_branch("rb").tags.create("rb-first", view.snapshots.snapshot(self.target))
        lab.branch_tags["rb"] = {"rb-first": dict(lab.branch_states["rb"][self.target])}

    def run(self, lab: Lab) -> Any:
        return lab.t.on_branch("rb").rollback(snapshot_id=self.target, dry_run=False)

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        return lab.t.on_branch("rb").snapshots.list_ids() == [self.target]

    def observe(self, lab: Lab, before: int) -> None:
        # A kill leaves a contiguous run from the target to some snapshot the branch had.
        ids = lab.t.on_branch("rb").snapshots.list_ids()
        assert ids == list(range(self.target, ids[-1] + 1)), f"branch rb lists {ids}"
        lab.branches["rb"] = dict(lab.branch_states["rb"][ids[-1]])

    def after(self, lab: Lab, before: int) -> None:
        lab.branch_states["rb"] = {self.target: lab.branch_states["rb"][self.target]}
        lab.branches["rb"] = dict(lab.branch_states["rb"][self.target])


class ExpireOnBranch(Op):
    """Expire a branch down to its newest two snapshots after it compacted (which DELETEs the
    files main's snapshots read, and the branch's own): only what the branch alone read goes,
    never a file of main, of the branch's tag or of its kept snapshots."""

    name = "expire-on-branch"

    def prepare(self, lab: Lab) -> None:
        view = _branch_commits(lab, "ex", 2)
        states = lab.branch_states["ex"]
        tagged = sorted(states)[1]  # its first own commit: a tag keeps its files
        view.tags.create("ex-tag", view.snapshots.snapshot(tagged))
        lab.branch_tags["ex"] = {"ex-tag": dict(states[tagged])}
        last = view.snapshots.latest_id()
        view.compact(full=True)
        states[last + 1] = dict(states[last])
        rows = lab.new_rows(2, "ex")
        view.write(batch(rows))
        states[last + 2] = {**states[last + 1], **{r[0]: r for r in rows}}
        lab.branches["ex"] = dict(states[last + 2])
        self.kept = [last + 1, last + 2]

    def run(self, lab: Lab) -> Any:
        return lab.t.on_branch("ex").expire(retain_min=1, retain_max=2, max_deletes=1000, dry_run=False)

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        return lab.t.on_branch("ex").snapshots.list_ids() == self.kept

    def after(self, lab: Lab, before: int) -> None:
        states = lab.branch_states["ex"]
        lab.branch_states["ex"] = {sid: states[sid] for sid in self.kept}
        assert lab.t.on_branch("ex").snapshots.earliest_id() == self.kept[0]


class AppendWrite(Write):
    """A batch of new keys only (an append table keeps every row: no upsert)."""

    name = "append-write"

    def prepare(self, lab: Lab) -> None:
        self.base = lab.latest_rows()
        self.pending = lab.new_rows(4, "w")


class BranchDelete(Op):
    """Delete a branch with two schemas and a commit of its own."""

    name = "branch-delete"

    def prepare(self, lab: Lab) -> None:
        _second_schema(lab)
        fork = lab.t.snapshots.latest_id()
        create_branch(lab.t, "doomed")
        rows = lab.new_rows(2, "branch")
        lab.t.on_branch("doomed").write(batch(rows))
        self.rows: Rows = {**lab.states[fork], **{r[0]: r for r in rows}}
        self.schemas = lab.t.on_branch("doomed").schemas.list_ids()

    def run(self, lab: Lab) -> Any:
        return delete_branch(lab.t, "doomed")

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before}

    def landed(self, lab: Lab, before: int) -> bool:
        # No file left: a leftover directory is not a branch, but not done either.
        return branch_state(lab.t, "doomed") == ABSENT

    def observe(self, lab: Lab, before: int) -> None:
        whole_or_none(lab, "doomed", self.rows, self.schemas, f"{self.name} killed")


class FastForward(Op):
    """Fast-forward main to a branch that forked at main's latest and committed once, while
    main committed once too: main's snapshot ``before`` is replaced by the branch's."""

    name = "branch-fast-forward"

    def prepare(self, lab: Lab) -> None:
        fork = lab.t.snapshots.latest_id()
        create_branch(lab.t, "ff")
        rows = lab.new_rows(3, "ff")
        lab.t.on_branch("ff").write(batch(rows))
        self.branch_rows: Rows = {**lab.states[fork], **{r[0]: r for r in rows}}
        lab.branches["ff"] = dict(self.branch_rows)
        write_now(lab)
        self.main_before = lab.t.snapshots.snapshot(lab.t.snapshots.latest_id()).to_dict()

    def run(self, lab: Lab) -> Any:
        return fast_forward(lab.t, "ff")

    def _copied(self, lab: Lab, before: int) -> bool:
        """Main's snapshot ``before`` is the branch's (not main's own)."""
        snapshots = lab.t.snapshots
        return snapshots.exists(before) and \
            snapshots.snapshot(before).to_dict() == lab.t.on_branch("ff").snapshots.snapshot(before).to_dict()

    def allowed_latest(self, lab: Lab, before: int) -> set[int]:
        return {before - 1, before}

    def keep(self, lab: Lab, before: int) -> set[int]:
        return set(lab.states) & set(range(1, before))  # main's own ``before`` goes

    def landed(self, lab: Lab, before: int) -> bool:
        return self._copied(lab, before) and lab.t.snapshots.latest_id() == before and \
            fast_forward_marker(lab.t.file_io, lab.t.path) is None

    def observe(self, lab: Lab, before: int) -> None:
        """Main is untouched, or marked unfinished: then every change to it is refused with
        the fast-forward to rerun (so the rerun can discard no commit) and ``check`` says so;
        reads go on at a real snapshot (``_check_after_fault``)."""
        t = lab.t
        if self._copied(lab, before):
            lab.record(before, self.branch_rows)
        if self.landed(lab, before):
            return
        if fast_forward_marker(t.file_io, t.path) is None:
            assert t.snapshots.exists(before) and t.snapshots.snapshot(before).to_dict() == self.main_before, \
                f"{self.name} killed: main changed without a FAST-FORWARD marker"
            return
        ids = t.snapshots.list_ids()
        rerun = f"lakectl branch fast-forward {t.name} ff"
        for attempt in (lambda: t.write(batch(lab.new_rows(2, "lost"))),
                        lambda: t.rollback(snapshot_id=ids[0], dry_run=False),
                        lambda: create_tag(t, "mid-ff"),
                        lambda: t.expire(retain_min=1, retain_max=1, max_deletes=1000, dry_run=False)):
            try:
                attempt()
                raise AssertionError(f"{self.name} killed: main changed while the fast-forward is unfinished")
            except FastForwardUnfinishedError as e:
                assert rerun in str(e), f"{self.name} killed: the refusal does not name the rerun: {e}"
        assert t.snapshots.list_ids() == ids and "mid-ff" not in t.tags.names()
        problems = [p for p in check(t).problems if p.kind == "fast-forward"]
        assert len(problems) == 1 and rerun in problems[0].detail, f"{self.name} killed: check reports {problems}"

    def after(self, lab: Lab, before: int) -> None:
        lab.record(before, self.branch_rows)


def _expire_now(lab: Lab, retain_max: int) -> None:
    """An unfaulted expire keeping the newest ``retain_max`` snapshots; the model forgets the
    snapshots that are gone (tags keep their rows)."""
    lab.t.expire(retain_min=1, retain_max=retain_max, max_deletes=1000, dry_run=False)
    listed = set(lab.t.snapshots.list_ids())
    for sid in [s for s in lab.states if s not in listed]:
        del lab.states[sid]


# The fail loops (every read, write, create, delete, list) run the commands whose FileIO
# traffic differs in kind; the crash matrix (kill before every mutation, then more commands)
# runs every command that writes.
FAIL_OPS: dict[str, Callable[[], Op]] = {op.name: op for op in (Write, Overwrite, Compact, Expire, Rollback, Alter,
                                                               Delete)}
OPS: dict[str, Callable[[], Op]] = {**FAIL_OPS, **{op.name: op for op in (
    CdcWrite, StreamWrite, ExpirePartitions, Truncate, DropPartition, TagCreate, TagDelete, TagRename, TagReplace,
    ExpireTags, RemoveOrphans, RollbackToTag, ExpireWithBranch, BranchCreate, BranchDelete, FastForward,
    RollbackOnBranch, ExpireOnBranch)}}


def seed(lab: Lab, writes: int = 2) -> None:
    for _ in range(writes):
        write_now(lab)


# ---- the loops -------------------------------------------------------------------------------
Clone = Callable[[Lab, str], Lab]  # (template, name) -> a lab on a fresh copy of its table


def _check_after_fault(lab: Lab, op: Op, before: int, context: str) -> None:
    op.observe(lab, before)
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
        lab.check_tags_kept(f"{context}, after the rerun")


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


def aftermath(lab: Lab, rng: random.Random, steps: int, context: str) -> None:
    """What users do after a crash: every listed snapshot must be a valid rollback target
    (checked as a dry run), then ``steps`` random commands (writes, CDC writes, compactions,
    expires, rollbacks to a listed snapshot, tag creation and deletion, orphan removal), after
    each of which every listed snapshot and tag scans to the model's rows. Ends with ``check``
    finding nothing wrong."""
    t = lab.t
    for sid in t.snapshots.list_ids():
        t.rollback(snapshot_id=sid, dry_run=True)  # refuses a target whose files are gone
    for step in range(steps):
        action = rng.choice(AFTERMATH)
        action(lab, rng)
        where = f"{context}, then {action.__name__} (step {step + 1})"
        lab.check_all(where)
        lab.check_tags_kept(where)
    result = check(lab.t)
    assert result.ok, f"{context}: check after the commands: {result.problems[:3]}"


def _after_write(lab: Lab, rng: random.Random) -> None:
    write_now(lab)


def _after_cdc_write(lab: Lab, rng: random.Random) -> None:
    op = CdcWrite()
    op.prepare(lab)
    before = lab.t.snapshots.latest_id() or 0
    op.run(lab)
    op.after(lab, before)


def _after_compact(lab: Lab, rng: random.Random) -> None:
    before = lab.t.snapshots.latest_id()
    if before is not None and lab.t.compact(full=True).snapshot_id is not None:
        lab.record(before + 1, lab.states[before])


def _after_expire(lab: Lab, rng: random.Random) -> None:
    _expire_now(lab, retain_max=rng.randint(1, 3))


def _after_rollback(lab: Lab, rng: random.Random) -> None:
    target = rng.choice(lab.t.snapshots.list_ids())
    lab.t.rollback(snapshot_id=target, dry_run=False)
    lab.forget_after(target)


def _after_tag(lab: Lab, rng: random.Random) -> None:
    sid = rng.choice(lab.t.snapshots.list_ids())
    name = f"after-{len(lab.tags)}-{sid}"
    if name not in lab.tags:
        create_tag(lab.t, name, snapshot_id=sid)
        lab.record_tag(name, sid)


def _after_untag(lab: Lab, rng: random.Random) -> None:
    if lab.tags:
        name = rng.choice(sorted(lab.tags))
        delete_tag(lab.t, name)
        del lab.tags[name]


def _after_orphans(lab: Lab, rng: random.Random) -> None:
    remove_orphan_files(lab.t, older_than="0s", force=True)


AFTERMATH = (_after_write, _after_cdc_write, _after_compact, _after_expire, _after_rollback, _after_tag,
             _after_untag, _after_orphans)


def kill_loop(template: Lab, op: Op, kind: str, clone: Clone, *, limit: int = LOOP_LIMIT,
              timeout: float = 120.0, aftermath_steps: int = 0, start: int = 1, stride: int = 1) -> int:
    """SIGKILL a forked child running the op right before its n-th ``kind`` operation, for n =
    start, start + stride, ... (every n by default) until the child completes; returns how many
    kills there were. With ``aftermath_steps``, each killed and completed run goes on with that
    many random commands (``aftermath``), seeded by the op and n so a failure replays."""
    op.prepare(template)
    before = template.t.snapshots.latest_id() or 0
    kills = 0
    for n in range(start, limit + 1, stride):
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
        if aftermath_steps:
            aftermath(lab, random.Random(f"{op.name}:{n}"), aftermath_steps, context)
        if not killed:
            lab.check_all(f"{op.name} after every kill:{kind}:N")
            return kills
    raise AssertionError(f"{op.name} was still killed at kill:{kind}:{limit}")


def kill_then(template: Lab, op: Op, kind: str, clone: Clone, then: Callable[[Lab, int, str], None], *,
              limit: int = LOOP_LIMIT, timeout: float = 120.0) -> int:
    """SIGKILL the op before its n-th ``kind`` operation for every n, as ``kill_loop``, but
    after each kill run ``then(lab, before, context)`` (the user's next command, not the
    rerun); returns how many kills there were."""
    op.prepare(template)
    before = template.t.snapshots.latest_id() or 0
    for n in range(1, limit + 1):
        lab = clone(template, f"{op.name}-then-{kind}-{n}")
        context = f"{op.name} with kill:{kind}:{n}"
        status = _run_forked(lambda: _child(lab, op, kind, n), timeout, context)
        if not os.WIFSIGNALED(status):
            assert os.WEXITSTATUS(status) == 0, f"{context}: the child failed (exit {os.WEXITSTATUS(status)})"
            return n - 1
        then(lab, before, context)
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
