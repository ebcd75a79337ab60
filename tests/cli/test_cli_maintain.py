"""lakectl maintain and lakectl health as cron and scripts run them: the console script in a
subprocess, its JSON parsed, its exit codes, and the warehouse's files compared."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cli_kit import assert_lakectl_words

from core import lease as leases
from core.table import Table
from tests.cli.test_console_script import entry_point, run

# Subprocesses import this worktree's lakectl (PYTHONPATH is inherited).


@pytest.fixture
def cli(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["HOME"] = str(tmp_path / "home")
    wh = tmp_path / "wh"
    cmd = entry_point("script")

    def call(*args, config: Path | None = None):
        extra = ["--config", str(config)] if config else []
        return run(cmd, *extra, *args, "-w", wh, env=env, cwd=tmp_path)
    call.wh = wh
    return call


def ok_json(proc):
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def make(cli, tmp_path: Path, name: str, writes: int, *options: str) -> None:
    assert cli("create", f"db.{name}", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id",
               "-o", "bucket=1", "-o", "write-only=true", *(x for o in options for x in ("-o", o))).returncode == 0
    for i in range(writes):
        src = tmp_path / f"{name}{i}.csv"
        src.write_text("id,v\n" + "".join(f"{k},v{i}\n" for k in range(i * 3, i * 3 + 4)))
        assert cli("write", f"db.{name}", "-i", src).returncode == 0


def files(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file())


def by_table(reports) -> dict:
    return {r["table"]: r for r in reports}


def test_dry_run_plans_and_changes_nothing(cli, tmp_path):
    make(cli, tmp_path, "busy", 3, "num-sorted-run.compaction-trigger=3")
    make(cli, tmp_path, "calm", 2, "num-sorted-run.compaction-trigger=3")
    before = files(cli.wh)
    reports = by_table(ok_json(cli("maintain", "--dry-run", "-f", "json")))
    assert files(cli.wh) == before
    assert [a["verb"] for a in reports["db.busy"]["actions"]] == ["compact", "remove-orphan-files"]
    assert [a["verb"] for a in reports["db.calm"]["actions"]] == ["remove-orphan-files"]
    assert {r["status"] for r in reports.values()} == {"planned"}


def test_run_brings_tables_to_their_options_and_writes_metrics(cli, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    make(cli, tmp_path, "busy", 4, "num-sorted-run.compaction-trigger=3",
         "snapshot.num-retained.min=1", "snapshot.num-retained.max=1")
    expected = ok_json(cli("scan", "db.busy", "-f", "json"))
    prom = tmp_path / "lakectl.prom"
    reports = by_table(ok_json(cli("maintain", "db", "--metrics-file", prom, "-f", "json")))
    busy = reports["db.busy"]
    assert busy["status"] == "done"
    assert [a["verb"] for a in busy["actions"]] == ["compact", "expire", "remove-orphan-files"]
    assert busy["bytes_freed"] > 0
    assert sorted(ok_json(cli("scan", "db.busy", "-f", "json")), key=lambda r: r["id"]) == \
        sorted(expected, key=lambda r: r["id"])
    snaps = ok_json(cli("snapshots", "db.busy", "-f", "json"))
    assert len(snaps) == 1 and snaps[0]["commit_kind"] == "COMPACT"
    health = ok_json(cli("health", "db.busy", "-f", "json"))
    assert health["max_sorted_runs"] == 1 and health["snapshots"] == 1 and health["recommendations"] == []
    samples = {(s.name, s.labels["table"]): s.value
               for f in text_string_to_metric_families(prom.read_text()) for s in f.samples}
    assert samples[("lakectl_table_snapshots", "db.busy")] == 1
    assert samples[("lakectl_table_max_sorted_runs", "db.busy")] == 1
    assert samples[("lakectl_table_files", "db.busy")] == health["file_count"]
    assert samples[("lakectl_table_maintenance_bytes_freed", "db.busy")] == busy["bytes_freed"]
    assert ok_json(cli("check", "db.busy", "-f", "json")) is not None


def test_failed_table_is_named_exit_1_and_the_others_are_done(cli, tmp_path):
    make(cli, tmp_path, "broken", 1)
    make(cli, tmp_path, "fine", 1)
    shutil.rmtree(cli.wh / "db.db" / "broken" / "manifest")  # its snapshot names lost manifests
    proc = cli("maintain", "-f", "json")
    assert proc.returncode == 1
    reports = by_table(json.loads(proc.stdout))
    assert reports["db.broken"]["status"] == "failed" and reports["db.broken"]["reason"]
    assert_lakectl_words(reports["db.broken"]["reason"])  # it said "CorruptMetadataError: ..."
    assert reports["db.fine"]["status"] == "done"
    assert "db.broken" in proc.stderr


def test_table_held_by_another_run_is_skipped_exit_0(cli, tmp_path):
    make(cli, tmp_path, "held", 1)
    t = Table.open("db.held", warehouse=str(cli.wh))
    other = leases.acquire(t.file_io, t.path, holder="cron-run-1", ttl_seconds=600)
    reports = by_table(ok_json(cli("maintain", "-f", "json")))
    assert reports["db.held"]["status"] == "skipped" and "lease" in reports["db.held"]["reason"]
    # who holds it and until when, so that a stuck table can be told from a busy one
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(other.expires_at))
    assert f"cron-run-1 (until {until})" in reports["db.held"]["reason"]
    leases.release(t.file_io, other)


def test_config_policy_patterns_skip_tables_and_verbs(cli, tmp_path):
    make(cli, tmp_path, "events_a", 3, "num-sorted-run.compaction-trigger=2")
    make(cli, tmp_path, "tmp_x", 1)
    config = tmp_path / "lakectl.toml"
    config.write_text('[maintain]\norphan-age = "2d"\n'
                      '[maintain.tables."*.events_*"]\nskip-verbs = ["compact"]\n'
                      '[maintain.tables."db.tmp_*"]\nskip = true\n')
    reports = by_table(ok_json(cli("maintain", "--dry-run", "-f", "json", config=config)))
    assert [a["verb"] for a in reports["db.events_a"]["actions"]] == ["remove-orphan-files"]
    assert reports["db.events_a"]["actions"][0]["reason"] == "files unreferenced for 2d"
    assert reports["db.tmp_x"]["status"] == "skipped"
    bad = tmp_path / "bad.toml"
    bad.write_text('[maintain]\nskip-verbs = ["vacuum"]\n')
    proc = cli("maintain", "--dry-run", config=bad)
    assert proc.returncode == 2 and "vacuum" in proc.stderr


def test_health_json_recommends_compaction_past_the_trigger(cli, tmp_path):
    make(cli, tmp_path, "h", 3, "num-sorted-run.compaction-trigger=3")
    h = ok_json(cli("health", "db.h", "-f", "json"))
    assert (h["file_count"], h["snapshots"], h["max_sorted_runs"], h["total_record_count"]) == (3, 3, 3, 12)
    assert h["file_size_histogram"]["< 1 MB"] == 3
    assert {"lakectl compact db.h"} == {r["command"] for r in h["recommendations"]}


def test_health_for_a_script_imports_no_arrow_or_rich(cli, tmp_path):
    """health reads metadata only: pyarrow, numpy, pandas and rich stay unloaded on a pipe."""
    from tests.cli.test_command_line import modules_of

    make(cli, tmp_path, "meta", 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    proc, modules = modules_of(["-w", cli.wh, "health", "db.meta", "-f", "json"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["file_count"] == 1
    assert sorted(m for m in modules if m.split(".")[0] in ("pyarrow", "numpy", "rich", "pandas")) == []


def test_config_show_policy_lists_each_tables_effective_policy(cli, tmp_path):
    make(cli, tmp_path, "events_a", 0)
    make(cli, tmp_path, "plain", 0)
    config = tmp_path / "lakectl.toml"
    config.write_text('[maintain]\norphan-age = "2d"\n[maintain.tables."db.*"]\nfull-compaction = true\n'
                      '[maintain.tables."*.events_*"]\nskip-verbs = ["compact", "expire"]\norphan-age = "5d"\n')
    rows = by_table(ok_json(cli("config", "show", "--policy", "-f", "json", config=config)))
    assert rows["db.events_a"] == {"table": "db.events_a", "skip": False, "skip_verbs": "compact,expire",
                                   "orphan_age": "5d", "orphan_force": False, "full_compaction": True, "small_files_trigger": None,
                                   "deletion_vector_ratio_trigger": 0.2, "patterns": "db.*,*.events_*"}
    assert (rows["db.plain"]["orphan_age"], rows["db.plain"]["skip_verbs"], rows["db.plain"]["patterns"]) == \
        ("2d", "", "db.*")


def test_two_overlapping_runs_never_maintain_a_table_at_once(cli, tmp_path):
    """Two maintain processes started together over the same tables: per table, the times each
    held its lease never overlap, and every table ends compacted."""
    import subprocess

    names = [f"t{i}" for i in range(4)]
    for n in names:
        make(cli, tmp_path, n, 3, "num-sorted-run.compaction-trigger=3")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["HOME"] = str(tmp_path / "home")
    cmd = [*entry_point("script"), "maintain", "-w", str(cli.wh), "-f", "json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    runs = [by_table(json.loads(out)) for out, _ in outs]
    for n in names:
        held = sorted((r[f"db.{n}"]["lease_taken_time"], r[f"db.{n}"]["lease_released_time"])
                      for r in runs if r[f"db.{n}"]["status"] == "done")
        assert held, n
        for (_, end1), (start2, _) in zip(held, held[1:]):
            assert start2 >= end1, (n, held)
        skipped = [r[f"db.{n}"] for r in runs if r[f"db.{n}"]["status"] == "skipped"]
        assert all("lease" in s["reason"] for s in skipped)
        assert ok_json(cli("health", f"db.{n}", "-f", "json"))["max_sorted_runs"] == 1


def test_terminal_shows_a_bar_per_table_being_maintained(cli, tmp_path):
    """On a terminal, --parallel 2 draws a bar per table at work (named with its current verb)
    under an overall bar; held still by stalling the first two compaction commits (one per
    worker) so that both bars are on screen, then the summary table follows and the bars are
    gone."""
    from tests.cli.test_terminal import ANSI, in_terminal

    for n in ("t0", "t1", "t2"):
        make(cli, tmp_path, n, 3, "num-sorted-run.compaction-trigger=3")
    stall = tmp_path / "stall"
    seen = {}

    def on_output(out: bytes, _fd: int) -> bool:
        # both workers' compaction commits are stalled: wait for a frame drawn after that
        if "bars" in seen or not stall.exists() or len(stall.read_text().splitlines()) < 2:
            return False
        seen.setdefault("from", len(out))
        frame = ANSI.sub(b"", out[seen["from"]:]).decode("utf-8", "replace")
        # a frame arrives in pieces: wait until both table bars and the overall bar below them are in
        bars_drawn = sum(f"db.{n}: compact" in frame for n in ("t0", "t1", "t2")) >= 2
        if bars_drawn and "tables (" in frame.split("db.t", 1)[-1]:
            seen["bars"] = frame
            stall.unlink()  # let the stalled commits go on
            return True
        return False

    session = in_terminal(["-w", str(cli.wh), "maintain", "--parallel", "2"], tmp_path, on_output=on_output,
                          env={"LAKECTL_FAULT": "stall:publish:1-2", "LAKECTL_STALL_FILE": str(stall)})
    assert session.exit_code == 0, session.text
    bars = seen["bars"]
    # two tables at work at once, each on its own bar naming its verb, under the overall bar
    assert any(line.count(": compact") == 1 for line in bars.splitlines())
    assert "tables (0 of 3 done" in bars
    text = session.text
    assert "maintenance" in text and all(n in text for n in ("db.t0", "db.t1", "db.t2"))
    after = session.output[session.output.rindex(b"\x1b[?25h"):]  # the cursor is back: bars erased
    assert b": compact" not in after and b"maintenance" in after
    for n in ("t0", "t1", "t2"):
        assert ok_json(cli("health", f"db.{n}", "-f", "json"))["max_sorted_runs"] == 1


def test_run_killed_inside_a_compaction_then_rerun_ends_healthy(cli, tmp_path):
    """A cron run SIGKILLed in the middle of a table's work (right before its compaction commit,
    after the new files are written): the table still reads at its last snapshot, the rerun
    takes the dead run's lease at once, finishes the work, and check finds nothing wrong."""
    for n in ("a", "b"):
        make(cli, tmp_path, n, 3, "num-sorted-run.compaction-trigger=3", "snapshot.num-retained.min=1",
             "snapshot.num-retained.max=1")
    expected = {n: sorted(map(json.dumps, ok_json(cli("scan", f"db.{n}", "-f", "json")))) for n in ("a", "b")}
    env_kill = {"LAKECTL_FAULT": "kill:publish:2"}  # table a's compaction commits, b's is killed
    killed = run(entry_point("script"), "maintain", "-f", "json", "-w", cli.wh,
                 env={**{k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")},
                      "HOME": str(tmp_path / "home"), **env_kill}, cwd=tmp_path)
    assert killed.returncode == -9, killed.stderr
    assert Path(leases.lease_path(str(cli.wh / "db.db" / "b"))).exists()  # the dead run's lease
    for n in ("a", "b"):  # readable at the last snapshot
        assert sorted(map(json.dumps, ok_json(cli("scan", f"db.{n}", "-f", "json")))) == expected[n]
    reports = by_table(ok_json(cli("maintain", "-f", "json")))
    assert reports["db.b"]["status"] == "done" and reports["db.b"]["actions"][0]["verb"] == "compact"
    for n in ("a", "b"):
        assert sorted(map(json.dumps, ok_json(cli("scan", f"db.{n}", "-f", "json")))) == expected[n]
        assert ok_json(cli("health", f"db.{n}", "-f", "json"))["max_sorted_runs"] == 1
        assert cli("check", f"db.{n}").returncode == 0
    assert not Path(leases.lease_path(str(cli.wh / "db.db" / "b"))).exists()


@pytest.mark.spark
@pytest.mark.slow
def test_engine_auto_sends_compactions_past_the_spark_threshold_to_spark(cli, tmp_path):
    """--engine auto with a Spark threshold below one table's data and above the other's: the
    big table's compaction runs on Spark (its report says so), the small one's locally, and both
    read as before."""
    make(cli, tmp_path, "big", 3, "num-sorted-run.compaction-trigger=3")
    make(cli, tmp_path, "small", 3, "num-sorted-run.compaction-trigger=3")
    big_csv = tmp_path / "big.csv"
    big_csv.write_text("id,v\n" + "".join(f"{k},{'x' * 40}{k}\n" for k in range(100, 20_100)))
    assert cli("write", "db.big", "-i", big_csv).returncode == 0
    size = ok_json(cli("health", "db.big", "-f", "json"))["total_file_size"]
    small = ok_json(cli("health", "db.small", "-f", "json"))["total_file_size"]
    assert small < size // 4
    expected = {n: sorted(map(json.dumps, ok_json(cli("scan", f"db.{n}", "-f", "json")))) for n in ("big", "small")}
    config = tmp_path / "spark.toml"
    config.write_text(f'[spark]\nthreshold = "{(size + small) // 2}b"\n')
    reports = by_table(ok_json(cli("--engine", "auto", "maintain", "-f", "json", config=config)))
    engines = {n: reports[f"db.{n}"]["actions"][0]["detail"]["engine"] for n in ("big", "small")}
    assert engines == {"big": "spark", "small": "local"}
    for n in ("big", "small"):
        assert sorted(map(json.dumps, ok_json(cli("scan", f"db.{n}", "-f", "json")))) == expected[n]
        assert ok_json(cli("health", f"db.{n}", "-f", "json"))["max_sorted_runs"] == 1


# ---- the orphan age floor in the policy ----------------------------------------------------
@pytest.mark.parametrize("section, key", [
    ('[maintain]\norphan-age = "0s"\n', "maintain.orphan-age"),
    ('[maintain]\norphan-age = "2d"\n[maintain.tables."db.*"]\norphan-age = "30min"\norphan-force = false\n',
     "maintain.tables.db.*.orphan-age"),
], ids=["default", "pattern"])
def test_a_policy_orphan_age_under_an_hour_is_refused_when_the_config_is_read(cli, tmp_path, section, key):
    make(cli, tmp_path, "t", 0)
    config = tmp_path / "lakectl.toml"
    config.write_text(section)
    before = files(cli.wh)
    for args in (("maintain",), ("config", "show", "--policy")):
        proc = cli(*args, config=config)
        assert proc.returncode == 2, proc.stderr
        [line] = proc.stderr.splitlines()
        assert line.startswith("error: config file ") and f"key '{key}' =" in line
        assert "1h floor" in line and "before it publishes the snapshot" in line and "orphan-force = true" in line
    assert files(cli.wh) == before


def test_a_time_budget_starts_the_tables_never_maintained_before_the_one_just_maintained(cli, tmp_path):
    """Tight budgets used to start tables in name order, so the same first table took every
    run's budget; the metrics file's last success times now order them."""
    for name in ("a", "b", "c"):
        make(cli, tmp_path, name, 1)
    prom = tmp_path / "lakectl.prom"
    assert cli("maintain", "db.a", "--metrics-file", prom).returncode == 0
    reports = ok_json(cli("maintain", "db", "--time-budget", "1h", "--metrics-file", prom, "-f", "json"))
    assert [r["table"] for r in reports][-1] == "db.a"
    assert {r["table"] for r in reports} == {"db.a", "db.b", "db.c"}


@pytest.mark.parametrize("section, key, why", [
    ('[maintain]\norphan-age = "banana"\n', "maintain.orphan-age", "is not a duration"),
    ('[maintain.tables."db.*"]\norphan-age = "-1d"\n', "maintain.tables.db.*.orphan-age", "is not a duration"),
    ('[maintain]\nsmall-files-trigger = -3\n', "maintain.small-files-trigger", "at least 1"),
    ('[maintain.tables."db.t"]\ndeletion-vector-ratio-trigger = 7\n',
     "maintain.tables.db.t.deletion-vector-ratio-trigger", "from 0 to 1"),
], ids=["banana", "negative-age", "trigger", "ratio"])
def test_a_bad_policy_value_is_exit_2_before_anything_runs(cli, tmp_path, section, key, why):
    make(cli, tmp_path, "t", 3)
    config = tmp_path / "lakectl.toml"
    config.write_text(section)
    before = files(cli.wh)
    for args in (("maintain",), ("maintain", "--dry-run"), ("config", "show", "--policy")):
        proc = cli(*args, config=config)
        assert proc.returncode == 2, proc.stderr
        [line] = proc.stderr.splitlines()
        assert line.startswith(f"error: config file {config}") and f"key '{key}'" in line and why in line, line
    assert files(cli.wh) == before


def test_orphan_force_in_the_same_section_lets_maintain_remove_young_orphans(cli, tmp_path):
    make(cli, tmp_path, "t", 1)
    bucket = cli.wh / "db.db" / "t" / "bucket-0"
    young = bucket / "left-by-a-killed-write.parquet"
    young.write_bytes(b"x" * 10)
    config = tmp_path / "lakectl.toml"
    # The policy says no writer runs while maintain does: files of a minute are orphans.
    config.write_text('[maintain]\n[maintain.tables."db.t"]\norphan-age = "0s"\norphan-force = true\n')
    reports = by_table(ok_json(cli("maintain", "-f", "json", config=config)))
    orphans = next(a for a in reports["db.t"]["actions"] if a["verb"] == "remove-orphan-files")
    assert orphans["detail"]["files_deleted"] == 1 and not young.exists()


@pytest.mark.slow
def test_patterns_that_combine_into_a_short_age_without_force_fail_that_table_only(cli, tmp_path):
    """Each section on its own is fine; a later pattern's orphan-force = false leaves db.live with
    the default's 10min and no force: that table is refused (exit 1), the other is maintained."""
    make(cli, tmp_path, "batch", 1)
    make(cli, tmp_path, "live", 1)
    config = tmp_path / "lakectl.toml"
    config.write_text('[maintain]\norphan-age = "10min"\norphan-force = true\n'
                      '[maintain.tables."db.live"]\norphan-force = false\n')
    proc = cli("maintain", "-f", "json", config=config)
    assert proc.returncode == 1, proc.stderr
    reports = by_table(json.loads(proc.stdout))
    assert reports["db.batch"]["status"] == "done"
    live = reports["db.live"]
    assert live["status"] == "failed" and live["actions"] == [] and live["lease_taken_time"] is None
    assert "orphan-age '10min' is under the 1h floor" in live["reason"]


# ---- leases: a wrong clock, a lease lost while stopped -------------------------------------
@pytest.mark.slow
def test_a_lease_years_ahead_is_taken_over_with_a_warning_naming_its_holder(cli, tmp_path):
    make(cli, tmp_path, "skew", 2, "num-sorted-run.compaction-trigger=2")
    lease = Path(leases.lease_path(str(cli.wh / "db.db" / "skew")))
    lease.write_text(json.dumps({"holder": "clock-2035:77:abcd", "expires_at": time.time() + 10 * 365 * 86400}))
    proc = cli("maintain", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    report = by_table(json.loads(proc.stdout))["db.skew"]
    assert report["status"] == "done" and [a["verb"] for a in report["actions"]][0] == "compact"
    warning = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    assert len(warning) == 1 and "clock-2035:77:abcd" in warning[0] and "clock is wrong" in warning[0]
    assert not lease.exists()  # released at the end like any lease of this run


def _stalled_maintain(cli, tmp_path: Path, stall: Path, *args: str) -> subprocess.Popen:
    """``lakectl maintain`` stopped right before its first snapshot publish (a compaction's
    commit) until ``stall`` is deleted."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(HOME=str(tmp_path / "home"), LAKECTL_FAULT="stall:publish:1", LAKECTL_STALL_FILE=str(stall))
    proc = subprocess.Popen([*entry_point("script"), "maintain", "-w", str(cli.wh), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not stall.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "maintain never reached its first publish"
        time.sleep(0.05)
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("taker_released", [False, True], ids=["taker-holds", "taker-released"])
def test_a_run_stopped_past_its_lease_leaves_the_table_to_the_taker_and_reports(cli, tmp_path, taker_released):
    """A maintain run stopped in table a's compaction commit for longer than its lease (a stall
    through LAKECTL_FAULT; the taker runs its clock one lease period ahead, as if that much time
    had passed). Another run takes a's lease over; the first resumes: its compaction ends, it
    stops a with "lease lost to HOLDER" instead of running a's other verbs (or dying on a lease
    file that is gone), maintains b, and writes its report and metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    from core.ops.maintain import LEASE_SECONDS

    opts = ("num-sorted-run.compaction-trigger=2", "snapshot.num-retained.min=1", "snapshot.num-retained.max=1")
    make(cli, tmp_path, "a", 2, *opts)
    make(cli, tmp_path, "b", 2, *opts)
    stall, prom = tmp_path / "stall", tmp_path / "lakectl.prom"
    first = _stalled_maintain(cli, tmp_path, stall, "--metrics-file", str(prom), "-f", "json")
    a = Table.open("db.a", warehouse=str(cli.wh))
    taker = leases.acquire(a.file_io, a.path, holder="second-run:31:beef", ttl_seconds=LEASE_SECONDS,
                           now=time.time() + LEASE_SECONDS + 1)
    assert taker is not None, "the stalled run's lease did not count as expired"
    if taker_released:
        leases.release(a.file_io, taker)
    stall.unlink()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 1, err
    assert "missing file" not in err and "Traceback" not in err
    reports = by_table(json.loads(out))
    lost = reports["db.a"]
    assert lost["status"] == "failed" and [(x["verb"], x["done"]) for x in lost["actions"]] == [("compact", True)]
    if taker_released:
        assert lost["reason"].startswith("lease lost to another run, which took it over and has released it since")
    else:
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(taker.expires_at))
        assert lost["reason"].startswith(f"lease lost to second-run:31:beef (until {until})")
        # the first run left the taker's lease alone
        assert json.loads(Path(taker.path).read_text())["holder"] == "second-run:31:beef"
    assert "verbs not run: expire, remove-orphan-files" in lost["reason"]
    assert reports["db.b"]["status"] == "done"
    assert [x["verb"] for x in reports["db.b"]["actions"]] == ["compact", "expire", "remove-orphan-files"]
    samples = {(s.name, s.labels["table"]): s.value
               for f in text_string_to_metric_families(prom.read_text()) for s in f.samples}
    assert samples[("lakectl_table_maintenance_failed", "db.a")] == 1
    assert samples[("lakectl_table_maintenance_failed", "db.b")] == 0
    assert ("lakectl_table_last_maintenance_success_timestamp_seconds", "db.b") in samples
    assert ("lakectl_table_last_maintenance_success_timestamp_seconds", "db.a") not in samples
    # a's compaction (which ran before the loss was seen) left it whole
    assert ok_json(cli("health", "db.a", "-f", "json"))["max_sorted_runs"] == 1
    assert cli("check", "db.a").returncode == 0
    if not taker_released:
        leases.release(a.file_io, taker)
    assert not Path(leases.lease_path(a.path)).exists()


