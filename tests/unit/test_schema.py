import json

import pytest

from core.errors import CorruptMetadataError, UsageError
from core.fileio import FileIO
from core.schema import SchemaManager, TableSchema, new_table_schema
from core.types import parse_columns


def test_new_schema_ids_keys_and_defaults():
    s = new_table_schema(parse_columns("id BIGINT, v STRING, dt STRING"), primary_keys=["id", "dt"],
                         partition_keys=["dt"])
    assert [f.id for f in s.fields] == [0, 1, 2] and s.highest_field_id == 2
    assert not s.field("id").type.nullable and not s.field("dt").type.nullable  # keys become NOT NULL
    # No bucket option, as Java leaves it: Paimon's default -1, dynamic bucket mode for a PK table.
    assert "bucket" not in s.options and s.num_buckets == -1
    assert s.trimmed_primary_keys == ["id"] and s.bucket_keys == ["id"]


def test_schema_file_round_trip_and_paimon_field_names(tmp_path):
    s = new_table_schema(parse_columns("id INT, r ROW<a INT, b STRING>, x DOUBLE"), options={"k": "v"})
    obj = json.loads(s.to_json())
    assert set(obj) == {"version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options",
                        "comment", "timeMillis"}
    assert obj["highestFieldId"] == 4  # nested ROW fields take ids 3 and 4 after the top-level 0..2
    mgr = SchemaManager(FileIO.for_uri(str(tmp_path)), str(tmp_path))
    assert mgr.commit(s) and not mgr.commit(s)
    assert mgr.latest() == s


@pytest.mark.parametrize("kwargs, message", [
    ({"primary_keys": ["nope"]}, "not in the schema"),
    ({"partition_keys": ["id", "id"]}, "repeat"),
    ({"primary_keys": ["dt"], "partition_keys": ["dt"]}, "not a partition key"),
    ({"primary_keys": ["id"], "options": {"bucket": "0"}}, "bucket"),
    ({"primary_keys": ["id"], "options": {"bucket": "-3"}}, "postpone"),
    ({"primary_keys": ["id"], "options": {"bucket-key": "id"}}, "bucket-key"),
    ({"primary_keys": ["id"], "options": {"dynamic-bucket.target-row-num": "0"}}, "target-row-num"),
    ({"primary_keys": ["id"], "options": {"merge-engine": "lsm"}}, "merge-engine"),
    ({"primary_keys": ["id"], "options": {"merge-engine": "aggregation", "fields.dt.aggregate-function": "count"}},
     "count"),
    ({"primary_keys": ["id"], "options": {"merge-engine": "aggregation", "fields.dt.aggregate-function": "sum"}},
     "does not take column dt"),
    ({"primary_keys": ["id"], "options": {"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"}},
     "nope"),
    ({"primary_keys": ["id"], "options": {"merge-engine": "partial-update", "fields.nope.sequence-group": "dt"}},
     "sequence-group"),
    ({"primary_keys": ["id"], "options": {"merge-engine": "partial-update", "fields.id.sequence-group": "dt",
                                          "fields.dt.aggregate-function": "max"}},
     "aggregate functions in partial-update sequence groups are not supported"),
    ({"primary_keys": ["id"], "options": {"fields.id.default-value": "1"}}, "primary key column 'id' cannot have"),
    ({"partition_keys": ["dt"], "options": {"fields.dt.default-value": "x"}}, "partition column 'dt' cannot have"),
    ({"primary_keys": ["id"], "options": {"changelog-producer": "changes"}}, "changelog-producer"),
    ({"options": {"changelog-producer": "lookup"}}, "needs a primary key"),
    ({"options": {"bucket": "2"}}, "bucket-key"),
    ({"primary_keys": ["id"], "options": {"write-mode": "append-only"}}, "append-only"),
    ({"options": {"bucket": "abc"}}, "integer"),
    ({"options": {"target-file-size": "lots"}}, "size"),
])
def test_bad_definitions_are_refused_with_a_reason(kwargs, message):
    with pytest.raises(UsageError, match=message):
        new_table_schema(parse_columns("id BIGINT, dt STRING"), **kwargs)


def test_old_schema_versions_get_their_implicit_defaults():
    text = json.dumps({"version": 1, "id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}],
                       "highestFieldId": 0, "partitionKeys": [], "primaryKeys": [], "options": {}})
    s = TableSchema.from_json(text)
    assert s.options["bucket"] == "1" and s.options["file.format"] == "orc"


def test_corrupt_schema_names_the_file():
    with pytest.raises(CorruptMetadataError, match="schema-7"):
        TableSchema.from_json("{}", "/x/schema/schema-7")
