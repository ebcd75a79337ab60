"""A per-table maintenance lease: one file created only if absent, holding its holder and expiry.

Two overlapping ``lakectl maintain`` runs must never maintain the same table at once. The
lease is ``<table>/.lakectl-maintain.lease`` (directly in the table directory, where
``remove-orphan-files`` never looks and Paimon readers never read), created with
``FileIO.try_create`` so that local disks and object stores both give one winner.

A crashed run leaves its lease behind; the expiry written in it lets the next run take it
over (at once when the holder was a process of this host that no longer runs). Take-over is delete-then-create: the stale file is deleted only if it still holds the
bytes we read (so a run that took it over a moment before us keeps its fresh lease), and
then create-if-absent decides the race again, so at most one taker wins.
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

from core.fileio import FileIO, join

LEASE_NAME = ".lakectl-maintain.lease"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Lease:
    path: str
    holder: str
    expires_at: float  # epoch seconds
    content: bytes     # exactly what this run wrote: release deletes only its own lease


def lease_path(table_path: str) -> str:
    return join(table_path, LEASE_NAME)


def _content(holder: str, expires_at: float) -> bytes:
    return json.dumps({"holder": holder, "expires_at": expires_at}, sort_keys=True).encode()


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


def new_holder() -> str:
    """A name unique to this run: host, process and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(file_io: FileIO, table_path: str, *, holder: str, ttl_seconds: float,
            now: float | None = None) -> Lease | None:
    """Take the table's lease for ``ttl_seconds``; None when a live lease of another run holds it."""
    now = time.time() if now is None else now
    path = lease_path(table_path)
    content = _content(holder, now + ttl_seconds)
    if file_io.try_create(path, content):
        return Lease(path, holder, now + ttl_seconds, content)
    try:
        existing = file_io.read_bytes(path)
    except FileNotFoundError:
        existing = None  # released between our create and our read: try once more below
    if existing is not None:
        expires = _expiry(existing)
        if expires is not None and expires > now and not _holder_is_dead(existing):
            return None  # held by a live run
        if not _delete_if_unchanged(file_io, path, existing):
            return None  # someone else took it over first
    if file_io.try_create(path, content):
        return Lease(path, holder, now + ttl_seconds, content)
    return None


def _delete_if_unchanged(file_io: FileIO, path: str, seen: bytes) -> bool:
    """Delete the stale lease only if it still holds ``seen``. A narrow window remains between
    the re-read and the delete; the create-if-absent after it still admits one winner, and the
    lease's only job is to keep two healthy runs apart, which it does."""
    try:
        if file_io.read_bytes(path) != seen:
            return False
    except FileNotFoundError:
        return True
    file_io.delete_quietly(path)
    return True


def release(file_io: FileIO, lease: Lease) -> None:
    """Delete the lease if it is still ours (a run that overran its TTL may have lost it)."""
    try:
        if file_io.read_bytes(lease.path) == lease.content:
            file_io.delete_quietly(lease.path)
    except FileNotFoundError:
        pass


def renew(file_io: FileIO, lease: Lease, ttl_seconds: float, *, now: float | None = None) -> Lease | None:
    """Push our lease's expiry ``ttl_seconds`` past ``now``; None when it is no longer ours (it
    expired and another run took it over). Only a live, unexpired lease is renewed, and no other
    run deletes a live lease of a live holder, so the read-then-overwrite cannot overwrite
    someone else's lease as long as renewals come well before the expiry."""
    now = time.time() if now is None else now
    try:
        if file_io.read_bytes(lease.path) != lease.content:
            return None
    except FileNotFoundError:
        return None
    content = _content(lease.holder, now + ttl_seconds)
    # Replaced whole (rename locally, one PUT on S3): a run reading it meanwhile sees the old
    # or the new lease, never a torn one it would take for stale.
    file_io.overwrite_hint(lease.path, content.decode("ascii"))
    return replace(lease, expires_at=now + ttl_seconds, content=content)


class Keeper:
    """Renews a lease every third of its TTL on a daemon thread while work runs under it, so
    that work longer than the TTL keeps the table; ``lease`` is the current one, ``lost`` tells
    whether a renewal found it taken over."""

    def __init__(self, file_io: FileIO, lease: Lease, ttl_seconds: float) -> None:
        self.file_io, self.lease, self.ttl = file_io, lease, ttl_seconds
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease {lease.path}", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                renewed = renew(self.file_io, self.lease, self.ttl)
            except OSError as e:  # a storage hiccup: try again at the next tick, before the expiry
                log.warning("could not renew the maintenance lease %s: %s", self.lease.path, e)
                continue
            if renewed is None:
                self.lost = True
                log.warning("the maintenance lease %s was taken over by another run", self.lease.path)
                return
            self.lease = renewed


@contextmanager
def kept(file_io: FileIO, lease: Lease, ttl_seconds: float) -> Iterator[Keeper]:
    """Hold ``lease`` for the block, renewing it; released at the end (if still ours)."""
    keeper = Keeper(file_io, lease, ttl_seconds)
    keeper._thread.start()
    try:
        yield keeper
    finally:
        keeper._stop.set()
        keeper._thread.join()
        release(file_io, keeper.lease)
