"""Schema evolution: the rules of core.evolution, the alter operation (null proof, commit,
races) and the schema history, on real tables in a temp warehouse.

Every refusal is checked to leave the schema directory as it was.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import core.ops.write as write_op
from core.errors import CommitConflictError, InvalidDataError, UsageError
from core.evolution import (AddColumn, DropColumn, RemoveOption, RenameColumn, SetOption, UpdateColumnComment,
                            UpdateColumnNullability, UpdateColumnType, apply_changes, parse_add_column,
                            parse_type_change, split_pair, widening_refusal)
from core.ops.alter import alter
from core.ops.create import create
from core.ops.schemas import describe_changes
from core.schema import SchemaManager, new_table_schema
from core.table import Table
from core.types import parse_columns, parse_type


def schema(text: str = "id INT, v INT, s VARCHAR(5), dt STRING", **kw):
    return new_table_schema(parse_columns(text), **kw)


PK = {"primary_keys": ["id", "dt"], "partition_keys": ["dt"], "options": {"bucket": "2"}}


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """db.t: a partitioned primary-key table with one snapshot of two rows."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, v INT, s VARCHAR(5), dt STRING", **PK)
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([10, None], pa.int32()),
                      "s": ["a", "b"], "dt": ["x", "y"]}))
    return t


