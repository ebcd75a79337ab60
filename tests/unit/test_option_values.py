"""Table option values checked when they are set (core.option_values), the longest duration
lakectl takes (core.options.parse_duration), at least one commit attempt whatever
commit.max-retries says, and the refusal of a table that already carries a bad value, with
alter-schema --reset-option as the way out (issue 43, case 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from core.errors import UnsupportedTableError, UsageError
from core.evolution import RemoveOption, SetOption
from core.ops.create import create
from core.option_values import MAX_BUCKETS, TEXT_OPTIONS, VALUE_RULES, check_values, invalid_values
from core.options import CoreOptions, parse_duration
from core.table import Table

JAVA_OPTIONS = Path(__file__).with_name("paimon_java_core_options.txt")


def test_every_java_option_is_typed_or_free_text() -> None:
    """Every option of Java Paimon 1.0's CoreOptions has its value checked, or is listed as
    free text (a name, a pattern, a format lakectl checks elsewhere); none is both."""
    java = {line.strip() for line in JAVA_OPTIONS.read_text().splitlines() if line.strip()}
    assert sorted(java - set(VALUE_RULES) - TEXT_OPTIONS) == []
    assert sorted(set(VALUE_RULES) & TEXT_OPTIONS) == []


# (option, value, a fragment of what the message says the option takes)
REFUSED = [
    ("commit.max-retries", "-1", "an integer from 0 to 2147483647"),
    ("commit.max-retries", "2147483648", "an integer from 0 to 2147483647"),  # past Java's int
    ("commit.max-retries", "ten", "an integer from 0"),
    ("snapshot.num-retained.min", "-1", "an integer from 1"),
    ("snapshot.num-retained.min", "0", "an integer from 1"),
    ("snapshot.num-retained.max", "0", "an integer from 1"),
    ("snapshot.expire.limit", "0", "an integer from 1"),
    ("num-sorted-run.compaction-trigger", "0", "an integer from 1"),
    ("num-levels", "1", "an integer from 2"),
    ("bucket", "0", "other than 0"),
    ("bucket", "-3", "from -2 to 1000000"),
    ("bucket", "999999999999999999999999999999", "from -2 to 1000000"),
    ("bucket", str(MAX_BUCKETS + 1), "from -2 to 1000000"),
    ("scan.snapshot-id", str(2**63), "an integer from"),  # past Java's long
    ("snapshot.time-retained", "1.5 h", "a whole number and a unit"),  # Java reads whole numbers only
    ("snapshot.time-retained", "2 w", "a whole number and a unit"),  # Java has no weeks
    ("snapshot.time-retained", "-1 h", "a duration of 0 or more"),
    ("snapshot.time-retained", "999999999999999999999999999999d", "at most 36500 d"),
    ("consumer.expiration-time", "soon", "a duration"),
    ("partition.expiration-time", "0 d", "a duration of more than 0"),
    ("partition.expiration-time", "36501 d", "at most 36500 d"),
    ("write-buffer-size", "12xb", "a size"),
    ("write-buffer-size", "1.5 mb", "a size"),
    ("write-buffer-size", "0", "more than 0 bytes"),
    ("target-file-size", "9999999999 tb", "a size"),  # more bytes than Java's long holds
    ("lookup.cache-max-memory-size", "lots", "a size"),
    ("merge-engine", "foo", "one of deduplicate, partial-update, aggregation, first-row"),
    ("changelog-producer", "changes", "one of none, input, full-compaction, lookup"),
    ("scan.infer-parallelism", "yes", "true or false"),
    ("deletion-vectors.enabled", "1", "true or false"),
    ("lookup.hash-load-factor", "high", "a number"),
]


@pytest.mark.parametrize("key, value, takes", REFUSED)
def test_a_value_paimon_would_not_read_is_refused_naming_the_option_and_its_range(key, value, takes) -> None:
    with pytest.raises(UsageError) as raised:
        check_values({key: value})
    message = str(raised.value)
    assert message.startswith(f"option {key}={value} is not valid: {key} takes "), message
    assert takes in message and "\n" not in message


ACCEPTED = [
    ("commit.max-retries", "0"), ("commit.max-retries", "30"), ("snapshot.num-retained.min", "1"),
    ("snapshot.num-retained.max", "2147483647"), ("snapshot.expire.limit", "1"), ("bucket", "-1"),
    ("bucket", "-2"), ("bucket", "1"), ("bucket", str(MAX_BUCKETS)), ("snapshot.time-retained", "0s"),
    ("snapshot.time-retained", "1 h"), ("snapshot.time-retained", "90 MIN"), ("snapshot.time-retained", "7 days"),
    ("snapshot.time-retained", "36500 d"), ("snapshot.time-retained", "500"), ("tag.creation-delay", "10 min"),
    ("partition.expiration-time", "1d"), ("write-buffer-size", "256 mb"), ("write-buffer-size", "64kb"),
    ("write-buffer-size", "500 bytes"), ("lookup.cache-max-memory-size", "0"), ("merge-engine", "Partial-Update"),
    ("changelog-producer", "lookup"), ("scan.infer-parallelism", "TRUE"), ("lookup.hash-load-factor", "0.75"),
    ("scan.mode", "from-snapshot"), ("tag.period-formatter", "without_dashes"), ("file.format", "orc"),
    ("buckets", "oops"),  # not an option Paimon defines: kept with a warning, its value is nobody's
]


@pytest.mark.parametrize("key, value", ACCEPTED)
def test_values_paimon_reads_are_taken(key, value) -> None:
    check_values({key: value})


def test_a_table_java_made_with_more_buckets_than_lakectl_creates_is_still_valid() -> None:
    """MAX_BUCKETS bounds new values only; an existing table is held to Java's int."""
    assert invalid_values({"bucket": str(MAX_BUCKETS + 1)}) == []
    assert [k for k, _, _ in invalid_values({"bucket": str(2**31), "commit.max-retries": "-1"})] == \
        ["bucket", "commit.max-retries"]


