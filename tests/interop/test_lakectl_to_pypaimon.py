"""lakectl writes, the official reader (pypaimon) reads.

Every table is written by lakectl, one commit at a time, while an independent model
(``KeyedModel`` / ``AppendModel``) tracks the rows each snapshot must hold. pypaimon then
reads the latest snapshot and each earlier one (``snapshot=N``), and lakectl's own scan is
held to the same model, so a bug shared by lakectl's writer and reader still shows up.

pypaimon reads every bucket of a partition, so a key hashed to the wrong bucket would not
change what it reads; ``test_bucket_placement_matches_pypaimon`` therefore writes the same
rows with pypaimon into a twin table and compares which keys land in which directory.

The helpers above the tests are also used by ``test_pypaimon_to_lakectl.py``.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from oracle import official_read, official_write

from core.ops.create import create
from core.table import Table

pytestmark = pytest.mark.interop

Row = dict[str, Any]
UTC = dt.timezone.utc

# ---- comparing rows --------------------------------------------------------------------
_NANOS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def canonical_column(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """One column in a form both readers agree on, whatever Arrow units they chose.

    pypaimon returns TIME as time32[ms] and TIMESTAMP(0) as timestamp[s], lakectl uses ms
    for every precision up to 3: times and timestamps become int64 nanoseconds (since
    midnight / since the epoch, UTC for WITH LOCAL TIME ZONE), strings and binaries their
    plain Arrow types. Everything else is left as it is.
    """
    t = column.type
    if pa.types.is_dictionary(t):
        return canonical_column(pc.cast(column, t.value_type))
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        raw = pc.cast(pc.cast(column, pa.int32()) if pa.types.is_time32(t) else column, pa.int64())
        return pc.multiply(raw, pa.scalar(_NANOS_PER_UNIT[t.unit], pa.int64()))
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pc.cast(column, pa.string())
    if pa.types.is_fixed_size_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pc.cast(column, pa.binary())
    return column


def canonical_rows(table: pa.Table) -> list[Row]:
    """The rows of ``table`` as Python values, after ``canonical_column`` on every column."""
    names = table.column_names
    return pa.table([canonical_column(table.column(n)) for n in names], names=names).to_pylist()


def _order(value: Any) -> tuple[bool, Any]:
    return (value is not None, value)


def sort_rows(rows: list[Row], key: Sequence[str]) -> list[Row]:
    return sorted(rows, key=lambda row: tuple(_order(row[k]) for k in key))


def assert_rows(actual: pa.Table, expected: list[Row], *, columns: Sequence[str], key: Sequence[str] | None,
                label: str, micros: Sequence[str] = ()) -> None:
    """``actual`` holds exactly ``expected`` (canonical rows), compared sorted by ``key``.

    ``key`` is the primary key (each key must appear once) or None for append tables, whose
    rows are compared as a multiset by sorting on every column. Timestamp columns in
    ``micros`` are compared at microsecond precision (floored, on both sides).
    """
    assert actual.column_names == list(columns), f"{label}: columns"
    got = _floor_micros(canonical_rows(actual), micros)
    expected = _floor_micros(expected, micros)
    if key is not None:
        keys = [tuple(row[k] for k in key) for row in got]
        assert len(set(keys)) == len(keys), f"{label}: a primary key appears more than once"
    order = list(key) if key is not None else list(columns)
    want = [{c: row.get(c) for c in columns} for row in expected]
    got, want = sort_rows(got, order), sort_rows(want, order)
    if got != want:
        pytest.fail(f"{label}: {_describe_difference(got, want, order)}", pytrace=False)


def _floor_micros(rows: list[Row], columns: Sequence[str]) -> list[Row]:
    if not columns:
        return rows
    return [{c: v // 1000 * 1000 if c in columns and v is not None else v for c, v in row.items()} for row in rows]


def _describe_difference(got: list[Row], want: list[Row], order: Sequence[str]) -> str:
    """The first few rows that differ, and in which columns, so a failure names the type."""
    if len(got) != len(want):
        got_keys = {tuple(r[k] for k in order) for r in got}
        want_keys = {tuple(r[k] for k in order) for r in want}
        return (f"{len(got)} rows, expected {len(want)}; unexpected {sorted(got_keys - want_keys, key=str)[:5]}, "
                f"missing {sorted(want_keys - got_keys, key=str)[:5]}")
    lines = []
    for g, w in zip(got, want):
        cols = [c for c in w if g.get(c) != w[c]]
        if cols:
            lines.append("; ".join(f"{c}: got {g.get(c)!r}, expected {w[c]!r}" for c in cols)[:600])
    return f"{len(lines)} rows differ, e.g.\n  " + "\n  ".join(lines[:5])


# ---- the model -------------------------------------------------------------------------
class KeyedModel:
    """Rows of a deduplicate primary-key table: the last +I/+U of a key sets it, -U/-D
    removes it; an overwrite replaces the partitions its rows touch (every row when the
    table is unpartitioned)."""

    def __init__(self, key: Sequence[str], partition_keys: Sequence[str] = ()) -> None:
        self.key = tuple(key)
        self.partition_keys = tuple(partition_keys)
        self.rows: dict[tuple[Any, ...], Row] = {}

    def apply(self, rows: list[Row], kinds: Sequence[str] | None = None) -> None:
        for row, kind in zip(rows, kinds or ["+I"] * len(rows), strict=True):
            k = tuple(row[c] for c in self.key)
            if kind in ("+I", "+U"):
                self.rows[k] = row
            else:
                self.rows.pop(k, None)

    def overwrite(self, rows: list[Row]) -> None:
        touched = {tuple(row[p] for p in self.partition_keys) for row in rows}
        self.rows = {k: row for k, row in self.rows.items()
                     if tuple(row[p] for p in self.partition_keys) not in touched}
        self.apply(rows)

    def snapshot(self) -> list[Row]:
        return copy.deepcopy(list(self.rows.values()))


class AppendModel:
    """Rows of an append table: every row stays; an overwrite replaces touched partitions."""

    key = None

    def __init__(self, partition_keys: Sequence[str] = ()) -> None:
        self.partition_keys = tuple(partition_keys)
        self.rows: list[Row] = []

    def apply(self, rows: list[Row], kinds: Sequence[str] | None = None) -> None:
        assert kinds is None or set(kinds) <= {"+I", "+U"}
        self.rows.extend(rows)

    def overwrite(self, rows: list[Row]) -> None:
        touched = {tuple(row[p] for p in self.partition_keys) for row in rows}
        self.rows = [row for row in self.rows if tuple(row[p] for p in self.partition_keys) not in touched]
        self.rows.extend(rows)

    def snapshot(self) -> list[Row]:
        return copy.deepcopy(self.rows)


Model = KeyedModel | AppendModel


# ---- every primitive type ----------------------------------------------------------------
def _ts(*args: int, tz: dt.tzinfo | None = None) -> dt.datetime:
    return dt.datetime(*args, tzinfo=tz)  # type: ignore[misc]


# (column, Paimon type, Arrow type of the input, values cycled through, with nulls mixed in)
ALL_TYPES: list[tuple[str, str, pa.DataType, list[Any]]] = [
    ("c_boolean", "BOOLEAN", pa.bool_(), [True, False]),
    ("c_tinyint", "TINYINT", pa.int8(), [-128, 127, 0, -1, 42]),
    ("c_smallint", "SMALLINT", pa.int16(), [-32768, 32767, 0, 7]),
    ("c_int", "INT", pa.int32(), [-2**31, 2**31 - 1, 0, 123456]),
    ("c_bigint", "BIGINT", pa.int64(), [-2**63, 2**63 - 1, 0, 9876543210]),
    ("c_float", "FLOAT", pa.float32(), [1.5, -3.25, 0.0, 3.4028234663852886e38, float("-inf")]),
    ("c_double", "DOUBLE", pa.float64(), [1e300, -2.5, 0.0, 5e-324, float("inf")]),
    ("c_decimal_10_2", "DECIMAL(10, 2)", pa.decimal128(10, 2),
     [Decimal("12345678.91"), Decimal("-99999999.99"), Decimal("0.00"), Decimal("0.01")]),
    ("c_decimal_38_10", "DECIMAL(38, 10)", pa.decimal128(38, 10),
     [Decimal("1234567890123456789012345678.0123456789"), Decimal("-9999999999999999999999999999.9999999999"),
      Decimal("0E-10"), Decimal("-1.5000000000")]),
    ("c_char", "CHAR(5)", pa.string(), ["abcde", "xy z!", "héllo", "     "]),
    ("c_varchar", "VARCHAR(20)", pa.string(), ["", "short", "exactly twenty chars", "日本語テキスト", "tab\tnew\nline"]),
    ("c_string", "STRING", pa.string(), ["", "s" * 1000, "emoji 🎉", "null", "__DEFAULT_PARTITION__"]),
    ("c_binary", "BINARY(4)", pa.binary(), [b"\x00\x01\x02\x03", b"abcd", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00"]),
    ("c_varbinary", "VARBINARY(10)", pa.binary(), [b"", b"\xff" * 10, b"\x00", b"0123456789"]),
    ("c_bytes", "BYTES", pa.binary(), [b"", b"\x00" * 100, b"x", bytes(range(256))]),
    ("c_date", "DATE", pa.date32(), [dt.date(1969, 12, 31), dt.date(2024, 2, 29), dt.date(1970, 1, 1),
                                     dt.date(1, 1, 1), dt.date(9999, 12, 31)]),
    ("c_time", "TIME", pa.time32("ms"), [dt.time(0, 0, 0), dt.time(23, 59, 59), dt.time(12, 0, 1)]),
    ("c_timestamp_0", "TIMESTAMP(0)", pa.timestamp("s"),
     [_ts(1969, 12, 31, 23, 59, 59), _ts(2024, 2, 29, 12, 34, 56), _ts(1900, 1, 1), _ts(9999, 12, 31, 23, 59, 59)]),
    ("c_timestamp_3", "TIMESTAMP(3)", pa.timestamp("ms"),
     [_ts(1969, 12, 31, 23, 59, 59, 999000), _ts(2024, 2, 29, 12, 34, 56, 123000), _ts(1000, 1, 1)]),
    ("c_timestamp_6", "TIMESTAMP(6)", pa.timestamp("us"),
     [_ts(1969, 12, 31, 23, 59, 59, 999999), _ts(2024, 2, 29, 12, 34, 56, 123456), _ts(1000, 1, 1, 0, 0, 0, 1)]),
    # Nanoseconds do not fit datetime: epoch nanos (1969-12-31T23:59:59.999999999 and so on).
    ("c_timestamp_9", "TIMESTAMP(9)", pa.timestamp("ns"),
     [-1, 1709210096123456789, 0, -2208988800000000001]),
    ("c_ltz_3", "TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC"),
     [_ts(1969, 12, 31, 23, 59, 59, 999000, tz=UTC), _ts(2024, 2, 29, 12, 34, 56, 123000, tz=UTC)]),
    ("c_ltz_6", "TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC"),
     [_ts(1969, 12, 31, 23, 59, 59, 999999, tz=UTC), _ts(2024, 2, 29, 12, 34, 56, 123456, tz=UTC),
      _ts(2000, 1, 1, tz=UTC)]),
]


def all_types_batch(ids: Sequence[int], variant: int = 0, key: str = "id",
                    types: Sequence[tuple[str, str, pa.DataType, list[Any]]] | None = None) -> pa.Table:
    """Rows ``ids`` with one value of every type; ``variant`` changes values and null spots.

    Each column is null in about a fifth of the rows, and ids ending in 9 are null in
    every non-key column.
    """
    types = ALL_TYPES if types is None else types
    arrays = [pa.array(list(ids), pa.int32())]
    for j, (_, _, arrow_type, pool) in enumerate(types):
        values = [None if (i * 3 + j + variant) % 5 == 0 or i % 10 == 9 else pool[(i + variant * 3 + j) % len(pool)]
                  for i in ids]
        arrays.append(pa.array(values, arrow_type))
    return pa.table(arrays, names=[key] + [name for name, _, _, _ in types])


def all_types_columns(key: str = "id", types: Sequence[tuple[str, str, pa.DataType, list[Any]]] | None = None
                      ) -> list[tuple[str, str]]:
    return [(key, "INT")] + [(name, paimon_type) for name, paimon_type, _, _ in (ALL_TYPES if types is None else types)]


# A data file with a TIMESTAMP(7..9) column stores it as INT96, as Java Paimon reads it, and
# its other timestamps as plain INT64 counts (core.kernels.write). pypaimon 2.1.0 reads such
# counts as seconds, so it is shown the nanosecond column in a table of its own.
NANOS_TYPES = [t for t in ALL_TYPES if t[1] == "TIMESTAMP(9)"]
MICROS_TYPES = [t for t in ALL_TYPES if t[1] != "TIMESTAMP(9)"]
TYPE_SPLITS = pytest.mark.parametrize("types", [MICROS_TYPES, NANOS_TYPES], ids=["to_micros", "nanos"])


# ---- lakectl side ----------------------------------------------------------------------
def lakectl_table(tmp_path: Path, name: str, columns: Sequence[tuple[str, str]], *,
                  primary_keys: Sequence[str] = (), partition_keys: Sequence[str] = (),
                  options: dict[str, str] | None = None) -> Table:
    table = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(table, ", ".join(f"{n} {t}" for n, t in columns), primary_keys=primary_keys,
           partition_keys=partition_keys, options=options)
    return table


class History:
    """A lakectl table, its model, and the expected rows of every snapshot so far."""

    def __init__(self, table: Table, model: Model) -> None:
        self.table = table
        self.model = model
        self.states: list[list[Row]] = []

    def write(self, data: pa.Table, *, kinds: Sequence[str] | None = None, overwrite: bool = False) -> None:
        rows = canonical_rows(data)
        if kinds is not None:
            data = data.append_column("op", pa.array(list(kinds), pa.string()))
        result = self.table.write(data, mode="overwrite" if overwrite else "append",
                                  row_kind_column="op" if kinds is not None else None)
        if overwrite:
            self.model.overwrite(rows)
        else:
            self.model.apply(rows, kinds)
        self.states.append(self.model.snapshot())
        assert result.snapshot_id == len(self.states), "each write commits one snapshot"

    def verify(self, tmp_path: Path, *, pypaimon_micros: Sequence[str] = ()) -> None:
        """pypaimon and lakectl read the latest and every earlier snapshot as the model says.

        ``pypaimon_micros`` names TIMESTAMP(9) columns that pypaimon's merge reader can only
        return to the microsecond (see ``test_all_types_as_pk_table_values``).
        """
        columns = self.table.schema.field_names
        key = self.model.key
        latest, meta = official_read(self.table.path, tmp_path)
        assert meta["latest_snapshot"] == len(self.states)
        # pypaimon parses lakectl's schema file to the types lakectl declared.
        assert meta["schema"] == [[f.name, str(f.type)] for f in self.table.schema.fields]
        assert_rows(latest, self.states[-1], columns=columns, key=key, label="pypaimon, latest",
                    micros=pypaimon_micros)
        assert_rows(self.table.scan(), self.states[-1], columns=columns, key=key, label="lakectl, latest")
        for snapshot_id, expected in enumerate(self.states, start=1):
            rows, meta = official_read(self.table.path, tmp_path, snapshot=snapshot_id)
            assert meta["snapshot"] == snapshot_id
            assert_rows(rows, expected, columns=columns, key=key, label=f"pypaimon, snapshot {snapshot_id}",
                        micros=pypaimon_micros)
            assert_rows(self.table.scan(snapshot_id=snapshot_id), expected, columns=columns, key=key,
                        label=f"lakectl, snapshot {snapshot_id}")


def partition_dirs(table_path: str, column: str) -> set[str]:
    return {p.name for p in Path(table_path).iterdir() if p.is_dir() and p.name.startswith(f"{column}=")}


# ---- primary-key tables ----------------------------------------------------------------
ORDERS = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])


def _orders(ids: Sequence[int], tag: str) -> list[Row]:
    return [{"id": i, "name": f"{tag}{i}", "amount": i * 1.25} for i in ids]


def test_pk_unpartitioned_one_bucket(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "orders", [("id", "BIGINT"), ("name", "STRING"), ("amount", "DOUBLE")],
                          primary_keys=["id"], options={"bucket": "1"})
    h = History(table, KeyedModel(["id"]))
    h.write(pa.Table.from_pylist(_orders(range(1, 11), "a"), schema=ORDERS))
    # Plain rows are upserts: 5..10 updated, 11 and 12 new; 7 twice in one batch, the last wins.
    h.write(pa.Table.from_pylist(_orders(range(5, 13), "b") + [{"id": 7, "name": None, "amount": None}],
                                 schema=ORDERS))
    cdc = [
        ({"id": 3, "name": "a3", "amount": 3.75}, "-U"),
        ({"id": 3, "name": "c3", "amount": -1.0}, "+U"),
        ({"id": 4, "name": "a4", "amount": 5.0}, "-D"),
        ({"id": 99, "name": "absent", "amount": 0.0}, "-D"),
        ({"id": 13, "name": "c13", "amount": 13.0}, "+I"),
        ({"id": 13, "name": "c13-again", "amount": 14.0}, "+U"),
        ({"id": 12, "name": "b12", "amount": 15.0}, "-D"),
        ({"id": 12, "name": "c12-back", "amount": 16.0}, "+I"),
        ({"id": 6, "name": "c6", "amount": 6.0}, "+U"),
        ({"id": 6, "name": "b6", "amount": 7.5}, "-D"),
    ]
    h.write(pa.Table.from_pylist([r for r, _ in cdc], schema=ORDERS), kinds=[k for _, k in cdc])
    h.write(pa.Table.from_pylist(_orders([100, 101, 102, 5], "d"), schema=ORDERS), overwrite=True)
    h.write(pa.Table.from_pylist(_orders([100, 200], "e"), schema=ORDERS))
    assert sorted(r["id"] for r in h.states[2]) == [1, 2, 3, 5, 7, 8, 9, 10, 11, 12, 13]  # the model itself
    h.verify(tmp_path)


SALES = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("item", pa.string()), ("qty", pa.int32())])
ESCAPED_PARTITIONS = ["2024-01-01", "2024-01-02", "", "a/b c", "x=y%"]


def _sales(partitions: Sequence[str], ids: Sequence[int], tag: str) -> list[Row]:
    return [{"dt": p, "id": i, "item": f"{tag}-{p}-{i}", "qty": i * 10} for p in partitions for i in ids]


def test_pk_partitioned_four_buckets_cdc_and_partition_overwrite(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "sales", [("dt", "STRING"), ("id", "BIGINT"), ("item", "STRING"), ("qty", "INT")],
                          primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "4"})
    h = History(table, KeyedModel(["dt", "id"], ["dt"]))
    h.write(pa.Table.from_pylist(_sales(ESCAPED_PARTITIONS, range(1, 13), "a"), schema=SALES))
    h.write(pa.Table.from_pylist(_sales(["2024-01-01", "a/b c"], range(8, 16), "b")
                                 + _sales(["2024-01-03"], range(1, 4), "b"), schema=SALES))
    cdc = [
        ({"dt": "2024-01-01", "id": 1, "item": None, "qty": None}, "-D"),
        ({"dt": "", "id": 2, "item": "a--2", "qty": 20}, "-U"),
        ({"dt": "", "id": 2, "item": "c--2", "qty": -2}, "+U"),
        ({"dt": "x=y%", "id": 3, "item": None, "qty": None}, "-D"),
        ({"dt": "x=y%", "id": 300, "item": "absent", "qty": 0}, "-D"),
        ({"dt": "2024-01-02", "id": 4, "item": "c-4", "qty": 44}, "+U"),
        ({"dt": "2024-01-02", "id": 4, "item": "c-4", "qty": 44}, "-U"),
        ({"dt": "2024-01-03", "id": 9, "item": "c-new", "qty": 9}, "+I"),
        ({"dt": "a/b c", "id": 15, "item": None, "qty": None}, "-D"),
    ]
    h.write(pa.Table.from_pylist([r for r, _ in cdc], schema=SALES), kinds=[k for _, k in cdc])
    h.write(pa.Table.from_pylist(_sales(["2024-01-02"], [1, 50, 51], "d"), schema=SALES), overwrite=True)
    h.write(pa.Table.from_pylist(_sales(["", "x=y%"], [7, 70], "e"), schema=SALES), overwrite=True)
    h.write(pa.Table.from_pylist(_sales(["2024-01-02", "x=y%", "2024-01-04"], [51, 52], "f"), schema=SALES))
    assert len(h.states[3]) == len(h.states[2]) - 11 + 3  # the overwrite replaced 12 - 1 rows by 3
    assert partition_dirs(table.path, "dt") == {"dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03", "dt=2024-01-04",
                                                "dt=__DEFAULT_PARTITION__", "dt=a%2Fb c", "dt=x%3Dy%25"}
    h.verify(tmp_path)


EVENTS = pa.schema([("region", pa.string()), ("k1", pa.int32()), ("k2", pa.string()), ("v", pa.float64())])


def test_composite_pk_int_string_with_partition(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "events", [("region", "STRING"), ("k1", "INT"), ("k2", "STRING"), ("v", "DOUBLE")],
                          primary_keys=["region", "k1", "k2"], partition_keys=["region"], options={"bucket": "3"})
    h = History(table, KeyedModel(["region", "k1", "k2"], ["region"]))
    names = ["", "a", "abcdefg", "abcdefgh", "a longer key string", "ü"]
    first = [{"region": r, "k1": k1, "k2": k2, "v": k1 + 0.5} for r in ("eu", "us") for k1 in (-1, 0, 7)
             for k2 in names]
    h.write(pa.Table.from_pylist(first, schema=EVENTS))
    cdc = [
        ({"region": "eu", "k1": 7, "k2": "abcdefgh", "v": None}, "-D"),
        ({"region": "eu", "k1": 0, "k2": "", "v": 100.0}, "+U"),
        ({"region": "us", "k1": -1, "k2": "ü", "v": 200.0}, "+U"),
        ({"region": "us", "k1": 8, "k2": "new", "v": 300.0}, "+I"),
        ({"region": "us", "k1": 0, "k2": "a", "v": None}, "-U"),
    ]
    h.write(pa.Table.from_pylist([r for r, _ in cdc], schema=EVENTS), kinds=[k for _, k in cdc])
    h.write(pa.Table.from_pylist([{"region": "us", "k1": 1, "k2": "only", "v": 1.0}], schema=EVENTS), overwrite=True)
    h.write(pa.Table.from_pylist([{"region": "eu", "k1": 0, "k2": "", "v": -5.0},
                                  {"region": "apac", "k1": 0, "k2": "", "v": 5.0}], schema=EVENTS))
    h.verify(tmp_path)


DATED = pa.schema([("d", pa.date32()), ("id", pa.int32()), ("v", pa.string())])


def test_date_partition(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "dated", [("d", "DATE"), ("id", "INT"), ("v", "STRING")],
                          primary_keys=["d", "id"], partition_keys=["d"], options={"bucket": "2"})
    h = History(table, KeyedModel(["d", "id"], ["d"]))
    days = [dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1900, 3, 1)]
    h.write(pa.Table.from_pylist([{"d": d, "id": i, "v": f"{d}-{i}"} for d in days for i in range(6)], schema=DATED))
    cdc = [({"d": days[0], "id": 0, "v": None}, "-D"), ({"d": days[2], "id": 5, "v": "updated"}, "+U"),
           ({"d": dt.date(2000, 1, 1), "id": 1, "v": "y2k"}, "+I")]
    h.write(pa.Table.from_pylist([r for r, _ in cdc], schema=DATED), kinds=[k for _, k in cdc])
    h.write(pa.Table.from_pylist([{"d": days[1], "id": 42, "v": "only"}], schema=DATED), overwrite=True)
    # Legacy partition names render DATE as days since the epoch (spec 1.3).
    assert partition_dirs(table.path, "d") == {"d=-1", "d=0", "d=19782", "d=-25508", "d=10957"}
    h.verify(tmp_path)


# ---- append tables ---------------------------------------------------------------------
LOG = pa.schema([("p", pa.string()), ("seq", pa.int32()), ("payload", pa.string())])


def _log(partitions: Sequence[str | None], seqs: Sequence[int], tag: str) -> list[Row]:
    return [{"p": p, "seq": s, "payload": f"{tag}{s}"} for p in partitions for s in seqs]


def test_append_partitions_null_empty_blank_and_escaped(tmp_path: Path) -> None:
    """null, '' and ' ' are three partitions in one directory; overwriting one keeps the others."""
    table = lakectl_table(tmp_path, "log", [("p", "STRING"), ("seq", "INT"), ("payload", "STRING")],
                          partition_keys=["p"])
    h = History(table, AppendModel(["p"]))
    partitions = [None, "", " ", "a/b c", "x=y%", "plain"]
    h.write(pa.Table.from_pylist(_log(partitions, range(3), "a"), schema=LOG))
    h.write(pa.Table.from_pylist(_log(partitions, [1, 5], "b"), schema=LOG))  # duplicates stay
    h.write(pa.Table.from_pylist(_log([""], [100], "c"), schema=LOG), overwrite=True)
    h.write(pa.Table.from_pylist(_log([None, "x=y%"], [200], "d"), schema=LOG), overwrite=True)
    h.write(pa.Table.from_pylist(_log([" ", None], [300], "e"), schema=LOG))
    assert {row["p"] for row in h.states[2] if row["seq"] == 100} == {""}
    assert sum(row["p"] is None for row in h.states[2]) == 5  # the null partition survived
    assert partition_dirs(table.path, "p") == {"p=__DEFAULT_PARTITION__", "p=a%2Fb c", "p=x%3Dy%25", "p=plain"}
    h.verify(tmp_path)


NUMBERS = pa.schema([("n", pa.int32()), ("s", pa.string())])


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned-by-int"])
def test_append_unaware_bucket(tmp_path: Path, partitioned: bool) -> None:
    table = lakectl_table(tmp_path, "numbers", [("n", "INT"), ("s", "STRING")],
                          partition_keys=["n"] if partitioned else [])
    h = History(table, AppendModel(["n"] if partitioned else []))
    h.write(pa.Table.from_pylist([{"n": i % 3, "s": f"a{i}"} for i in range(10)], schema=NUMBERS))
    h.write(pa.Table.from_pylist([{"n": i % 3, "s": f"a{i}"} for i in range(4)] + [{"n": -5, "s": None}],
                                 schema=NUMBERS))
    h.write(pa.Table.from_pylist([{"n": 1, "s": "over"}], schema=NUMBERS), overwrite=True)
    h.write(pa.Table.from_pylist([{"n": 2, "s": "late"}, {"n": 1, "s": None}], schema=NUMBERS))
    assert len(h.states[2]) == (15 - 4 + 1 if partitioned else 1)  # the model itself
    h.verify(tmp_path)


KEYED = pa.schema([("k", pa.string()), ("v", pa.int32())])


def test_append_fixed_buckets_with_bucket_key(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "keyed_log", [("k", "STRING"), ("v", "INT")],
                          options={"bucket": "2", "bucket-key": "k"})
    h = History(table, AppendModel())
    keys = ["", "a", "ab", "abcdefgh", "ümlaut", "k1", "k2", "k3", "k4", "k5"]
    h.write(pa.Table.from_pylist([{"k": k, "v": i} for i, k in enumerate(keys)], schema=KEYED))
    h.write(pa.Table.from_pylist([{"k": k, "v": -i} for i, k in enumerate(keys[:5])] + [{"k": None, "v": 0}],
                                 schema=KEYED))
    h.verify(tmp_path)
    placed = bucket_placement(table.path, ["k"])
    assert {b for _, b in placed.values()} == {"bucket-0", "bucket-1"}


def test_append_write_mode_append_only_option(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "legacy_append", [("n", "INT"), ("s", "STRING")],
                          options={"write-mode": "append-only"})
    h = History(table, AppendModel())
    h.write(pa.Table.from_pylist([{"n": 1, "s": "x"}, {"n": 1, "s": "x"}], schema=NUMBERS))
    h.write(pa.Table.from_pylist([{"n": 2, "s": None}], schema=NUMBERS))
    h.write(pa.Table.from_pylist([{"n": 3, "s": "only"}], schema=NUMBERS), overwrite=True)
    h.verify(tmp_path)


# ---- every primitive type ----------------------------------------------------------------
# A 1-byte parquet.block.size gives every row its own row group.
ROW_GROUPS = pytest.mark.parametrize("row_groups", [{}, {"parquet.block.size": "1b"}], ids=["one", "per_row"])


@ROW_GROUPS
@TYPE_SPLITS
def test_all_types_as_pk_table_values(tmp_path: Path, row_groups: dict[str, str], types: list) -> None:
    table = lakectl_table(tmp_path, "typed_pk", all_types_columns(types=types), primary_keys=["id"],
                          options={"bucket": "2", **row_groups})
    h = History(table, KeyedModel(["id"]))
    h.write(all_types_batch(range(20), types=types))
    h.write(all_types_batch(range(0, 20, 2), variant=1, types=types))
    deletes = all_types_batch([1, 3, 5, 77], variant=2, types=types)
    h.write(deletes, kinds=["-D", "-U", "-D", "-D"])
    h.write(all_types_batch([3, 19, 20], variant=3, types=types), kinds=["+I", "+U", "+I"])
    # pypaimon 2.1.0 merges a bucket with several files through Python datetimes, which
    # floors TIMESTAMP(9) to microseconds even for tables it wrote itself; lakectl's scan is
    # still held to every nanosecond, and the append test checks pypaimon's nanoseconds.
    h.verify(tmp_path, pypaimon_micros=["c_timestamp_9"] if types is NANOS_TYPES else [])


@ROW_GROUPS
@TYPE_SPLITS
def test_all_types_in_append_table(tmp_path: Path, row_groups: dict[str, str], types: list) -> None:
    table = lakectl_table(tmp_path, "typed_append", all_types_columns(types=types), options=row_groups)
    h = History(table, AppendModel())
    h.write(all_types_batch(range(20), types=types))
    h.write(all_types_batch(range(10, 25), variant=1, types=types))
    h.verify(tmp_path)


# ---- bucket placement ------------------------------------------------------------------
def bucket_placement(table_path: str, columns: Sequence[str]) -> dict[tuple[Any, ...], tuple[str, str]]:
    """Key -> (partition directory, bucket directory) of every data file under the table.

    Each key must sit in exactly one directory: a key found in two buckets means two
    writes of it hashed differently.
    """
    root = Path(table_path)
    out: dict[tuple[Any, ...], tuple[str, str]] = {}
    files = sorted(root.rglob("bucket-*/*.parquet"))
    assert files, f"no data files under {table_path}"
    for path in files:
        place = (str(path.parent.parent.relative_to(root)), path.parent.name)
        for row in canonical_rows(pq.read_table(path, columns=list(columns))):
            key = tuple(row[c] for c in columns)
            assert out.setdefault(key, place) == place, f"key {key} in {out[key]} and in {place}"
    return out


def _key_values(paimon_type: str, n: int) -> pa.Array:
    """``n`` distinct values of a key type: negative and positive, short and long."""
    steps = [i - n // 2 for i in range(n)]
    if paimon_type == "BOOLEAN":
        return pa.array([i % 2 == 0 for i in range(n)])
    scaled = {"TINYINT": (1, pa.int8()), "SMALLINT": (1000, pa.int16()), "INT": (70_000_001, pa.int32()),
              "BIGINT": (300_000_000_000_000_001, pa.int64())}
    if paimon_type in scaled:
        factor, arrow_type = scaled[paimon_type]
        return pa.array([s * factor for s in steps], arrow_type)
    if paimon_type in ("STRING", "VARCHAR(20)"):
        # Up to 7 bytes a string is stored inline in a BinaryRow, longer ones in its variable part.
        return pa.array(["" if i == 0 else f"k{i}" + "é" * (i % 5) + "x" * (i % 13) for i in range(n)])
    if paimon_type == "BYTES":
        return pa.array([bytes(range(i % 17)) + i.to_bytes(2, "little") for i in range(n)], pa.binary())
    if paimon_type == "DATE":
        return pa.array([dt.date(1970, 1, 1) + dt.timedelta(days=s * 1000) for s in steps], pa.date32())
    if paimon_type.startswith("DECIMAL"):
        precision, scale = (int(x) for x in paimon_type[len("DECIMAL("):-1].split(","))
        factor = 10 ** (precision - 3)  # the widest values use every digit
        return pa.array([Decimal(s * factor + i).scaleb(-scale) for i, s in enumerate(steps)],
                        pa.decimal128(precision, scale))
    if paimon_type.startswith("TIMESTAMP"):
        unit = {"3": "ms", "6": "us", "9": "ns"}[paimon_type[len("TIMESTAMP("):-1]]
        base = 1_709_210_096_123_456_789 // _NANOS_PER_UNIT[unit]
        step = 86_400_000_000_123 // _NANOS_PER_UNIT[unit] + 1  # a day and a bit, so every digit moves
        values = [base + s * step for s in steps]
        if unit == "ns":
            # pypaimon 2.1.0 hashes a key through as_py() datetimes, dropping digits below the
            # microsecond (Java hashes every nanosecond, as lakectl does), so only whole
            # microseconds can be compared; nano-of-milli is still non-zero.
            values = [v // 1000 * 1000 for v in values]
        return pa.array(values, pa.timestamp(unit))
    raise AssertionError(f"no key values for {paimon_type}")


BUCKET_CASES: dict[str, tuple[list[str], list[str], int]] = {
    # label: (key types, partition keys among them (by index), bucket count)
    "int": (["INT"], [], 4),
    "bigint": (["BIGINT"], [], 5),
    "tinyint": (["TINYINT"], [], 3),
    "smallint": (["SMALLINT"], [], 4),
    "boolean": (["BOOLEAN"], [], 2),
    "string": (["STRING"], [], 4),
    "varchar": (["VARCHAR(20)"], [], 3),
    "bytes": (["BYTES"], [], 4),
    "date": (["DATE"], [], 4),
    "decimal-compact": (["DECIMAL(10, 2)"], [], 4),
    "decimal-wide": (["DECIMAL(38, 10)"], [], 4),
    "timestamp-3": (["TIMESTAMP(3)"], [], 4),
    "timestamp-6": (["TIMESTAMP(6)"], [], 4),
    "timestamp-9": (["TIMESTAMP(9)"], [], 4),
    "int-string-partitioned": (["STRING", "INT", "STRING"], ["k0"], 3),
    "int-string-date-decimal-timestamp": (["INT", "STRING", "DATE", "DECIMAL(12, 3)", "TIMESTAMP(6)"], [], 7),
}


@pytest.mark.parametrize("case", list(BUCKET_CASES))
def test_bucket_placement_matches_pypaimon(tmp_path: Path, case: str) -> None:
    """lakectl puts every key in the bucket pypaimon puts it in (same rows, twin tables)."""
    key_types, partition_keys, buckets = BUCKET_CASES[case]
    n = 2 if key_types == ["BOOLEAN"] else 60
    keys = [f"k{i}" for i in range(len(key_types))]
    arrays = [_key_values(t, n) for t in key_types]
    if partition_keys:
        arrays[0] = pa.array([["p1", "", "a/b"][i % 3] for i in range(n)])
    data = pa.table(arrays + [pa.array(range(n), pa.int32())], names=keys + ["v"])
    columns = list(zip(keys, key_types)) + [("v", "INT")]
    options = {"bucket": str(buckets)}

    table = lakectl_table(tmp_path, "placed", columns, primary_keys=keys, partition_keys=partition_keys,
                          options=options)
    table.write(data)
    job = {"warehouse": str(tmp_path / "twin"), "table": "db.placed",
           "schema": {"fields": [list(c) for c in columns], "primary_keys": keys, "partition_keys": partition_keys,
                      "options": options},
           "steps": [{"op": "write"}]}
    twin = official_write(job, [data], tmp_path)

    ours = bucket_placement(table.path, keys)
    theirs = bucket_placement(twin["table_path"], keys)
    assert len(ours) == n
    assert ours == theirs
    if n > buckets:
        assert len({b for _, b in ours.values()}) == buckets, "the keys should spread over every bucket"
    rows, _ = official_read(table.path, tmp_path)
    assert_rows(rows, canonical_rows(data), columns=[c for c, _ in columns], key=keys, label="pypaimon")


def test_append_bucket_key_placement_matches_pypaimon(tmp_path: Path) -> None:
    data = pa.table({"k": pa.array([f"key-{i}" * (i % 4) for i in range(40)] + [None]),
                     "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(41)]),
                     "v": pa.array(range(41), pa.int64())})
    columns = [("k", "STRING"), ("d", "DATE"), ("v", "BIGINT")]
    options = {"bucket": "4", "bucket-key": "k,d"}
    table = lakectl_table(tmp_path, "placed", columns, options=options)
    table.write(data)
    job = {"warehouse": str(tmp_path / "twin"), "table": "db.placed",
           "schema": {"fields": [list(c) for c in columns], "primary_keys": [], "partition_keys": [],
                      "options": options},
           "steps": [{"op": "write"}]}
    twin = official_write(job, [data], tmp_path)
    assert bucket_placement(table.path, ["k", "d"]) == bucket_placement(twin["table_path"], ["k", "d"])

