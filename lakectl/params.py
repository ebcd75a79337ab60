"""Option declarations shared by several commands (one definition, one help text)."""

from __future__ import annotations

from typing import Annotated, Iterable, Optional

import typer

from core.errors import UsageError

TableArg = Annotated[str, typer.Argument(help="Table as DB.TABLE inside the warehouse, or a path/URI.",
                                         show_default=False)]
WarehouseOpt = Annotated[Optional[str], typer.Option(
    "--warehouse", "-w", help="Warehouse URI [env LAKECTL_WAREHOUSE, config 'warehouse'; default ./warehouse].",
    show_default=False)]
FormatOpt = Annotated[Optional[str], typer.Option(
    "--format", "-f", help="Output format: table, json, jsonl or csv.", show_default=False)]
PrimaryKeyOpt = Annotated[Optional[str], typer.Option("--primary-key", help="Comma-separated key columns.")]
PartitionByOpt = Annotated[Optional[str], typer.Option("--partition-by", help="Comma-separated partition columns.")]
TableOptionOpt = Annotated[Optional[list[str]], typer.Option(
    "--option", "-o", help="Table option KEY=VALUE (repeatable).")]


def parse_pairs(items: Iterable[str], *, flag: str, shape: str = "KEY=VALUE",
                shown: str | None = None) -> dict[str, str]:
    """``["k=v", ...]`` -> {"k": "v"}; a malformed item is a usage error naming the flag."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {shown or item!r} must be {shape}")
        out[key.strip()] = value.strip()
    return out
