"""FileIO: every byte lakectl reads or writes goes through here (fsspec underneath; a local
disk's reads, listings and new files with ``os`` alone, so that a local command need not
import fsspec).

Higher layers pass a ``FileIO`` and plain string paths; they never touch a filesystem
object. The one primitive with a real guarantee is ``try_create``: create a file only if
it does not exist yet, atomically, returning whether this caller won. Snapshot and schema
commits rest on it.

Backends, picked by URI scheme:
- local paths and ``file://``: the bytes go to a temp file that is fsync'ed, then
  ``os.link``-ed to the target. ``link`` fails with EEXIST if the target exists, so of two
  racing processes exactly one wins, and a reader never sees a half-written file (an
  ``O_EXCL`` write would expose the short file while it is being written).
- ``s3://`` (s3fs): ``try_create`` is a conditional PUT (``If-None-Match: *``): the store
  refuses the second of two racing creates with 412, which counts as "lost" unless the object
  holds exactly our bytes (our own PUT landed, its response was lost and the client's retry
  got the 412). A 409 (a conditional write of the key in flight) is an unknown outcome.
  Directory listings are never cached, since a stale listing could hide a new snapshot.
- a store that cannot do conditional puts (``conditional_put=False``, or a scheme without
  them): ``try_create`` checks and writes under an exclusive lock on ``lock_file``, a local
  file every committer shares; without one it refuses to commit rather than risk two
  writers both taking snapshot-N.

S3 setup problems surface as one typed error each (``storage_error``): no credentials,
credentials refused, endpoint unreachable (after ``connect-timeout`` seconds and ``retries``
further attempts, defaults 3 s and 1, so a wrong endpoint fails fast), bucket missing (checked
once per bucket the first time something reads as absent, so a missing bucket never reads
as a missing table).

Fault injection for tests: ``LAKECTL_FAULT="kill|fail|stall:OP:N"`` SIGKILLs the process,
raises OSError, or stalls it, right before its N-th operation of kind OP (``N-M``: each of the
N-th to M-th, so that two threads of one process can be held still at once; read, write, delete,
list, create, any; ``mutation``: every change of storage, the write, create and delete kinds
plus a directory made, whatever the backend; ``publish``: the create of a ``snapshot-N`` by
a commit, counted on its own and never by ``any``; or ``published``: the checks a commit makes
right after its ``snapshot-N`` landed, likewise); ``LAKECTL_KILL_AFTER_WRITES=N`` kills
before the N-th mutating operation. ``inject_fault`` does the same in-process. A stall is a
committer frozen by a GC pause or Ctrl-Z: the process creates the file named by
``LAKECTL_STALL_FILE`` (writing into it which mutation it stopped before) and waits until
someone deletes it (at most ``LAKECTL_STALL_SECONDS``, default 300), so a test knows exactly
when the stalled process holds still and when it goes on.

``LAKECTL_FAULT_TRACE=<file>`` appends one line per mutation, ``N OP PATH`` (N counted as
``mutation:N`` counts; OP says what it was: write, create, delete, hint, copy, rename, rmdir,
rmtree, mkdir), so that a harness can count a command's mutation points and name the one a
stall stopped at.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import functools
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    import fsspec
    import pyarrow as pa

from core.errors import (BucketNotFoundError, CorruptMetadataError, LakectlError, StorageAccessError,
                         StorageCredentialsError, StorageError, StorageFullError, StorageRefusedError,
                         StorageUnreachableError, UsageError)

log = logging.getLogger(__name__)

OPERATIONS = ("read", "write", "create", "delete", "list")
PUBLISH = "publish"  # a commit's create of snapshot-N (also a "create"); matched only by name
PUBLISHED = "published"  # the checks right after a commit's snapshot-N landed; matched only by name
# A directory made on its own (mkdirs): a mutation, but of none of the kinds above, so that
# faults counting write, create, delete or any count what they always counted.
MKDIR = "mkdir"
_MUTATIONS = ("write", "create", "delete", MKDIR)


@dataclass(slots=True)
class _Fault:
    action: str  # "kill" or "fail"
    operation: str  # one of OPERATIONS, "mutation" or "any"
    at: int  # the N-th matching operation faults
    last: int = 0  # ... and each one up to this (0: only the N-th)
    seen: int = 0
    # Engines run FileIO calls on thread pools: counting must not lose an increment, or the
    # N-th operation could go unfaulted.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def check(self, operation: str, what: str = "") -> None:
        """Count ``operation`` and fault if it is the chosen one; ``what`` (the traced kind
        and path) goes into a stall's file, so a test can say where the process stopped."""
        matches = self.operation in (operation, "any") or (self.operation == "mutation" and operation in _MUTATIONS)
        if operation == MKDIR and self.operation == "any":
            matches = False
        if not matches or (operation in (PUBLISH, PUBLISHED) and self.operation != operation):
            return
        with self.lock:
            self.seen += 1
            seen = self.seen
        if seen < self.at:
            return
        if self.action == "kill":
            import signal  # only a fault-injected run gets here

            os.kill(os.getpid(), signal.SIGKILL)
        if seen > max(self.at, self.last):
            return
        if self.action == "stall":
            _stall(f"{self.operation} #{seen}: {what}")
        else:
            raise OSError(errno.EIO, f"injected fault before {operation} #{seen}")


