"""``write --input``: globs, directories and stdin on the local engine (through the console
script), inputs that lack table columns, CSV errors that name the row and column, and the
static partition overwrite (``--mode overwrite --partition k=v``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_kit import assert_lakectl_words

from core.table import Table

REPO = Path(__file__).resolve().parents[2]
SCRIPT = shutil.which("lakectl", path=str(Path(sys.executable).parent))


def lakectl(tmp: Path, *args: Any, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script (importing this checkout), in ``tmp``."""
    if SCRIPT is None:
        pytest.skip(f"the lakectl console script is not installed next to {sys.executable}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp))
    return subprocess.run([SCRIPT, "-w", str(tmp / "wh"), *map(str, args)], input=input, capture_output=True,
                          text=True, cwd=tmp, env=env, timeout=120)


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{proc.stderr}"
    return proc.stdout


def one_line_error(proc: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    lines = proc.stderr.splitlines()
    detail = f"exit {proc.returncode}, stderr {proc.stderr!r}"
    assert proc.returncode == code and len(lines) == 1 and lines[0].startswith("error: "), detail
    assert_lakectl_words(lines[0])
    assert all(f in lines[0] for f in fragments), detail
    return lines[0]


def ids(tmp: Path, table: str = "db.t") -> list[int]:
    return sorted(Table.open(table, warehouse=str(tmp / "wh")).scan().column("id").to_pylist())


def _parquet(path: Path, first: int, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(range(first, first + n), pa.int64()),
                             "v": [f"v{i}" for i in range(first, first + n)]}), path)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    ok(lakectl(tmp_path, "-q", "create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING"))
    return tmp_path


def test_glob_of_parquet_files(tmp: Path) -> None:
    _parquet(tmp / "in" / "a.parquet", 0, 3)
    _parquet(tmp / "in" / "b.parquet", 10, 2)
    (tmp / "in" / "notes.txt").write_text("not data")
    ok(lakectl(tmp, "-q", "write", "db.t", "--input", "in/*.parquet"))
    assert ids(tmp) == [0, 1, 2, 10, 11]


def test_directory_read_recursively_skipping_hidden_and_marker_files(tmp: Path) -> None:
    """A directory as Spark or Hadoop leave it: part files in partition folders, _SUCCESS,
    .crc checksums, a _temporary folder; only the data files are read."""
    out = tmp / "export"
    _parquet(out / "dt=1" / "part-00000.snappy.parquet", 0, 2)
    _parquet(out / "dt=2" / "part-00001.snappy.parquet", 5, 1)
    _parquet(out / "_temporary" / "0" / "part-00009.parquet", 100, 1)
    _parquet(out / ".hidden.parquet", 200, 1)
    (out / "_SUCCESS").write_text("")
    (out / "dt=1" / ".part-00000.snappy.parquet.crc").write_bytes(b"\x00crc")
    ok(lakectl(tmp, "-q", "write", "db.t", "--input", out))
    assert ids(tmp) == [0, 1, 5]


def test_directory_of_files_without_extension_by_input_format(tmp: Path) -> None:
    (tmp / "csvdir").mkdir()
    (tmp / "csvdir" / "part-00000").write_text("id,v\n1,a\n")
    (tmp / "csvdir" / "part-00001").write_text("id,v\n2,b\n")
    missing = lakectl(tmp, "write", "db.t", "--input", "csvdir")
    one_line_error(missing, 5, "no input files match directory csvdir")
    ok(lakectl(tmp, "-q", "write", "db.t", "--input", "csvdir", "--input-format", "csv"))
    assert ids(tmp) == [1, 2]


def test_glob_or_directory_matching_nothing_is_one_line_exit_5(tmp: Path) -> None:
    (tmp / "empty").mkdir()
    one_line_error(lakectl(tmp, "write", "db.t", "--input", "nowhere/*.parquet"), 5,
                   "no input files match glob nowhere/*.parquet")
    one_line_error(lakectl(tmp, "write", "db.t", "--input", "empty"), 5, "no input files match directory empty")
    assert Table.open("db.t", warehouse=str(tmp / "wh")).latest_snapshot() is None


