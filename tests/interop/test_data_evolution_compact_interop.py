"""Compaction of data-evolution tables (Paimon 2.x, ``data-evolution.enabled=true``), as Paimon
2.1's data-evolution compaction does it: the files of consecutive row-id ranges (whole rows and
the column files of updates by row id) merged into one file of whole rows that starts at the
first of those row ids. pypaimon 2.1, which has no compaction of its own, is the reader: it
must see the same rows, each with the ``_ROW_ID`` it had, and can still update them by row id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle import official_read, official_write
from typer.testing import CliRunner, Result

from lakectl.app import app

pytestmark = pytest.mark.interop

runner = CliRunner()
OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
REPO = Path(__file__).resolve().parents[2]
LAKECTL = Path(sys.executable).parent / "lakectl"


def lakectl(wh: Path, *args: Any, input: str | None = None) -> Result:
    return runner.invoke(app, ["--warehouse", str(wh), "--format", "jsonl", *map(str, args)], input=input,
                         catch_exceptions=False)


def ok(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line]


def ids(values: list[int]) -> pa.Array:
    return pa.array(values, pa.int64())


def job(wh: Path, steps: list[dict[str, Any]], *, existing: bool = False, **options: str) -> dict[str, Any]:
    return {"warehouse": str(wh), "table": "db.t", "existing": existing,
            "schema": {"fields": [["id", "INT"], ["a", "STRING"], ["b", "BIGINT"]], "primary_keys": [],
                       "partition_keys": [], "options": {**OPTIONS, **options}, "comment": None},
            "steps": steps}


def updated_table(tmp_path: Path, **options: str) -> tuple[Path, Path, dict[int, dict[str, Any]]]:
    """pypaimon writes rows in three commits (row ids 0-2, 3-4, 5) and rewrites columns of
    some of them by row id; returns the warehouse, the table and the model: row id -> row."""
    wh = tmp_path / "wh"
    steps = [{"op": "write"}, {"op": "write"}, {"op": "write"},
             {"op": "update_by_row_id", "columns": ["a"]},
             {"op": "update_by_row_id", "columns": ["b"]}]
    batches = [pa.table({"id": pa.array([1, 2, 3], pa.int32()), "a": ["x", "y", "z"], "b": ids([10, 20, 30])}),
               pa.table({"id": pa.array([4, 5], pa.int32()), "a": ["p", "q"], "b": ids([40, 50])}),
               pa.table({"id": pa.array([6], pa.int32()), "a": ["r"], "b": ids([60])}),
               pa.table({"_ROW_ID": ids([0, 3, 5]), "a": ["X", "P", "R"]}),
               pa.table({"_ROW_ID": ids([1, 4]), "b": ids([200, 500])})]
    official_write(job(wh, steps, **options), batches, tmp_path)
    model = {0: (1, "X", 10), 1: (2, "y", 200), 2: (3, "z", 30), 3: (4, "P", 40), 4: (5, "q", 500), 5: (6, "R", 60)}
    return wh, wh / "db.db" / "t", {r: {"id": i, "a": a, "b": b} for r, (i, a, b) in model.items()}


def by_row_id(table: pa.Table) -> dict[int, dict[str, Any]]:
    """pypaimon's rows keyed by their _ROW_ID."""
    out = {}
    for row in table.to_pylist():
        out[row.pop("_ROW_ID")] = row
    return out


def official_rows(path: Path, tmp_path: Path, snapshot: int | None = None) -> dict[int, dict[str, Any]]:
    table, _ = official_read(path, tmp_path, snapshot=snapshot, projection=["_ROW_ID", "id", "a", "b"])
    return by_row_id(table)


def lakectl_rows(wh: Path) -> dict[int, dict[str, Any]]:
    return {r.pop("_ROW_ID"): r for r in ok(lakectl(wh, "scan", "db.t", "--select", "_ROW_ID,id,a,b"))}


