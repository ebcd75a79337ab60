"""Table option values through the console script (issue 43, case 9): create and alter-schema
refuse a value Paimon would not read with exit 2 and one line naming the option and its range,
an absurd duration is a usage error and not an internal error, and a table that already
carries a bad value names its repair, which alter-schema --reset-option makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_console_script import assert_error, check, entry_point, env, run, write_csv  # noqa: F401

pytestmark = pytest.mark.slow

ABSURD = "999999999999999999999999999999"


def _rows(lakectl: list[str], wh: Path, env: dict[str, str], cwd: Path) -> list[tuple[int, str]]:
    out = json.loads(check(run(lakectl, "scan", "db.t", "-w", wh, "-f", "json", env=env, cwd=cwd)))
    return sorted((r["id"], r["v"]) for r in out)


def test_case_9_a_bad_option_is_refused_and_the_table_keeps_working(env: dict[str, str], tmp_path: Path) -> None:
    lakectl = entry_point("script")
    wh = tmp_path / "wh"
    check(run(lakectl, "create", "db.t", "-w", wh, "--schema", "id BIGINT, v STRING", env=env, cwd=tmp_path))
    refused = [
        ("commit.max-retries=-1", "option commit.max-retries=-1 is not valid: commit.max-retries takes an integer "
                                  "from 0 to 2147483647"),
        ("snapshot.num-retained.min=-1", "option snapshot.num-retained.min=-1 is not valid: snapshot.num-retained.min "
                                         "takes an integer from 1 to 2147483647"),
        (f"bucket={ABSURD}", f"option bucket={ABSURD} is not valid: bucket takes an integer from -2 to 1000000"),
        ("snapshot.time-retained=1.5h", "snapshot.time-retained takes a duration of 0 or more: a whole number and "
                                        "a unit (ms, s, min, h, d)"),
        ("merge-engine=dedup", "merge-engine takes one of deduplicate, partial-update, aggregation, first-row"),
    ]
    for pair, message in refused:
        assert_error(run(lakectl, "alter-schema", "db.t", "-w", wh, "--set-option", pair, env=env, cwd=tmp_path),
                     2, message)
    schemas = json.loads(check(run(lakectl, "schemas", "db.t", "-w", wh, "-f", "json", env=env, cwd=tmp_path)))
    assert [s["schema_id"] for s in schemas] == [0]  # nothing was written

    assert_error(run(lakectl, "create", "db.u", "-w", wh, "--schema", "id BIGINT", "--option",
                     "snapshot.expire.limit=0", env=env, cwd=tmp_path), 2,
                 "option snapshot.expire.limit=0 is not valid: snapshot.expire.limit takes an integer from 1")
    assert not (wh / "db.db" / "u").exists()

    data = write_csv(tmp_path / "in.csv", ["id", "v"], [[1, "a"]])
    check(run(lakectl, "write", "db.t", "-w", wh, "-i", data, env=env, cwd=tmp_path))
    assert _rows(lakectl, wh, env, tmp_path) == [(1, "a")]


def test_an_absurd_duration_is_a_one_line_usage_error(env: dict[str, str], tmp_path: Path) -> None:
    lakectl = entry_point("script")
    wh = tmp_path / "wh"
    check(run(lakectl, "create", "db.t", "-w", wh, "--schema", "id BIGINT, v STRING", env=env, cwd=tmp_path))
    check(run(lakectl, "write", "db.t", "-w", wh, "-i", write_csv(tmp_path / "in.csv", ["id", "v"], [[1, "a"]]),
              env=env, cwd=tmp_path))
    expired = run(lakectl, "expire", "db.t", "-w", wh, "--older-than", f"{ABSURD}d", env=env, cwd=tmp_path)
    assert_error(expired, 2, "--older-than")  # was "internal error: OverflowError"
    assert "internal error" not in expired.stderr
    assert_error(run(lakectl, "alter-schema", "db.t", "-w", wh, "--set-option", f"partition.expiration-time={ABSURD}d",
                     env=env, cwd=tmp_path), 2, "at most 36500 d")
    assert_error(run(lakectl, "tag", "create", "db.t", "keep", "-w", wh, "--time-retained", f"{ABSURD}d",
                     env=env, cwd=tmp_path), 2, "is longer than 36500d (100 years), the longest duration lakectl takes")
    assert _rows(lakectl, wh, env, tmp_path) == [(1, "a")]


@pytest.mark.parametrize("carried", ["-1", "ten"])
def test_a_table_carrying_a_bad_value_names_its_repair(env: dict[str, str], tmp_path: Path, carried: str) -> None:
    """As an older lakectl left it: every commit gave up "after 0 tries", and so did the
    alter-schema --reset-option that would have undone it."""
    lakectl = entry_point("script")
    wh = tmp_path / "wh"
    check(run(lakectl, "create", "db.t", "-w", wh, "--schema", "id BIGINT, v STRING", env=env, cwd=tmp_path))
    check(run(lakectl, "write", "db.t", "-w", wh, "-i", write_csv(tmp_path / "a.csv", ["id", "v"], [[1, "a"]]),
              env=env, cwd=tmp_path))
    schema = wh / "db.db" / "t" / "schema" / "schema-0"
    obj = json.loads(schema.read_text())
    obj["options"]["commit.max-retries"] = carried
    schema.write_text(json.dumps(obj))

    data = write_csv(tmp_path / "b.csv", ["id", "v"], [[2, "b"]])
    assert_error(run(lakectl, "write", "db.t", "-w", wh, "-i", data, env=env, cwd=tmp_path), 1,
                 f"table db.t carries option commit.max-retries={carried}, which Paimon does not read: "
                 "commit.max-retries takes an integer from 0 to 2147483647")
    assert_error(run(lakectl, "expire", "db.t", "-w", wh, env=env, cwd=tmp_path), 1,
                 "repair it with lakectl alter-schema db.t --set-option commit.max-retries=VALUE, or --reset-option "
                 "commit.max-retries for Paimon's default")
    if carried == "-1":
        assert _rows(lakectl, wh, env, tmp_path) == [(1, "a")]  # reads continue
    else:  # a read replans up to commit.max-retries times after losing its snapshot to expire
        assert_error(run(lakectl, "scan", "db.t", "-w", wh, env=env, cwd=tmp_path), 2,
                     "option commit.max-retries='ten' must be an integer; repair the table with lakectl alter-schema "
                     "DB.TABLE --set-option commit.max-retries=VALUE or --reset-option commit.max-retries")

    check(run(lakectl, "alter-schema", "db.t", "-w", wh, "--reset-option", "commit.max-retries", env=env, cwd=tmp_path))
    check(run(lakectl, "write", "db.t", "-w", wh, "-i", data, env=env, cwd=tmp_path))
    assert _rows(lakectl, wh, env, tmp_path) == [(1, "a"), (2, "b")]
