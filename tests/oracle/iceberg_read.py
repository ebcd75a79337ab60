"""Read an Iceberg table with pyiceberg (run by tests/interop/iceberg_oracle.py in .venv-iceberg).

    iceberg_read.py METADATA_JSON OUT.arrow [--snapshot ID] [--filter EXPR]... [--each-snapshot]

``StaticTable.from_metadata`` needs no catalog: the metadata file alone. The rows go to an
Arrow IPC file; the last stdout line is JSON: ``snapshot`` (the one read), ``snapshots`` (every
snapshot id in the metadata), ``current_snapshot``, ``schema`` (fields with ids and types),
``partition_spec``, ``refs``, ``format_version``, ``files`` (data files the scan plans),
``file_stats`` (per planned file, per top-level column name: the null count and the lower and
upper bound as pyiceberg decodes them; decimals as strings, binaries as hex, dates as days and
timestamps as microseconds since the epoch, as Iceberg stores them). With more than one
``--filter``, each is scanned in turn (one interpreter start for all: pyiceberg's import is
most of a scan's time): scan ``i``'s rows go to ``OUT.arrow-<i>`` and ``scans`` lists each
one's planned ``files``; ``files`` and ``file_stats`` are the first scan's.
With ``--each-snapshot``, every snapshot of the metadata is also read (time travel) into
``OUT.<snapshot id>``, and ``each`` holds each one's ``schema`` and ``files``.
"""

from __future__ import annotations

import argparse
import json

import pyarrow as pa
from pyiceberg.conversions import from_bytes
from pyiceberg.table import StaticTable


def _plain(value: object) -> object:
    """A decoded bound as JSON can carry it."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (int, float, bool, str)) or value is None:
        return value
    return str(value)  # Decimal, UUID


def file_stats(schema, data_file) -> dict:
    """A data file's column stats by top-level column name, bounds decoded by pyiceberg."""
    out = {}
    for field in schema.fields:
        entry = {}
        nulls = (data_file.null_value_counts or {}).get(field.field_id)
        if nulls is not None:
            entry["nulls"] = nulls
        for key, bounds in (("lower", data_file.lower_bounds), ("upper", data_file.upper_bounds)):
            raw = (bounds or {}).get(field.field_id)
            if raw is not None:
                entry[key] = _plain(from_bytes(field.field_type, raw))
        out[field.name] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("metadata")
    parser.add_argument("out")
    parser.add_argument("--snapshot", type=int)
    parser.add_argument("--filter", action="append",
                        help="a pyiceberg row filter, e.g. \"day = '2024-01-01'\" (repeatable)")
    parser.add_argument("--each-snapshot", action="store_true")
    args = parser.parse_args()

    table = StaticTable.from_metadata(args.metadata)
    meta = table.metadata
    filters = args.filter or ["True"]
    scans = []
    for i, row_filter in enumerate(filters):
        scan = table.scan(snapshot_id=args.snapshot, row_filter=row_filter)
        tasks = list(scan.plan_files())
        rows = scan.to_arrow()
        out = args.out if len(filters) == 1 else f"{args.out}-{i}"
        with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
            writer.write_table(rows)
        scans.append({"filter": row_filter, "files": sorted(task.file.file_path for task in tasks), "tasks": tasks})
    first = scans[0]
    each = {}
    if args.each_snapshot:
        for snap in meta.snapshots:
            each[snap.snapshot_id] = _read_one(table, snap.snapshot_id, f"{args.out}.{snap.snapshot_id}")
    current = table.current_snapshot()
    print(json.dumps({
        "snapshot": args.snapshot if args.snapshot is not None else (current.snapshot_id if current else None),
        "current_snapshot": current.snapshot_id if current else None,
        "snapshots": [s.snapshot_id for s in meta.snapshots],
        "schema": [{"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required}
                   for f in table.schema().fields],
        "partition_spec": [{"name": f.name, "source_id": f.source_id, "field_id": f.field_id,
                            "transform": str(f.transform)} for f in table.spec().fields],
        "refs": {name: ref.snapshot_id for name, ref in meta.refs.items()},
        "format_version": meta.format_version,
        "files": first["files"],
        "file_stats": {task.file.file_path: file_stats(table.schema(), task.file) for task in first["tasks"]},
        "scans": [{"filter": scan["filter"], "files": scan["files"]} for scan in scans],
        "each": each,
    }))


def _read_one(table: StaticTable, snapshot_id: int, out: str) -> dict:
    """Time travel to one snapshot: its rows to ``out``; the columns and files it has."""
    scan = table.scan(snapshot_id=snapshot_id)
    rows = scan.to_arrow()
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
        writer.write_table(rows)
    return {"schema": [{"id": f.field_id, "name": f.name} for f in scan.projection().fields],
            "files": sorted(task.file.file_path for task in scan.plan_files())}


if __name__ == "__main__":
    main()
