"""lakectl write DB.TABLE --input PATH|- [--mode append|overwrite] [--row-kind-column COL] [--auto-create]"""

from __future__ import annotations

from typing import Annotated, Optional

import pyarrow as pa
import typer

from core.ops.create import columns_from_arrow, create, parse_key_list
from core.ops.write import write
from core.rows import prepare_rows
from core.schema import new_table_schema
from core.sources import infer_format, read_input
from core.table import Table
from core.types import arrow_field
from lakectl.commands import output, settings
from lakectl.commands.create import parse_options
from lakectl.params import FormatOpt, PartitionByOpt, PrimaryKeyOpt, TableArg, TableOptionOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("write")
    def write_cmd(
        ctx: typer.Context,
        table: TableArg,
        input: Annotated[str, typer.Option("--input", "-i", help="Input file, or - for stdin.")],
        input_format: Annotated[Optional[str], typer.Option("--input-format", help="parquet, csv, json or jsonl (default: from the extension).")] = None,
        mode: Annotated[str, typer.Option("--mode", help="append, or overwrite the partitions the input touches.")] = "append",
        row_kind_column: Annotated[Optional[str], typer.Option("--row-kind-column", help="CDC column holding +I, -U, +U, -D.")] = None,
        auto_create: Annotated[bool, typer.Option("--auto-create", help="Create the table from the input's schema if it does not exist.")] = False,
        primary_key: PrimaryKeyOpt = None,
        partition_by: PartitionByOpt = None,
        option: TableOptionOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Write rows from a file as one snapshot.

        Example: lakectl write shop.orders --input changes.csv --row-kind-column op
        """
        out = output(ctx, fmt)
        t = Table.locate(table, warehouse=settings(ctx).resolve_warehouse(warehouse))
        fmt_in = infer_format(input, input_format)
        if not t.exists() and auto_create:
            data = read_input(input, fmt_in)
            columns = columns_from_arrow(data.schema, row_kind_column)
            layout = dict(primary_keys=parse_key_list(primary_key), partition_keys=parse_key_list(partition_by),
                          options=parse_options(option))
            # Check the rows against the schema-to-be first: bad input must not leave an empty table behind.
            prepare_rows(data, new_table_schema(columns, **layout), row_kind_column)
            create(t, columns, **layout, if_not_exists=True)
        else:
            t = Table.open(table, warehouse=settings(ctx).resolve_warehouse(warehouse))
            hint = pa.schema([arrow_field(f) for f in t.schema.fields])
            data = read_input(input, fmt_in, hint)
        result = write(t, data, mode=mode, row_kind_column=row_kind_column)
        out.record(result)
