"""The fast paths of small commits (bench/small_commits.py): numpy min/max for stats, the data
files' metadata against what pyarrow reads back from each file, the writer skipping its
thread pool for small groups, the throttled temp-folder sweep and the parsed-schema cache."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import binary_row, fileio, stats, tempdirs
from core.commit import base_entries
from core.engines import EngineSettings
from core.engines import local as local_engine
from core.evolution import SetOption
from core.fileio import join
from core.ops.create import create
from core.ops.scan import scan
from core.ops.write import write
from core.table import Table
from core.types import arrow_field, parse_type

LOCAL = EngineSettings(engine="local")
FACTOR = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def arrow_min_max(column: pa.ChunkedArray) -> tuple:
    """The expected (min, max): Arrow's own kernel, NaN, binary (as Java 1.0 writes them) and
    all-null columns unknown, a zero float bound widened to -0.0 (min) or 0.0 (max), which hold
    in Java's order whichever zero Arrow names, and timestamps as epoch nanos, as SimpleStats
    stores them."""
    if column.null_count == len(column) or pa.types.is_binary(column.type):
        return None, None
    if pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py():
        return None, None
    result = pc.min_max(column)
    if pa.types.is_timestamp(column.type):
        f = FACTOR[column.type.unit]
        return result["min"].cast(pa.int64()).as_py() * f, result["max"].cast(pa.int64()).as_py() * f
    if pa.types.is_floating(column.type):
        lo, hi = result["min"].as_py(), result["max"].as_py()
        return (-0.0 if lo == 0 else lo), (0.0 if hi == 0 else hi)
    return result["min"].as_py(), result["max"].as_py()


def chunked(values: list, arrow_type: pa.DataType, cuts: list[int]) -> pa.ChunkedArray:
    bounds = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    return pa.chunked_array([pa.array(values[a:b], arrow_type) for a, b in zip(bounds, bounds[1:])], arrow_type)


FLOATS = st.one_of(st.floats(allow_nan=True, width=64), st.sampled_from([0.0, -0.0, float("nan")]))
CASES = [
    (st.integers(-2**63, 2**63 - 1), pa.int64(), "BIGINT"),
    (st.integers(-2**31, 2**31 - 1), pa.int32(), "INT"),
    (st.integers(-128, 127), pa.int8(), "TINYINT"),
    (FLOATS, pa.float64(), "DOUBLE"),
    (st.floats(width=32, allow_nan=True), pa.float32(), "FLOAT"),
    (st.booleans(), pa.bool_(), "BOOLEAN"),
    (st.integers(-2**50, 2**50), pa.timestamp("us"), "TIMESTAMP(6)"),
    (st.integers(-2**50, 2**50), pa.timestamp("ms"), "TIMESTAMP(3)"),
    (st.integers(-2**60, 2**60), pa.timestamp("ns"), "TIMESTAMP(9)"),
]


@pytest.mark.parametrize("values_of, arrow_type, paimon", CASES, ids=[c[2] for c in CASES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_min_max_of_numeric_columns_is_arrows(values_of: st.SearchStrategy, arrow_type: pa.DataType, paimon: str,
                                              data: st.DataObject) -> None:
    values = data.draw(st.lists(values_of, min_size=1, max_size=40))
    nulls = data.draw(st.booleans())
    if nulls:
        values = values + [None]
    column = chunked(values, arrow_type, data.draw(st.lists(st.integers(0, 40), max_size=3)))
    lo, hi = stats._min_max(column, parse_type(paimon))
    want_lo, want_hi = arrow_min_max(column)
    # equal values, and for floats the same bits (-0.0 is not 0.0 in a BinaryRow)
    assert (repr(lo), repr(hi)) == (repr(want_lo), repr(want_hi))


# ---- data files against their own bytes ---------------------------------------------------
SCHEMA = ("id BIGINT, dt STRING, i INT, d DOUBLE, s STRING, ts TIMESTAMP(6), b BOOLEAN, "
          "dec DECIMAL(18, 4), ti TINYINT")


def rows(ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(ids)
    doubles = np.abs(rng.normal(size=n))  # zero is the minimum: Parquet's bound is -0.0 then
    doubles[rng.random(n) < 0.05] = 0.0
    doubles[rng.random(n) < 0.05] = -0.0
    doubles[ids % 500 == 0] = np.nan  # a few files hold a NaN
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "dt": pa.array([f"2024-01-0{1 + x % 3}" for x in ids]),
        "i": pa.array(rng.integers(-1000, 1000, n).astype(np.int32), mask=rng.random(n) < 0.1),
        "d": pa.array(doubles),
        "s": pa.array([None if x % 7 == 0 else f"s{x * 7919 % 1000}" for x in ids]),
        "ts": pa.array(rng.integers(0, 10**15, n), pa.int64()).cast(pa.timestamp("us")),
        "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
        "dec": pa.array(rng.integers(-10**9, 10**9, n), pa.int64()).cast(pa.decimal128(19, 0)).cast(
            pa.decimal128(18, 4)),
        "ti": pa.array(rng.integers(-100, 100, n).astype(np.int8)),
    })


def live_files(t: Table) -> list[tuple[str, Any]]:
    entries = base_entries(t.manifests(), t.latest_snapshot(), t.snapshots)
    return [(join(t.schema.bucket_dir(t.path, e.partition, e.bucket), e.file.file_name), e.file) for e in entries]


def test_each_data_files_metadata_is_what_pyarrow_reads_in_the_file(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
    ids = np.random.default_rng(1).permutation(3000)
    write(t, rows(ids, 2), engine_settings=LOCAL)
    write(t, rows(np.concatenate([ids[:300], np.arange(3000, 3100)]), 3), engine_settings=LOCAL)  # upsert
    deletes = rows(ids[300:450], 4).append_column("op", pa.array(["-D"] * 150))
    write(t, deletes, row_kind_column="op", engine_settings=LOCAL)
    fields = t.schema.fields
    types = [f.type for f in fields]
    key_type = [f.type for f in t.schema.key_fields]
    files = live_files(t)
    assert len(files) == 3 * 4 * 3  # three writes into 3 partitions x 4 buckets
    for path, meta in files:
        data = pq.read_table(path)
        assert meta.row_count == data.num_rows
        assert meta.file_size == os.path.getsize(path)
        # the values are pyarrow's reading of the file; from_columns only serialises them
        expected = [stats.ColumnStats(*arrow_min_max(data.column(f.name)), data.column(f.name).null_count)
                    for f in fields]
        assert meta.value_stats == stats.from_columns(expected, types), path
        key = data.column("_KEY_id")
        assert meta.key_stats == stats.from_columns([stats.ColumnStats(*arrow_min_max(key), 0)], key_type)
        seq = data.column("_SEQUENCE_NUMBER")
        assert (meta.min_sequence_number, meta.max_sequence_number) == arrow_min_max(seq)
        kinds = data.column("_VALUE_KIND").to_pylist()
        assert meta.delete_row_count == sum(k in (1, 3) for k in kinds)
        assert key.to_pylist() == sorted(key.to_pylist())  # key order, each key once
        assert len(set(key.to_pylist())) == data.num_rows
        assert meta.min_key == binary_row.encode([key[0].as_py()], key_type)
        assert meta.max_key == binary_row.encode([key[-1].as_py()], key_type)
    # the -D records were written as deletes
    assert sum(meta.delete_row_count for _, meta in files) == 150
    assert scan(t, engine_settings=LOCAL).num_rows == 3000 + 100 - 150


WIDE_SCHEMA = ("id BIGINT, k STRING, day DATE, ns TIMESTAMP(9), ms TIMESTAMP_LTZ(3), wide DECIMAL(30, 2), "
               "long_s STRING, bin BYTES, f FLOAT")


def wide_rows(ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "k": pa.array([f"k{x % 2}" for x in ids]),
        "day": pa.array(rng.integers(-1000, 20000, n).astype(np.int32), pa.int32()).cast(pa.date32()),
        "ns": pa.array(rng.integers(-10**17, 10**17, n), pa.int64()).cast(pa.timestamp("ns")),
        "ms": pa.array(rng.integers(0, 10**12, n), pa.int64()).cast(pa.timestamp("ms", "UTC")),
        "wide": pa.array(rng.integers(-10**15, 10**15, n), pa.int64()).cast(pa.decimal128(30, 0)).cast(
            pa.decimal128(30, 2)),
        # a few values past Parquet's statistics size (4 KiB): the footer has no bounds then
        "long_s": pa.array(["x" * (5000 if x % 50 == 0 else 1 + x % 9) + chr(0x4e00 + x % 300) for x in ids]),
        "bin": pa.array([bytes([x % 256, 255 - x % 256]) for x in ids], pa.binary()),
        # zero is the maximum
        "f": pa.array(np.where(rng.random(n) < 0.05, 0.0, -np.abs(rng.normal(size=n))).astype(np.float32)),
    })


@pytest.mark.parametrize("mode", ["full", "truncate(3)", "counts"])
@pytest.mark.parametrize("primary_key", [True, False])
def test_file_stats_of_other_types_and_modes_are_what_pyarrow_reads(tmp_path: Path, mode: str,
                                                                    primary_key: bool) -> None:
    t = Table.locate("db.w", warehouse=str(tmp_path / "wh"))
    # a string in the key: its key stats stay full whatever the mode of the value stats
    layout = {"primary_keys": ["id", "long_s", "k"], "options": {"bucket": "2"}} if primary_key else \
        {"options": {"bucket": "2", "bucket-key": "id"}}
    layout["options"]["metadata.stats-mode"] = mode
    create(t, WIDE_SCHEMA, partition_keys=["k"], **layout)
    ids = np.random.default_rng(2).permutation(600)
    write(t, wide_rows(ids, 1), engine_settings=LOCAL)
    write(t, wide_rows(ids[:80], 2), engine_settings=LOCAL)
    fields = t.schema.fields
    types = [f.type for f in fields]
    files = live_files(t)
    assert len(files) == 2 * 2 * 2
    for path, meta in files:
        data = pq.read_table(path)
        expected = []
        for f in fields:
            column = data.column(f.name)
            if pa.types.is_integer(column.type) and f.type.name.startswith("TIMESTAMP"):
                # beside INT96 nanos a file keeps other timestamps as plain counts of their unit
                column = column.cast(arrow_field(f).type)
            lo, hi = arrow_min_max(column) if mode != "counts" else (None, None)
            if mode == "truncate(3)" and f.type.is_string and lo is not None:
                hi = stats.truncate_max(hi, 3)
                lo = stats.truncate_min(lo, 3) if hi is not None else None
            expected.append(stats.ColumnStats(lo, hi, column.null_count))
        assert stats.decode(meta.value_stats, types) == stats.decode(stats.from_columns(expected, types), types)
        assert meta.value_stats == stats.from_columns(expected, types), (path, mode)
        if primary_key:
            key_fields = t.schema.key_fields
            assert [f.name for f in key_fields] == ["id", "long_s"]
            full = [stats.ColumnStats(*arrow_min_max(data.column("_KEY_" + f.name)), 0) for f in key_fields]
            assert meta.key_stats == stats.from_columns(full, [f.type for f in key_fields]), (path, mode)


# ---- the pool -----------------------------------------------------------------------------
def pools_used(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts ThreadPoolExecutors the local engine starts."""
    started: list[int] = []
    real = local_engine.ThreadPoolExecutor

    def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(local_engine, "ThreadPoolExecutor", counting)
    return started


