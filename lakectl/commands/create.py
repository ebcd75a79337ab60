"""lakectl create DB.TABLE --schema "..."|--like DB.SRC [--primary-key ...] [--partition-by ...] [--option k=v ...]"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from core.errors import UsageError
from lakectl.commands import output, settings
from lakectl.completion import complete_table
from lakectl.config import parse_pairs
from lakectl.params import FormatOpt, PartitionByOpt, PrimaryKeyOpt, TableArg, TableOptionOpt, WarehouseOpt


def parse_options(pairs: list[str] | None) -> dict[str, str]:
    return parse_pairs(pairs or [], flag="--option")


def register(app: typer.Typer) -> None:
    @app.command("create")
    def create_cmd(
        ctx: typer.Context,
        table: TableArg,
        schema: Annotated[Optional[str], typer.Option("--schema", "-s", metavar='"COL TYPE, ..."', help='Columns, e.g. "id BIGINT NOT NULL, name STRING".', show_default=False)] = None,
        like: Annotated[Optional[str], typer.Option("--like", metavar="DB.TABLE", help="Instead of --schema: the columns, keys, partitioning, options and comment of this table (--primary-key, --partition-by, --option and --comment over them), as Paimon's CREATE TABLE ... LIKE.", autocompletion=complete_table)] = None,
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
          lakectl create shop.orders --primary-key id,dt --partition-by dt \\
              --option bucket=2 --schema \\
              "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING"
          lakectl create shop.events --if-not-exists \\
              --schema "event_time TIMESTAMP(3), id BIGINT, kind STRING"
          lakectl create shop.orders_copy --like shop.orders
        """
        from core.ops.create import create, parse_key_list
        from core.option_catalog import unknown_option_warnings

        out = output(ctx, fmt)
        if (schema is None) == (like is None):
            raise UsageError("give exactly one of --schema and --like")
        s = settings(ctx)
        t = s.locate_table(table, warehouse)
        if like is not None:
            from core.ops.create import Layout

            layout = Layout.of(s.open_table(like, warehouse)).with_flags(
                parse_key_list(primary_key), parse_key_list(partition_by), parse_options(option))
            new, created = layout.create(t, comment=comment, if_not_exists=if_not_exists)
        else:
            new, created = create(t, schema, primary_keys=parse_key_list(primary_key),
                                  partition_keys=parse_key_list(partition_by), options=parse_options(option),
                                  comment=comment, if_not_exists=if_not_exists)
        t = t.placed()  # a REST server chose the new table's path
        # Paimon keeps options it does not define; so does lakectl, with a warning (a typo such
        # as buckets=4 would otherwise leave the table unbucketed without a word).
        warnings = unknown_option_warnings(new.options) if created else []
        for line in warnings:
            print(f"warning: {line}", file=sys.stderr)
        out.record({"table": t.name, "branch": t.branch, "path": t.path, "created": created, "schema_id": new.id,
                    "primary_keys": list(new.primary_keys), "partition_keys": list(new.partition_keys),
                    "buckets": new.num_buckets, "warnings": warnings})
