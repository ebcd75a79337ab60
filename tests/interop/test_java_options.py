"""Options Java Paimon 1.0 honours that lakectl refuses (core.options.OPTION_RULES), and the
ones it honours, on tables Java creates and writes.

A refused option must stop the lakectl command (exit code not 0, one line naming the option)
before any row is returned or any file written; an option refused only for writes must leave
reads equal to Java's. Honoured options are held to Java's reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run, lakectl_rows
from typer.testing import CliRunner, Result

from core import file_index
from core.manifest import live_entries
from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.scan import prepare
from core.table import Table
from lakectl.app import app

pytestmark = [pytest.mark.interop, pytest.mark.java]

runner = CliRunner()

KV = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"}, {"name": "ts", "type": "BIGINT"}]


def lakectl(wh: Path, *args: Any, input: str | None = None) -> Result:
    return runner.invoke(app, ["--warehouse", str(wh), "--format", "jsonl", *map(str, args)], input=input,
                         catch_exceptions=False)


def java_table(tmp_path: Path, options: dict[str, str], *, fields: list[dict[str, str]] = KV,
               primary_keys: tuple[str, ...] = ("k",), partition_keys: tuple[str, ...] = (),
               steps: list[dict[str, Any]] | None = None) -> Path:
    path = tmp_path / "wh" / "db.db" / "t"
    rows = [[1, 10, 3], [2, 20, 1], [1, 11, 1], [3, None, 5]]
    java_run(path, steps if steps is not None else [{"op": "write", "rows": rows[:2]}, {"op": "write", "rows": rows[2:]}],
             create={"fields": fields, "primaryKeys": list(primary_keys), "partitionKeys": list(partition_keys),
                     "options": options})
    return path


def assert_refused(result: Result, option: str, action: str) -> None:
    assert result.exit_code != 0, f"lakectl accepted a table with {option}: {result.stdout}"
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("error: table db.t uses"), line
    assert option in line and f"does not support for {action}" in line, line


@pytest.mark.parametrize("options,option,merges", [
    ({"bucket": "1", "incremental-between": "1,2"}, "incremental-between=1,2", False),
    ({"bucket": "1", "scan.file-creation-time-millis": "4102444800000"}, "scan.file-creation-time-millis", False),
], ids=["incremental-between", "file-creation-time"])
def test_options_that_change_java_reads_are_refused_on_read(tmp_path: Path, options: dict[str, str],
                                                            option: str, merges: bool) -> None:
    """Options of the merge are refused for writes too; the others change only what Java reads."""
    path = java_table(tmp_path, options)
    java_rows, _ = java_read(path)
    wh = tmp_path / "wh"
    assert_refused(lakectl(wh, "scan", "db.t"), option, "reads")
    assert_refused(lakectl(wh, "scan", "db.t", "--incremental-between", "0,2"), option, "reads")
    assert_refused(lakectl(wh, "lookup", "db.t", "--key", "k=1"), option, "reads")
    if merges:
        assert_refused(lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl",
                               input='{"k": 9, "v": 1, "ts": 1}\n'), option, "writes")
    assert java_read(path)[0] == java_rows  # nothing was written


@pytest.mark.parametrize("options,option", [
    ({"bucket": "1", "record-level.expire-time": "1 d", "record-level.time-field": "ts"},
     "record-level.expire-time"),
    ({"bucket": "1", "changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true",
      "changelog-producer.row-deduplicate-ignore-fields": "ts"}, "changelog-producer.row-deduplicate-ignore-fields"),
], ids=["record-level-expire", "row-deduplicate-ignore-fields"])
def test_options_that_change_java_writes_are_refused_on_write(tmp_path: Path, options: dict[str, str],
                                                              option: str) -> None:
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"}, {"name": "ts", "type": "INT"}]
    now = 2_000_000_000  # seconds: far from expiry
    path = java_table(tmp_path, options, fields=fields,
                      steps=[{"op": "write", "rows": [[1, 10, now], [2, 20, now]]},
                             {"op": "write", "rows": [[1, 11, now], [3, None, now]]}])
    wh = tmp_path / "wh"
    table = Table.open("db.t", warehouse=str(wh))
    java_rows, _ = java_read(path)
    assert lakectl_rows(table.scan()) == java_rows  # reads are honoured
    latest = table.snapshots.latest_id()
    assert_refused(lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl",
                           input=f'{{"k": 9, "v": 1, "ts": {now}}}\n'), option, "writes")
    assert_refused(lakectl(wh, "compact", "db.t"), option, "writes")
    assert table.snapshots.latest_id() == latest


def test_cross_partition_upsert_table_is_refused_on_write(tmp_path: Path) -> None:
    """Java's cross-partition upsert table (dynamic bucket, primary key without the partition
    column): lakectl refuses to write it, having no global key index. (The oracle does not
    write this bucket mode, so Java only creates the table here.)"""
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"},
              {"name": "dt", "type": "STRING NOT NULL"}]
    java_table(tmp_path, {}, fields=fields, partition_keys=("dt",), steps=[])
    wh = tmp_path / "wh"
    assert_refused(lakectl(wh, "write", "db.t", "--input", "-", "--input-format", "jsonl",
                           input='{"k": 9, "v": 1, "dt": "a"}\n'), "primary-key=k", "writes")
    assert lakectl(wh, "scan", "db.t").exit_code == 0
    assert Table.open("db.t", warehouse=str(wh)).snapshots.latest_id() is None


@pytest.mark.parametrize("writer", ["java", "lakectl"])
def test_dynamic_partition_overwrite_false_replaces_the_whole_table(tmp_path: Path, writer: str) -> None:
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"},
              {"name": "dt", "type": "STRING NOT NULL"}]
    first = [[1, 10, "a"], [2, 20, "b"], [3, 30, "c"]]
    new = [[4, 40, "a"]]
    steps: list[dict[str, Any]] = [{"op": "write", "rows": first}]
    if writer == "java":
        steps.append({"op": "write", "rows": new, "overwrite": True})
    path = java_table(tmp_path, {"bucket": "2", "dynamic-partition-overwrite": "false"}, fields=fields,
                      primary_keys=("k", "dt"), partition_keys=("dt",), steps=steps)
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    if writer == "lakectl":
        table.write(pa.table({"k": pa.array([4], pa.int32()), "v": [40], "dt": ["a"]}), mode="overwrite")
    java_rows, _ = java_read(path)
    assert java_rows == lakectl_rows(table.scan()) == [[4, 40, "a"]]


def test_lakectl_overwrite_replaces_only_touched_partitions_by_default(tmp_path: Path) -> None:
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"},
              {"name": "dt", "type": "STRING NOT NULL"}]
    path = java_table(tmp_path, {"bucket": "2"}, fields=fields, primary_keys=("k", "dt"), partition_keys=("dt",),
                      steps=[{"op": "write", "rows": [[1, 10, "a"], [2, 20, "b"]]},
                             {"op": "write", "rows": [[4, 40, "a"]], "overwrite": True}])
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    java_rows, _ = java_read(path)
    assert java_rows == lakectl_rows(table.scan()) == [[2, 20, "b"], [4, 40, "a"]]


# ---- file indexes (file-index.bloom-filter.columns): Java writes them, lakectl keeps them ----
@pytest.mark.parametrize("threshold", ["500 b", "1 b"], ids=["embedded-in-manifest", "index-files"])
def test_java_bloom_filter_index_tables(tmp_path: Path, threshold: str) -> None:
    """Java embeds a small file index in the manifest (``_EMBEDDED_FILE_INDEX``) or writes it
    beside the data file (``<file>.index``, in ``_EXTRA_FILES``). lakectl reads such tables as
    Java does, filtered or not, and its expire, remove-orphan-files, writes and compaction
    leave Java able to read them with its index."""
    fields = [{"name": "id", "type": "INT"}, {"name": "v", "type": "STRING"}, {"name": "n", "type": "BIGINT"}]
    options = {"bucket": "-1", "file-index.bloom-filter.columns": "v,n", "file-index.in-manifest-threshold": threshold,
               "file-index.bloom-filter.v.items": "100", "file-index.bloom-filter.n.items": "100"}
    path = tmp_path / "wh" / "db.db" / "t"
    # n interleaves across the files (stats cannot tell them apart), v does not.
    batches = [[[i, f"v{i}", (i % 50) * 3 + b] for i in range(b * 50, b * 50 + 50)] for b in range(3)]
    java_run(path, [{"op": "write", "rows": rows} for rows in batches],
             create={"fields": fields, "primaryKeys": [], "partitionKeys": [], "options": options})
    wh = tmp_path / "wh"
    table = Table.open("db.t", warehouse=str(wh))
    index_files = sorted(p.name for p in path.glob("bucket-0/*.index"))
    assert (len(index_files) == 3) == (threshold == "1 b")
    java_rows, _ = java_read(path)
    assert lakectl_rows(table.scan()) == java_rows
    for value in ("v42", "v120", "nope"):
        expected, _ = java_read(path, equal=("v", value))
        assert lakectl_rows(table.scan(where=f"v = '{value}'")) == expected
    # The bloom filters of n skip the files without the value; stats alone skip none.
    for value in (31, 32, 1000):
        expected, _ = java_read(path, equal=("n", value))
        assert lakectl_rows(table.scan(where=f"n = {value}")) == expected
        assert prepare(table, where=f"n = {value}").plan.files_pruned >= (2 if value < 1000 else 3)
    assert prepare(table, where="n > 31").plan.files_pruned == 0
    # Java's string filters hold every value of their file (xxHash64 of UTF-8) and few others.
    string_type = table.schema.field("v").type
    present = [f"v{i}" for i in range(150)]
    covered: set[str] = set()
    for e in live_entries(table.manifests(), table.latest_snapshot()):
        blob = e.file.embedded_index or (path / "bucket-0" / e.file.extra_files[0]).read_bytes()
        indexes = file_index.parse(blob)
        assert set(indexes) == {"v", "n"}
        hits = [v for v in present if file_index.may_match(indexes, [("v", v, string_type)])]
        assert 50 <= len(hits) < 75, len(hits)  # its 50 values, and few false positives
        covered.update(hits)
    assert covered == set(present)
    # lakectl writes, compacts, expires and removes orphans; Java still reads, with its index.
    table.write(pa.table({"id": pa.array([500], pa.int32()), "v": ["v42"], "n": [1]}))
    table.expire(retain_max=2, retain_min=1, older_than="0s", dry_run=False)
    remove_orphan_files(table, older_than="0s", force=True)
    assert set(index_files) <= {p.name for p in path.glob("bucket-0/*.index")}  # their data files are live
    expected, _ = java_read(path, equal=("v", "v42"))
    assert expected == lakectl_rows(table.scan(where="v = 'v42'")) == [[42, "v42", 126], [500, "v42", 1]]
    table.compact(full=True)
    table.expire(retain_max=1, retain_min=1, older_than="0s", dry_run=False)
    assert java_read(path)[0] == lakectl_rows(table.scan())
    # The old files' indexes went with them; the compacted file has its own (lakectl writes it).
    live = {n for e in live_entries(table.manifests(), table.latest_snapshot()) for n in e.file.extra_files}
    assert {p.name for p in path.glob("bucket-0/*.index")} == live and not live & set(index_files)


def test_java_writes_no_file_index_into_primary_key_tables(tmp_path: Path) -> None:
    """Java Paimon 1.0 writes file indexes for append tables only: a primary-key table with
    file-index.bloom-filter.columns gets none (so lookup has only key ranges and buckets to
    skip by, as in Java), and lakectl reads and looks such tables up as Java reads them."""
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}]
    options = {"bucket": "1", "file-index.bloom-filter.columns": "k,v", "file-index.bloom-filter.k.items": "100"}
    path = tmp_path / "wh" / "db.db" / "t"
    java_run(path, [{"op": "write", "rows": [[i * 3 + b, f"s{b}"] for i in range(50)]} for b in range(3)],
             create={"fields": fields, "primaryKeys": ["k"], "options": options})
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    files = list(live_entries(table.manifests(), table.latest_snapshot()))
    assert len(files) == 3 and all(e.file.embedded_index is None and not e.file.extra_files for e in files)
    for key in (31, 1000):
        expected, _ = java_read(path, equal=("k", key))
        assert lakectl_rows(table.lookup([f"k={key}"]).rows) == lakectl_rows(table.scan(where=f"k = {key}")) == expected


@pytest.mark.parametrize("threshold", ["500 b", "1 b"], ids=["embedded-in-manifest", "index-files"])
def test_java_reads_and_skips_by_lakectl_bloom_filters(tmp_path: Path, threshold: str) -> None:
    """lakectl writes the file index Java writes for file-index.bloom-filter.columns (embedded
    up to the threshold, else ``<file>.index``): Java's filtered reads return the same rows,
    and with the index in the manifest Java's planner drops the files it rules out."""
    wh = tmp_path / "wh"
    table = Table.locate("db.t", warehouse=str(wh))
    create(table, "id INT, v STRING, n BIGINT", options={
        "bucket": "-1", "file-index.bloom-filter.columns": "v,n", "file-index.in-manifest-threshold": threshold,
        "file-index.bloom-filter.v.items": "100", "file-index.bloom-filter.n.items": "100",
        "source.split.target-size": "1 b"})  # one Java split per file
    schema = pa.schema([("id", pa.int32()), ("v", pa.string()), ("n", pa.int64())])
    for b in range(3):
        ids = list(range(b * 50, b * 50 + 50))
        table.write(pa.table([ids, [f"v{i}" for i in ids], [(i % 50) * 3 + b for i in ids]], schema=schema))
    entries = list(live_entries(table.manifests(), table.latest_snapshot()))
    if threshold == "1 b":
        assert all(e.file.embedded_index is None and e.file.extra_files == (f"{e.file.file_name}.index",)
                   and (table_dir(table) / "bucket-0" / e.file.extra_files[0]).is_file() for e in entries)
    else:
        assert all(e.file.embedded_index and not e.file.extra_files for e in entries)
    everything, meta = java_read(table.path)
    assert everything == lakectl_rows(table.scan()) and meta["splits"] == 3
    for column, value in (("n", 31), ("n", 32), ("v", "v77"), ("n", 1000), ("v", "nope")):
        expected, meta = java_read(table.path, equal=(column, value))
        where = f"{column} = {value!r}" if isinstance(value, str) else f"{column} = {value}"
        assert expected == lakectl_rows(table.scan(where=where))
        assert len(expected) == (1 if value in (31, 32, "v77") else 0)
        if threshold != "1 b" and column == "n":
            assert meta["splits"] == len(expected)  # the other files skipped by their bloom filters


