"""Model test of the table lifecycle: random interleavings of write, delete --where, compact
(minor and full), expire, tag, rollback, truncate and drop-partition on main, and of branches:
create (from the latest snapshot or a tag), write, delete, compact and tag on a branch,
fast-forward main to a branch, delete a branch. Each branch (main included) is its own model.
After every step each retained snapshot and each tag of every live branch scans to exactly the
rows its model says it held, every file they reference exists, and remove-orphan-files (with no
age threshold) never removes a referenced file. Branches share data and manifest files with
main, so this is what catches main's expire or orphan removal deleting a file a branch reads.
"""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import binary_row
from core.branch import MAIN_BRANCH, branch_names
from core.errors import CommitConflictError, NotFoundError
from core.fileio import join
from core.manifest import merge_entries, read_entries
from core.ops.branches import create_branch, delete_branch, fast_forward
from core.ops.compact import compact
from core.ops.create import create
from core.ops.expire import expire_snapshots
from core.ops.orphans import remove_orphan_files
from core.ops.rollback import rollback
from core.ops.tags import create_tag
from core.ops.truncate import drop_partitions, truncate
from core.partition import partition_path
from core.table import Table

KEYS = st.integers(0, 6)
ROW = st.tuples(KEYS, st.sampled_from(["a", "b"]), st.sampled_from(["+I", "+U", "-D"]))
# What runs on any branch, main included.
WRITE = st.tuples(st.just("write"), st.lists(ROW, min_size=1, max_size=6))
COMPACT = st.tuples(st.just("compact"), st.booleans())
TAG = st.tuples(st.just("tag"), st.integers(0, 100))
DELETE = st.tuples(st.just("delete"), KEYS, st.sampled_from(["", "d1", "d2"]))
CHANGES = st.one_of(WRITE, COMPACT, TAG, DELETE)


def _weighted(*choices: tuple[st.SearchStrategy, int]) -> st.SearchStrategy:
    """One of ``choices``, each drawn ``weight`` times as often as a weight of 1 (a plain
    one_of draws each alternative equally; branch ops need a branch made before them, and a
    branch's files are at risk only once main wrote, moved on and expired after it)."""
    return st.sampled_from([s for s, weight in choices for _ in range(weight)]).flatmap(lambda s: s)


OPS = _weighted(
    (WRITE, 4), (COMPACT, 2), (TAG, 1), (DELETE, 1),
    (st.tuples(st.just("expire"), st.integers(1, 3), st.integers(0, 3)), 2),
    (st.tuples(st.just("rollback"), st.integers(0, 100)), 1),
    (st.tuples(st.just("truncate")), 1),
    (st.tuples(st.just("drop-partition"), st.sampled_from(["d1", "d2"])), 1),
    # Branch ops pick their branch (and a tag to branch from) by index, modulo what exists.
    (st.tuples(st.just("branch"), st.integers(0, 100)), 3),
    (st.tuples(st.just("on-branch"), st.integers(0, 100), CHANGES), 3),  # on main while none exists
    (st.tuples(st.just("fast-forward"), st.integers(0, 100)), 1),
    (st.tuples(st.just("delete-branch"), st.integers(0, 100)), 1),
)


@dataclass
class Line:
    """What one branch must read: its current rows, the rows of each of its snapshots, its tags,
    and which commit made each snapshot (a branch shares its start with main: a fast-forward
    needs main to still hold that very snapshot, not another one numbered the same)."""

    model: dict = field(default_factory=dict)
    states: dict[int, dict] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    commits: dict[int, int] = field(default_factory=dict)

    def committed(self, sid: int, rows: dict, commit: int) -> None:
        self.model = rows
        self.states[sid] = rows
        self.commits[sid] = commit


def _rows(table: Table, **kw) -> dict:
    return {(r["dt"], r["id"]): r["v"] for r in table.scan(**kw).to_pylist()}


def _apply(model: dict, batch: list) -> dict:
    new = dict(model)
    for key, dt_, kind in batch:
        if kind == "-D":
            new.pop((dt_, key), None)
        else:
            new[(dt_, key)] = f"v{key}{dt_}{kind}"
    return new


