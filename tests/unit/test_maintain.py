"""lakectl maintain's core: the plan from a table's options and health, the per-table lease,
and a run that brings tables to the state their options ask for."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from core import lease as leases
from core.health import measure
from core.manifest import live_entries, sorted_runs
from core.ops.create import create
from core.ops.maintain import Policy, maintain, maintain_table, plan_table, policy_for, recommendations
from core.evolution import SetOption
from core.ops.tags import create_tag
from core.table import Table

WH = "wh"


def make(tmp_path: Path, name: str, *, pk: bool = True, options: dict[str, str] | None = None,
         partition_keys: tuple[str, ...] = ()) -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / WH))
    opts = {"write-only": "true"}  # no compaction or expiry after each write: maintain does it
    if pk:
        opts["bucket"] = "1"
    opts.update(options or {})
    schema = "id BIGINT NOT NULL, v STRING" + (", dt STRING NOT NULL" if partition_keys else "")
    create(t, schema, primary_keys=(["id"] + list(partition_keys)) if pk else [],
           partition_keys=list(partition_keys), options=opts)
    return Table.open(f"db.{name}", warehouse=str(tmp_path / WH))


def rows(ids, v="x", dt=None) -> pa.Table:
    cols = {"id": pa.array(list(ids), pa.int64()), "v": pa.array([v] * len(list(ids)))}
    if dt is not None:
        cols["dt"] = pa.array([dt] * len(list(ids)))
    return pa.table(cols)


def max_runs(t: Table) -> int:
    by_bucket: dict = {}
    for e in live_entries(t.manifests(), t.latest_snapshot()):
        by_bucket.setdefault((e.partition, e.bucket), []).append(e.file)
    return max(sorted_runs(fs) for fs in by_bucket.values())


def verbs(actions) -> list[str]:
    return [a.verb for a in actions]


# ---- planning ------------------------------------------------------------------------------
def test_table_past_sorted_run_trigger_is_compacted_one_within_is_not(tmp_path):
    t = make(tmp_path, "pk", options={"num-sorted-run.compaction-trigger": "3"})
    for i in range(2):
        t.write(rows(range(i * 10, i * 10 + 10)))
    h = measure(t)
    assert h.max_sorted_runs == 2 == max_runs(t)
    assert "compact" not in verbs(plan_table(t, h, Policy()))
    t.write(rows(range(100, 105)))
    h = measure(t)
    assert h.max_sorted_runs == 3
    # At the trigger Paimon's universal compaction picks by size ratio and amplification, which
    # may pick nothing: planned exactly when a compaction would then commit something.
    planned = "compact" in verbs(plan_table(t, h, Policy()))
    before = t.latest_snapshot().id
    t.compact(full=False)
    assert (t.latest_snapshot().id > before) == planned
    # Past the trigger the file-number rule always picks.
    t = Table.open(t.path)
    for i in range(4 - max_runs(t)):
        t.write(rows([200 + i]))
    h = measure(t)
    assert h.max_sorted_runs == 4
    assert verbs(plan_table(t, h, Policy()))[0] == "compact"


def test_optimization_interval_plans_a_full_compaction_once_per_interval(tmp_path):
    """compaction.optimization-interval: a primary-key table with no full compaction among its
    snapshots is due one (a new Java writer's first pick); after it, not again within the
    interval, and a table whose interval passed since its last full compaction is due again.
    The writes stay far below the sorted-run trigger, so nothing else plans a compaction."""
    t = make(tmp_path, "opt", options={"compaction.optimization-interval": "1 h"})
    t.write(rows(range(5)))
    t.write(rows(range(3, 8), v="y"))
    expected = t.scan().sort_by("id")
    planned = [a for a in plan_table(t, measure(t), Policy()) if a.verb == "compact"]
    assert [(a.full, "compaction.optimization-interval 1 h" in a.reason) for a in planned] == [(True, True)]
    rep = maintain_table(t, Policy())
    assert rep.status == "done" and "compact" in verbs(rep.actions)
    t = Table.open(t.path)
    assert t.latest_snapshot().commit_kind == "COMPACT" and max_runs(t) == 1
    assert t.scan().sort_by("id").equals(expected)
    t.write(rows([20]))  # within the hour: no full compaction due
    assert "compact" not in verbs(plan_table(t, measure(t), Policy()))
    # The same history under a one-millisecond interval: the last full compaction is older.
    t = Table.open(t.path)
    t.alter([SetOption("compaction.optimization-interval", "1 ms")])
    time.sleep(0.01)
    assert "compact" in verbs(plan_table(Table.open(t.path), measure(t), Policy()))


def test_optimization_interval_makes_a_writers_compaction_full_once_per_interval(tmp_path):
    """A writer (not write-only) compacts in full after its commit when the interval passed
    since the last full compaction: at the first write, not at the next within the hour."""
    t = make(tmp_path, "w", options={"write-only": "false", "compaction.optimization-interval": "1 h"})
    t.write(rows(range(5)))
    kinds = [t.snapshots.snapshot(i).commit_kind for i in t.snapshots.list_ids()]
    assert kinds == ["APPEND", "COMPACT"]
    t.write(rows(range(3, 8), v="y"))
    kinds = [t.snapshots.snapshot(i).commit_kind for i in t.snapshots.list_ids()]
    assert kinds == ["APPEND", "COMPACT", "APPEND"] and max_runs(t) == 2
    assert sorted((r["id"], r["v"]) for r in t.scan().to_pylist()) == \
        [(0, "x"), (1, "x"), (2, "x"), (3, "y"), (4, "y"), (5, "y"), (6, "y"), (7, "y")]


def test_expiry_planned_by_the_tables_snapshot_options(tmp_path):
    t = make(tmp_path, "exp", options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2"})
    t.write(rows([1]))
    t.write(rows([2]))
    assert "expire" not in verbs(plan_table(t, measure(t), Policy()))
    t.write(rows([3]))
    assert "expire" in verbs(plan_table(t, measure(t), Policy()))


def test_plan_order_and_skipped_verbs(tmp_path):
    t = make(tmp_path, "ord", options={"num-sorted-run.compaction-trigger": "2", "snapshot.num-retained.min": "1",
                                       "snapshot.time-retained": "1ms"})
    t.write(rows([1]))
    t.write(rows([2]))
    p = plan_table(t, measure(t), Policy())
    assert verbs(p) == ["compact", "expire", "remove-orphan-files"]
    p = plan_table(t, measure(t), Policy(skip_verbs=frozenset({"compact"})))
    assert verbs(p) == ["expire", "remove-orphan-files"]
    assert plan_table(t, measure(t), Policy(skip=True)) == []


def test_recommendations_go_quiet_when_a_verb_would_change_nothing(tmp_path):
    """13 snapshots all younger than snapshot.time-retained, tags without a TTL, partitions
    expired by update-time: running expire, expire-tags or expire-partitions would do nothing,
    so none is planned (they used to be recommended forever)."""
    t = make(tmp_path, "quiet", options={"partition.expiration-time": "1d",
                                         "partition.expiration-strategy": "update-time"}, partition_keys=("dt",))
    for i in range(13):
        t.write(rows([i], dt="2020-01-01"))
    create_tag(t, "kept", snapshot_id=3)
    planned = verbs(plan_table(t, measure(t), Policy()))
    assert not {"expire", "expire-tags", "expire-partitions"} & set(planned), planned
    # once the snapshots are past their retention, expire is due
    t.alter([SetOption("snapshot.time-retained", "1ms")])
    t = Table.open("db.quiet", warehouse=str(tmp_path / WH))
    assert "expire" in verbs(plan_table(t, measure(t), Policy()))


def test_a_dry_run_lists_what_each_verb_would_do_in_its_commands_own_fields(tmp_path):
    t = make(tmp_path, "detail", options={"num-sorted-run.compaction-trigger": "2", "snapshot.num-retained.min": "1",
                                          "snapshot.time-retained": "1ms"})
    for i in range(3):
        t.write(rows([i]))
    orphan = next(p for p in Path(t.path).iterdir() if p.name.startswith("bucket-")) / "left-over.parquet"
    orphan.write_bytes(b"x" * 7)
    two_days_ago = time.time() - 2 * 86400
    os.utime(orphan, (two_days_ago, two_days_ago))
    rep = maintain_table(t, Policy(), dry_run=True)
    details = {a.verb: a.detail for a in rep.actions}
    assert details["expire"]["snapshots_expired"] == [1, 2] and details["expire"]["dry_run"] is True
    assert details["compact"]["files_before"] == 3 and details["compact"]["dry_run"] is True
    assert details["remove-orphan-files"]["files"] == 1
    assert details["remove-orphan-files"]["paths"][0].endswith("left-over.parquet")
    assert orphan.exists() and t.snapshots.list_ids() == [1, 2, 3]


def test_policy_patterns_override_in_order():
    pats = [("db.*", {"orphan_age": "3d"}), ("*.events_*", {"skip_verbs": ["compact"], "orphan_age": "7d"})]
    assert policy_for("db.events_a", Policy(), pats) == Policy(orphan_age="7d", skip_verbs=frozenset({"compact"}))
    assert policy_for("db.other", Policy(), pats).orphan_age == "3d"
    assert policy_for("x.other", Policy(), pats) == Policy()


def test_orphans_removed_only_past_the_policy_age(tmp_path):
    t = make(tmp_path, "orph")
    t.write(rows([1]))
    bucket = next(p for p in (Path(t.path)).iterdir() if p.name.startswith("bucket-"))
    old, young = bucket / "old-orphan.parquet", bucket / "young-orphan.parquet"
    old.write_bytes(b"x" * 100)
    young.write_bytes(b"y" * 50)
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    rep = maintain_table(t, Policy())
    assert rep.status == "done", rep.reason
    assert not old.exists() and young.exists()
    orphan = next(a for a in rep.actions if a.verb == "remove-orphan-files")
    assert orphan.detail["files"] == 1 and orphan.bytes_freed == 100


# ---- running -------------------------------------------------------------------------------
def test_maintain_compacts_and_expires_to_the_options(tmp_path):
    t = make(tmp_path, "run", options={"num-sorted-run.compaction-trigger": "3",
                                       "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    for i in range(4):
        t.write(rows(range(i * 5, i * 5 + 8), v=str(i)))
    expected = t.scan().sort_by("id")  # merged view before maintenance
    rep = maintain_table(t, Policy())
    assert rep.status == "done", rep.reason
    assert verbs(rep.actions) == ["compact", "expire", "remove-orphan-files"]
    t = Table.open("db.run", warehouse=str(tmp_path / WH))
    assert max_runs(t) < 3
    assert t.snapshots.earliest_id() == t.snapshots.latest_id()  # num-retained.max 1
    assert t.scan().sort_by("id").equals(expected)
    assert rep.health.snapshots == 1 and rep.finished_at is not None
    assert not Path(leases.lease_path(t.path)).exists()  # released


def test_dry_run_changes_nothing(tmp_path):
    t = make(tmp_path, "dry", options={"num-sorted-run.compaction-trigger": "2", "snapshot.num-retained.min": "1",
                                       "snapshot.time-retained": "1ms"})
    t.write(rows([1]))
    t.write(rows([2]))
    before = sorted((str(p), p.stat().st_size) for p in Path(t.path).rglob("*"))
    rep = maintain_table(t, Policy(), dry_run=True)
    assert rep.status == "planned" and verbs(rep.actions) == ["compact", "expire", "remove-orphan-files"]
    assert not any(a.done for a in rep.actions)
    assert sorted((str(p), p.stat().st_size) for p in Path(t.path).rglob("*")) == before


def test_one_failing_table_does_not_stop_the_others(tmp_path):
    make(tmp_path, "good", options={"snapshot.num-retained.min": "1"}).write(rows([1]))
    wh = str(tmp_path / WH)

    def open_table(name: str) -> Table:
        if name == "db.broken":
            raise OSError(5, "Input/output error")  # a storage error (a table gone meanwhile is skipped instead)
        return Table.open(name, warehouse=wh)

    reps = maintain(["db.broken", "db.good"], open_table, lambda n: Policy())
    assert [(r.table, r.status) for r in reps] == [("db.broken", "failed"), ("db.good", "done")]
    assert reps[0].reason == "Input/output error"  # what the system said, no exception class name


def test_time_budget_skips_tables_not_started(tmp_path):
    make(tmp_path, "a").write(rows([1]))
    wh = str(tmp_path / WH)
    reps = maintain(["db.a"], lambda n: Table.open(n, warehouse=wh), lambda n: Policy(), time_budget=0)
    assert reps[0].status == "skipped" and "time budget" in reps[0].reason


# ---- the lease -----------------------------------------------------------------------------
def test_live_lease_is_not_taken_stale_one_is(tmp_path):
    t = make(tmp_path, "lease")
    now = 1_000_000.0
    first = leases.acquire(t.file_io, t.path, holder="a", ttl_seconds=60, now=now)
    assert first is not None
    assert leases.acquire(t.file_io, t.path, holder="b", ttl_seconds=60, now=now + 59) is None
    second = leases.acquire(t.file_io, t.path, holder="b", ttl_seconds=60, now=now + 61)  # a crashed
    assert second is not None and second.holder == "b"
    assert json.loads(Path(second.path).read_text())["holder"] == "b"
    leases.release(t.file_io, first)  # a's late release must not drop b's lease
    assert Path(second.path).exists()
    leases.release(t.file_io, second)
    assert not Path(second.path).exists()


def test_lease_is_renewed_while_work_outlasts_its_ttl(tmp_path, monkeypatch):
    """A table's maintenance that takes longer than the lease's TTL keeps the lease: a second run
    trying past the first expiry is refused, and the lease is gone once the work ends."""
    import threading

    from core.ops import maintain as maintain_mod

    t = make(tmp_path, "slow", options={"snapshot.num-retained.min": "1"})
    t.write(rows([1]))
    t.write(rows([2]))
    started, release = threading.Event(), threading.Event()

    def stalled(table, action, policy, engine_settings):
        started.set()
        release.wait(30)
        return maintain_mod.ActionReport(action.verb, action.reason, done=True)

    monkeypatch.setattr(maintain_mod, "_run_action", stalled)
    result = {}
    worker = threading.Thread(target=lambda: result.update(rep=maintain_table(t, Policy(), lease_seconds=0.6)))
    worker.start()
    assert started.wait(30)
    time.sleep(1.5)  # 2.5 TTLs: without renewal the lease would have expired
    other = leases.acquire(t.file_io, t.path, holder="another-host:1:x", ttl_seconds=60)
    release.set()
    worker.join(30)
    assert other is None, "a second run took the table while the first still worked on it"
    assert result["rep"].status == "done"
    assert not Path(leases.lease_path(t.path)).exists()


def test_renew_refuses_a_lease_taken_over(tmp_path):
    t = make(tmp_path, "taken")
    now = 1_000_000.0
    mine = leases.acquire(t.file_io, t.path, holder="a", ttl_seconds=10, now=now)
    renewed = leases.renew(t.file_io, mine, 10, now=now + 5)
    assert renewed is not None and renewed.expires_at == now + 15
    assert leases.acquire(t.file_io, t.path, holder="b", ttl_seconds=10, now=now + 12) is None  # renewed: live
    theirs = leases.acquire(t.file_io, t.path, holder="b", ttl_seconds=10, now=now + 16)  # expired: taken
    assert theirs is not None
    assert leases.renew(t.file_io, renewed, 10, now=now + 17) is None
    assert json.loads(Path(theirs.path).read_text())["holder"] == "b"


def test_time_budget_reads_paimon_durations_and_bare_seconds():
    from lakectl.commands.maintain import parse_budget
    from core.errors import UsageError

    assert [parse_budget(x) for x in ("30m", "2h", "90s", "45", "1 d", "500 ms")] == \
        [1800.0, 7200.0, 90.0, 45.0, 86400.0, 0.5]
    with pytest.raises(UsageError, match="--time-budget"):
        parse_budget("soon")


def test_held_table_is_reported_skipped(tmp_path):
    t = make(tmp_path, "held")
    t.write(rows([1]))
    other = leases.acquire(t.file_io, t.path, holder="other-run", ttl_seconds=600)
    rep = maintain_table(t, Policy())
    assert rep.status == "skipped" and "lease" in rep.reason
    leases.release(t.file_io, other)


def _hold(args):
    """In a child process: try the lease; if won, hold it a while and log enter/exit times."""
    wh, log = args
    t = Table.open("db.race", warehouse=wh)
    got = leases.acquire(t.file_io, t.path, holder=f"p{os.getpid()}", ttl_seconds=60)
    if got is None:
        return None
    start = time.time()
    time.sleep(0.3)
    end = time.time()
    leases.release(t.file_io, got)
    return (start, end)


def test_two_processes_never_hold_the_same_table_at_once(tmp_path):
    make(tmp_path, "race")
    wh = str(tmp_path / WH)
    ctx = multiprocessing.get_context("spawn")
    windows = []
    for _ in range(3):
        with ctx.Pool(2) as pool:
            windows += [w for w in pool.map(_hold, [(wh, None), (wh, None)]) if w is not None]
    windows.sort()
    assert windows, "someone must win"
    for (s1, e1), (s2, e2) in zip(windows, windows[1:]):
        assert s2 >= e1  # no overlap of two holders


# ---- health --------------------------------------------------------------------------------
def test_health_recommends_the_fixing_command(tmp_path):
    t = make(tmp_path, "h", options={"num-sorted-run.compaction-trigger": "2"})
    t.write(rows([1, 2, 3]))
    t.write(rows([4]))
    t.write(rows([5]))
    h = measure(t)
    assert (h.files, h.rows, h.snapshots, h.max_sorted_runs) == (3, 5, 3, 3)  # past the trigger
    assert h.small_files == 3  # all far under half of 128 MB
    recs = recommendations(t, h)
    assert [r.command for r in recs] == ["lakectl compact db.h"]


@pytest.mark.parametrize("files", [4, 5])
def test_health_recommends_exactly_what_maintain_would_run(tmp_path, files):
    """One rule for both: an append table's small files call for compaction at the policy's
    trigger (5 by default), in health's recommendations and maintain's plan alike."""
    t = make(tmp_path, f"a{files}", pk=False)
    for i in range(files):
        t.write(rows([i]))
    h = measure(t)
    assert h.small_files == files
    planned = [a for a in plan_table(t, h, Policy()) if a.verb != "remove-orphan-files"]
    recs = recommendations(t, h)
    assert [r.command for r in recs] == [f"lakectl {a.verb} db.a{files}" + (" --full" if a.full else "")
                                         for a in planned]
    assert ("lakectl compact db.a5 --full" in [r.command for r in recs]) == (files >= 5)
    # a policy that lowers the trigger moves both together
    assert [r.command for r in recommendations(t, h, Policy(small_files_trigger=2))] == \
        [f"lakectl compact db.a{files} --full"]


def test_append_compaction_waits_for_the_tables_compaction_min_file_num(tmp_path):
    """Paimon's append compaction waits for compaction.min.file-num small files (5): a table
    that sets 20 is not compacted at 6 (it used to be), at 20 it is."""
    t = make(tmp_path, "minfiles", pk=False, options={"compaction.min.file-num": "20"})
    for i in range(6):
        t.write(rows([i]))
    assert "compact" not in verbs(plan_table(t, measure(t), Policy()))
    for i in range(6, 20):
        t.write(rows([i]))
    assert verbs(plan_table(t, measure(t), Policy()))[0] == "compact"



def test_append_compaction_is_planned_only_where_a_full_compaction_acts(tmp_path):
    """Small files counted over a bucketed table may lie two to a bucket, which a full
    compaction leaves alone (Paimon 1.0 rewrites a bucketed append bucket from three files):
    nothing is planned then, or the plan would never go quiet."""
    t = make(tmp_path, "spread", pk=False, options={"bucket": "3", "bucket-key": "id"})
    for _ in range(2):
        t.write(rows(range(30)))
    h = measure(t)
    assert h.files == h.small_files == 6  # two in each of the three buckets
    assert "compact" not in verbs(plan_table(t, h, Policy()))
    assert "lakectl compact db.spread --full" not in [r.command for r in recommendations(t, h)]
    t.write(rows(range(30)))
    assert verbs(plan_table(t, measure(t), Policy()))[0] == "compact"
    maintain_table(t, Policy())
    h = measure(t)
    assert h.files == 3 and "compact" not in verbs(plan_table(t, h, Policy()))
    assert sorted(r["id"] for r in t.scan().to_pylist()) == sorted(list(range(30)) * 3)

def test_partition_expiry_planned_only_when_a_partition_would_expire(tmp_path, monkeypatch):
    """Either strategy: expire-partitions is planned when its dry run would drop a partition,
    and no longer once it has run."""
    t = make(tmp_path, "pv", pk=False, options={"partition.expiration-time": "1d"}, partition_keys=("dt",))
    t.write(rows([1], dt="2999-01-01"))
    assert "expire-partitions" not in verbs(plan_table(t, measure(t), Policy()))
    t.write(rows([2], dt="2020-01-01"))
    planned = [a for a in plan_table(t, measure(t), Policy()) if a.verb == "expire-partitions"]
    assert planned and planned[0].reason.startswith("1 partition(s) past partition.expiration-time 1d")
    maintain_table(t, Policy())
    assert {r["dt"] for r in t.scan().to_pylist()} == {"2999-01-01"}
    assert "expire-partitions" not in verbs(plan_table(t, measure(t), Policy()))
    # update-time: files created two days ago expire, whatever the values say
    import core.kernels.write as write_kernel

    u = make(tmp_path, "pu", pk=False, options={"partition.expiration-time": "1d",
                                                "partition.expiration-strategy": "update-time"},
             partition_keys=("dt",))
    u.write(rows([1], dt="2999-01-01"))
    assert "expire-partitions" not in verbs(plan_table(u, measure(u), Policy()))
    old = write_kernel.local_wall_clock_millis() - 2 * 86_400_000
    monkeypatch.setattr(write_kernel, "local_wall_clock_millis", lambda: old)
    u.write(rows([2], dt="old"))
    assert "expire-partitions" in verbs(plan_table(u, measure(u), Policy()))
    maintain_table(u, Policy())
    assert {r["dt"] for r in u.scan().to_pylist()} == {"2999-01-01"}
    # a refused dry run (values no formatter reads) is still planned, so the run says why
    t.write(rows([3], dt="not-a-date"))
    assert "expire-partitions" in verbs(plan_table(t, measure(t), Policy()))

# ---- metrics -------------------------------------------------------------------------------
def test_metrics_file_is_valid_prometheus_text_with_the_measures(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    from core.metrics import write_atomically

    t = make(tmp_path, "m", options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(rows([1, 2]))
    t.write(rows([3]))
    rep = maintain_table(t, Policy())
    path = tmp_path / "lakectl.prom"
    write_atomically(str(path), [rep])
    samples = {s.name: s for fam in text_string_to_metric_families(path.read_text()) for s in fam.samples}
    assert samples["lakectl_table_snapshots"].labels == {"table": "db.m"}
    assert samples["lakectl_table_snapshots"].value == 1  # expired to num-retained.max
    assert samples["lakectl_table_files"].value == 2
    assert samples["lakectl_table_bytes"].value == sum(
        e.file.file_size for e in live_entries(t.manifests(), t.latest_snapshot()))
    assert samples["lakectl_table_maintenance_failed"].value == 0
    assert abs(samples["lakectl_table_last_maintenance_success_timestamp_seconds"].value - time.time()) < 60
    assert samples["lakectl_table_maintenance_bytes_freed"].value == rep.bytes_freed > 0
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def _series(path) -> dict[tuple[str, str], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, s.labels.get("table")): s.value for fam in text_string_to_metric_families(path.read_text())
            for s in fam.samples if s.name != "lakectl_table_maintenance_status"}


def _status(path) -> dict[str, tuple[str, str]]:
    from prometheus_client.parser import text_string_to_metric_families

    return {s.labels["table"]: (s.labels["status"], s.labels["reason"])
            for fam in text_string_to_metric_families(path.read_text()) for s in fam.samples
            if s.name == "lakectl_table_maintenance_status"}


def test_metrics_file_keeps_every_tables_series_across_runs(tmp_path):
    """Run 1 maintains a and b; run 2 only a (b not in it): b's series stay. Run 3 skips a
    (its lease is held): a keeps its last success and health, marked skipped with the reason.
    A table gone from the warehouse leaves the file."""
    from core.metrics import write_atomically

    path = tmp_path / "lakectl.prom"
    a, b = make(tmp_path, "a"), make(tmp_path, "b")
    for t in (a, b):
        t.write(rows([1, 2]))
    first = [maintain_table(t, Policy()) for t in (a, b)]
    write_atomically(str(path), first)
    one = _series(path)
    assert one[("lakectl_table_files", "db.b")] == 1
    b_success = one[("lakectl_table_last_maintenance_success_timestamp_seconds", "db.b")]

    write_atomically(str(path), [maintain_table(a, Policy())])
    two = _series(path)
    assert two[("lakectl_table_last_maintenance_success_timestamp_seconds", "db.b")] == b_success
    assert two[("lakectl_table_files", "db.b")] == 1

    a_success = two[("lakectl_table_last_maintenance_success_timestamp_seconds", "db.a")]
    held = leases.acquire(a.file_io, a.path, holder="other:1:x", ttl_seconds=600)
    skipped = maintain_table(a, Policy())
    assert skipped.status == "skipped" and held is not None
    write_atomically(str(path), [skipped], keep={"db.a", "db.b"}.__contains__)
    three = _series(path)
    assert three[("lakectl_table_last_maintenance_success_timestamp_seconds", "db.a")] == a_success
    assert three[("lakectl_table_maintenance_skipped", "db.a")] == 1
    assert three[("lakectl_table_files", "db.a")] == 1
    status, reason = _status(path)["db.a"]
    assert status == "skipped" and "other:1:x" in reason

    write_atomically(str(path), [], keep={"db.a"}.__contains__)  # db.b dropped meanwhile
    assert not [k for k in _series(path) if k[1] == "db.b"]
    assert ("lakectl_table_files", "db.a") in _series(path)


def test_a_time_budget_starts_the_most_overdue_tables_first(tmp_path):
    from core.ops.maintain import overdue_first

    tables = {n: make(tmp_path, n) for n in ("a", "b", "c", "d")}
    for n in ("d", "c", "b", "a"):  # d's earliest snapshot is the oldest
        tables[n].write(rows([1]))
        time.sleep(0.01)
    locate = lambda n: Table.locate(n, warehouse=str(tmp_path / WH))  # noqa: E731
    names = [f"db.{n}" for n in "abcd"]
    # never maintained: the most expiry waiting first
    assert overdue_first(names, locate, {}) == ["db.d", "db.c", "db.b", "db.a"]
    # a was maintained longest ago, b never: b, then a, then the recent ones
    assert overdue_first(names, locate, {"db.a": 100.0, "db.c": 300.0, "db.d": 200.0}) == \
        ["db.b", "db.a", "db.d", "db.c"]


def test_lease_of_a_killed_process_on_this_host_is_taken_at_once(tmp_path):
    import signal
    import subprocess
    import sys

    t = make(tmp_path, "killed")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead_holder = f"{leases.socket.gethostname()}:{child.pid}:abcd1234"
    live = leases.acquire(t.file_io, t.path, holder=dead_holder, ttl_seconds=3600)
    assert live is not None
    assert leases.acquire(t.file_io, t.path, holder="other", ttl_seconds=60) is None  # its holder runs
    child.send_signal(signal.SIGKILL)
    child.wait()
    taken = leases.acquire(t.file_io, t.path, holder="rerun", ttl_seconds=60)
    assert taken is not None and taken.holder == "rerun"


def test_run_killed_mid_way_then_rerun_finishes(tmp_path):
    """A maintain process killed while it holds the table's lease (before it finished): the rerun
    takes the dead process's lease over at once and brings the table to its options. (A kill
    inside a verb is each operation's own crash safety, tested with it.)"""
    import subprocess
    import sys

    t = make(tmp_path, "mid", options={"num-sorted-run.compaction-trigger": "2", "snapshot.num-retained.min": "1",
                                       "snapshot.num-retained.max": "1"})
    t.write(rows(range(5)))
    t.write(rows(range(3, 9), v="y"))
    expected = t.scan().sort_by("id")
    # The child takes the lease and dies hard, as a killed cron run would.
    code = ("import os, sys; from core.table import Table; from core import lease; "
            f"t = Table.open('db.mid', warehouse={str(tmp_path / WH)!r}); "
            "lease.acquire(t.file_io, t.path, holder=lease.new_holder(), ttl_seconds=3600); os._exit(9)")
    assert subprocess.run([sys.executable, "-c", code], env=os.environ).returncode == 9
    assert Path(leases.lease_path(t.path)).exists()
    rep = maintain_table(Table.open("db.mid", warehouse=str(tmp_path / WH)), Policy())
    assert rep.status == "done", rep.reason
    t = Table.open("db.mid", warehouse=str(tmp_path / WH))
    assert max_runs(t) == 1 and t.snapshots.earliest_id() == t.snapshots.latest_id()
    assert t.scan().sort_by("id").equals(expected)


def test_consumers_past_their_expiration_time_are_expired_by_maintain(tmp_path):
    """consumer.expiration-time: maintain plans expire for it even with few snapshots, and the
    consumer not updated within it is gone while a fresh one stays (its file's mtime decides,
    as Java's ConsumerManager compares it)."""
    from core.consumer import ConsumerManager

    t = make(tmp_path, "cons", options={"consumer.expiration-time": "1 h"})
    t.write(rows([1]))
    manager = ConsumerManager(t.file_io, t.path)
    manager.record("stale", 1)
    manager.record("fresh", 1)
    two_hours_ago = time.time() - 7200
    os.utime(manager.path("stale"), (two_hours_ago, two_hours_ago))
    assert "expire" in verbs(plan_table(t, measure(t), Policy()))
    rep = maintain_table(t, Policy())
    assert rep.status == "done", rep.reason
    expire = next(a for a in rep.actions if a.verb == "expire")
    assert expire.detail["consumers_expired"] == ["stale"]
    assert [c.consumer_id for c in manager.consumers()] == ["fresh"]


# ---- lease holders, wrong clocks, lost leases ----------------------------------------------
def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def test_a_skipped_table_names_the_leases_holder_and_expiry(tmp_path):
    t = make(tmp_path, "named")
    t.write(rows([1]))
    other = leases.acquire(t.file_io, t.path, holder="cron-host:4242:beef", ttl_seconds=600)
    rep = maintain_table(t, Policy())
    assert rep.status == "skipped" and rep.actions == []
    assert "cron-host:4242:beef" in rep.reason and _iso(other.expires_at) in rep.reason
    leases.release(t.file_io, other)


def _write_lease(t: Table, holder: str, expires_at: float, **extra) -> None:
    Path(leases.lease_path(t.path)).write_text(json.dumps({"holder": holder, "expires_at": expires_at, **extra}))


@pytest.mark.parametrize("recorded_ttl", [{}, {"ttl_seconds": 60}], ids=["older-lease-format", "with-ttl"])
def test_a_lease_further_ahead_than_one_period_is_taken_over_with_a_warning(tmp_path, caplog, recorded_ttl):
    """A host with a wrong clock writes an expiry years ahead: without a limit every later run
    would skip the table for years. Within one period (plus slack for ordinary skew) it holds."""
    t = make(tmp_path, "skew")
    now = 1_000_000.0
    _write_lease(t, "fast-clock-host:7:aaaa", now + 60 + leases.CLOCK_SLACK_SECONDS - 1, **recorded_ttl)
    assert leases.acquire(t.file_io, t.path, holder="b", ttl_seconds=60, now=now) is None  # within: live
    _write_lease(t, "fast-clock-host:7:aaaa", now + 10 * 365 * 86400, **recorded_ttl)
    with caplog.at_level("WARNING", logger="core.lease"):
        taken = leases.acquire(t.file_io, t.path, holder="b", ttl_seconds=60, now=now)
    assert taken is not None and json.loads(Path(taken.path).read_text())["holder"] == "b"
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "fast-clock-host:7:aaaa" in warnings[0] and "clock" in warnings[0]


def test_a_lease_of_a_longer_period_is_not_taken_for_a_wrong_clock(tmp_path):
    """The period a lease records is its own: an hour-long lease is live to a run whose period is
    a minute (its expiry is within its own period)."""
    t = make(tmp_path, "long")
    now = 1_000_000.0
    assert leases.acquire(t.file_io, t.path, holder="a", ttl_seconds=3600, now=now) is not None
    assert leases.acquire(t.file_io, t.path, holder="b", ttl_seconds=60, now=now + 1) is None


def test_lost_to_names_the_taker_and_a_release_of_a_vanished_lease_is_quiet(tmp_path):
    t = make(tmp_path, "lost")
    now = time.time()
    mine = leases.acquire(t.file_io, t.path, holder="a", ttl_seconds=60, now=now)
    keeper = leases.Keeper(t.file_io, mine, 60)  # not started: a stopped process renews nothing
    assert keeper.lost_to() is None
    theirs = leases.acquire(t.file_io, t.path, holder="b:1:cafe", ttl_seconds=60, now=now + 61)
    assert keeper.lost_to() == f"b:1:cafe (until {_iso(theirs.expires_at)})"
    leases.release(t.file_io, mine)  # not ours: left alone
    assert json.loads(Path(theirs.path).read_text())["holder"] == "b:1:cafe"
    leases.release(t.file_io, theirs)
    assert keeper.lost_to() == "another run, which took it over and has released it since"
    leases.release(t.file_io, mine)  # the file is gone: nothing to do, no "missing file" error
    assert leases.renew(t.file_io, mine, 60) is None


def test_a_run_that_loses_its_lease_mid_verb_stops_the_table_and_goes_on(tmp_path, monkeypatch):
    """The in-process equivalent of a run stopped longer than its lease: while its first verb
    runs, another run takes the (expired) lease over. The verb that was running ends; the next
    ones are not run, the table's report says who has it, and the next table is maintained."""
    from core.ops import maintain as maintain_mod

    opts = {"num-sorted-run.compaction-trigger": "2", "snapshot.num-retained.min": "1", "snapshot.time-retained": "1ms"}
    for name in ("a", "b"):
        t = make(tmp_path, name, options=opts)
        t.write(rows([1]))
        t.write(rows([2]))
    wh = str(tmp_path / WH)
    real_run_action, ran, taker = maintain_mod._run_action, [], {}

    def run_action(table, action, policy, engine_settings):
        ran.append((table.name, action.verb))
        if table.name == "db.a" and action.verb == "compact":  # stopped here past the lease's expiry
            taker["lease"] = leases.acquire(table.file_io, table.path, holder="other-run:9:feed", ttl_seconds=600,
                                            now=time.time() + maintain_mod.LEASE_SECONDS + 1)
        return real_run_action(table, action, policy, engine_settings)

    monkeypatch.setattr(maintain_mod, "_run_action", run_action)
    reports = {r.table: r for r in maintain(["db.a", "db.b"], lambda n: Table.open(n, warehouse=wh),
                                            lambda n: Policy())}
    a, b = reports["db.a"], reports["db.b"]
    assert a.status == "failed" and a.reason.startswith("lease lost to other-run:9:feed (until ")
    assert "expire, remove-orphan-files" in a.reason and verbs(a.actions) == ["compact"] and a.actions[0].done
    assert a.finished_at is None and a.released_at is not None
    assert ran == [("db.a", "compact"), ("db.b", "compact"), ("db.b", "expire"), ("db.b", "remove-orphan-files")]
    assert b.status == "done"
    on_disk = json.loads(Path(leases.lease_path(Table.open("db.a", warehouse=wh).path)).read_text())
    assert on_disk["holder"] == "other-run:9:feed"  # the taker's lease stays
    leases.release(Table.open("db.a", warehouse=wh).file_io, taker["lease"])


# ---- the orphan age floor ------------------------------------------------------------------
def test_a_policy_under_the_orphan_age_floor_fails_the_table_before_it_is_touched(tmp_path):
    t = make(tmp_path, "young", options={"num-sorted-run.compaction-trigger": "2"})
    t.write(rows([1]))
    t.write(rows([2]))
    before = sorted((str(p), p.stat().st_size) for p in Path(t.path).rglob("*"))
    for dry_run in (True, False):
        rep = maintain_table(t, Policy(orphan_age="10min"), dry_run=dry_run)
        assert rep.status == "failed" and rep.actions == [] and rep.started_at is None
        assert "orphan-age '10min' is under the 1h floor" in rep.reason and "orphan-force = true" in rep.reason
    assert sorted((str(p), p.stat().st_size) for p in Path(t.path).rglob("*")) == before
    # Without orphan removal in the plan, the age does not matter.
    skip = Policy(orphan_age="10min", skip_verbs=frozenset({"remove-orphan-files"}))
    assert maintain_table(t, skip, dry_run=True).status == "planned"


def test_orphan_force_lets_the_policy_remove_young_orphans(tmp_path):
    t = make(tmp_path, "forced")
    t.write(rows([1]))
    bucket = next(p for p in Path(t.path).iterdir() if p.name.startswith("bucket-"))
    young = bucket / "young-orphan.parquet"
    young.write_bytes(b"y" * 50)
    ten_minutes_ago = time.time() - 600
    os.utime(young, (ten_minutes_ago, ten_minutes_ago))
    rep = maintain_table(t, Policy(orphan_age="5min", orphan_force=True))
    assert rep.status == "done", rep.reason
    assert not young.exists()
    assert next(a for a in rep.actions if a.verb == "remove-orphan-files").detail["files"] == 1


# ---- branches ------------------------------------------------------------------------------
def _forked(tmp_path: Path, writes: int = 8) -> tuple[Table, dict[int, str], dict[int, str]]:
    """Main (two snapshots, nothing due under its options) and branch ``dev`` forked at main's
    latest (2) whose own schema asks for snapshot.num-retained.max 3 and compaction at 3 sorted
    runs, with ``writes`` commits of its own (one level-0 file each). Returns the table and the
    rows main and dev hold, as the test wrote them."""
    from core.ops.branches import create_branch

    t = make(tmp_path, "t", options={"num-sorted-run.compaction-trigger": "5"})
    main_rows = {1: "a", 2: "b", 3: "c"}
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    t.write(rows([3], v="c"))
    create_branch(t, "dev")
    dev = t.on_branch("dev")
    dev.alter([SetOption("snapshot.num-retained.max", "3"), SetOption("snapshot.num-retained.min", "1"),
               SetOption("num-sorted-run.compaction-trigger", "3")])
    dev_rows = dict(main_rows)
    for i in range(writes):
        dev.write(rows([10 + i, 1], v=f"d{i}"))
        dev_rows.update({10 + i: f"d{i}", 1: f"d{i}"})
    return t, main_rows, dev_rows


def _snapshot_files(directory: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("snapshot-")) for p in (directory / "snapshot").glob("snapshot-*"))


