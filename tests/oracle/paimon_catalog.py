"""Work through a pypaimon catalog of any kind (jdbc, rest, filesystem) with the official
library, step by step.

Runs inside the oracle virtualenv (pypaimon 2.1.0 and its pinned pyarrow), never in lakectl's
own environment; tests call it as a subprocess (``tests/interop/oracle.py``,
``catalog_steps``).

Usage::

    paimon_catalog.py JOB.json

The job::

    {"catalog": {"metastore": "jdbc", "uri": "jdbc:sqlite:/x/catalog.db", "warehouse": "/x/wh"},
     "steps": [...]}

Steps, in order; each adds one entry to the printed ``results``:

- ``{"op": "list_databases"}`` -> the names, sorted
- ``{"op": "list_tables", "database": "db"}`` -> the names, sorted
- ``{"op": "create_database", "name": "db"}`` (if absent)
- ``{"op": "create_table", "table": "db.t", "schema": {"fields": [[name, type], ...],
  "primary_keys": [...], "partition_keys": [...], "options": {...}}}``
- ``{"op": "write", "table": "db.t", "data": "batch.arrow"}``: one commit (paimon_write.py's)
- ``{"op": "read", "table": "db.t", "out": "rows.arrow"}`` -> the row count; the rows go to
  the Arrow IPC file
- ``{"op": "latest_snapshot", "table": "db.t"}`` -> its id or null
- ``{"op": "table_path", "table": "db.t"}`` -> the path the catalog places it at
- ``{"op": "drop_table", "table": "db.t"}``
- ``{"op": "exists", "table": "db.t"}`` -> whether ``get_table`` finds it

Prints one JSON line: ``{"results": [...]}``.
"""

import json
import sys

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

from paimon_write import _fields, _latest_id, _write


def _read(catalog, step):
    table = catalog.get_table(step["table"])
    builder = table.new_read_builder()
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    with pa.OSFile(step["out"], "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
        writer.write_table(data)
    return data.num_rows


def _create_table(catalog, step):
    spec = step["schema"]
    schema = Schema(
        fields=_fields(spec["fields"]),
        partition_keys=list(spec.get("partition_keys") or []),
        primary_keys=list(spec.get("primary_keys") or []),
        options={k: str(v) for k, v in (spec.get("options") or {}).items()},
        comment=spec.get("comment"),
    )
    catalog.create_table(step["table"], schema, False)


def _exists(catalog, step):
    try:
        catalog.get_table(step["table"])
    except Exception as e:  # noqa: BLE001 - pypaimon's TableNotExistException, by name
        if type(e).__name__ == "TableNotExistException":
            return False
        raise
    return True


_STEPS = {
    "list_databases": lambda c, s: sorted(c.list_databases()),
    "list_tables": lambda c, s: sorted(c.list_tables(s["database"])),
    "create_database": lambda c, s: c.create_database(s["name"], True),
    "create_table": _create_table,
    "write": lambda c, s: _write(c, s["table"], s),
    "read": _read,
    "latest_snapshot": lambda c, s: _latest_id(c.get_table(s["table"])),
    "table_path": lambda c, s: str(c.get_table(s["table"]).table_path),
    "drop_table": lambda c, s: c.drop_table(s["table"], False),
    "exists": _exists,
}


def main(argv):
    with open(argv[0], encoding="utf-8") as f:
        job = json.load(f)
    catalog = CatalogFactory.create({k: str(v) for k, v in job["catalog"].items()})
    results = []
    try:
        for step in job["steps"]:
            if step["op"] not in _STEPS:
                raise SystemExit(f"unknown step op {step['op']!r}")
            results.append(_STEPS[step["op"]](catalog, step))
    finally:
        close = getattr(catalog, "close", None)
        if close is not None:
            close()
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    main(sys.argv[1:])
