"""Snapshot expiration on real tables under tmp_path.

Which snapshots expire is computed by hand from Paimon's rules (spec §9.1); what must survive
is checked against scans taken before expiring, and file checks read the manifests and the
table directory directly, never the expire code's own bookkeeping.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from core import binary_row
from core.errors import UsageError
from core.fileio import join
from core.manifest import merge_entries, read_entries
from core.ops.compact import compact
from core.ops.create import create
from core.ops.expire import ExpireResult, duration_millis, expire_snapshots
from core.partition import partition_path
from core.snapshot import Snapshot
from core.table import Table

LAKECTL = str(Path(sys.executable).parent / "lakectl")
NO_TIME = "0s"  # with --older-than 0s every committed snapshot is old enough


# ---- helpers -------------------------------------------------------------------------------
def make_table(tmp_path: Path, *, name: str = "t", options: dict[str, str] | None = None) -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(t, "dt STRING, id BIGINT NOT NULL, v STRING", primary_keys=["dt", "id"], partition_keys=["dt"],
           options={"bucket": "2", "num-sorted-run.compaction-trigger": "100", **(options or {})})
    return t


def rows(ids: list[int], dt_: str, tag: str) -> pa.Table:
    return pa.table({"dt": [dt_] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def write_n(t: Table, n: int) -> None:
    for i in range(n):
        t.write(rows([i % 4, 10 + i], "2024-01-01" if i % 2 else "2024-01-02", f"w{i}-"))


def scan_rows(t: Table, **kw: Any) -> list[dict[str, Any]]:
    return sorted(t.scan(**kw).to_pylist(), key=lambda r: (r["dt"], r["id"]))


def tag(t: Table, name: str, snapshot_id: int) -> None:
    """A tag file is the snapshot JSON (spec §9.1); written directly so this test needs no tag API."""
    snap = t.snapshots.snapshot(snapshot_id)
    assert t.file_io.try_create(t.tags.path(name), snap.to_json().encode())


def live_paths(t: Table, snap: Snapshot) -> set[str]:
    schema = t.schema
    types = [f.type for f in schema.partition_fields]
    out = set()
    for e in merge_entries(read_entries(t.manifests(), [snap.base_manifest_list, snap.delta_manifest_list])):
        values = binary_row.decode(e.partition, types)
        out.add(join(t.path, partition_path(values, schema.partition_fields,
                                            schema.core_options.partition_default_name),
                     f"bucket-{e.bucket}", e.file.file_name))
    return out


def meta_names(t: Table, snap: Snapshot) -> set[str]:
    mio = t.manifests()
    out = set()
    for name in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list):
        if name:
            out.add(name)
            out.update(m.file_name for m in mio.read_manifest_list(name))
    return out


def tree(t: Table) -> dict[str, int]:
    """Every file of the table (path -> size), hidden temp files aside."""
    out = {}
    for root, _, files in os.walk(t.path):
        for f in files:
            if not f.startswith("."):
                p = os.path.join(root, f)
                out[os.path.relpath(p, t.path)] = os.path.getsize(p)
    return out


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat()


def ten_snapshots(tmp_path: Path) -> tuple[Table, list[int]]:
    """Ten APPEND snapshots with distinct commit times; returns the table and the times by id."""
    t = make_table(tmp_path)
    for i in range(10):
        t.write(rows([i], "2024-01-01", "x"))
        time.sleep(0.003)
    times = [t.snapshots.snapshot(s).time_millis for s in range(1, 11)]
    assert times == sorted(set(times))
    return t, [0, *times]  # times[id]


def expired(t: Table, **kw: Any) -> list[int]:
    return expire_snapshots(t, dry_run=True, **kw).snapshots_expired


# ---- which snapshots expire (hand-computed, spec §9.1) --------------------------------------
def test_selection_by_min_max_time_limit(tmp_path: Path) -> None:
    t, times = ten_snapshots(tmp_path)
    # L=10, E=1. min=3: end = 10-3+1 = 8.
    assert expired(t, retain_min=3, older_than=NO_TIME, max_deletes=100) == [1, 2, 3, 4, 5, 6, 7]
    # limit caps end at E + limit = 4.
    assert expired(t, retain_min=3, older_than=NO_TIME, max_deletes=3) == [1, 2, 3]
    assert expired(t, retain_min=3, older_than=NO_TIME, max_deletes=0) == []
    # time: snapshot 5 is not older than the cutoff -> end = 5.
    assert expired(t, retain_min=1, older_than=iso(times[5]), max_deletes=100) == [1, 2, 3, 4]
    # max=4: lowest_kept_by_max = 7; the walk starts there, so 1..6 go however young they are.
    assert expired(t, retain_min=1, retain_max=4, older_than=iso(times[3]), max_deletes=100) == [1, 2, 3, 4, 5, 6]
    # ...and the walk still stops at a young snapshot above lowest_kept_by_max.
    assert expired(t, retain_min=1, retain_max=6, older_than=iso(times[8]), max_deletes=100) == [1, 2, 3, 4, 5, 6, 7]
    # the default 1h keeps everything young.
    assert expired(t, retain_min=1, max_deletes=100) == []
    # retain_min larger than the history: nothing.
    assert expired(t, retain_min=20, older_than=NO_TIME) == []
    # default limit 10 and min 10: end = min(10-10+1, 1+10) = 1 -> nothing.
    assert expired(t, older_than=NO_TIME) == []


def test_selection_from_table_options(tmp_path: Path) -> None:
    t = make_table(tmp_path, options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "5",
                                      "snapshot.time-retained": "1 h", "snapshot.expire.limit": "3",
                                      "write-only": "true"})
    write_n(t, 9)
    # lowest_kept_by_max = 9-5+1 = 5, end = min(9-2+1, 1+3) = 4; 1..3 are below 5, so age is not asked.
    assert expired(t) == [1, 2, 3]
    assert expired(t, max_deletes=100) == [1, 2, 3, 4]  # end = min(8, 101); the walk stops at 5 (young)


def test_consumer_caps_end(tmp_path: Path) -> None:
    t, _ = ten_snapshots(tmp_path)
    t.file_io.write_bytes(join(t.path, "consumer", "consumer-reader1"), json.dumps({"nextSnapshot": 6}).encode())
    t.file_io.write_bytes(join(t.path, "consumer", "consumer-reader2"), json.dumps({"nextSnapshot": 4}).encode())
    assert expired(t, retain_min=1, older_than=NO_TIME, max_deletes=100) == [1, 2, 3]


def test_refusals(tmp_path: Path) -> None:
    t, _ = ten_snapshots(tmp_path)
    before = tree(t)
    with pytest.raises(UsageError, match="retain-min must be at least 1"):
        expire_snapshots(t, retain_min=0, older_than=NO_TIME)
    with pytest.raises(UsageError, match="must not be smaller than retain-min"):
        expire_snapshots(t, retain_min=5, retain_max=4, older_than=NO_TIME)
    with pytest.raises(UsageError, match="neither a duration"):
        expire_snapshots(t, retain_min=1, older_than="yesterday")
    with pytest.raises(UsageError, match="max-deletes"):
        expire_snapshots(t, retain_min=1, older_than=NO_TIME, max_deletes=-1)
    assert tree(t) == before


def test_duration_millis() -> None:
    assert duration_millis("1h") == 3_600_000
    assert duration_millis("1 h") == 3_600_000
    assert duration_millis("30 min") == 1_800_000
    assert duration_millis("7d") == 7 * 86_400_000
    assert duration_millis("0s") == 0
    assert duration_millis("250ms") == 250
    with pytest.raises(UsageError):
        duration_millis("1 fortnight")


def test_empty_table_and_facade_defaults_to_dry_run(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    assert t.expire(retain_min=1, older_than=NO_TIME) == ExpireResult("db.t", "main", [], None, None, 0, 0, 0, True)
    write_n(t, 4)
    before = tree(t)
    r = t.expire(retain_min=1, older_than=NO_TIME)
    assert r.dry_run and r.snapshots_expired == [1, 2, 3]
    assert tree(t) == before


# ---- what survives and what goes -------------------------------------------------------------
def history_with_overwrite_compact_and_tag(tmp_path: Path) -> Table:
    t = make_table(tmp_path, options={"write-only": "true"})
    t.write(rows([1, 2, 3], "2024-01-01", "a"))                 # 1
    t.write(rows([1, 2], "2024-01-02", "b"))                    # 2
    tag(t, "before-overwrite", 2)
    t.write(rows([2, 3, 4], "2024-01-01", "c"))                 # 3
    t.write(rows([7, 8], "2024-01-01", "d"), mode="overwrite")  # 4: OVERWRITE deletes every file
    t.write(rows([8, 9], "2024-01-01", "e"))                    # 5
    t.write(rows([9], "2024-01-02", "f"))                       # 6
    compact(t, full=True)                                       # 7: COMPACT replaces 5 and 6's files
    t.write(rows([10], "2024-01-02", "g"))                      # 8
    t.write(rows([11], "2024-01-01", "h"))                      # 9
    assert t.snapshots.latest_id() == 9
    assert t.snapshots.snapshot(4).commit_kind == "OVERWRITE" and t.snapshots.snapshot(7).commit_kind == "COMPACT"
    return t


def test_expire_keeps_retained_and_tagged_state_and_deletes_the_rest(tmp_path: Path) -> None:
    t = history_with_overwrite_compact_and_tag(tmp_path)
    scans = {sid: scan_rows(t, snapshot_id=sid) for sid in range(1, 10)}
    tag_scan = scan_rows(t, tag="before-overwrite")
    snaps = {sid: t.snapshots.snapshot(sid) for sid in range(1, 10)}
    live = {sid: live_paths(t, s) for sid, s in snaps.items()}
    metas = {sid: meta_names(t, s) for sid, s in snaps.items()}
    tag_snap = t.tags.snapshot("before-overwrite")

    before = tree(t)
    dry = expire_snapshots(t, retain_min=2, older_than=NO_TIME, max_deletes=100, dry_run=True)
    assert tree(t) == before  # a dry run deletes nothing
    result = expire_snapshots(t, retain_min=2, older_than=NO_TIME, max_deletes=100, dry_run=False)
    assert dry == dataclasses.replace(result, dry_run=True)  # ...and reports what the real run does

    assert result.snapshots_expired == [1, 2, 3, 4, 5, 6, 7]
    assert (result.earliest_before, result.earliest_after) == (1, 8)
    assert t.snapshots.list_ids() == [8, 9]
    assert t.file_io.read_text(join(t.snapshots.dir, "EARLIEST")).strip() == "8"
    assert t.snapshots.earliest_id() == 8

    for sid in (8, 9):
        assert scan_rows(t, snapshot_id=sid) == scans[sid]
    assert scan_rows(t, tag="before-overwrite") == tag_scan == scans[2]

    kept_data = live[8] | live[9] | live_paths(t, tag_snap)
    for p in kept_data:
        assert os.path.exists(p), p
    only_expired = set().union(*(live[s] for s in range(1, 8))) - kept_data
    # the OVERWRITE dropped snapshot 3's file (not in the tag); the COMPACT dropped snapshots 5/6's files
    dropped_by_overwrite = (live[3] - live[4]) - live_paths(t, tag_snap)
    assert dropped_by_overwrite and dropped_by_overwrite <= only_expired
    dropped_by_compact = (live[6] - live[7]) - live_paths(t, tag_snap)
    assert dropped_by_compact and dropped_by_compact <= only_expired
    for p in only_expired:
        assert not os.path.exists(p), p
    assert result.data_files_deleted == len(only_expired)

    mdir = join(t.path, "manifest")
    kept_meta = metas[8] | metas[9] | meta_names(t, tag_snap)
    for name in kept_meta:
        assert os.path.exists(join(mdir, name)), name
    gone_meta = set().union(*(metas[s] for s in range(1, 8))) - kept_meta
    for name in gone_meta:
        assert not os.path.exists(join(mdir, name)), name
    assert result.manifest_files_deleted == len(gone_meta)
    # nothing else in manifest/ was touched
    assert set(os.listdir(mdir)) == {n for n in (set().union(*metas.values()) | meta_names(t, tag_snap))
                                     if n not in gone_meta}
    deleted = set(before) - set(tree(t))
    assert result.bytes_deleted == sum(before[p] for p in deleted if not p.startswith("snapshot/"))

    # rerun: nothing due, nothing touched
    after = tree(t)
    again = expire_snapshots(t, retain_min=2, older_than=NO_TIME, max_deletes=100, dry_run=False)
    assert again.snapshots_expired == [] and again.earliest_after == 8
    assert tree(t) == after


def test_dry_run_deletes_nothing(tmp_path: Path) -> None:
    t = history_with_overwrite_compact_and_tag(tmp_path)
    before = tree(t)
    r = expire_snapshots(t, retain_min=2, older_than=NO_TIME, max_deletes=100, dry_run=True)
    assert r.dry_run and r.snapshots_expired == [1, 2, 3, 4, 5, 6, 7] and r.data_files_deleted > 0
    assert tree(t) == before


def test_expire_in_steps_equals_one_run(tmp_path: Path) -> None:
    a = history_with_overwrite_compact_and_tag(tmp_path / "a")
    b = Table.locate("db.t", warehouse=str(tmp_path / "b" / "wh"))
    shutil.copytree(a.path, b.path)
    expire_snapshots(a, retain_min=2, older_than=NO_TIME, max_deletes=100, dry_run=False)
    steps = []
    while True:
        r = expire_snapshots(b, retain_min=2, older_than=NO_TIME, max_deletes=2, dry_run=False)
        if not r.snapshots_expired:
            break
        steps.append(r.snapshots_expired)
    assert steps == [[1, 2], [3, 4], [5, 6], [7]]
    assert tree(a) == tree(b)


def test_earliest_hint_is_checked_cheaply(tmp_path: Path) -> None:
    t, _ = ten_snapshots(tmp_path)
    expire_snapshots(t, retain_min=1, older_than=NO_TIME, max_deletes=4, dry_run=False)
    assert t.snapshots.earliest_id() == 5
    calls = []
    real = t.file_io.list_names  # what list_numbered lists with
    t.file_io.list_names = lambda p: calls.append(p) or real(p)  # type: ignore[method-assign]
    try:
        assert t.snapshots.earliest_id() == 5
        assert calls == []  # a right hint needs no listing
        t.file_io.overwrite_hint(join(t.snapshots.dir, "EARLIEST"), "2")  # stale hint: falls back to listing
        assert t.snapshots.earliest_id() == 5
        assert calls
    finally:
        del t.file_io.list_names


def test_post_commit_expiration_uses_table_options(tmp_path: Path) -> None:
    t = make_table(tmp_path, options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3"})
    results = [t.write(rows([i], "2024-01-01", "p")) for i in range(6)]
    assert [r.maintenance for r in results] == [(), (), (), ("expire",), ("expire",), ("expire",)]
    assert t.snapshots.list_ids() == [4, 5, 6]
    assert scan_rows(t) == sorted(({"dt": "2024-01-01", "id": i, "v": f"p{i}"} for i in range(6)),
                                  key=lambda r: r["id"])
    # the default 1h keeps young snapshots however many there are
    d = make_table(tmp_path, name="d")
    for i in range(12):
        assert d.write(rows([i], "2024-01-01", "q")).maintenance == ()
    assert d.snapshots.list_ids() == list(range(1, 13))


# ---- crash safety and cron (console script, slow) ------------------------------------------
def run_expire(table: Table, *args: str, kill_after: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    if kill_after is not None:
        env["LAKECTL_KILL_AFTER_WRITES"] = str(kill_after)
    warehouse = str(Path(table.path).parent.parent)
    return subprocess.run([LAKECTL, "expire", table.name, "-w", warehouse, "--format", "json", *args],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_kill_at_every_mutation_then_rerun(tmp_path: Path) -> None:
    src = history_with_overwrite_compact_and_tag(tmp_path / "src")
    args = ["--retain-min", "2", "--older-than", "0s", "--max-deletes", "100"]
    latest_rows = scan_rows(src)
    plan = expire_snapshots(src, retain_min=2, older_than=NO_TIME, max_deletes=100, dry_run=True)
    # Every delete, the EARLIEST hint, the journal's write and delete, and the busy and rewrite
    # markers' creates and deletes (a killed run's markers are taken over at once: its process
    # is gone).
    mutations = plan.data_files_deleted + plan.manifest_files_deleted + len(plan.snapshots_expired) + 7

    ref = Table.locate("db.t", warehouse=str(tmp_path / "ref" / "wh"))
    shutil.copytree(src.path, ref.path)
    proc = run_expire(ref, *args)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["snapshots_expired"] == plan.snapshots_expired
    want = tree(ref)

    for k in range(1, mutations + 2):
        t = Table.locate("db.t", warehouse=str(tmp_path / f"k{k}" / "wh"))
        shutil.copytree(src.path, t.path)
        proc = run_expire(t, *args, kill_after=k)
        if k <= mutations:
            assert proc.returncode == -9, (k, proc.returncode, proc.stderr)
        else:
            assert proc.returncode == 0, proc.stderr  # one more than a run needs: it completes
        assert scan_rows(t) == latest_rows, k
        assert scan_rows(t, tag="before-overwrite") == scan_rows(src, tag="before-overwrite"), k
        listed = t.snapshots.list_ids()
        for sid in listed:  # whatever is still listed reads as it did
            assert scan_rows(t, snapshot_id=sid) == scan_rows(src, snapshot_id=sid), (k, sid)
        proc = run_expire(t, *args)
        assert proc.returncode == 0, (k, proc.stderr)
        assert tree(t) == want, k
        # The rerun reports what it retired, also when it only finished the killed run's journal.
        rerun = json.loads(proc.stdout)
        assert rerun["snapshots_expired"] == [s for s in plan.snapshots_expired if s in listed], k
        if rerun["snapshots_expired"]:
            assert rerun["earliest_before"] == listed[0] and rerun["earliest_after"] == plan.earliest_after, k
        shutil.rmtree(t.path)


WRITER = textwrap.dedent("""
    import pathlib, sys, time
    import pyarrow as pa
    from core.table import Table
    t = Table.open("db.t", warehouse=sys.argv[1])
    progress = pathlib.Path(sys.argv[3])
    for i in range(int(sys.argv[2])):
        # Interleave for sure: before every 10th commit, wait (bounded) for one more expire run.
        deadline = time.time() + 60
        while i and i % 10 == 0 and int(progress.read_text() or 0) < i // 10 and time.time() < deadline:
            time.sleep(0.05)
        t.write(pa.table({"dt": ["2024-01-01"], "id": pa.array([i], pa.int64()), "v": [f"c{i}"]}))
    """)


@pytest.mark.slow
def test_cron_expire_next_to_a_writer(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    n = 40
    progress = tmp_path / "expire-runs"
    progress.write_text("0")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "wh"), str(n), str(progress)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=str(Path(__file__).resolve().parents[2]))
    runs = []
    while writer.poll() is None:
        proc = run_expire(t, "--retain-max", "3", "--retain-min", "1", "--older-than", "0s")
        runs.append(proc)
        progress.write_text(str(len(runs)))
        assert proc.returncode == 0, proc.stderr
    out, err = writer.communicate()
    assert writer.returncode == 0, err
    final = run_expire(t, "--retain-max", "3", "--retain-min", "1", "--older-than", "0s", "--max-deletes", "1000")
    assert final.returncode == 0, final.stderr
    assert len(runs) >= 3  # the writer waited for expire runs between its commits
    assert any(json.loads(p.stdout)["snapshots_expired"] for p in runs + [final])
    assert [r["id"] for r in scan_rows(t)] == list(range(n))
    assert t.snapshots.list_ids() == [n]  # 0s: all but retain-min (1) are old enough; max only caps
    for sid in t.snapshots.list_ids():
        for p in live_paths(t, t.snapshots.snapshot(sid)):
            assert os.path.exists(p)


def test_each_manifest_list_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Expire reads every manifest list it needs once (issue 44): the lists of the expiring
    snapshots, of the retained end and of a tag, each a single read however many roles it has."""
    from core.manifest import ManifestIO

    t = make_table(tmp_path)
    write_n(t, 12)
    tag(t, "keep", 4)
    reads: list[str] = []
    original = ManifestIO.read_manifest_list

    def counting(self: ManifestIO, name: str):  # type: ignore[no-untyped-def]
        reads.append(name)
        return original(self, name)

    monkeypatch.setattr(ManifestIO, "read_manifest_list", counting)
    result = expire_snapshots(t, retain_min=3, older_than=NO_TIME, max_deletes=100, dry_run=True)
    latest = t.snapshots.latest_id()
    assert result.snapshots_expired == list(range(1, latest - 2))  # end = latest - 3 + 1
    wanted = set()
    for sid in range(1, latest - 1):  # the expiring ones, the retained end; the tag is snapshot 4
        s = t.snapshots.snapshot(sid)
        wanted |= {n for n in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list) if n}
    assert sorted(reads) == sorted(set(reads)), "a manifest list was read twice"
    assert set(reads) == wanted


