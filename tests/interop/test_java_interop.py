"""Java Paimon 1.0, the reference, against lakectl on the table shapes that already match.

Each test has one side write (Java through ``java_run``, or lakectl through its API) and
then holds lakectl's read to Java's read of the same table at every snapshot. Where Java
writes on top of a lakectl table (or the other way round) both readers must still agree,
and a plain Python model of the rows says what both must return.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from java_oracle import java_read, java_read_snapshots, java_run, lakectl_rows, normal, sort_rows
from oracle import official_read
from test_lakectl_to_pypaimon import all_types_batch, all_types_columns, lakectl_table

from core.evolution import AddColumn, RenameColumn
from core.kernels.write import KEY_SORTED_ROW_GROUP_ROWS
from core.ops.create import create
from core.ops.tags import create_tag
from core.table import Table
from core.types import parse_type, to_arrow

pytestmark = [pytest.mark.interop, pytest.mark.java]


def rows_of(table: pa.Table) -> list[list[Any]]:
    """An Arrow table's rows in the oracle's normal form, in input order (Java's input)."""
    columns = [[normal(v, f.type) for v in table.column(i).to_pylist()] for i, f in enumerate(table.schema)]
    return [list(r) for r in zip(*columns)]


def typed_batch(ids: Sequence[int], variant: int = 0) -> pa.Table:
    """``all_types_batch`` without TIMESTAMP(9) values before 1970: Java Paimon 1.0 writes
    them but its INT96 reader throws on a negative sub-millisecond part, so no Java read can
    be compared there (lakectl's own reads of them are checked against pypaimon)."""
    data = all_types_batch(ids, variant=variant)
    i = data.schema.get_field_index("c_timestamp_9")
    nanos = [None if v is None else abs(v) for v in data.column(i).cast(pa.int64()).to_pylist()]
    return data.set_column(i, "c_timestamp_9", pa.array(nanos, pa.int64()).cast(pa.timestamp("ns")))


def java_fields(columns: Sequence[tuple[str, str]], not_null: Sequence[str] = ()) -> list[dict[str, str]]:
    return [{"name": n, "type": f"{t} NOT NULL" if n in not_null else t} for n, t in columns]


def open_table(path: Path) -> Table:
    """The lakectl Table for a table directory ``<wh>/db.db/<name>``."""
    return Table.open(f"db.{path.name}", warehouse=str(path.parents[1]))


def assert_same_at_every_snapshot(table: Table, label: str) -> int:
    """lakectl reads what Java reads at the latest and every retained snapshot; returns the count."""
    latest, meta = java_read(table.path)
    assert lakectl_rows(table.scan()) == latest, f"{label}: latest snapshot differs from Java"
    ids = table.snapshots.list_ids()
    assert ids and ids[-1] == meta["latest_snapshot"]
    for sid, expected in java_read_snapshots(table.path, ids).items():
        assert lakectl_rows(table.scan(snapshot_id=sid)) == expected, f"{label}: snapshot {sid} differs from Java"
    return len(ids)


# ---- Java writes, lakectl reads ----------------------------------------------------------
def test_oracle_round_trip_of_every_type(tmp_path: Path) -> None:
    """The oracle itself: values sent to Java in the normal form come back unchanged."""
    data = typed_batch(range(12))
    path = tmp_path / "wh" / "db.db" / "types"
    java_run(path, [{"op": "write", "rows": rows_of(data)}],
             create={"fields": java_fields(all_types_columns(), ["id"]), "primaryKeys": ["id"],
                     "options": {"bucket": "2"}})
    rows, meta = java_read(path)
    assert rows == sort_rows(rows_of(data))
    assert meta["latest_snapshot"] == 1


@pytest.mark.parametrize("layout", ["unpartitioned", "partitioned"])
def test_java_pk_table_of_every_type_with_updates_deletes_and_compaction(tmp_path: Path, layout: str) -> None:
    columns = all_types_columns()
    partitioned = layout == "partitioned"
    if partitioned:
        columns = [*columns, ("dt", "STRING")]

    def batch(ids: Sequence[int], variant: int) -> list[list[Any]]:
        rows = rows_of(typed_batch(ids, variant))
        return [[*r, f"2024-01-0{r[0] % 3 + 1}"] for r in rows] if partitioned else rows

    path = tmp_path / "wh" / "db.db" / "typed"
    java_run(path, [
        {"op": "write", "rows": batch(range(30), 0)},
        {"op": "write", "rows": batch(range(0, 30, 3), 1)},
        {"op": "write", "rows": batch([1, 4, 7, 50], 2), "kinds": ["-D", "-U", "-D", "-D"]},
        {"op": "compact", "full": True},
        {"op": "write", "rows": batch([4, 29, 31], 3), "kinds": ["+I", "+U", "+I"]},
    ], create={"fields": java_fields(columns, ["id", "dt"]), "primaryKeys": ["id", "dt"] if partitioned else ["id"],
               "partitionKeys": ["dt"] if partitioned else [], "options": {"bucket": "3"}})
    assert assert_same_at_every_snapshot(open_table(path), layout) == 5


@pytest.mark.parametrize("engine,options,kinds", [
    ("partial-update", {}, None),
    ("aggregation", {"fields.v.aggregate-function": "sum", "fields.m.aggregate-function": "max",
                     "fields.s.aggregate-function": "listagg", "fields.b.aggregate-function": "bool_and"}, None),
    ("first-row", {}, None),
    ("deduplicate", {"changelog-producer": "lookup"}, ["+I", "-U", "+U", "-D"]),
    ("deduplicate", {"changelog-producer": "full-compaction"}, ["+I", "-U", "+U", "-D"]),
], ids=["partial-update", "aggregation", "first-row", "lookup-producer", "full-compaction-producer"])
def test_java_merge_engines(tmp_path: Path, engine: str, options: dict[str, str], kinds: list[str] | None) -> None:
    path = tmp_path / "wh" / "db.db" / "merged"
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"}, {"name": "m", "type": "DOUBLE"},
              {"name": "s", "type": "STRING"}, {"name": "b", "type": "BOOLEAN"}]

    def batch(n: int, step: int) -> list[list[Any]]:
        return [[k % 7, k * step, None if k % 4 == 0 else k / step, None if k % 5 == 0 else f"s{k}", k % 3 != 0]
                for k in range(n)]

    steps: list[dict[str, Any]] = [{"op": "write", "rows": batch(20, 1)}, {"op": "write", "rows": batch(14, 2)}]
    if kinds:
        steps.append({"op": "write", "rows": batch(4, 3), "kinds": kinds})
    steps += [{"op": "compact", "full": True}, {"op": "write", "rows": batch(9, 5)}]
    java_run(path, steps, create={"fields": fields, "primaryKeys": ["k"],
                                  "options": {"bucket": "2", "merge-engine": engine, **options}})
    assert_same_at_every_snapshot(open_table(path), engine)


