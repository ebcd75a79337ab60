"""Read a Paimon table with the official reader (pypaimon) into an Arrow IPC file.

Runs inside the oracle virtualenv (pypaimon 2.1.0 and its pinned pyarrow), never
in lakectl's own environment; tests call it as a subprocess through
``tests/interop/oracle.py``.

Usage::

    paimon_read.py TABLE_PATH OUT.arrow [--snapshot N | --tag NAME] [--projection a,b] [--branch NAME]

Writes every row of every split to OUT.arrow (Arrow IPC file format) and prints
one JSON line on stdout::

    {"rows": int, "columns": [...], "latest_snapshot": int | null,
     "snapshot": int | null, "schema": [[name, paimon type string], ...]}

``--branch`` opens the table as ``db.t$branch_NAME`` through pypaimon's filesystem catalog
(the warehouse is two levels above TABLE_PATH); time travel then reads the branch.

``schema`` lists the fields that were read (after time travel and projection)
with their Paimon type strings; ``snapshot`` is the snapshot the read resolved
to (null for an empty table).
"""

import argparse
import json
import os
import sys

import pyarrow as pa
from pypaimon.table.file_store_table import FileStoreTable


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table_path")
    parser.add_argument("out")
    travel = parser.add_mutually_exclusive_group()
    travel.add_argument("--snapshot", type=int)
    travel.add_argument("--tag")
    parser.add_argument("--projection", help="comma-separated column names")
    parser.add_argument("--branch", help="read this branch, as db.t$branch_NAME")
    return parser.parse_args(argv)


def _open_branch(table_path, branch):
    from pypaimon import CatalogFactory

    table_dir = os.path.abspath(table_path)
    database_dir = os.path.dirname(table_dir)
    catalog = CatalogFactory.create({"warehouse": os.path.dirname(database_dir)})
    database = os.path.basename(database_dir)[:-len(".db")]
    return catalog.get_table(f"{database}.{os.path.basename(table_dir)}$branch_{branch}")


def main(argv):
    args = _parse_args(argv)
    base = _open_branch(args.table_path, args.branch) if args.branch else FileStoreTable.from_path(args.table_path)
    table = base
    if args.snapshot is not None:
        if base.snapshot_manager().get_snapshot_by_id(args.snapshot) is None:
            raise SystemExit(f"snapshot {args.snapshot} does not exist")
        table = base.copy({"scan.snapshot-id": str(args.snapshot)})
    elif args.tag is not None:
        if not base.tag_manager().tag_exists(args.tag):
            raise SystemExit(f"tag {args.tag!r} does not exist")
        table = base.copy({"scan.tag-name": args.tag})

    read_builder = table.new_read_builder()
    fields = list(table.fields)
    if args.projection:
        names = [name.strip() for name in args.projection.split(",") if name.strip()]
        read_builder = read_builder.with_projection(names)
        by_name = {field.name: field for field in fields}
        # System fields (_ROW_ID, _SEQUENCE_NUMBER of row-tracking tables) are readable by
        # name but not table fields; the schema line lists the table fields read.
        fields = [by_name[name] for name in names if name in by_name]

    scan = read_builder.new_scan()
    plan = scan.plan()
    data = read_builder.new_read().to_arrow(plan.splits())

    with pa.OSFile(args.out, "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
        writer.write_table(data)

    latest = base.snapshot_manager().get_latest_snapshot()
    if args.snapshot is not None:
        resolved = args.snapshot
    elif args.tag is not None:
        resolved = base.tag_manager().get_or_throw(args.tag).trim_to_snapshot().id
    else:
        resolved = latest.id if latest else None
    print(json.dumps({
        "rows": data.num_rows,
        "columns": data.column_names,
        "latest_snapshot": latest.id if latest else None,
        "snapshot": resolved,
        "schema": [[field.name, str(field.type)] for field in fields],
    }))


if __name__ == "__main__":
    main(sys.argv[1:])
