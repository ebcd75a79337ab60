"""lakectl's output in shell pipelines, through the installed console script: ``scan`` streams
to stdout (``| head`` ends it with exit 0 and no traceback, memory stays bounded whatever the
result's size), ``--output -`` is stdout in the format asked, a terminal's table shows the
first 100 rows and says so; plain tables start with their header, lists are one item per
line or row, booleans ``true``/``false``; ``files`` takes ``--partition`` and ``--limit``."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.ops.create import create
from core.table import Table

pytestmark = pytest.mark.slow

LAKECTL = shutil.which("lakectl", path=str(Path(sys.executable).parent))
BIG_ROWS = 300_000
PAYLOAD = 200  # characters of each row's text column: the JSON text is far larger than a split


def lakectl_cmd() -> list[str]:
    if LAKECTL is None:
        pytest.skip("the lakectl console script is not installed")
    return [LAKECTL]


def env(home: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("LAKECTL_", "TTY_", "FORCE_COLOR", "COLUMNS"))}
    out["HOME"] = str(home)
    return out


def run(wh: Path, *args: Any, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([*lakectl_cmd(), "-w", str(wh), *map(str, args)], capture_output=True,
                          env=env(wh.parent / "home"), timeout=600)
    if check:
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr)
    return proc


def shell(wh: Path, pipeline: str) -> subprocess.CompletedProcess[str]:
    """``lakectl -w WH ...`` piped into other tools under bash with pipefail: the exit code is
    lakectl's when the other tools succeed."""
    command = f"{shlex.quote(lakectl_cmd()[0])} -w {shlex.quote(str(wh))} {pipeline}"
    return subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], capture_output=True, text=True,
                          env=env(wh.parent / "home"), timeout=600)


def big_rows() -> pa.Table:
    ids = list(range(BIG_ROWS))
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "text": [f"{i:010d}" * (PAYLOAD // 10) for i in ids],
                     "ok": [i % 2 == 0 for i in ids],
                     "dt": [f"2024-{1 + i % 12:02d}-{1 + i % 25:02d}" for i in ids]})


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """s.big: an append table of 300,000 rows in 300 partitions (about 70 MB as JSON lines)."""
    wh = tmp_path_factory.mktemp("stream") / "wh"
    t = Table.locate("s.big", warehouse=str(wh))
    create(t, "id BIGINT, text STRING, ok BOOLEAN, dt STRING", partition_keys=["dt"])
    t.write(big_rows())
    return wh


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """s.small: 250 rows of several types in 3 partitions (3 snapshots)."""
    wh = tmp_path_factory.mktemp("small") / "wh"
    t = Table.locate("s.small", warehouse=str(wh))
    create(t, "id BIGINT, name STRING, ok BOOLEAN, amount DECIMAL(10, 2), dt STRING", primary_keys=["id", "dt"],
           partition_keys=["dt"], options={"bucket": "2"})
    for day in (1, 2, 3):
        ids = [i for i in range(250) if i % 3 == day - 1]
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
                          "ok": [i % 2 == 0 for i in ids],
                          "amount": pa.array([None] * 2 + [i / 4 for i in ids[2:]]).cast(pa.decimal128(10, 2)),
                          "dt": [f"2024-01-0{day}"] * len(ids)}))
    return wh


