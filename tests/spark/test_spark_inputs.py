"""``write --input`` on Spark takes what the local engine takes: a glob, a directory as Spark
itself leaves it (partition folders, ``_SUCCESS``), and stdin; and both engines build the same
table from them."""

from __future__ import annotations

import io
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.engines import EngineSettings
from core.engines.spark import SparkEngine
from core.ops.create import create
from core.ops.write import write_input
from core.table import Table

pytestmark = pytest.mark.spark

SPARK = EngineSettings(engine="spark", master="local[2]")
LOCAL = EngineSettings(engine="local")


@pytest.fixture(scope="module")
def engine():
    e = SparkEngine(master="local[2]")
    yield e
    e.session.stop()


def _table(tmp_path, name):
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", options={"bucket": "2"}, primary_keys=["id"])
    return t


def _ids(t):
    return sorted(t.scan().column("id").to_pylist())


def test_glob_directory_and_stdin_on_both_engines(tmp_path, engine, monkeypatch):
    out = tmp_path / "export"
    for i, sub in enumerate(("dt=1", "dt=2")):
        (out / sub).mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array([i * 10, i * 10 + 1], pa.int64()), "v": ["a", "b"]}),
                       out / sub / f"part-0000{i}.snappy.parquet")
        # (No fake .crc files here: Hadoop's local filesystem verifies data against them.)
    (out / "_SUCCESS").write_text("")
    expected = {"dir": [0, 1, 10, 11], "glob": [10, 11], "stdin": [7, 8]}
    for settings, suffix in ((LOCAL, "local"), (SPARK, "spark")):
        t = _table(tmp_path, f"dir_{suffix}")
        write_input(t, str(out), engine_settings=settings)
        assert _ids(t) == expected["dir"], suffix
        t = _table(tmp_path, f"glob_{suffix}")
        write_input(t, str(out / "dt=2" / "*.parquet"), engine_settings=settings)
        assert _ids(t) == expected["glob"], suffix
        t = _table(tmp_path, f"stdin_{suffix}")
        fake = io.TextIOWrapper(io.BytesIO(b'{"id": 7, "v": "x"}\n{"id": 8, "v": "y"}\n'))
        monkeypatch.setattr(sys, "stdin", fake)
        result = write_input(t, "-", input_format="jsonl", engine_settings=settings)
        assert result.engine == suffix and _ids(t) == expected["stdin"], suffix


def test_input_spark_cannot_parse_is_invalid_data_in_one_line(tmp_path, engine):
    from core.errors import InvalidDataError

    t = _table(tmp_path, "bad")
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "v": "a"}\n{"id": 2\n')
    with pytest.raises(InvalidDataError, match=r"bad.jsonl: Malformed records .*end-of-input") as caught:
        write_input(t, str(tmp_path / "bad.jsonl"), engine_settings=SPARK)
    assert "\n" not in str(caught.value)
    assert t.latest_snapshot() is None


def _dup_key_files(tmp_path):
    """Two Parquet files of 1,000-row groups whose keys repeat within and across files: the
    last row of a key in input order (file by file, row by row) must win."""
    paths = []
    for f in range(2):
        ids = [(f * 7000 + i) % 3000 for i in range(7000)]
        path = tmp_path / f"in-{f}.parquet"
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{f}:{i}" for i in range(7000)]}),
                       path, row_group_size=1000)
        paths.append(path)
    model = {}
    for f in range(2):
        for i in range(7000):
            model[(f * 7000 + i) % 3000] = f"{f}:{i}"
    return paths, model


def test_parquet_files_are_read_by_the_executors_in_input_order(tmp_path, engine):
    from core.engines.spark import ParquetFiles

    paths, model = _dup_key_files(tmp_path)
    glob = str(tmp_path / "in-*.parquet")
    assert isinstance(engine.read_input([str(p) for p in paths], "parquet", pa.schema([("id", pa.int64())])),
                      ParquetFiles)
    for settings, suffix in ((SPARK, "spark"), (LOCAL, "local")):
        t = _table(tmp_path, f"pieces_{suffix}")
        result = write_input(t, glob, engine_settings=settings)
        assert result.engine == suffix
        rows = t.scan()
        assert dict(zip(rows.column("id").to_pylist(), rows.column("v").to_pylist())) == model, suffix


def test_a_bad_parquet_row_is_the_local_engines_error_on_spark(tmp_path, engine):
    from core.errors import InvalidDataError

    path = tmp_path / "bad.parquet"
    ids = list(range(5000))
    ids[4321] = None
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": ["x"] * 5000}), path, row_group_size=1000)
    messages = {}
    for settings, suffix in ((SPARK, "spark"), (LOCAL, "local")):
        t = _table(tmp_path, f"bad_{suffix}")
        with pytest.raises(InvalidDataError) as caught:
            write_input(t, str(path), engine_settings=settings)
        messages[suffix] = str(caught.value)
        assert t.latest_snapshot() is None
    assert messages["spark"] == messages["local"] and "4322" in messages["local"], messages