def table_dir(table: Table) -> Path:
    return Path(table.path)


@pytest.mark.parametrize("options", [{"partial-update.ignore-delete": "true"}, {"first-row.ignore-delete": "true"},
                                     {"scan.mode": "latest"}],
                         ids=["partial-update-key", "first-row-key", "scan-mode-latest"])
def test_honoured_options_read_as_java_reads_them(tmp_path: Path, options: dict[str, str]) -> None:
    """ignore-delete's older per-engine keys apply to a deduplicate table too, as in Java."""
    path = java_table(tmp_path, {"bucket": "1", **options},
                      steps=[{"op": "write", "rows": [[1, 10, 1], [2, 20, 1]]},
                             {"op": "write", "rows": [[1, 10, 1], [3, 30, 3]], "kinds": ["-D", "+I"]}])
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    expected, _ = java_read(path)
    assert lakectl_rows(table.scan()) == expected
    assert len(expected) == (3 if "ignore-delete" in str(options) else 2)


def jsonl_rows(result: Result) -> list[dict[str, Any]]:
    import json

    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_default_value_is_filled_into_nulls_as_java_reads_it(tmp_path: Path) -> None:
    """Java 1.0 fills fields.v.default-value into v's nulls when it reads (after the merge, so
    the newest record's null becomes 7 while a key whose newest v is set keeps it). lakectl's
    scan, lookup and filters see the same values; a filter on the column cannot prune by the
    files' stats, which describe the nulls."""
    options = {"bucket": "1", "fields.v.default-value": "7"}
    path = java_table(tmp_path, options, steps=[{"op": "write", "rows": [[1, 10, 3], [2, None, 1]]},
                                                {"op": "write", "rows": [[1, None, 1], [3, None, 5], [4, 8, 1]]}])
    java_rows, _ = java_read(path)
    assert sorted(java_rows) == [[1, 7, 1], [2, 7, 1], [3, 7, 5], [4, 8, 1]]  # Java fills every null
    wh = tmp_path / "wh"
    table = Table.open("db.t", warehouse=str(wh))
    assert sorted(lakectl_rows(table.scan())) == sorted(java_rows)
    assert [r["v"] for r in jsonl_rows(lakectl(wh, "lookup", "db.t", "--key", "k=3"))] == [7]
    assert sorted(r["k"] for r in jsonl_rows(lakectl(wh, "scan", "db.t", "--where", "v = 7"))) == [1, 2, 3]
    assert [r["k"] for r in jsonl_rows(lakectl(wh, "scan", "db.t", "--where", "v > 7"))] == [4]
