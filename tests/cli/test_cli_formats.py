"""Every command in every format: ``--format table|json|jsonl|csv`` with the same field names,
the JSON shapes the README documents, tables for people (human units, 80 columns on a
terminal, plain text on a pipe, no colour with NO_COLOR), ``--quiet``, and progress bars on a
terminal only."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner, Result

from lakectl.app import app
from lakectl.output import Output, human_duration, human_size, human_time

README = Path(__file__).resolve().parents[2] / "README.md"
FORMATS = ("table", "json", "jsonl", "csv")
TERMINAL = {"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "0", "NO_COLOR": "1", "COLUMNS": "80"}
runner = CliRunner()
_unique = itertools.count()


# ---- a warehouse with one table that every command can work on ---------------------------------
@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("formats")
    (root / "orders.csv").write_text("id,customer,amount,dt\n1,alice,10.50,2024-01-01\n2,bob,20.25,2024-01-02\n")
    (root / "more.csv").write_text("id,customer,amount,dt\n3,carol,5.00,2024-01-02\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    (root / "events").mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), root / "events" / "part-0.parquet")
    for args in (["create", "shop.orders", "--schema", "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING",
                  "--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=2"],
                 ["write", "shop.orders", "-i", root / "orders.csv"], ["write", "shop.orders", "-i", root / "orders.csv"],
                 # an append table whose branch has rows main lacks (branch merge)
                 ["create", "shop.log", "--schema", "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING",
                  "--option", "branch-merge.enabled=true"], ["write", "shop.log", "-i", root / "orders.csv"],
                 ["branch", "create", "shop.log", "feature"],
                 ["write", "shop.log", "-i", root / "more.csv", "--branch", "feature"],
                 # a table keeping Iceberg metadata (iceberg-sync)
                 ["create", "shop.ice", "--schema", "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING",
                  "--option", "metadata.iceberg.storage=table-location"], ["write", "shop.ice", "-i", root / "orders.csv"]):
        assert runner.invoke(app, ["-q", "-w", str(root / "wh"), *map(str, args)]).exit_code == 0
    return root


@pytest.fixture(autouse=True)
def isolated(wh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LAKECTL_WAREHOUSE", "LAKECTL_FORMAT", "LAKECTL_CONFIG", "LAKECTL_PROFILE", "NO_COLOR",
                "TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR", "COLUMNS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(wh / "home"))
    monkeypatch.chdir(wh)


def command(name: str) -> list[str]:
    """Arguments that run ``name`` (a README row) on the fixture's table, repeatably."""
    n = next(_unique)
    return {
        "create": ["create", f"db.c{n}", "--schema", "id INT"],
        "migrate": ["migrate", "events", f"db.m{n}"],
        "write": ["write", "shop.orders", "-i", "more.csv"],
        "scan": ["scan", "shop.orders"],
        "scan --output": ["scan", "shop.orders", "--output", f"out{n}.parquet"],
        "scan --follow": ["scan", "shop.orders", "--follow", "--max-snapshots", "1"],
        "lookup": ["lookup", "shop.orders", "--key", "id=1"],
        "consumer list": ["consumer", "list", "shop.orders"],
        "consumer reset": ["consumer", "reset", "shop.orders", f"c{n}", "--next-snapshot", "1"],
        "consumer delete": ["consumer", "delete", "shop.orders", f"c{n}"],
        "compact": ["compact", "shop.orders", "--full"],
        "compact-manifests": ["compact-manifests", "shop.orders", "--dry-run"],
        "iceberg-sync": ["iceberg-sync", "shop.ice"],
        "expire": ["expire", "shop.orders", "--dry-run", "--retain-min", "1", "--older-than", "0s"],
        "expire-changelogs": ["expire-changelogs", "shop.orders", "--dry-run", "--retain-min", "1",
                              "--older-than", "0s"],
        "expire-partitions": ["expire-partitions", "shop.orders", "--expiration-time", "1d", "--dry-run"],
        "rollback": ["rollback", "shop.orders", "--snapshot-id", "1", "--dry-run"],
        "delete": ["delete", "shop.orders", "--where", "id = 1", "--dry-run"],
        "truncate": ["truncate", "shop.orders", "--dry-run"],
        "rescale": ["rescale", "shop.orders", "--buckets", "3", "--dry-run"],
        "drop-partition": ["drop-partition", "shop.orders", "--partition", "dt=2024-01-01", "--dry-run"],
        "drop": ["drop", f"scratch.d{n}"],
        "drop-database": ["drop-database", f"dropped{n}", "--cascade"],
        "rename": ["rename", f"scratch.r{n}", f"scratch.renamed{n}"],
        "clone": ["clone", "shop.orders", f"copies.orders{n}"],
        "tag create": ["tag", "create", "shop.orders", f"t{n}", "--snapshot-id", "1"],
        "tag delete": ["tag", "delete", "shop.orders", f"t{n}"],
        "tag list": ["tag", "list", "shop.orders"],
        "tag rename": ["tag", "rename", "shop.orders", f"t{n}", f"renamed{n}"],
        "expire-tags": ["expire-tags", "shop.orders", "--older-than", "0s", "--dry-run"],
        "partitions": ["partitions", "shop.orders"],
        "buckets": ["buckets", "shop.orders"],
        "manifests": ["manifests", "shop.orders"],
        "branch create": ["branch", "create", "shop.orders", f"b{n}"],
        "branch delete": ["branch", "delete", "shop.orders", f"b{n}"],
        "branch list": ["branch", "list", "shop.orders"],
        "branch fast-forward": ["branch", "fast-forward", "shop.orders", f"b{n}", "--dry-run"],
        "branch rename": ["branch", "rename", "shop.orders", f"b{n}", f"renamed-b{n}"],
        "branch merge": ["branch", "merge", "shop.log", "feature", "--dry-run"],
        "remove-unexisting-files": ["remove-unexisting-files", "shop.orders", "--dry-run"],
        "mark-partition-done": ["mark-partition-done", "shop.orders", "--partition", "dt=2024-01-01", "--dry-run"],
        "remove-orphan-files": ["remove-orphan-files", "shop.orders", "--dry-run", "--older-than", "0s", "--force"],
        "files": ["files", "shop.orders"],
        "snapshots": ["snapshots", "shop.orders"],
        "describe": ["describe", "shop.orders"],
        "alter-schema": ["alter-schema", "shop.orders", "--add-column", "note STRING", "--dry-run"],
        "schemas": ["schemas", "shop.orders"],
        "check": ["check", "shop.orders"],
        "check --repair": ["check", "shop.orders", "--repair", "--dry-run"],
        "list": ["list", "shop"],
        "config show": ["config", "show"],
        "config show --policy": ["config", "show", "--policy"],
        "maintain": ["maintain", "shop.orders", "--dry-run"],
        "health": ["health", "shop.orders"],
    }[name]


