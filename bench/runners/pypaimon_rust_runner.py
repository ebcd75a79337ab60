"""pypaimon-rust 0.4.0 (Paimon's Rust implementation with its Python binding) writing and
reading the suite's table, in its own virtualenv (.venv-bench-rust, pyarrow 26).

Same table layout (primary key (id, dt), bucket=4, partitioned by dt), created with its
DataFusion SQL DDL (``SQLContext``: ``PaimonCatalog`` has no create_table). Deletes go through
its ``rowkind.field`` option, which names a table column, so, as for pypaimon 2.1, the table
has a ninth column ``op STRING`` (``+I`` for base and upsert rows, ``-D`` for deletes), added
to the in-memory inputs before the timings. Writes: ``new_batch_write_builder()``, one
``BatchTableWrite.write_arrow`` per record batch of the input, then one commit. Reads: the
native read builder (``read`` of every split of the plan), projected to the eight data
columns; the id range as a pushed-down predicate (which filters exactly: the suite checks the
count); snapshot 1 through the ``scan.snapshot-id`` read option.

pypaimon-rust 0.4.0 has no compaction: no compact procedure (``CALL sys.compact`` is an
"Unknown procedure") and its writers flush without compacting, so those steps are skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUCKETS, COLUMNS, KEY, PARTITION, ROW_KIND, SCHEMA_SQL, Recorder, dist_version, load_inputs, load_meta, \
    parse_args  # noqa: E402

from pypaimon_rust.datafusion import PaimonCatalog, SQLContext  # noqa: E402

DATABASE, NAME = "bench", "t"
TABLE = f"{DATABASE}.{NAME}"
NO_COMPACTION = "no compaction (no compact procedure; its writers flush without compacting)"


def with_kind(t: pa.Table, kind: str) -> pa.Table:
    t = t.select(COLUMNS)
    return t.append_column(ROW_KIND, pa.array([kind] * t.num_rows, pa.string()))


def batch_write(catalog: PaimonCatalog, data: pa.Table) -> None:
    """``data`` written to the table through pypaimon-rust's batch write builder, a record
    batch at a time, as one commit."""
    builder = catalog.get_table(TABLE).new_batch_write_builder()
    w, c = builder.new_write(), builder.new_commit()
    try:
        for batch in data.to_batches():
            w.write_arrow(batch)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def ddl() -> str:
    """The suite's table in pypaimon-rust's SQL, with the row-kind column and option."""
    return (f"CREATE TABLE paimon.{TABLE} ({SCHEMA_SQL}, {ROW_KIND} STRING, PRIMARY KEY ({', '.join(KEY)})) "
            f"PARTITIONED BY ({PARTITION}) WITH ('bucket' = '{BUCKETS}', 'rowkind.field' = '{ROW_KIND}')")


def id_range(lo: int, hi: int) -> dict:
    """``id >= lo AND id < hi`` as a pypaimon-rust predicate dict."""
    return {"method": "and", "children": [{"method": "greaterOrEqual", "field": "id", "literals": [lo]},
                                          {"method": "lessThan", "field": "id", "literals": [hi]}]}


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    meta = load_meta(args.data)
    base, upserts, deletes = load_inputs(args.data)
    base, upserts = with_kind(base, "+I"), with_kind(upserts, "+I")
    deletes = deletes.select(COLUMNS + [ROW_KIND])
    lo, hi = meta["range"]
    warehouse = {"warehouse": str(Path(args.work) / "wh")}
    rec = Recorder("pypaimon_rust")
    sql = SQLContext()
    sql.register_catalog("paimon", warehouse)
    catalog = PaimonCatalog(warehouse)

    def write(data: pa.Table) -> None:
        batch_write(catalog, data)

    def read(snapshot: int | None = None, ranged: bool = False) -> pa.Table:
        table = catalog.get_table(TABLE)
        rb = table.new_read_builder({"scan.snapshot-id": str(snapshot)} if snapshot is not None else None)
        rb = rb.with_projection(COLUMNS)
        if ranged:
            rb = rb.with_filter(id_range(lo, hi))
        plan = rb.new_scan().plan()
        batches = rb.new_read().read(plan.splits())
        return pa.Table.from_batches(batches) if batches else pa.table({c: [] for c in COLUMNS})

    with rec.step("create"):
        sql.sql(f"CREATE SCHEMA paimon.{DATABASE}")
        sql.sql(ddl())
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
    rec.skip("compact", NO_COMPACTION)
    rec.skip("read_compacted", NO_COMPACTION)
    snapshots = catalog.get_table(TABLE).list_snapshots()
    rec.info["snapshots"] = [(s.id(), s.commit_kind()) for s in snapshots]
    rec.info["options"] = catalog.get_table(TABLE).schema().options()
    rec.info["pypaimon_rust"] = dist_version("pypaimon-rust")
    rec.info["pyarrow"] = pa.__version__
    rec.emit()


if __name__ == "__main__":
    main()
