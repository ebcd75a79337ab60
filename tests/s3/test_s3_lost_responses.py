"""The commit point on S3 when the network loses a response: the conditional PUT of
``snapshot-N`` (or ``schema-N``) lands, but its response never arrives, so the client retries
and the store answers 412 (the key exists) or 409 (a conditional write of it in flight).

The landed object is ours. Before the fix, lakectl took the 412 for a lost race, deleted its
manifests and then found its own snapshot: snapshot-1 pointed at deleted manifests and the table
could not be read. Now a 412 over our own bytes is a win, and a 409 is an unknown outcome that
the commit's idempotence check settles."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from core.evolution import AddColumn
from core.ops.create import create
from core.table import Table
from core.types import parse_type

pytestmark = pytest.mark.s3


def lose_response(t: Table, key_part: str, error: str) -> list[str]:
    """The first conditional PUT whose key contains ``key_part`` lands, then its response is
    replaced by a read timeout (``"timeout"``: s3fs retries the PUT) or a 409 (``"busy"``)."""
    fs = t.file_io.fs
    fs.connect()
    armed, seen = [True], []

    def before(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if "If-None-Match" in params.get("headers", {}) and key_part in params.get("url_path", ""):
            seen.append(params["url_path"])
            context["lose"] = armed[0]
            armed[0] = False

    def after(context: dict[str, Any], **_: Any) -> None:
        if context.get("lose"):
            if error == "timeout":
                raise ReadTimeoutError(endpoint_url="http://s3.test/lost-response")
            raise ClientError({"Error": {"Code": "ConditionalRequestConflict", "Message": "in flight"},
                               "ResponseMetadata": {"HTTPStatusCode": 409}}, "PutObject")

    fs.s3.meta.events.register("before-call.s3.PutObject", before)
    fs.s3.meta.events.register("after-call.s3.PutObject", after)
    return seen


def _table(s3) -> tuple[Table, Table]:
    warehouse = s3.warehouse()
    t = Table.locate("db.t", warehouse=warehouse, storage_options=s3.storage_options())
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"write-only": "true"})
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    fresh = Table.open("db.t", warehouse=warehouse, storage_options=s3.storage_options())
    return t, fresh


@pytest.mark.parametrize("error", ["timeout", "busy"])
def test_a_snapshot_put_whose_response_was_lost(s3, error: str) -> None:
    t, fresh = _table(s3)
    seen = lose_response(t, "/snapshot/snapshot-2", error)
    result = t.write(pa.table({"id": pa.array([2, 3], pa.int64()), "v": ["b", "c"]}))
    assert seen, "the PUT was never intercepted"
    assert result.snapshot_id == 2
    assert fresh.snapshots.list_ids() == [1, 2]  # committed exactly once
    assert sorted(fresh.scan().column("id").to_pylist()) == [1, 2, 3]  # and readable
    assert fresh.snapshots.snapshot(2).total_record_count == 3


def test_a_schema_put_whose_response_was_lost(s3) -> None:
    t, fresh = _table(s3)
    seen = lose_response(t, "/schema/schema-1", "timeout")
    result = t.alter([AddColumn("n", parse_type("INT"))])
    assert len(seen) == 2, "s3fs retried the PUT"
    assert result.committed and result.schema_id == 1
    assert fresh.schemas.list_ids() == [0, 1] and fresh.schema.field_names == ["id", "v", "n"]


def test_a_real_lost_race_still_loses(s3) -> None:
    """Someone else's bytes under the key: try_create is False, and the object is theirs."""
    t, fresh = _table(s3)
    path = f"{t.path}/race/x"
    assert fresh.file_io.try_create(path, b"theirs")
    assert not t.file_io.try_create(path, b"ours")
    assert t.file_io.try_create(path, b"theirs") is True  # the same bytes count as ours (idempotent)
    assert fresh.file_io.read_bytes(path) == b"theirs"
