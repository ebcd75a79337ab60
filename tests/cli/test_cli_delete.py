"""``lakectl delete`` through CliRunner on real tables: the JSON summary, the rows left
(against a model computed here), the files an append-table delete touches, dry runs, the
refusals and their exit codes, and the other output formats."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()
KEYS = {"table", "branch", "snapshot_id", "commit_kind", "records_deleted", "files_rewritten", "files_deleted", "engine",
        "dry_run"}


@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def ok(*args: Any) -> Result:
    result = invoke(*args)
    assert result.exit_code == 0, f"{args}: exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


def as_json(wh: str, *args: Any) -> Any:
    return json.loads(ok("--warehouse", wh, "--format", "json", *args).stdout)


ROWS = [[i, f"v{i}", i % 10, "2024-01-01" if i % 2 else "2024-01-02"] for i in range(30)]


def doomed(r: list[Any]) -> bool:  # the model of the filter below
    return r[2] >= 6 and r[3] == "2024-01-01"


WHERE = "amount >= 6 AND dt = '2024-01-01'"


def table_with(wh: str, tmp_path: Path, name: str, *extra: str) -> str:
    ok("--warehouse", wh, "create", name, "--schema", "id BIGINT, v STRING, amount INT, dt STRING",
       "--partition-by", "dt", *extra)
    for n, part in enumerate((ROWS[:15], ROWS[15:])):
        path = tmp_path / f"{name}-{n}.csv"
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "v", "amount", "dt"])
            w.writerows(part)
        ok("--warehouse", wh, "write", name, "--input", path)
    return name


def rows(wh: str, name: str) -> list[tuple]:
    return sorted((r["id"], r["v"], r["amount"], r["dt"]) for r in as_json(wh, "scan", name))


def model() -> list[tuple]:
    return sorted(tuple(r) for r in ROWS if not doomed(r))


def test_primary_key_table(wh: str, tmp_path: Path) -> None:
    name = table_with(wh, tmp_path, "db.pk", "--primary-key", "id,dt", "--option", "bucket=2")
    result = as_json(wh, "delete", name, "--where", WHERE)
    assert set(result) == KEYS
    assert result == {"table": name, "branch": "main", "snapshot_id": 3, "commit_kind": "APPEND",
                      "records_deleted": sum(map(doomed, ROWS)), "files_rewritten": 0, "files_deleted": 0,
                      "engine": "local", "dry_run": False}
    assert rows(wh, name) == model()
    assert as_json(wh, "snapshots", name)[0]["commit_kind"] == "APPEND"


def test_append_table_files(wh: str, tmp_path: Path) -> None:
    name = table_with(wh, tmp_path, "db.app")
    before = {(f["partition"]["dt"], f["file_name"]) for f in as_json(wh, "files", name)}
    result = as_json(wh, "delete", name, "--where", WHERE)
    assert result["commit_kind"] == "OVERWRITE" and result["snapshot_id"] == 3
    assert result["records_deleted"] == sum(map(doomed, ROWS))
    # Both writes put rows of 2024-01-01 that match into one file each: two rewrites.
    assert (result["files_rewritten"], result["files_deleted"]) == (2, 2)
    after = {(f["partition"]["dt"], f["file_name"]) for f in as_json(wh, "files", name)}
    untouched = {x for x in before if x[0] == "2024-01-02"}
    assert untouched <= after  # the other partition's files are left alone
    assert not {x for x in before if x[0] == "2024-01-01"} & after
    assert len(after - before) == 2
    assert rows(wh, name) == model()


def test_dry_run_and_nothing_matching(wh: str, tmp_path: Path) -> None:
    name = table_with(wh, tmp_path, "db.app")
    files = sorted(Path(wh).rglob("*"))
    dry = as_json(wh, "delete", name, "--where", WHERE, "--dry-run")
    assert dry["dry_run"] is True and dry["snapshot_id"] is None and dry["commit_kind"] is None
    assert dry["records_deleted"] == sum(map(doomed, ROWS)) and dry["files_rewritten"] == 2
    none = as_json(wh, "delete", name, "--where", "amount > 100")
    assert none["records_deleted"] == 0 and none["snapshot_id"] is None
    assert sorted(Path(wh).rglob("*")) == files
    assert len(as_json(wh, "snapshots", name)) == 2


def test_first_row_refuses_with_exit_1(wh: str, tmp_path: Path) -> None:
    name = table_with(wh, tmp_path, "db.fr", "--primary-key", "id,dt", "--option", "bucket=1",
                      "--option", "merge-engine=first-row")
    result = invoke("--warehouse", wh, "delete", name, "--where", WHERE)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot delete from db.fr") and "ignore-delete" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert rows(wh, name) == sorted(tuple(r) for r in ROWS)


@pytest.mark.parametrize("args, code", [
    (["delete", "db.app", "--where", "nope > 1"], 2),
    (["delete", "db.app"], 2),  # --where is required
    (["delete", "db.missing", "--where", "id > 1"], 3),
])
def test_exit_codes(wh: str, tmp_path: Path, args: list[str], code: int) -> None:
    table_with(wh, tmp_path, "db.app")
    result = invoke("--warehouse", wh, *args)
    assert result.exit_code == code, result.stderr
    assert len(as_json(wh, "snapshots", "db.app")) == 2


def test_spark_on_a_dynamic_bucket_table_is_exit_2(wh: str, tmp_path: Path) -> None:
    """A primary-key table without a bucket option is in dynamic bucket mode; its deletes run
    locally, as its writes do."""
    name = table_with(wh, tmp_path, "db.dyn", "--primary-key", "id,dt")
    result = invoke("--warehouse", wh, "--engine", "spark", "delete", name, "--where", WHERE)
    assert result.exit_code == 2 and "dynamic-bucket table" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert len(as_json(wh, "snapshots", name)) == 2
    assert rows(wh, name) == sorted(tuple(r) for r in ROWS)


@pytest.mark.parametrize("fmt", ["table", "jsonl", "csv"])
def test_other_formats(wh: str, tmp_path: Path, fmt: str) -> None:
    name = table_with(wh, tmp_path, "db.app")
    out = ok("--warehouse", wh, "--format", fmt, "delete", name, "--where", WHERE, "--dry-run").stdout
    assert "records_deleted" in out and str(sum(map(doomed, ROWS))) in out


def test_an_empty_where_points_to_truncate_and_following_it_works(wh: str, tmp_path: Path) -> None:
    name = table_with(wh, tmp_path, "db.e")
    refused = runner.invoke(app, ["--warehouse", wh, "delete", name, "--where", " "])
    assert refused.exit_code == 2 and "use lakectl truncate" in refused.stderr, refused.stderr
    done = as_json(wh, "truncate", name)
    assert (done["branch"], done["records_deleted"]) == ("main", len(ROWS))
    assert as_json(wh, "scan", name) == []
