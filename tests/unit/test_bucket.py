"""core.bucket: spec section 7's table, vectorized == per-row, and pypaimon as oracle."""

from __future__ import annotations

import datetime as dt
import json
import random
import subprocess
import sys
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import bucket
from core.binary_row import row_bytes
from core.types import DataType, parse_type, to_arrow

# The pypaimon oracle by the rule every oracle test uses (tests/interop/oracle.py):
# LAKECTL_ORACLE_PYTHON, else .venv-oracle; skipped without it locally, an error in CI.
sys.path.append(str(Path(__file__).resolve().parents[1] / "interop"))
from oracle import oracle_python  # noqa: E402

EXACT = Context(prec=100)  # scaleb in the default context would round 38-digit values


def types(*texts: str) -> list[DataType]:
    return [parse_type(t) for t in texts]


# ---- spec section 7 ---------------------------------------------------------------------
# (key types, key values, row bytes without prefix, signed hash, bucket of 4)
SPEC_TABLE: list[tuple[tuple[str, ...], list[Any], str, int, int]] = [
    (("BIGINT",), [1], "00" * 8 + "0100000000000000", 1465514398, 2),
    (("BIGINT",), [2], "00" * 8 + "0200000000000000", 1340390384, 0),
    (("BIGINT",), [42], "00" * 8 + "2a00000000000000", 907821237, 1),
    (("BIGINT",), [0], "00" * 8 + "0000000000000000", -300363099, 3),
    (("BIGINT",), [7], "00" * 8 + "0700000000000000", -348168691, 3),
    (("STRING",), ["ab"], "00" * 8 + "6162000000000082", -425866811, 3),
    (("INT", "STRING"), [1, "ab"], "00" * 8 + "0100000000000000" + "6162000000000082", 591956088, 0),
    (("STRING",), [None], "0001000000000000" + "00" * 8, -1748325344, 0),
]


@pytest.mark.parametrize("texts, values, raw, signed, expected", SPEC_TABLE)
def test_spec_table_per_row(texts: tuple[str, ...], values: list[Any], raw: str, signed: int, expected: int) -> None:
    assert row_bytes(values, types(*texts)).hex() == raw
    assert bucket.hash_bytes(bytes.fromhex(raw)) == signed
    assert bucket.bucket_of(values, types(*texts), 4) == expected


def test_spec_hex_hashes() -> None:
    hexes = {1: "5759f99e", 2: "4fe4bbf0", 42: "361c40b5", 0: "ee18d2a5", 7: "eb3f5e0d"}
    for key, text in hexes.items():
        unsigned = bucket.hash_bytes(row_bytes([key], types("BIGINT"))) & 0xFFFF_FFFF
        assert f"{unsigned:08x}" == text


@pytest.mark.parametrize("texts", sorted({row[0] for row in SPEC_TABLE}))
def test_spec_table_vectorized(texts: tuple[str, ...]) -> None:
    rows = [row for row in SPEC_TABLE if row[0] == texts]
    key_types = types(*texts)
    columns = [pa.array([r[1][i] for r in rows], to_arrow(t)) for i, t in enumerate(key_types)]
    assert bucket.assign_buckets(columns, key_types, 4).tolist() == [r[4] for r in rows]


def test_hash_refuses_partial_words() -> None:
    with pytest.raises(ValueError):
        bucket.hash_bytes(b"abc")


def test_java_abs_of_truncated_remainder() -> None:
    assert bucket.bucket_from_hash(-7, 4) == 3
    assert bucket.bucket_from_hash(-(2**31), 3) == 2  # Java: Math.abs(MIN_VALUE % 3) = 2
    assert bucket.bucket_from_hash(7, 1) == 0


# ---- vectorized == per-row --------------------------------------------------------------
def _per_row(columns: list[list[Any]], key_types: list[DataType], n: int) -> list[int]:
    return [bucket.bucket_of(list(row), key_types, n) for row in zip(*columns)]


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.timezone.utc)


