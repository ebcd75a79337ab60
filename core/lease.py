"""A per-table maintenance lease: one file created only if absent, holding its holder and expiry.

Two overlapping ``lakectl maintain`` runs must never maintain the same table at once. The
lease is ``<table>/.lakectl-maintain.lease`` (directly in the table directory, where
``remove-orphan-files`` never looks and Paimon readers never read), created with
``FileIO.try_create`` so that local disks and object stores both give one winner.

A crashed run leaves its lease behind; the expiry written in it lets the next run take it
over (at once when the holder was a process of this host that no longer runs). Take-over is
delete-then-create: the stale file is deleted only if it still holds the bytes we read (so a
run that took it over a moment before us keeps its fresh lease), and then create-if-absent
decides the race again, so at most one taker wins.

A lease also records its period (``ttl_seconds``): its holder never writes an expiry further
ahead than that, so an expiry beyond one period (plus ``CLOCK_SLACK_SECONDS`` for ordinary
skew) from now was written by a host whose clock is wrong, and would otherwise keep the table
from every later run for as long as that clock is off. Such a lease is stale, and taken over
with a warning naming its holder.

A run can lose its lease while it is stopped (Ctrl-Z, a VM paused, a stall longer than the
period): another run takes it over once it expires. ``Keeper.lost_to`` tells the run, which
then leaves the table to the taker; release never deletes a lease that is not its own, and a
lease file that is gone is simply not ours any more.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterator

from core.errors import LakectlError
from core.fileio import FileIO, join

LEASE_NAME = ".lakectl-maintain.lease"

# How far past one lease period an expiry may lie before its holder's clock counts as wrong:
# hosts' clocks differ by a little, and a lease renewed on a host a second ahead of ours must
# still hold.
CLOCK_SLACK_SECONDS = 60.0

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Lease:
    path: str
    holder: str
    expires_at: float  # epoch seconds
    content: bytes     # exactly what this run wrote: release deletes only its own lease


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a lease and until when, as its file says: what a run that is kept out, or
    that lost the lease, reports."""
    name: str
    expires_at: float | None  # epoch seconds; None when the file does not say

    def __str__(self) -> str:
        return f"{self.name} (until {_when(self.expires_at)})"


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "an unreadable expiry"
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    except (OverflowError, OSError, ValueError):  # a clock so wrong the year does not fit
        return f"{epoch:.0f} epoch seconds"


def lease_path(table_path: str) -> str:
    return join(table_path, LEASE_NAME)


def _content(holder: str, expires_at: float, ttl_seconds: float) -> bytes:
    return json.dumps({"holder": holder, "expires_at": expires_at, "ttl_seconds": ttl_seconds},
                      sort_keys=True).encode()


def _read(file_io: FileIO, path: str) -> bytes | None:
    """The lease file's bytes; None when there is none (for a lease, absence is normal)."""
    return file_io.read_bytes_if_exists(path)


def _field(data: bytes, key: str) -> object:
    """One field of a lease file's content; None when it cannot be read."""
    try:
        return json.loads(data.decode()).get(key)
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None


def _holder(data: bytes) -> Holder:
    name = _field(data, "holder")
    return Holder(str(name) if name is not None else "an unknown holder", _expiry(data))


def holder_of(file_io: FileIO, table_path: str) -> Holder | None:
    """Who holds the table's lease now; None when nobody does."""
    data = _read(file_io, lease_path(table_path))
    return None if data is None else _holder(data)


def _holder_is_dead(data: bytes) -> bool:
    """The lease was written by a process of this host that no longer runs (a killed cron run):
    stale at once rather than after its expiry. Holders of other hosts wait for the expiry."""
    try:
        host, pid, _ = str(json.loads(data.decode())["holder"]).split(":", 2)
        if host != socket.gethostname():
            return False
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, PermissionError, OSError):
        return False
    return False


