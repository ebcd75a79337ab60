"""One JSON vocabulary across every command's `--format json` (README "JSON output"):
times are ISO 8601 with `T` and a zone offset, durations whole seconds, a partition an object
`{column: value}`, and every data command's summary names the engine that ran."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from typer.testing import CliRunner

from lakectl.app import app

runner = CliRunner()

# A string that starts like a date and time: whatever its key, it must be a full ISO 8601 time.
_LOOKS_LIKE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:")
_TIME_KEYS = re.compile(r"^(time|.*_time|expire_before)$")
_DURATION_KEYS = ("time_retained", "older_than")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON of every command that prints lakectl's own records, on a partitioned table with
    an expired partition, a tag with a TTL and a consumer."""
    root = tmp_path_factory.mktemp("vocabulary")
    wh = str(root / "wh")
    rows = root / "rows.csv"
    rows.write_text("id,v,dt\n1,a,2000-01-01\n2,b,2999-01-01\n3,c,2999-01-01\n")

    def json_of(*args: str) -> Any:
        result = runner.invoke(app, ["-w", wh, "-f", "json", *args])
        assert result.exit_code == 0, (args, result.stderr)
        return json.loads(result.stdout)

    out = {"create": json_of("create", "db.t", "-s", "id BIGINT, v STRING, dt STRING", "--primary-key", "id,dt",
                             "--partition-by", "dt", "-o", "bucket=1", "-o", "write-only=true")}
    out["write"] = json_of("write", "db.t", "-i", str(rows))
    json_of("write", "db.t", "-i", str(rows))
    out["scan --output"] = json_of("scan", "db.t", "--output", str(root / "out.parquet"))
    out["compact --dry-run"] = json_of("compact", "db.t", "--full", "--dry-run")
    out["compact"] = json_of("compact", "db.t", "--full")
    out["tag create"] = json_of("tag", "create", "db.t", "nightly", "--snapshot-id", "1", "--time-retained", "36h")
    json_of("tag", "create", "db.t", "kept", "--snapshot-id", "2")
    out["tag list"] = json_of("tag", "list", "db.t")
    out["tag delete"] = json_of("tag", "delete", "db.t", "kept")
    json_of("consumer", "reset", "db.t", "reader", "--next-snapshot", "2")
    out["consumer list"] = json_of("consumer", "list", "db.t")
    out["snapshots"] = json_of("snapshots", "db.t")
    out["schemas"] = json_of("schemas", "db.t")
    out["describe"] = json_of("describe", "db.t")
    out["files"] = json_of("files", "db.t")
    out["expire-partitions --dry-run"] = json_of("expire-partitions", "db.t", "--expiration-time", "7d", "--dry-run")
    out["expire-partitions"] = json_of("expire-partitions", "db.t", "--expiration-time", "7d")
    out["remove-orphan-files"] = json_of("remove-orphan-files", "db.t", "--older-than", "2h", "--dry-run")
    out["expire"] = json_of("expire", "db.t", "--retain-min", "1", "--dry-run")
    out["rollback"] = json_of("rollback", "db.t", "--snapshot-id", "2", "--dry-run")
    out["check"] = json_of("check", "db.t")
    return out


def _fields(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair anywhere in a JSON document."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k, v
            yield from _fields(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _fields(v, key)


def test_every_time_is_iso_8601_with_a_zone(outputs: dict[str, Any]) -> None:
    seen = set()
    for command, data in outputs.items():
        for key, value in _fields(data):
            if isinstance(value, str) and (_TIME_KEYS.match(key) or _LOOKS_LIKE_TIME.match(value)):
                assert "T" in value, (command, key, value)
                moment = dt.datetime.fromisoformat(value)
                assert moment.tzinfo is not None, (command, key, value)
                seen.add(key)
    assert {"commit_time", "create_time", "time", "expire_before"} <= seen


def test_time_fields_name_the_same_instant(outputs: dict[str, Any]) -> None:
    """A tag's commit time is its snapshot's; expire_before is 7 days before now."""
    snapshot_1 = next(s for s in outputs["snapshots"] if s["snapshot_id"] == 1)
    tag = outputs["tag create"]
    commit = dt.datetime.fromisoformat(tag["commit_time"])
    assert round(commit.timestamp() * 1000) == snapshot_1["commit_time_millis"]
    created = dt.datetime.fromisoformat(tag["create_time"])
    assert abs((dt.datetime.now(dt.timezone.utc) - created).total_seconds()) < 3600
    before = dt.datetime.fromisoformat(outputs["expire-partitions"]["expire_before"])
    age = dt.datetime.now(dt.timezone.utc) - before
    assert dt.timedelta(days=7) <= age < dt.timedelta(days=7, hours=1)


def test_durations_are_whole_seconds(outputs: dict[str, Any]) -> None:
    assert outputs["tag create"]["time_retained"] == 36 * 3600
    assert type(outputs["tag create"]["time_retained"]) is int
    assert [t["time_retained"] for t in outputs["tag list"]] == [None, 36 * 3600]  # kept, nightly
    assert outputs["remove-orphan-files"]["older_than"] == 7200
    for command, data in outputs.items():
        for key, value in _fields(data):
            if key in _DURATION_KEYS and value is not None:
                assert type(value) is int, (command, key, value)


def test_a_partition_is_an_object_everywhere(outputs: dict[str, Any]) -> None:
    assert {json.dumps(f["partition"], sort_keys=True) for f in outputs["files"]} == \
        {'{"dt": "2000-01-01"}', '{"dt": "2999-01-01"}'}
    for command in ("expire-partitions --dry-run", "expire-partitions"):
        assert outputs[command]["partitions"] == [{"dt": "2000-01-01"}], command


def test_every_data_command_names_its_engine(outputs: dict[str, Any]) -> None:
    for command in ("write", "scan --output", "compact", "compact --dry-run"):
        assert outputs[command]["engine"] == "local", command


def test_table_format_shows_durations_as_typed(tmp_path: Path) -> None:
    """For people the seconds read back as the duration a user types."""
    wh = str(tmp_path / "wh")
    assert runner.invoke(app, ["-w", wh, "create", "db.t", "-s", "id BIGINT"]).exit_code == 0
    result = runner.invoke(app, ["-w", wh, "remove-orphan-files", "db.t", "--older-than", "36h", "--dry-run"])
    assert result.exit_code == 0 and re.search(r"older_than\s+1d 12h", result.stdout), result.stdout


# Results without `branch`: check verifies main and every branch at once (its `branches` counts
# them; each problem names its branch). A new command's result must not join it.
_WITHOUT_BRANCH = {"check"}


def test_results_on_a_table_name_table_and_branch(outputs: dict[str, Any]) -> None:
    """An object names its table and branch; a listing's items about tags name them by `tag`."""
    lacking = set()
    for command, data in outputs.items():
        if isinstance(data, dict) and "table" in data:
            if data.get("branch") != "main":
                lacking.add(command)
    assert lacking == _WITHOUT_BRANCH
    for command in ("tag create", "tag delete"):
        assert (outputs[command]["table"], outputs[command]["branch"]) == ("db.t", "main"), command
        assert "name" not in outputs[command]
    assert [(t["table"], t["branch"], t["tag"]) for t in outputs["tag list"]] == [("db.t", "main", "kept"),
                                                                                ("db.t", "main", "nightly")]
    assert outputs["tag create"]["tag"] == "nightly"
    # write counts the buckets it wrote under a name that says so; create's `buckets` is the setting
    assert outputs["write"]["buckets_written"] == 2 and "buckets" not in outputs["write"]
    assert outputs["create"]["buckets"] == 1
