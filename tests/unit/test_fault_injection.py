"""Faults injected into FileIO across write, overwrite, compact, expire, rollback and
alter-schema on local files: after every fault the table scans to its last committed
snapshot, a rerun completes, and nothing committed is lost (``fault_lab`` has the loops).

Also: the ``LAKECTL_FAULT`` / ``LAKECTL_KILL_AFTER_WRITES`` variables of a real ``lakectl``
process, and the operation counting of ``inject_fault`` itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import UsageError
from core.fileio import FileIO, OPERATIONS, inject_fault
from core.ops.create import create
from core.table import Table
from core.branch import ABSENT, LEFTOVER, WHOLE, branch_state
from core.ops.check import check
from core.ops.repair import repair
from fault_lab import (FAIL_OPS, OPS, AppendWrite, BranchCreate, BranchDelete, Clone, Delete, Lab, Tally, batch,
                       fail_loop, kill_loop, kill_then, seed, whole_or_none)

REPO = Path(__file__).resolve().parents[2]
KINDS = OPERATIONS  # read, write, create, delete, list
FIGURES = Tally()


def local_template(root: Path, *, write_only: bool = True) -> Lab:
    warehouse = str(root / "template")
    t = Table.locate("db.t", warehouse=warehouse)
    options = {"bucket": "2"}
    if write_only:
        options["write-only"] = "true"
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"], options=options)
    lab = Lab(lambda: Table.open("db.t", warehouse=warehouse))
    seed(lab)
    return lab


def local_clone(root: Path) -> Clone:
    def clone(template: Lab, name: str) -> Lab:
        warehouse = root / name
        shutil.copytree(Path(template.t.path).parents[1], warehouse)
        return template.copy_to(lambda: Table.open("db.t", warehouse=str(warehouse)))
    return clone


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op_name", list(FAIL_OPS))
def test_fail_at_every_operation(tmp_path: Path, op_name: str, kind: str) -> None:
    lab = local_template(tmp_path)
    reached = fail_loop(lab, OPS[op_name](), kind, local_clone(tmp_path))
    tally = lab.tally
    FIGURES.add(tally)
    assert tally.runs == reached + 1
    print(f"\n{op_name} fail:{kind}: {tally.runs} runs, {reached} faults reached, {tally.errors} raised, "
          f"{tally.retries} reruns, {len(tally.late_errors)} raised after landing")


AFTERMATH_STEPS = 3


@pytest.mark.parametrize("op_name", list(OPS))
def test_kill_before_every_mutation(tmp_path: Path, op_name: str) -> None:
    """The crash matrix (issue 17): every command that writes is SIGKILLed before each of its
    mutations in turn (every state a crash can leave: reads change nothing on disk); each
    time the table must read its last committed snapshot, every listed snapshot and tag must
    scan to the model's rows, a rerun completes, and a random sequence of further commands
    (rollbacks, writes, compactions, expires, tags, orphan removal) keeps it so."""
    lab = local_template(tmp_path)
    kills = kill_loop(lab, OPS[op_name](), "mutation", local_clone(tmp_path), aftermath_steps=AFTERMATH_STEPS)
    FIGURES.add(lab.tally)
    assert kills >= 1
    print(f"\n{op_name} kill:mutation: {lab.tally.runs} runs, {kills} kills, {lab.tally.retries} reruns, "
          f"{AFTERMATH_STEPS} commands after each")


@pytest.mark.parametrize("op_class", [BranchCreate, BranchDelete], ids=["create", "delete"])
def test_a_killed_branch_command_then_check_repair(tmp_path: Path, op_class: type) -> None:
    """Issue 24: after each kill of ``branch create`` or ``branch delete`` the user runs
    ``check --repair`` instead of the rerun. It removes exactly the leftover directory, if
    the kill left one, and the table checks sound; the branch is then whole (a create that
    had finished its files, a delete that had not begun) or gone, and scans to its rows."""
    op = op_class()
    name = "fresh" if op_class is BranchCreate else "doomed"
    outcomes: dict[str, int] = {}

    def then(lab: Lab, before: int, context: str) -> None:
        state = branch_state(lab.t, name)
        result = repair(lab.t)
        assert result.leftovers_removed == ([name] if state == LEFTOVER else []), context
        assert result.ok and check(lab.t).ok, f"{context}: {result.problems_left} / {check(lab.t).problems}"
        after = branch_state(lab.t, name)
        assert after == (ABSENT if state == LEFTOVER else state), context
        rows = lab.states[before] if op_class is BranchCreate else op.rows
        whole_or_none(lab, name, rows, op.schemas, f"{context}, then check --repair")
        outcomes[f"{state}->{after}"] = outcomes.get(f"{state}->{after}", 0) + 1

    kills = kill_then(local_template(tmp_path), op, "mutation", local_clone(tmp_path), then)
    assert outcomes.get(f"{LEFTOVER}->{ABSENT}", 0) >= 3, outcomes  # kills inside the bracket
    assert sum(outcomes.values()) == kills
    print(f"\nbranch {op_class.name} killed {kills} times, then check --repair: {outcomes}")


def append_template(root: Path) -> Lab:
    """An append table (no primary key) laid out as the template's: two partitions, two
    commits of new keys (so a delete touches some files and leaves others)."""
    warehouse = str(root / "template")
    t = Table.locate("db.t", warehouse=warehouse)
    create(t, "id BIGINT, v STRING, dt STRING", partition_keys=["dt"], options={"write-only": "true"})
    lab = Lab(lambda: Table.open("db.t", warehouse=warehouse))
    for _ in range(2):
        w = AppendWrite()
        w.prepare(lab)
        before = lab.t.snapshots.latest_id() or 0
        w.run(lab)
        w.after(lab, before)
    return lab


@pytest.mark.parametrize("kind", ["mutation", "read"])
def test_delete_on_an_append_table_under_faults(tmp_path: Path, kind: str) -> None:
    """The append variant of ``delete`` (files rewritten, one OVERWRITE): killed before every
    mutation, then failed at every read; the table reads its last snapshot, a rerun lands.
    (No aftermath: its random commands include primary-key upserts.)"""
    lab = append_template(tmp_path)
    if kind == "mutation":
        faults = kill_loop(lab, Delete(), kind, local_clone(tmp_path))
    else:
        faults = fail_loop(lab, Delete(), kind, local_clone(tmp_path))
    assert faults >= 1
    assert lab.t.snapshots.latest_id() == 2  # the template itself is untouched by the loops


@pytest.mark.parametrize("write_only", [True, False], ids=["write-only", "with-maintenance"])
def test_a_write_that_raised_did_not_land(tmp_path: Path, write_only: bool) -> None:
    """Whenever write raises, nothing was committed (so rerunning it is always right)."""
    for op_name in ("write", "overwrite"):
        for kind in KINDS:
            root = tmp_path / f"{op_name}-{kind}"
            lab = local_template(root, write_only=write_only)
            fail_loop(lab, OPS[op_name](), kind, local_clone(root))
            late = lab.tally.late_errors
            assert not late, f"{len(late)} runs raised after their snapshot landed, e.g.:\n" + "\n".join(late[:5])


def test_totals() -> None:
    """The figures of the loops above (run in this module's order)."""
    if not FIGURES.runs:
        pytest.skip("run together with the loops above")
    print(f"\nlocal fault injection: {FIGURES.runs} faulted runs, {FIGURES.faults} faults reached, "
          f"{FIGURES.errors} runs raised, {FIGURES.retries} reruns, 0 rows lost")


# ---- the fault switch itself ---------------------------------------------------------------
def test_inject_fault_counts_by_kind(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    path = str(tmp_path / "f")
    with inject_fault("fail", "read", 2) as fault:
        io.write_bytes(path, b"x")  # not a read
        assert io.read_bytes(path) == b"x"
        with pytest.raises(OSError, match="injected fault before read #2"):
            io.exists(path)
        assert io.read_bytes(path) == b"x"  # a fail fires once
    assert fault.seen == 3
    with inject_fault("fail", "mutation", 3) as fault:
        io.write_bytes(path + "1", b"1")
        io.read_bytes(path)  # not a mutation
        assert io.try_create(path + "2", b"2")
        with pytest.raises(OSError):
            io.delete(path + "1")
    assert fault.seen == 3 and os.path.exists(path + "1")
    with inject_fault("fail", "any", 1):
        with pytest.raises(OSError):
            io.list_dir(str(tmp_path))
        with inject_fault("fail", "create", 1):  # nested: the inner fault replaces the outer one
            with pytest.raises(OSError):
                io.try_create(path + "3", b"3")
        assert io.try_create(path + "3", b"3")  # the outer fault fired already
    assert io.list_dir(str(tmp_path))  # no fault outside the blocks


def _lakectl(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "lakectl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**clean, "PYTHONPATH": str(REPO), "HOME": str(cwd), **env})


def test_fault_variables_of_a_lakectl_process(tmp_path: Path) -> None:
    """LAKECTL_FAULT and LAKECTL_KILL_AFTER_WRITES reach a real lakectl process: a kill leaves the
    table at its last snapshot, a fail exits 1 with the injected error, a rerun lands."""
    wh = str(tmp_path / "wh")
    data = tmp_path / "rows.jsonl"
    data.write_text('{"id": 1, "v": "a"}\n{"id": 2, "v": "b"}\n')
    assert _lakectl(["-w", wh, "create", "db.t", "-s", "id BIGINT, v STRING", "--primary-key", "id",
                     "-o", "write-only=true"], tmp_path).returncode == 0
    t = Table.open("db.t", warehouse=wh)

    killed = _lakectl(["-w", wh, "write", "db.t", "-i", str(data)], tmp_path, LAKECTL_FAULT="kill:create:1")
    assert killed.returncode == -9, killed.stderr
    assert t.snapshots.list_ids() == []
    killed = _lakectl(["-w", wh, "write", "db.t", "-i", str(data)], tmp_path, LAKECTL_KILL_AFTER_WRITES="2")
    assert killed.returncode == -9, killed.stderr
    assert t.snapshots.list_ids() == []
    failed = _lakectl(["-w", wh, "write", "db.t", "-i", str(data)], tmp_path, LAKECTL_FAULT="fail:write:1")
    assert failed.returncode == 1 and "injected fault before write #1" in failed.stderr
    assert t.snapshots.list_ids() == []
    absorbed = _lakectl(["-w", wh, "write", "db.t", "-i", str(data)], tmp_path, LAKECTL_FAULT="fail:create:1")
    assert absorbed.returncode == 0, absorbed.stderr  # the commit retried the failed publish
    assert t.snapshots.list_ids() == [1]
    assert sorted(t.scan().column("id").to_pylist()) == [1, 2]

    bad = _lakectl(["-w", wh, "scan", "db.t"], tmp_path, LAKECTL_FAULT="explode:now:1")
    assert bad.returncode != 0 and "LAKECTL_FAULT" in bad.stderr


@pytest.mark.slow
def test_issue17_chain_a_killed_expire_then_ordinary_commands_lose_nothing(tmp_path: Path) -> None:
    """The reproduction of issue 17, through the console: a kill at each delete of an expire,
    then snapshots, a scan of every listed snapshot, a rollback to the oldest listed one, a
    write and a full compaction. Every listed snapshot reads its rows (a hand-kept model), the
    rollback lands on a whole snapshot, and the table ends with every row written."""
    wh = str(tmp_path / "wh")
    assert _lakectl(["-w", wh, "create", "db.t", "-s", "id BIGINT, v STRING", "--primary-key", "id",
                     "-o", "bucket=2", "-o", "write-only=true"], tmp_path).returncode == 0
    model: dict[int, dict[int, str]] = {}
    rows: dict[int, str] = {}
    for w in range(5):
        data = tmp_path / f"w{w}.jsonl"
        batch = {i: f"w{w}" for i in range(w * 3, w * 3 + 6)}
        data.write_text("".join(f'{{"id": {i}, "v": "{v}"}}\n' for i, v in batch.items()))
        assert _lakectl(["-w", wh, "write", "db.t", "-i", str(data)], tmp_path).returncode == 0
        rows.update(batch)
        model[w + 1] = dict(rows)
    assert _lakectl(["-w", wh, "compact", "db.t", "--full"], tmp_path).returncode == 0
    model[6] = dict(rows)
    template = Path(wh)
    deletes = 0
    for n in range(1, 200):
        case = tmp_path / f"kill-{n}"
        shutil.copytree(template, case / "wh")
        cwh = str(case / "wh")
        killed = _lakectl(["-w", cwh, "expire", "db.t", "--retain-min", "1", "--retain-max", "1"], case,
                          LAKECTL_FAULT=f"kill:delete:{n}")
        if killed.returncode == 0:
            break
        assert killed.returncode == -9, killed.stderr
        deletes += 1
        t = Table.open("db.t", warehouse=cwh)
        listed = t.snapshots.list_ids()
        assert 6 in listed
        for sid in listed:
            got = {r["id"]: r["v"] for r in t.scan(snapshot_id=sid).to_pylist()}
            assert got == model[sid], f"kill at delete {n}: snapshot {sid} is listed but reads wrong"
        oldest = listed[0]
        back = _lakectl(["-w", cwh, "rollback", "db.t", "--snapshot-id", str(oldest)], case)
        assert back.returncode == 0, back.stderr
        more = case / "more.jsonl"
        more.write_text('{"id": 100, "v": "x"}\n')
        assert _lakectl(["-w", cwh, "write", "db.t", "-i", str(more)], case).returncode == 0
        assert _lakectl(["-w", cwh, "compact", "db.t", "--full"], case).returncode == 0, f"kill at delete {n}"
        final = {r["id"]: r["v"] for r in Table.open("db.t", warehouse=cwh).scan().to_pylist()}
        assert final == {**model[oldest], 100: "x"}
        shutil.rmtree(case)
    assert deletes >= 5  # five snapshot files and their data files and manifests were in play