def run(name: str, *options: str, env: dict[str, str] | None = None) -> Result:
    args = command(name)
    if name in ("tag delete", "tag rename"):  # something to delete or rename
        assert runner.invoke(app, ["-q", "-w", "wh", "tag", "create", *args[2:4]]).exit_code == 0
    if name == "tag list":  # something to list, whichever tests ran before (made by an earlier run, maybe)
        runner.invoke(app, ["-q", "-w", "wh", "tag", "create", "shop.orders", "listed"])
    if name == "expire-tags":  # a tag to expire (--older-than 0s --dry-run: it stays)
        made = runner.invoke(app, ["-q", "-w", "wh", "tag", "create", "shop.orders", "expirable"])
        assert made.exit_code == 0 or "already exists" in made.stderr  # made by an earlier format's run
    if name in ("branch delete", "branch list", "branch fast-forward", "branch rename"):  # something to delete, list or move to
        prepare = ["branch", "create", "shop.orders", args[3] if name != "branch list" else "listed"]
        runner.invoke(app, ["-q", "-w", "wh", *prepare])  # "listed" may exist from an earlier run
    if name in ("drop", "drop-database", "rename"):  # a table of its own to drop or rename
        made = args[1] if name != "drop-database" else f"{args[1]}.t"
        assert runner.invoke(app, ["-q", "-w", "wh", "create", made, "--schema", "id INT"]).exit_code == 0
    if name in ("consumer delete", "consumer list"):  # something to delete or list
        prepare = ["consumer", "reset", "shop.orders", args[3] if name == "consumer delete" else "listed",
                   "--next-snapshot", "1"]
        assert runner.invoke(app, ["-q", "-w", "wh", *prepare]).exit_code == 0
    result = runner.invoke(app, ["-w", "wh", *options, *args], env=env)
    assert result.exit_code == 0, (name, options, result.stdout, result.stderr)
    return result


