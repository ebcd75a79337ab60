"""The local engine's streamed write and streamed ``scan --output`` on real tables under tmp_path.

The local engine routes the input batch by batch into ``core.write_buffer`` (spilling to disk
past ``write-buffer-size``), then writes group by group. Expectations are independent of that
code: the files of a reference engine that writes the whole input at once (every row
prepared, grouped by ``core.rows.group_indices`` sorted by key, one kernel call per group),
a last-row-per-key model in plain Python, and the Arrow memory pool's high-water mark
measured in fresh processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from core.commit import CommitMessage
from core.engines import EngineSettings
from core.engines.local import LocalEngine
from core.errors import InvalidDataError
from core.fileio import FileIO, join
from core.kernels.write import WriteJob, write_bucket
from core.ops.create import create
from core.ops.scan import plan, scan, scan_to_output
from core.ops.write import write, write_input
from core.rows import group_indices, prepare_rows
from core.sources import BATCH_ROWS, read_input
from core.table import Table
from core.write_buffer import WriteBuffer, route

ROOT = Path(__file__).resolve().parents[2]
LOCAL = EngineSettings(engine="local")
SCHEMA = "id BIGINT, dt STRING, v DOUBLE, s STRING, n INT"
SPILL = {"write-buffer-size": "64 kb"}  # far below every input here: the write streams and spills
NO_SPILL = {"write-buffer-spillable": "false"}


class WholeInputEngine(LocalEngine):
    """The reference: the whole input prepared and grouped at once, each group sorted by key
    (input order among equal keys), one kernel call per group."""

    def write(self, job: WriteJob, data: pa.Table, file_io: FileIO) -> tuple[list[CommitMessage], int]:
        prepared = prepare_rows(data, job.schema, job.row_kind_column)
        messages = []
        keys = job.schema.trimmed_primary_keys if job.schema.has_primary_key else []
        for values, bucket, indices in group_indices(prepared, job.schema):
            part = prepared if indices is None else prepared.take(pa.array(indices))
            if keys:  # Arrow's sort is stable: input order among equal keys
                part = part.take(pc.sort_indices(part, sort_keys=[(k, "ascending") for k in keys]))
            messages.append(write_bucket(job.task_for(values, bucket), part, file_io))
        return messages, data.num_rows


def write_reference(table: Table, data: pa.Table | str, **kwargs: Any) -> None:
    if isinstance(data, str):
        data = read_input(data, "csv" if data.endswith(".csv") else "parquet",
                          pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string()),
                                     pa.field("v", pa.float64()), pa.field("s", pa.string()),
                                     pa.field("n", pa.int32())]))
    write(table, data, engine=WholeInputEngine(), **kwargs)


# ---- helpers -------------------------------------------------------------------------------
def rows(n: int, seed: int, *, keys: int | None = None, days: int = 3, unique: bool = False) -> pa.Table:
    """n rows; ids drawn from ``keys`` values, so keys repeat (the merge engine folds them),
    or with ``unique`` a shuffled 0..n-1."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(n) if unique else rng.integers(0, keys or n, n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "dt": pa.array([f"2024-01-0{d + 1}" for d in (ids % days)]),
        "v": pa.array(rng.random(n)),
        "s": pa.array([f"s{x}" * (1 + x % 4) for x in rng.integers(0, 1000, n)]),
        "n": pa.array(np.where(rng.random(n) < 0.1, 0, rng.integers(0, 100, n)).astype(np.int32),
                      mask=rng.random(n) < 0.1),
    })


def make_table(tmp_path: Path, name: str, options: dict[str, str], *, primary_key: bool = True) -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(t, SCHEMA, primary_keys=["id", "dt"] if primary_key else [], partition_keys=["dt"],
           options={"bucket": "3", **options} if primary_key else {"bucket": "3", "bucket-key": "id", **options})
    return t


def bucket_files(table: Table) -> list[tuple[Any, ...]]:
    """Per split, in plan order: (partition, bucket, and per file its metadata that does not
    depend on names or clocks, and its rows)."""
    out = []
    for split in plan(table, table.latest_snapshot()).splits:
        files = []
        for f in split.files:
            content = pq.read_table(join(split.bucket_dir, f.file_name))
            files.append((f.row_count, f.min_key, f.max_key, f.min_sequence_number, f.max_sequence_number,
                          f.key_stats, f.value_stats, f.delete_row_count, f.level, f.file_size, content))
        out.append((split.partition, split.bucket, files))
    return out


