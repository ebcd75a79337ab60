"""remove-unexisting-files through the console script, against a hand-kept model: the rows a
lost data file held (read from the file itself before it goes) are gone, every other row and
every snapshot stays; a dry run commits nothing; a kill at each of its mutations, a commit that
replaces the missing file meanwhile and a write landing meanwhile lose nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from expire_race_kit import Lakectl, csv_of, snapshot_ids
from test_stalled_neighbours import stalled

pytestmark = pytest.mark.slow

T = "db.t"
WRITES = [[(w * 10 + i, f"w{w}", f"d{i % 2}") for i in range(4)] for w in range(4)]


def _files(table_dir: Path) -> set[Path]:
    return set(table_dir.rglob("data-*.parquet"))


def _table(tmp: Path, *options: str) -> tuple[Lakectl, Path, dict[int, tuple[str, str]], list[set[Path]]]:
    """A partitioned primary-key table with four writes of distinct keys; the data files each
    write added, found on disk."""
    lk = Lakectl(str(tmp / "wh"))
    lk.ok("create", T, "-s", "id BIGINT, v STRING, dt STRING", "--primary-key", "id,dt", "--partition-by", "dt",
          "-o", "bucket=2", "-o", "write-only=true", *[a for o in options for a in ("-o", o)])
    table_dir = tmp / "wh" / "db.db" / "t"
    rows: dict[int, tuple[str, str]] = {}
    added = []
    for n, batch in enumerate(WRITES):
        before = _files(table_dir)
        lk.ok("write", T, "-i", csv_of(tmp / f"w{n}.csv", batch))
        added.append(_files(table_dir) - before)
        rows.update({i: (v, d) for i, v, d in batch})
    return lk, table_dir, rows, added


def _lose(path: Path, rows: dict[int, tuple[str, str]]) -> int:
    """Delete a data file; drop the keys it held from the model. Returns its record count."""
    ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
    path.unlink()
    for i in ids:
        rows.pop(i)
    return len(ids)


def _scan(lk: Lakectl, *args: str) -> dict[int, tuple[str, str]]:
    return {r["id"]: (r["v"], r["dt"]) for r in lk.json("scan", T, *args)}  # type: ignore[union-attr]


def test_the_lost_files_rows_go_every_snapshot_stays_and_a_rerun_finds_nothing(tmp_path: Path) -> None:
    lk, table_dir, rows, added = _table(tmp_path)
    lost = sorted(added[1])[0]
    records = _lose(lost, rows)
    relative = str(lost.relative_to(table_dir))
    broken = lk.run("scan", T)
    assert broken.returncode != 0 and "remove-unexisting-files" in broken.stderr

    dry = lk.json("remove-unexisting-files", T, "--dry-run")
    assert dry == {"table": T, "branch": "main", "snapshot_id": None, "files_deleted": 1,
                   "records_deleted": records, "missing_files": [relative], "dry_run": True}
    assert snapshot_ids(lk) == [1, 2, 3, 4]

    done = lk.json("remove-unexisting-files", T)
    assert done == {**dry, "snapshot_id": 5, "dry_run": False}
    assert snapshot_ids(lk) == [1, 2, 3, 4, 5]
    snapshots = {s["snapshot_id"]: s for s in lk.json("snapshots", T)}  # type: ignore[union-attr]
    assert snapshots[5]["commit_kind"] == "APPEND" and snapshots[5]["delta_record_count"] == -records
    assert _scan(lk) == rows
    assert _scan(lk, "--snapshot-id", "1") == {i: (v, d) for i, v, d in WRITES[0]}  # never listed the file
    again = lk.json("remove-unexisting-files", T)
    assert (again["snapshot_id"], again["files_deleted"], again["missing_files"]) == (None, 0, [])  # type: ignore[index]

    # The snapshots that still list the file are what check reports, with the way out; once
    # expired, the table is sound.
    check = lk.run("check", T)
    assert check.returncode == 1 and "remove-unexisting-files" in check.stderr
    lk.ok("expire", T, "--retain-max", "1", "--retain-min", "1", "--older-than", "0s")
    lk.ok("check", T)
    assert _scan(lk) == rows


def test_a_kill_at_each_mutation_then_a_rerun_loses_nothing(tmp_path: Path) -> None:
    lk, table_dir, rows, added = _table(tmp_path)
    _lose(sorted(added[2])[0], rows)
    template = tmp_path / "wh"
    killed = 0
    for n in range(1, 30):
        case = tmp_path / f"kill-{n}"
        subprocess.run(["cp", "-a", str(template), str(case)], check=True)
        ck = Lakectl(str(case))
        run = subprocess.run(ck.argv("remove-unexisting-files", T), env={**ck.env, "LAKECTL_FAULT": f"kill:mutation:{n}"},
                             capture_output=True, text=True, timeout=180)
        if run.returncode == 0:
            break
        assert run.returncode == -9, run.stderr
        killed += 1
        after = Lakectl(str(case))
        assert snapshot_ids(after) in ([1, 2, 3, 4], [1, 2, 3, 4, 5])
        lk_done = after.json("remove-unexisting-files", T)
        assert lk_done["files_deleted"] in (0, 1)  # type: ignore[index]
        assert snapshot_ids(after) == [1, 2, 3, 4, 5]
        assert _scan(after) == rows
    assert killed >= 3  # the manifest, the manifest lists and the snapshot were each in play


def test_a_commit_that_replaces_the_missing_file_meanwhile_makes_it_plan_again(tmp_path: Path) -> None:
    lk, table_dir, rows, added = _table(tmp_path)
    lost = sorted(added[1])[0]
    _lose(lost, rows)
    partition = lost.parent.parent.name  # dt=d0 or dt=d1
    with stalled(lk, tmp_path, "stall:publish:1", "remove-unexisting-files", T) as s:
        lk.ok("drop-partition", T, "-p", partition)
        code, out, err = s.resume()
    assert code == 0, err
    result = json.loads(out)
    # Planned again on the drop's snapshot, which lists no file of that partition: nothing to do.
    assert (result["snapshot_id"], result["files_deleted"]) == (None, 0)
    assert snapshot_ids(lk) == [1, 2, 3, 4, 5]
    dt = partition.split("=")[1]
    assert _scan(lk) == {i: r for i, r in rows.items() if r[1] != dt}


def test_a_write_landing_meanwhile_stays(tmp_path: Path) -> None:
    lk, table_dir, rows, added = _table(tmp_path)
    _lose(sorted(added[3])[0], rows)
    late = [(100, "late", "d0"), (101, "late", "d1")]
    with stalled(lk, tmp_path, "stall:publish:1", "remove-unexisting-files", T) as s:
        lk.ok("write", T, "-i", csv_of(tmp_path / "late.csv", late))
        code, out, err = s.resume()
    assert code == 0, err
    rows.update({i: (v, d) for i, v, d in late})
    assert snapshot_ids(lk) == [1, 2, 3, 4, 5, 6]
    assert _scan(lk) == rows
