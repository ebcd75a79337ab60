"""Postpone-bucket tables (bucket=-2) written and compacted by lakectl, read by pypaimon 2.1
(the reference: Java Paimon 1.0 has no postpone bucket mode and refuses to open such a table).

Expectations are independent of lakectl: rows are computed here from the input (the last
write of a key wins, a -D removes it), and pypaimon reads the table lakectl left."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle import official_read, official_write
from typer.testing import CliRunner, Result

from core.commit import base_entries
from core.table_handle import TableHandle
from lakectl.app import app

pytestmark = pytest.mark.interop

runner = CliRunner()


def lakectl(wh: Path, *args: Any, input: str | None = None) -> Result:
    return runner.invoke(app, ["--warehouse", str(wh), "--format", "jsonl", *map(str, args)], input=input,
                         catch_exceptions=False)


def ok(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def official_rows(path: Path, tmp_path: Path) -> list[tuple[Any, ...]]:
    table, _ = official_read(path, tmp_path)
    return sorted(tuple(r.values()) for r in table.to_pylist())


def scanned(wh: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in ok(lakectl(wh, "scan", "db.t")))


def live_entries(wh: Path) -> list[Any]:
    table = TableHandle.open("db.t", warehouse=str(wh))
    return base_entries(table.manifests(), table.latest_snapshot(), table.snapshots)


def expected_state(batches: list[list[dict[str, Any]]]) -> list[tuple[Any, ...]]:
    state: dict[tuple[Any, Any], tuple[Any, ...]] = {}
    for batch in batches:
        for r in batch:
            key = (r["dt"], r["id"])
            if r.get("op") == "-D":
                state.pop(key, None)
            else:
                state[key] = (r["dt"], r["id"], r["v"])
    return sorted(state.values())


def create(wh: Path, *options: str) -> None:
    args = ["create", "db.t", "--schema", "dt STRING, id INT, v STRING", "--primary-key", "dt,id",
            "--partition-by", "dt", "--option", "bucket=-2"]
    for o in options:
        args += ["--option", o]
    ok(lakectl(wh, *args))


def write(wh: Path, rows: list[dict[str, Any]]) -> None:
    with_kind = any("op" in r for r in rows)
    extra = ["--row-kind-column", "op"] if with_kind else []
    body = [{**r, "op": r.get("op", "+I")} for r in rows] if with_kind else rows
    ok(lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl", *extra, input=jsonl(body)))


FIRST = [{"dt": "a", "id": 2, "v": "x"}, {"dt": "a", "id": 1, "v": "y"}, {"dt": "b", "id": 2, "v": "z"},
         {"dt": "a", "id": 1, "v": "y1"}]
SECOND = [{"dt": "a", "id": 1, "v": "y2"}, {"dt": "b", "id": 7, "v": "w"}, {"dt": "a", "id": 1, "v": "y3"},
          {"dt": "b", "id": 2, "v": "z", "op": "-D"}]


def test_lakectl_writes_into_bucket_postpone_invisible_until_lakectl_compacts(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    path = wh / "db.db" / "t"
    create(wh)
    write(wh, FIRST)
    write(wh, SECOND)
    # Stored as pypaimon 2.1 stores them: bucket-postpone/, Avro, the writer in the name,
    # bucket -2 with total buckets -2, level 0, each writer's sequence numbers from 0.
    names = sorted(p.name for p in path.glob("dt=*/bucket-postpone/*"))
    assert len(names) == 4 and all(n.startswith("data--u-") and "-s-" in n and "-w-" in n and n.endswith(".avro")
                                   for n in names), names
    entries = live_entries(wh)
    assert {(e.bucket, e.total_buckets, e.file.level) for e in entries} == {(-2, -2, 0)}
    assert sorted(e.file.min_sequence_number for e in entries) == [0, 0, 0, 0]
    assert sum(e.file.row_count for e in entries) == 8  # every record kept, none folded
    assert sum(e.file.delete_row_count for e in entries) == 1
    # Batch readers read only real buckets: nothing yet, in pypaimon and in lakectl.
    assert official_rows(path, tmp_path) == []
    assert scanned(wh) == []

    dry = ok(lakectl(wh, "compact", "db.t", "--dry-run"))[0]
    assert dry["dry_run"] and dry["postponed_files"] == 4 and dry["snapshot_id"] is None
    done = ok(lakectl(wh, "compact", "db.t"))[0]
    assert done["postponed_files"] == 4 and done["files_before"] >= 4
    expected = expected_state([FIRST, SECOND])
    assert expected == [("a", 1, "y3"), ("a", 2, "x"), ("b", 7, "w")]
    assert official_rows(path, tmp_path) == expected
    assert scanned(wh) == expected
    snapshots = ok(lakectl(wh, "snapshots", "db.t"))
    assert snapshots[0]["commit_kind"] == "COMPACT"
    entries = live_entries(wh)
    assert all(e.bucket >= 0 and e.total_buckets == 1 for e in entries)  # the estimate below 1 GB: 1
    # Nothing left to move: a second compact commits nothing postponed.
    again = ok(lakectl(wh, "compact", "db.t"))[0]
    assert again["postponed_files"] == 0


def test_a_partition_keeps_its_bucket_count_new_ones_take_the_default(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    path = wh / "db.db" / "t"
    create(wh, "postpone.default-bucket-num=3")
    first = [{"dt": "a", "id": i, "v": f"a{i}"} for i in range(40)]
    write(wh, first)
    ok(lakectl(wh, "compact", "db.t"))
    assert {e.total_buckets for e in live_entries(wh)} == {3}
    assert len({e.bucket for e in live_entries(wh)}) == 3
    ok(lakectl(wh, "alter-schema", "db.t", "--set-option", "postpone.default-bucket-num=2"))
    second = [{"dt": "a", "id": i, "v": f"a{i}-new"} for i in range(0, 40, 3)] + \
             [{"dt": "b", "id": i, "v": f"b{i}"} for i in range(30)]
    write(wh, second)
    ok(lakectl(wh, "compact", "db.t"))
    counts = {(e.partition, e.total_buckets) for e in live_entries(wh)}
    by_partition: dict[bytes, set[int]] = {}
    for part, n in counts:
        by_partition.setdefault(part, set()).add(n)
    assert sorted(tuple(v) for v in by_partition.values()) == [(2,), (3,)]  # a keeps 3, b takes 2
    expected = expected_state([first, second])
    assert official_rows(path, tmp_path) == expected
    assert scanned(wh) == expected


def test_pypaimon_writes_lakectl_compacts_pypaimon_reads_every_row(tmp_path: Path) -> None:
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["dt", "STRING NOT NULL"], ["id", "INT NOT NULL"], ["v", "STRING"]],
                      "primary_keys": ["dt", "id"], "partition_keys": ["dt"],
                      "options": {"bucket": "-2", "postpone.default-bucket-num": "2"}, "comment": None},
           "steps": [{"op": "write"}, {"op": "write"}]}
    first = [{"dt": "a", "id": 2, "v": "x"}, {"dt": "a", "id": 1, "v": "y"}, {"dt": "b", "id": 2, "v": "z"}]
    second = [{"dt": "a", "id": 1, "v": "y2"}, {"dt": "a", "id": 1, "v": "y3"}, {"dt": "c", "id": 5, "v": "q"}]
    batches = [pa.Table.from_pylist(b, pa.schema([("dt", pa.string()), ("id", pa.int32()), ("v", pa.string())]))
               for b in (first, second)]
    official_write(job, batches, tmp_path)
    wh = tmp_path / "wh"
    path = wh / "db.db" / "t"
    assert official_rows(path, tmp_path) == []
    done = ok(lakectl(wh, "compact", "db.t"))[0]
    assert done["postponed_files"] == 4
    expected = expected_state([first, second])
    assert official_rows(path, tmp_path) == expected
    assert scanned(wh) == expected
    assert {e.total_buckets for e in live_entries(wh)} == {2}
    # pypaimon writes more into the compacted table; lakectl moves those rows too.
    job["steps"], job["existing"] = [{"op": "write"}], True
    third = [{"dt": "a", "id": 2, "v": "x2"}, {"dt": "d", "id": 1, "v": "n"}]
    official_write(job, [pa.Table.from_pylist(third, batches[0].schema)], tmp_path)
    assert official_rows(path, tmp_path) == expected
    ok(lakectl(wh, "compact", "db.t"))
    assert official_rows(path, tmp_path) == expected_state([first, second, third]) == scanned(wh)


def test_what_lakectl_does_not_do_on_postpone_tables_is_refused(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    create(wh)
    write(wh, FIRST)
    for args, word in [(["lookup", "db.t", "--key", "dt=a,id=1"], "bucket=-2"),
                       (["scan", "db.t", "--incremental-between", "0,1"], "bucket=-2"),
                       (["delete", "db.t", "--where", "id = 1"], "bucket=-2"),
                       (["compact", "db.t", "--engine", "spark"], "local engine"),
                       (["write", "db.t", "-i", "-", "--input-format", "jsonl", "--engine", "spark"], "local engine")]:
        result = lakectl(wh, *args)
        assert result.exit_code not in (0, None), (args, result.output)
        assert word in result.output and "internal error" not in result.output, (args, result.output)
    ok(lakectl(tmp_path / "wh2", "create", "db.t", "--schema", "id INT, v STRING", "--primary-key", "id",
               "--option", "bucket=-2", "--option", "deletion-vectors.enabled=true"))
    result = lakectl(tmp_path / "wh2", "write", "db.t", "--input", "-", "--input-format", "jsonl",
                     input='{"id": 1, "v": "a"}\n')
    assert result.exit_code not in (0, None) and "deletion-vectors.enabled" in result.output, result.output


@pytest.mark.java
def test_java_paimon_1_0_does_not_open_postpone_bucket_tables(tmp_path: Path) -> None:
    """Why pypaimon 2.1 is the reference here: Java 1.0 predates the postpone bucket mode."""
    from java_oracle import java_read

    wh = tmp_path / "wh"
    create(wh)
    write(wh, FIRST)
    ok(lakectl(wh, "compact", "db.t"))
    with pytest.raises(AssertionError, match="number of buckets needs to be greater than 0"):
        java_read(wh / "db.db" / "t")


@pytest.mark.parametrize("options,fold", [
    (["merge-engine=aggregation", "fields.n.aggregate-function=sum"], lambda old, new: old + new),
    (["merge-engine=partial-update"], lambda old, new: new if new is not None else old),
], ids=["aggregation-sum", "partial-update"])
def test_merge_engines_fold_postponed_rows_with_the_rows_already_in_buckets(tmp_path: Path, options: list[str],
                                                                           fold: Any) -> None:
    """Rows moved by a later compaction merge with those an earlier one put in the bucket."""
    wh = tmp_path / "wh"
    args = ["create", "db.t", "--schema", "id INT, n BIGINT", "--primary-key", "id", "--option", "bucket=-2",
            "--option", "postpone.default-bucket-num=2"]
    for o in options:
        args += ["--option", o]
    ok(lakectl(wh, *args))
    batches = [[{"id": i, "n": i} for i in range(10)], [{"id": i, "n": 100} for i in range(0, 10, 2)],
               [{"id": i, "n": None if i == 3 else 7} for i in range(1, 6)]]
    state: dict[int, Any] = {}
    for number, batch in enumerate(batches):
        ok(lakectl(wh, "write", "db.t", "-i", "-", "--input-format", "jsonl", input=jsonl(batch)))
        for r in batch:
            state[r["id"]] = fold(state[r["id"]], r["n"]) if r["id"] in state and r["n"] is not None \
                else (state.get(r["id"]) if r["n"] is None else r["n"])
        if number != 1:  # the second batch waits in bucket-postpone/ with the third
            ok(lakectl(wh, "compact", "db.t"))
    expected = sorted(state.items())
    assert official_rows(wh / "db.db" / "t", tmp_path) == expected
    assert scanned(wh) == expected


def test_without_a_default_a_new_partition_gets_pypaimon_s_estimate(tmp_path: Path) -> None:
    """postpone.target-row-num-per-bucket=10: 35 records of a new partition make 4 buckets."""
    wh = tmp_path / "wh"
    create(wh, "postpone.target-row-num-per-bucket=10")
    batch = [{"dt": "a", "id": i, "v": f"v{i}"} for i in range(35)]
    write(wh, batch)
    ok(lakectl(wh, "compact", "db.t"))
    assert {e.total_buckets for e in live_entries(wh)} == {4}
    assert official_rows(wh / "db.db" / "t", tmp_path) == expected_state([batch]) == scanned(wh)
