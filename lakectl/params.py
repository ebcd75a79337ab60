"""Option declarations shared by several commands (one definition, one help text)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lakectl.completion import (complete_branch, complete_format, complete_option_pair, complete_scan_format,
                                complete_table, complete_tag)

TableArg = Annotated[str, typer.Argument(help="Table as DB.TABLE inside the warehouse, or a path/URI.",
                                         metavar="DB.TABLE", show_default=False, autocompletion=complete_table)]
WarehouseOpt = Annotated[Optional[str], typer.Option(
    "--warehouse", "-w", help="Warehouse URI [env LAKECTL_WAREHOUSE, config 'warehouse'; default ./warehouse].",
    metavar="URI", show_default=False)]
FormatOpt = Annotated[Optional[str], typer.Option(
    "--format", "-f", help="Output format: table, json, jsonl or csv [env LAKECTL_FORMAT; default table].",
    metavar="FORMAT", show_default=False, autocompletion=complete_format)]
ScanFormatOpt = Annotated[Optional[str], typer.Option(
    "--format", "-f", help="Output format: table, json, jsonl, csv or parquet (rows to stdout, not a terminal) "
                           "[env LAKECTL_FORMAT; default table].",
    metavar="FORMAT", show_default=False, autocompletion=complete_scan_format)]
PrimaryKeyOpt = Annotated[Optional[str], typer.Option("--primary-key", help="Comma-separated key columns.",
                                                      metavar="COLUMNS")]
PartitionByOpt = Annotated[Optional[str], typer.Option("--partition-by", help="Comma-separated partition columns.",
                                                       metavar="COLUMNS")]
TableOptionOpt = Annotated[Optional[list[str]], typer.Option(
    "--option", "-o", help="Table option KEY=VALUE (repeatable).", metavar="KEY=VALUE",
    autocompletion=complete_option_pair)]
PartitionsOpt = Annotated[Optional[list[str]], typer.Option(
    "--partition", "-p", help="Only these partitions: COLUMN=VALUE[,...], several joined by ; (repeatable).",
    metavar="COL=VALUE", show_default=False)]
TimestampOpt = Annotated[Optional[str], typer.Option(
    "--timestamp", help="As of the latest snapshot at or before this time (ISO 8601 or epoch ms).", metavar="TIME",
    show_default=False)]
TagOpt = Annotated[Optional[str], typer.Option("--tag", help="As of the snapshot of this tag.", metavar="NAME",
                                               autocompletion=complete_tag, show_default=False)]
BranchOpt = Annotated[Optional[str], typer.Option(
    "--branch", help="Work on this branch of the table (its own snapshots, schemas and tags; default main).",
    metavar="NAME", show_default=False, autocompletion=complete_branch)]
