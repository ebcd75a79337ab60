"""pypaimon-rust (Paimon's Rust implementation, DataFusion SQL over the table) reading a table
that lakectl wrote, in .venv-bench-rust. One query per process, through its SQL only:

- range: ``SELECT * ... WHERE id BETWEEN lo AND hi``;
- lookup: ``SELECT * ... WHERE id IN (k1, ..., k100)``;
- full: ``SELECT * ...`` (the merged read of the latest snapshot);
- partition: ``SELECT * ... WHERE p = X`` (one partition of many).

The catalog is a filesystem catalog on the warehouse; the timed part is ``SQLContext.sql``
(planning, reading, merging, materialising the Arrow batches). Prints one JSON line
(``common.emit_read``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit_read, read_args, timed_calls  # noqa: E402

from pypaimon_rust.datafusion import SQLContext  # noqa: E402


def statement(args) -> str:
    table = f"paimon.{args.table}"
    if args.query == "range":
        return f"SELECT * FROM {table} WHERE id BETWEEN {args.lo} AND {args.hi}"
    if args.query == "lookup":
        return f"SELECT * FROM {table} WHERE id IN ({args.keys})"
    if args.query == "partition":
        column, value = args.partition.split("=")
        return f"SELECT * FROM {table} WHERE {column} = {int(value)}"
    return f"SELECT * FROM {table}"


def main() -> None:
    args = read_args(__doc__.splitlines()[0])
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": args.warehouse})
    sql = statement(args)

    def query() -> pa.Table:
        batches = ctx.sql(sql)
        # an empty result has no batch to take the schema from; no query here returns none
        return pa.Table.from_batches(batches) if batches else pa.table({"id": pa.array([], pa.int64()),
                                                                        "c_int": pa.array([], pa.int32())})

    result, times = timed_calls(query, args.calls)
    emit_read(args, result, times, sql=sql if args.query != "lookup" else sql[:80] + "...")


if __name__ == "__main__":
    main()