def test_a_table_named_that_does_not_exist_is_exit_3_as_for_every_command(cli, tmp_path):
    make(cli, tmp_path, "t", 1)
    proc = cli("maintain", "db.t", "db.nosuch", "-f", "json")
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"error: table db.nosuch does not exist (looked in {cli.wh / 'db.db' / 'nosuch'})"]


def test_a_table_gone_between_the_listing_and_its_turn_is_skipped(tmp_path):
    """maintain lists the tables, then takes them one by one: one dropped (or renamed) by then is
    skipped, exit 0, as one dropped under a verb is (core/ops/maintain.py)."""
    from core.ops.maintain import maintain
    from lakectl.maintain_policy import Policies

    wh = str(tmp_path / "wh")
    for name in ("a", "b"):
        from core.ops.create import create
        create(Table.locate(f"db.{name}", warehouse=wh), "id BIGINT")

    def open_after_b_went(name: str):
        shutil.rmtree(Path(wh) / "db.db" / "b", ignore_errors=True)  # dropped once the run has started
        return Table.open(name, warehouse=wh)

    reports = {r.table: r for r in maintain(["db.a", "db.b"], open_after_b_went, Policies(None))}
    assert reports["db.a"].status == "done"
    assert reports["db.b"].status == "skipped" and "went away meanwhile" in reports["db.b"].reason