def assert_same_files(a: Table, b: Table) -> None:
    fa, fb = bucket_files(a), bucket_files(b)
    assert [x[:2] for x in fa] == [x[:2] for x in fb]
    for (_, _, files_a), (_, _, files_b) in zip(fa, fb):
        assert len(files_a) == len(files_b)
        for x, y in zip(files_a, files_b):
            assert x[:-1] == y[:-1]
            assert x[-1].equals(y[-1])


def last_per_key(*inputs: pa.Table) -> list[dict[str, Any]]:
    """The deduplicate merge engine's answer: each key's last row, deletes (op = -D) removed."""
    state: dict[tuple, dict[str, Any]] = {}
    for data in inputs:
        for row in data.to_pylist():
            op = row.pop("op", "+I")
            if op == "-D":
                state.pop((row["id"], row["dt"]), None)
            else:
                state[(row["id"], row["dt"])] = row
    return sorted(state.values(), key=lambda r: (r["id"], r["dt"]))


def sorted_rows(data: pa.Table) -> list[dict[str, Any]]:
    return sorted(data.to_pylist(), key=lambda r: (r["id"], r["dt"]))


def read_csv(path: str) -> pa.Table:
    return pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types={"dt": pa.string()}))


def parquet_file(tmp_path: Path, name: str, data: pa.Table) -> str:
    path = str(tmp_path / f"{name}.parquet")
    pq.write_table(data, path, row_group_size=20_000)
    return path


# ---- the write -----------------------------------------------------------------------------
def test_a_spilled_write_writes_the_files_of_the_in_memory_write(tmp_path: Path) -> None:
    data = rows(3 * BATCH_ROWS + 1234, seed=1, keys=60_000)
    path = parquet_file(tmp_path, "in", data)
    spilled, held = make_table(tmp_path, "spilled", SPILL), make_table(tmp_path, "held", NO_SPILL)
    whole = make_table(tmp_path, "whole", {})
    r1 = write_input(spilled, path, engine_settings=LOCAL)
    r2 = write_input(held, path, engine_settings=LOCAL)
    write_reference(whole, path)
    assert r1.rows_written == r2.rows_written == data.num_rows
    assert_same_files(spilled, whole)
    assert_same_files(held, whole)
    assert sorted_rows(scan(spilled, engine_settings=LOCAL)) == last_per_key(data)
    # a second write continues each bucket's sequence numbers the same way
    more = rows(BATCH_ROWS + 99, seed=2, keys=60_000)
    more_path = parquet_file(tmp_path, "more", more)
    write_input(spilled, more_path, engine_settings=LOCAL)
    write_reference(whole, more_path)
    assert_same_files(spilled, whole)
    assert sorted_rows(scan(spilled, engine_settings=LOCAL)) == last_per_key(data, more)


def test_unique_keys_in_random_order_are_written_in_key_order(tmp_path: Path) -> None:
    data = rows(2 * BATCH_ROWS + 11, seed=11, unique=True)
    spilled, whole = make_table(tmp_path, "spilled", SPILL), make_table(tmp_path, "whole", {})
    write(spilled, data, engine_settings=LOCAL)
    write_reference(whole, data)
    assert_same_files(spilled, whole)
    for _, _, files in bucket_files(spilled):
        ids = files[0][-1].column("_KEY_id").to_pylist()
        assert ids == sorted(ids)


def test_a_spilled_write_of_an_arrow_table_and_of_deletes(tmp_path: Path) -> None:
    data = rows(2 * BATCH_ROWS + 7, seed=3, keys=50_000)
    deletes = data.slice(1000, BATCH_ROWS + 5).append_column("op", pa.array(["-D"] * (BATCH_ROWS + 5)))
    spilled, whole = make_table(tmp_path, "spilled", SPILL), make_table(tmp_path, "whole", {})
    write(spilled, data, engine_settings=LOCAL)
    write(spilled, deletes, row_kind_column="op", engine_settings=LOCAL)
    write_reference(whole, data)
    write_reference(whole, deletes, row_kind_column="op")
    assert_same_files(spilled, whole)
    assert sorted_rows(scan(spilled, engine_settings=LOCAL)) == last_per_key(data, deletes)


