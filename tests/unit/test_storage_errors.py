"""Storage refusals are named: the errno -> ``storage: <what> at <path>`` mapping, its exit code,
and what stays true of the error (an OSError with its errno, picklable for engine workers)."""

from __future__ import annotations

import errno
import pickle

import pytest
from botocore.exceptions import ClientError

from core.errors import StorageAccessError, StorageFullError, StorageRefusedError, UsageError
from core.fileio import check_name_length, is_storage_full, refused_error, storage_error
from lakectl.errors import report


@pytest.mark.parametrize("code, what, full", [
    (errno.ENOSPC, "no space left on device", True), (errno.EDQUOT, "disk quota exceeded", True),
    (errno.EROFS, "read-only file system", False), (errno.EACCES, "permission denied", False),
    (errno.EPERM, "operation not permitted", False), (errno.ENOTDIR, "not a directory (a file is in the way)", False)])
def test_each_refusal_names_what_and_where(code: int, what: str, full: bool) -> None:
    mapped = refused_error(OSError(code, "strerror", "/from/the/error"), "/wh/db.db/t/snapshot/x")
    assert type(mapped) is (StorageFullError if full else StorageRefusedError)
    assert str(mapped) == f"storage: {what} at /wh/db.db/t/snapshot/x"
    assert isinstance(mapped, OSError) and mapped.errno == code
    assert is_storage_full(mapped) is full
    # without a path of its own, the error's file name
    assert refused_error(OSError(code, "strerror", "/from/the/error")).path == "/from/the/error"


def test_other_errors_are_not_storage_refusals() -> None:
    assert refused_error(OSError(errno.EIO, "I/O error"), "/x") is None
    assert refused_error(OSError("Corrupt snappy compressed data")) is None  # Arrow's, errno-less
    assert refused_error(ValueError("nope")) is None


def test_a_refusal_found_through_the_causes() -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as e:
            raise RuntimeError("writer failed") from e
    except RuntimeError as outer:
        assert is_storage_full(outer)
        assert str(refused_error(outer)) == "storage: no space left on device at an unnamed file"


def test_the_error_survives_pickling() -> None:
    error = StorageFullError("no space left on device", "/wh/x", errno.ENOSPC)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is StorageFullError and str(back) == str(error) and back.errno == errno.ENOSPC


def test_report_names_a_raw_refusal_with_exit_11(capsys: pytest.CaptureFixture[str]) -> None:
    """An ENOSPC that surfaced outside FileIO (a Parquet writer's) is not an internal error."""
    assert report(OSError(errno.ENOSPC, "No space left on device", "/wh/db.db/t/bucket-0/f.parquet"), False) == 11
    assert capsys.readouterr().err == "error: storage: no space left on device at /wh/db.db/t/bucket-0/f.parquet\n"
    assert report(PermissionError(errno.EACCES, "Permission denied", "/wh"), False) == 11
    assert capsys.readouterr().err == "error: storage: permission denied at /wh\n"


def test_s3_access_denied_names_the_object_and_keeps_exit_7(capsys: pytest.CaptureFixture[str]) -> None:
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied."}}, "PutObject")
    mapped = storage_error(denied, "s3://b/wh/db.db/t/snapshot/snapshot-2")
    assert isinstance(mapped, StorageAccessError) and mapped.code == "AccessDenied"
    assert str(mapped).startswith("storage: access denied at s3://b/wh/db.db/t/snapshot/snapshot-2 "
                                  "(S3 AccessDenied: Access Denied.)")
    assert report(mapped, False) == 7
    # wrong credentials are a setup problem, named as before
    signature = ClientError({"Error": {"Code": "SignatureDoesNotMatch", "Message": "m"}}, "GetObject")
    assert str(storage_error(signature, "s3://b/x")).startswith("S3 refused the request (SignatureDoesNotMatch")


def test_name_length_counts_utf8_bytes() -> None:
    check_name_length("tag", "t" * 200)
    with pytest.raises(UsageError, match="tag name is 201 bytes long; at most 200"):
        check_name_length("tag", "t" * 201)
    with pytest.raises(UsageError, match="branch name is 202 bytes long"):
        check_name_length("branch", "é" * 101)  # 101 characters, 2 bytes each
