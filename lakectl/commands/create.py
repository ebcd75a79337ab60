"""lakectl create DB.TABLE --schema "..." [--primary-key ...] [--partition-by ...] [--option k=v ...]"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from core.table import Table
from lakectl.commands import output, settings
from lakectl.config import parse_pairs
from lakectl.params import FormatOpt, PartitionByOpt, PrimaryKeyOpt, TableArg, TableOptionOpt, WarehouseOpt


def parse_options(pairs: list[str] | None) -> dict[str, str]:
    return parse_pairs(pairs or [], flag="--option")


def register(app: typer.Typer) -> None:
    @app.command("create")
    def create_cmd(
        ctx: typer.Context,
        table: TableArg,
        schema: Annotated[str, typer.Option("--schema", "-s", metavar='"COL TYPE, ..."', help='Columns, e.g. "id BIGINT NOT NULL, name STRING".')],
        primary_key: PrimaryKeyOpt = None,
        partition_by: PartitionByOpt = None,
        option: TableOptionOpt = None,
        comment: Annotated[Optional[str], typer.Option("--comment", metavar="TEXT", help="Table comment.")] = None,
        if_not_exists: Annotated[bool, typer.Option("--if-not-exists", help="Succeed if the table exists.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Create a table (and its database).

        Examples:

        \b
          lakectl create shop.orders \\
              --schema "id BIGINT, amount DECIMAL(10, 2), dt STRING" \\
              --primary-key id,dt --partition-by dt --option bucket=4
          lakectl create logs.events --schema "ts TIMESTAMP(3), msg STRING" \\
              --if-not-exists
        """
        from core.ops.create import create, parse_key_list
        from core.option_catalog import unknown_option_warnings

        out = output(ctx, fmt)
        t = Table.locate(table, warehouse=settings(ctx).resolve_warehouse(warehouse))
        new, created = create(t, schema, primary_keys=parse_key_list(primary_key),
                              partition_keys=parse_key_list(partition_by), options=parse_options(option),
                              comment=comment, if_not_exists=if_not_exists)
        # Paimon keeps options it does not define; so does lakectl, with a warning (a typo such
        # as buckets=4 would otherwise leave the table unbucketed without a word).
        warnings = unknown_option_warnings(new.options) if created else []
        for line in warnings:
            print(f"warning: {line}", file=sys.stderr)
        out.record({"table": t.name, "branch": t.branch, "path": t.path, "created": created, "schema_id": new.id,
                    "primary_keys": list(new.primary_keys), "partition_keys": list(new.partition_keys),
                    "buckets": new.num_buckets, "warnings": warnings})
