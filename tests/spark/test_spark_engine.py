"""The Spark engine in local mode: same tables as the local engine, Spark DataFrames in and out,
errors surfaced as core errors, nothing committed on failure.

One SparkSession (local[2]) serves the whole module; SparkEngine reuses the active session.
"""

import datetime as dt
import decimal
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.engines import EngineSettings
from core.engines.local import LocalEngine
from core.engines.spark import SparkEngine, _JobProgress
from core.errors import InvalidDataError
from core.manifest import merge_entries, read_entries
from core.ops.create import create
from core.ops.scan import scan_to_output
from core.ops.write import write, write_input
from core.table import Table

pytestmark = pytest.mark.spark

SPARK = EngineSettings(engine="spark", master="local[2]")
LOCAL = EngineSettings(engine="local")


@pytest.fixture(scope="module")
def engine():
    e = SparkEngine(master="local[2]")
    yield e
    e.session.stop()


def _table(tmp_path, name, schema="id BIGINT, v STRING, n INT, dt STRING", **kw):
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path))
    kw.setdefault("primary_keys", ["id", "dt"])
    kw.setdefault("partition_keys", ["dt"])
    kw.setdefault("options", {"bucket": "3"})
    create(t, schema, **kw)
    return t


def _batches():
    base = pa.table({"id": pa.array(range(40), pa.int64()), "v": [f"v{i}" for i in range(40)],
                     "n": pa.array(range(40), pa.int32()), "dt": [f"d{i % 3}" for i in range(40)],
                     "op": ["+I"] * 40})
    # Updates (one key twice in the batch: the later row wins), deletes, inserts.
    changes = pa.table({"id": pa.array([1, 2, 2, 5, 7, 100], pa.int64()), "v": ["u1", "u2", "u2b", None, None, "new"],
                        "n": pa.array([1, 2, 3, None, None, 9], pa.int32()),
                        "dt": ["d1", "d2", "d2", "d2", "d1", "d0"], "op": ["+U", "+U", "+U", "-D", "-D", "+I"]})
    return [base, changes]


def _layout(t):
    """Per snapshot: the live files' (partition, bucket, level, rows, seq range, key range)."""
    out = []
    for snap in t.snapshots.snapshots():
        entries = merge_entries(read_entries(t.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))
        files = sorted((e.partition, e.bucket, e.file.level, e.file.row_count, e.file.min_sequence_number,
                        e.file.max_sequence_number, e.file.min_key, e.file.max_key, e.file.delete_row_count)
                       for e in entries)
        out.append((snap.commit_kind, snap.total_record_count, snap.delta_record_count, files))
    return out


def _rows(table):
    return sorted(table.to_pylist(), key=lambda r: (r["dt"], r["id"]))


def test_both_engines_build_the_same_table(tmp_path, engine):
    local, spark = _table(tmp_path, "local"), _table(tmp_path, "spark")
    for batch in _batches():
        write(local, batch, row_kind_column="op", engine=LocalEngine())
        write(spark, engine.session.createDataFrame(batch.to_pandas()), row_kind_column="op", engine=engine)
    assert _layout(local) == _layout(spark)
    for sid in (1, 2):
        assert _rows(local.scan(snapshot_id=sid)) == _rows(spark.scan(snapshot_id=sid, engine_settings=SPARK))
    # The model: key 2 takes its last update, 5 and 7 are gone, 100 is new.
    latest = {(r["dt"], r["id"]): r["v"] for r in spark.scan().to_pylist()}
    assert latest[("d2", 2)] == "u2b" and ("d2", 5) not in latest and ("d1", 7) not in latest
    assert latest[("d0", 100)] == "new" and len(latest) == 39



def test_spark_executors_write_under_external_paths(tmp_path, engine):
    """The write kernel runs on the executors: they place files under data-file.external-paths
    as the local engine does, and the commit records each file's _EXTERNAL_PATH."""
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    opts = {"bucket": "3", "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
            "data-file.external-paths.strategy": "round-robin"}
    local, spark = _table(tmp_path, "local", options=opts), _table(tmp_path, "spark", options=opts)
    for batch in _batches():
        write(local, batch, row_kind_column="op", engine=LocalEngine())
        write(spark, engine.session.createDataFrame(batch.to_pandas()), row_kind_column="op", engine=engine)
    snap = spark.latest_snapshot()
    entries = merge_entries(read_entries(spark.manifests(), [snap.base_manifest_list, snap.delta_manifest_list]))
    assert entries
    for e in entries:
        part = next(p for p in ("dt=d0", "dt=d1", "dt=d2") if f"/{p}/" in e.file.external_path)
        assert e.file.external_path in {f"file:{r}/{part}/bucket-{e.bucket}/{e.file.file_name}" for r in roots}
    assert _rows(spark.scan()) == _rows(local.scan())


