"""Core exceptions -> one line on stderr and a stable exit code, in one place.

Exit codes (also in ``lakectl --help`` and the man pages): 0 ok, 1 failure, 2 usage,
3 not found, 4 commit conflict after retries, 5 invalid input data, 6-9 object store setup (no
credentials, credentials refused, endpoint unreachable, bucket missing; 7 and 8 also a REST
catalog's refused token and unreachable server), 10 no Spark master,
11 storage refused an operation (out of space, read-only, permission denied, not a directory),
130 interrupted.
"""

from __future__ import annotations

import logging
import sys
import traceback

from core.errors import (BranchExistsError, BucketNotFoundError, CatalogAccessError, CatalogUnreachableError,
                         CommitConflictError, CorruptMetadataError,
                         InvalidDataError, LakectlError, NotFoundError, SparkUnreachableError, StorageAccessError,
                         StorageCredentialsError, StorageRefusedError, StorageUnreachableError, TableExistsError,
                         TagExistsError, UsageError)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_CONFLICT, EXIT_INVALID_DATA = 0, 1, 2, 3, 4, 5
# Object store setup problems: each its own code, so a cron wrapper can tell them apart.
EXIT_NO_CREDENTIALS, EXIT_ACCESS_DENIED, EXIT_UNREACHABLE, EXIT_NO_BUCKET = 6, 7, 8, 9
EXIT_NO_SPARK_MASTER = 10
EXIT_STORAGE_REFUSED = 11  # out of space, read-only, permission denied, not a directory

EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (UsageError, EXIT_USAGE),
    (NotFoundError, EXIT_NOT_FOUND),
    (CommitConflictError, EXIT_CONFLICT),
    (InvalidDataError, EXIT_INVALID_DATA),
    (StorageCredentialsError, EXIT_NO_CREDENTIALS),
    (StorageAccessError, EXIT_ACCESS_DENIED),
    (CatalogAccessError, EXIT_ACCESS_DENIED),
    (StorageUnreachableError, EXIT_UNREACHABLE),
    (CatalogUnreachableError, EXIT_UNREACHABLE),
    (BucketNotFoundError, EXIT_NO_BUCKET),
    (SparkUnreachableError, EXIT_NO_SPARK_MASTER),
    (StorageRefusedError, EXIT_STORAGE_REFUSED),
    (TableExistsError, EXIT_FAILURE),
    (TagExistsError, EXIT_FAILURE),
    (BranchExistsError, EXIT_FAILURE),
    (CorruptMetadataError, EXIT_FAILURE),
    (LakectlError, EXIT_FAILURE),
]

EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report a SIGINT death

# (code, meaning): the --help epilog and the man pages' EXIT STATUS.
EXIT_CODE_MEANINGS: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "ok"),
    (EXIT_FAILURE, "failure"),
    (EXIT_USAGE, "usage error"),
    (EXIT_NOT_FOUND, "not found (warehouse, database, table, snapshot, tag)"),
    (EXIT_CONFLICT, "commit conflict after retries"),
    (EXIT_INVALID_DATA, "invalid input data"),
    (EXIT_NO_CREDENTIALS, "no object store credentials"),
    (EXIT_ACCESS_DENIED, "object store or catalog refused the credentials"),
    (EXIT_UNREACHABLE, "object store or catalog endpoint unreachable"),
    (EXIT_NO_BUCKET, "bucket does not exist"),
    (EXIT_NO_SPARK_MASTER, "Spark master unreachable"),
    (EXIT_STORAGE_REFUSED, "storage refused (out of space, read-only, permission denied, not a directory)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
)
EXIT_CODES_HELP = "Exit codes: " + ", ".join(f"{code} {meaning}" for code, meaning in EXIT_CODE_MEANINGS) + "."


def exit_code_for(exc: BaseException) -> int:
    for cls, code in EXIT_CODES:
        if isinstance(exc, cls):
            return code
    return EXIT_FAILURE


def report(exc: BaseException, verbose: bool) -> int:
    """Print the one-line message (traceback only when verbose) and return the exit code."""
    from core.fileio import refused_error, storage_error

    # An S3 setup failure or a filesystem refusal that surfaced outside FileIO (a Parquet
    # writer's ENOSPC, an --output file in a missing directory).
    exc = storage_error(exc) or refused_error(exc) or exc
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, LakectlError):
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    else:
        message = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
        if not verbose:
            message += " (run with -v for the traceback)"
    print(f"error: {message}", file=sys.stderr)
    return exit_code_for(exc)


def interrupted() -> int:
    """Ctrl-C: the one line and the exit code. Every write is new files made visible by one
    atomic snapshot create: an interrupt before it leaves the table at its last snapshot (and
    orphans for remove-orphan-files)."""
    print("error: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def failed(exc: Exception, verbose: bool) -> int:
    """A command's failure at the CLI boundary (the command tree's, lakectl/group.py, and the
    quick path's, lakectl/quick.py): logged with its traceback at DEBUG, reported as one line;
    returns the exit code. Called inside the ``except`` block that caught ``exc``."""
    logging.getLogger("lakectl").debug("command failed", exc_info=True)
    return report(exc, verbose)