# ---- streaming to a pipe -----------------------------------------------------------------------
def check_csv_rows(lines: list[str]) -> None:
    """CSV rows of s.big, checked against how the rows were made."""
    for row in csv.reader(lines):
        i = int(row[0])
        assert row == [str(i), f"{i:010d}" * (PAYLOAD // 10), "true" if i % 2 == 0 else "false",
                       f"2024-{1 + i % 12:02d}-{1 + i % 25:02d}"]


def test_scan_into_head_exits_0_with_the_header_and_two_rows(big: Path) -> None:
    result = shell(big, "scan s.big --format csv | head -3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and lines[0] == "id,text,ok,dt"
    check_csv_rows(lines[1:])
    assert result.stderr == ""


@pytest.mark.parametrize("fmt", ["jsonl", "table", "json", "parquet"])
def test_output_dash_ends_quietly_on_a_closed_pipe(big: Path, fmt: str) -> None:
    result = shell(big, f"scan s.big --output - --format {fmt} | head -c 1000 > /dev/null")
    assert result.returncode == 0 and result.stderr == "", result.stderr


_MAX_RSS = ("import resource, subprocess, sys\n"
            "done = subprocess.run(['bash', '-c', 'set -o pipefail; ' + sys.argv[1]], capture_output=True, text=True)\n"
            "print(done.returncode, done.stdout.strip(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def peak_kib(wh: Path, pipeline: str) -> tuple[int, str]:
    """(largest resident set of the pipeline's processes in KiB, its stdout), measured in a
    fresh process whose only children are the pipeline's."""
    command = f"{shlex.quote(lakectl_cmd()[0])} -w {shlex.quote(str(wh))} {pipeline}"
    out = subprocess.run([sys.executable, "-c", _MAX_RSS, command], capture_output=True, text=True,
                         env=env(wh.parent / "home"), timeout=600, check=True).stdout.split()
    assert out[0] == "0", out
    return int(out[-1]), " ".join(out[1:-1])


@pytest.mark.parametrize("read", ["", "--incremental-between 0,1"])
def test_scan_to_a_pipe_holds_a_few_splits_not_the_result(big: Path, read: str) -> None:
    """The whole result as JSON lines is about 70 MB; lakectl streaming it into ``wc -l``
    stays within a third of that above what reading one row costs (imports, a few splits),
    for a snapshot's rows and for an incremental read's changes alike."""
    text_kib = sum(len(json.dumps(r)) + 1 for r in big_rows().to_pylist()) // 1024
    baseline, one = peak_kib(big, f"scan s.big {read} --format jsonl --limit 1 | wc -l")
    assert one == "1"
    peak, count = peak_kib(big, f"scan s.big {read} --format jsonl | wc -l")
    assert count == str(BIG_ROWS)
    assert text_kib > 60_000
    assert peak < baseline + text_kib / 3, (peak, baseline, text_kib)


# ---- --output - ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_output_dash_is_stdout_in_the_format_given(small: Path, fmt: str) -> None:
    target = small.parent / f"rows.{fmt}"
    run(small, "scan", "s.small", "--output", target)
    dashed = run(small, "scan", "s.small", "--output", "-", "--format", fmt).stdout
    plain = run(small, "scan", "s.small", "--format", fmt).stdout
    if fmt == "parquet":
        expected = pq.read_table(target)
        assert pq.read_table(io.BytesIO(dashed)).equals(expected)
        assert pq.read_table(io.BytesIO(plain)).equals(expected) and expected.num_rows == 250
    else:
        assert dashed == plain == target.read_bytes()
        assert len(dashed.decode().splitlines()) == 250 + (fmt == "csv")


def test_booleans_are_lowercase_in_every_format(small: Path) -> None:
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(run(small, "scan", "s.small", "-f", "csv").stdout.decode()))}
    assert rows["10"]["ok"] == "true" and rows["7"]["ok"] == "false" and rows["0"]["amount"] == ""
    table = run(small, "scan", "s.small", "--where", "id = 10").stdout.decode().splitlines()
    assert table[0].split() == ["id", "name", "ok", "amount", "dt"]
    assert table[1].split() == ["10", "n10", "true", "2.50", "2024-01-02"]
    assert json.loads(run(small, "scan", "s.small", "--where", "id = 7", "-f", "json").stdout)[0]["ok"] is False


# ---- a terminal --------------------------------------------------------------------------------------
def terminal(wh: Path, *args: str) -> Any:
    from test_terminal import in_terminal  # tests/cli is on sys.path (pytest's rootdir-less import)

    (wh.parent / "home").mkdir(exist_ok=True)
    return in_terminal(["-w", str(wh), *args], wh.parent)


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


def test_a_terminal_shows_the_first_100_rows_and_says_so(small: Path) -> None:
    session = terminal(small, "scan", "s.small", "--select", "id,name")
    assert session.exit_code == 0, session.text
    assert len(table_rows(session.text)) == 100
    assert "first 100 rows; --limit N for more, --limit 0 for all" in session.text
    # the progress bar drew while reading, and was gone before the table
    assert b"\x1b[?25l" in session.output and session.output.index(b"\x1b[?25h") < session.output.index("┏".encode())

    every = terminal(small, "scan", "s.small", "--select", "id,name", "--limit", "0")
    assert every.exit_code == 0 and len(table_rows(every.text)) == 250 and "first 100" not in every.text
    five = terminal(small, "scan", "s.small", "--limit", "5")
    assert five.exit_code == 0 and len(table_rows(five.text)) == 5 and "first 100" not in five.text


def test_parquet_is_refused_on_a_terminal(small: Path) -> None:
    session = terminal(small, "scan", "s.small", "--format", "parquet")
    assert session.exit_code == 2 and "refusing to write Parquet to a terminal" in session.text
    assert "PAR1" not in session.text
    assert b"\x1b[?25l" not in session.output  # refused before any progress bar was drawn


# ---- output for scripts --------------------------------------------------------------------------------
def test_plain_listing_starts_with_its_header(small: Path) -> None:
    lines = run(small, "snapshots", "s.small").stdout.decode().splitlines()
    assert lines[0].split()[:3] == ["snapshot_id", "schema_id", "commit_kind"]
    assert [line.split()[0] for line in lines[1:]] == ["3", "2", "1"]  # tail -n +2: exactly the rows


def test_plain_table_columns_line_up_when_a_later_split_is_wider(tmp_path: Path) -> None:
    """The first split holds short values, a later one a long value: every row's columns
    start where the header's do (the widths come from all the rows of a small table)."""
    wh = tmp_path / "wh"
    t = Table.locate("s.wide", warehouse=str(wh))
    create(t, "id BIGINT, note STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "1"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "note": ["a", "bb"], "dt": ["2024-01-01"] * 2}))
    t.write(pa.table({"id": pa.array([3], pa.int64()), "note": ["a-much-longer-note"], "dt": ["2024-01-02"]}))
    lines = run(wh, "scan", "s.wide").stdout.decode().splitlines()
    starts = [[m.start() for m in re.finditer(r"\S+", line)] for line in lines]
    assert [line.split() for line in lines] == [["id", "note", "dt"], ["1", "a", "2024-01-01"],
                                               ["2", "bb", "2024-01-01"], ["3", "a-much-longer-note", "2024-01-02"]]
    assert all(s == starts[0] for s in starts), lines
    assert starts[0] == [0, 4, 4 + len("a-much-longer-note") + 2]


def test_lists_are_one_item_per_line_or_row(small: Path) -> None:
    bucket = next((small / "s.db" / "small" / "dt=2024-01-01").glob("bucket-*"))
    junk = sorted(str(bucket / f"junk-{i}") for i in range(3))
    for path in junk:
        Path(path).write_text("x")
    args = ("remove-orphan-files", "s.small", "--older-than", "0s", "--force", "--dry-run")
    rows = list(csv.DictReader(io.StringIO(run(small, *args, "-f", "csv").stdout.decode())))
    assert [r["paths"] for r in rows] == junk
    assert all(r["files_deleted"] == "3" and r["dry_run"] == "true" and r["table"] == "s.small" for r in rows)
    plain = run(small, *args).stdout.decode().splitlines()
    assert [line.split()[1] for line in plain if line.startswith("paths")] == junk
    assert json.loads(run(small, *args, "-f", "json").stdout)["paths"] == junk
    for path in junk:
        os.unlink(path)


def test_files_takes_partition_and_limit(small: Path) -> None:
    every = json.loads(run(small, "files", "s.small", "-f", "json").stdout)
    assert len(every) == 6  # 3 partitions x 2 buckets
    one = json.loads(run(small, "files", "s.small", "--partition", "dt=2024-01-02", "-f", "json").stdout)
    assert one == [f for f in every if f["partition"] == {"dt": "2024-01-02"}] and len(one) == 2
    two = json.loads(run(small, "files", "s.small", "-p", "dt=2024-01-01", "-p", "dt=2024-01-03", "-f", "json").stdout)
    assert two == [f for f in every if f["partition"] != {"dt": "2024-01-02"}]
    assert json.loads(run(small, "files", "s.small", "--limit", "3", "-f", "json").stdout) == every[:3]
    lines = run(small, "files", "s.small", "--limit", "1", "-f", "csv").stdout.decode().splitlines()
    assert len(lines) == 2
    wrong = run(small, "files", "s.small", "--partition", "day=1", check=False)
    assert wrong.returncode == 2 and b"not a partition column" in wrong.stderr