def _referenced_paths(table: Table, snapshots: list) -> set[str]:
    paths = set()
    mio = table.manifests()
    schema = table.schema
    for snap in snapshots:
        for e in merge_entries(read_entries(mio, [snap.base_manifest_list, snap.delta_manifest_list])):
            values = binary_row.decode(e.partition, [f.type for f in schema.partition_fields])
            part = partition_path(values, schema.partition_fields, schema.core_options.partition_default_name)
            paths.add(join(table.path, part, f"bucket-{e.bucket}", e.file.file_name))
        for name in (snap.base_manifest_list, snap.delta_manifest_list):
            paths.add(join(table.path, "manifest", name))
    return paths


def _check_line(table: Table, line: Line, scanned: set) -> None:
    """The branch's snapshots and tags read as its model says, and every file they reference
    exists. Data and manifest files never change once written, so a snapshot or tag whose file
    is byte for byte one already scanned on this branch reads the same as long as its files
    exist: it is scanned again only if it is the latest (which also checks the schema)."""
    where = "" if table.is_main else f" of branch {table.branch}"
    ids = table.snapshots.list_ids()
    for sid in ids:
        key = (table.branch, sid, table.file_io.read_bytes(table.snapshots.path(sid)))
        if key not in scanned or sid == ids[-1]:
            assert _rows(table, snapshot_id=sid) == line.states[sid], f"snapshot {sid}{where}"
            scanned.add(key)
    assert sorted(table.tags.names()) == sorted(line.tags), f"tags{where}"
    for name, sid in line.tags.items():
        key = (table.branch, name, table.file_io.read_bytes(table.tags.path(name)))
        if key not in scanned:
            assert _rows(table, tag=name) == line.states[sid], f"tag {name}{where}"
            scanned.add(key)
    retained = [table.snapshots.snapshot(i) for i in ids] + [table.tags.snapshot(n) for n in line.tags]
    for path in _referenced_paths(table, retained):
        assert os.path.exists(path), f"{path} is referenced{where} but gone"


def _check(table: Table, lines: dict[str, Line], scanned: set) -> None:
    assert branch_names(table) == sorted(b for b in lines if b != MAIN_BRANCH)
    for name, line in lines.items():
        _check_line(table.on_branch(name), line, scanned)


def _change(table: Table, line: Line, op: tuple, tag_name: str, commits) -> None:
    """A write, delete, compaction or tag on ``table`` (main or a branch), into its ``line``."""
    if op[0] == "write":
        batch = [(k, "d1" if k % 2 else "d2", kind) for k, _, kind in op[1]]
        data = pa.table({"id": pa.array([b[0] for b in batch], pa.int64()),
                         "v": [None if b[2] == "-D" else f"v{b[0]}{b[1]}{b[2]}" for b in batch],
                         "dt": [b[1] for b in batch], "op": [b[2] for b in batch]})
        result = table.write(data, row_kind_column="op")
        line.committed(result.snapshot_id, _apply(line.model, batch), next(commits))
    elif op[0] == "delete":
        where = f"id <= {op[1]}" + (f" AND dt = '{op[2]}'" if op[2] else "")
        gone = {k for k in line.model if k[1] <= op[1] and (not op[2] or k[0] == op[2])}
        result = table.delete(where)
        assert result.rows_deleted == len(gone)
        assert (result.snapshot_id is None) == (not gone)  # nothing matching commits nothing
        if result.snapshot_id is not None:
            line.committed(result.snapshot_id, {k: v for k, v in line.model.items() if k not in gone}, next(commits))
    elif op[0] == "compact":
        result = compact(table, full=op[1])
        if result.snapshot_id is not None:
            line.committed(result.snapshot_id, line.model, next(commits))  # compaction never changes the rows
    elif op[0] == "tag" and table.snapshots.latest_id() is not None:
        ids = table.snapshots.list_ids()
        sid = ids[op[1] % len(ids)]
        create_tag(table, tag_name, snapshot_id=sid)
        line.tags[tag_name] = sid


def _fast_forward(table: Table, lines: dict[str, Line], name: str) -> None:
    """Main becomes the branch from the branch's start on; refused when main no longer holds
    the very snapshot the branch started from (expired, or rolled back and committed again)."""
    main, branch = lines[MAIN_BRANCH], lines[name]
    start = min(branch.states)
    holds_start = start in table.snapshots.list_ids() and main.commits.get(start) == branch.commits[start]
    try:
        fast_forward(table, name)
    except CommitConflictError:
        assert not holds_start, f"fast-forward to {name} refused though main holds its start {start}"
        return
    assert holds_start, f"fast-forward to {name} done though main lost its start {start}"
    main.model = branch.model
    main.states = {s: m for s, m in main.states.items() if s < start} | branch.states
    main.commits = {s: c for s, c in main.commits.items() if s < start} | branch.commits
    main.tags = {n: s for n, s in main.tags.items() if s < start} | branch.tags