def test_java_nested_types(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "db.db" / "nested"
    fields = [{"name": "id", "type": "INT NOT NULL"},
              {"name": "tags", "type": {"type": "ARRAY", "element": "STRING"}},
              {"name": "attrs", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}},
              {"name": "point", "type": {"type": "ROW", "fields": [{"id": 3, "name": "x", "type": "DOUBLE"},
                                                                   {"id": 4, "name": "y", "type": "DECIMAL(10, 2)"}]}}]
    rows = [[i, [f"t{i}", None] if i % 3 else None, [[f"a{i}", i], ["z", None]] if i % 2 else [],
             [i * 0.5, f"{i}.25"] if i % 4 else None] for i in range(10)]
    java_run(path, [{"op": "write", "rows": rows}, {"op": "write", "rows": rows[:3], "kinds": ["-D"] * 3}],
             create={"fields": fields, "primaryKeys": ["id"], "options": {"bucket": "1"}})
    assert assert_same_at_every_snapshot(open_table(path), "nested") == 2


@pytest.mark.parametrize("bucket", ["-1", "2"], ids=["unaware", "fixed"])
def test_java_append_tables(tmp_path: Path, bucket: str) -> None:
    path = tmp_path / "wh" / "db.db" / "log"
    options = {"bucket": bucket, **({"bucket-key": "id"} if bucket != "-1" else {})}
    rows = [[i, f"e{i}", f"2024-01-0{i % 2 + 1}"] for i in range(25)]
    java_run(path, [{"op": "write", "rows": rows}, {"op": "write", "rows": rows[:5]},
                    {"op": "write", "rows": rows[5:9], "overwrite": True}],
             create={"fields": [{"name": "id", "type": "INT"}, {"name": "e", "type": "STRING"},
                                {"name": "dt", "type": "STRING"}],
                     "partitionKeys": ["dt"], "options": options})
    assert assert_same_at_every_snapshot(open_table(path), f"append {bucket}") == 3


def test_java_option_change_between_writes(tmp_path: Path) -> None:
    """A table Java altered between writes (a new schema file): lakectl reads both halves."""
    path = tmp_path / "wh" / "db.db" / "altered"
    java_run(path, [{"op": "write", "rows": [[i, i * 2] for i in range(10)]},
                    {"op": "set-option", "key": "target-file-size", "value": "64 mb"},
                    {"op": "write", "rows": [[i, -i] for i in range(5, 15)]}],
             create={"fields": [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "INT"}],
                     "primaryKeys": ["k"], "options": {"bucket": "2"}})
    assert assert_same_at_every_snapshot(open_table(path), "altered") == 2


