"""The table of options lakectl refuses (core.options.OPTION_RULES): which action each option
stops, the message naming it, and the options that must pass (honoured or harmless)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.errors import UnsupportedTableError
from core.types import DataField, parse_type
from core.option_rules import EXPIRE, OPTION_RULES, OptionRule, READ, WRITE, check_options, unsupported


def schema(options: dict[str, str], *, primary_keys: tuple[str, ...] = ("k",),
           partition_keys: tuple[str, ...] = ()) -> SimpleNamespace:
    return SimpleNamespace(options={"bucket": "2", **options}, has_primary_key=bool(primary_keys),
                           primary_keys=list(primary_keys), partition_keys=list(partition_keys),
                           trimmed_primary_keys=[k for k in primary_keys if k not in partition_keys],
                           field_names=["k", "v", "ts", "dt"], fields=[])


def refused(options: dict[str, str], **layout) -> set[str]:
    s = schema(options, **layout)
    return {action for action in (READ, WRITE, EXPIRE)
            if unsupported(s.options, action, has_primary_key=s.has_primary_key, primary_keys=s.primary_keys,
                           partition_keys=s.partition_keys)}


@pytest.mark.parametrize("options,actions", [
    ({"fields.v.default-value": "0"}, set()),  # honoured (core.default_values)
    ({"scan.timestamp": "2024-01-01 00:00:00"}, {READ}),
    ({"scan.mode": "incremental"}, {READ}),
    ({"scan.mode": "from-file-creation-time"}, {READ}),
    ({"scan.watermark": "10"}, {READ}),
    ({"scan.file-creation-time-millis": "10"}, {READ}),
    ({"scan.version": "3"}, {READ}),
    ({"incremental-between": "1,3"}, {READ}),
    ({"incremental-between-timestamp": "1,3"}, {READ}),
    ({"scan.fallback-branch": "b"}, {READ}),
    ({"branch": "dev"}, {READ, WRITE}),
    ({"manifest.format": "orc"}, {READ, WRITE}),
    ({"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true",
      "changelog-producer.row-deduplicate-ignore-fields": "ts"}, {WRITE}),
    ({"record-level.expire-time": "1 d", "record-level.time-field": "ts"}, {WRITE}),
    ({"metadata.iceberg.storage": "hive-catalog"}, {WRITE}),  # table-location, hadoop-catalog: core.iceberg
    ({"metadata.iceberg.storage": "table-location", "metadata.iceberg.format-version": "3"}, set()),
    ({"metadata.iceberg.storage": "table-location", "metadata.iceberg.format-version": "4"}, {WRITE}),
    # Deletion vectors need format 3 (core.iceberg.deletion_vectors).
    ({"metadata.iceberg.storage": "table-location", "deletion-vectors.enabled": "true"}, {WRITE}),
    ({"metadata.iceberg.storage": "table-location", "metadata.iceberg.format-version": "3",
      "deletion-vectors.enabled": "true"}, set()),
    ({"bucket": "-2"}, {READ}),  # written and compacted as Paimon does (core.postpone)
    ({"commit.callbacks": "com.example.Cb"}, {WRITE}),
    ({"tag.callbacks": "com.example.Cb"}, {WRITE}),
])
def test_refused_options_and_their_actions(options: dict[str, str], actions: set[str]) -> None:
    assert refused(options) == actions


@pytest.mark.parametrize("options", [
    {}, {"branch": "main"}, {"manifest.format": "avro"}, {"metadata.iceberg-compatible": "false"},
    {"metadata.iceberg-compatible": "true"}, {"metadata.iceberg.storage": "hadoop-catalog"},  # written (core.iceberg)
    {"commit.callbacks": ""}, {"data-evolution.enabled": "false"}, {"row-tracking.enabled": "false"},
    {"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"},  # honoured
    {"changelog-producer.row-deduplicate-ignore-fields": "ts"},  # no effect without row-deduplicate
    {"record-level.expire-time": "1 d"},  # no effect without a time field
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"row-tracking.enabled": "true"},  # honoured by commits and compaction; delete refuses it itself
    {"changelog.num-retained.max": "100", "changelog.num-retained.min": "20", "changelog.time-retained": "7 d"},
    {"data-evolution.enabled": "true"},  # read merged by row id, appended to; compact and delete refuse it
    {"sequence.field": "ts"}, {"sequence.field": "ts,v", "sequence.field.sort-order": "descending"},  # honoured
    {"merge-engine": "partial-update", "fields.ts.sequence-group": "v"},  # honoured
    {"ignore-delete": "true"}, {"rowkind.field": "v"}, {"dynamic-partition-overwrite": "false"},
    {"scan.snapshot-id": "1"}, {"scan.tag-name": "t"}, {"scan.mode": "latest"}, {"scan.mode": "From-Snapshot"},
    {"file-index.bloom-filter.columns": "v"}, {"write-buffer-size": "64 mb"},
    {"num-sorted-run.compaction-trigger": "3"}, {"sort-engine": "min-heap"}, {"write-only": "true"},
    {"snapshot.num-retained.max": "5"}, {"partition.expiration-time": "1 d"},
])
def test_honoured_and_harmless_options_pass(options: dict[str, str]) -> None:
    assert refused(options) == set()


def test_sequence_field_of_an_append_table_changes_nothing() -> None:
    assert refused({"sequence.field": "ts"}, primary_keys=()) == set()


def test_cross_partition_upsert_tables_are_refused_for_writes_only() -> None:
    # Paimon's cross-partition upsert: dynamic bucket and a key without the partition column.
    assert refused({"bucket": "-1"}, partition_keys=("dt",)) == {WRITE}
    found = unsupported({"bucket": "-1"}, WRITE, has_primary_key=True, primary_keys=["k"], partition_keys=["dt"])
    assert found[0][0] == "primary-key" and "dt" in found[0][2]
    # lakectl's own fixed-bucket tables of that shape keep a key per partition.
    assert refused({"bucket": "2"}, partition_keys=("dt",)) == set()
    assert refused({"bucket": "2"}, primary_keys=("k", "dt"), partition_keys=("dt",)) == set()


def test_message_names_the_table_option_value_and_action() -> None:
    with pytest.raises(UnsupportedTableError) as e:
        check_options(schema({"scan.version": "3", "scan.watermark": "1"}), "db.t", READ)
    assert str(e.value) == ("table db.t uses scan.version=3 (and scan.watermark), which lakectl does not "
                            "support for reads (Paimon time-travels to that version by default)")
    with pytest.raises(UnsupportedTableError, match=r"^table db\.t uses branch=dev, which lakectl "
                                                    r"does not support for writes \(Paimon reads and writes that"):
        check_options(schema({"branch": "dev"}), "db.t", WRITE)


def test_merge_options_lakectl_lacks_are_refused_through_the_same_check() -> None:
    s = schema({"merge-engine": "aggregation", "fields.v.aggregate-function": "collect"})
    s.fields = [DataField(0, "k", parse_type("INT NOT NULL")), DataField(1, "v", parse_type("ARRAY<INT>"))]
    s.field_names = ["k", "v"]
    with pytest.raises(UnsupportedTableError, match=r"^table db\.t: option fields\.v\.aggregate-function=collect"):
        check_options(s, "db.t", READ)
    check_options(s, "db.t", EXPIRE)  # expire does not merge


def test_rule_patterns_match_whole_keys() -> None:
    rule = OptionRule("fields.*.sequence-group", frozenset({READ}), "x")
    assert rule.matches("fields.a.sequence-group") and rule.matches("fields.a,b.sequence-group")
    assert not rule.matches("fields..sequence-group") and not rule.matches("fields.a.aggregate-function")
    assert OptionRule("branch", frozenset({READ}), "x").matches("branch")
    assert not OptionRule("branch", frozenset({READ}), "x").matches("scan.fallback-branch")


def test_every_rule_names_an_action_and_a_reason() -> None:
    for rule in OPTION_RULES:
        assert rule.refuses and rule.refuses <= {READ, WRITE, EXPIRE} and rule.why


@pytest.mark.parametrize("key", ["ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                                 "partial-update.ignore-delete"])
def test_ignore_delete_and_its_fallback_keys_apply_to_every_engine_as_in_java(key: str) -> None:
    from core.merge_options import merge_options

    s = schema({key: "true"})
    s.fields = [DataField(0, "k", parse_type("INT NOT NULL")), DataField(1, "v", parse_type("INT"))]
    assert merge_options(s).ignore_delete
    s.options = {"bucket": "2", "ignore-delete": "false", key: "true"} if key != "ignore-delete" else s.options
    assert merge_options(s).ignore_delete == (key == "ignore-delete")


def test_batch_scans_and_writes_take_postpone_bucket_tables_other_reads_refuse_them() -> None:
    s = schema({"bucket": "-2"})
    check_options(s, "db.t", READ, batch_scan=True)  # real buckets only, as Paimon's batch read
    check_options(s, "db.t", WRITE)  # writes go to bucket-postpone/, compact moves them (core.postpone)
    with pytest.raises(UnsupportedTableError, match="bucket=-2"):
        check_options(s, "db.t", READ)
