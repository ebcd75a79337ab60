"""Row-group pruning of ``scan --where`` (core.kernels.data_file.matching_row_groups, and
core.kernels.key_read._admitted_groups for key conditions read across splits) and the
``parquet.block.size`` / ``parquet.page.size`` options that shape the row groups.

Expected rows come from Python filters over the rows each test wrote; expected row groups
from the Parquet footers of the data files (row counts and, for the kept groups, the
written ids a hand-checked range covers). The model tests (tests/model/test_table_model.py,
kinds ``*_tiny_row_groups``) check the merge-safety rule on random histories.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import core.kernels.data_file as read_kernel
import core.kernels.key_read as key_read
from core.errors import UsageError
from core.evolution import RenameColumn, UpdateColumnType
from core.kernels.write import row_group_rows
from core.ops.alter import alter
from core.ops.create import create
from core.table import Table
from core.types import parse_type


def make_table(tmp_path: Path, schema: str, *, primary_keys: tuple[str, ...] = (),
               options: dict[str, str] | None = None) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, schema, primary_keys=list(primary_keys), options=options or {})
    return t


class RowGroupSpy:
    """Counts the row groups each read kept, out of the groups of the files it opened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kept = self.total = 0
        real = read_kernel.matching_row_groups

        def spy(parquet: pq.ParquetFile, *args: Any) -> list[int]:
            groups = real(parquet, *args)
            self.kept += len(groups)
            self.total += parquet.metadata.num_row_groups
            return groups

        monkeypatch.setattr(read_kernel, "matching_row_groups", spy)
        # key-bounded reads across splits choose a file's row groups themselves (key_read)
        real_admitted = key_read._admitted_groups

        def admitted_spy(path: str, *args: Any) -> list[int] | None:
            groups = real_admitted(path, *args)
            if groups is not None:
                self.kept += len(groups)
                self.total += pq.read_metadata(path).num_row_groups
            return groups

        monkeypatch.setattr(key_read, "_admitted_groups", admitted_spy)


def data_files(t: Table) -> list[pq.FileMetaData]:
    return [pq.ParquetFile(p).metadata for p in sorted(Path(t.path).rglob("bucket-*/*.parquet"))]


def rows(table: pa.Table) -> list[dict]:
    """Rows by id; NaN as a string, so that equal rows compare equal."""
    nan = lambda v: "NaN" if isinstance(v, float) and v != v else v  # noqa: E731
    return sorted(({k: nan(v) for k, v in r.items()} for r in table.to_pylist()), key=lambda r: r["id"])


# ---- writing row groups ----------------------------------------------------------------------
def test_row_group_rows_turns_bytes_into_rows() -> None:
    table = pa.table({"x": pa.array(range(1000), pa.int64())})  # 8000 bytes of Arrow data
    assert row_group_rows(table, 800) == 100
    assert row_group_rows(table, 1) == 1
    assert row_group_rows(table, 8000) == 1000
    assert row_group_rows(table, 128 << 20) == 1000
    assert row_group_rows(table.slice(0, 0), 10) == 1


def test_block_size_splits_files_into_row_groups(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING", primary_keys=("id",),
                   options={"bucket": "1", "parquet.block.size": "4kb"})
    t.write(pa.table({"id": pa.array(range(5000), pa.int64()), "v": [f"value-{i:05d}" for i in range(5000)]}))
    (md,) = data_files(t)
    assert md.num_rows == 5000
    assert md.num_row_groups > 20
    # groups are cut at the Arrow size of the written columns (keys, seq, kind, values)
    assert max(md.row_group(g).num_rows for g in range(md.num_row_groups)) < 5000 // 20

    # below KEY_SORTED_ROW_GROUP_ROWS and the default block size: one group
    default = make_table(tmp_path / "d", "id BIGINT NOT NULL, v STRING", primary_keys=("id",), options={"bucket": "1"})
    default.write(pa.table({"id": pa.array(range(4000), pa.int64()), "v": [f"value-{i:05d}" for i in range(4000)]}))
    assert [md.num_row_groups for md in data_files(default)] == [1]


