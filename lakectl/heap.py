"""A lakectl process that moves data keeps the memory it frees, instead of faulting it in again.

A write, scan or compaction allocates and frees many arrays of about a bucket's size (sort
orders, masks, merged keys: hundreds of KiB to tens of MiB). glibc's malloc gives an array
above its mmap threshold (128 KiB to start with) fresh pages from the kernel and returns them
on free, and shrinks its heap whenever the free space at the top passes the trim threshold:
the next arrays of that size then fault every page in again, at several microseconds of
system time a fault on the 2-core VMs lakectl is measured on. Measured there (interleaved
whole processes on the 1M-row bench table, against the same code without this): a 1M-row
write 38.6k -> 14.9k minor faults (CPU 0.97x), a full `scan -f csv` 40.7k -> 14.9k (0.97x),
peak RSS unchanged (also one bucket of 3M rows scanned and compacted); commands on little
data unchanged.

The thresholds: arrays up to 32 MiB (the most glibc accepts on 64-bit) come from the heap, and
up to 64 MiB of free heap is kept. glibc's own adaptive thresholds move to about there after a
process frees a few large arrays; this skips the faults on the way. They are set once, when a
command asks for its engine (``Settings.engine_settings``), so metadata commands do not import
ctypes. A threshold the user set (``MALLOC_*_`` variables or a ``glibc.malloc`` tunable) is
left alone, and a C library without ``mallopt`` (not glibc) is left as it is. ``core`` never
does this: a library's caller owns its process.
"""

from __future__ import annotations

import os
from typing import Mapping

# mallopt parameters, from glibc's <malloc.h>
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20

_set = False


def keep_freed_memory() -> None:
    """Raise this process's malloc thresholds (see the module's docstring); once, and never
    over the user's own."""
    global _set
    if _set:
        return
    _set = True
    if _user_tuned(os.environ):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def _user_tuned(env: Mapping[str, str]) -> bool:
    return (any(k in env for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"))
            or "glibc.malloc." in env.get("GLIBC_TUNABLES", ""))
