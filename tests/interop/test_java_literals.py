"""Java Paimon 1.0, the reference, against lakectl on values that must never come out wrong:
TIMESTAMP(9) filters and lookups to the nanosecond on tables Java wrote (Java's stats and
filter decide which rows match), listagg over empty strings, and Avro maps with non-string
keys inside a ROW.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run, lakectl_rows
from test_lakectl_to_pypaimon import lakectl_table

from core.table import Table
from core.types import parse_type, to_arrow

pytestmark = [pytest.mark.interop, pytest.mark.java]

BASE = dt.datetime(2024, 2, 29, 12, 0, 0)


def text9(seconds: int, nanos: int) -> str:
    """The oracle's normal form of a TIMESTAMP(9) value: BASE + seconds + nanos, nine digits."""
    return (BASE + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos:09d}"


# (seconds after BASE, nanos): values one nanosecond apart in one microsecond, in several files.
STAMPS = [[(0, 123456789), (0, 123456788), (1, 0)],
          [(0, 123456789), (0, 123456790), (2, 500000000)],
          [(0, 123456000), (3, 999999999)]]


def open_table(path: Path) -> Table:
    return Table.open(f"db.{path.name}", warehouse=str(path.parents[1]))


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_timestamp9_filter_returns_what_java_returns(tmp_path: Path, primary_key: bool) -> None:
    """Java writes TIMESTAMP(9) values (stats with nanos-of-milli) in three commits; for each
    value, lakectl's ``--where ts = '<nine digits>'`` returns the rows Java's filter returns,
    and a range one nanosecond wide returns the same rows too."""
    path = tmp_path / "wh" / "db.db" / ("stamps_pk" if primary_key else "stamps")
    rows = [[[text9(s, n), f"{i}-{j}"] for j, (s, n) in enumerate(batch)] for i, batch in enumerate(STAMPS)]
    create = {"fields": [{"name": "ts", "type": "TIMESTAMP(9) NOT NULL" if primary_key else "TIMESTAMP(9)"},
                         {"name": "v", "type": "STRING"}],
              "primaryKeys": ["ts"] if primary_key else [], "options": {"bucket": "1" if primary_key else "-1"}}
    java_run(path, [{"op": "write", "rows": batch} for batch in rows], create=create)
    table = open_table(path)
    values = sorted({r[0] for batch in rows for r in batch})
    for value in values:
        expected, _ = java_read(path, equal=("ts", value))
        assert expected, value  # Java finds it: the value is in the table
        assert lakectl_rows(table.scan(where=f"ts = '{value}'")) == expected, value
        before, after = value[:-1] + str(int(value[-1]) - 1), value[:-1] + str(int(value[-1]) + 1)
        if value[-1] not in "09":
            assert lakectl_rows(table.scan(where=f"ts > '{before}' AND ts < '{after}'")) == expected, value
        if primary_key:
            found = table.lookup([f"ts={value}"]).rows
            assert lakectl_rows(found) == expected, value


def test_listagg_appends_empty_strings_as_java_does(tmp_path: Path) -> None:
    """Java 1.0's listagg appends '' and ' ' (only null is skipped): Java writes such records
    and lakectl reads Java's answer; lakectl writes the same records and Java reads them back
    as lakectl does."""
    columns = [{"name": "id", "type": "INT NOT NULL"}, {"name": "la", "type": "STRING"}]
    options = {"bucket": "1", "merge-engine": "aggregation", "fields.la.aggregate-function": "listagg"}
    commits = [[[1, "a"], [2, ""], [3, None]], [[1, ""], [2, "b"], [3, " "]], [[1, " "], [2, None], [3, "c"]]]
    want = [[1, "a,, "], [2, ",b"], [3, " ,c"]]  # by hand: the non-null values joined by ','
    java_path = tmp_path / "wh" / "db.db" / "java_la"
    java_run(java_path, [{"op": "write", "rows": c} for c in commits],
             create={"fields": columns, "primaryKeys": ["id"], "options": options})
    expected, _ = java_read(java_path)
    assert expected == want
    assert lakectl_rows(open_table(java_path).scan()) == want

    table = lakectl_table(tmp_path, "lakectl_la", [("id", "INT NOT NULL"), ("la", "STRING")],
                          primary_keys=["id"], options=options)
    ours = Path(table.path)
    for c in commits:
        table.write(pa.table({"id": pa.array([r[0] for r in c], pa.int32()), "la": [r[1] for r in c]}))
    assert lakectl_rows(table.scan()) == want
    assert java_read(ours)[0] == want
    table.compact(full=True)
    assert lakectl_rows(table.scan()) == want
    assert java_read(ours)[0] == want