def run(ops: list, after_step=None) -> None:
    """Apply ``ops`` and check after each; ``after_step(table, model)`` may check more (main's
    rows)."""
    with tempfile.TemporaryDirectory() as wh:
        table = Table.locate("db.t", warehouse=wh)
        # Retention and compaction happen only when the model asks for them.
        create(table, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
               options={"bucket": "2", "write-only": "true", "num-sorted-run.compaction-trigger": "2"})
        lines: dict[str, Line] = {MAIN_BRANCH: Line()}
        commits = itertools.count()
        names = itertools.count()  # tag and branch names are never reused
        scanned: set[tuple] = set()  # (branch, snapshot id or tag, its file) read as the model says
        for op in ops:
            main = lines[MAIN_BRANCH]
            branches = sorted(b for b in lines if b != MAIN_BRANCH)
            latest = table.snapshots.latest_id()
            if op[0] in ("write", "delete", "compact", "tag"):
                _change(table, main, op, f"t{next(names)}", commits)
            elif op[0] == "on-branch":
                name = (branches or [MAIN_BRANCH])[op[1] % max(len(branches), 1)]
                _change(table.on_branch(name), lines[name], op[2], f"t{next(names)}", commits)
            elif op[0] == "expire":
                retain_min, extra = op[1], op[2]
                expire_snapshots(table, retain_min=retain_min, retain_max=retain_min + extra, older_than="0s")
            elif op[0] == "rollback" and latest is not None:
                targets = sorted(set(table.snapshots.list_ids()) | set(main.tags.values()))
                target = targets[op[1] % len(targets)]
                try:
                    rollback(table, snapshot_id=target)
                except NotFoundError:
                    continue  # an expired snapshot kept only by a tag: roll back to that tag instead
                main.tags = {n: s for n, s in main.tags.items() if s <= target}
                main.model = main.states[target]
                main.states = {s: m for s, m in main.states.items() if s <= target}
                main.commits = {s: c for s, c in main.commits.items() if s <= target}
            elif op[0] == "truncate":
                result = truncate(table)
                if result.snapshot_id is not None:
                    main.committed(result.snapshot_id, {}, next(commits))
            elif op[0] == "drop-partition":
                result = drop_partitions(table, [{"dt": op[1]}])
                if result.snapshot_id is None:
                    # nothing to do (no live file there): then no row either, and it is reported missing
                    assert not any(d == op[1] for d, _ in main.model), f"{op[1]} has rows but no live files"
                    assert result.missing == ({"dt": op[1]},)
                    continue
                main.committed(result.snapshot_id, {k: v for k, v in main.model.items() if k[0] != op[1]},
                               next(commits))
            elif op[0] == "branch" and latest is not None:
                # From the latest snapshot, or from one of main's tags (its snapshot may have expired).
                tags = sorted(main.tags)
                tag = ([None] + tags)[op[1] % (len(tags) + 1)]
                sid = latest if tag is None else main.tags[tag]
                name = f"b{next(names)}"
                create_branch(table, name, tag=tag)
                lines[name] = Line(main.states[sid], {sid: main.states[sid]}, {tag: sid} if tag else {},
                                   {sid: main.commits[sid]})
            elif op[0] == "fast-forward" and branches:
                _fast_forward(table, lines, branches[op[1] % len(branches)])
            elif op[0] == "delete-branch" and branches:
                name = branches[op[1] % len(branches)]
                delete_branch(table, name)
                del lines[name]  # its files only it used become orphans
            _check(table, lines, scanned)
            # Orphan removal with no age threshold must never break a retained snapshot or tag
            # of any branch.
            remove_orphan_files(table, older_than="0s", force=True)
            _check(table, lines, scanned)
            if after_step is not None:
                after_step(table, lines[MAIN_BRANCH].model)
        for name, line in lines.items():
            assert _rows(table.on_branch(name)) == line.model, name


