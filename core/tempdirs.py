"""Local temporary files of lakectl processes, and the sweep that removes those of dead ones.

A write spills rows to a ``lakectl-spill-*`` directory and a Spark job ships ``core`` as a
``lakectl-core-*.zip``. A process that is SIGKILLed (by a user, the OOM killer, a scheduler)
never runs its cleanup, so these stay in the temp folder for good and can hold gigabytes of
spilled rows. Their names therefore carry the owner's pid (``lakectl-spill-<pid>-<random>``),
and local writes sweep the folder (each process at most once a minute): an entry whose pid no longer runs and that was
last modified more than ``DEAD_AFTER`` ago is removed. The age guards against a process whose
pid means nothing here (another pid namespace sharing the folder) and against a dying owner
still finishing; a name without a pid (written before pids were added) goes only after
``UNKNOWN_AFTER``. The sweep never fails the command it runs in: it only logs (debug).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time

log = logging.getLogger(__name__)

SPILL_PREFIX = "lakectl-spill-"
CORE_ZIP_PREFIX = "lakectl-core-"
CORE_ZIP_SUFFIX = ".zip"
_SHARED_PREFIX = os.path.commonprefix([SPILL_PREFIX, CORE_ZIP_PREFIX])  # "lakectl-"
DEAD_AFTER = 10 * 60  # seconds since the last change of an entry whose owner is gone
UNKNOWN_AFTER = 24 * 3600  # the same for an entry whose name has no pid


def spill_prefix() -> str:
    """The prefix of this process's spill directories (``TemporaryDirectory(prefix=...)``)."""
    return f"{SPILL_PREFIX}{os.getpid()}-"


def core_zip_prefix() -> str:
    """The prefix of this process's archive of ``core`` for Spark executors."""
    return f"{CORE_ZIP_PREFIX}{os.getpid()}-"


def _owner(rest: str) -> int | None:
    """The pid in ``<pid>-<random>`` (what follows the prefix), or None for an old-style name:
    ``tempfile``'s random part never holds a ``-``, so a name without one has no pid."""
    pid_text, dash, _ = rest.partition("-")
    if not dash or not pid_text.isdigit() or int(pid_text) <= 0:
        return None  # pid 0 would make os.kill signal our own process group
    return int(pid_text)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # PermissionError: another user's live process; anything else: assume alive
    return True


def _candidate(name: str) -> tuple[str, bool] | None:
    """(the part after the prefix, whether a directory is expected) for lakectl's names."""
    if name.startswith(SPILL_PREFIX):
        return name[len(SPILL_PREFIX):], True
    if name.startswith(CORE_ZIP_PREFIX) and name.endswith(CORE_ZIP_SUFFIX):
        return name[len(CORE_ZIP_PREFIX):-len(CORE_ZIP_SUFFIX)], False
    return None


def _is_leftover(path: str, rest: str, is_dir: bool, now: float) -> bool:
    st = os.lstat(path)
    if os.path.isdir(path) != is_dir or os.path.islink(path) or st.st_uid != os.getuid():
        return False  # not what lakectl makes there, or not ours to remove
    age = now - st.st_mtime
    pid = _owner(rest)
    if pid is None:
        return age > UNKNOWN_AFTER
    return age > DEAD_AFTER and pid != os.getpid() and not _alive(pid)


def sweep(directory: str | None = None, now: float | None = None) -> list[str]:
    """Remove the spill directories and core archives of dead lakectl processes from
    ``directory`` (the temp folder by default); returns what was removed. Never raises."""
    directory = directory or tempfile.gettempdir()
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError as e:
        log.debug("cannot list %s for leftovers of killed processes: %s", directory, e)
        return removed
    # The temp folder of a busy machine holds thousands of entries: the one prefix both kinds
    # share skips the others at C speed before any per-name work.
    for name in (n for n in names if n.startswith(_SHARED_PREFIX)):
        candidate = _candidate(name)
        if candidate is None:
            continue
        path = os.path.join(directory, name)
        try:
            if not _is_leftover(path, *candidate, now):
                continue
            if candidate[1]:
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed.append(path)
            log.debug("removed %s, left behind by a killed lakectl process", path)
        except OSError as e:  # gone meanwhile (another sweep), or not removable: leave it
            log.debug("cannot remove leftover %s: %s", path, e)
    return removed


# Folders this process swept, with when (time.monotonic()).
_SWEPT: dict[str, float] = {}
SWEEP_EVERY = 60.0  # seconds between two sweeps of one folder by one process


def sweep_now_and_then(directory: str | None = None) -> list[str]:
    """``sweep``, unless this process swept ``directory`` less than ``SWEEP_EVERY`` seconds
    ago. Leftovers must be ``DEAD_AFTER`` old before any sweep removes them, so a process
    writing many small commits loses nothing by sweeping once a minute, and saves listing a
    busy temp folder (thousands of entries: milliseconds) on every write."""
    directory = directory or tempfile.gettempdir()
    now = time.monotonic()
    last = _SWEPT.get(directory)
    if last is not None and now - last < SWEEP_EVERY:
        return []
    _SWEPT[directory] = now
    return sweep(directory)


__all__ = ["core_zip_prefix", "spill_prefix", "sweep", "sweep_now_and_then"]
