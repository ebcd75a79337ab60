"""One module per subcommand; each parses options, calls core, and hands the result to Output."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

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


@contextmanager
def stop_on_sigterm(stop: threading.Event) -> Iterator[None]:
    """Within the block, SIGTERM sets ``stop``: a long-running command (a streaming write, a
    follow) finishes what it holds and ends with exit 0."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may install handlers (an embedding application's thread)
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