SCENARIOS = [
    [("write", [(1, "a", "+I"), (2, "a", "+I")]), ("tag", 0), ("write", [(1, "b", "-D")]),
     ("compact", True), ("expire", 1, 0), ("rollback", 1), ("write", [(3, "a", "+I")])],
    [("write", [(k, "a", "+I")]) for k in range(5)] + [("compact", False), ("expire", 2, 1), ("rollback", 0),
                                                        ("write", [(6, "b", "+U")]), ("compact", True)],
    [("write", [(k, "a", "+I") for k in range(6)]), ("tag", 0), ("delete", 3, "d1"), ("compact", False),
     ("delete", 6, ""), ("delete", 6, ""), ("rollback", 1), ("write", [(2, "a", "+U")]), ("compact", True)],
    [("write", [(k, "a", "+I") for k in range(4)]), ("tag", 0), ("drop-partition", "d1"), ("drop-partition", "d1"),
     ("write", [(5, "a", "+I")]), ("truncate",), ("rollback", 1), ("compact", True), ("expire", 1, 0),
     ("write", [(2, "b", "-D")]), ("drop-partition", "d2"), ("truncate",), ("truncate",)],
]

BRANCH_SCENARIOS = [
    # Main moves on from where the branch started and expires that snapshot: its manifest
    # lists and the files main's compaction DELETEd are still the branch's.
    [("write", [(1, "a", "+I"), (2, "a", "+I")]), ("write", [(3, "a", "+I")]), ("branch", 0),
     ("write", [(1, "b", "-D")]), ("compact", True), ("expire", 1, 0), ("on-branch", 0, ("compact", True))],
    # A branch from a tag outlives main's history: main compacts every file the branch reads
    # away, expires down to one snapshot and drops its tag's snapshot; fast-forward is then
    # refused (main lost the branch's start); the branch is deleted and its own files go.
    [("write", [(k, "a", "+I") for k in range(4)]), ("tag", 0), ("write", [(1, "b", "+U"), (2, "a", "-D")]),
     ("branch", 1), ("on-branch", 1, ("write", [(5, "b", "+I"), (0, "a", "-D")])), ("compact", True),
     ("expire", 1, 0), ("on-branch", 1, ("compact", True)), ("on-branch", 1, ("delete", 3, "d1")),
     ("on-branch", 1, ("tag", 7)), ("fast-forward", 0), ("truncate",), ("delete-branch", 0), ("expire", 1, 0)],
    # Fast-forward from the latest snapshot: main takes the branch's snapshots and tags, twice;
    # main then rolls back before the branch's start and commits again, so a third is refused.
    [("write", [(k, "a", "+I") for k in range(3)]), ("write", [(4, "a", "+I")]), ("branch", 0),
     ("on-branch", 1, ("write", [(1, "b", "+U")])), ("on-branch", 1, ("tag", 1)), ("write", [(6, "a", "+I")]),
     ("fast-forward", 0), ("on-branch", 1, ("compact", True)), ("fast-forward", 0), ("rollback", 0),
     ("write", [(2, "b", "-D")]), ("on-branch", 1, ("delete", 6, "")), ("fast-forward", 0), ("expire", 1, 0)],
    # Two branches of one snapshot, one from a tag whose snapshot main expired; each branch
    # only sees its own changes; main's truncate, rollback and drop-partition touch no branch.
    [("write", [(k, "a", "+I") for k in range(5)]), ("tag", 0), ("write", [(6, "a", "+I")]), ("compact", True),
     ("expire", 1, 0), ("branch", 1), ("branch", 0), ("on-branch", 0, ("delete", 6, "")),
     ("on-branch", 1, ("write", [(1, "b", "+I")])), ("drop-partition", "d1"), ("truncate",), ("rollback", 1),
     ("on-branch", 1, ("compact", False)), ("delete-branch", 0), ("write", [(2, "a", "+U")])],
]


@pytest.mark.parametrize("ops", SCENARIOS + BRANCH_SCENARIOS)
def test_lifecycle_scenarios(ops):
    run(ops)


@pytest.mark.interop
@pytest.mark.parametrize("ops", SCENARIOS)
def test_pypaimon_reads_the_table_after_every_step(ops, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    from oracle import official_read

    def pypaimon_agrees(table: Table, model: dict) -> None:
        if table.snapshots.latest_id() is None:
            return
        data, meta = official_read(table.path, tmp_path)
        assert meta["latest_snapshot"] == table.snapshots.latest_id()
        assert {(r["dt"], r["id"]): r["v"] for r in data.to_pylist()} == model

    run(ops, after_step=pypaimon_agrees)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("LAKECTL_MODEL_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=6, max_size=16))
def test_lifecycle_model(ops):
    run(ops)
