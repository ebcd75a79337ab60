"""Copying a table's files to another place: what ``clone`` and ``rename`` on an object store share.

Within one store a file is copied by the store itself (``FileIO.copy``: CopyObject on S3, so no
byte passes through this process and each copy appears whole); across stores (a local table
cloned to S3) its bytes are streamed in chunks. Files whose order does not matter (data, index,
manifest files: nothing reads them before a snapshot names them) are copied a few at a time.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Callable, Sequence

from core.errors import LakectlError
from core.fileio import FileIO

log = logging.getLogger(__name__)
Progress = Callable[[int, int, str], None]
CopyPair = tuple[str, str, int]  # (source path, target path, size)
_CHUNK = 8 * 1024 * 1024  # streamed copies go in pieces: data files can be larger than memory should hold
# Server-side copies wait on the store, not on this process; a few in flight hide the latency
# without flooding the store (Paimon's own copy actions default to a small thread pool too).
COPY_THREADS = 8


def copy_file(src_io: FileIO, dst_io: FileIO, src: str, dst: str) -> None:
    """Copy one file: by the store when both sides are the same store, else streamed."""
    if src_io.same_store(dst_io):
        dst_io.copy(src, dst)
        return
    with src_io.open_input(src) as reader, dst_io.open_output(dst) as writer:
        while chunk := reader.read(_CHUNK):
            writer.write(chunk)


def copy_files(src_io: FileIO, dst_io: FileIO, files: Sequence[CopyPair], *, progress: Progress | None = None,
               threads: int = COPY_THREADS, what: str = "copying files", missing_ok: bool = False) -> None:
    """Copy every pair, ``threads`` at a time, in no particular order; the first failure stops
    the rest (copies already started finish) and is raised. ``missing_ok``: a source file that
    no longer exists is skipped (a copy of a table someone is expiring)."""
    total = sum(size for _, _, size in files)
    done = 0
    lock = threading.Lock()

    def one(pair: CopyPair) -> None:
        nonlocal done
        _copy_one(src_io, dst_io, pair, missing_ok)
        with lock:
            done += pair[2]
            if progress:
                progress(done, total, what)

    if threads <= 1 or len(files) <= 1:
        for pair in files:
            one(pair)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(one, pair) for pair in files]
        finished, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for f in pending:
            f.cancel()
        for f in finished:
            f.result()  # raises the failure, if one stopped the copy


def copy_in_order(src_io: FileIO, dst_io: FileIO, files: Sequence[CopyPair], *, missing_ok: bool = False) -> None:
    """Copy the pairs one after another, in the order given (metadata whose order is the point:
    snapshots before their hints, schema files last)."""
    for pair in files:
        _copy_one(src_io, dst_io, pair, missing_ok)


def _copy_one(src_io: FileIO, dst_io: FileIO, pair: CopyPair, missing_ok: bool) -> None:
    try:
        copy_file(src_io, dst_io, pair[0], pair[1])
    except FileNotFoundError:
        if not missing_ok:
            raise
        log.debug("%s vanished before it was copied", pair[0])


def delete_files(io: FileIO, paths: Sequence[str], *, threads: int = COPY_THREADS) -> None:
    """Delete the files, ``threads`` at a time, in no particular order (the caller deletes what
    must go first or last on its own); the first failure stops the rest and is raised."""
    if threads <= 1 or len(paths) <= 1:
        for path in paths:
            io.delete(path)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(io.delete, path) for path in paths]
        finished, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for f in pending:
            f.cancel()
        for f in finished:
            f.result()


def remove_quietly(file_io: FileIO, path: str, what: str) -> None:
    """Remove ``path`` after an error; a failure here is only logged (the error that brought us
    here is the one to report)."""
    try:
        file_io.delete_tree(path)
    except (OSError, LakectlError):
        log.warning("could not remove %s %s; remove it with rm -r", what, path, exc_info=True)
