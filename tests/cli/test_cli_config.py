"""Settings from flags, LAKECTL_* variables, profiles and config files: the precedence order,
``lakectl config show`` (every value with its source, secrets masked) and the messages for a
bad config file (file, line, key)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()
SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
KEY_ID = "AKIAIOSFODNN7EXAMPLE"

CONFIG = f"""\
warehouse = "wh-top"
engine = "local"

[spark]
master = "local[2]"
threshold = "64mb"

[spark.conf]
"spark.executor.memory" = "2g"
"spark.sql.shuffle.partitions" = 4

[s3]
region = "eu-west-1"

[profiles.prod]
warehouse = "wh-prod"
format = "jsonl"

[profiles.prod.s3]
endpoint = "http://127.0.0.1:9000"
access-key-id = "{KEY_ID}"
secret-access-key = "{SECRET}"
path-style = true

[profiles.prod.spark.conf]
"spark.executor.memory" = "8g"

[profiles.dev]
engine = "spark"
"""


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def shown(*args: Any) -> dict[str, tuple[Any, str]]:
    result = invoke(*args, "--format", "json", "config", "show") if "--format" not in args else \
        invoke(*args, "config", "show")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert all(set(r) == {"key", "value", "source"} for r in rows)
    return {r["key"]: (r["value"], r["source"]) for r in rows}


def fails(args: list[Any], code: int, *fragments: str) -> str:
    result = invoke(*args)
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# ---- precedence ------------------------------------------------------------------------------
def test_defaults_without_a_config_file() -> None:
    s = shown()
    assert s["config-file"] == (None, "none")
    assert s["profile"] == (None, "default")
    assert s["warehouse"] == ("./warehouse", "default")
    assert s["format"] == ("json", "flag --format")
    assert s["engine"] == ("auto", "default")
    assert s["spark.threshold"] == ("256mb", "default")
    assert s["s3.endpoint"] == (None, "default")


def test_flag_beats_env_beats_profile_beats_config_beats_default(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lakectl.toml").write_text(CONFIG)
    top = shown()
    assert top["config-file"] == (str(tmp_path / "lakectl.toml"), "working directory")
    assert top["warehouse"] == (str(tmp_path / "wh-top"), "config file")  # beside the config file
    assert top["engine"] == ("local", "config file")
    assert top["spark.master"] == ("local[2]", "config file")
    assert top["spark.conf.spark.executor.memory"] == ("2g", "config file")
    assert top["spark.conf.spark.sql.shuffle.partitions"] == ("4", "config file")
    assert top["s3.region"] == ("eu-west-1", "config file")

    prod = shown("--profile", "prod")
    assert prod["profile"] == ("prod", "flag --profile")
    assert prod["warehouse"] == (str(tmp_path / "wh-prod"), "profile prod")
    assert prod["engine"] == ("local", "config file")  # not in the profile: the top level
    assert prod["s3.endpoint"] == ("http://127.0.0.1:9000", "profile prod")
    assert prod["s3.path-style"] == ("true", "profile prod")
    assert prod["s3.region"] == ("eu-west-1", "config file")
    assert prod["spark.conf.spark.executor.memory"] == ("8g", "profile prod")

    monkeypatch.setenv("LAKECTL_WAREHOUSE", "wh-env")
    monkeypatch.setenv("LAKECTL_SPARK_THRESHOLD", "1gb")
    monkeypatch.setenv("LAKECTL_S3_ENDPOINT", "http://env:9000")
    env = shown("--profile", "prod")
    assert env["warehouse"] == ("wh-env", "env LAKECTL_WAREHOUSE")
    assert env["spark.threshold"] == ("1gb", "env LAKECTL_SPARK_THRESHOLD")
    assert env["s3.endpoint"] == ("http://env:9000", "env LAKECTL_S3_ENDPOINT")

    flag = shown("--profile", "prod", "--warehouse", "wh-flag", "--master", "spark://h:7077",
                 "--spark-conf", "spark.executor.memory=16g")
    assert flag["warehouse"] == ("wh-flag", "flag --warehouse")
    assert flag["spark.master"] == ("spark://h:7077", "flag --master")
    assert flag["spark.conf.spark.executor.memory"] == ("16g", "flag --spark-conf")


def test_the_profile_format_applies_and_a_command_flag_wins(tmp_path: Path) -> None:
    (tmp_path / "lakectl.toml").write_text(CONFIG)
    table = invoke("config", "show")
    assert table.exit_code == 0 and table.stdout.splitlines()[0].split() == ["key", "value", "source"]
    prod = invoke("--profile", "prod", "config", "show")  # the profile says jsonl
    assert [json.loads(line)["key"] for line in prod.stdout.splitlines()][:2] == ["config-file", "profile"]
    assert json.loads(invoke("--profile", "prod", "config", "show", "--format", "json").stdout)[0]["key"] == \
        "config-file"


def test_profile_from_env_and_from_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lakectl.toml").write_text('profile = "dev"\n' + CONFIG)
    assert shown()["profile"] == ("dev", "config file")
    assert shown()["engine"] == ("spark", "profile dev")
    monkeypatch.setenv("LAKECTL_PROFILE", "prod")
    assert shown()["profile"] == ("prod", "env LAKECTL_PROFILE")
    assert shown("--profile", "dev")["profile"] == ("dev", "flag --profile")


def test_a_profile_warehouse_is_where_commands_work(tmp_path: Path) -> None:
    (tmp_path / "lakectl.toml").write_text(CONFIG)
    assert invoke("--profile", "prod", "-q", "create", "db.t", "--schema", "id INT").exit_code == 0
    assert (tmp_path / "wh-prod" / "db.db" / "t" / "schema" / "schema-0").is_file()
    assert not (tmp_path / "wh-top").exists()
    listing = invoke("--profile", "prod", "list", "db")  # jsonl, from the profile
    assert [json.loads(line) for line in listing.stdout.splitlines()] == [{"database": "db", "table": "t"}]


def test_user_config_and_explicit_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "home" / ".config" / "lakectl" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('warehouse = "wh-user"\n')
    assert shown()["config-file"] == (str(user), "user config")
    assert shown()["warehouse"] == (str(user.parent / "wh-user"), "config file")  # beside the file
    other = tmp_path / "other.toml"
    other.write_text('warehouse = "wh-other"\n')
    monkeypatch.setenv("LAKECTL_CONFIG", str(other))
    assert shown()["config-file"] == (str(other), "env LAKECTL_CONFIG")
    assert shown("--config", user)["config-file"] == (str(user), "flag --config")


def test_unknown_profile_and_profile_without_config(tmp_path: Path) -> None:
    fails(["--profile", "prod", "list"], 2, "profile 'prod'", "no config file")
    (tmp_path / "lakectl.toml").write_text(CONFIG)
    fails(["--profile", "staging", "list"], 2, "profile 'staging'", "lakectl.toml", "dev, prod")
    fails(["--profile", "staging", "config", "show"], 2, "staging")


# ---- secrets -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["table", "json", "jsonl", "csv"])
def test_secrets_are_masked_in_every_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    (tmp_path / "lakectl.toml").write_text(CONFIG)
    monkeypatch.setenv("LAKECTL_S3_SESSION_TOKEN", "token-" + SECRET)
    result = invoke("-vv", "--profile", "prod", "--format", fmt, "config", "show")
    assert result.exit_code == 0, result.stderr
    for secret in (SECRET, KEY_ID, "token-"):
        assert secret not in result.stdout and secret not in result.stderr
    assert result.stdout.count("****") == 3  # access key id, secret key, session token
    assert "http://127.0.0.1:9000" in result.stdout  # not a secret


def test_a_mistyped_secret_is_not_echoed(tmp_path: Path) -> None:
    (tmp_path / "lakectl.toml").write_text("[s3]\nsecret-access-key = 1234567\n")
    message = fails(["list"], 2, "line 2", "'s3.secret-access-key'", "must be a string")
    assert "1234567" not in message


# ---- a bad config file ---------------------------------------------------------------------
@pytest.mark.parametrize("text, fragments", [
    ('warehouse = "wh"\nformat = \n', ["line 2, column 10", "Invalid value"]),
    ('[spark\nmaster = "x"\n', ["line 1", "Expected ']'"]),
    ('warehouse = "a"\nwearhouse = "b"\n', ["line 2", "unknown key 'wearhouse'", "known: warehouse"]),
    ('warehouse = 42\n', ["line 1", "'warehouse' must be a string, not the integer 42"]),
    ('format = "yaml"\n', ["line 1", "'format' is 'yaml'", "table, json, jsonl, csv"]),
    ('\n[s3]\nregion = "x"\nendpoint-url = "y"\n', ["line 4", "unknown key 's3.endpoint-url' in [s3]",
                                                    "known: endpoint"]),
    ('[spark]\nthreshold = true\n', ["line 2", "'spark.threshold' must be a string or an integer"]),
    ('[spark.conf]\n"spark.x" = [1, 2]\n', ["line 2", "'spark.conf.spark.x'", "not an array"]),
    ('[profiles.prod]\nengine = "flink"\n', ["line 2", "'profiles.prod.engine' is 'flink'", "auto, local, spark"]),
    ('[profiles.prod.s3]\npath-style = 1\n', ["line 2", "'profiles.prod.s3.path-style' must be a string or true "
                                                        "or false"]),
    ('[profiles.prod]\nprofiles = 1\n', ["line 2", "unknown key 'profiles.prod.profiles' in [profiles.prod]"]),
    ('profiles = "prod"\n', ["line 1", "'profiles' must be a table"]),
    ('spark.master = 7\n', ["line 1", "'spark.master' must be a string"]),
])
def test_a_bad_config_file_names_file_line_and_key(tmp_path: Path, text: str, fragments: list[str]) -> None:
    (tmp_path / "lakectl.toml").write_text(text)
    fails(["list"], 2, f"config file {tmp_path / 'lakectl.toml'}", *fragments)
    fails(["config", "show"], 2, *fragments)


def test_a_config_file_that_is_not_text(tmp_path: Path) -> None:
    (tmp_path / "lakectl.toml").write_bytes(b"warehouse = \"\xff\xfe\"\n")
    fails(["list"], 2, "lakectl.toml", "not UTF-8")