_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "BOOLEAN": st.booleans(),
    "TINYINT": st.integers(-(2**7), 2**7 - 1),
    "SMALLINT": st.integers(-(2**15), 2**15 - 1),
    "INT": st.integers(-(2**31), 2**31 - 1),
    "BIGINT": st.integers(-(2**63), 2**63 - 1),
    "FLOAT": st.floats(width=32, allow_nan=False),
    "DOUBLE": st.floats(allow_nan=False),
    "STRING": st.one_of(st.text(max_size=6), st.text(min_size=6, max_size=40),
                        st.text(alphabet="é日✓\U0001F600ab", max_size=12)),
    "CHAR(8)": st.text(min_size=8, max_size=8),
    "BYTES": st.binary(max_size=30),
    "DECIMAL(10, 2)": st.integers(-(10**10 - 1), 10**10 - 1).map(lambda u: Decimal(u).scaleb(-2, EXACT)),
    "DECIMAL(18, 0)": st.integers(-(10**18 - 1), 10**18 - 1).map(Decimal),
    "DECIMAL(38, 6)": st.integers(-(10**38 - 1), 10**38 - 1).map(lambda u: Decimal(u).scaleb(-6, EXACT)),
    "DECIMAL(20, 0)": st.sampled_from([-(2**63), -128, -129, -1, 0, 127, 128, 2**64, -(2**64)]).map(Decimal),
    "DATE": st.dates(),
    "TIME(3)": st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    "TIMESTAMP(3)": st.datetimes().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000)),
    "TIMESTAMP(6)": st.datetimes(),
    "TIMESTAMP_LTZ(6)": st.datetimes().map(_utc),
    "TIMESTAMP_LTZ(3)": st.datetimes().map(lambda v: _utc(v.replace(microsecond=v.microsecond // 1000 * 1000))),
}


@st.composite
def key_columns(draw: st.DrawFn) -> tuple[list[DataType], list[list[Any]]]:
    kinds = draw(st.lists(st.sampled_from(sorted(_VALUES)), min_size=1, max_size=4))
    rows = draw(st.integers(1, 40))
    columns = []
    for kind in kinds:
        values = draw(st.lists(st.one_of(st.none(), _VALUES[kind]), min_size=rows, max_size=rows))
        columns.append(values)
    return types(*kinds), columns


@settings(max_examples=200, deadline=None)
@given(key_columns(), st.integers(1, 64))
def test_vectorized_matches_per_row(case: tuple[list[DataType], list[list[Any]]], n: int) -> None:
    key_types, columns = case
    arrays = [pa.array(values, to_arrow(t)) for values, t in zip(columns, key_types)]
    assert bucket.assign_buckets(arrays, key_types, n).tolist() == _per_row(columns, key_types, n)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**62), 2**62)), min_size=1, max_size=30),
       st.sampled_from(["TIMESTAMP(9)", "TIMESTAMP(7)", "TIMESTAMP_LTZ(9)", "TIMESTAMP(3)"]))
def test_nanosecond_timestamps(nanos: list[int | None], text: str) -> None:
    t = parse_type(text)
    arrow_type = pa.timestamp("ns", tz="UTC" if t.name == "TIMESTAMP_LTZ" else None)
    column = pa.array(nanos, pa.int64()).cast(arrow_type)
    expected = _per_row([nanos], [t], 13)
    assert bucket.assign_buckets([column], [t], 13).tolist() == expected
    assert bucket.assign_buckets([pa.array(nanos, pa.int64())], [t], 13).tolist() == expected


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("text", ["TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)"])
def test_timestamp_units_of_any_column(unit: str, text: str) -> None:
    values = [dt.datetime(2024, 1, 2, 3, 4, 5, 678901), dt.datetime(1960, 5, 6, 7, 8, 9, 1), None]
    column = pa.array(values, pa.timestamp("us")).cast(pa.timestamp(unit), safe=False)
    python = column.cast(pa.timestamp("us")).to_pylist()  # Arrow truncates toward zero, not floor
    t = parse_type(text)
    assert bucket.assign_buckets([column], [t], 7).tolist() == _per_row([python], [t], 7)


