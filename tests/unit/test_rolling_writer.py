"""The rolling writer encodes each primary-key Parquet file a row group at a time and folds the
file's metadata chunk by chunk; the whole-file writer (``write.write_files``) is the
independent expectation: same files, same bytes, same DataFileMeta."""
from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import stats
from core.kernels import rolling_writer, write
from core.kernels.write import KEY_SORTED_ROW_GROUP_ROWS
from core.ops.create import create
from core.table import Table

COLUMNS = ("id BIGINT, s STRING, d DOUBLE, ts TIMESTAMP(9), dec DECIMAL(10, 2), "
           "arr ARRAY<INT>, r ROW<a INT, b STRING>")


def _rows(n: int, *, nan_at: int | None = None, deletes: bool = True) -> pa.Table:
    """Rows in file order (keys rising, each once), with nulls, long strings, NaN, nested values
    and some -D records, as a merge with deletes kept emits them."""
    ids = list(range(n))
    strings = [None if i % 97 == 0 else f"{'z' * (i % 40)}value-{i:07d}-\u00e9\u4e2d" for i in ids]
    doubles = [None if i % 13 == 0 else (math.nan if i == nan_at else (i - n / 2) * 0.5) for i in ids]
    base = dt.datetime(2024, 1, 1)
    stamps = pa.array([None if i % 11 == 0 else int(base.timestamp() * 1e9) + i * 1001 for i in ids],
                      pa.timestamp("ns"))
    decimals = [None if i % 17 == 0 else decimal.Decimal(f"{i % 5000 - 2500}.{i % 100:02d}") for i in ids]
    arrays = [None if i % 7 == 0 else [i, i + 1] for i in ids]
    rows = [None if i % 19 == 0 else {"a": i, "b": f"b{i}"} for i in ids]
    kinds = [3 if deletes and i % 23 == 5 else 0 for i in ids]
    return pa.table({
        "id": pa.array(ids, pa.int64()), "s": pa.array(strings, pa.string()), "d": pa.array(doubles, pa.float64()),
        "ts": stamps, "dec": pa.array(decimals, pa.decimal128(10, 2)),
        "arr": pa.array(arrays, pa.list_(pa.int32())),
        "r": pa.array(rows, pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "_SEQUENCE_NUMBER": pa.array([1000 + (i * 7919) % n for i in ids], pa.int64()),
        "_VALUE_KIND": pa.array(kinds, pa.int8())})


def _table(tmp_path: Path, **options: str) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, COLUMNS, primary_keys=["id"], options={"bucket": "1", **options})
    return t


def _both(t: Table, rows: pa.Table, chunk_rows: int, tmp_path: Path) -> tuple[list, list, Path, Path]:
    whole_dir, streamed_dir = tmp_path / "whole", tmp_path / "streamed"
    whole_dir.mkdir(), streamed_dir.mkdir()
    expected = write.write_files(rows, t.schema, str(whole_dir), t.file_io, level=5, file_source=1,
                                 measure_size=True)
    chunks = (rows.slice(s, chunk_rows) for s in range(0, rows.num_rows, chunk_rows))
    got = rolling_writer.write_files_streamed(chunks, t.schema, str(streamed_dir), t.file_io, level=5,
                                              file_source=1)
    return expected, got, whole_dir, streamed_dir


def _comparable(meta) -> dict:
    return {k: v for k, v in dataclasses.asdict(meta).items() if k not in ("file_name", "creation_time")}


@pytest.mark.parametrize("mode", ["full", "truncate(16)", "counts", "none"])
@pytest.mark.parametrize("chunk_rows", [333, 4096, 50000])
def test_streamed_files_equal_whole_files_in_bytes_and_metadata(tmp_path: Path, monkeypatch, mode: str,
                                                                  chunk_rows: int) -> None:
    t = _table(tmp_path, **{"target-file-size": "96 kb", "metadata.stats-mode": mode})
    monkeypatch.setattr(write, "SIZE_SAMPLE_ROWS", 5000)  # sizing happens part-way through the stream
    rows = _rows(40000, nan_at=30001)
    expected, got, whole_dir, streamed_dir = _both(t, rows, chunk_rows, tmp_path)
    assert len(expected) >= 3  # the target really rolls files
    assert [_comparable(g) for g in got] == [_comparable(e) for e in expected]
    for e, g in zip(expected, got):
        assert (streamed_dir / g.file_name).read_bytes() == (whole_dir / e.file_name).read_bytes()