@pytest.mark.parametrize("option", ["parquet.block.size", "parquet.page.size"])
@pytest.mark.parametrize("value", ["0", "0 mb", "lots"])
def test_bad_parquet_sizes_are_refused(tmp_path: Path, option: str, value: str) -> None:
    with pytest.raises(UsageError, match=option):
        make_table(tmp_path, "id BIGINT", options={option: value})


# ---- reading fewer row groups ----------------------------------------------------------------
def test_key_range_reads_only_the_row_groups_holding_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING", primary_keys=("id",),
                   options={"bucket": "1", "parquet.block.size": "4kb", "write-only": "true"})
    t.write(pa.table({"id": pa.array(range(5000), pa.int64()), "v": ["old"] * 5000}))
    t.write(pa.table({"id": pa.array(range(0, 5000, 2), pa.int64()), "v": ["new"] * 2500}))  # a second sorted run
    spy = RowGroupSpy(monkeypatch)

    got = rows(t.scan(where="id >= 1000 AND id < 1010"))

    assert got == [{"id": i, "v": "new" if i % 2 == 0 else "old"} for i in range(1000, 1010)]
    groups = sum(md.num_row_groups for md in data_files(t))
    assert spy.total == groups and groups > 40
    assert spy.kept <= 4  # at most two groups of each run straddle the ten keys