def test_small_groups_are_written_on_the_calling_thread_and_large_ones_on_the_pool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKECTL_LOCAL_THREADS", "2")
    started = pools_used(monkeypatch)
    ids = np.random.default_rng(5).permutation(2000)
    tables = []
    for name, group_bytes in (("small", local_engine.SMALL_GROUP_BYTES), ("pooled", 0)):
        monkeypatch.setattr(local_engine, "SMALL_GROUP_BYTES", group_bytes)
        t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
        create(t, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
        started.clear()
        write(t, rows(ids, 6), engine_settings=LOCAL)  # 2,000 rows: one batch, 12 groups of ~10 KiB
        # the small write started no pool at all (routing one batch needs none either)
        assert len(started) == (0 if name == "small" else 1)
        tables.append(scan(t, engine_settings=LOCAL).sort_by("id"))
    small, pooled = tables
    assert small.drop_columns(["d"]).equals(pooled.drop_columns(["d"]))  # "d" holds NaN, unequal to itself
    assert np.array_equal(small.column("d").to_numpy(), pooled.column("d").to_numpy(), equal_nan=True)
    assert small.num_rows == 2000


# ---- the sweep and the schema cache -------------------------------------------------------
def test_the_sweep_runs_once_a_minute_per_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    swept: list[str] = []
    monkeypatch.setattr(tempdirs, "sweep", lambda directory=None, now=None: swept.append(directory) or [])
    monkeypatch.setattr(tempdirs, "_SWEPT", {})
    clock = [1000.0]
    monkeypatch.setattr(tempdirs.time, "monotonic", lambda: clock[0])
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    tempdirs.sweep_now_and_then(a)
    tempdirs.sweep_now_and_then(a)
    tempdirs.sweep_now_and_then(b)
    clock[0] += tempdirs.SWEEP_EVERY - 1
    tempdirs.sweep_now_and_then(a)
    assert swept == [a, b]
    clock[0] += 1
    tempdirs.sweep_now_and_then(a)
    assert swept == [a, b, a]


def test_a_schema_file_is_parsed_once_and_a_new_one_is_seen(tmp_path: Path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "1"})
    first = t.schema
    assert t.schema is first  # the same file: parsed once
    other = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    other.alter([SetOption("snapshot.num-retained.max", "7")])
    assert t.schema.options.get("snapshot.num-retained.max") == "7"
    assert t.schema.id == first.id + 1
    assert "snapshot.num-retained.max" not in first.options


