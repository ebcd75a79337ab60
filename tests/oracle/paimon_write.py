"""Create and write a Paimon table with the official writer (pypaimon).

Runs inside the oracle virtualenv (pypaimon 2.1.0 and its pinned pyarrow), never
in lakectl's own environment; tests call it as a subprocess through
``tests/interop/oracle.py``.

Usage::

    paimon_write.py JOB.json

The job::

    {"warehouse": "/path/to/warehouse",
     "table": "db.name",
     "schema": {"fields": [[name, type], ...],
                "primary_keys": [...], "partition_keys": [...],
                "options": {...}, "comment": null},
     "steps": [...]}

A field type is a Paimon type string for atomic types (``"DECIMAL(20, 4)"``,
``"INT NOT NULL"``) or the schema-file JSON object for nested ones
(``{"type": "ARRAY", "element": "INT"}``). Field ids are assigned in order, each
nested field right after its parent, as Java's ``Schema.Builder`` does.

Steps, carried out in order (each ``write`` is one commit):

- ``{"op": "write", "data": "batch.arrow", "overwrite": false,
  "overwrite_partition": null}``: the Arrow IPC file's columns are reordered and
  cast to the table's current schema. With ``rowkind.field`` in the table
  options, that string column carries ``+I``/``-U``/``+U``/``-D``.
- ``{"op": "update_by_row_id", "data": "batch.arrow", "columns": ["v"]}``: pypaimon 2.1's
  ``update_by_arrow_with_row_id`` (data-evolution tables): the batch holds ``_ROW_ID`` and
  the columns, which are rewritten for those rows (one commit).
- ``{"op": "tag", "name": "t1", "snapshot": null}``; ``{"op": "delete_tag", "name": "t1"}``
- ``{"op": "rollback", "snapshot": N}`` or ``{"op": "rollback", "tag": "t1"}``
- ``{"op": "add_column", "name": "x", "type": "INT"}``,
  ``{"op": "rename_column", "from": "a", "to": "b"}``,
  ``{"op": "drop_column", "name": "c"}``,
  ``{"op": "update_column_type", "name": "x", "type": "BIGINT"}``,
  ``{"op": "set_option", "key": "k", "value": "v"}``,
  ``{"op": "remove_option", "key": "k"}``: through the catalog's ``alter_table``.

Prints one JSON line on stdout::

    {"latest_snapshot": int | null, "table_path": str,
     "steps": [{"op": ..., "latest_snapshot": int | null}, ...]}
"""

import json
import sys

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import (AtomicInteger, DataField,
                                        DataTypeParser, PyarrowFieldParser)
from pypaimon.schema.schema_change import SchemaChange


def _fields(spec):
    counter = AtomicInteger(-1)
    fields = []
    for name, type_spec in spec:
        field_id = counter.increment_and_get()
        fields.append(DataField(field_id, name, DataTypeParser.parse_data_type(type_spec, counter)))
    return fields


def _data_type(type_spec):
    return DataTypeParser.parse_data_type(type_spec, AtomicInteger(-1))


def _latest_id(table):
    latest = table.snapshot_manager().get_latest_snapshot()
    return latest.id if latest else None


def _write(catalog, identifier, step):
    table = catalog.get_table(identifier)
    target = PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)
    with pa.OSFile(step["data"], "rb") as source:
        data = pa.ipc.open_file(source).read_all()
    missing = [name for name in target.names if name not in data.column_names]
    if missing:
        raise SystemExit(f"batch {step['data']} lacks columns {missing}")
    data = data.select(target.names).cast(target)

    builder = table.new_batch_write_builder()
    if step.get("overwrite"):
        builder = builder.overwrite(step.get("overwrite_partition") or {})
    write = builder.new_write()
    commit = builder.new_commit()
    try:
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def _update_by_row_id(catalog, identifier, step):
    table = catalog.get_table(identifier)
    with pa.OSFile(step["data"], "rb") as source:
        data = pa.ipc.open_file(source).read_all()
    builder = table.new_batch_write_builder()
    update = builder.new_update().with_update_type(list(step["columns"]))
    commit = builder.new_commit()
    try:
        commit.commit(update.update_by_arrow_with_row_id(data))
    finally:
        commit.close()


_SCHEMA_CHANGES = {
    "add_column": lambda s: SchemaChange.add_column(s["name"], _data_type(s["type"]), s.get("comment")),
    "rename_column": lambda s: SchemaChange.rename_column(s["from"], s["to"]),
    "drop_column": lambda s: SchemaChange.drop_column(s["name"]),
    "update_column_type": lambda s: SchemaChange.update_column_type(s["name"], _data_type(s["type"])),
    "set_option": lambda s: SchemaChange.set_option(s["key"], str(s["value"])),
    "remove_option": lambda s: SchemaChange.remove_option(s["key"]),
}


def _run_step(catalog, identifier, step):
    op = step["op"]
    if op == "write":
        _write(catalog, identifier, step)
    elif op == "update_by_row_id":
        _update_by_row_id(catalog, identifier, step)
    elif op == "tag":
        catalog.get_table(identifier).create_tag(step["name"], snapshot_id=step.get("snapshot"))
    elif op == "delete_tag":
        catalog.get_table(identifier).delete_tag(step["name"])
    elif op == "rollback":
        target = step["tag"] if step.get("tag") is not None else int(step["snapshot"])
        catalog.get_table(identifier).rollback_to(target)
    elif op in _SCHEMA_CHANGES:
        catalog.alter_table(identifier, [_SCHEMA_CHANGES[op](step)])
    else:
        raise SystemExit(f"unknown step op {op!r}")


def main(argv):
    with open(argv[0], encoding="utf-8") as f:
        job = json.load(f)
    spec = job["schema"]
    database, _ = job["table"].split(".", 1)

    catalog = CatalogFactory.create({"warehouse": job["warehouse"]})
    catalog.create_database(database, ignore_if_exists=True)
    schema = Schema(
        fields=_fields(spec["fields"]),
        partition_keys=list(spec.get("partition_keys") or []),
        primary_keys=list(spec.get("primary_keys") or []),
        options={k: str(v) for k, v in (spec.get("options") or {}).items()},
        comment=spec.get("comment"),
    )
    # "existing": true writes on to a table that is already there (its schema is kept).
    catalog.create_table(job["table"], schema, ignore_if_exists=bool(job.get("existing")))

    results = []
    for step in job.get("steps", []):
        _run_step(catalog, job["table"], step)
        results.append({"op": step["op"], "latest_snapshot": _latest_id(catalog.get_table(job["table"]))})

    table = catalog.get_table(job["table"])
    print(json.dumps({
        "latest_snapshot": _latest_id(table),
        "table_path": table.table_path,
        "steps": results,
    }))


if __name__ == "__main__":
    main(sys.argv[1:])