def test_value_condition_skips_nothing_before_a_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The newest record of key 7 says 'new'; skipping its row group for v = 'old' would let
    the older 'old' record through."""
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING", primary_keys=("id",),
                   options={"bucket": "1", "parquet.block.size": "1b", "write-only": "true"})
    t.write(pa.table({"id": pa.array(range(10), pa.int64()), "v": ["old"] * 10}))
    t.write(pa.table({"id": pa.array([7], pa.int64()), "v": ["new"]}))
    spy = RowGroupSpy(monkeypatch)

    assert [r["id"] for r in rows(t.scan(where="v = 'old'"))] == [0, 1, 2, 3, 4, 5, 6, 8, 9]
    assert spy.total == 0  # two sorted runs and a value condition: files are read whole


def test_value_condition_prunes_a_single_sorted_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = make_table(tmp_path, "id BIGINT NOT NULL, v INT", primary_keys=("id",),
                   options={"bucket": "1", "parquet.block.size": "1kb"})
    t.write(pa.table({"id": pa.array(range(2000), pa.int64()), "v": pa.array(range(2000), pa.int32())}))
    spy = RowGroupSpy(monkeypatch)

    assert [r["id"] for r in rows(t.scan(where="v BETWEEN 100 AND 102"))] == [100, 101, 102]
    assert spy.total > 20 and spy.kept <= 2


TYPED_SCHEMA = ("id BIGINT, t TINYINT, s STRING, b BOOLEAN, d DATE, dec DECIMAL(18, 4), big DECIMAL(38, 2), "
                "ts TIMESTAMP(6), ltz TIMESTAMP_LTZ(3), bin BYTES, f DOUBLE")


def typed_rows(n: int) -> pa.Table:
    epoch = dt.datetime(2024, 1, 1)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "t": pa.array([i % 100 - 50 if i % 17 else None for i in range(n)], pa.int8()),
        "s": [f"k{i:04d}" if i % 13 else None for i in range(n)],
        "b": [i % 500 < 250 for i in range(n)],
        "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i // 10) for i in range(n)],
        "dec": pa.array([Decimal(i) / 4 for i in range(n)], pa.decimal128(18, 4)),
        "big": pa.array([Decimal(-i) for i in range(n)], pa.decimal128(38, 2)),
        "ts": pa.array([epoch + dt.timedelta(seconds=i) for i in range(n)], pa.timestamp("us")),
        "ltz": pa.array([epoch + dt.timedelta(minutes=i) for i in range(n)], pa.timestamp("ms", tz="UTC")),
        "bin": [(i * 40).to_bytes(2, "big") for i in range(n)],
        "f": [float("nan") if i % 7 == 0 else i / 3 for i in range(n)],
    })


UTC = dt.timezone.utc
# (condition, its meaning on a written row, whether the written order lets stats skip groups)
TYPED_FILTERS: list[tuple[str, Callable[[dict], bool], bool]] = [
    ("t < -45", lambda r: r["t"] is not None and r["t"] < -45, True),  # groups of ~24 rows, period 100
    ("t IS NULL", lambda r: r["t"] is None, False),
    ("s >= 'k0990' AND s < 'k1000'", lambda r: r["s"] is not None and "k0990" <= r["s"] < "k1000", True),
    ("s LIKE 'k012%'", lambda r: r["s"] is not None and r["s"].startswith("k012"), True),
    ("b = false AND id < 600", lambda r: not r["b"] and r["id"] < 600, True),
    ("d = DATE '2024-01-05'", lambda r: r["d"] == dt.date(2024, 1, 5), True),
    ("dec > 199.5", lambda r: r["dec"] > Decimal("199.5"), True),
    ("big BETWEEN -12 AND -10", lambda r: -12 <= r["big"] <= -10, True),
    ("ts < TIMESTAMP '2024-01-01 00:00:03'", lambda r: r["ts"] < dt.datetime(2024, 1, 1, 0, 0, 3), True),
    ("ltz >= TIMESTAMP '2024-01-01 16:38:00'", lambda r: r["ltz"] >= dt.datetime(2024, 1, 1, 16, 38, tzinfo=UTC),
     True),
    ("bin >= 'x'", lambda r: r["bin"] >= b"x", True),  # 'x' is 0x78: ids from 768 on
    ("f <> 1.0 AND id < 30", lambda r: r["id"] < 30 and r["f"] != 1.0, True),  # "NaN" <> 1.0 too
    ("f = 2.0", lambda r: r["f"] == 2.0, False),  # float stats are not used (NaN)
]


@pytest.mark.parametrize("where,keep,prunes", TYPED_FILTERS, ids=[w for w, _, _ in TYPED_FILTERS])
def test_typed_conditions_on_an_append_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str,
                                             keep: Callable[[dict], bool], prunes: bool) -> None:
    t = make_table(tmp_path, TYPED_SCHEMA, options={"parquet.block.size": "2kb"})
    data = typed_rows(1000)
    t.write(data)
    spy = RowGroupSpy(monkeypatch)

    got = rows(t.scan(where=where))

    assert got == [r for r in rows(data) if keep(r)]
    assert spy.total > 10
    if prunes:
        assert spy.kept < spy.total / 2, "a range of an ordered column skips row groups"
    else:
        assert spy.kept == spy.total


def test_widened_and_renamed_columns_keep_their_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Old files hold ``n`` as INT under the name ``old``: stats of a renamed column are found by
    field id, and stats in the old type are not used (the group is kept)."""
    t = make_table(tmp_path, "id BIGINT, old INT", options={"parquet.block.size": "1kb"})
    t.write(pa.table({"id": pa.array(range(1000), pa.int64()), "old": pa.array(range(1000), pa.int32())}))
    alter(t, [RenameColumn("old", "n"), UpdateColumnType("n", parse_type("BIGINT"))])
    t.write(pa.table({"id": pa.array(range(1000, 2000), pa.int64()), "n": pa.array(range(1000, 2000), pa.int64())}))
    spy = RowGroupSpy(monkeypatch)

    got = rows(t.scan(where="n >= 990 AND n < 1010"))

    assert got == [{"id": i, "n": i} for i in range(990, 1010)]
    files = data_files(t)
    old_groups = sum(md.num_row_groups for md in files if "old" in md.schema.names)
    new_groups = sum(md.num_row_groups for md in files if "n" in md.schema.names)
    assert old_groups > 10 and new_groups > 10
    assert spy.total == old_groups + new_groups
    assert spy.kept < old_groups + new_groups  # the new file's groups are pruned
    assert spy.kept >= old_groups  # the old file's INT stats are not trusted for a BIGINT read


