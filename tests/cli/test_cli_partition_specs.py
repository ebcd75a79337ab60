"""--partition through the CLI: a column named twice is a usage error that drops, compacts or
lists nothing; Paimon's ``;`` form names several partitions where a command acts on several."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_kit import invoke, ok

DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]


@pytest.fixture()
def wh(tmp_path: Path) -> str:
    """db.t partitioned by dt, two rows in each of DAYS, written in two snapshots."""
    warehouse = str(tmp_path / "wh")
    ok("create", "db.t", "-w", warehouse, "--schema", "id INT, dt STRING", "--partition-by", "dt")
    for round_ in range(2):
        path = tmp_path / f"in{round_}.csv"
        path.write_text("id,dt\n" + "".join(f"{round_ * 10 + i},{day}\n" for i, day in enumerate(DAYS)))
        ok("write", "db.t", "-w", warehouse, "-i", path)
    return warehouse


def live_days(wh: str) -> dict[str, int]:
    return {r["partition"]["dt"]: r["record_count"] for r in ok("partitions", "db.t", "-w", wh)}


@pytest.mark.parametrize("command", [["drop-partition"], ["compact", "--full"], ["partitions"], ["files"], ["buckets"]])
def test_a_column_named_twice_is_a_usage_error_everywhere(wh: str, command: list[str]) -> None:
    snapshots = [s["snapshot_id"] for s in ok("snapshots", "db.t", "-w", wh)]
    result = invoke(command[0], "db.t", "-w", wh, *command[1:], "--partition", "dt=2024-01-02,dt=2024-01-03")
    assert result.exit_code == 2, result.stderr
    assert result.stderr == "error: --partition 'dt=2024-01-02,dt=2024-01-03' names column dt twice\n"
    assert result.stdout == ""
    assert [s["snapshot_id"] for s in ok("snapshots", "db.t", "-w", wh)] == snapshots
    assert live_days(wh) == {day: 2 for day in DAYS}


def test_write_overwrite_refuses_a_column_twice_and_several_partitions(wh: str, tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    path.write_text("id,dt\n99,2024-01-03\n")
    for spec, says in [("dt=2024-01-02,dt=2024-01-03", "names column dt twice"),
                       ("dt=2024-01-02;dt=2024-01-03", "takes one")]:
        result = invoke("write", "db.t", "-w", wh, "-i", path, "--mode", "overwrite", "--partition", spec)
        assert result.exit_code == 2 and says in result.stderr, result.stderr
    assert live_days(wh) == {day: 2 for day in DAYS}


def test_drop_partition_takes_several_partitions_separated_by_semicolons(wh: str) -> None:
    out = ok("drop-partition", "db.t", "-w", wh, "--partition", "dt=2024-01-01;dt=2024-01-03")
    assert sorted(p["dt"] for p in out["partitions"]) == ["2024-01-01", "2024-01-03"]
    assert out["records_deleted"] == 4 and out["missing"] == []
    assert live_days(wh) == {"2024-01-02": 2}
    # one snapshot for both, as for repeated --partition
    assert [s["commit_kind"] for s in ok("snapshots", "db.t", "-w", wh)][0] == "OVERWRITE"
    assert len(ok("snapshots", "db.t", "-w", wh)) == 3


def test_views_and_compact_take_the_semicolon_form(wh: str) -> None:
    both = "dt=2024-01-01;dt=2024-01-03"

    def days(command: str, *extra: str) -> list[str]:
        return sorted({r["partition"]["dt"] for r in ok(command, "db.t", "-w", wh, "-p", both, *extra)})

    assert days("partitions") == days("files") == days("buckets") == ["2024-01-01", "2024-01-03"]
    # the semicolon form and repeated options select the same partitions
    repeated = ok("files", "db.t", "-w", wh, "-p", "dt=2024-01-01", "-p", "dt=2024-01-03")
    assert ok("files", "db.t", "-w", wh, "-p", both) == repeated
    ok("compact", "db.t", "-w", wh, "--full", "-p", both)
    files_per_day: dict[str, int] = {}
    for r in ok("files", "db.t", "-w", wh):
        files_per_day[r["partition"]["dt"]] = files_per_day.get(r["partition"]["dt"], 0) + 1
    assert files_per_day == {"2024-01-01": 1, "2024-01-02": 2, "2024-01-03": 1}
    assert live_days(wh) == {day: 2 for day in DAYS}