def live_files(path: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """The latest snapshot's data files as pypaimon plans them (first row id, rows, columns)."""
    script = ("import json, sys\n"
              "from pypaimon import CatalogFactory\n"
              "cat = CatalogFactory.create({'warehouse': sys.argv[1]})\n"
              "t = cat.get_table('db.t')\n"
              "splits = t.new_read_builder().new_scan().plan().splits()\n"
              "print(json.dumps([{'name': f.file_name, 'first_row_id': f.first_row_id, 'rows': f.row_count,\n"
              "                   'write_cols': f.write_cols, 'min_seq': f.min_sequence_number,\n"
              "                   'max_seq': f.max_sequence_number}\n"
              "                  for s in splits for f in s.files]))\n")
    from oracle import oracle_python

    done = subprocess.run([oracle_python(), "-c", script, str(path.parent.parent)], capture_output=True, text=True,
                          check=True)
    return sorted(json.loads(done.stdout.strip().splitlines()[-1]), key=lambda f: f["first_row_id"])


def test_compaction_merges_row_id_ranges_and_pypaimon_reads_the_same_rows_and_row_ids(tmp_path: Path) -> None:
    wh, path, model = updated_table(tmp_path)
    before = live_files(path, tmp_path)
    # Three commits of whole rows; the update of a wrote a file in each of their row-id
    # ranges, the update of b in the first two.
    assert len(before) == 8
    assert official_rows(path, tmp_path) == model
    result = ok(lakectl(wh, "compact", "db.t"))[0]
    assert (result["files_before"], result["files_after"]) == (8, 1)
    after = live_files(path, tmp_path)
    # One file of whole rows over row ids 0-5, with the sequence range of the files it replaced.
    assert [(f["first_row_id"], f["rows"]) for f in after] == [(0, 6)]
    assert after[0]["min_seq"] == min(f["min_seq"] for f in before)
    assert after[0]["max_seq"] == max(f["max_seq"] for f in before)
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model
    # The snapshot is a COMPACT one, and the table's next row id is unchanged: a new write
    # numbers on from 6, and pypaimon updates a compacted row by its id.
    assert ok(lakectl(wh, "snapshots", "db.t", "--limit", "1"))[0]["commit_kind"] == "COMPACT"
    ok(lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl", input='{"id": 7, "a": "s", "b": 70}\n'))
    official_write(job(wh, [{"op": "update_by_row_id", "columns": ["b"]}], existing=True),
                   [pa.table({"_ROW_ID": ids([2]), "b": ids([300])})], tmp_path)
    model[6] = {"id": 7, "a": "s", "b": 70}
    model[2]["b"] = 300
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model


def test_compaction_plans_as_paimon_bins_and_leaves_too_few_files(tmp_path: Path) -> None:
    # compaction.min.file-num=9: the eight files make no bin, so nothing is rewritten
    # (Paimon's coordinator plans no task either); a target size below one group's weight makes
    # each row-id range a bin of its own, rewritten when it holds enough files.
    wh, path, model = updated_table(tmp_path, **{"compaction.min.file-num": "9"})
    result = ok(lakectl(wh, "compact", "db.t"))[0]
    assert result["snapshot_id"] is None and result["files_before"] == 0
    ok(lakectl(wh, "alter-schema", "db.t", "--set-option", "compaction.min.file-num=3",
               "--set-option", "target-file-size=1kb"))
    # Each file weighs at least the open-file cost (4 MB), so each group closes its own bin:
    # rows 0-2 (whole rows, a, b), rows 3-4 (whole rows, a, b), row 5 (whole rows, a).
    before = live_files(path, tmp_path)
    result = ok(lakectl(wh, "compact", "db.t"))[0]
    assert (result["files_before"], result["files_after"]) == (6, 2)
    after = live_files(path, tmp_path)
    assert [(f["first_row_id"], f["rows"]) for f in after] == [(0, 3), (3, 2), (5, 1), (5, 1)]
    assert sorted(f["name"] for f in after if f["first_row_id"] == 5) == sorted(
        f["name"] for f in before if f["first_row_id"] == 5)  # two files: too few, left alone
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model


def test_compaction_across_an_added_column_reads_as_before(tmp_path: Path) -> None:
    # Files of two schemas (a column added between commits, then filled by row id): the
    # compacted file is written in the latest schema, the column null where no file held it.
    from test_data_evolution_interop import evolved_table

    path, expected = evolved_table(tmp_path)
    wh = tmp_path / "wh"
    official, _ = official_read(path, tmp_path, projection=["_ROW_ID", "id", "a", "b", "c"])
    before = by_row_id(official)
    ok(lakectl(wh, "alter-schema", "db.t", "--set-option", "compaction.min.file-num=2"))
    result = ok(lakectl(wh, "compact", "db.t"))[0]
    assert result["files_after"] == 1
    official, _ = official_read(path, tmp_path, projection=["_ROW_ID", "id", "a", "b", "c"])
    assert by_row_id(official) == before
    assert sorted(before.values(), key=lambda r: r["id"]) == expected
    assert [(f["first_row_id"], f["rows"]) for f in live_files(path, tmp_path)] == [(0, 6)]


def test_compaction_moves_pypaimons_deletion_vectors_onto_the_compacted_file(tmp_path: Path) -> None:
    # pypaimon 2.1 deletes with deletion vectors keyed by each range's oldest file. The
    # compacted file keeps the deleted rows (row ids stay), and their vectors move onto it at
    # the rows' new positions, as Paimon's compaction moves them.
    wh, path, model = updated_table(tmp_path, **DV)
    pypaimon_delete(wh, [1, 4])
    del model[1], model[4]
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model  # the vectors applied by row-id range, as pypaimon does
    result = ok(lakectl(wh, "compact", "db.t"))[0]
    assert (result["files_before"], result["files_after"]) == (8, 1)
    assert [(f["first_row_id"], f["rows"]) for f in live_files(path, tmp_path)] == [(0, 6)]
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model
    # Both delete on top of the moved vectors: pypaimon row 2, lakectl row 5 (id 6).
    pypaimon_delete(wh, [2])
    ok(lakectl(wh, "delete", "db.t", "--where", "id = 6"))
    del model[2], model[5]
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model
    check = lakectl(wh, "check", "db.t", "--deep")
    assert check.exit_code == 0, check.output


def test_a_pypaimon_delete_landing_while_the_compaction_is_held_is_kept(tmp_path: Path) -> None:
    # The compaction planned with no vectors; pypaimon's vector on a file it replaces would be
    # dropped with it, so the commit finds its plan stale, plans again and moves the vector.
    wh, path, model = updated_table(tmp_path, **DV)
    proc, stall = _held(wh, tmp_path, "compact", "db.t")
    pypaimon_delete(wh, [3])
    code, out, err = _resume(proc, stall)
    assert code == 0, err
    del model[3]
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model
    assert [(f["first_row_id"], f["rows"]) for f in live_files(path, tmp_path)] == [(0, 6)]


def pypaimon_delete(wh: Path, row_ids: list[int]) -> None:
    """pypaimon 2.1 deletes rows by _ROW_ID (``delete_by_row_id``: deletion vectors)."""
    script = ("import sys\n"
              "from pypaimon import CatalogFactory\n"
              "t = CatalogFactory.create({'warehouse': sys.argv[1]}).get_table('db.t')\n"
              "wb = t.new_batch_write_builder()\n"
              "c = wb.new_commit()\n"
              "c.commit(wb.new_update().delete_by_row_id([int(x) for x in sys.argv[2].split(',')]))\n"
              "c.close()\n")
    from oracle import oracle_python

    subprocess.run([oracle_python(), "-c", script, str(wh), ",".join(map(str, row_ids))], capture_output=True,
                   text=True, check=True)


DV = {"deletion-vectors.enabled": "true"}


def cardinalities(wh: Path) -> list[int]:
    """The ``_CARDINALITY`` of each deletion-vector range of the latest snapshot, sorted, as
    the index manifest holds it (read with fastavro, not lakectl); each must equal the number
    of positions of its vector, and lakectl must read the same values."""
    import fastavro

    from core.deletion_vectors import read_index_file
    from core.index_manifest import live_index_entries
    from core.table import Table

    table = Table.locate("db.t", warehouse=str(wh))
    name = table.latest_snapshot().index_manifest
    with (Path(table.path) / "manifest" / name).open("rb") as f:
        raw = {r["f0"]: r["_CARDINALITY"] for e in fastavro.reader(f) for r in e["_DELETIONS_VECTORS_RANGES"] or ()}
    vectors, parsed = {}, {}
    for e in live_index_entries(table.file_io, table.path, name):
        vectors.update(read_index_file(table.file_io, table.path, e.index_file))
        parsed.update({r.data_file: r.cardinality for r in e.index_file.dv_ranges})
    assert raw == {file: len(v) for file, v in vectors.items()} == parsed
    return sorted(raw.values())


def test_delete_marks_rows_by_row_id_as_pypaimon_does_and_both_read_the_rest(tmp_path: Path) -> None:
    wh, path, model = updated_table(tmp_path, **DV)
    # Rows of two ranges, one matching on a column only an update file holds (b=200, row 1).
    result = ok(lakectl(wh, "delete", "db.t", "--where", "b = 200 OR id IN (3, 6)"))[0]
    assert (result["records_deleted"], result["commit_kind"], result["files_deleted"]) == (3, "APPEND", 0)
    for r in (1, 2, 5):
        del model[r]
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model
    # Nothing rewritten: the same data files, one index file of vectors for the bucket.
    assert len(live_files(path, tmp_path)) == 8
    # Each vector's range counts its rows: rows 1 and 2 of the range 0-2, row 5 of the range 5.
    assert cardinalities(wh) == [1, 2]
    # pypaimon deletes another row on top of lakectl's vectors, lakectl one more on top of its;
    # pypaimon writes the cardinality too (rows 0-2 now), and lakectl reads it.
    pypaimon_delete(wh, [0])
    del model[0]
    assert official_rows(path, tmp_path) == model
    assert cardinalities(wh) == [1, 3]
    assert ok(lakectl(wh, "delete", "db.t", "--where", "a = 'P'"))[0]["records_deleted"] == 1
    del model[3]
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model
    assert cardinalities(wh) == [1, 1, 3]
    # A dry run counts and commits nothing; a condition matching nothing commits nothing.
    dry = ok(lakectl(wh, "delete", "db.t", "--where", "id > 0", "--dry-run"))[0]
    assert (dry["records_deleted"], dry["snapshot_id"]) == (1, None)
    assert ok(lakectl(wh, "delete", "db.t", "--where", "id = 99"))[0]["snapshot_id"] is None
    assert official_rows(path, tmp_path) == model


def test_delete_is_refused_without_deletion_vectors_as_paimon_refuses_it(tmp_path: Path) -> None:
    wh, path, model = updated_table(tmp_path)
    result = lakectl(wh, "delete", "db.t", "--where", "id = 1")
    assert result.exit_code not in (0, None)
    assert "deletion-vectors.enabled" in result.output and "internal error" not in result.output
    # It runs locally (row ids read, vectors written): --engine spark is a usage error.
    result = lakectl(wh, "--engine", "spark", "delete", "db.t", "--where", "id = 1")
    assert result.exit_code == 2 and "--engine local" in result.output
    assert official_rows(path, tmp_path) == model


def test_a_write_and_a_pypaimon_delete_landing_while_the_delete_is_held_are_kept(tmp_path: Path) -> None:
    # The held delete planned on the old index file; pypaimon's delete replaced it meanwhile,
    # so the commit finds its plan stale and plans again: all three changes stay.
    wh, path, model = updated_table(tmp_path, **DV)
    ok(lakectl(wh, "delete", "db.t", "--where", "id = 6"))  # an index file to replace
    del model[5]
    proc, stall = _held(wh, tmp_path, "delete", "db.t", "--where", "id = 2")
    ok(lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl", input='{"id": 7, "a": "s", "b": 70}\n'))
    pypaimon_delete(wh, [4])
    code, out, err = _resume(proc, stall)
    assert code == 0, err
    assert json.loads(out)["records_deleted"] == 1
    model[6] = {"id": 7, "a": "s", "b": 70}
    del model[1], model[4]
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model


def test_delete_through_the_console_script(tmp_path: Path) -> None:
    wh, path, model = updated_table(tmp_path, **DV)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([str(LAKECTL), "--warehouse", str(wh), "--format", "json", "delete", "db.t",
                           "--where", "a = 'q'"], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records_deleted"] == 1
    del model[4]
    assert official_rows(path, tmp_path) == model


def test_compaction_through_the_console_script(tmp_path: Path) -> None:
    wh, path, model = updated_table(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([str(LAKECTL), "--warehouse", str(wh), "--format", "json", "compact", "db.t"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files_after"] == 1
    assert official_rows(path, tmp_path) == model


def _held(wh: Path, tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    """The console script held before it publishes its snapshot (LAKECTL_FAULT=stall:publish:1)."""
    stall = tmp_path / "stall"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "LAKECTL_FAULT": "stall:publish:1", "LAKECTL_STALL_FILE": str(stall), "LAKECTL_STALL_SECONDS": "120"}
    proc = subprocess.Popen([str(LAKECTL), "--warehouse", str(wh), "--format", "json", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not stall.exists():
        if proc.poll() is not None:
            raise AssertionError(f"{args} ended before its stall:\n{proc.communicate()}")
        time.sleep(0.02)
    return proc, stall


def _resume(proc: subprocess.Popen[str], stall: Path) -> tuple[int, str, str]:
    stall.unlink()
    out, err = proc.communicate(timeout=180)
    return proc.returncode, out, err


def test_a_write_landing_while_the_compaction_is_held_is_kept(tmp_path: Path) -> None:
    wh, path, model = updated_table(tmp_path)
    proc, stall = _held(wh, tmp_path, "compact", "db.t")
    ok(lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl", input='{"id": 7, "a": "s", "b": 70}\n'))
    code, out, err = _resume(proc, stall)
    assert code == 0, err
    model[6] = {"id": 7, "a": "s", "b": 70}
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model
    assert [(f["first_row_id"], f["rows"]) for f in live_files(path, tmp_path)] == [(0, 6), (6, 1)]


def test_an_update_by_row_id_landing_while_the_compaction_is_held_makes_it_plan_again(tmp_path: Path) -> None:
    # pypaimon rewrites column b of row 1 while the compaction waits before its commit: the
    # compacted file would cover row ids the new column file also holds, so the commit finds
    # its plan stale, plans again on the new snapshot and folds the update in.
    wh, path, model = updated_table(tmp_path)
    proc, stall = _held(wh, tmp_path, "compact", "db.t")
    official_write(job(wh, [{"op": "update_by_row_id", "columns": ["b"]}], existing=True),
                   [pa.table({"_ROW_ID": ids([1]), "b": ids([222])})], tmp_path)
    code, out, err = _resume(proc, stall)
    assert code == 0, err
    model[1]["b"] = 222
    assert official_rows(path, tmp_path) == model
    assert lakectl_rows(wh) == model
    assert [(f["first_row_id"], f["rows"]) for f in live_files(path, tmp_path)] == [(0, 6)]