def readme_json_table() -> dict[str, tuple[str, list[str], dict[str, list[str]]]]:
    """README's JSON output table: command -> (object|array, fields, nested fields)."""
    text = README.read_text()
    section = text[text.index("### JSON output"):]
    section = section[:section.index("\n### ", 5)]
    out = {}
    for row in re.findall(r"^\| `([a-z -]+)` \| (object|array) \| (.*) \|$", section, re.M):
        name, shape, fields_text = row
        nested = {m.group(1): re.findall(r"`([\w]+)`", m.group(2))
                  for m in re.finditer(r"`(\w+)` \[([^\]]*)\]", fields_text)}
        top = re.findall(r"`(\w+)`", re.sub(r"\[[^\]]*\]", "", fields_text))
        out[name] = (shape, top, nested)
    return out


def json_keys(value: Any) -> list[str]:
    obj = value[0] if isinstance(value, list) else value
    return list(obj)


# ---- the README documents every command's JSON --------------------------------------------------
def test_readme_documents_every_command() -> None:
    documented = set(readme_json_table())

    def leaves(cmd: Any, path: tuple[str, ...]) -> list[str]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return [" ".join(path)]
        return [leaf for name, sub in subs.items() for leaf in leaves(sub, (*path, name))]

    commands = set(leaves(typer.main.get_command(app), ()))
    assert commands | {"scan --output", "scan --follow", "check --repair", "config show --policy",
                       *STREAMED} == documented


# write --stream prints JSON lines as it commits, whatever the format: tests/cli/test_json_every_command.py
# checks them against the README and tests/cli/test_cli_stream_write.py their formats.
STREAMED = {"write --stream", "write --stream summary"}


@pytest.mark.parametrize("name", sorted(set(readme_json_table()) - STREAMED))
def test_json_shape_matches_the_readme(name: str) -> None:
    shape, fields, nested = readme_json_table()[name]
    data = json.loads(run(name, "--format", "json").stdout)
    assert isinstance(data, list if shape == "array" else dict), name
    if name in ("scan", "lookup"):
        assert json_keys(data) == ["id", "customer", "amount", "dt"]
        return
    assert data, name
    assert json_keys(data) == fields, f"README's fields of {name} differ from its JSON"
    obj = data[0] if isinstance(data, list) else data
    for key, inner in nested.items():
        if obj[key]:
            assert list(obj[key][0]) == inner, (name, key)


def test_nested_lists_of_the_readme_when_not_empty(wh: Path) -> None:
    snapshot_dir = wh / "wh" / "shop.db" / "orders" / "snapshot"
    (snapshot_dir / "EARLIEST").write_text("7")  # a wrong hint: a warning only
    data = sorted((wh / "wh" / "shop.db" / "orders").rglob("data-*.parquet"))[0]
    try:
        result = runner.invoke(app, ["-w", "wh", "-f", "json", "check", "shop.orders"])
        assert result.exit_code == 0 and result.stderr.startswith("warning: hint ")
        body = json.loads(result.stdout)
        assert body["ok"] is True and body["problems"] == []
        assert list(body["warnings"][0]) == readme_json_table()["check"][2]["warnings"]
        data.rename(data.with_suffix(".moved"))  # a missing data file: a problem
        result = runner.invoke(app, ["-w", "wh", "-f", "json", "check", "shop.orders"])
        assert result.exit_code == 1 and "error: " in result.stderr
        assert list(json.loads(result.stdout)["problems"][0]) == readme_json_table()["check"][2]["problems"]
    finally:
        (snapshot_dir / "EARLIEST").unlink()
        if data.with_suffix(".moved").exists():
            data.with_suffix(".moved").rename(data)