def _stall(operation: str) -> None:
    """Hold still until the test deletes the stall file (see the module docstring)."""
    path = os.environ.get("LAKECTL_STALL_FILE")
    if not path:
        raise UsageError("LAKECTL_FAULT=stall:... needs LAKECTL_STALL_FILE (the file to wait on)")
    limit = float(os.environ.get("LAKECTL_STALL_SECONDS", "300"))
    with open(path, "a") as f:  # appended: threads stalled at once each leave their line
        f.write(f"{os.getpid()} stalled before {operation}\n")
    deadline = time.monotonic() + limit
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


def _fault_from_env() -> _Fault | None:
    spec = os.environ.get("LAKECTL_FAULT", "")
    if spec:
        action, operation, at = spec.split(":")
        first, dash, last = at.partition("-")
        if action not in ("kill", "fail", "stall") or operation not in (*OPERATIONS, PUBLISH, PUBLISHED, "any",
                                                                         "mutation") \
                or not first.isdigit() or (dash and not last.isdigit()):
            raise UsageError(f"LAKECTL_FAULT={spec!r} must be kill|fail|stall:OPERATION:N or N-M")
        return _Fault(action, operation, int(first), int(last or 0))
    kill_after = int(os.environ.get("LAKECTL_KILL_AFTER_WRITES", "0") or 0)
    return _Fault("kill", "mutation", kill_after) if kill_after else None


_fault: _Fault | None = _fault_from_env()


@dataclass(slots=True)
class _Trace:
    """``LAKECTL_FAULT_TRACE``: one line per mutation, numbered as ``mutation:N`` counts."""

    path: str
    seen: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, what: str) -> None:
        with self.lock:
            self.seen += 1
            # Appended and closed per line: a process stalled or killed right after has it on disk.
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(f"{self.seen} {what}\n")


_trace: _Trace | None = _Trace(os.environ["LAKECTL_FAULT_TRACE"]) if os.environ.get("LAKECTL_FAULT_TRACE") else None


def _before(operation: str, path: str = "", kind: str = "") -> None:
    """The fault point (and trace line) right before an operation on ``path``; ``kind`` names
    a mutation more closely than the ``operation`` it is counted as (a hint is a write)."""
    what = f"{kind or operation} {path}".strip()
    if _trace is not None and operation in _MUTATIONS:
        _trace.record(what)
    if _fault is not None:
        _fault.check(operation, what)


def before_publish() -> None:
    """The fault point of a commit's snapshot publish (``LAKECTL_FAULT=...:publish:N``)."""
    _before(PUBLISH)


def after_publish() -> None:
    """The fault point between a commit's publish and its checks (``LAKECTL_FAULT=...:published:N``)."""
    _before(PUBLISHED)


@contextlib.contextmanager
def inject_fault(action: str, operation: str, at: int) -> Iterator[_Fault]:
    """Within the block, fault (``fail``: raise OSError once; ``kill``: SIGKILL) right before
    the ``at``-th operation of kind ``operation``; yields the fault to read ``seen`` from."""
    global _fault
    previous, _fault = _fault, _Fault(action, operation, at)
    try:
        yield _fault
    finally:
        _fault = previous


@dataclass(frozen=True, slots=True)
class FileStatus:
    path: str
    size: int
    is_dir: bool
    mtime: float | None = None
    # The object store's ETag (from walk): it changes when a file is rewritten, even within the
    # second that LastModified resolves to. None on a local disk.
    etag: str | None = None


def join(*parts: str) -> str:
    """Join path segments with '/', the separator of every URI scheme we support."""
    out = parts[0].rstrip("/")
    for p in parts[1:]:
        p = p.strip("/")
        if p:
            out = f"{out}/{p}"
    return out


def local_path(path: str) -> str:
    """A local path without its ``file://`` or ``file:`` prefix (pypaimon writes external paths
    as ``file:/...``), as fsspec's local filesystem strips it."""
    for prefix in ("file://", "file:", "local://"):
        if path.startswith(prefix):
            path = path[len(prefix):]
            break
    return os.path.abspath(path)


def _local_list_dir(path: str) -> list[FileStatus]:
    """list_dir on a local disk with os alone, as fsspec's local ls answers: a file lists as
    itself, an absent path as empty; symlinks are followed."""
    path = local_path(path)
    try:
        entries = [e.path for e in os.scandir(path)]
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        entries = [path]
    out = []
    for name in entries:
        try:
            st = os.stat(name)
        except FileNotFoundError:  # removed between the listing and the stat
            continue
        out.append(FileStatus(name, st.st_size, os.path.isdir(name), st.st_mtime))
    return out


