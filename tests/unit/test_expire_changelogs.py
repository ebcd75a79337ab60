"""Decoupled changelog retention (``changelog.*`` options): expire keeps ``changelog/changelog-N``
and the files it needs, follow reads them below the earliest snapshot, expire-changelogs removes
them, remove-orphan-files and rollback respect them; a killed expire-changelogs is finished by
the next run.

What must survive is checked against reads taken before expiring (scans of the retained
snapshots, the changes a follower from snapshot 1 sees), never against the code's own plan.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from core.errors import NotFoundError
from core.manifest import DELETE
from core.ops.check import check
from core.ops.create import create
from core.ops.expire import expire_snapshots
from core.ops.expire_changelogs import expire_changelogs
from core.ops.follow import follow, resolve_settings
from core.ops.orphans import remove_orphan_files
from core.ops.rollback import rollback
from core.table import Table

LAKECTL = str(Path(sys.executable).parent / "lakectl")
DECOUPLED = {"changelog.num-retained.max": "100", "changelog.time-retained": "1d"}


def make(tmp_path: Path, producer: str, options: dict[str, str] | None = None, name: str = "t") -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "1", "changelog-producer": producer, "num-sorted-run.compaction-trigger": "3",
                    **(DECOUPLED if options is None else options)})
    for i in range(8):
        t.write(pa.table({"id": pa.array([i % 3, 10 + i], pa.int64()), "v": [f"a{i}", f"b{i}"]}))
    return t


def changes_from(t: Table, start: int) -> list[tuple[int, list[str]]]:
    settings = resolve_settings(t.schema.options, mode="from-snapshot", snapshot_id=start)
    return [(b.snapshot_id, sorted(map(str, b.rows.to_pylist())))
            for b in follow(t, settings, max_snapshots=1000, should_stop=lambda: True, sleep=lambda s: None)]


def scans(t: Table) -> dict[int, list[dict[str, Any]]]:
    return {sid: sorted(t.scan(snapshot_id=sid).to_pylist(), key=lambda r: r["id"]) for sid in t.snapshots.list_ids()}


def tree(t: Table) -> dict[str, int]:
    out = {}
    for root, _, files in os.walk(t.path):
        for f in files:
            if not f.startswith("."):
                p = os.path.join(root, f)
                out[os.path.relpath(p, t.path)] = os.path.getsize(p)
    return out


@pytest.mark.parametrize("producer", ["none", "input", "lookup", "full-compaction"])
def test_expire_keeps_changelogs_that_follow_reads(tmp_path: Path, producer: str) -> None:
    t = make(tmp_path, producer)
    before = changes_from(t, 1)
    assert before
    result = expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
    assert result.snapshots_expired and result.changelogs_written == result.snapshots_expired
    names = sorted(os.listdir(os.path.join(t.path, "changelog")))
    assert names == sorted(["LATEST", *(f"changelog-{i}" for i in result.snapshots_expired)])
    # A follower from snapshot 1 reads the retained changelogs, then the snapshots, as before.
    assert changes_from(t, 1) == before
    kept = scans(t)
    checked = check(t)
    assert checked.ok and checked.changelogs == len(result.snapshots_expired), checked.problems
    assert remove_orphan_files(t, older_than="0s", force=True).files == 0
    assert changes_from(t, 1) == before and scans(t) == kept

    # expire-changelogs keeps the newest changelog (Java's cap at the latest changelog id).
    dry = expire_changelogs(t, retain_min=1, older_than="0s", max_deletes=100, dry_run=True)
    done = expire_changelogs(t, retain_min=1, older_than="0s", max_deletes=100)
    assert done.changelogs_expired == dry.changelogs_expired == result.snapshots_expired[:-1]
    last = result.snapshots_expired[-1]
    assert sorted(os.listdir(os.path.join(t.path, "changelog"))) == ["EARLIEST", "LATEST", f"changelog-{last}"]
    assert scans(t) == kept
    assert changes_from(t, last) == [b for b in before if b[0] >= last]
    with pytest.raises(NotFoundError, match="changelog.num-retained"):
        changes_from(t, 1)
    # Nothing it left is unreferenced, nothing referenced is gone.
    assert check(t).ok and check(t).changelogs == 1
    assert remove_orphan_files(t, older_than="0s", force=True).files == 0
    assert changes_from(t, last) == [b for b in before if b[0] >= last]


def test_check_reports_a_missing_changelog_file(tmp_path: Path) -> None:
    t = make(tmp_path, "input")
    expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
    changelog = json.loads(Path(t.path, "changelog", "changelog-1").read_text())
    mio = t.manifests()
    entry = next(e for m in mio.read_manifest_list(changelog["changelogManifestList"])
                 for e in mio.read_manifest(m.file_name))
    victim = next(Path(t.path).rglob(entry.file.file_name))
    victim.unlink()
    result = check(t)
    assert not result.ok
    assert [p.kind for p in result.problems] == ["changelog-file"] and entry.file.file_name in result.problems[0].path


def test_not_decoupled_is_unchanged(tmp_path: Path) -> None:
    # changelog.* no larger than snapshot.*: today's behaviour exactly, no changelog/ directory
    t = make(tmp_path, "input", {"changelog.num-retained.max": "5", "snapshot.num-retained.max": "5"})
    result = expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
    assert result.snapshots_expired and result.changelogs_written == []
    assert not os.path.exists(os.path.join(t.path, "changelog"))
    with pytest.raises(NotFoundError, match="has expired"):
        changes_from(t, 1)


def test_expire_pass_also_expires_changelogs(tmp_path: Path) -> None:
    # changelog.num-retained.max 12 > snapshot's 4: the expire after each write keeps a
    # window of 12 ids of changelog history, and drops what falls out of it.
    t = make(tmp_path, "none", {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4",
                                "changelog.num-retained.min": "2", "changelog.num-retained.max": "12",
                                "changelog.time-retained": "1d"})
    for i in range(8):
        t.write(pa.table({"id": pa.array([100 + i], pa.int64()), "v": ["x"]}))
    latest = t.snapshots.latest_id()
    ids = sorted(int(n.split("-")[1]) for n in os.listdir(os.path.join(t.path, "changelog")) if n.startswith("changelog-"))
    assert t.snapshots.list_ids() == list(range(latest - 3, latest + 1))
    assert ids == list(range(latest - 11, latest - 3))
    batches = [b[0] for b in changes_from(t, ids[0])]  # APPEND snapshots only (no producer)
    assert batches[0] < t.snapshots.earliest_id() and batches[-1] >= latest - 1


def test_rollback_to_tag_drops_newer_changelogs(tmp_path: Path) -> None:
    t = make(tmp_path, "none")
    assert t.file_io.try_create(t.tags.path("t2"), t.snapshots.snapshot(2).to_json().encode())
    expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
    rollback(t, tag="t2")
    names = sorted(n for n in os.listdir(os.path.join(t.path, "changelog")) if n.startswith("changelog-"))
    assert names == ["changelog-1", "changelog-2"]
    assert t.snapshots.list_ids() == [2]


def run_cli(t: Table, *args: str, kill_after: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    if kill_after is not None:
        env["LAKECTL_KILL_AFTER_WRITES"] = str(kill_after)
    warehouse = str(Path(t.path).parent.parent)
    return subprocess.run([LAKECTL, *args[:1], t.name, "-w", warehouse, "--format", "json", *args[1:]],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["expire", "expire-changelogs"])
def test_kill_at_every_mutation_then_rerun(tmp_path: Path, command: str) -> None:
    src = make(tmp_path / "src", "input")
    if command == "expire-changelogs":
        expire_snapshots(src, retain_min=2, older_than="0s", max_deletes=100)
    args = [command, "--retain-min", "2", "--older-than", "0s", "--max-deletes", "100"]
    before = changes_from(src, 1)
    ref = Table.locate("db.t", warehouse=str(tmp_path / "ref" / "wh"))
    shutil.copytree(src.path, ref.path)
    proc = run_cli(ref, *args)
    assert proc.returncode == 0, proc.stderr
    want = tree(ref)
    k = 0
    while True:
        k += 1
        t = Table.locate("db.t", warehouse=str(tmp_path / f"k{k}" / "wh"))
        shutil.copytree(src.path, t.path)
        proc = run_cli(t, *args, kill_after=k)
        if proc.returncode == 0:
            break
        assert proc.returncode == -9, (k, proc.returncode, proc.stderr)
        # Every snapshot and every changelog still listed reads as before.
        first = min([*t.snapshots.list_ids(),
                     *(int(n.split("-")[1]) for n in os.listdir(os.path.join(t.path, "changelog"))
                       if n.startswith("changelog-"))] if os.path.exists(os.path.join(t.path, "changelog"))
                    else t.snapshots.list_ids())
        assert changes_from(t, first) == [b for b in before if b[0] >= first], k
        for sid, rows in scans(t).items():
            assert rows == sorted(src.scan(snapshot_id=sid).to_pylist(), key=lambda r: r["id"]), (k, sid)
        proc = run_cli(t, *args)
        assert proc.returncode == 0, (k, proc.stderr)
        assert tree(t) == want, k
        shutil.rmtree(t.path)
    assert k > 5
    assert tree(t) == want


def _first_readable(t: Table) -> int:
    """The lowest id a follower can start at: the earliest changelog kept, else the earliest snapshot."""
    d = os.path.join(t.path, "changelog")
    ids = sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("changelog-")) if os.path.isdir(d) else []
    earliest = t.snapshots.earliest_id()
    return min([i for i in ids if earliest is None or i < earliest] or [earliest])


@pytest.mark.parametrize("command", ["expire", "expire-changelogs"])
def test_fail_before_each_mutation_then_rerun(tmp_path: Path, command: str) -> None:
    """An OSError before any write, create or delete leaves every kept snapshot and changelog
    readable, and a rerun ends where an unfaulted run ends."""
    from core.fileio import inject_fault

    src = make(tmp_path / "src", "input")
    if command == "expire-changelogs":
        expire_snapshots(src, retain_min=2, older_than="0s", max_deletes=100)

    def run(t: Table) -> None:
        if command == "expire":
            expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
        else:
            expire_changelogs(t, retain_min=2, older_than="0s", max_deletes=100)

    before = changes_from(src, 1)
    ref = Table.locate("db.t", warehouse=str(tmp_path / "ref" / "wh"))
    shutil.copytree(src.path, ref.path)
    run(ref)
    want = tree(ref)
    faults = 0
    for kind in ("write", "create", "delete"):
        n = 0
        while True:
            n += 1
            t = Table.locate("db.t", warehouse=str(tmp_path / f"{kind}{n}" / "wh"))
            shutil.copytree(src.path, t.path)
            with inject_fault("fail", kind, n) as fault:
                try:
                    run(t)
                except OSError:
                    pass
            if fault.seen < n:  # the run finished before its n-th operation of that kind
                shutil.rmtree(t.path)
                faults += n - 1
                break
            first = _first_readable(t)
            assert changes_from(t, first) == [b for b in before if b[0] >= first], (kind, n)
            for sid, rows in scans(t).items():
                assert rows == sorted(src.scan(snapshot_id=sid).to_pylist(), key=lambda r: r["id"]), (kind, n, sid)
            run(t)
            assert tree(t) == want, (kind, n)
            shutil.rmtree(t.path)
    assert faults > 10, faults  # every delete, the journal, EARLIEST, the markers


def test_expire_changelogs_waits_for_the_rewrite_marker(tmp_path: Path) -> None:
    """expire-changelogs takes the same rewrite marker as expire and rollback: never both at once."""
    from core.errors import CommitConflictError
    from core.rewrite import EXPIRE, acquire, release

    t = make(tmp_path, "none")
    expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
    marker = acquire(t.file_io, t.snapshots.dir, EXPIRE, what="expire snapshots", table=t.name)
    try:
        with pytest.raises(CommitConflictError):
            expire_changelogs(t, retain_min=1, older_than="0s")
        assert expire_changelogs(t, retain_min=1, older_than="0s", dry_run=True).changelogs_expired  # reads only
    finally:
        release(t.file_io, marker)
    assert expire_changelogs(t, retain_min=1, older_than="0s").changelogs_expired


def test_a_consumer_holds_changelogs_and_resumes_from_them(tmp_path: Path) -> None:
    from core.consumer import ConsumerManager

    t = make(tmp_path, "input")
    ConsumerManager(t.file_io, t.branch_path).record("job", 3)
    # The consumer holds snapshot 3 back from expire (Paimon's rule)...
    expire_snapshots(t, retain_min=1, older_than="0s", max_deletes=100)
    assert t.snapshots.earliest_id() == 3
    ConsumerManager(t.file_io, t.branch_path).record("job", 2)  # (a consumer reset below the earliest)
    # ...and changelog 2 from expire-changelogs; following with it reads changelog 2 first.
    assert expire_changelogs(t, retain_min=1, older_than="0s").changelogs_expired == [1]
    settings = resolve_settings(t.schema.options, consumer_id="job")
    first = next(iter(follow(t, settings, max_snapshots=1, should_stop=lambda: True, sleep=lambda s: None)))
    assert first.snapshot_id == 2


def test_a_rollback_voids_a_killed_runs_journal(tmp_path: Path) -> None:
    """A journal whose end changelog a rollback removed is dropped, not carried out: its ids may
    name new changelogs by the time the next run finds it."""
    from core.changelog_manager import JOURNAL_PREFIX
    from core.ops import expire_changelogs as ec

    t = make(tmp_path, "none")
    assert t.file_io.try_create(t.tags.path("t2"), t.snapshots.snapshot(2).to_json().encode())
    expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
    real = ec._carry_out
    ec._carry_out = lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt())  # killed after the journal
    try:
        with pytest.raises(KeyboardInterrupt):
            expire_changelogs(t, retain_min=1, older_than="0s", max_deletes=100)
    finally:
        ec._carry_out = real
    journals = [n for n in os.listdir(os.path.join(t.path, "changelog")) if n.startswith(JOURNAL_PREFIX)]
    assert len(journals) == 1
    rollback(t, tag="t2")
    for i in range(3):  # new commits, expired again: changelog ids 3.. are new ones
        t.write(pa.table({"id": pa.array([50 + i], pa.int64()), "v": ["n"]}))
    expire_snapshots(t, retain_min=1, older_than="0s", max_deletes=100)
    kept = sorted(n for n in os.listdir(os.path.join(t.path, "changelog")) if n.startswith("changelog-"))
    # the next run drops the stale journal and plans afresh (nothing is due with min 1000)
    expire_changelogs(t, retain_min=1000, retain_max=1000, older_than="0s")
    assert sorted(n for n in os.listdir(os.path.join(t.path, "changelog")) if n.startswith("changelog-")) == kept
    assert not [n for n in os.listdir(os.path.join(t.path, "changelog")) if n.startswith(JOURNAL_PREFIX)]
    assert check(t).ok


@pytest.mark.parametrize("producer", ["none", "input"])
def test_delete_all_removes_every_changelog_and_only_their_files(tmp_path: Path, producer: str) -> None:
    t = make(tmp_path, producer)
    assert t.file_io.try_create(t.tags.path("t2"), t.snapshots.snapshot(2).to_json().encode())
    tagged = sorted(t.scan(tag="t2").to_pylist(), key=lambda r: r["id"])
    expired = expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100).snapshots_expired
    assert expired
    kept, earliest = scans(t), t.snapshots.earliest_id()
    following = changes_from(t, earliest)
    files_before = tree(t)
    dry = expire_changelogs(t, delete_all=True, dry_run=True)
    assert tree(t) == files_before  # a dry run deletes nothing
    done = expire_changelogs(t, delete_all=True)
    # Every changelog goes, the newest included, and with them the hints.
    assert done.changelogs_expired == dry.changelogs_expired == expired
    assert done.earliest_before == expired[0] and done.earliest_after is None
    assert os.listdir(os.path.join(t.path, "changelog")) == []
    # What the snapshots and the tag read is untouched; nothing left is unreferenced.
    assert scans(t) == kept and changes_from(t, earliest) == following
    assert sorted(t.scan(tag="t2").to_pylist(), key=lambda r: r["id"]) == tagged
    checked = check(t)
    assert checked.ok and checked.changelogs == 0, checked.problems
    # check: nothing referenced is gone; orphans below: nothing unreferenced is left.
    # Unreferenced now: only what the earliest snapshot's delta deleted on a table without a
    # producer, whose removal a decoupled expire leaves to that snapshot's own changelog (as
    # Java's expireAll leaves it).
    pending = set()
    if producer == "none":
        mio = t.manifests()
        delta = t.snapshots.snapshot(earliest).delta_manifest_list
        pending = {e.file.file_name for m in mio.read_manifest_list(delta) for e in mio.read_manifest(m.file_name)
                   if e.kind == DELETE and f"bucket-0/{e.file.file_name}" in files_before}
    orphans = remove_orphan_files(t, older_than="0s", force=True)
    assert {p.rsplit("/", 1)[-1] for p in orphans.paths} == pending
    with pytest.raises(NotFoundError):
        changes_from(t, expired[0])
    # Again: nothing to do.
    left = tree(t)
    again = expire_changelogs(t, delete_all=True)
    assert again.changelogs_expired == [] and tree(t) == left


def test_delete_all_refuses_retention_arguments(tmp_path: Path) -> None:
    from core.errors import UsageError

    t = make(tmp_path, "input")
    expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100)
    before = tree(t)
    with pytest.raises(UsageError, match="--retain-min, --older-than"):
        expire_changelogs(t, delete_all=True, retain_min=1, older_than="0s")
    assert tree(t) == before


@pytest.mark.slow
def test_delete_all_killed_at_every_mutation_then_rerun(tmp_path: Path) -> None:
    src = make(tmp_path / "src", "input")
    expire_snapshots(src, retain_min=2, older_than="0s", max_deletes=100)
    earliest = src.snapshots.earliest_id()
    following = changes_from(src, earliest)
    want_scans = scans(src)
    args = ["expire-changelogs", "--delete-all"]
    k = 0
    while True:
        k += 1
        t = Table.locate("db.t", warehouse=str(tmp_path / f"k{k}" / "wh"))
        shutil.copytree(src.path, t.path)
        proc = run_cli(t, *args, kill_after=k)
        if proc.returncode == 0:
            break
        assert proc.returncode == -9, (k, proc.returncode, proc.stderr)
        assert scans(t) == want_scans and changes_from(t, earliest) == following, k
        proc = run_cli(t, *args)
        assert proc.returncode == 0, (k, proc.stderr)
        assert os.listdir(os.path.join(t.path, "changelog")) == [], k
        assert check(t).ok, k
        assert scans(t) == want_scans, k
        shutil.rmtree(t.path)
    assert k > 5
    assert json.loads(proc.stdout)["earliest_after"] is None


def test_follow_from_timestamp_starts_in_the_retained_changelogs(tmp_path: Path) -> None:
    import time as _time

    t = make(tmp_path, "input", {**DECOUPLED})
    for i in range(3):  # commits apart in time, so each time picks one id
        _time.sleep(0.01)
        t.write(pa.table({"id": pa.array([200 + i], pa.int64()), "v": ["late"]}))
    before = changes_from(t, 1)
    expired = expire_snapshots(t, retain_min=2, older_than="0s", max_deletes=100).snapshots_expired
    assert len(expired) > 3
    # Every id's commit time, read from the files themselves (changelog/ below the earliest).
    times = {}
    for name in os.listdir(os.path.join(t.path, "changelog")):
        if name.startswith("changelog-"):
            times[int(name.split("-")[1])] = json.loads(Path(t.path, "changelog", name).read_text())["timeMillis"]
    for sid in t.snapshots.list_ids():
        times[sid] = t.snapshots.snapshot(sid).time_millis
    for target in [expired[0], expired[2], expired[-1], t.snapshots.earliest_id(), t.snapshots.latest_id()]:
        millis = times[target]
        first = min(i for i, ms in times.items() if ms >= millis)
        settings = resolve_settings(t.schema.options, mode="from-timestamp", timestamp_millis=millis)
        got = [(b.snapshot_id, sorted(map(str, b.rows.to_pylist())))
               for b in follow(t, settings, max_snapshots=1000, should_stop=lambda: True, sleep=lambda s: None)]
        assert got == [b for b in before if b[0] >= first], target
    # Before every retained id: from the earliest changelog; after the latest: nothing yet.
    settings = resolve_settings(t.schema.options, mode="from-timestamp", timestamp_millis=0)
    assert [b.snapshot_id for b in follow(t, settings, max_snapshots=1000, should_stop=lambda: True,
                                 sleep=lambda s: None)] == [b[0] for b in before]
