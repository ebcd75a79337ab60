import pyarrow as pa
import pytest

from core.errors import UsageError
from core.types import MAX_LENGTH, DataType, from_arrow, parse_columns, parse_json, parse_type, to_arrow


@pytest.mark.parametrize("text, canonical", [
    ("BIGINT NOT NULL", "BIGINT NOT NULL"),
    ("integer", "INT"),
    ("DECIMAL(10,2)", "DECIMAL(10, 2)"),
    ("decimal", "DECIMAL(10, 0)"),
    ("STRING", "STRING"),
    ("VARCHAR(20)", "VARCHAR(20)"),
    ("CHAR(3) NOT NULL", "CHAR(3) NOT NULL"),
    ("BYTES", "BYTES"),
    ("BINARY(4)", "BINARY(4)"),
    ("TIMESTAMP", "TIMESTAMP(6)"),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP_LTZ(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("TIME", "TIME(0)"),
    ("ARRAY<INT NOT NULL>", "ARRAY<INT NOT NULL>"),
    ("MAP<STRING NOT NULL, BIGINT>", "MAP<STRING NOT NULL, BIGINT>"),
])
def test_type_text_round_trip(text, canonical):
    assert str(parse_type(text)) == canonical
    assert str(parse_type(str(parse_type(text)))) == canonical


def test_schema_json_forms_match_paimon():
    # Atomic types are strings, composite ones objects (spec §2.1).
    assert parse_type("DECIMAL(10, 2) NOT NULL").to_json() == "DECIMAL(10, 2) NOT NULL"
    assert parse_type("ARRAY<INT>").to_json() == {"type": "ARRAY", "element": "INT"}
    m = parse_json({"type": "MAP NOT NULL", "key": "STRING NOT NULL", "value": "BIGINT"})
    assert not m.nullable and m.key == DataType("VARCHAR", False, length=MAX_LENGTH)
    row = parse_json({"type": "ROW", "fields": [{"id": 4, "name": "x", "type": "INT"}]})
    assert row.fields[0].id == 4 and row.to_json()["fields"][0] == {"id": 4, "name": "x", "type": "INT"}


@pytest.mark.parametrize("bad", ["FOO", "DECIMAL(50, 2)", "DECIMAL(5, 6)", "TIMESTAMP(12)", "INT INT", "ARRAY<INT", ""])
def test_bad_types_are_usage_errors(bad):
    with pytest.raises(UsageError):
        parse_type(bad)


def test_parse_columns_with_comments_and_nested_commas():
    cols = parse_columns("id BIGINT NOT NULL, amount DECIMAL(10, 2) COMMENT 'in, euros', m MAP<STRING, INT>")
    assert [(n, str(t), c) for n, t, c in cols] == [
        ("id", "BIGINT NOT NULL", None), ("amount", "DECIMAL(10, 2)", "in, euros"),
        ("m", "MAP<STRING, INT>", None)]
    with pytest.raises(UsageError, match="duplicate"):
        parse_columns("a INT, a STRING")
    with pytest.raises(UsageError, match="needs a name and a type"):
        parse_columns("justaname")


@pytest.mark.parametrize("text, arrow", [
    ("TINYINT", pa.int8()), ("DECIMAL(38, 10)", pa.decimal128(38, 10)), ("DATE", pa.date32()),
    ("TIME", pa.time32("ms")), ("TIMESTAMP(0)", pa.timestamp("ms")), ("TIMESTAMP(6)", pa.timestamp("us")),
    ("TIMESTAMP(9)", pa.timestamp("ns")), ("TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC")),
    ("BINARY(4)", pa.binary()), ("CHAR(2)", pa.string()),
])
def test_arrow_mapping(text, arrow):
    assert to_arrow(parse_type(text)) == arrow


def test_from_arrow_inverts_to_arrow_for_input_types():
    for text in ["BOOLEAN", "INT", "BIGINT", "DOUBLE", "STRING", "BYTES", "DATE", "DECIMAL(12, 3)",
                 "TIMESTAMP(6)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"]:
        t = parse_type(text)
        assert str(from_arrow(to_arrow(t))) == text


def test_other_schema_field_types_still_parse():
    from core.types import field_from_json

    assert field_from_json({"id": 1, "name": "v", "type": "BIGINT"}).type == parse_type("BIGINT")


# ---- Paimon 2.x types (pypaimon 2.1's schema JSON) -------------------------------------------
def test_paimon2_types_round_trip_the_schema_json_pypaimon_writes() -> None:
    import pyarrow as pa

    from core.types import field_from_json, field_to_json, paimon2_columns, to_arrow, unreadable_columns

    vector = {"id": 2, "name": "e", "type": {"type": "VECTOR NOT NULL", "element": "FLOAT", "length": 3,
                                             "nullable": False}}
    fields = [field_from_json(f) for f in ({"id": 0, "name": "id", "type": "INT"},
                                           {"id": 1, "name": "v", "type": "VARIANT"}, vector,
                                           {"id": 3, "name": "b", "type": "BLOB"})]
    assert [field_to_json(f) for f in fields[1:]] == [{"id": 1, "name": "v", "type": "VARIANT"}, vector,
                                                      {"id": 3, "name": "b", "type": "BLOB"}]
    assert [str(f.type) for f in fields] == ["INT", "VARIANT", "VECTOR<FLOAT, 3> NOT NULL", "BLOB"]
    assert to_arrow(fields[1].type) == pa.struct([pa.field("value", pa.binary()), pa.field("metadata", pa.binary())])
    assert to_arrow(fields[2].type) == pa.list_(pa.field("element", pa.float32()), 3)
    assert to_arrow(fields[3].type) == pa.large_binary()
    assert [f.name for f in paimon2_columns(fields)] == ["v", "e", "b"]
    assert [f.name for f in unreadable_columns(fields)] == ["b"]
    nested = field_from_json({"id": 4, "name": "r", "type": {"type": "ARRAY", "element": "BLOB"}})
    assert unreadable_columns([nested]) == [nested]


def test_create_refuses_paimon2_types_naming_the_column(tmp_path) -> None:
    from core.ops.create import create
    from core.table import Table

    table = Table.locate("db.t", warehouse=str(tmp_path))
    with pytest.raises(UsageError, match="column e has type VECTOR<FLOAT, 3>, a Paimon 2.x type lakectl reads but "
                                         "does not write"):
        create(table, "id INT, e VECTOR<FLOAT, 3>")