# ---- lakectl writes, Java reads, then Java writes on top ----------------------------------
@pytest.mark.parametrize("engine,options", [
    ("deduplicate", {}),
    ("partial-update", {}),
    ("aggregation", {"fields.v.aggregate-function": "sum"}),
    ("first-row", {}),
])
def test_java_reads_and_continues_lakectl_tables(tmp_path: Path, engine: str, options: dict[str, str]) -> None:
    table = lakectl_table(tmp_path, "mine", [("k", "INT"), ("v", "BIGINT"), ("s", "STRING")], primary_keys=["k"],
                          options={"bucket": "2", "merge-engine": engine, **options})
    schema = pa.schema([("k", pa.int32()), ("v", pa.int64()), ("s", pa.string())])
    table.write(pa.table([list(range(20)), list(range(20)), [f"a{i}" for i in range(20)]], schema=schema))
    table.write(pa.table([list(range(0, 20, 2)), [None if i % 4 else i * 10 for i in range(0, 20, 2)],
                          [f"b{i}" for i in range(0, 20, 2)]], schema=schema))
    table.compact(full=True)
    table.write(pa.table([[3, 25], [33, 25], [None, "c"]], schema=schema))
    assert_same_at_every_snapshot(table, f"lakectl {engine}")
    # Java continues the lakectl table: a write, a full compaction, an expire.
    java_run(table.path, [{"op": "write", "rows": [[3, 1, "j3"], [40, 4, "j40"]]},
                          {"op": "compact", "full": True},
                          {"op": "expire", "retain_max": 2, "retain_min": 2}])
    assert assert_same_at_every_snapshot(table, f"Java on lakectl {engine}") == 2
    # And lakectl continues after Java.
    table.write(pa.table([[40, 41], [5, 6], ["l40", "l41"]], schema=schema))
    assert_same_at_every_snapshot(table, f"lakectl after Java {engine}")


def test_java_and_pypaimon_read_lakectl_files_cut_into_key_sorted_row_groups(tmp_path: Path) -> None:
    """A primary-key file of more than KEY_SORTED_ROW_GROUP_ROWS rows is cut into groups of
    that many rows; Java and pypaimon read it, merged with an upsert and a delete run over
    it, as a dict of the rows says (the runs' keys cross the group boundaries)."""
    g = KEY_SORTED_ROW_GROUP_ROWS
    n = 3 * g + 17
    table = lakectl_table(tmp_path, "groups", [("k", "BIGINT"), ("v", "BIGINT"), ("s", "STRING")], primary_keys=["k"],
                          options={"bucket": "1"})
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    keys = list(range(n))
    random.Random(5).shuffle(keys)  # written in any order, sorted by the writer
    table.write(pa.table([keys, keys, [f"a{k}" for k in keys]], schema=schema))
    (base,) = Path(table.path).glob("bucket-0/*.parquet")
    footer = pq.read_metadata(base)
    assert [footer.row_group(i).num_rows for i in range(footer.num_row_groups)] == [g, g, g, 17]
    upserts = list(range(0, n + 10, 5))  # every 5th key, and new keys past the end
    table.write(pa.table([upserts, [-k for k in upserts], [f"b{k}" for k in upserts]], schema=schema))
    deletes = list(range(3, n, 11))
    table.write(pa.table([deletes, deletes, ["x"] * len(deletes), ["-D"] * len(deletes)],
                         names=["k", "v", "s", "op"]).cast(schema.append(pa.field("op", pa.string()))),
                row_kind_column="op")
    expected = {k: [k, k, f"a{k}"] for k in range(n)}
    expected.update({k: [k, -k, f"b{k}"] for k in upserts})
    for k in deletes:
        expected.pop(k, None)
    want = sort_rows(expected.values())
    java_rows, _ = java_read(table.path)
    assert java_rows == want
    pypaimon_rows, _ = official_read(table.path, tmp_path)
    assert lakectl_rows(pypaimon_rows) == want
    assert lakectl_rows(table.scan()) == want


def test_java_reads_lakectl_every_type_after_alter_and_expire(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "evolving", all_types_columns(), primary_keys=["id"], options={"bucket": "2"})
    table.write(typed_batch(range(25)))
    table.write(typed_batch(range(0, 25, 2), variant=1))
    table.alter([AddColumn("extra", parse_type("STRING")), RenameColumn("c_string", "c_text")])
    data = typed_batch([3, 40], variant=2).rename_columns(
        [*(n if n != "c_string" else "c_text" for n in all_types_batch([0]).column_names)])
    table.write(data.append_column("extra", pa.array(["x", None])))
    table.compact(full=True)
    table.expire(retain_max=2, retain_min=1, dry_run=False)
    assert assert_same_at_every_snapshot(table, "alter+expire") == 2


