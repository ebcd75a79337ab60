"""Busy and closing markers: a command of several steps keeps ``rename`` and ``drop`` from
moving its table away half-way.

A commit is one create-if-absent, so a table renamed or dropped under it makes it fail whole
(core/commit.py). A rollback, a fast-forward, an expire, an expire-tags, a branch create or
delete, a tag rename, a consumer reset or a repair takes several steps; had the table moved between two of them,
the first steps would be in the renamed table and the rest nowhere (or in a fresh directory at
the old name), and the command could still exit 0. So:

- such a command first creates ``.lakectl-busy-<id>`` in the table directory (create-if-absent,
  never making the directory: if the table went, it stops with exit 4 before changing
  anything), then looks for ``.lakectl-closing``; if a rename or drop holds it, the command
  deletes its busy marker and exits 4. It deletes its busy marker when done.
- ``rename`` and ``drop`` first create ``.lakectl-closing`` (create-if-absent), then list the
  busy markers, and move or delete the table only once none is live; while one stays live
  for the rewriters' wait (``LAKECTL_REWRITE_WAIT_SECONDS``, 10 s) they remove their marker
  and exit 4 naming the command at work.

Each side writes its marker before it reads the other's, so of a command and a rename that
overlap at least one sees the other and stands back: never both go ahead. Markers of holders
that are gone (core/holders.py) count as absent and are removed by whoever finds them; what
their command left half-done is its own marker's business (a rewrite marker, a branch's
UNFINISHED, an expire's journal). The markers are top-level files of the table directory,
where Paimon readers and ``remove-orphan-files`` never look, like the maintenance lease.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from core import holders
from core.errors import CommitConflictError, CorruptMetadataError, NotFoundError, TableGoneError
from core.fileio import FileIO, join
from core import rewrite

log = logging.getLogger(__name__)

BUSY_PREFIX = ".lakectl-busy-"
CLOSING = ".lakectl-closing"


@dataclass(frozen=True, slots=True)
class Marker:
    path: str
    holder: str
    started: float
    what: str
    content: bytes  # the bytes read: a marker is removed only while it still holds them

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        return f"'{self.what}' by {self.holder} (since {since})"

    def is_live(self) -> bool:
        return holders.is_live(self.holder, self.started)


def is_marker(name: str) -> bool:
    """Is ``name`` (a top-level file of a table) one of these markers? A rename does not copy them."""
    return name == CLOSING or name.startswith(BUSY_PREFIX)


def _payload(holder: str, what: str) -> bytes:
    return json.dumps({"holder": holder, "started": time.time(), "what": what}, sort_keys=True).encode()


def _read(io: FileIO, path: str) -> Marker | None:
    """The marker at ``path``, or None. A torn one reads as abandoned (held by nobody)."""
    try:
        data = io.read_bytes(path)
    except (FileNotFoundError, CorruptMetadataError):
        return None
    try:
        obj = json.loads(data.decode())
        return Marker(path, str(obj["holder"]), float(obj["started"]), str(obj["what"]), data)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return Marker(path, "nobody", 0.0, "unknown", data)


def _remove(io: FileIO, marker: Marker) -> None:
    holders.remove_if_unchanged(io, marker.path, marker.content)


def running_closer(io: FileIO, root: str) -> Marker | None:
    """The live rename or drop of the table directory ``root``, if one is under way (read only:
    what a commit on an object store asks after it published, and a command refused by a
    rename's markers, to tell a running rename from a stopped one)."""
    marker = _read(io, join(root, CLOSING))
    return marker if marker is not None and marker.is_live() else None


def _live_closing(io: FileIO, root: str) -> Marker | None:
    marker = _read(io, join(root, CLOSING))
    if marker is None:
        return None
    if marker.is_live():
        return marker
    log.warning("%s stopped before it ended; removing its marker", marker.describe())
    _remove(io, marker)
    return None


@contextmanager
def working(io: FileIO, root: str, table: str, what: str) -> Iterator[None]:
    """Hold a busy marker in the table directory ``root`` while the body runs.

    Raises TableGoneError (exit 4) if the table is gone, CommitConflictError (exit 4) if a
    rename or drop of it is under way; in both cases before anything was changed."""
    holder = holders.new_holder()
    path = join(root, BUSY_PREFIX + uuid.uuid4().hex)
    gone = TableGoneError(f"cannot {what}: table {table} was renamed or dropped meanwhile; nothing was changed")
    try:
        io.try_create(path, _payload(holder, what), make_dirs=False)
    except FileNotFoundError:
        raise gone from None
    holders.HELD.add(holder)
    try:
        if not io.local and not io.exists(join(root, "schema")):
            raise gone  # an object store has no directories to be missing: look for the table
        closing = _live_closing(io, root)
        if closing is not None:
            raise CommitConflictError(f"cannot {what}: {closing.describe()} is under way on {table}; "
                                      "nothing was changed")
        _live_busy(io, root, sweep=True)  # markers of killed commands go here, not only at the next rename
        yield
    finally:
        holders.HELD.discard(holder)
        _release(io, path)


@contextmanager
def announcing(io: FileIO, root: str, table: str) -> Iterator[None]:
    """A commit's busy marker, held from its publish to the end of its checks (core/commit.py):
    lighter than ``working`` (no sweep of other markers: a commit is frequent and short).

    Raises FileNotFoundError if the table directory is gone, CommitConflictError (exit 4) if a
    rename or drop of it is under way; both before anything is published."""
    holder = holders.new_holder()
    path = join(root, BUSY_PREFIX + uuid.uuid4().hex)
    io.try_create(path, _payload(holder, "commit"), make_dirs=False)
    holders.HELD.add(holder)
    try:
        closer = _live_closing(io, root)
        if closer is not None:
            raise CommitConflictError(f"{closer.describe()} is under way on {table}; nothing was committed")
        yield
    finally:
        holders.HELD.discard(holder)
        _release(io, path)


class Closing:
    """A held closing marker; ``moved_to`` after a local rename, whose directory took it along."""

    def __init__(self, io: FileIO, marker: Marker) -> None:
        self.io, self.marker = io, marker

    def moved_to(self, new_root: str) -> None:
        """Follow the directory to ``new_root``, and remove the busy markers it took along.

        Every one of them was created after the rename listed the busy markers (it waits until
        none is live), so by a command that reads the closing marker after creating its own and
        stands back, or finds the table gone at the old path: none is at work in the renamed
        table. Left there, the marker of a long-lived process (a streaming writer) would read
        as live and hold off every later rename or drop of the new name."""
        self.marker = Marker(join(new_root, CLOSING), self.marker.holder, self.marker.started, self.marker.what,
                             self.marker.content)
        try:
            names = self.io.list_names(new_root)
        except FileNotFoundError:
            return
        for name in names:
            if name.startswith(BUSY_PREFIX):
                _release(self.io, join(new_root, name))


@contextmanager
def closing(io: FileIO, root: str, table: str, what: str, *,
            wait_seconds: float | None = None) -> Iterator[Closing]:
    """Hold the closing marker of the table directory ``root`` once no busy marker is live.

    Raises NotFoundError if the table went meanwhile, CommitConflictError (exit 4) naming the
    command at work if a busy marker (or another rename or drop) stays live ``wait_seconds``
    (default: the rewriters' wait, ``LAKECTL_REWRITE_WAIT_SECONDS``).
    The marker is removed on the way out wherever it is then (a drop deletes it with the table)."""
    holder = holders.new_holder()
    data = _payload(holder, what)
    path = join(root, CLOSING)
    deadline = time.monotonic() + (rewrite.WAIT_SECONDS if wait_seconds is None else wait_seconds)
    pause = 0.02
    while True:
        try:
            created = io.try_create(path, data, make_dirs=False)
        except FileNotFoundError:
            raise NotFoundError(f"cannot {what}: table {table} no longer exists (dropped or renamed "
                                "meanwhile); nothing was changed") from None
        waiting_on = None
        if created:
            holders.HELD.add(holder)
            try:
                waiting_on = _live_busy(io, root)
            except BaseException:
                holders.HELD.discard(holder)
                _release(io, path, data)
                raise
            if waiting_on is None:
                break
            holders.HELD.discard(holder)
            _release(io, path, data)
        else:
            waiting_on = _live_closing(io, root)
            if waiting_on is None:
                continue  # abandoned and removed, or gone meanwhile: race again
        if time.monotonic() >= deadline:
            raise CommitConflictError(f"cannot {what}: {waiting_on.describe()} is at work on {table}; "
                                      "nothing was changed, re-run it when that command has finished")
        time.sleep(pause)
        pause = min(pause * 2, 0.5)
    held = Closing(io, Marker(path, holder, 0.0, what, data))
    try:
        yield held
    finally:
        holders.HELD.discard(holder)
        _release(io, held.marker.path, held.marker.content)


def _release(io: FileIO, path: str, content: bytes | None = None) -> None:
    """Remove our marker on the way out. Failing to is no failure of the command, whose work is
    done (or undone): the marker, no longer held, reads as abandoned and the next finder
    removes it (core/holders.py)."""
    try:
        if content is None:
            io.delete(path)
        else:
            holders.remove_if_unchanged(io, path, content)
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warning("could not remove %s (%s); the next command that finds it removes it", path, e)


def _live_busy(io: FileIO, root: str, *, sweep: bool = False) -> Marker | None:
    """A live busy marker of the table, if any; abandoned ones are removed on the way (all of
    them with ``sweep``)."""
    try:
        names = io.list_names(root)
    except FileNotFoundError:
        return None
    for name in sorted(n for n in names if n.startswith(BUSY_PREFIX)):
        marker = _read(io, join(root, name))
        if marker is None:
            continue
        if marker.is_live():
            if not sweep:
                return marker
            continue
        log.warning("%s stopped before it ended; removing its busy marker", marker.describe())
        _remove(io, marker)
    return None


__all__ = ["BUSY_PREFIX", "CLOSING", "Closing", "announcing", "closing", "is_marker", "running_closer", "working"]