def test_csv_errors_name_the_row_line_and_column(tmp: Path) -> None:
    (tmp / "bad.csv").write_text("id,v\n1,a\n2,b\nthree,c\n")
    one_line_error(lakectl(tmp, "write", "db.t", "-i", "bad.csv"), 5, "bad.csv", "row 3 (line 4)", "column id")
    assert Table.open("db.t", warehouse=str(tmp / "wh")).latest_snapshot() is None


def test_input_lacking_columns_is_refused_unless_filled(tmp: Path) -> None:
    ok(lakectl(tmp, "-q", "create", "db.w", "--schema", "id BIGINT NOT NULL, a STRING, b INT, c INT NOT NULL"))
    (tmp / "partial.csv").write_text("id,c\n1,10\n")
    one_line_error(lakectl(tmp, "write", "db.w", "-i", "partial.csv"), 5, "lacks columns 'a', 'b'",
                   "--fill-missing-columns")
    (tmp / "no_c.csv").write_text("id,a\n1,x\n")
    for flags in ((), ("--fill-missing-columns",)):
        one_line_error(lakectl(tmp, "write", "db.w", "-i", "no_c.csv", *flags), 5, "NOT NULL column 'c'")
    assert Table.open("db.w", warehouse=str(tmp / "wh")).latest_snapshot() is None
    ok(lakectl(tmp, "-q", "write", "db.w", "-i", "partial.csv", "--fill-missing-columns"))
    assert Table.open("db.w", warehouse=str(tmp / "wh")).scan().to_pylist() == [{"id": 1, "a": None, "b": None, "c": 10}]


@pytest.mark.parametrize("how", ["file", "stdin", "stream"])
def test_json_keys_left_out_are_null_and_a_csv_stream_header_is_checked(tmp: Path, how: str) -> None:
    """In JSON a key left out of a record is null (Spark's and Flink's reading), whether no
    record or only some name it; a streamed CSV's header lacking a column is refused unless
    --fill-missing-columns, as a CSV file's is."""
    ok(lakectl(tmp, "-q", "create", "db.j", "--schema", "id BIGINT NOT NULL, a STRING, b INT"))
    args = {"file": ["-i", "in.jsonl"], "stdin": ["-i", "-", "--input-format", "jsonl"],
            "stream": ["-i", "-", "--stream", "--commit-rows", "2"]}[how]
    text = '{"id": 1, "a": "x"}\n{"id": 2, "a": "\\"b\\": 1"}\n{"id": 3, "b": 7}\n'
    (tmp / "in.jsonl").write_text(text)
    ok(lakectl(tmp, "-q", "write", "db.j", *args, input=None if how == "file" else text))
    rows = sorted(Table.open("db.j", warehouse=str(tmp / "wh")).scan().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "a": "x", "b": None}, {"id": 2, "a": '"b": 1', "b": None},
                    {"id": 3, "a": None, "b": 7}]
    if how == "stream":
        csv_args = ["-i", "-", "--stream", "--input-format", "csv", "--commit-rows", "1", "--commit-user", "feed"]
        one_line_error(lakectl(tmp, "write", "db.j", *csv_args, input="id,a\n4,y\n"), 5, "lacks column 'b'",
                       "--fill-missing-columns")
        ok(lakectl(tmp, "-q", "write", "db.j", *csv_args, "--fill-missing-columns", input="id,a\n4,y\n"))
        assert Table.open("db.j", warehouse=str(tmp / "wh")).scan().num_rows == 4


# ---- static partition overwrite -----------------------------------------------------------------
@pytest.fixture
def parts(tmp_path: Path) -> Path:
    ok(lakectl(tmp_path, "-q", "create", "db.p", "--schema", "dt STRING NOT NULL, id BIGINT NOT NULL, v STRING",
               "--partition-by", "dt"))
    (tmp_path / "rows.csv").write_text("dt,id,v\n2024-01-01,1,a\n2024-01-01,2,b\n2024-01-02,3,c\n")
    ok(lakectl(tmp_path, "-q", "write", "db.p", "-i", "rows.csv"))
    return tmp_path


