"""pypaimon 2.1.0, the official Python implementation, in its own virtualenv (.venv-oracle,
pyarrow 19). Same table layout (primary key (id, dt), bucket=4, partitioned by dt); deletes go
through its ``rowkind.field`` option, which needs the row kind as a table column: the table
has a ninth column ``op STRING`` (``+I`` for base and upsert rows, ``-D`` for deletes), added
to the in-memory inputs before the timings. The id-range read pushes the predicate into
pypaimon's scan and then filters the rows exactly with pyarrow (pypaimon's predicate prunes,
it does not promise an exact filter). pypaimon 2.1.0 has no compaction: those steps are
skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUCKETS, COLUMNS, KEY, PARTITION, ROW_KIND, Recorder, dist_version, load_inputs, load_meta, parse_args  # noqa: E402

import pypaimon  # noqa: E402
from pypaimon import CatalogFactory, Schema  # noqa: E402

TABLE = "bench.t"


def with_kind(t: pa.Table, kind: str) -> pa.Table:
    t = t.select(COLUMNS)
    return t.append_column(ROW_KIND, pa.array([kind] * t.num_rows, pa.string()))


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    meta = load_meta(args.data)
    base, upserts, deletes = load_inputs(args.data)
    base, upserts = with_kind(base, "+I"), with_kind(upserts, "+I")
    deletes = deletes.select(COLUMNS + [ROW_KIND])
    lo, hi = meta["range"]
    rec = Recorder("pypaimon")
    catalog = CatalogFactory.create({"warehouse": str(Path(args.work) / "wh")})

    def write(data: pa.Table) -> None:
        table = catalog.get_table(TABLE)
        builder = table.new_batch_write_builder()
        w, c = builder.new_write(), builder.new_commit()
        try:
            w.write_arrow(data)
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()

    def read(snapshot: int | None = None, ranged: bool = False) -> pa.Table:
        table = catalog.get_table(TABLE)
        if snapshot is not None:
            table = table.copy({"scan.snapshot-id": str(snapshot)})
        rb = table.new_read_builder()
        if ranged:
            pb = rb.new_predicate_builder()
            rb = rb.with_filter(pb.and_predicates([pb.greater_or_equal("id", lo), pb.less_than("id", hi)]))
        rb = rb.with_projection(COLUMNS)
        data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        if ranged:
            data = data.filter(pc.and_(pc.greater_equal(data["id"], lo), pc.less(data["id"], hi)))
        return data

    with rec.step("create"):
        catalog.create_database("bench", ignore_if_exists=True)
        schema = Schema.from_pyarrow_schema(base.schema, partition_keys=[PARTITION], primary_keys=KEY,
                                            options={"bucket": str(BUCKETS), "rowkind.field": ROW_KIND})
        catalog.create_table(TABLE, schema, ignore_if_exists=False)
    with rec.step("write_base"):
        write(base)
    with rec.step("upsert"):
        write(upserts)
    with rec.step("delete"):
        write(deletes)
    with rec.step("read_latest") as r:
        r["rows"] = read().num_rows
    with rec.step("read_range") as r:
        r["rows"] = read(ranged=True).num_rows
    with rec.step("read_snapshot1") as r:
        r["rows"] = read(snapshot=1).num_rows
    rec.skip("compact", "pypaimon 2.1.0 has no compaction")
    rec.skip("read_compacted", "pypaimon 2.1.0 has no compaction")
    rec.info["pypaimon"] = getattr(pypaimon, "__version__", None) or dist_version("pypaimon")
    rec.info["pyarrow"] = pa.__version__
    rec.emit()


if __name__ == "__main__":
    main()