def test_streamed_metadata_matches_hand_computed_values(tmp_path: Path, monkeypatch) -> None:
    """The metadata checked against values computed here, not only against the other writer:
    nulls counted, the NaN file's DOUBLE bounds unknown, nested columns without bounds,
    deletes counted, the sequence range of each file."""
    t = _table(tmp_path, **{"target-file-size": "96 kb", "metadata.stats-mode": "full"})
    monkeypatch.setattr(write, "SIZE_SAMPLE_ROWS", 5000)
    rows = _rows(40000, nan_at=30001)
    _, got, _, _ = _both(t, rows, 3000, tmp_path)
    start = 0
    names = t.schema.field_names
    for meta in got:
        part = rows.slice(start, meta.row_count)
        start += meta.row_count
        values = stats.decode(meta.value_stats, [f.type for f in t.schema.fields])
        by_name = dict(zip(names, values))
        for name in names:
            assert by_name[name].null_count == part.column(name).null_count
        doubles = [x for x in part.column("d").to_pylist() if x is not None]
        if any(math.isnan(x) for x in doubles):
            assert (by_name["d"].min, by_name["d"].max) == (None, None)
        else:
            assert (by_name["d"].min, by_name["d"].max) == (min(doubles), max(doubles))
        strings = [x for x in part.column("s").to_pylist() if x is not None]
        assert (by_name["s"].min, by_name["s"].max) == (min(strings), max(strings))
        assert (by_name["arr"].min, by_name["r"].max) == (None, None)
        seq = part.column("_SEQUENCE_NUMBER").to_pylist()
        assert (meta.min_sequence_number, meta.max_sequence_number) == (min(seq), max(seq))
        assert meta.delete_row_count == part.column("_VALUE_KIND").to_pylist().count(3)
        [key] = stats.decode(meta.key_stats, [f.type for f in t.schema.key_fields])
        assert (key.min, key.max, key.null_count) == (part.column("id")[0].as_py(), part.column("id")[-1].as_py(), 0)
    assert start == rows.num_rows
    assert any(m.delete_row_count for m in got)


def test_files_roll_at_the_target_size_and_row_groups_fall_on_fixed_boundaries(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"target-file-size": "1 mb"})
    rows = _rows(200_000, deletes=False)
    chunk_rows = 10_000  # not a multiple of the row group: groups span chunks
    expected, got, _, streamed_dir = _both(t, rows, chunk_rows, tmp_path)
    assert len(got) == len(expected) >= 3
    sizes = [m.file_size for m in got]
    # Cut on the sample's encoded size per row: every full file lands near the 1 MiB target.
    assert all(0.8 * (1 << 20) <= s <= 1.2 * (1 << 20) for s in sizes[:-1]), sizes
    assert sum(m.row_count for m in got) == rows.num_rows
    for meta in got:
        metadata = pq.read_metadata(streamed_dir / meta.file_name)
        groups = [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
        assert all(n == KEY_SORTED_ROW_GROUP_ROWS for n in groups[:-1])
        assert 0 < groups[-1] <= KEY_SORTED_ROW_GROUP_ROWS
        assert sum(groups) == meta.row_count == metadata.num_rows


def test_a_failed_stream_leaves_no_partial_file(tmp_path: Path, monkeypatch) -> None:
    t = _table(tmp_path)
    monkeypatch.setattr(write, "SIZE_SAMPLE_ROWS", 1000)
    rows = _rows(5000)

    def chunks():
        yield rows.slice(0, 3000)
        raise RuntimeError("the merge failed")

    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RuntimeError):
        rolling_writer.write_files_streamed(chunks(), t.schema, str(out), t.file_io, level=5, file_source=1)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_other_formats_roll_the_same_files_whole(tmp_path: Path, monkeypatch, fmt: str) -> None:
    monkeypatch.setattr(write, "SIZE_SAMPLE_ROWS", 5000)
    rows = _rows(30000).drop_columns(["ts"])  # nanosecond timestamps aside: the layout is Parquet's concern
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, COLUMNS.replace(", ts TIMESTAMP(9)", ""), primary_keys=["id"],
           options={"bucket": "1", "target-file-size": "96 kb", "file.format": fmt})
    expected, got, whole_dir, streamed_dir = _both(t, rows, 4096, tmp_path)
    assert len(expected) >= 2
    # The same rows and metadata; an ORC file's size may differ by the Arrow buffers' offsets
    # its encoder was handed (a slice of one table, or chunks gathered anew).
    assert [{**_comparable(g), "file_size": 0} for g in got] == [{**_comparable(e), "file_size": 0} for e in expected]
    for e, g in zip(expected, got):
        assert _read(streamed_dir / g.file_name, t.schema, fmt) == _read(whole_dir / e.file_name, t.schema, fmt)


def _read(path: Path, schema, fmt: str) -> list[dict]:
    """A data file's rows as lakectl's own format readers decode them."""
    from core import formats

    columns = dict(write.file_fields(schema))
    with open(path, "rb") as fh:
        table = formats.read_orc(fh, columns) if fmt == "orc" else formats.read_avro(fh, columns)
    return table.to_pylist()
