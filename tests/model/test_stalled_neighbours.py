"""Issue 43: one command stalled at one of its file operations while another runs to the end.

Each test is a case of the issue as a user meets it, through the console script: command A is
held before its N-th storage mutation (``LAKECTL_FAULT=stall:OP:N``), command B (and often a
plain write) runs to completion, then A goes on. The claims are the stall explorer's
invariants, on a hand-computed model: a write that exited 0 is there exactly once unless a
command that exited 0 after it removed it by its meaning; ids are gapless; every tag and
branch that exited 0 reads; ``check`` is clean; a lost race is exit 4, never 1, and never 0
with the work undone.
"""

from __future__ import annotations

import json
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from expire_race_kit import Lakectl, csv_of, snapshot_ids

pytestmark = pytest.mark.slow

T = "db.t"
SCHEMA = "id BIGINT, v STRING, dt STRING"
AGGRESSIVE = ("--retain-max", "1", "--retain-min", "1", "--older-than", "0s")


class Stalled:
    """A console-script command held before one of its storage operations."""

    def __init__(self, lk: Lakectl, tmp: Path, fault: str, *args: str) -> None:
        self.stall = tmp / f"stall-{time.monotonic_ns()}"
        env = {**lk.env, "LAKECTL_FAULT": fault, "LAKECTL_STALL_FILE": str(self.stall),
               "LAKECTL_STALL_SECONDS": "120"}
        self.proc = subprocess.Popen(lk.argv("--format", "json", *args), env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not self.stall.exists():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"{args} ended before its stall ({fault}):\n{out}\n{err}")
            assert time.monotonic() < deadline, f"{args} never reached {fault}"
            time.sleep(0.02)

    def resume(self) -> tuple[int, str, str]:
        self.stall.unlink(missing_ok=True)
        out, err = self.proc.communicate(timeout=180)
        return self.proc.returncode, out, err


@contextmanager
def stalled(lk: Lakectl, tmp: Path, fault: str, *args: str) -> Iterator[Stalled]:
    s = Stalled(lk, tmp, fault, *args)
    try:
        yield s
    finally:
        s.stall.unlink(missing_ok=True)
        if s.proc.poll() is None:
            s.proc.communicate(timeout=180)


class Model:
    """The table's rows as the commands that exited 0 left them, and the writes' snapshots."""

    def __init__(self, lk: Lakectl, tmp: Path) -> None:
        self.lk, self.tmp = lk, tmp
        self.rows: dict[int, tuple[str, str]] = {}
        self.at: dict[int, dict[int, tuple[str, str]]] = {}  # rows at each snapshot id
        self.n = 0

    def csv(self, rows: list[tuple[int, str, str]]) -> str:
        self.n += 1
        return csv_of(self.tmp / f"in{self.n}.csv", rows)

    def write(self, *rows: tuple[int, str, str]) -> int:
        out = self.lk.json("write", T, "--input", self.csv(list(rows)))
        self.apply(list(rows))
        sid = out["snapshot_id"]  # type: ignore[index]
        self.at[sid] = dict(self.rows)
        return sid

    def apply(self, rows: list[tuple[int, str, str]]) -> None:
        for i, v, d in rows:
            self.rows[i] = (v, d)

    def expect(self, table: str = T, **scan: str) -> None:
        args = [a for k, v in scan.items() for a in (f"--{k.replace('_', '-')}", v)]
        got = {r["id"]: (r["v"], r["dt"]) for r in self.lk.json("scan", table, *args)}  # type: ignore[union-attr]
        assert got == self.rows, (got, self.rows)