ALL_TYPES = ("b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT NOT NULL, f FLOAT, d DOUBLE, "
             "dec DECIMAL(10, 2), big DECIMAL(38, 10), s STRING, c CHAR(3), bin BYTES, day DATE, t TIME(3), "
             "ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), ts9 TIMESTAMP(9), "
             "ltz TIMESTAMP(3) WITH LOCAL TIME ZONE")


def _all_types_rows():
    return pa.table({
        "b": [True, None, False], "i8": pa.array([1, None, -128], pa.int8()),
        "i16": pa.array([2, None, 300], pa.int16()), "i32": pa.array([3, None, -5], pa.int32()),
        "i64": pa.array([10, 11, 12], pa.int64()), "f": pa.array([1.5, None, -2.0], pa.float32()),
        "d": [2.25, None, 1e300], "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.00")],
                                                  pa.decimal128(10, 2)),
        "big": pa.array([decimal.Decimal("12345678901234567890.0123456789"), None, decimal.Decimal("0")],
                        pa.decimal128(38, 10)),
        "s": ["x", None, "a long string value"], "c": ["abc", None, "z"], "bin": [b"\x00\x01", None, b""],
        "day": [dt.date(2024, 1, 2), None, dt.date(1969, 12, 31)],
        "t": pa.array([3_600_000, None, 123], pa.time32("ms")),
        "ts0": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3), None, dt.datetime(1970, 1, 1)], pa.timestamp("ms")),
        "ts3": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 456000), None, dt.datetime(2000, 1, 1)], pa.timestamp("ms")),
        "ts6": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 456789), None, dt.datetime(2000, 1, 1)], pa.timestamp("us")),
        # Spark holds microseconds, so a Spark input carries whole microseconds even for TIMESTAMP(9).
        "ts9": pa.array([1_700_000_000_123_456_000, None, 5_000], pa.timestamp("ns")),
        "ltz": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 456000, tzinfo=dt.timezone.utc), None,
                         dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc)], pa.timestamp("ms", tz="UTC")),
    })


def test_every_type_survives_the_spark_pipeline_exactly(tmp_path, engine):
    rows = _all_types_rows()
    local = _table(tmp_path, "types_local", ALL_TYPES, primary_keys=["i64"], partition_keys=[],
                   options={"bucket": "2"})
    spark = _table(tmp_path, "types_spark", ALL_TYPES, primary_keys=["i64"], partition_keys=[],
                   options={"bucket": "2"})
    write(local, rows, engine=LocalEngine())
    # Spark's TIME is time64; everything else goes in as the local engine got it.
    spark_rows = rows.set_column(rows.schema.get_field_index("t"), "t", rows.column("t").cast(pa.time64("ns")))
    write(spark, engine.session.createDataFrame(spark_rows), engine=engine)
    # Values come through the Spark pipeline unchanged (temporal values travel as integers).
    assert spark.scan().sort_by("i64").equals(local.scan().sort_by("i64"))
    assert spark.scan(engine_settings=SPARK).sort_by("i64").equals(local.scan().sort_by("i64"))


def test_csv_and_json_inputs_are_cast_like_the_local_engine(tmp_path, engine):
    csv = tmp_path / "in.csv"
    csv.write_text("id,v,n,dt\n1,a,10,d1\n2,b,,d2\n")
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"id": 3, "v": "c", "n": 30, "dt": "d1"}\n')
    a, b = _table(tmp_path, "csv_local"), _table(tmp_path, "csv_spark")
    for path, fmt in ((csv, "csv"), (jsonl, "jsonl")):
        write_input(a, str(path), input_format=fmt, engine_settings=LOCAL)
        write_input(b, str(path), input_format=fmt, engine_settings=SPARK)
    assert _rows(a.scan()) == _rows(b.scan()) == [
        {"id": 1, "v": "a", "n": 10, "dt": "d1"}, {"id": 3, "v": "c", "n": 30, "dt": "d1"},
        {"id": 2, "v": "b", "n": None, "dt": "d2"}]


