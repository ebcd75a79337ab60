"""fields.<col>.default-value: filled into nulls on read (Java 1.0's DefaultValueAssigner), cast
from text as Java casts strings, and never used to prune by stats that describe the nulls."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal

import pyarrow as pa
import pytest

from core.errors import UnsupportedTableError, UsageError
from core.ops.create import create
from core.schema import SchemaManager
from core.table import Table


def _table(tmp_path, schema: str, options: dict[str, str], **kw) -> Table:
    table = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(table, schema, options=options, **kw)
    return Table.open("db.t", warehouse=str(tmp_path / "wh"))


def test_append_table_where_finds_filled_rows_in_files_whose_stats_exclude_the_default(tmp_path) -> None:
    table = _table(tmp_path, "id INT, v BIGINT", {"fields.v.default-value": "7"})
    table.write(pa.table({"id": [1, 2], "v": pa.array([8, None], pa.int64())}))  # stats of v: 8..8
    table.write(pa.table({"id": [3], "v": pa.array([9], pa.int64())}))
    assert sorted(table.scan().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": 8}, {"id": 2, "v": 7}, {"id": 3, "v": 9}]
    assert table.scan(where="v = 7").to_pylist() == [{"id": 2, "v": 7}]
    assert table.scan(where="v < 8").to_pylist() == [{"id": 2, "v": 7}]
    assert table.scan(where="v IS NULL").num_rows == 0  # Java's reader returns no nulls there


@pytest.mark.parametrize("column_type,text,expected", [
    ("BOOLEAN", "TRUE", True),
    ("DECIMAL(5, 2)", "1.50", decimal.Decimal("1.50")),
    ("DATE", "2024-02-29", dt.date(2024, 2, 29)),
    ("TIMESTAMP(3)", "2024-02-29 12:00:00.123", dt.datetime(2024, 2, 29, 12, 0, 0, 123000)),
    ("BYTES", "ab", b"ab"),            # Java casts a string to binary as its UTF-8 bytes
    ("STRING", " padded ", " padded "),
    ("DOUBLE", "2.5", 2.5),
])
def test_defaults_are_cast_from_text_to_the_column_type(tmp_path, column_type: str, text: str,
                                                        expected: object) -> None:
    table = _table(tmp_path, f"id INT, v {column_type}", {"fields.v.default-value": text})
    table.write(pa.table({"id": [1]}).append_column("v", pa.nulls(1, table.scan().schema.field("v").type)))
    assert table.scan().to_pylist() == [{"id": 1, "v": expected}]


def test_a_default_that_is_not_a_value_of_the_type_is_refused_at_create_and_on_read(tmp_path) -> None:
    with pytest.raises(UsageError, match="fields.v.default-value='seven' is not a value"):
        _table(tmp_path, "id INT, v INT", {"fields.v.default-value": "seven"})
    # A table another engine made with such a default: its reads stop with the same message.
    table = _table(tmp_path, "id INT, v INT", {})
    table.write(pa.table({"id": [1], "v": pa.array([None], pa.int32())}))
    SchemaManager(table.file_io, table.path).commit(
        dataclasses.replace(table.schema, id=1, options={**table.schema.options, "fields.v.default-value": "seven"}))
    with pytest.raises(UnsupportedTableError, match="fields.v.default-value='seven' is not a value"):
        Table.open("db.t", warehouse=str(tmp_path / "wh")).scan()


def test_incremental_reads_and_schema_evolution_fill_defaults_too(tmp_path) -> None:
    """Java fills defaults in every read: the changes between snapshots, and a column added
    after files were written (its values are null in the old files)."""
    table = _table(tmp_path, "id INT, v STRING", {"fields.v.default-value": "none"})
    table.write(pa.table({"id": pa.array([1], pa.int32()), "v": pa.array([None], pa.string())}))
    table.write(pa.table({"id": pa.array([2], pa.int32()), "v": pa.array(["b"], pa.string())}))
    changes = table.changes(0, 2).to_pylist()
    assert sorted((r["id"], r["v"]) for r in changes) == [(1, "none"), (2, "b")]
    from core.evolution import AddColumn, SetOption
    from core.types import parse_type

    table.alter([AddColumn("w", parse_type("INT")), SetOption("fields.w.default-value", "5")])
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    assert sorted((r["id"], r["w"]) for r in table.scan().to_pylist()) == [(1, 5), (2, 5)]


def test_delete_matches_filled_values_and_rewrites_the_stored_nulls(tmp_path) -> None:
    import pyarrow.parquet as pq
    from pathlib import Path

    table = _table(tmp_path, "id INT, v BIGINT", {"fields.v.default-value": "7"})
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": pa.array([None, 8, None], pa.int64())}))
    table.delete(where="id = 1")
    assert sorted((r["id"], r["v"]) for r in table.scan().to_pylist()) == [(2, 8), (3, 7)]
    table.delete(where="v = 8")
    assert table.scan().to_pylist() == [{"id": 3, "v": 7}]
    live = {f.file_name for f in table.files()}
    stored = [pq.read_table(p, columns=["v"]).column("v").to_pylist()
              for p in Path(table.path).rglob("data-*.parquet") if p.name in live]
    assert stored == [[None]]  # the rewritten file keeps the null, as Paimon's files do