def test_avro_map_with_non_string_keys_inside_a_row(tmp_path: Path) -> None:
    """Java stores a MAP<INT, STRING> in Avro as an array of key-value records; lakectl reads
    Java's table, writes on top of it in the same form, and Java reads both writes."""
    path = tmp_path / "wh" / "db.db" / "avro_map"
    row_type = parse_type("ROW<m MAP<INT, STRING>, x INT>")
    java_run(path, [{"op": "write", "rows": [[1, [[[1, "a"], [2, None]], 2]], [2, None], [3, [[], None]]]},
                    {"op": "write", "rows": [[1, [[[3, "b"]], 4]]]}],
             create={"fields": [{"name": "id", "type": "INT NOT NULL"}, {"name": "r", "type": row_type.to_json()}],
                     "primaryKeys": ["id"], "options": {"bucket": "1", "file.format": "avro"}})
    want = [[1, [[[3, "b"]], 4]], [2, None], [3, [[], None]]]
    assert java_read(path)[0] == want
    table = open_table(path)
    assert lakectl_rows(table.scan()) == want
    table.write(pa.table({"id": pa.array([4, 2], pa.int32()),
                          "r": pa.array([{"m": [(5, "e"), (6, None)], "x": 7}, {"m": [(-1, "z")], "x": None}],
                                        to_arrow(row_type))}))
    want = [[1, [[[3, "b"]], 4]], [2, [[[-1, "z"]], None]], [3, [[], None]], [4, [[[5, "e"], [6, None]], 7]]]
    assert lakectl_rows(table.scan()) == want
    assert java_read(path)[0] == want


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_timestamp9_outside_what_nanoseconds_hold_is_refused_by_column(tmp_path: Path, fmt: str) -> None:
    """Java writes TIMESTAMP(9) values of 1582 and 2300 (Paimon allows years 1 to 9999; Parquet
    INT96, ORC timestamps). lakectl cannot hold them in nanoseconds: a read of that column
    fails naming it, never with a wrapped-around date; a read without it gives Java's rows."""
    from core.errors import CorruptMetadataError

    path = tmp_path / "wh" / "db.db" / f"far_{fmt}"
    rows = [[1, "1582-10-15T00:00:00.000000000", "a"], [2, "2300-01-01T00:00:00.000000001", "b"],
            [3, "2024-01-01T00:00:00.000000001", "c"]]
    java_run(path, [{"op": "write", "rows": rows}],
             create={"fields": [{"name": "id", "type": "INT NOT NULL"}, {"name": "ts", "type": "TIMESTAMP(9)"},
                                {"name": "v", "type": "STRING"}],
                     "primaryKeys": ["id"], "options": {"bucket": "1", "file.format": fmt}})
    table = open_table(path)
    with pytest.raises(CorruptMetadataError, match=r"column ts .*outside 1677-09-21 to 2262-04-11"):
        table.scan()
    with pytest.raises(CorruptMetadataError, match=r"column ts "):
        table.scan(select=["id"], where="ts > '2000-01-01'")
    expected = [[r[0], r[2]] for r in rows]  # the rows Java wrote, without ts
    assert lakectl_rows(table.scan(select=["id", "v"])) == expected
    assert lakectl_rows(table.scan(select=["v"], where="id >= 2")) == [["b"], ["c"]]


@pytest.mark.parametrize("column_type", ["ROW<t TIMESTAMP(9)>", "ARRAY<TIMESTAMP(9)>", "MAP<INT, TIMESTAMP(9)>"])
@pytest.mark.parametrize("far", ["1582-10-10T00:00:00.000000000", "2300-01-01T00:00:00.000000000"],
                         ids=["before-1677", "after-2262"])
def test_nested_int96_timestamp_outside_what_nanoseconds_hold_is_refused(tmp_path: Path, column_type: str,
                                                                         far: str) -> None:
    """Java writes a TIMESTAMP(9) inside a ROW, ARRAY or MAP as a nested Parquet INT96 leaf;
    pyarrow wrapped 1582-10-10 into 2167-04-29 there (and 2300 into 1715) without a word.
    lakectl refuses that column as it refuses a top-level one, and reads the others."""
    from core.errors import CorruptMetadataError

    path = tmp_path / "wh" / "db.db" / "nested_far"
    holding = {"ROW<t TIMESTAMP(9)>": lambda ts: [ts], "ARRAY<TIMESTAMP(9)>": lambda ts: [ts],
               "MAP<INT, TIMESTAMP(9)>": lambda ts: [[1, ts]]}[column_type]
    rows = [[1, holding(far), "a"], [2, holding("2024-01-01T00:00:00.000000001"), "b"]]
    java_run(path, [{"op": "write", "rows": rows}],
             create={"fields": [{"name": "id", "type": "INT NOT NULL"},
                                {"name": "ts", "type": parse_type(column_type).to_json()},
                                {"name": "v", "type": "STRING"}],
                     "primaryKeys": ["id"], "options": {"bucket": "1", "file.format": "parquet"}})
    assert java_read(path)[0] == rows  # Java reads its own value back
    table = open_table(path)
    with pytest.raises(CorruptMetadataError, match=r"column ts .*outside 1677-09-21 to 2262-04-11"):
        table.scan()
    assert lakectl_rows(table.scan(select=["id", "v"])) == [[1, "a"], [2, "b"]]
