"""ORC and Avro data files against Java Paimon 1.0, the reference.

Java writes tables with ``file.format=orc`` and ``=avro`` (every primitive type and nested
ARRAY/MAP/ROW, updates, deletes, compaction) and lakectl must read what Java reads at every
snapshot; lakectl writes such tables and Java must read what lakectl reads; and a table whose
``file.format`` changes over its life is read alike by both, whoever changed it.

Limits of the formats the data here stays within (each has its own test below):
- Avro stores timestamps to precision 6: Java refuses a TIMESTAMP(9) column in an Avro table.
- pyarrow reads ORC timestamps only in nanoseconds (years 1677 to 2262), and its ORC writer
  splits a timestamp before 1970 with a sub-millisecond part in a way Java cannot read back.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pytest
from java_oracle import java_read, java_read_snapshots, java_run, lakectl_rows
from oracle import official_read
from test_java_interop import java_fields, open_table, rows_of, typed_batch
from test_lakectl_to_pypaimon import all_types_columns, lakectl_table

from core.errors import CorruptMetadataError, InvalidDataError, UsageError
from core.evolution import SetOption
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

NESTED_COLUMNS = [
    {"name": "tags", "type": {"type": "ARRAY", "element": "STRING"}},
    {"name": "attrs", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}},
    {"name": "point", "type": {"type": "ROW", "fields": [{"id": 100, "name": "x", "type": "DOUBLE"},
                                                         {"id": 101, "name": "y", "type": "DECIMAL(10, 2)"}]}},
]
NESTED_SQL = [("tags", "ARRAY<STRING>"), ("attrs", "MAP<STRING NOT NULL, BIGINT>"),
              ("point", "ROW<x DOUBLE, y DECIMAL(10, 2)>")]
_UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}
# Epoch seconds of 1677-09-22 and 2262-04-11: what a nanosecond timestamp can hold.
_NANO_RANGE = (-9223372036, 9223372036)


def readable_in(fmt: str, data: pa.Table, *, lakectl_writes: bool) -> pa.Table:
    """``data`` within what lakectl can store in ``fmt`` (see the module doc): Avro without
    the TIMESTAMP(9) column, ORC with out-of-range timestamps (and, when lakectl writes,
    pre-1970 ones with a sub-millisecond part) replaced by null."""
    if fmt == "avro":
        return data.drop_columns(["c_timestamp_9"])
    if fmt != "orc":
        return data
    for i, f in enumerate(data.schema):
        if not pa.types.is_timestamp(f.type):
            continue
        per_second = _UNIT_PER_SECOND[f.type.unit]
        per_milli = max(1, per_second // 1000)

        def fits(v: int) -> bool:
            in_range = _NANO_RANGE[0] * per_second <= v <= _NANO_RANGE[1] * per_second
            return in_range and not (lakectl_writes and v < 0 and v % per_milli)

        values = [v if v is None or fits(v) else None for v in data.column(i).cast(pa.int64()).to_pylist()]
        data = data.set_column(i, f.name, pa.array(values, pa.int64()).cast(f.type))
    return data


def nested_values(i: int, variant: int) -> list[Any]:
    """tags, attrs, point of row ``i`` in the normal form."""
    return [[f"t{i + variant}", None] if i % 3 else None,
            [[f"a{i}", i * variant], ["z", None]] if i % 2 else [],
            [i * 0.5 + variant, f"{i}.2{variant}"] if i % 4 else None]


def java_batch(fmt: str, ids: Sequence[int], variant: int) -> list[list[Any]]:
    rows = rows_of(readable_in(fmt, typed_batch(ids, variant), lakectl_writes=False))
    return [r + nested_values(i, variant) for i, r in zip(ids, rows)]


def columns_for(fmt: str) -> list[tuple[str, str]]:
    return [c for c in all_types_columns() if not (fmt == "avro" and c[0] == "c_timestamp_9")]


def canonical(rows: list[list[Any]], map_columns: Sequence[int]) -> list[list[Any]]:
    """Rows with their MAP values' entries sorted: a map has no order, and Java's reader
    returns Avro maps in hash order."""
    out = []
    for row in rows:
        row = list(row)
        for i in map_columns:
            if row[i] is not None:
                row[i] = sorted(row[i], key=lambda kv: str(kv[0]))
        out.append(row)
    return sorted(out, key=repr)


def assert_matches_java(table: Table, label: str) -> int:
    """lakectl reads what Java reads at the latest and every retained snapshot."""
    maps = [i for i, f in enumerate(table.schema.fields) if f.type.name == "MAP"]
    ids = table.snapshots.list_ids()
    assert ids
    for sid, expected in java_read_snapshots(table.path, ids).items():
        assert canonical(lakectl_rows(table.scan(snapshot_id=sid)), maps) == canonical(expected, maps), \
            f"{label}: snapshot {sid} differs from Java"
    latest, meta = java_read(table.path)
    assert meta["latest_snapshot"] == ids[-1]
    assert canonical(lakectl_rows(table.scan()), maps) == canonical(latest, maps)
    return len(ids)


def data_files(table: Table) -> list[Path]:
    return sorted(p for p in Path(table.path).rglob("data-*") if p.is_file())


# ---- Java writes, lakectl reads ----------------------------------------------------------
@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_java_pk_table_in_orc_and_avro(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "wh" / "db.db" / "typed"
    java_run(path, [
        {"op": "write", "rows": java_batch(fmt, range(30), 0)},
        {"op": "write", "rows": java_batch(fmt, range(0, 30, 3), 1)},
        {"op": "write", "rows": java_batch(fmt, [1, 4, 7, 50], 2), "kinds": ["-D", "-U", "-D", "-D"]},
        {"op": "compact", "full": True},
        {"op": "write", "rows": java_batch(fmt, [4, 29, 31], 3), "kinds": ["+I", "+U", "+I"]},
    ], create={"fields": java_fields(columns_for(fmt), ["id"]) + NESTED_COLUMNS, "primaryKeys": ["id"],
               "options": {"bucket": "2", "file.format": fmt}})
    table = open_table(path)
    assert {p.suffix for p in data_files(table)} == {f".{fmt}"}
    assert assert_matches_java(table, f"Java {fmt} pk") == 5


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_java_append_table_in_orc_and_avro(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "wh" / "db.db" / "log"
    java_run(path, [
        {"op": "write", "rows": java_batch(fmt, range(20), 0)},
        {"op": "write", "rows": java_batch(fmt, range(5), 1)},
        {"op": "compact", "full": True},
        {"op": "write", "rows": java_batch(fmt, range(40, 45), 2)},
    ], create={"fields": java_fields(columns_for(fmt)) + NESTED_COLUMNS,
               "options": {"bucket": "2", "bucket-key": "id", "file.format": fmt,
                           **({"file.compression": "snappy"} if fmt == "orc" else {"avro.codec": "deflate"})}})
    table = open_table(path)
    assert {p.suffix for p in data_files(table)} == {f".{fmt}"}
    assert assert_matches_java(table, f"Java {fmt} append") >= 3


def test_java_table_whose_format_changes(tmp_path: Path) -> None:
    """Java writes Parquet, then ORC, then Avro into one table and compacts: each file is
    read in its own format."""
    path = tmp_path / "wh" / "db.db" / "changing"
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"}, {"name": "s", "type": "STRING"},
              {"name": "t", "type": "TIMESTAMP(6)"}, {"name": "d", "type": "DECIMAL(20, 4)"}]

    def batch(keys: Sequence[int], step: int) -> list[list[Any]]:
        return [[k, k * step, f"s{k}-{step}" if k % 3 else None, f"2024-03-0{k % 9 + 1}T10:00:00.{k:06d}000",
                 f"{k * step}.0{step}"] for k in keys]

    java_run(path, [
        {"op": "write", "rows": batch(range(20), 1)},
        {"op": "set-option", "key": "file.format", "value": "orc"},
        {"op": "write", "rows": batch(range(10, 30), 2)},
        {"op": "set-option", "key": "file.format", "value": "avro"},
        {"op": "write", "rows": batch(range(0, 30, 4), 3), "kinds": ["+U", "-D"] * 4},
        {"op": "compact", "full": True},
        {"op": "write", "rows": batch([5, 40], 4)},
    ], create={"fields": fields, "primaryKeys": ["k"], "options": {"bucket": "2"}})
    table = open_table(path)
    assert table.schema.options["file.format"] == "avro"
    assert assert_matches_java(table, "Java format change") == 5
    # The first snapshots still hold Parquet and ORC files.
    assert {".parquet", ".orc", ".avro"} <= {p.suffix for p in data_files(table)}


def test_java_orc_timestamp_outside_nanosecond_range_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "db.db" / "far"
    java_run(path, [{"op": "write", "rows": [[1, "9999-12-31T23:59:59.000000000"]]}],
             create={"fields": [{"name": "k", "type": "INT NOT NULL"}, {"name": "t", "type": "TIMESTAMP(3)"}],
                     "primaryKeys": ["k"], "options": {"bucket": "1", "file.format": "orc"}})
    rows, _ = java_read(path)
    assert rows == [[1, "9999-12-31T23:59:59.000000000"]]
    with pytest.raises(CorruptMetadataError, match=r"data-.*\.orc.*column t .*1677-09-21 to 2262-04-11"):
        open_table(path).scan()
    assert open_table(path).scan(select=["k"]).to_pylist() == [{"k": 1}]  # the other column reads


# ---- lakectl writes, Java reads ------------------------------------------------------------
def lakectl_batch(fmt: str, ids: Sequence[int], variant: int) -> pa.Table:
    data = readable_in(fmt, typed_batch(ids, variant), lakectl_writes=True)
    nested = [nested_values(i, variant) for i in ids]
    tags = pa.array([n[0] for n in nested], pa.list_(pa.string()))
    attrs = pa.array([None if n[1] is None else [(k, v) for k, v in n[1]] for n in nested],
                     pa.map_(pa.string(), pa.int64()))
    points = pa.array([None if n[2] is None else {"x": n[2][0], "y": Decimal(n[2][1])} for n in nested],
                      pa.struct([("x", pa.float64()), ("y", pa.decimal128(10, 2))]))
    return data.append_column("tags", tags).append_column("attrs", attrs).append_column("point", points)


@pytest.mark.parametrize("fmt", ["orc", "avro"])
@pytest.mark.parametrize("kind", ["pk", "append"])
def test_java_reads_lakectl_orc_and_avro_tables(tmp_path: Path, fmt: str, kind: str) -> None:
    pk = kind == "pk"
    table = lakectl_table(tmp_path, f"{kind}_{fmt}", columns_for(fmt) + NESTED_SQL,
                          primary_keys=["id"] if pk else [],
                          options={"bucket": "2", **({} if pk else {"bucket-key": "id"}), "file.format": fmt,
                                   "file.compression": "zstd", "file.compression.zstd-level": "3"})
    table.write(lakectl_batch(fmt, range(25), 0))
    table.write(lakectl_batch(fmt, range(0, 25, 2), 1))
    if pk:
        deletes = lakectl_batch(fmt, [3, 5, 8], 2)
        table.write(deletes.append_column("op", pa.array(["-D", "-D", "+U"])), row_kind_column="op")
    table.compact(full=True)
    table.write(lakectl_batch(fmt, [3, 40], 3))
    assert {p.suffix for p in data_files(table)} == {f".{fmt}"}
    assert_matches_java(table, f"lakectl {fmt} {kind}")
    # pypaimon, the other oracle, reads the same rows too, except that it keeps the spaces
    # ORC pads CHAR values with, which Java's reader (and so lakectl's) drops; and TIMESTAMP(9)
    # is left out, which pypaimon's merge reader returns to the microsecond only.
    columns = [n for n in table.schema.field_names if n != "c_timestamp_9"]
    maps = [i for i, n in enumerate(columns) if n == "attrs"]
    char = columns.index("c_char")
    for sid in table.snapshots.list_ids():
        theirs = lakectl_rows(official_read(table.path, tmp_path, snapshot=sid, projection=columns)[0])
        if fmt == "orc":
            theirs = [[v.rstrip(" ") if i == char and v is not None else v for i, v in enumerate(r)] for r in theirs]
        mine = lakectl_rows(table.scan(snapshot_id=sid, select=columns))
        assert canonical(theirs, maps) == canonical(mine, maps)
    # Java continues the table (a write and a full compaction, in the same format) and
    # lakectl reads the result as Java does.
    java_run(table.path, [{"op": "write", "rows": java_batch(fmt, [3, 41], 4)}, {"op": "compact", "full": True}])
    assert_matches_java(open_table(Path(table.path)), f"Java on lakectl {fmt} {kind}")


def test_lakectl_table_whose_format_changes(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "changing", [("k", "INT"), ("v", "BIGINT"), ("t", "TIMESTAMP(3)")],
                          primary_keys=["k"], options={"bucket": "2"})
    schema = pa.schema([("k", pa.int32()), ("v", pa.int64()), ("t", pa.timestamp("ms"))])

    def batch(keys: Sequence[int], step: int) -> pa.Table:
        return pa.table([list(keys), [k * step for k in keys],
                         [dt.datetime(2024, 1, 1) + dt.timedelta(milliseconds=k * step) for k in keys]], schema=schema)

    table.write(batch(range(20), 1))
    table.alter([SetOption("file.format", "orc")])
    table.write(batch(range(10, 30), 2))
    table.alter([SetOption("file.format", "avro")])
    table.write(batch(range(0, 30, 5), 3))
    suffixes = {p.suffix for p in data_files(table)}
    assert suffixes == {".parquet", ".orc", ".avro"}
    assert_matches_java(table, "lakectl format change")
    table.compact(full=True)  # rewrites everything as Avro, the table's format now
    assert {Path(f.file_name).suffix for f in table.files()} == {".avro"}
    assert_matches_java(table, "lakectl format change, compacted")


def test_snappy_avro_files_read_by_pypaimon(tmp_path: Path) -> None:
    """file.compression other than zstd makes Java write Avro's default codec, snappy; so does
    lakectl (through cramjam), and pypaimon reads the files (the Java oracle's classpath has
    no snappy library, so it cannot be the reader here)."""
    import fastavro

    snappy = lakectl_table(tmp_path, "snappy", [("k", "INT"), ("v", "STRING")], primary_keys=["k"],
                           options={"bucket": "1", "file.format": "avro", "file.compression": "snappy"})
    snappy.write(pa.table({"k": pa.array(range(50), pa.int32()), "v": [f"v{i}" for i in range(50)]}))
    files = data_files(snappy)
    assert files
    for f in files:
        with f.open("rb") as stream:
            assert fastavro.reader(stream).codec == "snappy"
    theirs = lakectl_rows(official_read(snappy.path, tmp_path)[0])
    assert theirs == lakectl_rows(snappy.scan())
    assert sorted(theirs) == [[i, f"v{i}"] for i in range(50)]


def test_lakectl_refuses_what_java_could_not_read(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="file.format=avro.*TIMESTAMP\\(9\\)"):
        table = lakectl_table(tmp_path, "avro9", [("k", "INT"), ("t", "TIMESTAMP(9)")], primary_keys=["k"],
                              options={"bucket": "1", "file.format": "avro"})
        table.write(pa.table({"k": pa.array([1], pa.int32()), "t": pa.array([0], pa.timestamp("ns"))}))
    table = lakectl_table(tmp_path, "orc9", [("k", "INT"), ("t", "TIMESTAMP(9)")], primary_keys=["k"],
                          options={"bucket": "1", "file.format": "orc"})
    with pytest.raises(InvalidDataError, match="column t.*ORC"):
        table.write(pa.table({"k": pa.array([1], pa.int32()), "t": pa.array([-1], pa.timestamp("ns"))}))
    table.write(pa.table({"k": pa.array([1], pa.int32()), "t": pa.array([-1_000_000], pa.timestamp("ns"))}))
    rows, _ = java_read(table.path)
    assert rows == lakectl_rows(table.scan()) == [[1, "1969-12-31T23:59:59.999000000"]]
