"""The catalog's settings (lakectl/config.py): each Paimon key resolved on its own from
--catalog-option > LAKECTL_CATALOG_<KEY> > profile [catalog] > config file [catalog] >
default, the warehouse rules of each kind, the refusals made before anything runs, and the
masking of secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import UsageError
from lakectl.config import MASK, Settings, catalog_env, is_catalog_secret

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
warehouse = "wh-top"

[catalog]
metastore = "jdbc"
uri = "jdbc:sqlite:top.db"
catalog-key = "top"
jdbc.user = "alice"
"lock.enabled" = true

[profiles.prod.catalog]
uri = "jdbc:sqlite:/abs/prod.db"
jdbc.password = "s3cret-pw"
lock-acquire-timeout = "30 s"
"""


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in [v for v in os.environ if v.startswith("LAKECTL_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def _config(tmp_path: Path, text: str = CONFIG) -> str:
    path = tmp_path / "conf" / "lakectl.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return str(path)


def _values(s: Settings) -> dict[str, tuple[str, str]]:
    return {k: (str(r.value), r.source) for k, r in s.catalog_settings().items()}


def test_each_key_takes_the_highest_layer_that_sets_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = _config(tmp_path)
    base = tmp_path / "conf"
    # config file alone: relative paths beside the file, nested and quoted dotted keys alike
    got = _values(Settings(config_file=conf))
    assert got["metastore"] == ("jdbc", "config file")
    assert got["uri"] == (f"jdbc:sqlite:{base / 'top.db'}", "config file")
    assert got["jdbc.user"] == ("alice", "config file")
    assert got["lock.enabled"] == ("true", "config file")
    assert got["catalog-key"] == ("top", "config file")
    # the profile over the file, key by key (catalog-key still the file's)
    got = _values(Settings(config_file=conf, profile="prod"))
    assert got["uri"] == ("jdbc:sqlite:/abs/prod.db", "profile prod")
    assert got["catalog-key"] == ("top", "config file")
    assert got["lock-acquire-timeout"] == ("30 s", "profile prod")
    # the environment over the profile
    monkeypatch.setenv("LAKECTL_CATALOG_URI", "jdbc:sqlite:/env.db")
    monkeypatch.setenv("LAKECTL_CATALOG_LOCK_ENABLED", "false")
    got = _values(Settings(config_file=conf, profile="prod"))
    assert got["uri"] == ("jdbc:sqlite:/env.db", "env LAKECTL_CATALOG_URI")
    assert got["lock.enabled"] == ("false", "env LAKECTL_CATALOG_LOCK_ENABLED")
    # the flag over everything
    got = _values(Settings(config_file=conf, profile="prod",
                           catalog_options=["uri=jdbc:sqlite:/flag.db", "catalog-key = k2"]))
    assert got["uri"] == ("jdbc:sqlite:/flag.db", "flag --catalog-option")
    assert got["catalog-key"] == ("k2", "flag --catalog-option")
    assert got["jdbc.user"] == ("alice", "config file")


def test_without_any_catalog_setting_it_is_the_filesystem_and_nothing_is_opened(tmp_path: Path) -> None:
    s = Settings(warehouse=str(tmp_path / "wh"))
    assert _values(s) == {"metastore": ("filesystem", "default")}
    assert s.catalog() is None
    config = s.catalog_config()
    assert (config.metastore, config.warehouse) == ("filesystem", str(tmp_path / "wh"))


def test_a_filesystem_warehouse_process_imports_no_catalog_module(tmp_path: Path) -> None:
    """The path every filesystem command takes (settings -> table) loads nothing of
    core.catalog; a jdbc configuration loads it, so the check can fail."""
    probe = ("import sys; from lakectl.config import Settings; s = Settings(warehouse=sys.argv[1]{});"
             " s.locate_table('db.t'); print(sorted(m for m in sys.modules if m.startswith('core.catalog')))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    plain = subprocess.run([sys.executable, "-c", probe.format(""), str(tmp_path / "wh")], env=env,
                           capture_output=True, text=True, check=True)
    assert plain.stdout.strip() == "[]"
    jdbc = subprocess.run([sys.executable, "-c", probe.format(
        ", catalog_options=['metastore=jdbc', 'uri=jdbc:sqlite:' + sys.argv[1] + '.db']"), str(tmp_path / "wh")],
        env=env, capture_output=True, text=True, check=True)
    assert "core.catalog.jdbc" in jdbc.stdout


def test_the_warehouse_of_each_kind(tmp_path: Path) -> None:
    jdbc = ["metastore=jdbc", "uri=jdbc:sqlite:/x.db"]
    # jdbc: -w when the key is not given
    assert Settings(warehouse="/w1", catalog_options=jdbc).catalog_config().warehouse == "/w1"
    # the key when given; -w next to a different key is refused rather than ignored
    keyed = Settings(catalog_options=[*jdbc, "warehouse=/w2"])
    assert keyed.catalog_config().warehouse == "/w2"
    assert keyed.catalog_config("/w2/").warehouse == "/w2"
    with pytest.raises(UsageError, match="--warehouse /w3 differs from the jdbc catalog's warehouse /w2"):
        keyed.catalog_config("/w3")
    # filesystem: -w stays its warehouse, over a [catalog] warehouse key
    fs = Settings(catalog_options=["warehouse=/w4"])
    assert fs.catalog_config().warehouse == "/w4"
    assert fs.catalog_config("/w5").warehouse == "/w5"


@pytest.mark.parametrize("options, words", [
    (["metastore=hive"], "metastore 'hive' is not supported (a Hive metastore client is not part of lakectl); "
                         "use one of filesystem, jdbc, rest"),
    (["metastore=glue"], "unknown metastore 'glue'; use one of filesystem, jdbc, rest"),
    (["metastore=jdbc"], "metastore jdbc needs the catalog key uri"),
    (["metastore=rest"], "metastore rest needs the catalog key uri"),
    (["uri"], "--catalog-option 'uri' must be KEY=VALUE"),
    (["colour=blue"], "--catalog-option colour: unknown catalog key"),
])
def test_refusals_before_anything_runs(options: list[str], words: str) -> None:
    with pytest.raises(UsageError) as info:
        Settings(warehouse="/w", catalog_options=options).catalog()
    assert words in str(info.value)


@pytest.mark.parametrize("text, words", [
    ('[catalog]\nmetastore = "hive"\n', "line 2: key 'catalog.metastore': metastore 'hive' is not supported"),
    ('[catalog]\ncolour = "x"\n', "line 2: unknown key 'catalog.colour' in [catalog]"),
    ('[profiles.p.catalog]\nuri = ["a"]\n', "key 'profiles.p.catalog.uri' must be a string, number or boolean"),
    ('[catalog]\njdbc.password = ["hunter2"]\n', "not a value of type list"),
])
def test_a_bad_catalog_table_names_file_line_and_key(tmp_path: Path, text: str, words: str) -> None:
    conf = _config(tmp_path, text)
    with pytest.raises(UsageError) as info:
        Settings(config_file=conf).catalog_settings()
    assert words in str(info.value).replace("must be a string, number or boolean, not a value", "not a value")
    assert "hunter2" not in str(info.value)


def test_secrets_are_masked_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(catalog_env("token"), "tok-123")
    s = Settings(config_file=_config(tmp_path), profile="prod",
                 catalog_options=["jdbc.sslpassword=pw2", "token.provider=bear", "data-token.enabled=true",
                                  "header.X-Secret-Key=abc"])
    rows = {r["key"]: r for r in s.shown()}
    for key in ("catalog.jdbc.password", "catalog.token", "catalog.jdbc.sslpassword", "catalog.header.X-Secret-Key"):
        assert rows[key]["value"] == MASK, key
    assert rows["catalog.token"]["source"] == "env LAKECTL_CATALOG_TOKEN"
    assert rows["catalog.token.provider"]["value"] == "bear"
    assert rows["catalog.data-token.enabled"]["value"] == "true"
    assert rows["catalog.jdbc.user"]["value"] == "alice"
    assert rows["catalog.metastore"] == {"key": "catalog.metastore", "value": "jdbc", "source": "config file"}
    text = repr(rows)
    assert not any(secret in text for secret in ("s3cret-pw", "tok-123", "pw2", "abc"))
    assert [is_catalog_secret(k) for k in ("catalog.uri", "catalog.jdbc.password", "s3.token")] == [False, True, False]


def test_the_filesystem_rows_of_config_show(tmp_path: Path) -> None:
    rows = {r["key"]: (r["value"], r["source"]) for r in Settings(warehouse="/w9").shown()}
    assert rows["catalog.metastore"] == ("filesystem", "default")
    assert rows["catalog.warehouse"] == ("/w9", "flag --warehouse")
    assert not [k for k in rows if k.startswith("catalog.") and k not in ("catalog.metastore", "catalog.warehouse")]