def test_non_canonical_arrow_types() -> None:
    key_types = types("INT", "STRING", "DECIMAL(12, 3)", "TIME(0)", "DATE", "BYTES")
    ints = [1, None, -5, 2**31 - 1]
    strings = ["short", "a much longer string", None, "日本語のテキスト"]
    decimals = [Decimal("1.5"), Decimal("-2.25"), None, Decimal("123456789.123")]
    times = [dt.time(1, 2, 3), None, dt.time(23, 59, 59), dt.time(0, 0)]
    dates = [dt.date(2024, 1, 2), dt.date(1900, 1, 1), None, dt.date(9999, 12, 31)]
    blobs = [b"x", b"0123456789", None, b""]
    columns = [
        pa.array(ints, pa.int64()),
        pa.chunked_array([pa.array(strings[:1], pa.large_string()), pa.array(strings[1:], pa.large_string())]),
        pa.array(decimals, pa.decimal128(20, 4)),
        pa.array([None if t is None else (t.hour * 3600 + t.minute * 60 + t.second) * 10**6 for t in times],
                 pa.time64("us")),
        pa.array(dates, pa.date64()),
        pa.array(blobs, pa.large_binary()),
    ]
    expected = _per_row([ints, strings, decimals, times, dates, blobs], key_types, 11)
    assert bucket.assign_buckets(columns, key_types, 11).tolist() == expected


def test_dictionary_and_sliced_columns() -> None:
    values = [f"key-{i % 17}-{'x' * (i % 11)}" if i % 9 else None for i in range(200)]
    t = types("STRING")
    expected = _per_row([values], t, 5)
    plain = pa.array(values)
    assert bucket.assign_buckets([plain.dictionary_encode()], t, 5).tolist() == expected
    assert bucket.assign_buckets([plain.slice(50, 100)], t, 5).tolist() == expected[50:150]
    ints = pa.array(range(200), pa.int64())
    both = [ints.slice(3, 120), plain.slice(7, 120)]
    key_types = types("BIGINT", "STRING")
    assert bucket.assign_buckets(both, key_types, 5).tolist() == _per_row(
        [list(range(3, 123)), values[7:127]], key_types, 5)


def test_equal_length_values_take_the_matrix_path() -> None:
    # Equal lengths (UUID-like keys, fixed-width variable parts) use a reshape shortcut;
    # slicing moves the first value off the start of the data buffer.
    uuids = [f"{i:08x}-0000-4000-8000-{i * 7919:012x}" for i in range(300)]
    stamps = [dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=i * 1_000_003) for i in range(300)]
    decimals = [Decimal(i * 10**20 - 5 * 10**21) for i in range(300)]
    key_types = types("STRING", "TIMESTAMP(6)", "DECIMAL(38, 0)", "STRING")
    columns = [uuids, stamps, decimals, [u[:9] for u in uuids]]
    arrays = [pa.array(c, to_arrow(t)).slice(100, 150) for c, t in zip(columns, key_types)]
    expected = _per_row([c[100:250] for c in columns], key_types, 32)
    assert bucket.assign_buckets(arrays, key_types, 32).tolist() == expected


def test_many_fields_and_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bucket, "_BATCH_ROWS", 7)
    rng = random.Random(3)
    key_types = [parse_type("INT")] * 30 + types("STRING", "DECIMAL(25, 5)", "TIMESTAMP(6)") * 10
    columns = []
    for t in key_types:
        if t.name == "INT":
            columns.append([rng.choice([None, rng.randint(-100, 100)]) for _ in range(50)])
        elif t.name == "VARCHAR":
            columns.append([rng.choice([None, "s" * rng.randint(0, 20)]) for _ in range(50)])
        elif t.name == "DECIMAL":
            columns.append([rng.choice([None, Decimal(rng.randint(-10**20, 10**20)).scaleb(-5, EXACT)])
                            for _ in range(50)])
        else:
            start = dt.datetime(2000, 1, 1)
            columns.append([rng.choice([None, start + dt.timedelta(microseconds=rng.randint(0, 10**15))])
                            for _ in range(50)])
    arrays = [pa.chunked_array([pa.array(c[:20], to_arrow(t)), pa.array(c[20:], to_arrow(t))])
              for c, t in zip(columns, key_types)]
    assert bucket.assign_buckets(arrays, key_types, 9).tolist() == _per_row(columns, key_types, 9)


