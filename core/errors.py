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


class ExpiredWhileReadingError(CommitConflictError):
    """A lost race, not damage: the snapshot a command was reading or building on was expired
    (by a concurrent ``expire``) while it read its files. Commands re-plan on the new latest
    snapshot; this reaches the user (exit 4) only when that kept happening, or when a scan had
    already emitted rows of the expired snapshot."""


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


class StorageUnreachableError(StorageError):
    """The store's endpoint could not be reached within the connect timeout (exit 8)."""


class BucketNotFoundError(StorageError):
    """The warehouse's bucket does not exist (exit 9)."""


class SparkUnreachableError(LakectlError):
    """No Spark standalone master answers at the ``--master`` address (exit 10)."""


class DatabaseNotEmptyError(LakectlError):
    """drop-database of a database that still holds tables, without --cascade (exit 1)."""


class RenameInProgressError(LakectlError):
    """A table a rename on an object store is copying into or deleting from (exit 1): the
    message names the ``lakectl rename`` to rerun."""