def test_java_time_travel_to_lakectl_tags(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "tagged", [("k", "INT"), ("v", "TIMESTAMP(3)")], primary_keys=["k"],
                          options={"bucket": "1"})
    schema = pa.schema([("k", pa.int32()), ("v", pa.timestamp("ms"))])
    table.write(pa.table([[1, 2], [dt.datetime(2024, 1, 1), None]], schema=schema))
    create_tag(table, "v1", snapshot_id=1)
    table.write(pa.table([[1], [dt.datetime(2025, 1, 1, 0, 0, 0, 5000)]], schema=schema))
    rows, _ = java_read(table.path, tag="v1")
    assert rows == lakectl_rows(table.scan(tag="v1")) == [[1, "2024-01-01T00:00:00.000000000"], [2, None]]


def test_lakectl_create_matches_java_defaults(tmp_path: Path) -> None:
    """A table lakectl creates opens in Java with the same fields, keys and bucket mode."""
    table = Table.locate("db.plain", warehouse=str(tmp_path / "wh"))
    create(table, "id BIGINT, name STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "4"})
    table.write(pa.table({"id": [1, 2], "name": ["a", None], "dt": ["x", "y"]}))
    rows, meta = java_read(table.path)
    assert meta["columns"] == ["id", "name", "dt"]
    assert rows == [[1, "a", "x"], [2, None, "y"]]


def test_java_reads_lakectl_timestamps_of_every_precision_at_any_depth(tmp_path: Path) -> None:
    """Java 1.0's Parquet reader takes TIMESTAMP(0..6) only as INT64 and TIMESTAMP(7..9) only
    as INT96. A lakectl file holds both kinds, at the top level and inside ARRAY, MAP and
    ROW; a file without nanoseconds stays plain. Java and lakectl read the values written."""
    columns = [("id", "INT"), ("t0", "TIMESTAMP(0)"), ("t3", "TIMESTAMP(3)"), ("t6", "TIMESTAMP(6)"),
               ("t9", "TIMESTAMP(9)"), ("arr", "ARRAY<TIMESTAMP(3)>"), ("m", "MAP<STRING, TIMESTAMP(6)>"),
               ("r", "ROW<a TIMESTAMP(0), b TIMESTAMP(9)>")]
    base = dt.datetime(2024, 2, 29, 12, 34, 56)
    nanos = 1709210096123456789

    def batch(ids: Sequence[int], with_nanos: bool) -> pa.Table:
        n = len(ids)
        fields = [(name, parse_type(t)) for name, t in columns]
        schema = pa.schema([(name, to_arrow(t)) for name, t in fields])
        data = {
            "id": list(ids),
            "t0": [base - dt.timedelta(days=400 * i) for i in ids],
            "t3": [base + dt.timedelta(milliseconds=7 * i) for i in ids],
            "t6": [base - dt.timedelta(microseconds=13 * i) for i in ids],
            "t9": [nanos + i if with_nanos else None for i in ids],
            "arr": [[base + dt.timedelta(milliseconds=i), None] for i in ids],
            "m": [{"k": base + dt.timedelta(microseconds=i)} for i in ids],
            "r": [{"a": base, "b": (nanos - i) if with_nanos else None} for i in ids],
        }
        data["t9"] = pa.array(data["t9"], pa.int64()).cast(pa.timestamp("ns"))
        r_type = schema.field("r").type
        data["r"] = pa.StructArray.from_arrays(
            [pa.array([base] * n, r_type.field("a").type),
             pa.array([v["b"] for v in data["r"]], pa.int64()).cast(r_type.field("b").type)], fields=list(r_type))
        return pa.table({name: pa.array(data[name], schema.field(name).type) if not isinstance(data[name], pa.Array)
                         else data[name] for name in schema.names}, schema=schema)

    table = lakectl_table(tmp_path, "stamps", columns, primary_keys=["id"], options={"bucket": "1"})
    first, second = batch(range(5), with_nanos=True), batch(range(5, 9), with_nanos=False)
    table.write(first)
    table.write(second)
    expected = sort_rows(rows_of(first) + rows_of(second))
    assert lakectl_rows(table.scan()) == expected
    assert assert_same_at_every_snapshot(table, "timestamps") == 2
    # The layout itself: the column type decides, so both files (the second with null
    # nanoseconds only) store t9 and r.b as INT96 and every other timestamp as INT64.
    for f in sorted(Path(table.path).rglob("data-*.parquet")):
        schema = pq.ParquetFile(f).schema
        physical = {schema.column(i).path: schema.column(i).physical_type for i in range(len(schema))}
        stamps = {path: kind for path, kind in physical.items() if path.split(".")[0] in ("t0", "t3", "t6", "t9", "arr", "m", "r")}
        assert {path for path, kind in stamps.items() if kind == "INT96"} == {"t9", "r.b"}, f.name
        assert set(stamps.values()) - {"INT96"} <= {"INT64", "BYTE_ARRAY"}, f.name
