"""A benchmark's results file kept as its history: each run's section goes first under the
file's title, and the sections of earlier runs, with the analysis written beside them, stay
below it (``make bench`` used to overwrite them)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path


def run_heading(what: str) -> str:
    """The heading of one run's section: when it ran, and what."""
    return f"## {dt.datetime.now().isoformat(timespec='seconds')}: {what}"


def prepend_run(out: Path, title: str, run: str) -> None:
    """Write ``run`` (a section starting with ``run_heading``) first under ``title`` in ``out``,
    keeping everything the file held below its title."""
    earlier = out.read_text().splitlines() if out.exists() else []
    if earlier and earlier[0] == title:
        earlier = earlier[1:]
    body = run.strip("\n") + "\n\n" + "\n".join(earlier).strip("\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"{title}\n\n{body.rstrip()}\n")
