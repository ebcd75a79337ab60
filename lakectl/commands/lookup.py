"""lakectl lookup DB.TABLE --key COL=VALUE[,COL=VALUE...] [--key ...] [--snapshot-id N] [--select]"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_column_list, complete_key, complete_snapshot_id
from lakectl.params import BranchOpt, FormatOpt, TableArg, TagOpt, TimestampOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("lookup")
    def lookup_cmd(
        ctx: typer.Context,
        table: TableArg,
        key: Annotated[Optional[list[str]], typer.Option(
            "--key", "-k", help="One key as COL=VALUE[,COL=VALUE...] (repeatable): every primary-key column "
                                "outside the partition; partition columns are optional. Values as scan prints "
                                "them; binary ones as X'0700ff' or FROM_BASE64('BwD/').",
            metavar="COL=VALUE", show_default=False, autocompletion=complete_key)] = None,
        snapshot_id: Annotated[Optional[int], typer.Option(
            "--snapshot-id", metavar="ID", help="Read as of this snapshot.", autocompletion=complete_snapshot_id)] = None,
        timestamp: TimestampOpt = None,
        tag: TagOpt = None,
        select: Annotated[Optional[str], typer.Option("--select", metavar="COLUMNS", help="Comma-separated columns.", autocompletion=complete_column_list)] = None,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Point lookups by primary key, reading only the files whose key range can hold a key.

        Each --key is one key; repeat it to look several up in one pass. A key without its
        partition columns is searched in every partition. Keys not found are simply absent
        from the output (exit 0); -v logs the keys found and the files and bytes read.

        Examples:

        \b
          lakectl lookup shop.orders --key id=42
          lakectl lookup shop.orders --key id=42,dt=2024-01-01 --key id=7 -f json
          lakectl -v lookup shop.orders --key id=42 --select id,amount \\
              --snapshot-id 3
        """
        from core.ops.create import parse_key_list
        from core.travel import snapshot_id_of

        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        result = t.lookup(list(key or []), snapshot_id=snapshot_id_of(t, snapshot_id=snapshot_id, timestamp=timestamp, tag=tag),
                           select=parse_key_list(select) or None)
        out.arrow(result.rows)
