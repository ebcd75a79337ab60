"""Who holds a marker, whether they are still at work, and how a marker is removed.

A command that announces itself in a table (a rewrite marker, core/rewrite.py; a busy or
closing marker, core/busy.py) names itself ``host:pid:random`` and writes when it started.
Another command finding the marker asks ``is_live``: a process of this host counts while it
runs (a stalled one, Ctrl-Z, is running), one of another host until ``STALE_SECONDS`` have
passed. A marker that is not live was abandoned, and whoever finds it may clear it, but only
while it still holds the bytes read (``remove_if_unchanged``): a taker's fresh marker stays.
"""

from __future__ import annotations

import os
import socket
import time
import uuid

from core.errors import CorruptMetadataError
from core.fileio import FileIO

STALE_SECONDS = 3600.0  # a marker of another host this old is abandoned (no such command takes an hour)
# Holders of the markers this process holds now: a marker naming this process but not held any
# more (its release failed) is abandoned, not live, or the next command here would wait on itself.
HELD: set[str] = set()


def new_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def is_live(holder: str, started: float, now: float | None = None) -> bool:
    try:
        host, pid, _ = holder.split(":", 2)
    except ValueError:
        return False
    if host == socket.gethostname():
        if pid == str(os.getpid()):
            return holder in HELD
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except (ValueError, PermissionError, OSError):
            return True
        return True
    return (now if now is not None else time.time()) - started < STALE_SECONDS


def remove_if_unchanged(file_io: FileIO, path: str, content: bytes) -> None:
    """Delete the marker at ``path`` if it still holds ``content`` (gone already: nothing to do)."""
    try:
        if file_io.read_bytes(path) == content:
            file_io.delete(path)
    except (FileNotFoundError, CorruptMetadataError):
        pass
