"""Options no Paimon version defines, through the console script: create warns (stderr and
the JSON ``warnings`` field) with a near-miss suggestion and keeps the option; writes and
maintenance refuse the table naming it, reads continue, and removing it lets writes through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_console_script import assert_error, check, entry_point, env, run, write_csv  # noqa: F401

pytestmark = pytest.mark.slow


def test_unknown_option_is_warned_at_create_and_refused_for_writes_not_reads(env: dict[str, str],
                                                                           tmp_path: Path) -> None:
    lakectl = entry_point("script")
    wh = tmp_path / "wh"
    created = run(lakectl, "create", "db.t", "-w", wh, "--schema", "id BIGINT NOT NULL, v STRING",
                  "--primary-key", "id", "--option", "bucket=2", "--option", "buckets=4", "-f", "json",
                  env=env, cwd=tmp_path)
    record = json.loads(check(created))
    expected = ("option buckets is not a Paimon option (did you mean bucket?); it is kept, but lakectl "
                "refuses to write or maintain a table carrying an option it does not know")
    assert record["warnings"] == [expected]
    assert created.stderr.splitlines() == [f"warning: {expected}"]
    assert record["buckets"] == 2

    data = write_csv(tmp_path / "in.csv", ["id", "v"], [[1, "a"], [2, "b"]])
    assert_error(run(lakectl, "write", "db.t", "-w", wh, "-i", data, env=env, cwd=tmp_path), 1,
                 "table db.t uses buckets=4, which lakectl does not support for writes (an option lakectl "
                 "does not know")
    assert_error(run(lakectl, "expire", "db.t", "-w", wh, env=env, cwd=tmp_path), 1, "uses buckets=4")
    assert json.loads(check(run(lakectl, "scan", "db.t", "-w", wh, "-f", "json", env=env, cwd=tmp_path))) == []

    check(run(lakectl, "alter-schema", "db.t", "-w", wh, "--reset-option", "buckets", env=env, cwd=tmp_path))
    check(run(lakectl, "write", "db.t", "-w", wh, "-i", data, env=env, cwd=tmp_path))
    rows = json.loads(check(run(lakectl, "scan", "db.t", "-w", wh, "-f", "json", env=env, cwd=tmp_path)))
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, "a"), (2, "b")]


def test_known_options_create_without_warnings(env: dict[str, str], tmp_path: Path) -> None:
    lakectl = entry_point("script")
    created = run(lakectl, "create", "db.t", "-w", tmp_path / "wh", "--schema", "id BIGINT, v STRING",
                  "--option", "parquet.compression.codec=snappy", "--option", "sink.parallelism=2",
                  "--option", "fields.v.aggregate-function=max", "-f", "json", env=env, cwd=tmp_path)
    assert json.loads(check(created))["warnings"] == []
    assert created.stderr == ""


def test_alter_schema_warns_about_an_unknown_option_and_refuses_a_bad_default(env: dict[str, str],
                                                                             tmp_path: Path) -> None:
    lakectl = entry_point("script")
    wh = tmp_path / "wh"
    check(run(lakectl, "create", "db.t", "-w", wh, "--schema", "id INT, v INT", env=env, cwd=tmp_path))
    altered = run(lakectl, "alter-schema", "db.t", "-w", wh, "--set-option", "merge-engin=first-row",
                  env=env, cwd=tmp_path)
    check(altered)
    assert altered.stderr.splitlines() == [
        "warning: option merge-engin is not a Paimon option (did you mean merge-engine?); it is kept, but lakectl "
        "refuses to write or maintain a table carrying an option it does not know"]
    assert_error(run(lakectl, "alter-schema", "db.t", "-w", wh, "--set-option", "fields.v.default-value=x",
                     env=env, cwd=tmp_path), 2, "fields.v.default-value='x' is not a value of the column's type")
