"""The bodies of read-only listings, free of the command tree: the Typer commands call them,
and so does lakectl/quick.py, which answers the plain shapes of these command lines without
building the tree. Each reads what it lists and returns the function that prints it, so a
caller knows that nothing is printed until the reading has succeeded."""

from __future__ import annotations

import dataclasses
from typing import Callable

from lakectl.config import Settings
from lakectl.output import Output


def every_when_zero(limit: int | None) -> int | None:
    """A listing's ``--limit``: 0 means every item, as it does for scan (where it lifts the
    terminal's 100-row cap); a negative one is left for core to refuse."""
    return None if limit == 0 else limit


def snapshots_listing(s: Settings, table: str, *, limit: int | None, branch: str | None,
                      warehouse: str | None, fmt: str | None) -> Callable[[], None]:
    """``lakectl snapshots``: newest first; the commit user (a UUID per writer) only in the
    script formats, where a script may need it."""
    from core.ops.history import SnapshotInfo

    out = Output(s.resolve_format(fmt), quiet=s.quiet)
    t = s.open_table(table, warehouse, branch=branch)
    history = t.history(limit=every_when_zero(limit))

    def show() -> None:
        if out.format == "table":
            columns = [f.name for f in dataclasses.fields(SnapshotInfo) if f.name != "commit_user"]
            # every field a scalar: a plain dict per row (asdict deep-copies each value)
            out.rows([{c: getattr(h, c) for c in columns} for h in history], columns, title=f"snapshots of {t.name}")
        else:
            from lakectl.output import about

            out.records(history, SnapshotInfo, about=about(t))

    return show
