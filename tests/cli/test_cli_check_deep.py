"""lakectl check --deep, and check's schema consistency, as a user runs them: the exit codes,
the plain and JSON findings naming the file, and what --repair says it leaves."""

from __future__ import annotations

import json
from pathlib import Path

from cli_kit import invoke, ok, write_csv


def _setup(tmp_path: Path, *create_flags: str) -> tuple[str, Path]:
    wh = str(tmp_path / "wh")
    ok("create", "db.t", "-w", wh, "-s", "id BIGINT, v STRING", *create_flags)
    write_csv(tmp_path, wh, {i: f"value {i}" for i in range(100)})
    return wh, Path(wh, "db.db", "t")


def _damage(path: Path, start: int, length: int) -> None:
    data = bytearray(path.read_bytes())
    data[start:start + length] = bytes(b ^ 0xFF for b in data[start:start + length])
    path.write_bytes(bytes(data))


def test_a_data_file_damaged_at_its_size_is_found_by_deep_only(tmp_path):
    wh, table = _setup(tmp_path)
    (data_file,) = sorted(table.rglob("data-*.parquet"))
    _damage(data_file, 4, 64)  # the first column chunk, right after the "PAR1" magic
    assert invoke("scan", "db.t", "-w", wh).exit_code == 1  # every scan fails on it

    plain = invoke("check", "db.t", "-w", wh, "-f", "json")
    assert plain.exit_code == 0 and json.loads(plain.stdout)["ok"] is True

    deep = invoke("check", "db.t", "-w", wh, "--deep", "-f", "json")
    assert deep.exit_code == 1
    body = json.loads(deep.stdout)
    assert body["deep"] is True and body["ok"] is False and body["files_read"] == 1
    assert [(p["kind"], p["path"], p["branch"]) for p in body["problems"]] == [("data-file", str(data_file), "main")]
    assert "cannot be decoded as parquet" in body["problems"][0]["detail"]
    assert "check --repair does not mend a file whose contents are damaged" in deep.stderr
    assert "error: 1 problem(s) in db.t" in deep.stderr

    table_view = invoke("check", "db.t", "-w", wh, "--deep")
    assert table_view.exit_code == 1
    assert f"bucket-0/{data_file.name}" in table_view.stdout.replace("\n", "")


def test_deep_is_refused_with_repair(tmp_path):
    wh, _ = _setup(tmp_path)
    result = invoke("check", "db.t", "-w", wh, "--deep", "--repair")
    assert result.exit_code == 2
    assert "--deep goes without --repair" in result.stderr


def test_a_sound_table_passes_deep_and_the_summary_says_what_was_read(tmp_path):
    wh, _ = _setup(tmp_path, "--primary-key", "id", "-o", "bucket=2", "-o", "deletion-vectors.enabled=true")
    write_csv(tmp_path, wh, {1: "x", 2: "y"})
    assert ok("compact", "db.t", "-w", wh)
    body = ok("check", "db.t", "-w", wh, "--deep")
    assert body["ok"] is True and body["deep"] is True and body["files_read"] >= 3
    plain = ok("check", "db.t", "-w", wh)
    assert plain["ok"] is True and plain["deep"] is False and plain["files_read"] == 0


def test_a_primary_key_naming_a_missing_column_is_reported_and_repair_leaves_it(tmp_path):
    """Issue 43: the hand-edited key made every write fail with an internal KeyError while
    check said ok."""
    wh, table = _setup(tmp_path, "--primary-key", "id", "-o", "bucket=1")
    schema_file = table / "schema" / "schema-0"
    obj = json.loads(schema_file.read_text())
    obj["primaryKeys"] = ["key"]
    schema_file.write_text(json.dumps(obj))
    (tmp_path / "more.csv").write_text("id,v\n7,z\n")
    assert invoke("write", "db.t", "-w", wh, "-i", tmp_path / "more.csv").exit_code != 0

    result = invoke("check", "db.t", "-w", wh, "-f", "json")
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["problems"]
    assert [(p["kind"], p["path"]) for p in problems] == [("schema", str(schema_file))]
    assert "names primary key column key, which is not among its fields (id, v)" in problems[0]["detail"]
    assert "check --repair does not change schema files" in result.stderr

    repaired = invoke("check", "db.t", "-w", wh, "--repair", "-f", "json")
    assert repaired.exit_code == 1
    body = json.loads(repaired.stdout)
    assert body["snapshots_removed"] == [] and [p["kind"] for p in body["problems_left"]] == ["schema"]
    assert sorted(p.name for p in (table / "snapshot").iterdir() if p.name.startswith("snapshot-")) == ["snapshot-1"]