class Store:
    """The warehouse's files, on a local disk or (``fs``: an fsspec filesystem) on S3."""

    def __init__(self, warehouse: str, fs=None) -> None:
        self.root, self.fs = warehouse.rstrip("/"), fs

    def read(self, rel: str) -> str:
        if self.fs is not None:
            return self.fs.cat_file(f"{self.root}/{rel}").decode()
        return (Path(self.root) / rel).read_text()

    def exists(self, rel: str) -> bool:
        if self.fs is not None:
            return self.fs.exists(f"{self.root}/{rel}")
        return (Path(self.root) / rel).exists()

    def snapshot_files(self, rel: str) -> list[str]:
        if self.fs is not None:
            return [p for p in self.fs.find(f"{self.root}/{rel}") if "/snapshot-" in p]
        return [str(p) for p in (Path(self.root) / rel).rglob("snapshot-*")]


def whole(lk: Lakectl, table: str = T) -> None:
    """Gapless ids from EARLIEST to LATEST and a clean check."""
    report = lk.json("check", table)
    assert report["ok"] is True, report  # type: ignore[index]
    out = lk.json("snapshots", table)
    ids = sorted(s["snapshot_id"] for s in out)  # type: ignore[union-attr]
    assert ids == list(range(ids[0], ids[-1] + 1)), ids


def make_table(lk: Lakectl) -> Lakectl:
    lk.ok("create", T, "--schema", SCHEMA, "--primary-key", "id", "--option", "bucket=1",
          "--option", "write-only=true")
    return lk


@pytest.fixture()
def lk(tmp_path: Path) -> Lakectl:
    lk = Lakectl(str(tmp_path / "wh"))
    lk.store = Store(lk.warehouse)  # type: ignore[attr-defined]
    return make_table(lk)


def five(m: Model) -> None:
    for i in range(1, 6):
        m.write((i, f"s{i}", "a"))