def test_a_writers_expire_writes_the_missing_earliest_hint_and_stops_listing(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A table that never expired anything has no EARLIEST hint; the expire after each commit
    writes it (as Java's expire does when nothing is due), so that later commits find the
    earliest snapshot by two existence checks instead of listing snapshot/, whose size grows
    with the history (issue 44: a commit at 10,000 commits costs what it does at 100)."""
    from core.fileio import FileIO

    t = make_table(tmp_path)
    t.write(rows([1], "2024-01-01", "a"))
    assert t.snapshots.earliest_hint() == 1
    for i in range(5):
        t.write(rows([i], "2024-01-02", "b"))
    listings: list[str] = []
    real = FileIO.list_numbered

    def counting(self: FileIO, directory: str, prefix: str) -> list[int]:
        if prefix == "snapshot-":
            listings.append(directory)
        return real(self, directory, prefix)

    monkeypatch.setattr(FileIO, "list_numbered", counting)
    t.write(rows([7], "2024-01-01", "c"))
    assert listings == []
    assert t.snapshots.earliest_hint() == 1
    assert [(r["dt"], r["id"], r["v"]) for r in scan_rows(t)] == \
        [("2024-01-01", 1, "a1"), ("2024-01-01", 7, "c7")] + [("2024-01-02", i, f"b{i}") for i in range(5)]