def test_result_type_and_empty_input() -> None:
    out = bucket.assign_buckets([pa.array([], pa.int64())], types("BIGINT"), 3)
    assert out.dtype == np.int32 and out.size == 0
    assert bucket.assign_buckets([pa.array([5], pa.int64())], types("BIGINT"), 3).dtype == np.int32


def test_argument_errors() -> None:
    with pytest.raises(ValueError):
        bucket.assign_buckets([pa.array([1])], types("BIGINT"), 0)
    with pytest.raises(ValueError):
        bucket.bucket_of([1], types("BIGINT"), 0)
    with pytest.raises(ValueError):
        bucket.assign_buckets([], [], 2)
    with pytest.raises(ValueError):
        bucket.assign_buckets([pa.array([1]), pa.array([1, 2])], types("BIGINT", "BIGINT"), 2)
    with pytest.raises(ValueError):
        bucket.assign_buckets([pa.array([[1]])], types("ARRAY<INT>"), 2)
    with pytest.raises(ValueError):
        bucket.assign_buckets([pa.array([0], pa.timestamp("us", tz="UTC"))], types("TIMESTAMP(6)"), 2)
    with pytest.raises(pa.ArrowInvalid):
        bucket.assign_buckets([pa.array([2**40], pa.int64())], types("INT"), 2)


# ---- pypaimon as oracle -----------------------------------------------------------------
_ORACLE_SCRIPT = r"""
import json, sys
import pyarrow as pa
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.schema.table_schema import TableSchema
from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

job = json.load(sys.stdin)
table = pa.ipc.open_file(job["data"]).read_all()
fields = [DataField(i, name, AtomicType(t)) for i, (name, t) in enumerate(job["fields"])]
schema = TableSchema(fields=fields, primary_keys=[name for name, _ in job["fields"]],
                     options={"bucket": str(job["buckets"])}, highest_field_id=len(fields) - 1)
extractor = FixedBucketRowKeyExtractor(schema)
out = []
for batch in table.to_batches():
    out.extend(extractor.extract_partition_bucket_batch(batch)[1])
print(json.dumps(out))
"""


def _oracle_buckets(table: pa.Table, fields: list[tuple[str, str]], buckets: int, tmp_path: Path) -> list[int]:
    data = tmp_path / f"keys-{len(list(tmp_path.iterdir()))}.arrow"
    with pa.OSFile(str(data), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    job = {"data": str(data), "fields": fields, "buckets": buckets}
    done = subprocess.run([oracle_python(), "-c", _ORACLE_SCRIPT], input=json.dumps(job),
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _random_strings(rng: random.Random, count: int) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_éü日本✓"
    return [("".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 7, 8, 9, 15, 16, 17, 40]))))
            for _ in range(count)]


@pytest.mark.interop
def test_same_buckets_as_pypaimon(tmp_path: Path) -> None:
    rng = random.Random(20240102)
    count = 3000
    bigints = [rng.randint(-(2**63), 2**63 - 1) for _ in range(count - 6)] + [0, 1, -1, 2**63 - 1, -(2**63), 42]
    ints = [rng.randint(-(2**31), 2**31 - 1) for _ in range(count)]
    strings = _random_strings(rng, count)
    cases = [
        ([("id", "BIGINT")], pa.table({"id": pa.array(bigints, pa.int64())}), 7),
        ([("k", "INT"), ("s", "STRING")], pa.table({"k": pa.array(ints, pa.int32()), "s": pa.array(strings)}), 16),
        ([("s", "STRING")], pa.table({"s": pa.array(strings)}), 5),
    ]
    for fields, table, n in cases:
        key_types = types(*(t for _, t in fields))
        ours = bucket.assign_buckets(table.columns, key_types, n).tolist()
        assert ours == _oracle_buckets(table, fields, n, tmp_path), fields
