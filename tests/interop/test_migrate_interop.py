"""Tables made by ``lakectl migrate`` from Parquet and ORC directories (written by pyarrow,
flat and Hive-partitioned) read in Java Paimon 1.0 and pypaimon exactly as pyarrow.dataset
reads the source, partition columns as strings: the files keep no partition column, so both
readers take it from the partition, as Paimon's own migrate_table relies on.

The Parquet sources here are zstd-compressed (the Java oracle's classpath, the Paimon bundle
jar alone, has no snappy codec, pyarrow's default) and store decimals as integers, as Spark and
Paimon do (Java Paimon 1.0 cannot read pyarrow's default, dictionary-encoded fixed-length
bytes, which migrate warns about: tests/cli/test_cli_migrate.py)."""


from __future__ import annotations

import sys
from pathlib import Path

import pytest
from java_oracle import java_read, lakectl_rows
from oracle import official_read

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_cli_migrate import lakectl, make_source, rows  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from core.table import Table  # noqa: E402

JAVA_PARQUET = {"compression": "zstd", "store_decimal_as_integer": True}

pytestmark = [pytest.mark.interop, pytest.mark.java, pytest.mark.slow]


def dataset_rows(root: Path, fmt: str, keys: tuple[str, ...]) -> list[list]:
    partitioning = ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive") if keys else None
    return lakectl_rows(ds.dataset(str(root), format=fmt, partitioning=partitioning).to_table())


@pytest.mark.parametrize("fmt,keys,in_place", [("parquet", ("dt", "hour"), False), ("orc", ("dt",), True),
                                               ("parquet", (), True), ("orc", (), False)],
                         ids=["parquet-hive-copy", "orc-hive-move", "parquet-flat-move", "orc-flat-copy"])
def test_java_pypaimon_and_lakectl_read_the_migrated_table_as_pyarrow_reads_the_source(
        tmp_path: Path, fmt: str, keys: tuple[str, ...], in_place: bool) -> None:
    # Hive's default partition directory is a null value (pyarrow reads it so too)
    partitions = [("2024-01-01", "0"), ("2024-01-01", "1"), ("2024-01-02", "0"), ("__HIVE_DEFAULT_PARTITION__", "1")]
    src = make_source(tmp_path / "src", fmt, [p[:len(keys)] for p in partitions] if keys else [()] * 4, keys, **JAVA_PARQUET)
    expected = dataset_rows(src, fmt, keys)
    wh = tmp_path / "wh"
    done = lakectl(wh, "migrate", str(src), "db.t", *(["--in-place"] if in_place else []))
    assert done.returncode == 0, done.stderr
    path = wh / "db.db" / "t"
    assert lakectl_rows(Table.open(str(path)).scan()) == expected
    got, meta = java_read(path)
    assert got == expected and meta["latest_snapshot"] == 1
    official, _ = official_read(path, tmp_path)
    assert lakectl_rows(official) == expected


def test_java_filters_on_the_migrated_stats_as_on_the_rows(tmp_path: Path) -> None:
    """Java prunes files by the stats migrate recorded: a filter on a data column and on a
    partition column return exactly the matching rows (wrong stats would drop files)."""
    src = make_source(tmp_path / "src", "parquet", [("a",), ("b",), ("c",)], ("k",), **JAVA_PARQUET)
    wh = tmp_path / "wh"
    assert lakectl(wh, "migrate", str(src), "db.t").returncode == 0
    path = wh / "db.db" / "t"
    everything, _ = java_read(path)
    for column, value, position in (("id", 20, 0), ("k", "b", 7), ("name", "n10", 1)):
        got, _ = java_read(path, equal=(column, value))
        assert got == [r for r in everything if r[position] == value], column
    # a later write by lakectl is read by Java beside the migrated files
    more = tmp_path / "more.parquet"
    pq.write_table(rows(77).append_column("k", pa.array(["z"] * 3)), more, **JAVA_PARQUET)
    assert lakectl(wh, "write", "db.t", "--input", str(more)).returncode == 0
    after, _ = java_read(path)
    assert len(after) == len(everything) + 3


def test_nanosecond_timestamps_in_int96_read_alike_everywhere(tmp_path: Path) -> None:
    """TIMESTAMP(9) from Spark's and Hive's INT96 (Java Paimon 1.0's own layout for it)."""
    import datetime as dt

    src = tmp_path / "src" / "dt=2024-01-01"
    src.mkdir(parents=True)
    table = pa.table({"id": pa.array([1, 2], pa.int32()),
                      "at": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 456789), None], pa.timestamp("ns"))})
    pq.write_table(table, src / "part-0.parquet", use_deprecated_int96_timestamps=True, compression="zstd")
    expected = dataset_rows(tmp_path / "src", "parquet", ("dt",))
    wh = tmp_path / "wh"
    done = lakectl(wh, "migrate", str(tmp_path / "src"), "db.t")
    assert done.returncode == 0 and not done.stderr, done.stderr
    path = wh / "db.db" / "t"
    assert lakectl_rows(Table.open(str(path)).scan()) == expected
    assert java_read(path)[0] == expected
    assert lakectl_rows(official_read(path, tmp_path)[0]) == expected
