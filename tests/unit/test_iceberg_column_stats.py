"""core/iceberg/column_stats.py: a data file's Iceberg column stats from Paimon's value stats,
for stats lakectl's own writer never produces (another writer's NaN bounds, a stats column
subset, a dropped column), Iceberg's single-value encoding checked byte by byte, and which
nested types have an Iceberg type (core/iceberg/types.py)."""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import replace
from decimal import Decimal

from core import stats
from core.iceberg.column_stats import data_file_stats
from core.iceberg.types import single_value
from core.manifest import DataFileMeta
from core.schema import TableSchema
from core.types import DataField, parse_type

FIELDS = (DataField(0, "id", parse_type("INT")), DataField(1, "score", parse_type("DOUBLE")),
          DataField(2, "name", parse_type("STRING")), DataField(3, "bin", parse_type("BYTES")))
SCHEMA = TableSchema(id=0, fields=FIELDS, highest_field_id=3, partition_keys=(), primary_keys=(), options={})


def data_file(columns: list[stats.ColumnStats], covered: tuple[str, ...] | None) -> DataFileMeta:
    fields = FIELDS if covered is None else tuple(f for f in FIELDS if f.name in covered)
    value_stats = stats.from_columns(columns, [f.type for f in fields]) if fields else stats.EMPTY_STATS
    return DataFileMeta(file_name="f", file_size=1, row_count=5, min_key=b"", max_key=b"",
                        key_stats=stats.EMPTY_STATS, value_stats=value_stats, min_sequence_number=0,
                        max_sequence_number=0, schema_id=0, level=0, value_stats_cols=covered)


def as_dicts(maps: dict) -> tuple[dict, dict, dict]:
    return tuple({e["key"]: e["value"] for e in maps[k]} for k in ("null_value_counts", "lower_bounds", "upper_bounds"))


def test_bounds_and_null_counts_by_field_id() -> None:
    f = data_file([stats.ColumnStats(-3, 7, 0), stats.ColumnStats(-0.5, 2.0, 1),
                   stats.ColumnStats("ab", "zz", 2), stats.ColumnStats(None, None, 4)], None)
    nulls, lower, upper = as_dicts(data_file_stats(SCHEMA, SCHEMA, f))
    assert nulls == {0: 0, 1: 1, 2: 2, 3: 4}
    assert lower == {0: struct.pack("<i", -3), 1: struct.pack("<d", -0.5), 2: b"ab"}
    assert upper == {0: struct.pack("<i", 7), 1: struct.pack("<d", 2.0), 2: b"zz"}


def test_nan_bounds_unknown_counts_and_binaries_are_left_out() -> None:
    # Another writer's NaN bound, a column with no null count, a binary column with bounds.
    f = data_file([stats.ColumnStats(1, 2, None), stats.ColumnStats(float("nan"), 3.0, 0),
                   stats.ColumnStats("a", "b", 0), stats.ColumnStats(b"\x00", b"\xff", 0)], None)
    nulls, lower, upper = as_dicts(data_file_stats(SCHEMA, SCHEMA, f))
    assert nulls == {1: 0, 2: 0, 3: 0}
    assert set(lower) == set(upper) == {0, 2}


def test_a_stats_column_subset_and_a_dropped_column() -> None:
    f = data_file([stats.ColumnStats(5, 9, 0), stats.ColumnStats("m", "n", 1)], ("id", "name"))
    now = replace(SCHEMA, fields=FIELDS[1:])  # id dropped since the file was written
    nulls, lower, upper = as_dicts(data_file_stats(now, SCHEMA, f))
    assert nulls == {2: 1} and lower == {2: b"m"} and upper == {2: b"n"}
    none_mode = data_file([], ())  # metadata.stats-mode=none
    assert as_dicts(data_file_stats(SCHEMA, SCHEMA, none_mode)) == ({}, {}, {})


def test_single_value_encodings() -> None:
    dec = parse_type("DECIMAL(10, 2)")
    # Big-endian two's complement of the unscaled value in the fewest bytes.
    assert [single_value(Decimal(v), dec).hex() for v in ("-1.28", "1.28", "1.27", "-1.29", "0.00")] == \
        ["80", "0080", "7f", "ff7f", "00"]
    assert single_value(Decimal("-99999999.99"), dec) == (-9999999999).to_bytes(5, "big", signed=True)
    assert single_value(dt.date(1969, 12, 31), parse_type("DATE")) == struct.pack("<i", -1)
    ts = dt.datetime(1969, 12, 31, 23, 59, 59, 999_999)
    assert single_value(ts, parse_type("TIMESTAMP(6)")) == struct.pack("<q", -1)
    ltz = dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc)
    assert single_value(ltz, parse_type("TIMESTAMP(3) WITH LOCAL TIME ZONE")) == struct.pack("<q", 1_000_000)
    assert single_value(-5, parse_type("TINYINT")) == struct.pack("<i", -5)  # Iceberg int: 4 bytes
    assert single_value(True, parse_type("BOOLEAN")) == b"\x01"
    assert single_value("é", parse_type("STRING")) == b"\xc3\xa9"


def test_a_type_without_an_iceberg_type_inside_a_nested_one_refuses_the_column() -> None:
    from core.iceberg.options import refusal

    for text in ("ARRAY<TIME(0)>", "MAP<STRING, ROW<t TIMESTAMP(9)>>", "ROW<a INT, m MULTISET<INT>>"):
        schema = replace(SCHEMA, fields=(DataField(0, "c", parse_type(text)), DataField(1, "n", parse_type("INT"))),
                         options={"metadata.iceberg.storage": "table-location"})
        assert refusal(schema) == f"column c of type {text} with Iceberg metadata (no Iceberg type for it)", text
    nested = replace(SCHEMA, fields=(DataField(0, "c", parse_type("MAP<STRING, ARRAY<ROW<x INT>>>")),),
                     options={"metadata.iceberg.storage": "table-location"})
    assert refusal(nested) is None
