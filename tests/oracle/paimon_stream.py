"""Follow a Paimon table with the official streaming reader (pypaimon) into an Arrow IPC file.

Runs inside the oracle virtualenv; tests call it through ``tests/interop/oracle.py``.

Usage::

    paimon_stream.py TABLE_PATH OUT.arrow --plans N [--consumer-id ID]

Reads N streaming plans (the first is the full latest snapshot unless the consumer has a
recorded position), records the consumer's position after the last plan as pypaimon does
when the caller moves on, and writes every row with ``_row_kind`` and ``_snapshot_id``.
Prints one JSON line: ``{"rows": int, "snapshots": [ids of the plans]}``.
"""

import argparse
import json
import sys

import pyarrow as pa
from pypaimon.table.file_store_table import FileStoreTable


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table_path")
    parser.add_argument("out")
    parser.add_argument("--plans", type=int, required=True)
    parser.add_argument("--consumer-id")
    args = parser.parse_args(argv)

    table = FileStoreTable.from_path(args.table_path)
    builder = table.new_stream_read_builder().with_poll_interval_ms(100).with_include_row_kind(True)
    if args.consumer_id:
        builder = builder.with_consumer_id(args.consumer_id)
    scan = builder.new_streaming_scan()
    read = builder.new_read()
    parts, snapshots = [], []
    for plan in scan.stream_sync():
        data = read.to_arrow(plan.splits())
        snapshots.append(plan.snapshot_id)
        ids = pa.array([plan.snapshot_id] * data.num_rows, pa.int64())
        parts.append(data.add_column(1, "_snapshot_id", ids))
        if len(snapshots) == args.plans:
            break
    # pypaimon records the position when the caller asks for the next plan; asking would
    # block until another snapshot commits, so record it the way that step does.
    scan._flush_pending_consumer()
    data = pa.concat_tables(parts) if parts else pa.table({})
    with pa.OSFile(args.out, "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
        writer.write_table(data)
    print(json.dumps({"rows": data.num_rows, "snapshots": snapshots}))


if __name__ == "__main__":
    main(sys.argv[1:])