@pytest.fixture
def empty(tmp_path: Path) -> Table:
    t = Table.locate("db.e", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, v INT, s VARCHAR(5), dt STRING", **PK)
    return t


def t_(text: str):
    return parse_type(text)


# ---- adding columns ------------------------------------------------------------------------
def test_added_columns_take_new_ids_and_their_place():
    s = schema()
    new = apply_changes(s, [AddColumn("a", t_("INT")), AddColumn("b", t_("STRING"), first=True),
                            AddColumn("c", t_("DOUBLE"), after="v")], has_data=True)
    assert [f.name for f in new.fields] == ["b", "id", "v", "c", "s", "dt", "a"]
    assert {f.name: f.id for f in new.fields} == {"id": 0, "v": 1, "s": 2, "dt": 3, "a": 4, "b": 5, "c": 6}
    assert new.highest_field_id == 6 and new.id == s.id + 1


def test_nested_row_fields_share_the_id_counter():
    new = apply_changes(schema(), [AddColumn("r", t_("ROW<x INT, y ROW<z STRING>>")), AddColumn("q", t_("INT"))],
                        has_data=False)
    r = new.field("r")
    assert r.id == 4 and [f.id for f in r.type.fields] == [5, 6] and r.type.fields[1].type.fields[0].id == 7
    assert new.field("q").id == 8 and new.highest_field_id == 8


def test_dropped_ids_are_never_reused():
    new = apply_changes(schema(), [DropColumn("v"), AddColumn("v", t_("BIGINT"))], has_data=True)
    assert new.field("v").id == 4 and new.highest_field_id == 4
    again = apply_changes(new, [DropColumn("v")], has_data=True)
    assert again.highest_field_id == 4 and "v" not in again.field_names


def test_add_column_before_partition_option():
    s = schema(partition_keys=["dt"], options={"add-column-before-partition": "true"})
    new = apply_changes(s, [AddColumn("a", t_("INT"))], has_data=True)
    assert new.field_names == ["id", "v", "s", "a", "dt"]


def test_parse_add_column_spec():
    assert parse_add_column("note STRING COMMENT 'it''s' AFTER qty") == \
        AddColumn("note", t_("STRING"), "it's", after="qty")
    assert parse_add_column("`x y` DECIMAL(10, 2) first") == AddColumn("x y", t_("DECIMAL(10, 2)"), first=True)
    with pytest.raises(UsageError, match="one column"):
        parse_add_column("a INT, b INT")
    with pytest.raises(UsageError, match="FOO"):
        parse_add_column("a FOO")


# ---- renames -------------------------------------------------------------------------------
def test_rename_keeps_the_id_and_primary_keys_follow():
    new = apply_changes(schema(**PK), [RenameColumn("id", "key"), RenameColumn("v", "w")], has_data=True)
    assert new.field("key").id == 0 and new.field("w").id == 1
    assert new.primary_keys == ("key", "dt") and new.trimmed_primary_keys == ["key"]


def test_rename_rewrites_options_that_name_the_column():
    s = schema("id INT, a INT, b INT, c STRING", primary_keys=["id"],
               options={"bucket": "2", "bucket-key": "id", "merge-engine": "aggregation",
                        "fields.a.aggregate-function": "sum", "fields.a.ignore-retract": "true",
                        "fields.default-aggregate-function": "last_value"})
    new = apply_changes(s, [RenameColumn("a", "total"), RenameColumn("id", "key")], has_data=True)
    assert new.options == {"bucket": "2", "bucket-key": "key", "merge-engine": "aggregation",
                           "fields.total.aggregate-function": "sum", "fields.total.ignore-retract": "true",
                           "fields.default-aggregate-function": "last_value"}


def test_rename_rewrites_sequence_group_keys_and_values():
    from core.evolution import _rename_in_options

    out = _rename_in_options({"fields.a,b.sequence-group": "c,a", "sequence.field": "a"}, "a", "z")
    assert out == {"fields.z,b.sequence-group": "c,z", "sequence.field": "z"}


# ---- type changes --------------------------------------------------------------------------
@pytest.mark.parametrize("old, new", [
    ("TINYINT", "SMALLINT"), ("TINYINT", "BIGINT"), ("SMALLINT", "INT"), ("INT", "BIGINT"),
    ("INT", "DECIMAL(10, 0)"), ("BIGINT", "DECIMAL(21, 2)"), ("SMALLINT", "FLOAT"), ("INT", "DOUBLE"),
    ("FLOAT", "DOUBLE"), ("DECIMAL(5, 2)", "DECIMAL(8, 2)"), ("DECIMAL(5, 2)", "DECIMAL(7, 4)"),
    ("VARCHAR(5)", "VARCHAR(10)"), ("VARCHAR(5)", "STRING"), ("CHAR(3)", "VARCHAR(3)"), ("CHAR(3)", "STRING"),
    ("VARBINARY(4)", "BYTES"), ("BINARY(4)", "VARBINARY(8)"), ("TIMESTAMP(3)", "TIMESTAMP(6)"),
    ("TIMESTAMP(0) WITH LOCAL TIME ZONE", "TIMESTAMP(9) WITH LOCAL TIME ZONE"), ("TIME(0)", "TIME(3)"),
    ("INT", "INT"),
])
def test_lossless_widenings_are_allowed(old, new):
    assert widening_refusal(t_(old), t_(new)) is None


@pytest.mark.parametrize("old, new, reason", [
    ("BIGINT", "INT", "narrows"), ("INT", "SMALLINT", "narrows"), ("INT", "DECIMAL(9, 0)", "integer digits"),
    ("INT", "FLOAT", "exactly"), ("BIGINT", "DOUBLE", "exactly"), ("DOUBLE", "FLOAT", "widening"),
    ("DECIMAL(10, 2)", "DECIMAL(10, 3)", "grow"), ("DECIMAL(10, 2)", "DECIMAL(9, 2)", "grow"),
    ("DECIMAL(10, 2)", "DOUBLE", "widening"), ("VARCHAR(10)", "VARCHAR(5)", "shortens"),
    ("STRING", "VARCHAR(10)", "shortens"), ("VARCHAR(3)", "CHAR(3)", "widening"), ("CHAR(3)", "CHAR(5)", "widening"),
    ("INT", "STRING", "widening"), ("STRING", "INT", "widening"), ("TIMESTAMP(6)", "TIMESTAMP(3)", "fractional"),
    ("TIMESTAMP(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE", "widening"), ("DATE", "TIMESTAMP(3)", "widening"),
    ("BOOLEAN", "INT", "widening"), ("ARRAY<INT>", "ARRAY<BIGINT>", "composite"),
])
def test_other_type_changes_are_refused_with_a_reason(old, new, reason):
    assert reason in widening_refusal(t_(old), t_(new))


def test_type_change_keeps_nullability_and_refuses_keys():
    s = schema("id INT, v INT NOT NULL, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
               options={"bucket": "1"})
    new = apply_changes(s, [UpdateColumnType("v", t_("BIGINT"))], has_data=True)
    assert str(new.field("v").type) == "BIGINT NOT NULL"
    with pytest.raises(UsageError, match="primary key column 'id'"):
        apply_changes(s, [UpdateColumnType("id", t_("BIGINT"))], has_data=True)
    with pytest.raises(UsageError, match="partition column 'dt'"):
        apply_changes(s, [UpdateColumnType("dt", t_("STRING"))], has_data=True)
    with pytest.raises(UsageError, match="from INT NOT NULL|from INT to SMALLINT"):
        apply_changes(s, [UpdateColumnType("v", t_("SMALLINT"))], has_data=True)


def test_parse_type_change():
    assert parse_type_change("v:BIGINT") == UpdateColumnType("v", t_("BIGINT"))
    with pytest.raises(UsageError, match="--set-not-null"):
        parse_type_change("v:BIGINT NOT NULL")
    with pytest.raises(UsageError, match="COLUMN:TYPE"):
        parse_type_change("BIGINT")
    with pytest.raises(UsageError, match="OLD:NEW"):
        split_pair(":b", flag="--rename-column", shape="OLD:NEW")


# ---- what Paimon forbids: each refusal names its reason ---------------------------------------
REFUSALS = [
    ([AddColumn("id", t_("INT"))], "already exists"),
    ([AddColumn("n", t_("INT NOT NULL"))], "cannot be added as NOT NULL"),
    ([AddColumn("_KEY_x", t_("INT"))], "reserved"),
    ([AddColumn("_SEQUENCE_NUMBER", t_("INT"))], "reserved"),
    ([AddColumn("n", t_("INT"), after="nope")], "unknown column 'nope'"),
    ([DropColumn("id")], "primary key"),
    ([DropColumn("dt")], "partition key"),
    ([DropColumn("nope")], "unknown column"),
    ([RenameColumn("dt", "day")], "partition column 'dt'"),
    ([RenameColumn("v", "s")], "already exists"),
    ([RenameColumn("v", "_VALUE_KIND")], "reserved"),
    ([UpdateColumnType("v", t_("SMALLINT"))], "narrows"),
    ([UpdateColumnType("s", t_("VARCHAR(2)"))], "shortens"),
    ([UpdateColumnType("id", t_("BIGINT"))], "primary key"),
    ([UpdateColumnNullability("id", True)], "primary key column 'id' nullable"),
    ([SetOption("merge-engine", "first-row")], "immutable"),
    ([SetOption("bucket-key", "id")], "immutable"),
    ([SetOption("bucket", "4")], "rescale"),
    ([RemoveOption("bucket")], "cannot be reset"),
    ([SetOption("primary-key", "v")], "fixed at creation"),
    ([SetOption("type", "format-table")], "type"),
    ([SetOption("partition.default-name", "none")], "null partitions"),
    ([SetOption("changelog-producer", "magic")], "changelog-producer"),
    ([SetOption("fields.v.aggregate-function", "sum")], "needs merge-engine=aggregation"),
    ([AddColumn("n", t_("INT")), RenameColumn("n", "v")], "already exists"),
]


@pytest.mark.parametrize("changes, message", REFUSALS, ids=[str(i) for i in range(len(REFUSALS))])
def test_refusals_leave_no_new_schema_file(table: Table, changes, message):
    before = table.schemas.list_ids()
    with pytest.raises(UsageError, match=message):
        alter(table, changes)
    with pytest.raises(UsageError, match=message):
        alter(table, changes, dry_run=True)
    assert table.schemas.list_ids() == before


def test_the_last_column_stays(tmp_path: Path):
    t = Table.locate("db.one", warehouse=str(tmp_path / "wh"))
    create(t, "a INT, b INT")
    with pytest.raises(UsageError, match="last column"):
        alter(t, [DropColumn("a"), DropColumn("b")])
    assert t.schemas.list_ids() == [0]


def test_all_or_nothing(table: Table):
    with pytest.raises(UsageError, match="narrows"):
        alter(table, [AddColumn("n", t_("INT")), RenameColumn("v", "w"), UpdateColumnType("w", t_("TINYINT"))])
    assert table.schemas.list_ids() == [0] and table.schema.field_names == ["id", "v", "s", "dt"]


def test_options_may_change_freely_before_the_first_snapshot(empty: Table):
    r = alter(empty, [SetOption("bucket", "4"), SetOption("merge-engine", "first-row")])
    assert r.committed and empty.schema.options["bucket"] == "4"
    assert empty.schema.options["merge-engine"] == "first-row"


def test_options_refused_with_data_unless_unchanged(table: Table):
    r = alter(table, [SetOption("bucket", "2"), SetOption("snapshot.num-retained.min", "3")])
    assert r.changes == ("set option snapshot.num-retained.min=3",)
    alter(table, [SetOption("ignore-delete", "true")])
    with pytest.raises(UsageError, match="true to false"):
        alter(table, [SetOption("ignore-delete", "false")])
    with pytest.raises(UsageError, match="true to false"):
        alter(table, [RemoveOption("ignore-delete")])
    alter(table, [RemoveOption("snapshot.num-retained.min")])
    assert "snapshot.num-retained.min" not in table.schema.options


def test_bucket_of_an_unaware_append_table_cannot_change(tmp_path: Path):
    t = Table.locate("db.a", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, v STRING")
    t.write(pa.table({"id": pa.array([1], pa.int32()), "v": ["a"]}))
    with pytest.raises(UsageError, match="when it is -1"):
        alter(t, [SetOption("bucket", "2"), SetOption("bucket-key", "id")])


def test_dropping_a_column_its_options_name_needs_those_reset(tmp_path: Path):
    t = Table.locate("db.agg", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, total BIGINT, n INT", primary_keys=["id"],
           options={"merge-engine": "aggregation", "fields.total.aggregate-function": "sum"})
    with pytest.raises(UsageError, match="--reset-option fields.total.aggregate-function"):
        alter(t, [DropColumn("total")])
    alter(t, [DropColumn("total"), RemoveOption("fields.total.aggregate-function")])
    assert t.schema.field_names == ["id", "n"] and t.schema.options == {"merge-engine": "aggregation"}


def test_a_widening_an_aggregate_cannot_take_is_refused(tmp_path: Path):
    t = Table.locate("db.agg", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, flag BOOLEAN, name VARCHAR(3)", primary_keys=["id"],
           options={"merge-engine": "aggregation", "fields.name.aggregate-function": "listagg"})
    alter(t, [UpdateColumnType("name", t_("STRING"))])  # listagg takes any string
    with pytest.raises(UsageError, match="bool_and"):
        alter(t, [SetOption("fields.name.aggregate-function", "bool_and")])


def test_rowkind_field_cannot_be_renamed_or_dropped(tmp_path: Path):
    t = Table.locate("db.cdc", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, v STRING, _rk STRING", primary_keys=["id"], options={"rowkind.field": "_rk"})
    with pytest.raises(UsageError, match="rowkind.field"):
        alter(t, [RenameColumn("_rk", "kind")])
    with pytest.raises(UsageError, match="rowkind.field"):
        alter(t, [DropColumn("_rk")])


def test_tables_with_options_lakectl_cannot_write_can_still_evolve_columns(tmp_path: Path):
    """A table another engine created with options lakectl refuses (a file format it does not
    write): its columns may evolve; the options lakectl refuses at create are not re-checked
    unless lakectl accepted them before."""
    t = Table.locate("db.dyn", warehouse=str(tmp_path / "wh"))
    mgr = SchemaManager(t.file_io, t.path)
    from dataclasses import replace
    s = new_table_schema(parse_columns("id INT, v STRING"), primary_keys=["id"])
    assert mgr.commit(replace(s, options={"bucket": "-1", "deletion-vectors.enabled": "true"}))
    alter(t, [AddColumn("n", t_("INT"))])
    assert t.schema.field_names == ["id", "v", "n"]


# ---- nullability -----------------------------------------------------------------------------
def test_not_null_is_free_on_a_table_without_data(empty: Table):
    alter(empty, [UpdateColumnNullability("v", False)])
    assert not empty.schema.field("v").type.nullable
    alter(empty, [UpdateColumnNullability("v", True)])
    assert empty.schema.field("v").type.nullable


def test_not_null_needs_every_reachable_file_null_free(table: Table):
    alter(table, [UpdateColumnNullability("s", False)])  # the one file has no null in s
    assert str(table.schema.field("s").type) == "VARCHAR(5) NOT NULL"
    with pytest.raises(InvalidDataError, match="holds 1 null"):
        alter(table, [UpdateColumnNullability("v", False)])
    alter(table, [AddColumn("n", t_("INT"))])
    with pytest.raises(InvalidDataError, match=r"'n' NOT NULL.* holds 1 null"):
        alter(table, [UpdateColumnNullability("n", False)])  # older files have no n: nulls
    assert table.schemas.list_ids() == [0, 1, 2]


def test_not_null_counts_files_only_a_tag_still_reaches(table: Table):
    table.tags.create("before", table.latest_snapshot())
    table.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([1, 2], pa.int32()),
                          "s": ["a", "b"], "dt": ["x", "y"]}), mode="overwrite")
    assert [r["v"] for r in table.scan().to_pylist()] == [1, 2]
    with pytest.raises(InvalidDataError, match="null"):
        alter(table, [UpdateColumnNullability("v", False)])


