"""``lakectl mark-partition-done`` through CliRunner: the _SUCCESS files Paimon's success-file
action writes (path by Paimon's partition naming, JSON fields, creation time kept on a second
mark), dry runs, the refusals, and remove-orphan-files leaving the marks alone."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cli_kit import invoke, ok

T = "db.t"


def _table(tmp_path: Path, *options: str) -> str:
    wh = str(tmp_path / "wh")
    ok("create", T, "-w", wh, "-s", "id BIGINT, dt STRING, hr INT", "--primary-key", "id,dt,hr",
       "--partition-by", "dt,hr", *[a for o in options for a in ("-o", o)])
    rows = tmp_path / "rows.csv"
    rows.write_text("id,dt,hr\n1,2024-01-01,1\n2,a:b,7\n")
    ok("write", T, "-w", wh, "-i", rows)
    return wh


def _success(wh: str, partition_dir: str) -> dict:
    return json.loads((Path(wh) / "db.db" / "t" / partition_dir / "_SUCCESS").read_text())


def test_marks_write_paimons_success_file_and_a_second_mark_keeps_the_creation_time(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    before = int(time.time() * 1000)
    first = ok("mark-partition-done", T, "-w", wh, "-p", "hr=1,dt=2024-01-01;dt=a:b,hr=7", "-p", "dt=2024-01-02,hr=1")
    after = int(time.time() * 1000)
    # Paimon's partition directories, columns in the table's order, ':' escaped as %3A.
    assert first == {"table": T, "partitions": [{"dt": "2024-01-01", "hr": "1"}, {"dt": "a:b", "hr": "7"},
                                                {"dt": "2024-01-02", "hr": "1"}],
                     "missing": [{"dt": "2024-01-02", "hr": "1"}], "actions": ["success-file"],
                     "files_written": ["dt=2024-01-01/hr=1/_SUCCESS", "dt=a%3Ab/hr=7/_SUCCESS",
                                       "dt=2024-01-02/hr=1/_SUCCESS"], "dry_run": False}
    mark = _success(wh, "dt=a%3Ab/hr=7")
    assert set(mark) == {"creationTime", "modificationTime"}
    assert before <= mark["creationTime"] == mark["modificationTime"] <= after

    time.sleep(0.01)
    ok("mark-partition-done", T, "-w", wh, "-p", "dt=a:b,hr=7")
    again = _success(wh, "dt=a%3Ab/hr=7")
    assert again["creationTime"] == mark["creationTime"] < again["modificationTime"]


def test_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    dry = ok("mark-partition-done", T, "-w", wh, "-p", "dt=2024-01-01,hr=1", "--dry-run")
    assert dry["files_written"] == ["dt=2024-01-01/hr=1/_SUCCESS"] and dry["dry_run"] is True
    assert not list((Path(wh) / "db.db" / "t").rglob("_SUCCESS"))


def test_refusals(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    partial = invoke("mark-partition-done", T, "-w", wh, "-p", "dt=2024-01-01")
    assert partial.exit_code == 2 and "must name every partition column (dt, hr)" in partial.stderr
    ok("alter-schema", T, "-w", wh, "--set-option", "partition.mark-done-action=success-file,done-partition")
    metastore = invoke("mark-partition-done", T, "-w", wh, "-p", "dt=2024-01-01,hr=1")
    assert metastore.exit_code == 1 and "done-partition" in metastore.stderr and "metastore" in metastore.stderr
    assert not list((Path(wh) / "db.db" / "t").rglob("_SUCCESS"))  # refused before marking anything
    ok("create", "db.flat", "-w", wh, "-s", "id BIGINT")
    flat = invoke("mark-partition-done", "db.flat", "-w", wh, "-p", "dt=1")
    assert flat.exit_code == 2 and "not partitioned" in flat.stderr


def test_orphan_removal_leaves_the_marks(tmp_path: Path) -> None:
    wh = _table(tmp_path)
    ok("mark-partition-done", T, "-w", wh, "-p", "dt=2024-01-01,hr=1")
    stray = Path(wh) / "db.db" / "t" / "dt=2024-01-01" / "hr=1" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"not referenced")
    removed = ok("remove-orphan-files", T, "-w", wh, "--older-than", "0s", "--force")
    assert removed["paths"] == [str(stray)]  # the one unreferenced data file went, the mark stayed
    assert _success(wh, "dt=2024-01-01/hr=1")["creationTime"] > 0
    ok("check", T, "-w", wh)
