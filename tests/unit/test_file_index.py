"""core.file_index: Paimon's file-index blob, bloom filter and hashes (the interop tests hold
them to Java; these pin the pieces)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from core import file_index
from core.where import parse_where
from core.types import DataField, parse_type


@pytest.mark.parametrize("data,expected", [
    (b"", 0xEF46DB3751D8E999), (b"a", 0xD24EC4F1A98C6E5B), (b"abc", 0x44BC2CF5AD770999),
    (b"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1),
])
def test_xxh64_known_vectors(data: bytes, expected: int) -> None:
    assert file_index.xxh64(data) & (2**64 - 1) == expected


def test_long_hash_vectorised_equals_scalar() -> None:
    values = np.array([0, 1, -1, 31, 2**40 + 7, -(2**63), 2**63 - 1], dtype=np.int64)
    assert file_index._long_hashes(values).tolist() == [file_index.long_hash(int(v)) for v in values]


def fields() -> list[DataField]:
    return [DataField(0, "n", parse_type("BIGINT")), DataField(1, "s", parse_type("STRING")),
            DataField(2, "d", parse_type("DATE")), DataField(3, "x", parse_type("DOUBLE"))]


def test_built_filters_hold_their_values_and_rule_out_most_others() -> None:
    rows = pa.table({"n": pa.array([i * 3 for i in range(200)], pa.int64()), "s": [f"v{i}" for i in range(200)],
                     "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(200)],
                     "x": [i / 2 for i in range(200)]})
    blob = file_index.build(rows, fields(), {"file-index.bloom-filter.columns": "n,s,d,x,missing",
                                             "file-index.bloom-filter.n.items": "400"})
    indexes = file_index.parse(blob)
    assert set(indexes) == {"n", "s", "d"}  # DOUBLE is not indexed by lakectl; unknown columns skipped
    n, s, d = (f.type for f in fields()[:3])
    assert all(file_index.may_match(indexes, [("n", i * 3, n), ("s", f"v{i}", s),
                                              ("d", dt.date(2024, 1, 1) + dt.timedelta(days=i), d)])
               for i in range(200))
    assert sum(file_index.may_match(indexes, [("n", i * 3 + 1, n)]) for i in range(200)) < 40
    assert sum(file_index.may_match(indexes, [("s", f"w{i}", s)]) for i in range(200)) < 40
    # A condition on a column without an index, or of a type lakectl does not hash, skips nothing.
    assert file_index.may_match(indexes, [("x", 0.25, fields()[3].type), ("other", 1, n)])


def test_no_index_without_indexable_columns_and_foreign_blobs_are_ignored() -> None:
    rows = pa.table({"x": [0.5]})
    assert file_index.build(rows, fields(), {"file-index.bloom-filter.columns": "x"}) is None
    assert file_index.build(rows, fields(), {}) is None
    assert file_index.parse(b"not an index at all") == {}


def test_equalities_are_the_top_level_conjuncts() -> None:
    f = fields()
    p = parse_where("n = 3 AND (s = 'a' OR s = 'b') AND d > DATE '2024-01-01' AND s = 'c'", f)
    assert [(c.column, c.value) for c in file_index.equalities(p)] == [("n", 3), ("s", "c")]
    assert list(file_index.equalities(parse_where("n = 3 OR n = 4", f))) == []
