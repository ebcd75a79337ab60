"""lakectl alter-schema and lakectl schemas through CliRunner on real tables: every flag,
--dry-run output, JSON shapes, exit codes with one-line errors, and the scans that follow."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner, Result

import core.ops.write as write_op
from core.evolution import AddColumn
from core.ops.alter import alter
from core.ops.create import create
from core.table import Table
from core.types import parse_type
from lakectl.app import app

runner = CliRunner()


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """db.t, partitioned by dt with primary key (id, dt); one snapshot of rows 1 and 2."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, qty INT, label VARCHAR(5), dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "qty": pa.array([10, None], pa.int32()),
                      "label": ["a", "b"], "dt": ["x", "y"]}))
    return t


def cli(tmp_path: Path, *args: str) -> Result:
    return runner.invoke(app, ["-w", str(tmp_path / "wh"), *args])


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout)


def error(result: Result, code: int, fragment: str) -> None:
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.stderr
    assert result.stdout == ""


def scan(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    return sorted(ok_json(cli(tmp_path, "-f", "json", "scan", "db.t", *args)), key=lambda r: r["id"])


def test_every_kind_of_change_in_one_call(tmp_path: Path, table: Table):
    out = ok_json(cli(tmp_path, "-f", "json", "alter-schema", "db.t",
                      "--add-column", "note STRING COMMENT 'free text'", "--after", "id",
                      "--rename-column", "qty:quantity", "--alter-type", "quantity:BIGINT",
                      "--drop-column", "label", "--comment", "id:the key", "--set-option", "snapshot.num-retained.min=2"))
    assert set(out) == {"table", "branch", "previous_schema_id", "schema_id", "committed", "dry_run", "changes",
                        "columns"}
    assert (out["previous_schema_id"], out["schema_id"], out["committed"], out["dry_run"]) == (0, 1, True, False)
    assert out["changes"] == ["drop column label", "comment on id: 'the key'", "rename column qty to quantity",
                              "change type of quantity from INT to BIGINT", "add column note STRING after id",
                              "set option snapshot.num-retained.min=2"]
    assert out["columns"] == [
        {"id": 0, "before": "id INT NOT NULL", "after": "id INT NOT NULL"},
        {"id": 4, "before": None, "after": "note STRING"},
        {"id": 1, "before": "qty INT", "after": "quantity BIGINT"},
        {"id": 3, "before": "dt STRING NOT NULL", "after": "dt STRING NOT NULL"},
        {"id": 2, "before": "label VARCHAR(5)", "after": None}]
    assert table.schemas.list_ids() == [0, 1]
    assert table.schema.field("note").description == "free text" and table.schema.field("id").description == "the key"
    # The latest scan shows the old files in the new schema; time travel shows the old schema.
    assert scan(tmp_path) == [{"id": 1, "note": None, "quantity": 10, "dt": "x"},
                              {"id": 2, "note": None, "quantity": None, "dt": "y"}]
    assert scan(tmp_path, "--snapshot-id", "1") == [{"id": 1, "qty": 10, "label": "a", "dt": "x"},
                                                    {"id": 2, "qty": None, "label": "b", "dt": "y"}]


def test_dry_run_shows_the_new_schema_beside_the_old_and_writes_nothing(tmp_path: Path, table: Table):
    result = cli(tmp_path, "alter-schema", "db.t", "--add-column", "n DOUBLE", "--first",
                 "--alter-type", "label:STRING", "--dry-run")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert re.search(r"^dry_run +true$", text, re.M), text  # (a plain table has no title line)
    for fragment in ("add column n DOUBLE first", "change type of label from VARCHAR(5) to STRING",
                     "before", "after", "label VARCHAR(5)", "label STRING", "n DOUBLE"):
        assert fragment in text, text
    assert table.schemas.list_ids() == [0]
    out = ok_json(cli(tmp_path, "-f", "json", "alter-schema", "db.t", "--drop-column", "label", "--dry-run"))
    assert (out["dry_run"], out["committed"], out["schema_id"]) == (True, False, 1)
    assert table.schemas.list_ids() == [0]


def test_repeated_flags_and_positions_in_the_spec(tmp_path: Path, table: Table):
    ok_json(cli(tmp_path, "-f", "json", "alter-schema", "db.t", "--add-column", "a INT FIRST",
                "--add-column", "b INT AFTER qty", "--add-column", "c INT", "--set-nullable", "qty",
                "--reset-option", "nothing-set"))
    assert table.schema.field_names == ["a", "id", "qty", "b", "label", "dt", "c"]
    error(cli(tmp_path, "alter-schema", "db.t", "--add-column", "x INT", "--add-column", "y INT", "--first"),
          2, "exactly one --add-column")
    error(cli(tmp_path, "alter-schema", "db.t", "--add-column", "x INT AFTER a", "--first"), 2, "position")
    assert table.schemas.list_ids() == [0, 1]


def test_not_null_where_provable(tmp_path: Path, table: Table):
    ok_json(cli(tmp_path, "-f", "json", "alter-schema", "db.t", "--set-not-null", "label"))
    assert str(table.schema.field("label").type) == "VARCHAR(5) NOT NULL"
    error(cli(tmp_path, "alter-schema", "db.t", "--set-not-null", "qty"), 5, "holds 1 null")
    error(cli(tmp_path, "alter-schema", "db.t", "--set-nullable", "id"), 2, "primary key")
    assert table.schemas.list_ids() == [0, 1]


@pytest.mark.parametrize("args, code, fragment", [
    (["--drop-column", "id"], 2, "primary key"),
    (["--drop-column", "dt"], 2, "partition key"),
    (["--rename-column", "dt:day"], 2, "partition column"),
    (["--rename-column", "qty"], 2, "OLD:NEW"),
    (["--alter-type", "qty:SMALLINT"], 2, "narrows"),
    (["--alter-type", "qty:DOUBLE NOT NULL"], 2, "--set-not-null"),
    (["--alter-type", "qty:FLOATY"], 2, "FLOATY"),
    (["--alter-type", "id:BIGINT"], 2, "primary key"),
    (["--add-column", "n INT NOT NULL"], 2, "NOT NULL"),
    (["--add-column", "qty INT"], 2, "already exists"),
    (["--add-column", "n INT", "--after", "nope"], 2, "unknown column 'nope'"),
    (["--comment", "nope:x"], 2, "unknown column"),
    (["--set-option", "bucket=4"], 2, "rescale"),
    (["--set-option", "merge-engine=first-row"], 2, "immutable"),
    (["--reset-option", "bucket"], 2, "cannot be reset"),
    (["--set-option", "novalue"], 2, "KEY=VALUE"),
    ([], 2, "at least one change"),
])
def test_refusals_exit_2_with_one_line_and_no_new_schema(tmp_path: Path, table: Table, args, code, fragment):
    error(cli(tmp_path, "alter-schema", "db.t", *args), code, fragment)
    assert table.schemas.list_ids() == [0]


def test_missing_table_exits_3(tmp_path: Path):
    error(cli(tmp_path, "alter-schema", "db.nope", "--drop-column", "x"), 3, "db.nope")
    error(cli(tmp_path, "schemas", "db.nope"), 3, "db.nope")


def test_a_write_that_planned_against_the_old_schema_exits_4(tmp_path: Path, table: Table, monkeypatch):
    real_plan = write_op.plan_job

    def plan_then_alter(t, schema, row_kind_column, **kw):
        job = real_plan(t, schema, row_kind_column, **kw)
        alter(t, [AddColumn("late", parse_type("INT"))])
        return job

    monkeypatch.setattr(write_op, "plan_job", plan_then_alter)
    (tmp_path / "in.csv").write_text("id,qty,label,dt\n3,30,c,x\n")
    error(cli(tmp_path, "write", "db.t", "-i", str(tmp_path / "in.csv")), 4, "schema changed to 1")
    assert table.snapshots.list_ids() == [1]
    assert [r["id"] for r in scan(tmp_path)] == [1, 2]


def test_schemas_lists_the_history_newest_first(tmp_path: Path, table: Table):
    ok_json(cli(tmp_path, "-f", "json", "alter-schema", "db.t", "--add-column", "n INT"))
    ok_json(cli(tmp_path, "-f", "json", "alter-schema", "db.t", "--rename-column", "n:m", "--set-option", "k=v"))
    out = ok_json(cli(tmp_path, "-f", "json", "schemas", "db.t"))
    assert [s["schema_id"] for s in out] == [2, 1, 0]
    assert set(out[0]) == {"table", "branch", "schema_id", "time", "time_millis", "column_count", "changes"}
    assert out[0]["changes"] == ["rename column n to m", "set option k=v"]
    assert out[1]["changes"] == ["add column n INT"] and out[1]["column_count"] == 5
    assert out[2]["changes"][:3] == ["create table: id INT NOT NULL, qty INT, label VARCHAR(5), dt STRING NOT NULL",
                                     "primary key: id, dt", "partitioned by: dt"]
    assert out[0]["time_millis"] >= out[1]["time_millis"] >= out[2]["time_millis"]
    assert [s["schema_id"] for s in ok_json(cli(tmp_path, "-f", "json", "schemas", "db.t", "--limit", "1"))] == [2]
    text = cli(tmp_path, "schemas", "db.t")
    assert text.exit_code == 0 and text.stdout.split()[:2] == ["schema_id", "time"]  # the header, no title
    assert "time millis" not in text.stdout and "time_millis" not in text.stdout
    assert "rename column n to" in text.stdout and "add column n INT" in text.stdout
    lines = cli(tmp_path, "-f", "jsonl", "schemas", "db.t").stdout.splitlines()
    assert [json.loads(line)["schema_id"] for line in lines] == [2, 1, 0]
    error(cli(tmp_path, "schemas", "db.t", "--limit", "-1"), 2, "--limit")


def test_help_lists_the_rules(tmp_path: Path):
    result = cli(tmp_path, "alter-schema", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for fragment in ("--add-column", "--first", "--after", "--drop-column", "--rename-column", "--alter-type",
                     "--set-nullable", "--set-not-null", "--comment", "--set-option", "--reset-option", "--dry-run",
                     "never rewritten"):
        assert fragment in text, fragment
