"""lakectl check: each kind of damage is reported naming its file, nothing is changed, and a
sound table passes. The damage is made by hand, the expectation is the file that was damaged."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from core.ops.check import check
from core.ops.create import create
from core.table import Table
from lakectl.app import app


@pytest.fixture
def table(tmp_path):
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "2", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write(pa.table({"id": [2], "v": ["z"]}))
    t.tags.create("first", t.snapshots.snapshot(1))
    return t


def _tree(path: str) -> dict[str, bytes]:
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            out[p] = Path(p).read_bytes()
    return out


def _one(path_pattern: str, table: Table) -> Path:
    matches = sorted(Path(table.path).rglob(path_pattern))
    assert matches, path_pattern
    return matches[0]


def test_a_sound_table_passes_and_counts_what_it_checked(table):
    result = check(table)
    assert result.ok and result.problems == []
    assert (result.schemas, result.snapshots, result.tags) == (1, 2, 1)
    live = {f.file_name for f in table.files()}
    on_disk = {p.name for p in Path(table.path).rglob("*.parquet")}
    # Every data file ever live plus the changelog files: here, all parquet files on disk.
    assert result.files_checked == len(on_disk) and live <= on_disk


@pytest.mark.parametrize("damage, kind", [
    ("missing-data", "data-file"),
    ("grown-data", "data-file"),
    ("missing-changelog", "changelog-file"),
    ("bad-manifest", "manifest"),
    ("bad-manifest-list", "manifest-list"),
    ("truncated-snapshot", "snapshot"),
    ("latest-past-end", "hint"),
    ("bad-tag", "tag"),
    ("missing-schema", "snapshot"),
])
def test_each_damage_is_reported_with_its_file_and_nothing_changes(table, damage, kind):
    if damage == "missing-data":
        target = _one("data-*.parquet", table)
        target.unlink()
    elif damage == "grown-data":
        target = _one("data-*.parquet", table)
        target.write_bytes(target.read_bytes() + b"x")
    elif damage == "missing-changelog":
        target = _one("changelog-*.parquet", table)
        target.unlink()
    elif damage == "bad-manifest":
        target = next(p for p in sorted(Path(table.path, "manifest").iterdir()) if "list" not in p.name)
        target.write_bytes(b"not avro")
    elif damage == "bad-manifest-list":
        snap = table.snapshots.snapshot(2)
        target = Path(table.path, "manifest", snap.delta_manifest_list)
        target.write_bytes(b"not avro")
    elif damage == "truncated-snapshot":
        target = Path(table.snapshots.path(2))
        target.write_bytes(target.read_bytes()[:25])
    elif damage == "latest-past-end":
        target = Path(table.snapshots.dir, "LATEST")
        target.write_text("9")
    elif damage == "bad-tag":
        target = Path(table.tags.path("first"))
        target.write_text("{")
    else:  # the schema every snapshot refers to
        target = Path(table.path, "schema", "schema-0")
        target.rename(Path(table.path, "schema-0.moved"))
    before = _tree(table.path)
    if damage == "missing-schema":
        # The table no longer opens by name; check the path directly through the API.
        result = check(Table.locate(table.path))
    else:
        result = check(table)
    if kind == "hint":  # stale hints are warnings: readers list instead, commits rewrite them
        assert result.ok and not result.problems
        assert [(p.kind, p.path) for p in result.warnings] == [(kind, str(target))]
    else:
        assert not result.ok
        assert any(p.kind == kind and (p.path == str(target) or damage == "missing-schema") for p in result.problems), \
            result.problems
    assert _tree(table.path) == before  # check never writes


def test_cli_exit_codes_and_json_shape(table):
    runner = CliRunner()
    wh = str(Path(table.path).parents[1])
    ok = runner.invoke(app, ["-w", wh, "check", "db.t", "-f", "json"])
    assert ok.exit_code == 0, ok.output
    body = json.loads(ok.stdout)
    assert body["ok"] is True and body["problems"] == [] and body["snapshots"] == 2
    _one("data-*.parquet", table).unlink()
    bad = runner.invoke(app, ["-w", wh, "check", "db.t", "-f", "json"])
    assert bad.exit_code == 1
    problems = json.loads(bad.stdout)["problems"]
    assert problems and problems[0]["kind"] == "data-file" and "missing" in problems[0]["detail"]
    missing = runner.invoke(app, ["-w", wh, "check", "db.nope"])
    assert missing.exit_code == 3


def test_check_never_starts_spark(table):
    wh = str(Path(table.path).parents[1])
    probe = ("import sys, json\nfrom typer.testing import CliRunner\nfrom lakectl.app import app\n"
             f"r = CliRunner().invoke(app, ['-w', {wh!r}, 'check', 'db.t', '-f', 'json'])\n"
             "print(json.dumps([r.exit_code, sorted(m for m in sys.modules if m.startswith(('pyspark', 'py4j')))]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, []]
