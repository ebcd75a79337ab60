"""One module per subcommand; each parses options, calls core, and hands the result to Output."""

from __future__ import annotations

import typer

from lakectl.config import Settings
from lakectl.output import Output


def settings(ctx: typer.Context) -> Settings:
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = Settings()
    return root.obj


def output(ctx: typer.Context, fmt: str | None) -> Output:
    s = settings(ctx)
    return Output(s.resolve_format(fmt), quiet=s.quiet)