@pytest.mark.parametrize("text", ["999999999999999999999999999999d", "9" * 400 + " ms", "36501 d", "5000000 h"])
def test_an_absurd_duration_is_a_usage_error_not_an_overflow(text) -> None:
    with pytest.raises(UsageError, match=r"^--older-than '.*' is longer than 36500d \(100 years\)"):
        parse_duration(text, "--older-than")


def test_the_longest_duration_and_javas_units_parse() -> None:
    assert parse_duration("36500 d").days == 36500
    assert parse_duration("1500 µs").total_seconds() == pytest.approx(0.0015)
    assert parse_duration("2000000 nanos").total_seconds() == pytest.approx(0.002)


@pytest.mark.parametrize("raw, retries", [("-1", 0), ("-50", 0), ("0", 0), ("3", 3), ("9" * 30, 2**31 - 1)])
def test_commit_max_retries_never_means_no_attempt(raw, retries) -> None:
    """Java's committer makes one attempt and then retries while retryCount < commit.max-retries,
    so a negative value is one attempt; lakectl reads it the same way."""
    assert CoreOptions({"commit.max-retries": raw}).commit_max_retries == retries


# ---- through the table -----------------------------------------------------------------------
def _table(tmp_path: Path) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT, v STRING", options={"snapshot.num-retained.min": "1"})
    return t


def _carry(t: Table, **options: str) -> None:
    """Store option values in the latest schema file, as an older lakectl or a hand edit did."""
    path = Path(t.path, "schema", f"schema-{t.schema.id}")
    obj = json.loads(path.read_text())
    obj["options"].update(options)
    path.write_text(json.dumps(obj))


def test_create_and_alter_refuse_the_value_and_write_nothing(tmp_path) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    with pytest.raises(UsageError, match="option bucket=999999999999999999999999999999 is not valid"):
        create(t, "id BIGINT, v STRING", options={"bucket": "999999999999999999999999999999", "bucket-key": "id"})
    assert not t.exists()
    t = _table(tmp_path)
    with pytest.raises(UsageError, match="option commit.max-retries=-1 is not valid"):
        t.alter([SetOption("commit.max-retries", "-1")])
    with pytest.raises(UsageError, match="option snapshot.num-retained.min=-1 is not valid"):
        t.alter([SetOption("snapshot.num-retained.min", "-1")], dry_run=True)
    assert t.schemas.list_ids() == [0]


def test_alter_refuses_a_new_bad_value_on_a_table_that_already_carries_one(tmp_path) -> None:
    """The schema checks skip a table that is already invalid; the value being set is still checked."""
    t = _table(tmp_path)
    _carry(t, **{"commit.max-retries": "-1"})
    with pytest.raises(UsageError, match="option snapshot.expire.limit=0 is not valid"):
        t.alter([SetOption("snapshot.expire.limit", "0")])
    assert t.schemas.list_ids() == [0]


@pytest.mark.parametrize("carried", ["-1", "abc"])
def test_a_table_carrying_a_bad_value_names_the_repair_and_reset_option_repairs_it(tmp_path, carried) -> None:
    t = _table(tmp_path)
    t.write(pa.table({"id": [1], "v": ["a"]}))
    _carry(t, **{"commit.max-retries": carried})
    with pytest.raises(UnsupportedTableError) as raised:
        t.write(pa.table({"id": [2], "v": ["b"]}))
    assert str(raised.value) == (
        f"table db.t carries option commit.max-retries={carried}, which Paimon does not read: commit.max-retries "
        "takes an integer from 0 to 2147483647 (0 still makes one attempt; it is the number of retries after a "
        "lost race); repair it with lakectl alter-schema db.t --set-option commit.max-retries=VALUE, or "
        "--reset-option commit.max-retries for Paimon's default")
    with pytest.raises(UnsupportedTableError, match="commit.max-retries"):
        t.expire()
    assert t.snapshots.list_ids() == [1]

    result = t.alter([RemoveOption("commit.max-retries")])  # the way out works on the broken table
    assert result.committed and "commit.max-retries" not in t.schema.options
    t.write(pa.table({"id": [2], "v": ["b"]}))
    assert sorted(r["id"] for r in t.scan().to_pylist()) == [1, 2]


def test_a_commit_on_a_table_carrying_negative_retries_makes_one_attempt(tmp_path) -> None:
    """Commands that do not refuse the table still commit: truncate gave up "after 0 attempts"."""
    t = _table(tmp_path)
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    _carry(t, **{"commit.max-retries": "-1"})
    t.truncate(dry_run=False)
    assert t.snapshots.list_ids()[-1] == 2 and t.scan().to_pylist() == []
