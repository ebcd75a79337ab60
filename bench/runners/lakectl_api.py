"""lakectl through its Python API on the local engine (in this process), in lakectl's .venv.

Besides the timings it measures what the id-range read reads:
- ``plan_bytes`` / ``live_bytes``: bytes of the data files ``core.ops.scan.prepare`` keeps for
  the ``--where`` (partition and file pruning by stats) against all live data files;
- ``rchar`` of the range read against ``rchar`` of the full latest read (bytes actually pulled
  through read calls, manifests included; catches row-group pruning, which the plan cannot);
- ``rowgroup_bytes``: bytes of the row groups of the kept files whose ``id`` stats overlap the
  range, i.e. what row-group pruning by stats could read with the files as written today.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the lakectl source under test: a snapshot of a revision (suite.py --rev) or this checkout
sys.path.insert(0, os.environ.get("LAKECTL_BENCH_SOURCE") or str(Path(__file__).resolve().parents[2]))
from common import (BUCKETS, KEY, PARTITION, ROW_KIND, SCHEMA_SQL, Recorder, load_inputs, load_meta,  # noqa: E402
                    parse_args, range_where)

from core.engines import EngineSettings  # noqa: E402
from core.fileio import join  # noqa: E402
from core.ops.compact import compact  # noqa: E402
from core.ops.create import create  # noqa: E402
from core.ops.scan import prepare, scan  # noqa: E402
from core.ops.write import write  # noqa: E402
from core.table import Table  # noqa: E402

LOCAL = EngineSettings(engine="local")
# The row-group size of the second table the id-range read is measured on (Paimon's
# parquet.block.size; the default 128 mb gives every file here a single row group).
SMALL_BLOCK = "64kb"


def rowgroup_bytes(table: Table, prepared, lo: int, hi: int) -> tuple[int, int, int, int]:
    """(compressed bytes of the row groups whose id stats overlap [lo, hi), of all row groups of
    the kept files, row groups kept, row groups in the kept files)."""
    kept = groups = 0
    size = total = 0
    for split in prepared.plan.splits:
        for f in split.files:
            md = pq.ParquetFile(f.external_path or join(split.bucket_dir, f.file_name)).metadata
            names = [md.schema.column(i).name for i in range(md.num_columns)]
            col = names.index("_KEY_id") if "_KEY_id" in names else names.index("id")
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                groups += 1
                rg_size = sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
                total += rg_size
                st = rg.column(col).statistics
                if st is None or not st.has_min_max or (st.max >= lo and st.min < hi):
                    kept += 1
                    size += rg_size
    return size, total, kept, groups


def small_groups_range(work: str, base, upserts, deletes, where: str, rec: Recorder) -> dict:
    """The same three writes into a table with parquet.block.size=SMALL_BLOCK, then the full and
    the id-range read of it (untimed against the floor: the trade-off is in bytes and seconds)."""
    t = Table.locate("bench.small_groups", warehouse=str(Path(work) / "wh"))
    create(t, SCHEMA_SQL, primary_keys=KEY, partition_keys=[PARTITION],
           options={"bucket": str(BUCKETS), "parquet.block.size": SMALL_BLOCK})
    write(t, base, engine_settings=LOCAL)
    write(t, upserts, engine_settings=LOCAL)
    write(t, deletes, row_kind_column=ROW_KIND, engine_settings=LOCAL)
    with rec.step("small_groups_read_latest"):
        scan(t, engine_settings=LOCAL)
    with rec.step("small_groups_read_range") as r:
        r["rows"] = scan(t, where=where, engine_settings=LOCAL).num_rows
    full, ranged = rec.steps.pop("small_groups_read_latest"), rec.steps.pop("small_groups_read_range")
    return {"block_size": SMALL_BLOCK, "live_bytes": prepare(t).plan.data_bytes,
            "rchar_full": full.get("rchar"), "rchar_range": ranged.get("rchar"), "rows": ranged["rows"],
            "seconds_full": full["seconds"], "seconds_range": ranged["seconds"]}


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    meta = load_meta(args.data)
    base, upserts, deletes = load_inputs(args.data)
    where = range_where(meta)
    lo, hi = meta["range"]
    rec = Recorder("lakectl_api")
    t = Table.locate("bench.t", warehouse=str(Path(args.work) / "wh"))

    with rec.step("create"):
        create(t, SCHEMA_SQL, primary_keys=KEY, partition_keys=[PARTITION], options={"bucket": str(BUCKETS)})
    with rec.step("write_base"):
        write(t, base, engine_settings=LOCAL)
    files = t.files()
    per_bucket: dict[tuple, int] = {}
    for f in files:
        k = (str(sorted(f.partition.items())), f.bucket)
        per_bucket[k] = per_bucket.get(k, 0) + f.row_count
    rec.info["buckets"] = len(per_bucket)
    rec.info["max_bucket_rows"] = max(per_bucket.values())
    with rec.step("upsert"):
        write(t, upserts, engine_settings=LOCAL)
    with rec.step("delete"):
        write(t, deletes, row_kind_column=ROW_KIND, engine_settings=LOCAL)
    with rec.step("read_latest") as r:
        r["rows"] = scan(t, engine_settings=LOCAL).num_rows
    with rec.step("read_range") as r:
        r["rows"] = scan(t, where=where, engine_settings=LOCAL).num_rows
    full = prepare(t)
    ranged = prepare(t, where=where)
    rg_bytes, rg_all, rg_kept, rg_total = rowgroup_bytes(t, ranged, lo, hi)
    rec.info["range"] = {
        "live_bytes": full.plan.data_bytes, "live_files": full.plan.files_total,
        "plan_bytes": ranged.plan.data_bytes,
        "plan_files": sum(len(s.files) for s in ranged.plan.splits),
        "files_pruned": ranged.plan.files_pruned,
        # row-group pruning's share of the kept files, applied to the kept files' bytes
        "rowgroup_bytes": round(ranged.plan.data_bytes * rg_bytes / rg_all) if rg_all else 0,
        "rowgroups_kept": rg_kept, "rowgroups_total": rg_total,
        "rchar_range": rec.steps["read_range"].get("rchar"), "rchar_full": rec.steps["read_latest"].get("rchar"),
    }
    rec.info["range_small_groups"] = small_groups_range(args.work, base, upserts, deletes, where, rec)
    with rec.step("read_snapshot1") as r:
        r["rows"] = scan(t, snapshot_id=1, engine_settings=LOCAL).num_rows
    with rec.step("compact"):
        compact(t, full=True, engine_settings=LOCAL)
    with rec.step("read_compacted") as r:
        r["rows"] = scan(t, engine_settings=LOCAL).num_rows
    rec.info["snapshots"] = t.latest_snapshot().id
    rec.info["table_path"] = t.path
    rec.emit()


if __name__ == "__main__":
    main()