def test_a_manifest_removed_between_its_stat_and_its_read_reads_as_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A concurrent expire can delete a manifest after ``read_decoded`` looked it up in the
    process's cache and before it opened the file. That read must fail the way every missing
    metadata file does (CorruptMetadataError caused by FileNotFoundError, which the commands
    turn into a replan when the snapshot was expired), never as a bare FileNotFoundError that
    ends a compaction with exit 1 (seen in the expire race)."""
    from core.errors import CorruptMetadataError

    path = tmp_path / "manifest-x"
    path.write_bytes(b"entries")
    stat_then_delete = fileio._decoded_key

    def key_of_a_file_about_to_go(local: str, decode: Any) -> Any:
        key = stat_then_delete(local, decode)
        os.remove(local)  # the expire wins the race right after the stat
        return key

    monkeypatch.setattr(fileio, "_decoded_key", key_of_a_file_about_to_go)
    io = fileio.FileIO.for_uri(str(tmp_path))
    with pytest.raises(CorruptMetadataError, match="missing file") as raised:
        io.read_decoded(str(path), bytes.upper)
    assert isinstance(raised.value.__cause__, FileNotFoundError)


def _kept_manifests(table_dir: Path) -> list[tuple[str, Any, Any]]:
    """Per manifest and manifest list of the table: (name, what the process keeps for it,
    what a fresh decode of its bytes gives)."""
    from core.manifest import _manifest_entries, _manifest_file_metas

    out = []
    for path in sorted((table_dir / "manifest").glob("manifest-*")):  # not the index manifests
        decode = _manifest_file_metas if path.name.startswith("manifest-list-") else _manifest_entries
        key = fileio._decoded_key(str(path), decode)
        assert key is not None
        out.append((path.name, fileio._cached_decoded(key), decode(path.read_bytes())))
    return out


@pytest.mark.parametrize("kind", ["primary-key", "deletion-vectors", "append"])
def test_the_manifests_a_commit_keeps_are_exactly_a_fresh_decode(tmp_path: Path, kind: str) -> None:
    """A commit keeps the manifests and manifest lists it writes for the reads after it (the
    compaction check, the next write's plan): each kept value is what decoding the file gives,
    field by field and type by type (repr tells a list from a tuple, True from 1)."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    options = {"bucket": "2", "num-sorted-run.compaction-trigger": "2"}
    keys: dict[str, Any] = {"primary_keys": ["id", "dt"], "partition_keys": ["dt"]}
    if kind == "deletion-vectors":
        options["deletion-vectors.enabled"] = "true"
    if kind == "append":
        keys, options = {"partition_keys": ["dt"]}, {"bucket": "-1"}
    create(t, "id BIGINT NOT NULL, dt STRING NOT NULL, v DOUBLE, ts TIMESTAMP(3)", options=options, **keys)
    for start in (0, 5, 10):
        rows = pa.table({"id": pa.array(range(start, start + 10), pa.int64()),
                         "dt": ["a", "b"] * 5, "v": [1.5, None] * 5,
                         "ts": pa.array([1_700_000_000_000 + i for i in range(10)], pa.timestamp("ms"))})
        write(t, rows, engine_settings=LOCAL)
    if kind != "append":
        gone = pa.table({"id": pa.array([1, 2], pa.int64()), "dt": ["b", "a"], "v": [None, None],
                         "ts": pa.array([None, None], pa.timestamp("ms")), "_kind": ["-D", "-D"]})
        write(t, gone, row_kind_column="_kind", engine_settings=LOCAL)
    kept = _kept_manifests(tmp_path / "wh" / "db.db" / "t")
    assert len(kept) >= 8
    for name, value, fresh in kept:
        assert value is not fileio._MISSING, name  # every file this process wrote is kept
        assert value == fresh and repr(value) == repr(fresh), name


_OTHER_WRITER = """
import sys
import pyarrow as pa
from core.engines import EngineSettings
from core.ops.write import write
from core.table import Table
t = Table.locate("db.t", warehouse=sys.argv[1])
ids = [int(i) for i in sys.argv[2].split(",")]
write(t, pa.table({"id": pa.array(ids, pa.int64()), "v": ["other"] * len(ids)}),
      engine_settings=EngineSettings(engine="local"))
"""


def test_a_commit_of_another_process_between_two_writes_is_seen(tmp_path: Path) -> None:
    """The manifests this process keeps never hide another process's commit: its write after
    that commit keeps the other's rows, and the compaction after it (trigger 2) merges them in."""
    import subprocess
    import sys

    warehouse = str(tmp_path / "wh")
    t = Table.locate("db.t", warehouse=warehouse)
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "1", "num-sorted-run.compaction-trigger": "3"})
    model: dict[int, str] = {}

    def ours(ids: list[int], v: str) -> None:
        write(t, pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}), engine_settings=LOCAL)
        model.update({i: v for i in ids})

    ours([1, 2, 3], "first")
    subprocess.run([sys.executable, "-c", _OTHER_WRITER, warehouse, "3,4,5"], check=True,
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    model.update({i: "other" for i in (3, 4, 5)})
    ours([5, 6], "second")  # the third sorted run: the check after this commit compacts
    ours([7], "third")
    kinds = [t.snapshots.snapshot(i).commit_kind for i in range(1, (t.snapshots.latest_id() or 0) + 1)]
    assert kinds[:3] == ["APPEND"] * 3 and "COMPACT" in kinds[3:], kinds
    got = scan(t, engine_settings=LOCAL)
    assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist())) == model