def _rows(tmp: Path) -> list[tuple[str, int]]:
    data = Table.open("db.p", warehouse=str(tmp / "wh")).scan()
    return sorted(zip(data.column("dt").to_pylist(), data.column("id").to_pylist()))


def test_overwrite_with_empty_input_clears_the_named_partition(parts: Path) -> None:
    (parts / "empty.csv").write_text("dt,id,v\n")
    out = ok(lakectl(parts, "-f", "json", "write", "db.p", "-i", "empty.csv", "--mode", "overwrite",
                     "--partition", "dt=2024-01-01"))
    assert '"commit_kind": "OVERWRITE"' in out and '"records_written": 0' in out
    assert _rows(parts) == [("2024-01-02", 3)]
    # Empty stdin (a producer with nothing today) does the same.
    ok(lakectl(parts, "-q", "write", "db.p", "-i", "-", "--input-format", "jsonl", "--mode", "overwrite",
               "--partition", "dt=2024-01-02", input=""))
    assert _rows(parts) == []


def test_a_0_byte_csv_and_empty_csv_stdin_are_empty_inputs(parts: Path) -> None:
    """A producer with nothing today writes a 0-byte file (no header): it clears the partition
    as a header-only CSV does, from a file or from stdin, and appending it commits nothing."""
    (parts / "nothing.csv").write_bytes(b"")
    out = ok(lakectl(parts, "-f", "json", "write", "db.p", "-i", "nothing.csv", "--mode", "overwrite",
                     "--partition", "dt=2024-01-01"))
    assert '"commit_kind": "OVERWRITE"' in out and '"files_deleted": 1' in out
    assert _rows(parts) == [("2024-01-02", 3)]
    ok(lakectl(parts, "-q", "write", "db.p", "-i", "-", "--input-format", "csv", "--mode", "overwrite",
               "--partition", "dt=2024-01-02", input="\n"))
    assert _rows(parts) == []
    assert '"snapshot_id": null' in ok(lakectl(parts, "-f", "json", "write", "db.p", "-i", "nothing.csv"))


def test_an_overwrite_that_changes_nothing_commits_nothing(parts: Path) -> None:
    before = ok(lakectl(parts, "-f", "csv", "snapshots", "db.p"))
    (parts / "empty.csv").write_text("dt,id,v\n")
    for spec in (["--partition", "dt=2024-01-09"], []):  # a partition without files; every partition, no rows
        out = ok(lakectl(parts, "-f", "json", "write", "db.p", "-i", "empty.csv", "--mode", "overwrite", *spec))
        assert '"snapshot_id": null' in out and '"files_deleted": 0' in out, out
    assert ok(lakectl(parts, "-f", "csv", "snapshots", "db.p")) == before
    assert _rows(parts) == [("2024-01-01", 1), ("2024-01-01", 2), ("2024-01-02", 3)]


def test_static_overwrite_replaces_only_its_partition(parts: Path) -> None:
    (parts / "new.csv").write_text("dt,id,v\n2024-01-01,9,z\n")
    ok(lakectl(parts, "-q", "write", "db.p", "-i", "new.csv", "--mode", "overwrite", "-p", "dt=2024-01-01"))
    assert _rows(parts) == [("2024-01-01", 9), ("2024-01-02", 3)]


def test_static_overwrite_refuses_rows_of_another_partition_and_leaves_no_files(parts: Path) -> None:
    files_before = sorted(p.name for p in (parts / "wh").rglob("*.parquet"))
    (parts / "mixed.csv").write_text("dt,id,v\n2024-01-01,9,z\n2024-01-03,10,y\n")
    one_line_error(lakectl(parts, "write", "db.p", "-i", "mixed.csv", "--mode", "overwrite", "-p", "dt=2024-01-01"),
                   5, "partition dt=2024-01-03", "outside the --partition")
    assert sorted(p.name for p in (parts / "wh").rglob("*.parquet")) == files_before
    assert _rows(parts) == [("2024-01-01", 1), ("2024-01-01", 2), ("2024-01-02", 3)]


