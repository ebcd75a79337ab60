"""The body of ``lakectl write`` of a whole input (not ``--stream``), free of the command tree:
the Typer command calls it, and so does lakectl/quick.py, which answers the plain shapes of a
write line without building the tree. Both ways therefore validate, write, commit and print
the same things, and tests/cli/test_quick_path.py compares them.

A write commits, so nothing here may be run twice: a caller hands the line to the tree only
before calling this, and reports what this raises itself (lakectl/errors.py's ``failed``)."""

from __future__ import annotations

from core.errors import UsageError
from lakectl.config import Settings
from lakectl.output import Output


def write_whole(s: Settings, out: Output, table: str, *, input: str | None, input_table: str | None = None,
                input_format: str | None = None, mode: str = "append", partition: str | None = None,
                fill_missing_columns: bool = False, row_kind_column: str | None = None,
                auto_create: bool = False, like: str | None = None, primary_key: str | None = None,
                partition_by: str | None = None, option: list[str] | None = None, branch: str | None = None,
                warehouse: str | None = None) -> None:
    """Write ``input`` (a file, glob, directory or ``-``) into ``table`` as one snapshot and
    print the result."""
    from core.ops.write import write_input
    from core.table import Table
    from lakectl.config import parse_partition
    from lakectl.output import result_json

    if branch is not None and auto_create:
        raise UsageError("--auto-create creates main; create the branch with `lakectl branch create`")
    t = s.locate_table(table, warehouse)
    if branch is not None:
        t = s.open_table(table, warehouse, branch=branch)
    if like is not None and not auto_create:
        raise UsageError("--like applies to --auto-create (the layout of a table to create)")
    create = _auto_create(s, primary_key, partition_by, option, like, warehouse) if auto_create else None
    with out.progress() as progress:
        result = write_input(t, input, input_format=input_format, mode=mode, row_kind_column=row_kind_column,
                             engine_settings=s.engine_settings(progress), auto_create=create,
                             input_table=input_table, fill_missing_columns=fill_missing_columns,
                             partition=parse_partition(partition) if partition is not None else None)
    out.record(result_json(result, "write"))


def _auto_create(s: Settings, primary_key: str | None, partition_by: str | None, option: list[str] | None,
                 like: str | None, warehouse: str | None):  # noqa: ANN202 - core.ops.write.AutoCreate
    """What ``--auto-create`` (with ``--like``, keys, partitioning, options) asks for."""
    from core.ops.create import Layout, parse_key_list
    from core.ops.write import AutoCreate
    from core.table import Table
    from lakectl.config import parse_pairs

    layout = None
    if like is not None:
        layout = Layout.of(s.open_table(like, warehouse))
    return AutoCreate(tuple(parse_key_list(primary_key)), tuple(parse_key_list(partition_by)),
                      parse_pairs(option or [], flag="--option"), layout)
