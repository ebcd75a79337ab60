"""``lakectl truncate``, ``drop-partition``, ``drop``, ``drop-database`` and ``rename`` through
CliRunner on real tables: JSON summaries, effects against hand-computed rows, dry runs that
change nothing, exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner, Result

from core.ops.check import check
from core.ops.create import create
from core.table import Table
from lakectl.app import app

runner = CliRunner()


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def as_json(res: Result) -> Any:
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


ROWS = [("a", 1, 1, "x"), ("a", 1, 2, "y"), ("a", 2, 3, "z"), ("b", 1, 4, "w"), ("b", 1, 5, "v")]


def orders(wh: Path, *, primary_key: bool = True, partitioned: bool = True, name: str = "db.t") -> Table:
    """dt, hr partitions (a/1, a/2, b/1), written in two commits (a second file in a/1)."""
    t = Table.locate(name, warehouse=str(wh))
    keys = ["dt", "hr", "id"] if primary_key else []
    create(t, "dt STRING NOT NULL, hr INT NOT NULL, id BIGINT NOT NULL, v STRING", primary_keys=keys,
           partition_keys=["dt", "hr"] if partitioned else [],
           options={"bucket": "1" if primary_key else "-1", "write-only": "true"})
    for chunk in (ROWS[:3], ROWS[3:] + [("a", 1, 6, "u")]):
        t.write(pa.table({"dt": [r[0] for r in chunk], "hr": pa.array([r[1] for r in chunk], pa.int32()),
                          "id": pa.array([r[2] for r in chunk], pa.int64()), "v": [r[3] for r in chunk]}))
    return t


ALL = sorted(ROWS + [("a", 1, 6, "u")])


def rows(t: Table, **kw: Any) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.scan(**kw).to_pylist())


def data_files(t: Table) -> list[str]:
    return sorted(str(p) for p in Path(t.path).rglob("data-*") if "bucket-" in p.parent.name)


# ---- truncate --------------------------------------------------------------------------

@pytest.mark.parametrize("primary_key, partitioned", [(True, True), (True, False), (False, True), (False, False)])
def test_truncate_empties_the_table_in_one_overwrite(tmp_path: Path, primary_key: bool, partitioned: bool) -> None:
    t = orders(tmp_path / "wh", primary_key=primary_key, partitioned=partitioned)
    live = t.files()
    data_before = data_files(t)
    assert len(data_before) == len(live)
    args = ["truncate", "db.t", "-w", tmp_path / "wh", "-f", "json"]
    dry = as_json(invoke(*args, "--dry-run"))
    assert dry == {"table": "db.t", "branch": "main", "snapshot_id": None, "files_deleted": len(live), "records_deleted": 6,
                   "dry_run": True}
    assert t.snapshots.list_ids() == [1, 2] and rows(t) == ALL
    real = as_json(invoke(*args))
    assert real == {**dry, "snapshot_id": 3, "dry_run": False}
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    assert rows(t) == [] and t.files() == []
    assert rows(t, snapshot_id=2) == ALL  # time travel still reads: the files stay for expire
    assert data_files(t) == data_before  # nothing deleted from disk
    assert check(t).ok
    # nothing left to delete: no empty snapshot (the one rule for nothing to do)
    again = as_json(invoke(*args))
    assert again == {**real, "snapshot_id": None, "files_deleted": 0, "records_deleted": 0}
    assert t.snapshots.list_ids() == [1, 2, 3]


def test_truncate_without_snapshots_commits_nothing(tmp_path: Path) -> None:
    t = Table.locate("db.e", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT")
    out = as_json(invoke("truncate", "db.e", "-w", tmp_path / "wh", "-f", "json"))
    assert out["snapshot_id"] is None and out["files_deleted"] == 0 and t.snapshots.list_ids() == []


def test_truncate_missing_table_exit_3(tmp_path: Path) -> None:
    res = invoke("truncate", "db.nope", "-w", tmp_path / "wh")
    assert res.exit_code == 3 and res.stderr.startswith("error: table db.nope does not exist")


# ---- drop-partition --------------------------------------------------------------------

@pytest.mark.parametrize("primary_key", [True, False])
def test_drop_partition_deletes_exactly_those_partitions(tmp_path: Path, primary_key: bool) -> None:
    t = orders(tmp_path / "wh", primary_key=primary_key)
    args = ["drop-partition", "db.t", "-w", tmp_path / "wh", "--partition", "dt=a,hr=1", "--partition", "hr=1,dt=b",
            "--partition", "dt=c,hr=9", "-f", "json"]
    dry = as_json(invoke(*args, "--dry-run"))
    # a/1 holds ids 1, 2 (first commit) and 6 (second): two files; b/1 one file of ids 4, 5.
    assert dry == {"table": "db.t", "branch": "main", "snapshot_id": None, "partitions": [{"dt": "a", "hr": "1"}, {"dt": "b", "hr": "1"}],
                   "missing": [{"dt": "c", "hr": "9"}], "files_deleted": 3, "records_deleted": 5, "dry_run": True}
    assert t.snapshots.list_ids() == [1, 2]
    real = as_json(invoke(*args))
    assert real == {**dry, "snapshot_id": 3, "dry_run": False}
    assert rows(t) == [("a", 2, 3, "z")]
    assert rows(t, snapshot_id=2) == ALL
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    assert check(t).ok


def test_drop_partition_refusals(tmp_path: Path) -> None:
    t = orders(tmp_path / "wh")
    wh = tmp_path / "wh"
    # nothing to do: exit 0, nothing committed, the named partition reported missing
    none_live = as_json(invoke("drop-partition", "db.t", "-w", wh, "--partition", "dt=c,hr=1", "-f", "json"))
    assert (none_live["snapshot_id"], none_live["partitions"], none_live["missing"], none_live["files_deleted"]) \
        == (None, [], [{"dt": "c", "hr": "1"}], 0)
    partial = invoke("drop-partition", "db.t", "-w", wh, "--partition", "dt=a")
    assert partial.exit_code == 2 and "must name every partition column (dt, hr)" in partial.stderr
    extra = invoke("drop-partition", "db.t", "-w", wh, "--partition", "dt=a,hr=1,id=1")
    assert extra.exit_code == 2
    malformed = invoke("drop-partition", "db.t", "-w", wh, "--partition", "dt")
    assert malformed.exit_code == 2
    assert t.snapshots.list_ids() == [1, 2]
    flat = orders(tmp_path / "wh2", partitioned=False)
    unpartitioned = invoke("drop-partition", "db.t", "-w", tmp_path / "wh2", "--partition", "dt=a")
    assert unpartitioned.exit_code == 2 and "not partitioned" in unpartitioned.stderr
    assert flat.snapshots.list_ids() == [1, 2]


def test_drop_partition_default_partition(tmp_path: Path) -> None:
    t = Table.locate("db.n", warehouse=str(tmp_path / "wh"))
    create(t, "dt STRING, id BIGINT", partition_keys=["dt"], options={"write-only": "true"})
    t.write(pa.table({"dt": [None, "a"], "id": pa.array([1, 2], pa.int64())}))
    out = as_json(invoke("drop-partition", "db.n", "-w", tmp_path / "wh", "--partition",
                         "dt=__DEFAULT_PARTITION__", "-f", "json"))
    assert out["partitions"] == [{"dt": "__DEFAULT_PARTITION__"}] and out["records_deleted"] == 1
    assert rows(t) == [("a", 2)]


# ---- drop ------------------------------------------------------------------------------

def tree(path: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(path)), p.stat().st_size) for p in path.rglob("*") if p.is_file())


def test_drop_table(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = orders(wh)
    other = orders(wh, name="db.keep")
    files = tree(Path(t.path))
    args = ["drop", "db.t", "-w", wh, "-f", "json"]
    dry = as_json(invoke(*args, "--dry-run"))
    assert dry == {"table": "db.t", "path": t.path, "existed": True, "files_deleted": len(files),
                   "bytes_deleted": sum(s for _, s in files), "dry_run": True}
    assert tree(Path(t.path)) == files
    assert as_json(invoke(*args)) == {**dry, "dry_run": False}
    assert not os.path.exists(t.path) and os.listdir(wh / "db.db") == ["keep"]
    assert rows(other) == ALL
    again = invoke("drop", "db.t", "-w", wh)
    assert again.exit_code == 3 and "table db.t does not exist" in again.stderr
    quiet = as_json(invoke("drop", "db.t", "-w", wh, "--if-exists", "-f", "json"))
    assert quiet["existed"] is False and quiet["files_deleted"] == 0


def test_drop_refuses_a_directory_that_is_not_a_table(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    (wh / "db.db" / "notes").mkdir(parents=True)
    (wh / "db.db" / "notes" / "todo.txt").write_text("keep me")
    for flags in ([], ["--if-exists"]):
        res = invoke("drop", "db.notes", "-w", wh, *flags)
        assert res.exit_code == 2 and "is not a Paimon table" in res.stderr
    assert (wh / "db.db" / "notes" / "todo.txt").read_text() == "keep me"
    res = invoke("drop", str(tmp_path / "wh" / "db.db" / "notes"), "-w", wh)
    assert res.exit_code == 2 and (wh / "db.db" / "notes" / "todo.txt").exists()


def test_drop_a_table_named_by_path(tmp_path: Path) -> None:
    t = orders(tmp_path / "wh")
    out = as_json(invoke("drop", t.path, "-f", "json"))
    assert out["existed"] and not os.path.exists(t.path)


# ---- drop-database ---------------------------------------------------------------------

def test_drop_database(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    orders(wh, name="db.t")
    orders(wh, name="db.u")
    kept = orders(wh, name="other.t")
    refused = invoke("drop-database", "db", "-w", wh)
    assert refused.exit_code == 1 and "still holds 2 table(s): t, u" in refused.stderr
    assert sorted(os.listdir(wh / "db.db")) == ["t", "u"]
    files = tree(wh / "db.db")
    args = ["drop-database", "db", "--cascade", "-w", wh, "-f", "json"]
    dry = as_json(invoke(*args, "--dry-run"))
    assert dry == {"database": "db", "path": str(wh / "db.db"), "existed": True, "tables": ["t", "u"],
                   "files_deleted": len(files), "bytes_deleted": sum(s for _, s in files), "dry_run": True}
    assert tree(wh / "db.db") == files
    assert as_json(invoke(*args)) == {**dry, "dry_run": False}
    assert sorted(os.listdir(wh)) == ["other.db"] and rows(kept) == ALL
    missing = invoke("drop-database", "db", "-w", wh)
    assert missing.exit_code == 3 and "database db does not exist" in missing.stderr
    assert as_json(invoke("drop-database", "db", "--if-exists", "-w", wh, "-f", "json"))["existed"] is False


def test_drop_empty_database_without_cascade(tmp_path: Path) -> None:
    (tmp_path / "wh" / "empty.db").mkdir(parents=True)
    out = as_json(invoke("drop-database", "empty", "-w", tmp_path / "wh", "-f", "json"))
    assert out["tables"] == [] and not (tmp_path / "wh" / "empty.db").exists()


# ---- rename ----------------------------------------------------------------------------

def test_rename_table(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = orders(wh)
    files = tree(Path(t.path))
    dry = as_json(invoke("rename", "db.t", "db.t2", "-w", wh, "-f", "json", "--dry-run"))
    assert dry["dry_run"] is True and tree(Path(t.path)) == files and not (wh / "db.db" / "t2").exists()
    out = as_json(invoke("rename", "db.t", "db.t2", "-w", wh, "-f", "json"))
    # one atomic rename on a local disk: nothing is copied
    assert out == {"table": "db.t", "new_name": "db.t2", "path": t.path, "new_path": str(wh / "db.db" / "t2"),
                   "method": "rename", "files_copied": 0, "bytes_copied": 0, "files_deleted": 0, "rounds": 0,
                   "resumed": False, "dry_run": False}
    assert not os.path.exists(t.path) and tree(wh / "db.db" / "t2") == files
    renamed = Table.open("db.t2", warehouse=str(wh))
    assert rows(renamed) == ALL and check(renamed).ok
    listed = as_json(invoke("list", "db", "-w", wh, "-f", "json"))
    assert listed == [{"database": "db", "table": "t2"}]
    # and the table keeps working at its new name
    assert as_json(invoke("truncate", "db.t2", "-w", wh, "-f", "json"))["snapshot_id"] == 3


def test_rename_refusals(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    orders(wh, name="db.a")
    orders(wh, name="db.b")
    before = tree(wh)
    taken = invoke("rename", "db.a", "db.b", "-w", wh)
    assert taken.exit_code == 1 and "db.b already exists" in taken.stderr
    missing = invoke("rename", "db.nope", "db.c", "-w", wh)
    assert missing.exit_code == 3 and "table db.nope does not exist" in missing.stderr
    no_db = invoke("rename", "db.a", "elsewhere.a", "-w", wh)
    assert no_db.exit_code == 3 and "database elsewhere does not exist" in no_db.stderr
    by_path = invoke("rename", str(wh / "db.db" / "a"), "db.c", "-w", wh)
    assert by_path.exit_code == 2
    assert tree(wh) == before


def test_rename_across_databases(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    orders(wh, name="db.a")
    (wh / "archive.db").mkdir()
    as_json(invoke("rename", "db.a", "archive.a", "-w", wh, "-f", "json"))
    assert rows(Table.open("archive.a", warehouse=str(wh))) == ALL