def _read(t: Table) -> dict[int, str]:
    return {r["id"]: r["v"] for r in t.scan(select=["id", "v"]).to_pylist()}


def test_maintain_expires_and_compacts_a_branch_by_its_own_options_and_leaves_main(tmp_path):
    t, main_rows, dev_rows = _forked(tmp_path)
    root = Path(t.path)
    dev_dir = root / "branch" / "branch-dev"
    assert _snapshot_files(dev_dir) == list(range(2, 11))  # the fork's snapshot and the branch's 8 writes
    assert sum(1 for f in t.on_branch("dev").files() if f.level == 0) == 2 + 8  # main's two and its own
    main_before = {p.name: p.read_bytes() for p in (root / "snapshot").iterdir()}
    rep = maintain_table(t, Policy())
    assert rep.status == "done", rep.reason
    assert verbs(rep.actions) == ["remove-orphan-files"]  # main's options ask for nothing else
    [b] = rep.branches
    assert (b.table, b.branch, b.status) == ("db.t", "dev", "done"), b.reason
    assert verbs(b.actions) == ["compact", "expire"] and all(a.done for a in b.actions)
    assert b.bytes_freed > 0 and b.finished_at is not None
    assert (b.started_at, b.released_at) == (rep.started_at, rep.released_at)  # under the table's lease
    # The branch: the fork, 8 writes and its compaction (2..11), 3 kept (its num-retained.max).
    assert _snapshot_files(dev_dir) == [9, 10, 11]
    assert b.health.snapshots == 3
    dev = Table.open("db.t", warehouse=str(tmp_path / WH), branch="dev")
    live = dev.files()
    assert [f.level for f in live if f.level == 0] == [] and len(live) == 1
    assert _read(dev) == dev_rows
    # Main: its snapshot files byte for byte, its rows, and every file it reads still there.
    assert {p.name: p.read_bytes() for p in (root / "snapshot").iterdir()} == main_before
    assert _read(Table.open("db.t", warehouse=str(tmp_path / WH))) == main_rows
    assert not Path(leases.lease_path(t.path)).exists()
    # A second run finds nothing to do on the branch.
    again = maintain_table(t, Policy())
    assert [verbs(b.actions) for b in again.branches] == [[]]