# ---- the same fields in every format ------------------------------------------------------------
# Listings of one table's items: the table format names the table in its title, not in a column.
TITLED_LISTINGS = {"snapshots", "schemas", "files", "partitions", "buckets", "manifests", "consumer list"}


@pytest.mark.parametrize("name", sorted(set(readme_json_table()) - {"scan --follow"} - STREAMED))
def test_same_field_names_in_every_format(name: str) -> None:
    """(``scan --follow`` differs by design: json is a document per snapshot, the other
    formats a line per row; tests/cli/test_cli_follow.py checks both.)"""
    keys = json_keys(json.loads(run(name, "--format", "json").stdout))
    lines = run(name, "--format", "jsonl").stdout.splitlines()
    assert lines and all(list(json.loads(line)) == keys for line in lines)
    header = next(csv.reader(io.StringIO(run(name, "--format", "csv").stdout)))
    assert header == keys
    table = run(name, "--format", "table").stdout
    hidden = {k for k in keys if k.endswith("_millis")} | ({"commit_user"} if name == "snapshots" else set())
    hidden |= {"problems", "warnings"} if name == "check" else set()  # a sound table: nothing to list
    # a listing within a result is a second table under the first; a plain table (on a pipe)
    # has no title lines, so its name is not shown
    hidden |= {"columns"} if name in ("alter-schema", "describe") else set()
    # maintain's table for people leaves out the lease times; health lists its recommendations
    # as a second table (its title is not shown on a pipe) and draws the histogram on a terminal
    hidden |= {"lease_taken_time", "lease_released_time"} if name == "maintain" else set()
    # a listing of one table's items names the table and branch in its title (not shown on a pipe)
    hidden |= {"table", "branch"} if name in TITLED_LISTINGS else set()
    hidden |= {"recommendations", "file_size_histogram"} if name == "health" else set()
    for key in set(keys) - hidden:
        assert re.search(rf"(?<![\w]){re.escape(key)}(?![\w])", table), (name, key, table)


