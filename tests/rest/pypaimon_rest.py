"""pypaimon 2.1's RESTCatalog as the second independent party of the REST tests.

Runs under the oracle venv's python (``.venv-oracle``, pypaimon 2.1.0), never lakectl's.
Data crosses as Arrow IPC files; the last stdout line is JSON.

  read  URI WAREHOUSE TOKEN DB.TABLE OUT.arrow     rows of the latest snapshot, as pypaimon reads them
  write URI WAREHOUSE TOKEN DB.TABLE IN.arrow [--create --primary-key a,b --partition-key p --option k=v ...]
                                                    one batch commit through the server (creating the table first)

Either takes ``--catalog-option KEY=VALUE`` (e.g. ``data-token.enabled=true``) for the catalog.
"""

from __future__ import annotations

import argparse
import json

import pyarrow as pa
from pypaimon import CatalogFactory, Schema


def catalog(args: argparse.Namespace):
    extra = dict(o.split("=", 1) for o in args.catalog_option)
    return CatalogFactory.create({"metastore": "rest", "uri": args.uri, "warehouse": args.warehouse,
                                  "token.provider": "bear", "token": args.token, **extra})


def read(args: argparse.Namespace) -> dict:
    table = catalog(args).get_table(args.table)
    builder = table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    with pa.OSFile(args.file, "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
        writer.write_table(rows)
    latest = table.snapshot_manager().get_latest_snapshot()
    return {"rows": rows.num_rows, "latest_snapshot": latest.id if latest else None}


def write(args: argparse.Namespace) -> dict:
    cat = catalog(args)
    with pa.memory_map(args.file) as source:
        data = pa.ipc.open_file(source).read_all()
    if args.create:
        options = dict(o.split("=", 1) for o in args.option)
        schema = Schema.from_pyarrow_schema(data.schema, partition_keys=args.partition_key or None,
                                            primary_keys=args.primary_key or None, options=options)
        cat.create_database(args.table.split(".")[0], True)
        cat.create_table(args.table, schema, True)
    table = cat.get_table(args.table)
    builder = table.new_batch_write_builder()
    writer, commit = builder.new_write(), builder.new_commit()
    try:
        writer.write_arrow(data)
        commit.commit(writer.prepare_commit())
    finally:
        writer.close()
        commit.close()
    latest = cat.get_table(args.table).snapshot_manager().get_latest_snapshot()
    return {"rows": data.num_rows, "latest_snapshot": latest.id if latest else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["read", "write"])
    parser.add_argument("uri")
    parser.add_argument("warehouse")
    parser.add_argument("token")
    parser.add_argument("table")
    parser.add_argument("file")
    parser.add_argument("--create", action="store_true")
    parser.add_argument("--primary-key", type=lambda s: s.split(","), default=[])
    parser.add_argument("--partition-key", type=lambda s: s.split(","), default=[])
    parser.add_argument("--option", action="append", default=[])
    parser.add_argument("--catalog-option", action="append", default=[])
    args = parser.parse_args()
    print(json.dumps(read(args) if args.action == "read" else write(args)))


if __name__ == "__main__":
    main()