def test_bad_input_on_spark_is_the_same_error_and_commits_nothing(tmp_path, engine):
    t = _table(tmp_path, "bad")
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["x"], "n": pa.array([1], pa.int32()), "dt": ["d"]}))
    bad = tmp_path / "bad.csv"
    bad.write_text("id,v,n,dt\n1,a,10,d1\n,b,2,d2\n")
    with pytest.raises(InvalidDataError, match="null in primary key column 'id'"):
        write_input(t, str(bad), engine_settings=SPARK)
    overflow = tmp_path / "overflow.csv"
    overflow.write_text("id,v,n,dt\n1,a,99999999999,d1\n")
    with pytest.raises(InvalidDataError, match="column n"):
        write_input(t, str(overflow), engine_settings=SPARK)
    assert t.snapshots.list_ids() == [1]
    assert t.scan().num_rows == 1


def test_table_write_takes_a_dataframe_from_the_active_session(tmp_path, engine):
    t = _table(tmp_path, "df")
    df = engine.session.createDataFrame([(1, "a", 1, "x"), (2, "b", 2, "y")], "id long, v string, n int, dt string")
    result = t.write(df)
    assert result.engine == "spark" and result.rows_written == 2
    assert _rows(t.scan()) == [{"id": 1, "v": "a", "n": 1, "dt": "x"}, {"id": 2, "v": "b", "n": 2, "dt": "y"}]


def test_to_spark_returns_a_filtered_dataframe_with_spark_types(tmp_path, engine):
    t = _table(tmp_path, "to_spark")
    for batch in _batches():
        t.write(batch, row_kind_column="op")
    df = t.to_spark(where="n >= 30 OR dt = 'd0'", select=["id", "n", "dt"])
    assert [f.dataType.simpleString() for f in df.schema.fields] == ["bigint", "int", "string"]
    expected = sorted((r["id"], r["n"], r["dt"]) for r in t.scan().to_pylist() if (r["n"] or 0) >= 30 or r["dt"] == "d0")
    assert sorted(tuple(r) for r in df.collect()) == expected
    old = t.to_spark(snapshot_id=1)
    assert old.count() == 40


@pytest.mark.parametrize("ext", ["parquet", "csv", "jsonl"])
def test_scan_output_on_spark_is_one_file_like_the_local_engines(tmp_path, engine, ext):
    """Spark's --output collects the job's partitions to the driver and writes them with the
    local engine's writer: one file, no part files, .crc or _SUCCESS, the same rows."""
    t = _table(tmp_path, "out", schema="id BIGINT, v STRING, n INT, ok BOOLEAN, dt STRING")
    base = _batches()[0].drop_columns(["op"])
    t.write(base.add_column(3, "ok", pa.array([i % 2 == 0 for i in range(40)])))
    spark_file, local_file = tmp_path / f"spark.{ext}", tmp_path / f"local.{ext}"
    result = scan_to_output(t, str(spark_file), where="dt = 'd1'", engine_settings=SPARK)
    local = scan_to_output(t, str(local_file), where="dt = 'd1'", engine_settings=LOCAL)
    assert spark_file.is_file() and result.engine == "spark" and local.engine == "local"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("spark")) == [f"spark.{ext}"]
    expected = [i for i in range(40) if i % 3 == 1]
    assert result.rows == local.rows == len(expected) == 13
    if ext == "parquet":
        back = pq.read_table(spark_file)
        assert back.schema == pq.read_table(local_file).schema
        assert sorted(back.column("id").to_pylist()) == expected
        assert sorted(back.to_pylist(), key=lambda r: r["id"]) == \
            sorted(pq.read_table(local_file).to_pylist(), key=lambda r: r["id"])
    else:  # the same header (csv) and the same lines, in the order each engine read them
        spark_lines, local_lines = spark_file.read_text().splitlines(), local_file.read_text().splitlines()
        assert spark_lines[0] == local_lines[0]
        assert sorted(spark_lines) == sorted(local_lines) and len(spark_lines) == 13 + (ext == "csv")
        assert any(",true," in line or '"ok": true' in line for line in spark_lines)
    limited = scan_to_output(t, str(tmp_path / f"limited.{ext}"), limit=5, engine_settings=SPARK)
    assert limited.rows == 5 and (tmp_path / f"limited.{ext}").is_file()