def snapshot_ids(directory: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("snapshot-")) for p in (directory / "snapshot").glob("snapshot-*"))


def test_a_branch_is_maintained_by_its_own_options_reported_and_its_health_shown(cli, tmp_path):
    """Branch dev keeps 8 snapshots and 8 level-0 files of its own under
    snapshot.num-retained.max=3: one maintain run expires and compacts it, reports it as its
    own entry, and leaves main alone; health --branch counts what the branch directory holds."""
    make(cli, tmp_path, "t", 1, "num-sorted-run.compaction-trigger=5")
    assert cli("branch", "create", "db.t", "dev").returncode == 0
    assert cli("alter-schema", "db.t", "--branch", "dev", "--set-option", "snapshot.num-retained.max=3",
               "--set-option", "snapshot.num-retained.min=1",
               "--set-option", "num-sorted-run.compaction-trigger=3").returncode == 0
    for i in range(8):
        src = tmp_path / f"dev{i}.csv"
        src.write_text(f"id,v\n{100 + i},dev{i}\n0,dev{i}\n")
        assert cli("write", "db.t", "--branch", "dev", "-i", src).returncode == 0
    root = cli.wh / "db.db" / "t"
    dev_dir = root / "branch" / "branch-dev"
    assert snapshot_ids(dev_dir) == list(range(1, 10))  # the fork's snapshot 1 and 8 writes
    expected_dev = sorted([{"id": k, "v": "v0"} for k in (1, 2, 3)] + [{"id": 0, "v": "dev7"}]
                          + [{"id": 100 + i, "v": f"dev{i}"} for i in range(8)], key=lambda r: r["id"])
    assert ok_json(cli("scan", "db.t", "--branch", "dev", "-f", "json")) == expected_dev
    main_before = files(root / "snapshot")

    h = ok_json(cli("health", "db.t", "--branch", "dev", "-f", "json"))
    assert h["branch"] == "dev" and h["snapshots"] == len(snapshot_ids(dev_dir)) == 9
    assert h["file_count"] == 9 and h["max_sorted_runs"] == 9
    assert [r["command"] for r in h["recommendations"]] == ["lakectl compact db.t --branch dev",
                                                            "lakectl expire db.t --branch dev"]

    plan = {(r["table"], r["branch"]): r for r in ok_json(cli("maintain", "--dry-run", "-f", "json"))}
    assert [a["verb"] for a in plan[("db.t", "dev")]["actions"]] == ["compact", "expire"]
    assert [a["verb"] for a in plan[("db.t", "main")]["actions"]] == ["remove-orphan-files"]
    assert {r["status"] for r in plan.values()} == {"planned"}

    prom = tmp_path / "lakectl.prom"
    ran = ok_json(cli("maintain", "-f", "json", "--metrics-file", prom))
    assert [(r["table"], r["branch"], r["status"]) for r in ran] == [("db.t", "main", "done"), ("db.t", "dev", "done")]
    dev = ran[1]
    assert [a["verb"] for a in dev["actions"]] == ["compact", "expire"] and dev["bytes_freed"] > 0
    assert dev["actions"][1]["detail"]["snapshots_expired"] == list(range(1, 8))
    assert dev["lease_taken_time"] == ran[0]["lease_taken_time"]
    assert snapshot_ids(dev_dir) == [8, 9, 10]  # 10: the compaction; 3 kept
    live = ok_json(cli("files", "db.t", "--branch", "dev", "-f", "json"))
    assert len(live) == 1 and live[0]["level"] > 0
    assert ok_json(cli("scan", "db.t", "--branch", "dev", "-f", "json")) == expected_dev
    assert ok_json(cli("health", "db.t", "--branch", "dev", "-f", "json"))["snapshots"] == 3
    assert files(root / "snapshot") == main_before  # main untouched
    assert "lakectl_table_snapshots{branch=\"dev\",table=\"db.t\"} 3.0" in prom.read_text()
    assert "lakectl_table_snapshots{table=\"db.t\"} 1.0" in prom.read_text()

    text = cli("maintain")
    assert text.returncode == 0 and "dev" in text.stdout


def test_health_of_a_branch_that_does_not_exist_is_exit_3_with_one_line(cli, tmp_path):
    make(cli, tmp_path, "t", 1)
    proc = cli("health", "db.t", "--branch", "nosuch")
    assert proc.returncode == 3 == cli("expire", "db.t", "--branch", "nosuch").returncode
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == ["error: branch nosuch of table db.t does not exist"]