# ---- primary-key files: small row groups, and lookups that prune them --------------------------
def test_key_sorted_files_get_small_row_groups(tmp_path: Path) -> None:
    """A primary-key table's files hold at most KEY_SORTED_ROW_GROUP_ROWS rows per group, with
    the default block size; an append table's file stays one group."""
    from core.kernels.write import KEY_SORTED_ROW_GROUP_ROWS

    n = 3 * KEY_SORTED_ROW_GROUP_ROWS + 5
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": ["x"] * n})
    keyed = make_table(tmp_path / "k", "id BIGINT NOT NULL, v STRING", primary_keys=("id",), options={"bucket": "1"})
    keyed.write(data)
    plain = make_table(tmp_path / "a", "id BIGINT, v STRING", options={"bucket": "1", "bucket-key": "id"})
    plain.write(data)
    assert [md.num_row_groups for md in data_files(keyed)] == [4]
    assert [[md.row_group(g).num_rows for g in range(4)] for md in data_files(keyed)] == \
        [[KEY_SORTED_ROW_GROUP_ROWS] * 3 + [5]]
    assert [md.num_row_groups for md in data_files(plain)] == [1]


def test_lookup_reads_only_the_row_groups_that_can_hold_its_keys(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from core.kernels.write import KEY_SORTED_ROW_GROUP_ROWS

    n = 8 * KEY_SORTED_ROW_GROUP_ROWS
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING", primary_keys=("id",),
                   options={"bucket": "1", "write-only": "true"})
    t.write(pa.table({"id": pa.array(range(n), pa.int64()), "v": ["old"] * n}))
    t.write(pa.table({"id": pa.array(range(0, n, 3), pa.int64()), "v": ["new"] * len(range(0, n, 3))}))
    t.delete(f"id = {n - 1}")  # a third run: the -D of the last key
    spy = RowGroupSpy(monkeypatch)
    wanted = [3, 4, n // 2, n - 1, n + 7]  # updated, not updated, middle, deleted, never written

    found = t.lookup([f"id={k}" for k in wanted])

    expected = {k: ("new" if k % 3 == 0 else "old") for k in wanted if k < n - 1}
    assert {r["id"]: r["v"] for r in found.rows.to_pylist()} == expected
    groups = sum(md.num_row_groups for md in data_files(t))
    assert spy.total == groups and groups >= 8 + 3
    assert spy.kept <= 2 * 3 + 1  # per run, the groups holding 3, n/2 and n-1 (min/max straddle no more)


@pytest.mark.parametrize("action", ["scan", "compact"])
def test_a_merge_reads_each_run_a_few_row_groups_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           action: str) -> None:
    """Scan and compaction of a bucket of two sorted runs read the big run's file in parts of
    about a batch (whole row groups), not the file at once: what a merge holds then follows the
    number of runs and the batch size, not the bucket. The rows are those of a dict model."""
    from core.kernels import stream_merge
    from core.kernels.write import KEY_SORTED_ROW_GROUP_ROWS

    n = 6 * KEY_SORTED_ROW_GROUP_ROWS
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING", primary_keys=("id",),
                   options={"bucket": "1", "write-only": "true"})
    t.write(pa.table({"id": pa.array(range(n), pa.int64()), "v": ["old"] * n}))
    t.write(pa.table({"id": pa.array(range(0, n, 5), pa.int64()), "v": ["new"] * len(range(0, n, 5))}))
    model = {i: ("new" if i % 5 == 0 else "old") for i in range(n)}
    monkeypatch.setattr(stream_merge, "BATCH_ROWS", 2 * KEY_SORTED_ROW_GROUP_ROWS)
    sizes: list[int] = []
    real = read_kernel.read_file

    def spy(*args: Any, **kwargs: Any) -> pa.Table:
        out = real(*args, **kwargs)
        sizes.append(out.num_rows)
        return out

    monkeypatch.setattr(read_kernel, "read_file", spy)
    if action == "compact":
        t.compact(full=True)
        monkeypatch.setattr(read_kernel, "read_file", real)
    got = {r["id"]: r["v"] for r in t.scan().to_pylist()}
    assert got == model
    assert max(sizes) <= 2 * KEY_SORTED_ROW_GROUP_ROWS and sum(sizes) == n + len(range(0, n, 5))
