"""FileIO: every byte lakectl reads or writes goes through here (fsspec underneath).

Higher layers pass a ``FileIO`` and plain string paths; they never touch a filesystem
object. The one primitive with a real guarantee is ``try_create``: create a file only if
it does not exist yet, atomically, returning whether this caller won. Snapshot and schema
commits rest on it.

Backends, picked by URI scheme:
- local paths and ``file://``: the bytes go to a temp file that is fsync'ed, then
  ``os.link``-ed to the target. ``link`` fails with EEXIST if the target exists, so of two
  racing processes exactly one wins, and a reader never sees a half-written file (an
  ``O_EXCL`` write would expose the short file while it is being written).
- anything else fsspec knows: reads and plain writes work; ``try_create`` needs a
  conditional put and is refused until that backend is wired in.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import uuid
from dataclasses import dataclass
from typing import IO, Any

import fsspec

from core.errors import CorruptMetadataError, UsageError

log = logging.getLogger(__name__)

# Crash testing: with LAKECTL_KILL_AFTER_WRITES=N in the environment, the process SIGKILLs
# itself right before its N-th mutating file operation (write, create, hint, delete), so
# tests can stop a command at every point of its work and check what survives.
_KILL_AFTER = int(os.environ.get("LAKECTL_KILL_AFTER_WRITES", "0") or 0)
_mutations = 0


def _before_mutation() -> None:
    global _mutations
    if _KILL_AFTER:
        _mutations += 1
        if _mutations >= _KILL_AFTER:
            os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class FileStatus:
    path: str
    size: int
    is_dir: bool
    mtime: float | None = None


def join(*parts: str) -> str:
    """Join path segments with '/', the separator of every URI scheme we support."""
    out = parts[0].rstrip("/")
    for p in parts[1:]:
        p = p.strip("/")
        if p:
            out = f"{out}/{p}"
    return out


class FileIO:
    """Reads and writes files under one warehouse, local or remote."""

    def __init__(self, fs: fsspec.AbstractFileSystem, *, local: bool) -> None:
        self.fs = fs
        self.local = local

    @classmethod
    def for_uri(cls, uri: str, storage_options: dict[str, Any] | None = None) -> "FileIO":
        """Pick the backend for ``uri`` by its scheme (no scheme = local path)."""
        scheme = uri.split("://", 1)[0] if "://" in uri else "file"
        if scheme in ("file", "local"):
            return cls(fsspec.filesystem("file"), local=True)
        try:
            fs = fsspec.filesystem(scheme, **(storage_options or {}))
        except (ImportError, ValueError) as e:
            raise UsageError(f"no filesystem for {scheme}:// ({e})") from e
        return cls(fs, local=False)

    def normalize(self, path: str) -> str:
        """A path in the form this FileIO uses: absolute local paths, or the URI as given."""
        if self.local:
            if path.startswith("file://"):
                path = path[len("file://"):]
            return os.path.abspath(path)
        return path.rstrip("/")

    # ---- reads ---------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def read_bytes(self, path: str) -> bytes:
        try:
            return self.fs.cat_file(path)
        except FileNotFoundError as e:
            raise CorruptMetadataError(f"missing file {path}") from e

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptMetadataError(f"{path} is not UTF-8 text") from e

    def open_input(self, path: str) -> IO[bytes]:
        return self.fs.open(path, "rb")

    def list_dir(self, path: str) -> list[FileStatus]:
        """Direct children of ``path``; an absent directory lists as empty."""
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        out = []
        for e in entries:
            name = e["name"]
            if not self.local and "://" in path and "://" not in name:
                name = path.split("://", 1)[0] + "://" + name
            out.append(FileStatus(name, int(e.get("size") or 0), e.get("type") == "directory",
                                  e.get("mtime") or e.get("LastModified") and e["LastModified"].timestamp()))
        return out

    def walk(self, path: str) -> list[FileStatus]:
        """Every file (not directory) below ``path``, recursively; an absent directory is empty."""
        try:
            entries = self.fs.find(path, withdirs=False, detail=True)
        except FileNotFoundError:
            return []
        return [self._status(e, path) for e in entries.values() if e.get("type") != "directory"]

    def _status(self, e: dict[str, Any], base: str) -> FileStatus:
        name = e["name"]
        if not self.local and "://" in base and "://" not in name:
            name = base.split("://", 1)[0] + "://" + name
        mtime = e.get("mtime")
        if mtime is None and e.get("LastModified") is not None:
            mtime = e["LastModified"].timestamp()
        return FileStatus(name, int(e.get("size") or 0), e.get("type") == "directory", mtime)

    def list_names(self, path: str) -> list[str]:
        return [s.path.rstrip("/").rsplit("/", 1)[-1] for s in self.list_dir(path)]

    def list_numbered(self, path: str, prefix: str) -> list[int]:
        """Sorted N of the files named ``<prefix>N`` in ``path`` (snapshot-N, schema-N)."""
        ids = []
        for name in self.list_names(path):
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                ids.append(int(name[len(prefix):]))
        return sorted(ids)

    def size(self, path: str) -> int:
        return int(self.fs.size(path))

    # ---- writes --------------------------------------------------------------------
    def mkdirs(self, path: str) -> None:
        self.fs.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a new file (data, manifests). Names are unique, so no overwrite race exists."""
        _before_mutation()
        if self.local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        self.fs.pipe_file(path, data)

    def open_output(self, path: str) -> IO[bytes]:
        _before_mutation()
        if self.local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        return self.fs.open(path, "wb")

    def overwrite_hint(self, path: str, text: str) -> None:
        """Replace a small hint file (LATEST/EARLIEST). Best effort by design: hints are not truth."""
        _before_mutation()
        if self.local:
            tmp = f"{os.path.dirname(path)}/.{os.path.basename(path)}.{uuid.uuid4().hex}.tmp"
            with open(tmp, "w", encoding="ascii") as f:
                f.write(text)
            os.replace(tmp, path)
        else:
            self.fs.pipe_file(path, text.encode("ascii"))

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist. True if this call created it."""
        _before_mutation()
        if self.local:
            return _local_create_if_absent(path, data)
        raise UsageError(
            f"atomic create-if-absent is not available for {path.split('://')[0]}:// yet; refusing to commit")

    def delete(self, path: str) -> None:
        _before_mutation()
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            pass

    def remove_empty_dir(self, path: str) -> bool:
        """Remove ``path`` if it is an empty directory; False if it is not empty or absent.
        Object stores have no directories, so there it is a no-op."""
        if not self.local:
            return False
        _before_mutation()
        try:
            os.rmdir(path)
            return True
        except OSError:
            return False

    def delete_quietly(self, path: str) -> None:
        """Best-effort cleanup of files nobody references; failure only leaves an orphan."""
        try:
            self.delete(path)
        except OSError:
            log.warning("could not delete %s", path, exc_info=True)


def _local_create_if_absent(path: str, data: bytes) -> bool:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
            return True
        except OSError as e:
            if e.errno == errno.EEXIST:
                return False
            raise
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