def test_a_new_schema_s_file_layout_is_used_by_the_next_write(tmp_path: Path) -> None:
    """The file layout kept per schema (Arrow schema, writer options, nanosecond check) never
    outlives its schema: after another handle alters the table, this handle's next write
    encodes with the new compression, the new column and its INT96 timestamps."""
    from core.evolution import AddColumn

    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "1"})

    def newest_file() -> pq.ParquetFile:
        files = sorted((tmp_path / "wh" / "db.db" / "t" / "bucket-0").glob("*.parquet"), key=os.path.getmtime)
        return pq.ParquetFile(files[-1])

    write(t, pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}), engine_settings=LOCAL)
    assert newest_file().metadata.row_group(0).column(0).compression == "ZSTD"
    other = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    other.alter([SetOption("file.compression", "snappy"), AddColumn("ts", parse_type("TIMESTAMP(9)"))])
    write(t, pa.table({"id": pa.array([2], pa.int64()), "v": ["b"],
                       "ts": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns"))}), engine_settings=LOCAL)
    f = newest_file()
    assert f.schema_arrow.names[-1] == "ts"
    assert f.metadata.row_group(0).column(0).compression == "SNAPPY"
    assert f.schema.column(len(f.schema_arrow.names) - 1).physical_type == "INT96"
    got = scan(t, engine_settings=LOCAL).sort_by("id")
    assert got.column("ts").to_pylist()[0] is None
    assert got.column("ts").cast(pa.int64()).to_pylist()[1] == 1_700_000_000_123_456_789


def test_local_names_are_the_names_list_dir_gives(tmp_path: Path) -> None:
    """list_names on a local disk lists without a stat per entry; its names are list_dir's
    (fsspec's local ls): a directory's children, an absent path as empty, a file as itself."""
    from core.fileio import FileIO

    fio = FileIO.for_uri(str(tmp_path))
    (tmp_path / "snapshot").mkdir()
    for name in ("snapshot-1", "snapshot-2", "LATEST", "EARLIEST"):
        (tmp_path / "snapshot" / name).write_text("x")
    (tmp_path / "snapshot" / "sub").mkdir()

    def via_list_dir(path: str) -> list[str]:
        return sorted(s.path.rstrip("/").rsplit("/", 1)[-1] for s in fio.list_dir(path))

    for path in (str(tmp_path / "snapshot"), str(tmp_path / "absent"), str(tmp_path / "snapshot" / "LATEST"),
                 "file:" + str(tmp_path / "snapshot")):
        assert sorted(fio.list_names(path)) == via_list_dir(path), path
    assert sorted(fio.list_names(str(tmp_path / "snapshot"))) == ["EARLIEST", "LATEST", "snapshot-1", "snapshot-2", "sub"]
    assert fio.list_numbered(str(tmp_path / "snapshot"), "snapshot-") == [1, 2]