def _local_list_names(path: str) -> list[str]:
    """The names ``_local_list_dir`` lists, without its stat of each entry."""
    path = local_path(path)
    try:
        return os.listdir(path)
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        return [os.path.basename(path)]


# Keyed by size and mtime too, so that a file replaced under the same name (a test's rewrite,
# a restored backup) is read afresh. Only small files are kept, the many manifests of small
# commits whose per-file cost adds up: a big manifest's decoded entries take tens of times
# its bytes, and a long-running writer or follower must not hold the table's history.
_DECODED_MAX_FILE = 64 * 1024
_DECODED_FILES = 256


_decoded: "collections.OrderedDict[tuple[str, int, int, Any], Any]" = collections.OrderedDict()
_decoded_lock = threading.Lock()
_MISSING = object()


def _decoded_key(local: str, decode: Callable[[bytes], Any]) -> tuple[str, int, int, Any] | None:
    """The cache key of a local file as it is now, or None if it is missing or too big."""
    try:
        st = os.stat(local)
    except FileNotFoundError:
        return None
    if st.st_size > _DECODED_MAX_FILE:
        return None
    return (local, st.st_size, st.st_mtime_ns, decode)


def _keep_decoded(key: tuple[str, int, int, Any], value: Any) -> None:
    with _decoded_lock:
        _decoded[key] = value
        _decoded.move_to_end(key)
        while len(_decoded) > _DECODED_FILES:
            _decoded.popitem(last=False)


def _cached_decoded(key: tuple[str, int, int, Any]) -> Any:
    """The kept value of ``key``, or ``_MISSING``."""
    with _decoded_lock:
        value = _decoded.get(key, _MISSING)
        if value is not _MISSING:
            _decoded.move_to_end(key)
        return value


def numbered(name: str, prefix: str) -> int | None:
    """N of a file named ``<prefix>N`` (snapshot-N, schema-N); None for any other name."""
    digits = name[len(prefix):] if name.startswith(prefix) else ""
    return int(digits) if digits.isdigit() else None