def test_a_spilled_append_table_write(tmp_path: Path) -> None:
    data = rows(2 * BATCH_ROWS + 500, seed=4)
    path = parquet_file(tmp_path, "in", data)
    spilled = make_table(tmp_path, "spilled", SPILL, primary_key=False)
    whole = make_table(tmp_path, "whole", {}, primary_key=False)
    write_input(spilled, path, engine_settings=LOCAL)
    write_reference(whole, path)
    assert_same_files(spilled, whole)
    assert sorted_rows(scan(spilled, engine_settings=LOCAL)) == sorted_rows(data)


def test_a_spilled_csv_write(tmp_path: Path) -> None:
    data = rows(BATCH_ROWS + 321, seed=5, keys=30_000)
    path = str(tmp_path / "in.csv")
    pacsv.write_csv(data, path)
    spilled, whole = make_table(tmp_path, "spilled", SPILL), make_table(tmp_path, "whole", {})
    write_input(spilled, path, engine_settings=LOCAL)
    write_reference(whole, path)
    assert_same_files(spilled, whole)
    assert sorted_rows(scan(spilled, engine_settings=LOCAL)) == last_per_key(read_csv(path))


def test_bad_input_in_a_late_batch_leaves_nothing_behind(tmp_path: Path) -> None:
    data = rows(3 * BATCH_ROWS, seed=6)
    bad_row = 2 * BATCH_ROWS + 17  # 0-based, in the third batch
    ids = data.column("id").to_pylist()
    ids[bad_row] = None
    data = data.set_column(0, "id", pa.array(ids, pa.int64()))
    path = parquet_file(tmp_path, "bad", data)
    t = make_table(tmp_path, "t", SPILL)
    with pytest.raises(InvalidDataError, match=rf"null in primary key column 'id' \(input row {bad_row + 1}\)"):
        write_input(t, path, engine_settings=LOCAL)
    assert t.latest_snapshot() is None
    data_files = [f for _, _, files in os.walk(t.path) for f in files if f.endswith(".parquet")]
    assert data_files == []


@pytest.mark.parametrize("options", [{}, SPILL], ids=["routed-whole", "streamed"])
def test_the_first_bad_row_is_reported_when_a_later_batch_is_unreadable(tmp_path: Path,
                                                                       options: dict[str, str]) -> None:
    """A CSV input of two 8 MB blocks, routed whole or batch by batch on the pool: a null key
    in the first block is reported, not the undecodable value of the second."""
    data = rows(160_000, seed=13)
    path = tmp_path / "in.csv"
    pacsv.write_csv(data, str(path))
    assert path.stat().st_size > 8 << 20  # two blocks (core.sources._CSV_BLOCK)
    lines = path.read_text().splitlines()
    lines[6] = "," + lines[6].split(",", 1)[1]  # input row 6: no id
    cells = lines[159_000].split(",")
    cells[2] = "not-a-number"  # v DOUBLE, in the second block
    lines[159_000] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    t = make_table(tmp_path, "t", options)
    with pytest.raises(InvalidDataError, match=r"null in primary key column 'id' \(input row 6\)"):
        write_input(t, str(path), engine_settings=LOCAL)
    lines[6] = "1," + lines[6][1:]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidDataError, match=r"row 159000 \(line 159001\), column v"):
        write_input(t, str(path), engine_settings=LOCAL)
    assert t.latest_snapshot() is None


def test_an_empty_input_file_is_still_checked_against_the_table(tmp_path: Path) -> None:
    t = make_table(tmp_path, "t", SPILL)
    empty = rows(10, seed=10).slice(0, 0)
    result = write_input(t, parquet_file(tmp_path, "empty", empty), engine_settings=LOCAL)
    assert result.rows_written == 0 and result.files_added == 0
    extra = empty.append_column("other", pa.array([], pa.int32()))
    with pytest.raises(InvalidDataError, match="input column 'other' is not in table"):
        write_input(t, parquet_file(tmp_path, "extra", extra), engine_settings=LOCAL)
    csv = tmp_path / "empty.csv"
    csv.write_text("id,dt,v,s,n,other\n")
    with pytest.raises(InvalidDataError, match="input column 'other' is not in table"):
        write_input(t, str(csv), engine_settings=LOCAL)