def test_not_null_without_stats_cannot_be_proven(tmp_path: Path):
    t = Table.locate("db.nostats", warehouse=str(tmp_path / "wh"))
    create(t, "id INT, v INT", options={"metadata.stats-mode": "none"})
    t.write(pa.table({"id": pa.array([1], pa.int32()), "v": pa.array([1], pa.int32())}))
    with pytest.raises(UsageError, match="cannot prove"):
        alter(t, [UpdateColumnNullability("v", False)])


def test_writes_after_not_null_refuse_nulls(table: Table):
    from core.errors import InvalidDataError as Bad
    alter(table, [UpdateColumnNullability("s", False)])
    with pytest.raises(Bad, match="NOT NULL column 's'"):
        table.write(pa.table({"id": pa.array([5], pa.int32()), "s": pa.array([None], pa.string()), "dt": ["x"]}))


# ---- reading old files in the new schema -------------------------------------------------------
def test_old_files_read_in_the_new_schema_and_old_snapshots_in_theirs(table: Table):
    alter(table, [DropColumn("s"), RenameColumn("v", "w"), UpdateColumnType("w", t_("DECIMAL(12, 2)")),
                  AddColumn("n", t_("STRING"), first=True)])
    latest = table.scan()
    assert latest.column_names == ["n", "id", "w", "dt"]
    assert sorted(latest.to_pylist(), key=lambda r: r["id"]) == [
        {"n": None, "id": 1, "w": Decimal("10.00"), "dt": "x"}, {"n": None, "id": 2, "w": None, "dt": "y"}]
    table.write(pa.table({"n": ["new"], "id": pa.array([1], pa.int32()), "w": [Decimal("1.25")], "dt": ["x"]}))
    assert table.latest_snapshot().schema_id == 1
    rows = sorted(table.scan().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"n": "new", "id": 1, "w": Decimal("1.25"), "dt": "x"}, {"n": None, "id": 2, "w": None, "dt": "y"}]
    old = table.scan(snapshot_id=1)
    assert old.column_names == ["id", "v", "s", "dt"] and old.schema.field("v").type == pa.int32()
    assert sorted(old.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": 10, "s": "a", "dt": "x"}, {"id": 2, "v": None, "s": "b", "dt": "y"}]
    table.tags.create("t1", table.snapshots.snapshot(1))
    assert table.scan(tag="t1").column_names == ["id", "v", "s", "dt"]
    assert table.scan(where="w < 2")["id"].to_pylist() == [1]
    assert table.scan(where="w IS NULL")["id"].to_pylist() == [2]


def test_renamed_primary_key_still_merges_old_and_new_files(table: Table):
    alter(table, [RenameColumn("id", "key")])
    table.write(pa.table({"key": pa.array([2], pa.int32()), "v": pa.array([20], pa.int32()), "s": ["c"],
                          "dt": ["y"]}))
    rows = sorted(table.scan().to_pylist(), key=lambda r: r["key"])
    assert rows == [{"key": 1, "v": 10, "s": "a", "dt": "x"}, {"key": 2, "v": 20, "s": "c", "dt": "y"}]
    table.compact(full=True)
    assert sorted(table.scan().to_pylist(), key=lambda r: r["key"]) == rows


# ---- commits and races ----------------------------------------------------------------------
def test_dry_run_and_no_op_write_nothing(table: Table):
    r = alter(table, [AddColumn("n", t_("INT"))], dry_run=True)
    assert (r.dry_run, r.committed, r.schema_id, r.changes) == (True, False, 1, ("add column n INT",))
    assert [(c.id, c.before, c.after) for c in r.columns][-1] == (4, None, "n INT")
    assert table.schemas.list_ids() == [0]
    r = alter(table, [SetOption("bucket", "2"), UpdateColumnComment("v", None), RenameColumn("v", "v")])
    assert (r.committed, r.schema_id, r.changes, r.columns) == (False, 0, (), ())
    with pytest.raises(UsageError, match="at least one change"):
        alter(table, [])
    assert table.schemas.list_ids() == [0]


def test_comment_and_history(table: Table):
    alter(table, [UpdateColumnComment("v", "the value")])
    alter(table, [UpdateColumnComment("v", None), RenameColumn("s", "label")])
    history = table.schema_history()
    assert [h.schema_id for h in history] == [2, 1, 0]
    assert history[0].changes == ("remove comment of v", "rename column s to label")
    assert history[1].changes == ("comment on v: 'the value'",)
    assert history[2].changes[0] == "create table: id INT NOT NULL, v INT, s VARCHAR(5), dt STRING NOT NULL"
    assert [h.schema_id for h in table.schema_history(limit=1)] == [2]
    with pytest.raises(UsageError, match="limit"):
        table.schema_history(limit=-1)


def test_describe_changes_pairs_fields_by_id():
    old = schema(options={"a": "1", "b": "2"})
    new = apply_changes(old, [DropColumn("s"), RenameColumn("v", "s"), UpdateColumnType("s", t_("BIGINT")),
                              UpdateColumnNullability("s", False), AddColumn("z", t_("INT"), first=True),
                              SetOption("a", "9"), RemoveOption("b"), SetOption("c", "3")], has_data=False)
    assert describe_changes(old, new) == [
        "drop column s", "rename column v to s", "change type of s from INT to BIGINT", "make s NOT NULL",
        "add column z INT first", "set option a=9 (was 1)", "reset option b (was 2)", "set option c=3"]


def test_history_skips_gaps_left_by_a_schema_rollback(table: Table):
    alter(table, [AddColumn("a", t_("INT"))])
    alter(table, [AddColumn("b", t_("INT"))])
    table.file_io.delete(table.schemas.path(1))
    assert [(h.schema_id, h.changes) for h in table.schema_history()][0] == (2, ("add column a INT",
                                                                              "add column b INT"))


def test_a_writer_planned_against_the_old_schema_fails_cleanly(table: Table, monkeypatch):
    real_plan = write_op.plan_job

    def plan_then_alter(t, schema, row_kind_column, **kw):
        job = real_plan(t, schema, row_kind_column, **kw)
        alter(t, [AddColumn("n", t_("INT"))])  # lands while the write is under way
        return job

    monkeypatch.setattr(write_op, "plan_job", plan_then_alter)
    with pytest.raises(CommitConflictError, match="schema changed to 1 while this write used schema 0"):
        table.write(pa.table({"id": pa.array([3], pa.int32()), "v": pa.array([3], pa.int32()), "s": ["c"],
                              "dt": ["x"]}))
    assert table.snapshots.list_ids() == [1]  # nothing half-committed
    assert sorted(table.scan()["id"].to_pylist()) == [1, 2] and table.scan().column_names[-1] == "n"
    monkeypatch.undo()
    table.write(pa.table({"id": pa.array([3], pa.int32()), "n": pa.array([7], pa.int32()), "dt": ["x"]}))
    assert table.latest_snapshot().schema_id == 1


def test_an_alter_that_loses_the_race_is_applied_again(table: Table, monkeypatch):
    real_commit = SchemaManager.commit
    raced = []

    def commit_after_rival(self, new):
        if not raced:  # a rival takes the id first
            raced.append(True)
            rival = apply_changes(self.latest(), [AddColumn("rival", t_("INT"))], has_data=True)
            assert real_commit(self, rival)
        return real_commit(self, new)

    monkeypatch.setattr(SchemaManager, "commit", commit_after_rival)
    r = alter(table, [AddColumn("mine", t_("INT")), RenameColumn("v", "w")])
    assert (r.previous_schema_id, r.schema_id) == (1, 2)
    assert table.schema.field_names == ["id", "w", "s", "dt", "rival", "mine"]
    assert {f.name: f.id for f in table.schema.fields}["mine"] == 5


def test_a_rival_that_makes_the_change_invalid_wins(table: Table, monkeypatch):
    real_commit = SchemaManager.commit

    def rival_first(self, new):
        monkeypatch.setattr(SchemaManager, "commit", real_commit)
        assert real_commit(self, apply_changes(self.latest(), [DropColumn("v")], has_data=True))
        return real_commit(self, new)

    monkeypatch.setattr(SchemaManager, "commit", rival_first)
    with pytest.raises(UsageError, match="unknown column 'v'"):
        alter(table, [RenameColumn("v", "w")])
    assert table.schemas.list_ids() == [0, 1]


def test_retries_run_out(table: Table, monkeypatch):
    alter(table, [SetOption("commit.max-retries", "2")])
    monkeypatch.setattr(SchemaManager, "commit", lambda self, new: False)
    with pytest.raises(CommitConflictError, match="3 attempts"):
        alter(table, [AddColumn("n", t_("INT"))])