def test_table_format_uses_human_units_and_json_exact_numbers() -> None:
    rows = json.loads(run("snapshots", "-f", "json").stdout)
    assert isinstance(rows[0]["commit_time_millis"], int) and "T" in rows[0]["commit_time"]
    table = run("snapshots").stdout
    assert re.search(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b", table) and not re.search(r"\dT\d", table)
    written = json.loads(run("write", "-f", "json").stdout)
    assert isinstance(written["bytes_added"], int) and written["bytes_added"] > 1024
    assert re.search(r"bytes_added\s+\d+\.\d KiB", run("write").stdout)
    assert re.search(r"total_file_size\s+\d+\.\d KiB", run("describe").stdout)


def test_human_units() -> None:
    assert [human_size(n) for n in (0, 1023, 1024, 1536, 5 << 20, 3 << 30)] == \
        ["0 B", "1023 B", "1.0 KiB", "1.5 KiB", "5.0 MiB", "3.0 GiB"]
    assert [human_duration(s) for s in (0, 59, 3600, 7 * 86400, 90061)] == ["0s", "59s", "1h", "7d", "1d 1h 1m 1s"]
    assert human_time("2026-11-22T02:28:47.123+01:00") == "2026-11-22 02:28:47"
    assert human_time("not a time") == "not a time"


# ---- terminals, pipes, colours -------------------------------------------------------------------
BOX = set("┏┃┡│└┌─━")


@pytest.mark.parametrize("name", ["scan", "snapshots", "files", "describe", "write", "expire", "tag list",
                                  "alter-schema", "schemas", "config show", "list"])
def test_terminal_tables_fit_80_columns_without_colour_under_no_color(name: str) -> None:
    out = run(name, env=TERMINAL).stdout
    assert BOX & set(out), out
    assert "\x1b" not in out
    assert max(len(line) for line in out.splitlines()) <= 80, out


def test_times_and_counts_are_never_broken_mid_value() -> None:
    out = run("snapshots", env=TERMINAL).stdout
    times = re.findall(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", out)
    assert len(times) == len(json.loads(run("snapshots", "-f", "json").stdout))


def test_a_listing_too_wide_shows_one_block_per_row_and_a_wide_terminal_a_table() -> None:
    narrow = run("files", env=TERMINAL).stdout
    assert "file_name" in narrow and "min_sequence_number" in narrow  # field per line, whole
    wide = run("files", env={**TERMINAL, "COLUMNS": "200"}).stdout
    header = next(line for line in wide.splitlines() if "partition" in line)
    assert "bucket" in header and "file_name" in header  # one header row with the field names
    assert max(len(line) for line in wide.splitlines()) <= 200


def test_colour_on_a_terminal_unless_no_color() -> None:
    coloured = run("describe", env={**TERMINAL, "NO_COLOR": ""}).stdout
    assert "\x1b[" in coloured
    assert "\x1b[" not in run("describe", env=TERMINAL).stdout


@pytest.mark.parametrize("name", ["scan", "snapshots", "files", "describe", "write"])
def test_plain_text_on_a_pipe(name: str) -> None:
    out = run(name).stdout
    assert not BOX & set(out) and "\x1b" not in out


def test_plain_listing_on_a_pipe_is_aligned_columns_with_field_names() -> None:
    lines = run("snapshots").stdout.splitlines()
    # no title line: the header comes first, so ``tail -n +2`` leaves exactly the rows
    assert lines[0].split() == ["snapshot_id", "schema_id", "commit_kind", "commit_time", "delta_record_count",
                                "total_record_count"]
    assert len(lines) == 1 + len(json.loads(run("snapshots", "-f", "json").stdout))
    starts = [lines[0].index(h) for h in lines[0].split()]
    for line in lines[1:]:
        assert all(line[s - 1] == " " for s in starts[1:])


def test_output_wraps_to_the_given_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    rows = [{"path": "/very/long/" * 12 + "name.parquet", "bytes": 123456789, "commit_time": "2026-01-02T03:04:05"}]
    Output("table", stdout=out, terminal=True, width=60).rows(rows)
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "117.7 MiB" in text and "2026-01-02 03:04:05" in text


# ---- quiet -----------------------------------------------------------------------------------------
# Commands that exist to print data: --quiet keeps it (and silences everything else).
DATA_COMMANDS = {"scan", "scan --follow", "lookup", "snapshots", "files", "list", "tag list", "branch list",
                 "consumer list", "partitions", "buckets", "manifests", "schemas", "describe", "config show",
                 "config show --policy", "health"}


@pytest.mark.parametrize("name", sorted(set(readme_json_table()) - DATA_COMMANDS - STREAMED))
def test_quiet_prints_nothing(name: str) -> None:
    for env in (None, {**TERMINAL, "TTY_INTERACTIVE": "1"}):
        result = run(name, "--quiet", env=env)
        assert result.stdout == "" and result.stderr == "", (name, result.stdout, result.stderr)


@pytest.mark.parametrize("name", sorted(DATA_COMMANDS))
def test_quiet_keeps_the_data_a_command_exists_to_print(name: str) -> None:
    for fmt in FORMATS:
        loud = run(name, "--format", fmt)
        quiet = run(name, "--quiet", "--format", fmt)
        assert quiet.stdout and quiet.stderr == "", (name, fmt, quiet.stderr)
        if name not in ("consumer list", "config show", "health"):  # (a consumer's modified time, an age change)
            assert quiet.stdout == loud.stdout, (name, fmt)


def test_quiet_still_prints_errors() -> None:
    result = runner.invoke(app, ["-q", "-w", "wh", "scan", "shop.missing"])
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1


# ---- progress bars -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["write", "scan", "scan --output", "compact", "expire", "remove-orphan-files",
                                  "clone"])
def test_progress_bar_on_a_terminal_and_none_on_a_pipe(name: str) -> None:
    piped = run(name)
    assert piped.stderr == ""
    terminal = run(name, env={"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1", "COLUMNS": "80"})
    assert "\x1b[?25l" in terminal.stderr and "\x1b[?25h" in terminal.stderr  # cursor hidden, then restored
    assert "━" in terminal.stderr  # the bar
    assert "━" not in terminal.stdout or name == "scan"  # (scan's table has rules of its own)
    assert "\x1b[?25l" not in terminal.stdout