def _expiry(data: bytes) -> float | None:
    """The expiry of a lease file's content; None when it cannot be read (treated as stale)."""
    try:
        return float(json.loads(data.decode())["expires_at"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def _why_stale(data: bytes, now: float, ttl_seconds: float) -> str | None:
    """Why the lease in ``data`` may be taken over at ``now``; None while it is live.
    ``ttl_seconds`` stands in for the period of a lease written before leases recorded it."""
    expires = _expiry(data)
    if expires is None:
        return "unreadable"
    if expires <= now:
        return "expired"
    period = _field(data, "ttl_seconds")
    period = float(period) if isinstance(period, (int, float)) and not isinstance(period, bool) else ttl_seconds
    if expires > now + period + CLOCK_SLACK_SECONDS:
        return "wrong clock"
    if _holder_is_dead(data):
        return "holder dead"
    return None


def new_holder() -> str:
    """A name unique to this run: host, process and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(file_io: FileIO, table_path: str, *, holder: str, ttl_seconds: float,
            now: float | None = None) -> Lease | None:
    """Take the table's lease for ``ttl_seconds``; None when a live lease of another run holds it."""
    now = time.time() if now is None else now
    path = lease_path(table_path)
    content = _content(holder, now + ttl_seconds, ttl_seconds)
    if file_io.try_create(path, content, make_dirs=False):  # never re-create a dropped table
        return Lease(path, holder, now + ttl_seconds, content)
    existing = _read(file_io, path)  # None: released between our create and our read
    stale = None
    if existing is not None:
        stale = _why_stale(existing, now, ttl_seconds)
        if stale is None:
            return None  # held by a live run
        if not _delete_if_unchanged(file_io, path, existing):
            return None  # someone else took it over first
    if not file_io.try_create(path, content, make_dirs=False):
        return None
    if existing is not None and stale == "wrong clock":
        taken = _holder(existing)
        log.warning("took over the maintenance lease %s of %s: it expires at %s, more than one lease period "
                    "ahead, so that host's clock is wrong", path, taken.name, _when(taken.expires_at))
    return Lease(path, holder, now + ttl_seconds, content)


def _delete_if_unchanged(file_io: FileIO, path: str, seen: bytes) -> bool:
    """Delete the stale lease only if it still holds ``seen``. A narrow window remains between
    the re-read and the delete; the create-if-absent after it still admits one winner, and the
    lease's only job is to keep two healthy runs apart, which it does."""
    current = _read(file_io, path)
    if current is None:
        return True
    if current != seen:
        return False
    file_io.delete_quietly(path)
    return True


def release(file_io: FileIO, lease: Lease) -> None:
    """Delete the lease if it is still ours (a run that overran its TTL may have lost it)."""
    if _read(file_io, lease.path) == lease.content:
        file_io.delete_quietly(lease.path)


def renew(file_io: FileIO, lease: Lease, ttl_seconds: float, *, now: float | None = None) -> Lease | None:
    """Push our lease's expiry ``ttl_seconds`` past ``now``; None when it is no longer ours (it
    expired and another run took it over). Only a live, unexpired lease is renewed, and no other
    run deletes a live lease of a live holder, so the read-then-overwrite cannot overwrite
    someone else's lease as long as renewals come well before the expiry."""
    now = time.time() if now is None else now
    if _read(file_io, lease.path) != lease.content:
        return None  # another run's now, or gone (taken over and released since)
    content = _content(lease.holder, now + ttl_seconds, ttl_seconds)
    # Replaced whole (rename locally, one PUT on S3): a run reading it meanwhile sees the old
    # or the new lease, never a torn one it would take for stale.
    file_io.overwrite_hint(lease.path, content.decode("ascii"))
    return replace(lease, expires_at=now + ttl_seconds, content=content)


class Keeper:
    """Renews a lease every third of its TTL on a daemon thread while work runs under it, so
    that work longer than the TTL keeps the table; ``lease`` is the current one, ``lost_to``
    tells the work whether another run has taken it over."""

    def __init__(self, file_io: FileIO, lease: Lease, ttl_seconds: float) -> None:
        self.file_io, self.lease, self.ttl = file_io, lease, ttl_seconds
        self.lost = False
        self._stop = threading.Event()
        # A renewal rewrites the file, then replaces ``lease``: lost_to must not read the file
        # between the two and take our own renewed lease for someone else's.
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"lease {lease.path}", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                with self._lock:
                    renewed = renew(self.file_io, self.lease, self.ttl)
                    if renewed is not None:
                        self.lease = renewed
            except (OSError, LakectlError) as e:  # a storage hiccup: try again at the next tick
                log.warning("could not renew the maintenance lease %s: %s", self.lease.path, e)
                continue
            if renewed is None:
                self.lost = True
                log.warning("the maintenance lease %s was taken over by another run", self.lease.path)
                return

    def lost_to(self) -> str | None:
        """None while the lease is still ours; else who holds the table now, for the report
        (read from the file now: after a stop, the renewal thread may not have looked yet)."""
        with self._lock:
            current = _read(self.file_io, self.lease.path)
            if current == self.lease.content:
                return None
        self.lost = True
        if current is None:
            return "another run, which took it over and has released it since"
        return str(_holder(current))


@contextmanager
def kept(file_io: FileIO, lease: Lease, ttl_seconds: float) -> Iterator[Keeper]:
    """Hold ``lease`` for the block, renewing it; released at the end (if still ours). A
    release that fails leaves the lease to expire, and never fails the work done under it."""
    keeper = Keeper(file_io, lease, ttl_seconds)
    keeper._thread.start()
    try:
        yield keeper
    finally:
        keeper._stop.set()
        keeper._thread.join()
        try:
            release(file_io, keeper.lease)
        except (OSError, LakectlError) as e:
            log.warning("could not release the maintenance lease %s (it expires by itself): %s",
                        keeper.lease.path, e)
