"""Typed errors raised by the core library.

The CLI maps each class to one exit code (see ``lakectl/errors.py``); core never
prints or exits. Every message is one line a user can act on.
"""

from __future__ import annotations


class LakectlError(Exception):
    """Base of every error core raises on purpose."""


class UsageError(LakectlError):
    """A malformed argument: schema string, option, predicate, name (exit 2)."""


class NotFoundError(LakectlError):
    """A table, database, snapshot or tag that does not exist (exit 3)."""


class TableExistsError(LakectlError):
    """create of a table that already exists without --if-not-exists (exit 1)."""


class TagExistsError(LakectlError):
    """create of a tag whose name is taken (exit 1)."""


class BranchExistsError(LakectlError):
    """branch create of a name that is taken (exit 1)."""


class CommitConflictError(LakectlError):
    """The commit could not land after its retries, or its base vanished (exit 4)."""


class TableGoneError(CommitConflictError):
    """The table was renamed, dropped or created anew while a command was committing to it;
    nothing was committed (exit 4)."""


class StalePlanError(CommitConflictError):
    """Another commit replaced what this commit was planned on (files it rewrites, a
    deletion-vector index file, the schema) before it landed; nothing was committed. A
    compaction or a delete re-plans on the new latest snapshot (``core.replan``); a write
    stops (exit 4)."""


class ExpiredWhileReadingError(CommitConflictError):
    """A lost race, not damage: the snapshot a command was reading or building on was expired
    (by a concurrent ``expire``) while it read its files. Commands re-plan on the new latest
    snapshot; this reaches the user (exit 4) only when that kept happening, or when a scan had
    already emitted rows of the expired snapshot."""


class LockTimeoutError(CommitConflictError):
    """Another writer held the table's JDBC catalog lock (``paimon_distributed_locks``) for
    longer than ``lock-acquire-timeout``; nothing was changed (exit 4). The message names the
    lock id and since when its row is held."""


class InvalidDataError(LakectlError):
    """Input rows that do not fit the table: null key, unknown column, bad value (exit 5)."""


class UnsupportedTableError(LakectlError):
    """A table option lakectl cannot honour for this action; the message names it (exit 1)."""


class CorruptMetadataError(LakectlError):
    """A metadata file that is missing or cannot be decoded; the message names its path (exit 1)."""


class StorageError(LakectlError):
    """The object store cannot be used as configured (S3 setup problems); subclasses say why."""


class StorageCredentialsError(StorageError):
    """No credentials were found for the object store (exit 6)."""


class StorageAccessError(StorageError):
    """The store refused the credentials: wrong secret, unknown key, access denied (exit 7).
    ``code`` is the store's error code (``403`` alone when the response had no body)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class StorageRefusedError(StorageError, OSError):
    """The filesystem or store refused an operation on one path: out of space, read-only
    filesystem, permission denied, a path through a file (not a directory) (exit 11). Also an
    ``OSError`` with the original ``errno``, so code that treats a failed write as an unknown
    outcome (a commit) still does. The message is ``storage: <what> at <path>``."""

    def __init__(self, what: str, path: str, errno: int | None = None) -> None:
        OSError.__init__(self, errno, what, path)
        self.what = what
        self.path = path

    def __str__(self) -> str:
        return f"storage: {self.what} at {self.path}"

    def __reduce__(self) -> tuple:  # OSError pickles its args, which are not this __init__'s
        return (type(self), (self.what, self.path, self.errno))


class StorageFullError(StorageRefusedError):
    """No space left on the device, or the disk quota is used up (exit 11)."""


class StorageUnreachableError(StorageError):
    """The store's endpoint could not be reached within the connect timeout (exit 8)."""


class BucketNotFoundError(StorageError):
    """The warehouse's bucket does not exist (exit 9)."""


class CatalogAccessError(LakectlError):
    """The catalog refused the credentials: a REST catalog's 401 (token) or 403 (no permission)
    (exit 7, as an object store's refusal)."""


class CatalogUnreachableError(LakectlError):
    """The catalog's server did not answer: connection refused, timed out, unknown host (exit 8,
    as an unreachable object store)."""


class CatalogUnsupportedError(UsageError):
    """The catalog cannot do what the command needs: a REST server without the call, or an
    operation the REST protocol has no call for (expire); the message names the call (exit 2)."""


class SparkUnreachableError(LakectlError):
    """No Spark standalone master answers at the ``--master`` address (exit 10)."""


class DatabaseNotEmptyError(LakectlError):
    """drop-database of a database that still holds tables, without --cascade (exit 1)."""


class RenameInProgressError(LakectlError):
    """A table a rename on an object store is copying into or deleting from (exit 1): the
    message names the ``lakectl rename`` to rerun."""


class FastForwardUnfinishedError(LakectlError):
    """A change to main (or to the branch being fast-forwarded) while a killed ``branch
    fast-forward`` is unfinished (exit 1): the message names the fast-forward to rerun."""


class CatalogError(LakectlError):
    """The catalog's database or server failed a request: it cannot be reached or opened, or it
    refused a statement (exit 1). The message names the catalog's ``uri``, never a password."""
