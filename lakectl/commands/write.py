"""lakectl write DB.TABLE --input PATH|- [--mode append|overwrite] [--row-kind-column COL] [--auto-create]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from core.table import Table
from lakectl.commands import output, settings
from lakectl.commands.create import parse_options
from lakectl.params import FormatOpt, PartitionByOpt, PrimaryKeyOpt, TableArg, TableOptionOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("write")
    def write_cmd(
        ctx: typer.Context,
        table: TableArg,
        input: Annotated[Optional[str], typer.Option("--input", "-i", help="Input file, glob or directory; - for stdin.")] = None,
        input_table: Annotated[Optional[str], typer.Option("--input-table", help="A table of the Spark catalog (runs on Spark).")] = None,
        input_format: Annotated[Optional[str], typer.Option("--input-format", help="parquet, csv, json, jsonl (or orc on Spark); default: from the extension.")] = None,
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

        Examples:

        \b
          lakectl write shop.orders --input orders.csv
          lakectl write shop.orders --input changes.csv --row-kind-column op
          lakectl write shop.orders --input 'day=2024-01-01/*.parquet' \\
              --mode overwrite
          cat rows.jsonl | lakectl write shop.orders -i - --input-format jsonl
        """
        from core.ops.create import parse_key_list
        from core.ops.write import AutoCreate, write_input

        out = output(ctx, fmt)
        s = settings(ctx)
        t = Table.locate(table, warehouse=s.resolve_warehouse(warehouse))
        create = AutoCreate(tuple(parse_key_list(primary_key)), tuple(parse_key_list(partition_by)),
                            parse_options(option)) if auto_create else None
        with out.progress() as progress:
            result = write_input(t, input, input_format=input_format, mode=mode, row_kind_column=row_kind_column,
                                 engine_settings=s.engine_settings(progress), auto_create=create,
                                 input_table=input_table)
        out.record(result)