def test_an_input_within_half_the_buffer_is_routed_as_one_batch(tmp_path: Path) -> None:
    """An Arrow table, or an input file read batch by batch, of up to ``whole_batch_bytes``
    comes as one batch (one routing take, groups already in key order); a larger one in
    BATCH_ROWS slices, or in the batches it is read in."""
    from core.engines.local import WHOLE_BATCH_BYTES, _slices, _whole_or_streamed, whole_batch_bytes
    from core.sources import InputFile

    assert whole_batch_bytes(1 << 40) == WHOLE_BATCH_BYTES
    assert whole_batch_bytes(64 << 10) == 32 << 10
    data = rows(2 * BATCH_ROWS + 7, seed=12)
    assert [b.num_rows for b in _slices(data, data.nbytes)] == [data.num_rows]
    assert [b.num_rows for b in _slices(data, data.nbytes - 1)] == [BATCH_ROWS, BATCH_ROWS, 7]
    path = parquet_file(tmp_path, "in", data)
    read = list(InputFile(path, "parquet").batches())
    assert [b.num_rows for b in read] == [BATCH_ROWS, BATCH_ROWS, 7]
    size = sum(b.nbytes for b in read)
    whole = list(_whole_or_streamed(iter(read), size))
    assert [b.num_rows for b in whole] == [data.num_rows] and whole[0].equals(data)
    assert [b.num_rows for b in _whole_or_streamed(iter(read), size - 1)] == [BATCH_ROWS, BATCH_ROWS, 7]
    # batches of different schemas (files of one glob) are not put together
    other = read[2].rename_columns([c.upper() for c in read[2].column_names])
    assert [b.column_names for b in _whole_or_streamed(iter(read[:2] + [other]), size)] == \
        [data.column_names, data.column_names, other.column_names]
    assert list(_whole_or_streamed(iter([]), size)) == []


