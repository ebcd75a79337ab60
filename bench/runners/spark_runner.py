"""Spark ``local[2]``: lakectl on its Spark engine against bare Spark, in one SparkSession
(started, and warmed up on a small write with each, before any timing). Steps alternate
between the two per step. Every input is ``spark.read.parquet`` of the generated file, as in
bench/spark_write.py.

bare Spark (the baseline): each batch written with ``df.write.parquet``; reads are the union
of the three batches with a batch sequence, ``row_number()`` over (id, dt) by sequence
descending, keep the first unless it is a delete -- Spark's own merge-on-read; ``compact``
writes that as Parquet; ``read_compacted`` reads it back.
lakectl: ``core.ops.write.write`` of the DataFrame on the Spark engine, deletes with
``row_kind_column="op"``; reads are ``Table.to_spark`` DataFrames; ``compact`` is
``core.ops.compact.compact`` on the Spark engine.
Reads are materialised with Spark's ``noop`` sink (every row and column produced, nothing
written) on both sides. Rows are counted (outside the timings) only with ``--verify``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the lakectl source under test: a snapshot of a revision (suite.py --rev) or this checkout
sys.path.insert(0, os.environ.get("LAKECTL_BENCH_SOURCE") or str(Path(__file__).resolve().parents[2]))
from common import BUCKETS, COLUMNS, KEY, PARTITION, ROW_KIND, SCHEMA_SQL, Recorder, load_meta, parse_args, range_where  # noqa: E402

from pyspark.sql import Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from core.engines import EngineSettings  # noqa: E402
from core.engines.spark import SparkEngine  # noqa: E402
from core.ops.compact import compact  # noqa: E402
from core.ops.create import create  # noqa: E402
from core.ops.scan import to_spark  # noqa: E402
from core.ops.write import write  # noqa: E402
from core.table import Table  # noqa: E402


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], lambda ap: ap.add_argument("--master", default="local[2]"))
    meta = load_meta(args.data)
    data, work = Path(args.data), Path(args.work)
    lo, hi = meta["range"]
    where = range_where(meta)
    engine = SparkEngine(master=args.master)
    spark = engine.session
    settings = EngineSettings(engine="spark", master=args.master)
    inp = {k: str(data / f"{k}.parquet") for k in ("base", "upserts", "deletes")}

    def src(name: str):
        return spark.read.parquet(inp[name])

    # warm-up, not timed: JIT, Python workers, the shipped core archive
    warm = Table.locate("bench.warm", warehouse=str(work / "warm-wh"))
    create(warm, SCHEMA_SQL, primary_keys=KEY, partition_keys=[PARTITION], options={"bucket": str(BUCKETS)})
    write(warm, src("base").limit(20000), engine=engine)
    noop(to_spark(warm, engine_settings=settings))
    src("base").limit(20000).write.parquet(str(work / "warm-bare"))
    shutil.rmtree(work / "warm-wh", ignore_errors=True)
    shutil.rmtree(work / "warm-bare", ignore_errors=True)

    bare, lk = Recorder("spark_bare"), Recorder("lakectl_spark")
    bdir = {k: str(work / "bare" / k) for k in ("base", "upserts", "deletes", "compacted")}
    t = Table.locate("bench.t", warehouse=str(work / "wh"))

    def merged(filtered: bool = False):
        parts = []
        for seq, name in enumerate(("base", "upserts", "deletes")):
            df = spark.read.parquet(bdir[name]).select(*COLUMNS)
            if filtered:
                df = df.where((F.col("id") >= lo) & (F.col("id") < hi))
            parts.append(df.withColumn("_seq", F.lit(seq)).withColumn("_del", F.lit(name == "deletes")))
        u = parts[0].unionByName(parts[1]).unionByName(parts[2])
        w = Window.partitionBy("id", "dt").orderBy(F.col("_seq").desc())
        return (u.withColumn("_rn", F.row_number().over(w))
                .where((F.col("_rn") == 1) & ~F.col("_del")).select(*COLUMNS))

    def read(rec: Recorder, name: str, make) -> None:
        with rec.step(name):
            df = make()
            noop(df)
        if args.verify:
            rec.steps[name]["rows"] = make().count()

    bare.skip("create", "no table to create")
    with lk.step("create"):
        create(t, SCHEMA_SQL, primary_keys=KEY, partition_keys=[PARTITION], options={"bucket": str(BUCKETS)})
    for step, name in (("write_base", "base"), ("upsert", "upserts"), ("delete", "deletes")):
        with bare.step(step):
            src(name).write.parquet(bdir[name])
        with lk.step(step):
            write(t, src(name), row_kind_column=ROW_KIND if name == "deletes" else None, engine=engine)
    read(bare, "read_latest", merged)
    read(lk, "read_latest", lambda: to_spark(t, engine_settings=settings))
    read(bare, "read_range", lambda: merged(True))
    read(lk, "read_range", lambda: to_spark(t, where=where, engine_settings=settings))
    read(bare, "read_snapshot1", lambda: spark.read.parquet(bdir["base"]))
    read(lk, "read_snapshot1", lambda: to_spark(t, snapshot_id=1, engine_settings=settings))
    with bare.step("compact"):
        merged().write.parquet(bdir["compacted"])
    with lk.step("compact"):
        compact(t, full=True, engine=engine)
    read(bare, "read_compacted", lambda: spark.read.parquet(bdir["compacted"]))
    read(lk, "read_compacted", lambda: to_spark(t, engine_settings=settings))
    import json

    import pyspark

    for rec in (bare, lk):
        for s in rec.steps.values():  # driver-side memory and reads say nothing about Spark's work
            for k in ("peak_rss", "rss_before", "rchar"):
                s.pop(k, None)
    print(json.dumps({"runner": "spark", "results": {
        "spark_bare": {"steps": bare.steps, "info": {"master": args.master}},
        "lakectl_spark": {"steps": lk.steps, "info": {"master": args.master}},
    }, "info": {"pyspark": pyspark.__version__}}))
    spark.stop()


if __name__ == "__main__":
    main()