def test_partition_flag_needs_overwrite_and_every_partition_column(parts: Path) -> None:
    one_line_error(lakectl(parts, "write", "db.p", "-i", "rows.csv", "-p", "dt=2024-01-01"), 2, "--mode overwrite")
    one_line_error(lakectl(parts, "write", "db.p", "-i", "rows.csv", "--mode", "overwrite", "-p", "id=1"), 2,
                   "not a partition column")


# ---- --like: a table made as another is -----------------------------------------------------
def _layout(tmp: Path, name: str) -> tuple:
    s = Table.open(name, warehouse=str(tmp / "wh")).schema
    return [(f.name, str(f.type), f.description) for f in s.fields], s.primary_keys, s.partition_keys, s.options, s.comment


def test_create_like_copies_columns_keys_options_and_comment_and_flags_go_over_them(tmp_path: Path) -> None:
    ok(lakectl(tmp_path, "-q", "create", "shop.orders", "--schema",
               "id BIGINT NOT NULL COMMENT 'order', amount DECIMAL(10, 2), dt STRING NOT NULL",
               "--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=4", "--comment", "orders"))
    ok(lakectl(tmp_path, "-q", "create", "shop.same", "--like", "shop.orders"))
    assert _layout(tmp_path, "shop.same") == _layout(tmp_path, "shop.orders")
    ok(lakectl(tmp_path, "-q", "create", "shop.other", "--like", "shop.orders", "--primary-key", "id,dt",
               "--option", "bucket=2", "--option", "file.format=orc"))
    columns, keys, partitions, options, comment = _layout(tmp_path, "shop.other")
    assert (columns, keys, partitions, comment) == _layout(tmp_path, "shop.orders")[:3] + ("orders",)
    assert options == {"bucket": "2", "file.format": "orc"}
    one_line_error(lakectl(tmp_path, "create", "shop.x", "--schema", "id INT", "--like", "shop.orders"), 2,
                   "exactly one of --schema and --like")
    one_line_error(lakectl(tmp_path, "create", "shop.x"), 2, "exactly one of --schema and --like")
    one_line_error(lakectl(tmp_path, "create", "shop.x", "--like", "shop.nope"), 3, "shop.nope")


def test_the_missing_table_hint_names_like_and_following_it_copies_exactly(tmp_path: Path) -> None:
    ok(lakectl(tmp_path, "-q", "create", "shop.orders", "--schema", "id BIGINT, amount DECIMAL(10, 2), dt STRING",
               "--partition-by", "dt"))
    (tmp_path / "rows.csv").write_text("id,amount,dt\n1,12.50,2024-01-02\n2,0.05,2024-01-03\n")
    ok(lakectl(tmp_path, "-q", "write", "shop.orders", "-i", "rows.csv"))
    text = ok(lakectl(tmp_path, "scan", "shop.orders", "-f", "jsonl"))
    one_line_error(lakectl(tmp_path, "write", "shop.copy", "-i", "-", "--input-format", "jsonl", input=text), 3,
                   "--auto-create --like DB.SOURCE")
    one_line_error(lakectl(tmp_path, "write", "shop.copy", "-i", "-", "--input-format", "jsonl", "--like", "shop.orders",
                           input=text), 2, "--like applies to --auto-create")
    ok(lakectl(tmp_path, "-q", "write", "shop.copy", "-i", "-", "--input-format", "jsonl", "--auto-create",
               "--like", "shop.orders", input=text))
    assert ok(lakectl(tmp_path, "scan", "shop.copy", "-f", "jsonl")) == text  # "12.50" and "2024-01-02" stay
    assert _layout(tmp_path, "shop.copy") == _layout(tmp_path, "shop.orders")