def _utf8(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorruptMetadataError(f"{path} is not UTF-8 text") from e


def _store_errors(method: Any) -> Any:
    """Turn the object store's setup failures inside ``method`` into ``StorageError``s."""

    @functools.wraps(method)
    def wrapper(self: "FileIO", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (LakectlError, FileNotFoundError, FileExistsError):
            raise
        except Exception as e:
            path = str(args[0]) if args else None
            # An object store's refusal is first a setup problem (s3fs raises PermissionError
            # for AccessDenied, which storage_error names with its S3 code).
            mapped = refused_error(e, path) if self.local else storage_error(e, path) or refused_error(e, path)
            if mapped is None:
                raise
            if isinstance(mapped, StorageAccessError) and mapped.code == "403" and args:
                mapped = self._refusal_reason(str(args[0])) or mapped
            raise mapped from e

    return wrapper


class FileIO:
    """Reads and writes files under one warehouse, local or remote."""

    def __init__(self, fs: "fsspec.AbstractFileSystem | None", *, local: bool, scheme: str = "file",
                 storage_options: dict[str, Any] | None = None) -> None:
        self._fs = fs  # None: a local disk's fsspec filesystem, made on first use (see fs)
        self.local = local
        self.scheme = scheme
        options = dict(storage_options or {})
        # lakectl's own keys ride along with the fsspec options (they travel together to
        # Spark executors); the filesystem never sees them.
        self.conditional_put = bool(options.pop(CONDITIONAL_PUT, scheme in _CONDITIONAL_PUT_SCHEMES))
        self.lock_file = options.pop(LOCK_FILE, None)
        self._options = options
        self._buckets_seen: set[str] = set()  # buckets known to exist (see _confirm_bucket)

    @classmethod
    def for_uri(cls, uri: str, storage_options: dict[str, Any] | None = None) -> "FileIO":
        """Pick the backend for ``uri`` by its scheme (no scheme = local path).

        ``storage_options``: fsspec options of the scheme (for s3: key, secret, client_kwargs,
        ...), merged over the defaults set with ``configure``, plus lakectl's
        ``CONDITIONAL_PUT`` and ``LOCK_FILE``."""
        scheme = uri.split("://", 1)[0] if "://" in uri else "file"
        if scheme in ("file", "local"):
            return cls(None, local=True)
        import fsspec  # here, not at the top: see the fs property
        options = {**_DEFAULT_OPTIONS.get(scheme, {}), **(storage_options or {})}
        fs_options = {k: v for k, v in options.items() if k not in (CONDITIONAL_PUT, LOCK_FILE)}
        if scheme in ("s3", "s3a"):
            # A cached listing could miss a snapshot another writer just committed.
            fs_options.setdefault("use_listings_cache", False)
            # fsspec's instance cache is kept: a new S3 client costs ~0.1 s of CPU (botocore
            # loads its service models, builds an SSL context), and a command opens the same
            # store many times. fsspec keys the cache by every option and the process (it is
            # cleared after a fork), so other credentials or endpoints and Spark's forked
            # workers never share a client; threads do, safely: every request of an async
            # filesystem runs on fsspec's one event-loop thread, each on its own connection.
            fs_options["config_kwargs"] = _connect_config(fs_options.get("config_kwargs"))
        try:
            fs = fsspec.filesystem("s3" if scheme == "s3a" else scheme, **fs_options)
        except (ImportError, ValueError, TypeError) as e:
            raise UsageError(f"no filesystem for {scheme}:// ({e})") from e
        return cls(fs, local=False, scheme=scheme, storage_options=options)

    @property
    def fs(self) -> "fsspec.AbstractFileSystem":
        """The fsspec filesystem. Importing fsspec costs 70-120 ms (it pulls in asyncio and every
        compression codec), so a local disk gets it only when an operation needs more than the
        metadata reads below do with os (exists, read_bytes, list_dir): `lakectl snapshots` and
        completion never import it."""
        if self._fs is None:
            import fsspec

            self._fs = fsspec.filesystem("file")
        return self._fs

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as (scheme, options), so Spark tasks rebuild the same store with the same
        settings instead of shipping a live client."""
        options = {**self._options, CONDITIONAL_PUT: self.conditional_put}
        if self.lock_file:
            options[LOCK_FILE] = self.lock_file
        return (FileIO.for_uri, (f"{self.scheme}://" if not self.local else "file://", options))

    def normalize(self, path: str) -> str:
        """A path in the form this FileIO uses: absolute local paths, or the URI as given."""
        if self.local:
            if path.startswith("file://"):
                path = path[len("file://"):]
            return os.path.abspath(path)
        return path.rstrip("/")

    def _refusal_reason(self, path: str) -> StorageError | None:
        """Why the store refused a request whose response had no body (a HEAD's bare 403):
        the same credentials on a GET of ``path``'s bucket listing, whose error names it."""
        if self.scheme not in ("s3", "s3a"):
            return None
        bucket = path.split("://", 1)[-1].split("/", 1)[0]
        try:
            self.fs.call_s3("list_objects_v2", Bucket=bucket, MaxKeys=1)
        except Exception as e:  # noqa: BLE001 - only its reason is wanted
            return storage_error(e)
        return None

    # ---- reads ---------------------------------------------------------------------
    def _confirm_bucket(self, path: str) -> None:
        """Raise BucketNotFoundError if ``path``'s bucket does not exist. Called when something
        reads as absent: object stores report a missing bucket like a missing key, and "table
        does not exist" would send the user looking in the wrong place. One HEAD per bucket."""
        if self.local or self.scheme not in ("s3", "s3a"):
            return
        bucket = path.split("://", 1)[-1].split("/", 1)[0]
        if not bucket or bucket in self._buckets_seen:
            return
        try:
            self.fs.call_s3("head_bucket", Bucket=bucket)
        except FileNotFoundError as e:
            raise BucketNotFoundError(f"bucket {bucket} does not exist (at {_endpoint_of(self._options)})") from e
        self._buckets_seen.add(bucket)

    @_store_errors
    def exists(self, path: str) -> bool:
        _before("read")
        if os.path.exists(local_path(path)) if self.local else self.fs.exists(path):
            return True
        self._confirm_bucket(path)
        return False

    @_store_errors
    def read_bytes(self, path: str) -> bytes:
        _before("read")
        try:
            if self.local:
                with open(local_path(path), "rb") as f:
                    return f.read()
            return self._get(path)
        except FileNotFoundError as e:
            self._confirm_bucket(path)
            raise CorruptMetadataError(f"missing file {path}") from e

    def _get(self, path: str) -> bytes:
        """A whole object in one GET. s3fs's ``cat_file`` otherwise sends a HEAD first (to
        split big objects into concurrent ranged GETs), doubling the round trips of every
        metadata read, which are nearly all small."""
        if self.scheme in ("s3", "s3a"):
            return self.fs.cat_file(path, max_concurrency=1)
        return self.fs.cat_file(path)

    @_store_errors
    def read_decoded(self, path: str, decode: Callable[[bytes], Any]) -> Any:
        """``decode(self.read_bytes(path))`` for a file that never changes once written (a
        manifest, a manifest list): on a local disk the result is kept for the process, so
        that a write's plan, its commit and the compaction check after it decode each
        manifest once. ``decode`` must return an immutable value."""
        key = _decoded_key(local_path(path), decode) if self.local else None
        if key is None:  # a missing file's read says which file is missing, as reads do
            return decode(self.read_bytes(path))
        _before("read")
        value = _cached_decoded(key)
        if value is _MISSING:
            try:
                with open(key[0], "rb") as f:
                    data = f.read()
            except FileNotFoundError as e:  # removed since the stat: say so as read_bytes does,
                raise CorruptMetadataError(f"missing file {path}") from e  # so a lost race replans
            value = decode(data)
            _keep_decoded(key, value)
        return value

    def write_decoded(self, path: str, data: bytes, decode: Callable[[bytes], Any], value: Any) -> None:
        """``write_bytes(path, data)`` of a new file that ``read_decoded(path, decode)`` will
        want back, with ``value`` (what ``decode(data)`` returns) kept for it: the commit's
        new manifests are read again by the compaction check after it and by the next
        write's plan, and need not be decoded then. The caller vouches that ``value`` equals
        ``decode(data)``."""
        self.write_bytes(path, data)
        key = _decoded_key(local_path(path), decode) if self.local else None
        if key is not None and key[1] == len(data):
            _keep_decoded(key, value)

    def read_text(self, path: str) -> str:
        return _utf8(self.read_bytes(path), path)

    def read_bytes_if_exists(self, path: str) -> bytes | None:
        """``read_bytes(path)``, or None if there is no such file: one request on an object
        store, where an existence check first would be a second."""
        try:
            return self.read_bytes(path)
        except CorruptMetadataError as e:
            if isinstance(e.__cause__, FileNotFoundError):
                return None
            raise

    def read_text_if_exists(self, path: str) -> str | None:
        """``read_text(path)``, or None if there is no such file (``read_bytes_if_exists``)."""
        data = self.read_bytes_if_exists(path)
        return None if data is None else _utf8(data, path)

    @_store_errors
    def open_input(self, path: str) -> IO[bytes]:
        _before("read")
        return self.fs.open(path, "rb")

    @_store_errors
    def list_dir(self, path: str) -> list[FileStatus]:
        """Direct children of ``path``; an absent directory lists as empty."""
        _before("list")
        if self.local:
            return _local_list_dir(path)
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            self._confirm_bucket(path)
            return []
        return [self._status(e, path) for e in entries]

    @_store_errors
    def walk(self, path: str) -> list[FileStatus]:
        """Every file (not directory) below ``path``, recursively; an absent directory is empty."""
        _before("list")
        try:
            entries = self.fs.find(path, withdirs=False, detail=True)
        except FileNotFoundError:
            entries = {}
        if not entries:
            self._confirm_bucket(path)
            return []
        return [self._status(e, path) for e in entries.values() if e.get("type") != "directory"]

    def _status(self, e: dict[str, Any], base: str) -> FileStatus:
        name = e["name"]
        if not self.local and "://" in base and "://" not in name:
            name = base.split("://", 1)[0] + "://" + name
        mtime = e.get("mtime")
        if mtime is None and e.get("LastModified") is not None:
            mtime = e["LastModified"].timestamp()
        return FileStatus(name, int(e.get("size") or 0), e.get("type") == "directory", mtime, e.get("ETag"))

    def list_names(self, path: str) -> list[str]:
        """Names of the direct children of ``path``, as ``list_dir`` lists them."""
        if self.local:
            # Names only: no stat per entry (list_numbered lists snapshot/ and schema/ several
            # times a write, and snapshot/ holds every retained snapshot).
            _before("list")
            return _local_list_names(path)
        return [s.path.rstrip("/").rsplit("/", 1)[-1] for s in self.list_dir(path)]

    def list_numbered(self, path: str, prefix: str) -> list[int]:
        """Sorted N of the files named ``<prefix>N`` in ``path`` (snapshot-N, schema-N)."""
        return sorted(n for n in (numbered(name, prefix) for name in self.list_names(path)) if n is not None)

    def refuse_file_in_the_way(self, path: str) -> None:
        """Raise StorageRefusedError if ``path`` or a directory above it is a regular file (a
        warehouse given as a file's path), which would otherwise read as "does not exist".
        Local disks only: object stores have no directories to be in the way."""
        if not self.local:
            return
        current = os.path.abspath(path)
        while True:
            if os.path.isfile(current):
                raise StorageRefusedError("not a directory (a file is in the way)", current, errno.ENOTDIR)
            parent = os.path.dirname(current)
            if parent == current or os.path.isdir(current):
                return
            current = parent

    @_store_errors
    def size(self, path: str) -> int:
        _before("read")
        return int(self.fs.size(path))

    # ---- writes --------------------------------------------------------------------
    @_store_errors
    def mkdirs(self, path: str) -> None:
        _before(MKDIR, path)
        self.fs.makedirs(path, exist_ok=True)

    @_store_errors
    def write_bytes(self, path: str, data: bytes | pa.Buffer) -> None:
        """Write a new file (data, manifests). Names are unique, so no overwrite race exists.
        ``data`` may be an Arrow buffer (an encoded data file), written without a copy locally."""
        _before("write", path)
        if self.local:
            path = local_path(path)  # an external data path may be file:/... (pypaimon's spelling)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            # what fsspec's local pipe_file does, without importing fsspec (see fs)
            with open(path, "wb") as f:
                f.write(data)
            return
        # fsspec's stores take bytes
        self.fs.pipe_file(path, data if isinstance(data, bytes) else memoryview(data).tobytes())

    @_store_errors
    def open_output(self, path: str) -> IO[bytes]:
        _before("write", path)
        if self.local:
            path = local_path(path)  # an external data path may be file:/... (pypaimon's spelling)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "wb")
        return self.fs.open(path, "wb")

    def same_store(self, other: "FileIO") -> bool:
        """True when ``other`` reaches the same store with the same settings, so a copy between
        them can be ``copy`` (the store's own) rather than bytes streamed through this process."""
        if self is other or (self.local and other.local):
            return True
        same_scheme = _store_scheme(self.scheme) == _store_scheme(other.scheme)  # s3a:// is s3://
        return not self.local and not other.local and same_scheme and self._options == other._options

    @_store_errors
    def copy(self, src: str, dst: str) -> None:
        """Copy one file to another path of this store, replacing ``dst``. On an object store the
        store copies it (CopyObject: no byte passes through this process, and the new object
        appears whole); on a local disk, a file copy. A missing ``src`` is FileNotFoundError."""
        _before("write", dst, "copy")
        if self.local:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
        self.fs.cp_file(src, dst)

    @_store_errors
    def move(self, src: str, dst: str) -> None:
        """Move one file to another path of this store, replacing ``dst`` (``migrate --in-place``).
        On a local disk ``os.rename``: atomic within a filesystem; across filesystems a copy then
        a delete, so a kill between them leaves ``src`` whole. Elsewhere the store's ``mv`` (a
        copy then a delete: a kill between them leaves both, ``dst`` whole)."""
        _before("write", dst, "move")
        if self.local:
            src, dst = local_path(src), local_path(dst)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            try:
                os.rename(src, dst)
            except OSError as e:
                if e.errno != errno.EXDEV:
                    raise
                import shutil

                shutil.copyfile(src, dst)
                os.unlink(src)
            return
        self.fs.mv(src, dst)

    @_store_errors
    def overwrite_hint(self, path: str, text: str) -> None:
        """Replace a small whole file (the LATEST/EARLIEST hints, a consumer's position), creating
        its directory if needed; a reader sees the old or the new content, never a mix."""
        _before("write", path, "hint")
        if self.local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{os.path.dirname(path)}/.{os.path.basename(path)}.{os.urandom(16).hex()}.tmp"
            try:
                with open(tmp, "w", encoding="ascii") as f:
                    f.write(text)
                os.replace(tmp, path)
            except OSError:
                # A full disk fails the write at close: leave no temp file behind.
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        else:
            self.fs.pipe_file(path, text.encode("ascii"))

    def check_atomic_create(self) -> None:
        """Raise UsageError unless ``try_create`` is atomic here; committers call it before
        they write anything, so a refused commit leaves no manifests behind."""
        if self.local or self.conditional_put or self.lock_file:
            return
        raise UsageError(
            f"{self.scheme}:// cannot create snapshot or schema files atomically here (no conditional put); "
            "refusing to commit. Configure a commit lock file shared by all writers (lock-file) "
            "or a store with conditional puts")

    @_store_errors
    def try_create(self, path: str, data: bytes, *, make_dirs: bool = True) -> bool:
        """Create ``path`` with ``data`` only if it does not exist. True if this call created it.

        ``make_dirs=False`` (a commit's ``snapshot-N`` for N > 1): on a local disk, a missing
        directory raises FileNotFoundError instead of being made, so a commit whose table was
        renamed or dropped under it cannot bring the old directory back."""
        self.check_atomic_create()
        _before("create", path)
        if self.local:
            return _local_create_if_absent(path, data, make_dirs)
        if self.conditional_put:
            return self._conditional_put(path, data)
        with _exclusive_lock(self.lock_file):
            if self.fs.exists(path):
                return False
            self.fs.pipe_file(path, data)
            return True

    def _conditional_put(self, path: str, data: bytes) -> bool:
        try:
            self.fs.pipe_file(path, data, mode="create")
            return True
        except FileExistsError:
            pass
        except OSError as e:
            refusal = _refusal(e)
            if refusal is None:
                raise
            if refusal == "busy":
                # Another conditional write of the key is in flight, and it may be our own
                # earlier try (the client retries a PUT whose response was lost): unknown.
                raise OSError(errno.EAGAIN, f"conditional put of {path} conflicted with one in flight; "
                                            "outcome unknown") from e
        # The key exists. It is ours if it holds exactly our bytes: the client retried a PUT
        # whose first try landed but whose response was lost, and the retry got 412. (Snapshot
        # and schema files carry a commit user or a timestamp, so no other writer's match.)
        try:
            return self._get(path) == data
        except FileNotFoundError:
            return False

    @_store_errors
    def delete(self, path: str) -> None:
        _before("delete", path)
        try:
            if self.local:  # os, not fsspec: a local commit's busy marker is deleted on every write
                os.unlink(local_path(path))
            else:
                self.fs.rm_file(path)
        except FileNotFoundError:
            pass

    @_store_errors
    def delete_claimed(self, path: str) -> bool:
        """Delete ``path``; True if this call removed it, False if it was already gone. On a
        local disk exactly one of two racing callers gets True (unlink is atomic); an object
        store's delete says nothing, so there it is an existence check before the delete."""
        _before("delete", path)
        if self.local:
            try:
                os.unlink(local_path(path))
                return True
            except FileNotFoundError:
                return False
        if not self.fs.exists(path):
            return False
        self.fs.rm_file(path)
        return True

    @_store_errors
    def rename_dir(self, src: str, dst: str) -> None:
        """Rename a local directory atomically (os.rename: fails if ``dst`` exists and is not
        empty). Object stores have no rename; callers refuse there first."""
        if not self.local:
            raise UsageError(f"{self.scheme}:// has no atomic rename")
        _before("create", f"{src} -> {dst}", "rename")
        os.rename(src, dst)

    def remove_empty_dir(self, path: str) -> bool:
        """Remove ``path`` if it is an empty directory; False if it is not empty or absent.
        Object stores have no directories, so there it is a no-op."""
        if not self.local:
            return False
        _before("delete", path, "rmdir")
        try:
            os.rmdir(path)
            return True
        except OSError:
            return False

    @_store_errors
    def delete_tree(self, path: str) -> None:
        """Remove ``path`` and everything below it (a dropped table, an unfinished clone); an
        absent path is not an error. On an object store, every object below the prefix, one by one."""
        if not self.local:
            for status in self.walk(path):
                self.delete(status.path)
            return
        _before("delete", path, "rmtree")
        try:
            self.fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass

    def delete_quietly(self, path: str) -> None:
        """Best-effort cleanup of files nobody references; failure only leaves an orphan."""
        try:
            self.delete(path)
        except OSError:
            log.warning("could not delete %s", path, exc_info=True)


def _store_scheme(scheme: str) -> str:
    return "s3" if scheme == "s3a" else scheme


def _refusal(error: OSError) -> str | None:
    """Why the store refused a conditional put: "exists" for 412 (PreconditionFailed; s3fs turns
    it into OSError(EINVAL) on some stores), "busy" for AWS's 409 (ConditionalRequestConflict:
    another conditional write of the key is in flight); None for any other error."""
    cause = error.__cause__ or error.__context__
    response = getattr(cause, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code == "ConditionalRequestConflict" or status == 409:
        return "busy"
    if code == "PreconditionFailed" or status == 412:
        return "exists"
    text = str(error).lower()
    return "exists" if "pre-condition" in text or "precondition" in text else None


@contextlib.contextmanager
def _exclusive_lock(lock_file: str) -> Iterator[None]:
    """An exclusive flock on a local file: serialises committers that share it."""
    os.makedirs(os.path.dirname(os.path.abspath(lock_file)), exist_ok=True)
    with open(lock_file, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# Defaults per scheme set once by the CLI from its config (``configure``); explicit options win.
_DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {}
CONDITIONAL_PUT = "lakectl.conditional-put"
LOCK_FILE = "lakectl.lock-file"
_CONDITIONAL_PUT_SCHEMES = frozenset({"s3", "s3a"})


def configure(scheme: str, options: dict[str, Any]) -> None:
    """Default storage options for ``scheme`` (e.g. the S3 endpoint and credentials of the config)."""
    _DEFAULT_OPTIONS[scheme] = dict(options)


def storage_defaults(scheme: str) -> dict[str, Any]:
    """A copy of the default storage options set for ``scheme`` with ``configure``."""
    return dict(_DEFAULT_OPTIONS.get(scheme, {}))


def s3_options(*, endpoint: str | None = None, region: str | None = None, access_key_id: str | None = None,
               secret_access_key: str | None = None, session_token: str | None = None,
               path_style: bool | None = None, conditional_put: bool | None = None,
               lock_file: str | None = None, connect_timeout: float | None = None,
               retries: int | None = None) -> dict[str, Any]:
    """s3fs options from lakectl's S3 settings; unset ones are left to botocore, which reads
    the standard AWS variables and files (connect timeout and retries: lakectl's defaults)."""
    out: dict[str, Any] = {}
    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    if endpoint:
        client["endpoint_url"] = endpoint
    if region:
        client["region_name"] = region
    if client:
        out["client_kwargs"] = client
    if access_key_id:
        out["key"] = access_key_id
    if secret_access_key:
        out["secret"] = secret_access_key
    if session_token:
        out["token"] = session_token
    if path_style:
        config["s3"] = {"addressing_style": "path"}
    if connect_timeout is not None:
        config["connect_timeout"] = connect_timeout
    if retries is not None:
        config["retries"] = {"total_max_attempts": retries + 1}
    if config:
        out["config_kwargs"] = config
    if conditional_put is not None:
        out[CONDITIONAL_PUT] = conditional_put
    if lock_file:
        out[LOCK_FILE] = lock_file
    return out


# A wrong endpoint should fail in seconds, not after botocore's five attempts with backoff.
DEFAULT_CONNECT_TIMEOUT = 3.0  # seconds; s3.connect-timeout
DEFAULT_RETRIES = 1  # attempts after the first failed one; s3.retries


def _connect_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """botocore Config kwargs with lakectl's connect timeout and retry defaults filled in."""
    out = dict(config or {})
    out.setdefault("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    out.setdefault("retries", {"total_max_attempts": DEFAULT_RETRIES + 1})
    return out


def _endpoint_of(options: dict[str, Any]) -> str:
    endpoint = (options.get("client_kwargs") or {}).get("endpoint_url")
    return endpoint or os.environ.get("AWS_ENDPOINT_URL") or "AWS S3"


_ACCESS_CODES = frozenset({"SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "InvalidToken",
                           "ExpiredToken", "AuthorizationHeaderMalformed", "InvalidClientTokenId", "403"})


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def storage_error(exc: BaseException, path: str | None = None) -> StorageError | None:
    """The ``StorageError`` an object-store failure stands for, or None if it is none of the
    setup problems (missing credentials, refused credentials, unreachable endpoint, missing
    bucket). Looks through the exception's causes: s3fs wraps botocore's errors."""
    try:
        from botocore import exceptions as boto
    except ImportError:  # pragma: no cover - s3fs brings botocore
        return None
    for e in _chain(exc):
        if isinstance(e, StorageError):
            return e
        if isinstance(e, (boto.NoCredentialsError, boto.PartialCredentialsError)):
            return StorageCredentialsError(
                "no S3 credentials found: set s3.access-key-id and s3.secret-access-key (LAKECTL_S3_ACCESS_KEY_ID, "
                "LAKECTL_S3_SECRET_ACCESS_KEY) or the standard AWS variables or files")
        if isinstance(e, (boto.EndpointConnectionError, boto.ConnectTimeoutError)):
            url = getattr(e, "kwargs", {}).get("endpoint_url") or ""
            where = url.split("/", 3)[:3]
            return StorageUnreachableError(
                f"cannot reach the S3 endpoint {'/'.join(where) if url else ''} "
                f"(connect timeout and retries: s3.connect-timeout, s3.retries); check s3.endpoint")
        if isinstance(e, boto.ClientError):
            error = e.response.get("Error", {})
            code = str(error.get("Code", ""))
            if code == "NoSuchBucket":
                return BucketNotFoundError(f"bucket {error.get('BucketName') or ''} does not exist".replace("  ", " "))
            if code == "AccessDenied" and path:
                # Valid credentials without the right to this object (a bucket policy, a key
                # scoped to another prefix): name the object, as for a local permission error.
                return StorageAccessError(f"storage: access denied at {path} (S3 AccessDenied: "
                                          f"{error.get('Message') or 'access denied'}); check the key's permissions "
                                          "and s3.access-key-id", code)
            if code in _ACCESS_CODES:
                return StorageAccessError(f"S3 refused the request ({code}: {error.get('Message') or 'access denied'}); "
                                          "check s3.access-key-id and s3.secret-access-key", code)
    return None


# Tag, branch, table and database names become file and directory names, with prefixes
# (tag-, branch-, .db) and lakectl's temporary and staging names around them (``.tag-NAME.<32
# hex>.tmp``, ``.NAME.clone-<hex>``). Most filesystems allow 255 bytes per name; 200 for the
# name itself leaves room for all of these, and holds on object stores too so that a table
# copied between stores keeps working.
MAX_NAME_BYTES = 200


def check_name_length(kind: str, name: str) -> None:
    """UsageError if ``name`` (of a tag, branch, table, database) is too long to become a file name."""
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise UsageError(f"{kind} name is {size} bytes long; at most {MAX_NAME_BYTES} fit in a file name "
                         f"({name[:20]}...)")


# errno -> what the storage refused, for ``storage: <what> at <path>``. ENOSPC and EDQUOT are
# StorageFullError: expire and remove-orphan-files go on without their journal on a full disk.
_FULL_ERRNOS = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded"}
_REFUSED_ERRNOS = {errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
                   errno.EPERM: "operation not permitted", errno.ENOTDIR: "not a directory (a file is in the way)",
                   errno.EISDIR: "is a directory", errno.EFBIG: "file too large"}


def refused_error(exc: BaseException, path: str | None = None) -> StorageRefusedError | None:
    """The ``StorageRefusedError`` for a filesystem refusal anywhere in ``exc``'s causes (out of
    space, read-only, permission denied, not a directory), naming ``path`` or the error's own
    file name; None for any other error."""
    for e in _chain(exc):
        if isinstance(e, StorageRefusedError):
            return e
        if not isinstance(e, OSError) or e.errno is None:
            continue
        where = path or e.filename or "an unnamed file"
        if e.errno in _FULL_ERRNOS:
            return StorageFullError(_FULL_ERRNOS[e.errno], str(where), e.errno)
        if e.errno in _REFUSED_ERRNOS:
            return StorageRefusedError(_REFUSED_ERRNOS[e.errno], str(where), e.errno)
    return None


def is_storage_full(exc: BaseException) -> bool:
    """True when ``exc`` (or one of its causes) says the disk is full or the quota used up."""
    return isinstance(refused_error(exc), StorageFullError)


def _local_create_if_absent(path: str, data: bytes, make_dirs: bool = True) -> bool:
    directory = os.path.dirname(path)
    if make_dirs:
        os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.urandom(16).hex()}.tmp")
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