# ---- case 1: rollback next to a write --------------------------------------------------------
def test_a_write_during_a_rollback_lands_after_it(lk: Lakectl, tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    five(m)
    target = dict(m.at[2])
    # Held after it announced itself (its busy marker, then its rewrite marker), before removing 5.
    with stalled(lk, tmp_path, "stall:mutation:3", "rollback", T, "--snapshot-id", "2") as rb:
        writer = subprocess.Popen(lk.argv("--format", "json", "write", T, "--input", m.csv([(9, "w", "a")])),
                                  env=lk.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        assert writer.poll() is None, "the write did not wait for the rollback"
        code, out, err = rb.resume()
        assert code == 0, err
    out, err = writer.communicate(timeout=180)
    assert writer.returncode == 0, err
    assert json.loads(out)["snapshot_id"] == 3  # on the rolled-back chain
    m.rows = target
    m.apply([(9, "w", "a")])
    m.expect()
    assert snapshot_ids(lk) == [1, 2, 3]
    whole(lk)


def test_a_write_that_lands_before_the_rollback_removes_anything_is_rolled_back_too(lk: Lakectl,
                                                                                   tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    five(m)
    # Held before its markers: the write lands (exit 0) first; the rollback, which exited 0
    # after it, removes it by its meaning, and nothing is left above a gap.
    with stalled(lk, tmp_path, "stall:mutation:1", "rollback", T, "--snapshot-id", "2") as rb:
        assert m.write((9, "w", "a")) == 6
        code, out, err = rb.resume()
        assert code == 0, err
    m.rows = dict(m.at[2])
    m.expect()
    assert snapshot_ids(lk) == [1, 2]
    assert m.write((10, "x", "a")) == 3 and m.write((11, "y", "a")) == 4
    m.expect()
    whole(lk)


def test_a_rollback_whose_target_is_expired_meanwhile_refuses(lk: Lakectl, tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    five(m)
    with stalled(lk, tmp_path, "stall:mutation:1", "rollback", T, "--snapshot-id", "2") as rb:
        lk.ok("expire", T, *AGGRESSIVE)
        code, out, err = rb.resume()
    assert code == 4, err
    assert "was expired" in err
    m.expect()  # nothing was rolled back
    assert lk.store.read("db.db/t/snapshot/LATEST").strip() == "5"  # type: ignore[attr-defined]
    assert m.write((9, "w", "a")) == 6
    whole(lk)


def test_rollback_as_latest_keeps_every_snapshot_and_tag(lk: Lakectl, tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    five(m)
    lk.ok("tag", "create", T, "four", "--snapshot-id", "4")
    out = lk.json("rollback", T, "--snapshot-id", "2", "--as-latest")
    assert out["new_snapshot_id"] == 6 and out["snapshots_removed"] == []  # type: ignore[index]
    m.rows = dict(m.at[2])
    m.expect()
    assert snapshot_ids(lk) == [1, 2, 3, 4, 5, 6]
    m.rows = dict(m.at[4])
    m.expect(tag="four")
    m.rows = dict(m.at[2])
    assert m.write((9, "w", "a")) == 7
    m.expect()
    whole(lk)


# ---- case 2: overlapping expires and a stalled write ------------------------------------------
def test_overlapping_expires_never_let_a_stalled_write_keep_a_retired_id(lk: Lakectl, tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    for i in range(1, 4):
        m.write((i, f"s{i}", "a"))
    with stalled(lk, tmp_path, "stall:publish:1", "write", T, "--input", m.csv([(50, "stalled", "a")])) as a:
        for i in range(4, 8):
            m.write((i, f"s{i}", "a"))
        # E2 holds the rewrite marker, stopped just before it writes EARLIEST (its mutations: the
        # busy marker, the rewrite marker, the journal, EARLIEST).
        with stalled(lk, tmp_path, "stall:mutation:4", "expire", T, "--retain-min", "4", "--older-than", "0s") as e2:
            aggressive = lk.run("--format", "json", "expire", T, *AGGRESSIVE)
            assert aggressive.returncode == 4, aggressive.stderr  # waits for E2, then gives up
            assert "expire by" in aggressive.stderr
            code, out, err = e2.resume()
            assert code == 0, err
            assert json.loads(out)["snapshots_expired"] == [1, 2, 3]
        code, out, err = a.resume()
    assert code == 0, err
    m.apply([(50, "stalled", "a")])
    assert json.loads(out)["snapshot_id"] == 8
    m.expect()
    lk.ok("expire", T, *AGGRESSIVE)
    m.expect()
    whole(lk)


# ---- case 3: a write across a rename or a drop ------------------------------------------------
@pytest.mark.parametrize("neighbour", ["rename", "drop"])
def test_a_write_across_a_rename_or_drop_commits_nothing_anywhere(lk: Lakectl, tmp_path: Path,
                                                                  neighbour: str) -> None:
    m = Model(lk, tmp_path)
    m.write((1, "a", "a"))
    with stalled(lk, tmp_path, "stall:publish:1", "write", T, "--input", m.csv([(2, "late", "a")])) as w:
        if neighbour == "rename":
            lk.ok("rename", T, "db.u")
        else:
            lk.ok("drop", T)
        code, out, err = w.resume()
    assert code == 4, err
    assert "renamed" in err and "nothing was committed" in err
    assert lk.store.snapshot_files("db.db/t") == []  # type: ignore[attr-defined]
    if neighbour == "rename":
        m.expect("db.u")
        whole(lk, "db.u")
    lk.ok("create", T, "--schema", SCHEMA, "--primary-key", "id", "--option", "bucket=1")
    m.rows = {}
    m.expect()
    assert m.write((3, "new", "a")) == 1
    m.expect()
    whole(lk)


@pytest.mark.parametrize("neighbour", ["rename", "branch-rename"])
def test_a_write_published_just_before_a_rename_exits_0_in_the_renamed_table(lk: Lakectl, tmp_path: Path,
                                                                             neighbour: str) -> None:
    """Held between its publish and the checks after it, a write has landed: a local rename
    (one os.rename) must not move it away under those checks, which would take the moved
    snapshot for "nothing was committed" (exit 4) while it is in the renamed table."""
    m = Model(lk, tmp_path)
    branch = ["--branch", "b"] if neighbour == "branch-rename" else []
    m.write((1, "a", "a"))
    if branch:
        lk.ok("branch", "create", T, "b")  # from the latest snapshot: row 1
    trace = tmp_path / "rename-trace"
    rename = (["rename", T, "db.u"] if not branch else ["branch", "rename", T, "b", "c"])
    with stalled(lk, tmp_path, "stall:published:1", "write", T, *branch,
                 "--input", m.csv([(2, "late", "a")])) as w:
        other = subprocess.Popen(lk.argv("--format", "json", *rename), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 env={**lk.env, "LAKECTL_REWRITE_WAIT_SECONDS": "120",
                                      "LAKECTL_FAULT_TRACE": str(trace)})
        deadline = time.monotonic() + 120
        # The rename has taken its closing marker once (it lets go of it while a busy marker
        # is live, and takes it again each round).
        while other.poll() is None and not (trace.exists() and ".lakectl-closing" in trace.read_text()):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.3)  # room to move the table now, were it not waiting for the commit
        code, out, err = w.resume()
        _, rename_err = other.communicate(timeout=120)
    assert code == 0, err
    assert other.returncode == 0, rename_err
    m.apply([(2, "late", "a")])
    if branch:
        m.expect(T, branch="c")
    else:
        m.expect("db.u")
        whole(lk, "db.u")
        assert not any(p.name.startswith(".lakectl-busy-") for p in (Path(lk.warehouse) / "db.db" / "u").iterdir())


# ---- cases 5 and 6: tags and branches across an expire ----------------------------------------
def across_an_expire(lk: Lakectl, tmp_path: Path, *args: str) -> tuple[int, str]:
    """Run ``args`` stalled before its first change while an aggressive expire runs through;
    its exit code and stderr."""
    with stalled(lk, tmp_path, "stall:mutation:1", *args) as s:
        lk.ok("expire", T, *AGGRESSIVE)
        code, _, err = s.resume()
    return code, err


def test_a_tag_created_across_an_expire_is_undone(lk: Lakectl, tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    five(m)
    code, err = across_an_expire(lk, tmp_path, "tag", "create", T, "old", "--snapshot-id", "2")
    assert code == 4, err
    assert "was expired" in err
    assert lk.json("tag", "list", T) == []
    whole(lk)


def test_an_expire_that_planned_before_a_tag_keeps_the_tag_files(lk: Lakectl, tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    five(m)
    # The expire has planned and written its journal; it stops before EARLIEST.
    with stalled(lk, tmp_path, "stall:mutation:4", "expire", T, *AGGRESSIVE) as ex:
        lk.ok("tag", "create", T, "two", "--snapshot-id", "2")
        code, out, err = ex.resume()
        assert code == 0, err
    m.rows = dict(m.at[2])
    m.expect(tag="two")
    whole(lk)


def test_a_branch_created_across_an_expire_is_undone_and_one_before_it_reads(lk: Lakectl,
                                                                            tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    five(m)
    code, err = across_an_expire(lk, tmp_path, "branch", "create", T, "b2", "--snapshot-id", "2")
    assert code == 4, err
    assert lk.json("branch", "list", T) == []
    # The reverse order: the branch exits 0 before the expire writes EARLIEST.
    for i in range(6, 9):
        m.write((i, f"s{i}", "a"))
    with stalled(lk, tmp_path, "stall:mutation:4", "expire", T, *AGGRESSIVE) as ex:
        lk.ok("branch", "create", T, "b6", "--snapshot-id", "6")
        code, out, err = ex.resume()
        assert code == 0, err
    m.rows = dict(m.at[6])
    m.expect("db.t", branch="b6")
    whole(lk)


# ---- case 7: fast-forward across an expire ----------------------------------------------------
def test_a_fast_forward_whose_start_is_expired_meanwhile_leaves_no_marker(lk: Lakectl, tmp_path: Path) -> None:
    m = Model(lk, tmp_path)
    m.write((1, "a", "a"))
    lk.ok("branch", "create", T, "dev")
    lk.ok("write", T, "--branch", "dev", "--input", m.csv([(2, "dev", "a")]))
    for i in range(3, 6):
        m.write((i, f"s{i}", "a"))
    with stalled(lk, tmp_path, "stall:mutation:1", "branch", "fast-forward", T, "dev") as ff:
        lk.ok("expire", T, *AGGRESSIVE)
        code, out, err = ff.resume()
    assert code == 4, err
    assert not lk.store.exists("db.db/t/snapshot/FAST-FORWARD")  # type: ignore[attr-defined]
    assert m.write((9, "w", "a")) == 5  # main (snapshots 1-4) takes writes
    m.expect()
    whole(lk)


# ---- rename and drop next to a command of several steps (core/busy.py) -------------------------
# Each command stalled after its busy marker and its first change (mutation 1 is the marker).
MIDWAY = {  # the stall, the command, how the rename's refusal names it
    "rollback": ("stall:mutation:4", ("rollback", T, "--snapshot-id", "2"), "'roll back db.t to snapshot 2'"),
    "tag-rename": ("stall:mutation:3", ("tag", "rename", T, "old", "new"), "'rename tag old'"),
    "branch-delete": ("stall:mutation:3", ("branch", "delete", T, "b"), "'delete branch b'"),
}  # rollback: snapshot-5 removed, 4 not; tag-rename: both names there; branch-delete: UNFINISHED there


@pytest.mark.parametrize("neighbour", ["rename", "drop"])
@pytest.mark.parametrize("command", list(MIDWAY))
def test_rename_and_drop_wait_for_a_command_half_way(lk: Lakectl, tmp_path: Path, command: str,
                                                     neighbour: str) -> None:
    """A rename or drop next to a command stalled half-way gives up with exit 4, naming it, and
    changes nothing; once the command has finished, the rename or drop goes through and moves
    or removes the table that command left (before busy markers, the rename moved the half-done
    table and the command went on in a fresh directory at the old name, exit 0)."""
    m = Model(lk, tmp_path)
    five(m)
    lk.ok("tag", "create", T, "old", "--snapshot-id", "3")
    lk.ok("branch", "create", T, "b")
    fault, args, named = MIDWAY[command]
    with stalled(lk, tmp_path, fault, *args) as s:
        proc = lk.run(*(("rename", T, "db.u") if neighbour == "rename" else ("drop", T)))
        assert proc.returncode == 4, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]  # (-v: a traceback above it)
        assert "is at work on db.t" in last and "nothing was changed" in last and named in last, last
        assert not lk.store.exists("db.db/u")  # type: ignore[attr-defined]
        code, _, err = s.resume()
    assert code == 0, err
    if command == "rollback":
        m.rows = {i: v for i, v in m.at[2].items()}
    tags = {"tag-rename": ["new"], "rollback": []}.get(command, ["old"])  # a rollback to 2 removes tags past it
    branches = [] if command == "branch-delete" else ["b"]
    if neighbour == "drop":
        lk.ok("drop", T)
        assert not lk.store.exists("db.db/t")  # type: ignore[attr-defined]
        return
    lk.ok("rename", T, "db.u")
    assert not lk.store.exists("db.db/t")  # type: ignore[attr-defined]  (nothing came back at the old name)
    m.expect("db.u")
    assert [t["tag"] for t in lk.json("tag", "list", "db.u")] == tags  # type: ignore[union-attr]
    assert [b["branch"] for b in lk.json("branch", "list", "db.u")] == branches  # type: ignore[union-attr]
    assert [p for p in Path(lk.warehouse, "db.db", "u").iterdir() if p.name.startswith(".lakectl-")] == []
    whole(lk, "db.u")