def test_dry_run_plans_each_branch_and_changes_nothing(tmp_path):
    t, _, _ = _forked(tmp_path, writes=4)
    before = sorted((str(p), p.stat().st_size) for p in Path(t.path).rglob("*"))
    rep = maintain_table(t, Policy(), dry_run=True)
    assert rep.status == "planned" and verbs(rep.actions) == ["remove-orphan-files"]
    [b] = rep.branches
    assert (b.branch, b.status, verbs(b.actions)) == ("dev", "planned", ["compact", "expire"])
    assert b.actions[1].detail["snapshots_expired"] == [2, 3]  # 2..6, 3 kept
    assert not any(a.done for a in b.actions)
    assert sorted((str(p), p.stat().st_size) for p in Path(t.path).rglob("*")) == before


def test_health_of_a_branch_recommends_commands_naming_it(tmp_path):
    t, _, _ = _forked(tmp_path, writes=4)
    dev = t.on_branch("dev")
    h = measure(dev)
    assert h.snapshots == len(_snapshot_files(Path(dev.branch_path))) == 5
    assert [r.command for r in recommendations(dev, h)] == ["lakectl compact db.t --branch dev",
                                                             "lakectl expire db.t --branch dev"]
    assert recommendations(t, measure(t)) == []


def test_a_failing_branch_is_its_own_failure_and_orphan_removal_waits(tmp_path, monkeypatch):
    """dev's compaction fails: dev's report says so, main's verbs and the other branch ran,
    and orphan removal (whole-table) is not run until every branch finishes."""
    from core.ops import maintain as maintain_mod
    from core.ops.branches import create_branch

    t, _, _ = _forked(tmp_path, writes=4)
    create_branch(t, "qa")
    qa = t.on_branch("qa")
    qa.alter([SetOption("snapshot.num-retained.max", "1"), SetOption("snapshot.num-retained.min", "1")])
    qa.write(rows([99]))
    real, ran = maintain_mod._run_action, []

    def run_action(table, action, policy, engine_settings):
        ran.append((table.branch, action.verb))
        held = json.loads(Path(leases.lease_path(table.path)).read_text())
        assert held["holder"] == "me:1:x"  # every branch's verbs run under the table's lease
        if table.branch == "dev" and action.verb == "compact":
            raise OSError(5, "Input/output error")
        return real(table, action, policy, engine_settings)

    monkeypatch.setattr(maintain_mod, "_run_action", run_action)
    rep = maintain_table(t, Policy(), holder="me:1:x")
    assert ran == [("dev", "compact"), ("qa", "expire")]
    dev, qa_rep = rep.branches
    assert (dev.branch, dev.status) == ("dev", "failed") and "Input/output error" in dev.reason
    assert (qa_rep.branch, qa_rep.status) == ("qa", "done") and len(_snapshot_files(Path(qa.branch_path))) == 1
    assert rep.status == "done" and [(a.verb, a.done) for a in rep.actions] == [("remove-orphan-files", False)]
    assert rep.actions[0].error.startswith("not run: branch dev failed")