def test_sink_parallelism_still_writes_every_bucket(tmp_path, engine):
    t = _table(tmp_path, "par", options={"bucket": "4", "sink.parallelism": "3"})
    t.write(engine.session.createDataFrame(_batches()[0].drop_columns(["op"]).to_pandas()))
    local = _table(tmp_path, "par_local", options={"bucket": "4"})
    local.write(_batches()[0].drop_columns(["op"]), engine_settings=LOCAL)
    assert _layout(t) == _layout(local)


def test_progress_reports_tasks_of_a_running_job(engine):
    calls = []

    def slow(batches):
        for b in batches:
            time.sleep(0.6)
            yield b

    df = engine.session.range(0, 8, numPartitions=4).mapInArrow(slow, "id long")
    with _JobProgress(engine.session, lambda d, t, w: calls.append((d, t, w)), "testing"):
        df.collect()
    assert calls and all(total == 4 and 0 <= done <= 4 for done, total, _ in calls)


def test_input_table_and_orc_files_are_read_by_spark(tmp_path, engine):
    import pyarrow.orc as paorc

    t = _table(tmp_path, "inputs")
    engine.session.createDataFrame([(1, "a", 1, "x")], "id long, v string, n int, dt string") \
        .createOrReplaceTempView("staging_rows")
    write_input(t, None, input_table="staging_rows", engine_settings=SPARK)
    orc = tmp_path / "more.orc"
    paorc.write_table(pa.table({"id": pa.array([2], pa.int64()), "v": ["b"], "n": pa.array([2], pa.int32()),
                                "dt": ["y"]}), str(orc))
    write_input(t, str(orc), engine_settings=SPARK)
    write_input(t, str(orc), engine_settings=LOCAL)  # same file, local engine: an update of key 2
    assert _rows(t.scan()) == [{"id": 1, "v": "a", "n": 1, "dt": "x"}, {"id": 2, "v": "b", "n": 2, "dt": "y"}]
    assert [s.commit_kind for s in t.snapshots.snapshots()] == ["APPEND"] * 3


def test_compaction_on_spark_matches_local_compaction(tmp_path, engine):
    from core.ops.compact import compact

    local, spark = _table(tmp_path, "cmp_local"), _table(tmp_path, "cmp_spark")
    for t in (local, spark):
        for batch in _batches():
            t.write(batch, row_kind_column="op", engine_settings=LOCAL)
    compact(local, full=True, engine=LocalEngine())
    result = compact(spark, full=True, engine=engine)
    assert result.snapshot_id == 3
    assert _layout(local)[-1][:3] == _layout(spark)[-1][:3]
    assert [f[:3] + f[3:4] for f in _layout(local)[-1][3]] == [f[:3] + f[3:4] for f in _layout(spark)[-1][3]]
    assert _rows(spark.scan()) == _rows(local.scan()) == _rows(spark.scan(snapshot_id=2))
    levels = {f[2] for f in _layout(spark)[-1][3]}
    assert levels == {5}


def test_scan_parallelism_options_set_the_number_of_scan_tasks(tmp_path, engine):
    t = _table(tmp_path, "scanpar", options={"bucket": "4"})
    t.write(_batches()[0].drop_columns(["op"]))
    from core.ops.scan import prepare

    splits = len(prepare(t).plan.splits)
    assert splits > 2
    assert t.to_spark().rdd.getNumPartitions() == splits  # scan.infer-parallelism defaults to true
    t2 = _table(tmp_path, "scanpar2", options={"bucket": "4", "scan.parallelism": "2"})
    t2.write(_batches()[0].drop_columns(["op"]))
    assert t2.to_spark().rdd.getNumPartitions() == 2


def test_sequence_field_on_spark_matches_local_and_the_hand_computed_rows(tmp_path, engine):
    """sequence.field=ts, partial-update: Spark's write and compaction run the same kernels
    and merge in (key, ts, arrival) order, as the local engine does."""
    from core.ops.compact import compact

    opts = {"bucket": "2", "sequence.field": "ts", "merge-engine": "partial-update", "write-only": "true"}
    schema = "id BIGINT, v STRING, ts BIGINT, dt STRING"
    local = _table(tmp_path, "seq_local", schema=schema, options=opts)
    spark = _table(tmp_path, "seq_spark", schema=schema, options=opts)
    batches = [
        pa.table({"id": pa.array([1, 1, 2], pa.int64()), "v": ["a9", "a2", None],
                  "ts": pa.array([9, 2, 5], pa.int64()), "dt": ["d", "d", "d"]}),
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a5", "b7", "c"],
                  "ts": pa.array([5, 7, None], pa.int64()), "dt": ["d", "d", "d"]}),
    ]
    for t, settings in ((local, LOCAL), (spark, SPARK)):
        for batch in batches:
            t.write(batch, engine_settings=settings)
    compact(local, full=True, engine=LocalEngine())
    compact(spark, full=True, engine=engine)
    expected = [{"id": 1, "v": "a9", "ts": 9, "dt": "d"}, {"id": 2, "v": "b7", "ts": 7, "dt": "d"},
                {"id": 3, "v": "c", "ts": None, "dt": "d"}]
    assert _rows(spark.scan()) == _rows(local.scan()) == expected