# ---- the buffer ------------------------------------------------------------------------------
@pytest.mark.parametrize("primary_key", [True, False])
def test_the_buffer_hands_out_groups_in_first_appearance_order(tmp_path: Path, primary_key: bool) -> None:
    """Rows of a group come batch by batch in input order; within a batch, a table keyed by one
    integer column has them in key order (stably: input order among equal keys), so that the
    group of a one-batch write needs no sort of its own; an append table keeps input order."""
    t = make_table(tmp_path, "t", {}, primary_key=primary_key)
    schema = t.schema
    data = rows(5000, seed=7, days=3)
    days = data.column("dt").to_pylist()
    data = data.set_column(1, "dt", pa.array(["2024-01-09" if i < 3 else d for i, d in enumerate(days)]))
    if primary_key:  # repeated keys inside a batch, to see that equal keys keep input order
        data = data.set_column(0, "id", pa.array(data.column("id").to_numpy() % 900))
    buffer = WriteBuffer(schema, 20_000, str(tmp_path))
    for start in range(0, data.num_rows, 700):
        buffer.add(route(prepare_rows(data.slice(start, 700), schema), schema))
    assert buffer.spilled_bytes > 0
    whole = prepare_rows(data, schema)
    expected = [(values, bucket) for values, bucket, _ in group_indices(whole, schema)]
    assert buffer.groups() == expected
    assert expected[0][0] == ("2024-01-09",)
    ids = whole.column("id").to_numpy()
    for (values, bucket, indices) in group_indices(whole, schema):
        if primary_key:  # by batch, then key, then input position
            indices = indices[np.lexsort((indices, ids[indices], indices // 700))]
        assert buffer.take((values, bucket)).equals(whole.take(pa.array(indices)))


# ---- scan --output ---------------------------------------------------------------------------
@pytest.mark.parametrize("ext", ["parquet", "csv", "jsonl"])
def test_scan_output_written_split_by_split_holds_the_scan(tmp_path: Path, ext: str) -> None:
    t = make_table(tmp_path, "t", {})
    data = rows(20_000, seed=8, keys=15_000)
    write(t, data, engine_settings=LOCAL)
    out = str(tmp_path / f"out.{ext}")
    result = scan_to_output(t, out, where="v > 0.5", select=["id", "dt", "v"], engine_settings=LOCAL)
    expected = scan(t, where="v > 0.5", select=["id", "dt", "v"], engine_settings=LOCAL)
    assert result.rows == expected.num_rows > 0
    assert result.bytes == os.path.getsize(out)
    if ext == "parquet":
        got = pq.read_table(out)
        assert got.schema == expected.schema
    elif ext == "csv":
        got = read_csv(out)
    else:
        got = pa.Table.from_pylist([json.loads(line) for line in Path(out).read_text().splitlines()])
    assert sorted_rows(got) == sorted_rows(expected)
    limited = scan_to_output(t, out, limit=123, engine_settings=LOCAL)
    assert limited.rows == 123
    empty = scan_to_output(t, out, where="v > 2", engine_settings=LOCAL)
    assert empty.rows == 0 and os.path.getsize(out) == empty.bytes


# ---- memory ----------------------------------------------------------------------------------
MEASURE = """
import json, sys
import pyarrow as pa
from core.commit import CommitMessage
from core.engines import EngineSettings
from core.engines.local import LocalEngine
from core.ops.create import create
from core.ops.scan import scan_to_output
from core.ops.write import write_input
from core.table import Table
path, wh, step, buckets = sys.argv[1:5]
t = Table.locate("db.t", warehouse=wh)
if step == "write":
    create(t, "id BIGINT, dt STRING, v DOUBLE, s STRING, n INT", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": buckets, "write-buffer-size": "4 mb"})
    write_input(t, path, engine_settings=EngineSettings(engine="local"))
else:
    scan_to_output(t, wh + "/out.parquet", engine_settings=EngineSettings(engine="local"))
print(json.dumps({"peak": pa.default_memory_pool().max_memory()}))
"""


def arrow_peak(*args: str) -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT), LAKECTL_LOCAL_THREADS="2")
    out = subprocess.run([sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak"]


@pytest.mark.slow
def test_streamed_write_and_scan_memory_follows_the_buckets_not_the_input(tmp_path: Path) -> None:
    """The Arrow pool's high-water mark of a streamed write (4 MB write buffer) and of
    ``scan --output`` for an input, and for one 4x larger over 4x the buckets (buckets of the
    same size): both stay well under the input; the write's does not grow with it (the scan
    gathers splits into row groups of a few MB, so its small case sits below that)."""
    peaks: dict[str, list[int]] = {"write": [], "scan": []}
    sizes = []
    for n, buckets in ((400_000, 2), (1_600_000, 8)):
        data = rows(n, seed=9, keys=n)
        sizes.append(data.nbytes)
        path = parquet_file(tmp_path, f"in-{n}", data)
        wh = str(tmp_path / f"wh-{n}")
        peaks["write"].append(arrow_peak(path, wh, "write", str(buckets)))
        peaks["scan"].append(arrow_peak(path, wh, "scan", str(buckets)))
    small, large = peaks["write"]
    assert large < 1.5 * small, (peaks, sizes)
    assert large < 0.5 * sizes[1], (peaks, sizes)
    assert peaks["scan"][1] < 0.5 * sizes[1], (peaks, sizes)


@pytest.mark.parametrize("width", [8, 200_000])
def test_a_csv_inputs_column_names_come_from_its_header_whatever_its_length(tmp_path: Path, width: int) -> None:
    """The names are read from a small first block (not the 8 MB one the rows are read in);
    a header longer than that block still gives every name, as pyarrow's own reader of the
    whole file sees them."""
    from core.sources import InputFile

    names = [f"c{i}_" + "x" * width for i in range(3)]
    path = tmp_path / "in.csv"
    rows = "".join(f"{i},{i + 1},{i + 2}\n" for i in range(100_000))  # rows past the small block
    path.write_text(",".join(names) + "\n" + rows)
    hint = pa.schema([(n, pa.int64()) for n in names])
    assert InputFile(str(path), "csv", hint).column_names() == names == pacsv.read_csv(path).column_names
    assert sum(b.num_rows for b in InputFile(str(path), "csv", hint).batches()) == 100_000