def test_a_deleted_branch_and_a_skipped_table_in_the_metrics_file(tmp_path):
    """Main's series keep the label table alone; a branch's add branch="NAME". A skipped table
    keeps its branches' series; a run that finds a branch deleted drops them. The last success
    times a time budget orders by are main's."""
    from core.metrics import last_success_times, write_atomically
    from core.ops.branches import delete_branch
    from prometheus_client.parser import text_string_to_metric_families

    def series(path) -> dict[tuple[str, str | None], float]:
        return {(s.name, s.labels.get("branch")): s.value for fam in text_string_to_metric_families(path.read_text())
                for s in fam.samples if s.name != "lakectl_table_maintenance_status"}

    t, _, _ = _forked(tmp_path, writes=4)
    path = tmp_path / "lakectl.prom"
    rep = maintain_table(t, Policy())
    write_atomically(str(path), [rep])
    one = series(path)
    assert one[("lakectl_table_snapshots", None)] == 2 and one[("lakectl_table_snapshots", "dev")] == 3
    assert one[("lakectl_table_maintenance_bytes_freed", "dev")] == rep.branches[0].bytes_freed > 0
    assert last_success_times(str(path)) == {"db.t": rep.finished_at}
    labels = {tuple(sorted(s.labels)) for fam in text_string_to_metric_families(path.read_text())
              for s in fam.samples if s.name == "lakectl_table_files"}
    assert labels == {("table",), ("branch", "table")}

    held = leases.acquire(t.file_io, t.path, holder="other:1:x", ttl_seconds=600)
    skipped = maintain_table(t, Policy())
    assert skipped.status == "skipped" and skipped.branches is None
    write_atomically(str(path), [skipped])
    assert series(path)[("lakectl_table_snapshots", "dev")] == 3
    leases.release(t.file_io, held)

    delete_branch(t, "dev")
    rep = maintain_table(t, Policy())
    assert rep.status == "done" and rep.branches == []
    write_atomically(str(path), [rep])
    assert [k for k in series(path) if k[1] == "dev"] == []


def test_maintain_expires_decoupled_changelogs_in_the_expire_pass(tmp_path):
    # snapshot.num-retained.max 3 < changelog.num-retained.max 5: expire keeps each expired
    # snapshot as changelog/changelog-N and drops the changelogs past the 5 newest ids.
    t = make(tmp_path, "cl", options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
                                      "changelog.num-retained.min": "1", "changelog.num-retained.max": "5"})
    for i in range(10):
        t.write(rows([i]))
    assert "expire" in verbs(plan_table(t, measure(t), Policy()))
    maintain_table(t, Policy())
    changelog_dir = Path(t.path) / "changelog"
    latest = t.snapshots.latest_id()  # 10, or 11 when maintain compacted first
    assert t.snapshots.list_ids() == [latest - 2, latest - 1, latest]
    # Java's rule: from latest - 5 + 1 on, the newest changelog (latest - 3) always kept
    assert sorted(int(p.name.split("-")[1]) for p in changelog_dir.iterdir() if p.name.startswith("changelog-")) \
        == [latest - 4, latest - 3]
    assert "expire" not in verbs(plan_table(t, measure(t), Policy()))
