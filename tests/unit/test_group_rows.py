"""``core.rows.group_rows`` (the Spark write's routing step) against a plain-Python model:
each (partition, bucket) group holds exactly the rows whose partition values and bucket
(``bucket.bucket_of``, one row at a time) are its own, in input order."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from core.bucket import bucket_of
from core.rows import group_rows
from core.schema import new_table_schema
from core.types import parse_columns


def _schema(buckets: int):
    columns = parse_columns("id BIGINT NOT NULL, dt STRING NOT NULL, v STRING")
    return new_table_schema(columns, primary_keys=["id", "dt"], partition_keys=["dt"],
                            options={"bucket": str(buckets)})


def _model(rows: list[dict], schema) -> dict[tuple, list[dict]]:
    key_type = schema.field("id").type
    out: dict[tuple, list[dict]] = {}
    for row in rows:
        group = ((row["dt"],), bucket_of([row["id"]], [key_type], schema.num_buckets))
        out.setdefault(group, []).append(row)
    return out


def test_groups_hold_their_rows_in_input_order() -> None:
    rng = np.random.default_rng(3)
    n = 5000
    table = pa.table({"id": pa.array(rng.integers(0, 10**9, n), pa.int64()),
                      "dt": pa.array([f"d{d}" for d in rng.integers(0, 5, n)]),
                      "v": pa.array([None if i % 7 == 0 else f"value-{i}" for i in range(n)])})
    schema = _schema(4)
    groups = group_rows(table, schema)
    got = {(values, bucket): rows.to_pylist() for values, bucket, rows in groups}
    assert len(got) == len(groups)  # each group once
    assert got == _model(table.to_pylist(), schema)
    assert sum(rows.num_rows for _, _, rows in groups) == n


def test_one_group_is_the_input_itself() -> None:
    table = pa.table({"id": pa.array([7, 7, 7], pa.int64()), "dt": ["a", "a", "a"], "v": ["x", "y", None]})
    schema = _schema(2)
    [(values, bucket, rows)] = group_rows(table, schema)
    assert (values, bucket) == (("a",), bucket_of([7], [schema.field("id").type], 2))
    assert rows.to_pylist() == table.to_pylist()


def test_no_rows_no_groups() -> None:
    empty = pa.table({"id": pa.array([], pa.int64()), "dt": pa.array([], pa.string()), "v": pa.array([], pa.string())})
    assert group_rows(empty, _schema(4)) == []
