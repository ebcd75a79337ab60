"""The floor: pyarrow alone, no table format. Writes each batch as one Parquet file (zstd
level 1, lakectl's default codec), and reads by loading the files and merging them with a
sort-and-take-last: concatenate base, upserts and deletes with a batch sequence number, sort
by (id, dt, seq), keep the last record of each key, drop the keys whose last record is a
delete. ``compact`` writes that merged result as one file; ``read_compacted`` is then a plain
Parquet read of N rows (the floor of a compacted table's read). Runs in lakectl's .venv.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import COLUMNS, Recorder, load_inputs, load_meta, parse_args  # noqa: E402

WRITE = dict(compression="zstd", compression_level=1)


def merge(parts: list[tuple[pa.Table, bool]]) -> pa.Table:
    """Sort-and-take-last of (table, is_delete) batches in commit order."""
    tagged = []
    for seq, (t, deleted) in enumerate(parts):
        t = t.select(COLUMNS)
        tagged.append(t.append_column("_seq", pa.repeat(pa.scalar(seq, pa.int32()), t.num_rows))
                      .append_column("_del", pa.repeat(pa.scalar(deleted), t.num_rows)))
    table = pa.concat_tables(tagged)
    order = pc.sort_indices(table, sort_keys=[("id", "ascending"), ("dt", "ascending"), ("_seq", "ascending")])
    table = table.take(order).combine_chunks()
    n = table.num_rows
    if n == 0:
        return table.select(COLUMNS)
    ids, dts = table.column("id"), table.column("dt")
    # last of its key: the next row has another key (or there is no next row)
    differs = pc.or_(pc.not_equal(ids.slice(0, n - 1), ids.slice(1)), pc.not_equal(dts.slice(0, n - 1), dts.slice(1)))
    last = pa.concat_arrays([differs.combine_chunks(), pa.array([True])])
    keep = pc.and_(last, pc.invert(table.column("_del").combine_chunks()))
    return table.filter(keep).select(COLUMNS)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    meta = load_meta(args.data)
    base, upserts, deletes = load_inputs(args.data)
    lo, hi = meta["range"]
    rec = Recorder("floor")
    d = Path(args.work) / "floor"
    files = {k: str(d / f"{k}.parquet") for k in ("base", "upserts", "deletes", "compacted")}
    batches = [("base", False), ("upserts", False), ("deletes", True)]

    def read_all(filters=None) -> pa.Table:
        return merge([(pq.read_table(files[name], filters=filters), deleted) for name, deleted in batches])

    with rec.step("create"):
        os.makedirs(d, exist_ok=True)
    with rec.step("write_base"):
        pq.write_table(base, files["base"], **WRITE)
    with rec.step("upsert"):
        pq.write_table(upserts, files["upserts"], **WRITE)
    with rec.step("delete"):
        pq.write_table(deletes, files["deletes"], **WRITE)
    with rec.step("read_latest") as r:
        r["rows"] = read_all().num_rows
    with rec.step("read_range") as r:
        r["rows"] = read_all([("id", ">=", lo), ("id", "<", hi)]).num_rows
    with rec.step("read_snapshot1") as r:
        r["rows"] = pq.read_table(files["base"]).num_rows
    with rec.step("compact"):
        pq.write_table(read_all(), files["compacted"], **WRITE)
    with rec.step("read_compacted") as r:
        r["rows"] = pq.read_table(files["compacted"]).num_rows
    rec.info["table_bytes"] = sum(os.path.getsize(files[k]) for k in ("base", "upserts", "deletes"))
    rec.info["pyarrow"] = pa.__version__
    rec.emit()


if __name__ == "__main__":
    main()