def test_spark_scan_of_the_latest_replans_when_expire_removes_its_files(tmp_path) -> None:
    """The executors meet a data file a concurrent expire removed (the planned snapshot was
    overwritten and retired): the scan plans again on the new latest, as the local engine does."""
    from core.ops.scan import scan_stream

    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", options={"write-only": "true"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["old", "old"]}))
    stream = scan_stream(t, engine_settings=SPARK)  # planned on snapshot 1, nothing read yet
    t.write(pa.table({"id": pa.array([7], pa.int64()), "v": ["new"]}), mode="overwrite")
    t.expire(retain_min=1, retain_max=1, older_than="0s", dry_run=False)  # snapshot 1's file is gone
    assert stream.engine == "spark"
    rows = pa.concat_tables(list(stream.parts))
    assert rows.column("id").to_pylist() == [7]


def test_default_values_are_filled_and_filtered_on_spark_as_locally(tmp_path, engine):
    """fields.<col>.default-value is filled on the executors (read_split), and a filter on the
    column does not prune by the stats of the nulls."""
    t = Table.locate("db.dflt", warehouse=str(tmp_path))
    create(t, "id BIGINT, v BIGINT", options={"fields.v.default-value": "7"})
    t = Table.open("db.dflt", warehouse=str(tmp_path))
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([8, None], pa.int64())}))
    t.write(pa.table({"id": pa.array([3], pa.int64()), "v": pa.array([None], pa.int64())}))
    expected = [{"id": 1, "v": 8}, {"id": 2, "v": 7}, {"id": 3, "v": 7}]
    for settings in (SPARK, LOCAL):
        assert sorted(t.scan(engine_settings=settings).to_pylist(), key=lambda r: r["id"]) == expected
        assert sorted(r["id"] for r in t.scan(where="v = 7", engine_settings=settings).to_pylist()) == [2, 3]


def test_nanosecond_timestamps_come_back_from_spark_scans_exactly(tmp_path, engine):
    """TIMESTAMP(9) values (a partition column and a value column) whose digits go past the
    microsecond: a Spark scan ships rows to the driver in lakectl's Arrow types, so both the
    Python scan and `scan --output` keep every digit (Spark's own timestamps would drop them)."""
    t = _table(tmp_path, "ns", schema="id BIGINT NOT NULL, ts TIMESTAMP(9) NOT NULL, at TIMESTAMP(9)",
               primary_keys=["id", "ts"], partition_keys=["ts"], options={"bucket": "1"})
    base = 1709208000123456789
    nanos = [base, base - 1, base - 789, -5]
    rows = pa.table({"id": pa.array(range(4), pa.int64()), "ts": pa.array(nanos, pa.timestamp("ns")),
                     "at": pa.array([n + 7 for n in nanos], pa.timestamp("ns"))})
    write(t, rows, engine=engine)  # partitions routed on the executors, named with nine digits
    ours = t.scan(engine_settings=SPARK).sort_by("id")
    assert ours.column("ts").cast(pa.int64()).to_pylist() == nanos
    assert ours.column("at").cast(pa.int64()).to_pylist() == [n + 7 for n in nanos]
    assert ours.equals(t.scan(engine_settings=LOCAL).sort_by("id"))
    spark_file, local_file = tmp_path / "spark.jsonl", tmp_path / "local.jsonl"
    scan_to_output(t, str(spark_file), where="ts <= '2024-02-29T12:00:00.123456788'", engine_settings=SPARK)
    scan_to_output(t, str(local_file), where="ts <= '2024-02-29T12:00:00.123456788'", engine_settings=LOCAL)
    lines = sorted(spark_file.read_text().splitlines())
    assert lines == sorted(local_file.read_text().splitlines()) and len(lines) == 3
    assert any("2024-02-29T12:00:00.123456788" in line for line in lines)
