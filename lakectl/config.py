"""Settings: command-line flags > LAKECTL_* environment > profile > TOML config file > defaults.

The config file is the first of: ``--config PATH``, ``$LAKECTL_CONFIG``, ``./lakectl.toml``,
``~/.config/lakectl/config.toml``. Keys at the top level: ``warehouse``, ``format``,
``engine``, ``profile`` (the profile used when neither ``--profile`` nor ``$LAKECTL_PROFILE``
names one); under ``[spark]``: ``master``, ``threshold`` (e.g. "256mb") and a ``[spark.conf]``
table of Spark settings; under ``[s3]``: ``endpoint``, ``region``, ``access-key-id``,
``secret-access-key``, ``session-token``, ``path-style``, ``conditional-put``, ``lock-file``
(each also ``LAKECTL_S3_<KEY>`` in the environment; unset credentials fall back to the
standard AWS variables and files). A ``[profiles.NAME]`` table holds the same keys (with
``[profiles.NAME.spark]``, ``[profiles.NAME.s3]``); the selected profile's values win over the
top-level ones. ``[maintain]`` and ``[maintain.tables."PATTERN"]`` hold ``lakectl maintain``'s
policy (``lakectl.maintain_policy``). ``lakectl config show`` prints every effective value with where it came from.

``[catalog]`` (and ``[profiles.NAME.catalog]``) holds the Paimon catalog with Paimon's own keys
(``metastore``, ``warehouse``, ``uri``, ``jdbc.user``, ``catalog-key``, ``lock.enabled``, ...;
a dotted key may be written as a nested table or quoted), each key also
``LAKECTL_CATALOG_<KEY>`` in the environment and ``--catalog-option KEY=VALUE`` on the command
line, resolved key by key in the order above (``catalog_settings``). Without any, the catalog
is the filesystem warehouse ``-w`` names, and nothing of ``core.catalog`` is imported.

A config file that does not parse, or holds an unknown key or a value of the wrong type, is a
usage error naming the file, the line and the key. Relative paths in it (``warehouse``,
``s3.lock-file``) are relative to the file's directory. Secrets (the S3 credentials) are masked
wherever settings are shown and never logged.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from core.errors import UsageError
from core.fileio import configure as configure_storage, s3_options
from core.option_parsing import parse_bool, parse_size

if TYPE_CHECKING:
    from core.catalog.base import Catalog, CatalogConfig
    from core.engines import EngineSettings, ProgressCallback
    from core.table import Table

DEFAULT_WAREHOUSE = "./warehouse"
FORMATS = ("table", "json", "jsonl", "csv")
S3_KEYS = ("endpoint", "region", "access-key-id", "secret-access-key", "session-token", "path-style",
           "conditional-put", "lock-file", "connect-timeout", "retries")
SECRET_KEYS = frozenset({"s3.access-key-id", "s3.secret-access-key", "s3.session-token"})
# Paimon's catalog keys lakectl knows (``[catalog]``, LAKECTL_CATALOG_<KEY>, --catalog-option);
# keys under these prefixes pass through as given (JDBC connection properties, REST headers).
CATALOG_KEYS = ("metastore", "warehouse", "uri", "catalog-key", "jdbc.user", "jdbc.password", "lock.enabled",
                "lock-acquire-timeout", "lock-check-max-sleep", "lock-key-max-length", "lock.type",
                "sync-all-properties", "token.provider", "token", "data-token.enabled", "prefix")
CATALOG_PREFIXES = ("jdbc.", "header.", "rest.", "dlf.")
# Named like a secret but not one: shown as they are.
_NOT_SECRET = frozenset({"catalog.token.provider", "catalog.data-token.enabled"})
MASK = "****"
PATH_KEYS = frozenset({"warehouse", "s3.lock-file"})  # local paths: relative to the config file
USER_CONFIG = "~/.config/lakectl/config.toml"

# What a config table may hold: key -> accepted Python types (after TOML parsing).
_SCALAR = (str, int, float, bool)
_SPARK_SCHEMA: dict[str, tuple[type, ...]] = {"master": (str,), "threshold": (str, int), "conf": (dict,)}
_S3_SCHEMA: dict[str, tuple[type, ...]] = {
    k: (str, bool) if k in ("path-style", "conditional-put") else (str, int, float) if k == "connect-timeout"
    else (str, int) if k == "retries" else (str,) for k in S3_KEYS}
_SETTINGS_SCHEMA: dict[str, tuple[type, ...]] = {"warehouse": (str,), "format": (str,), "engine": (str,),
                                                 "spark": (dict,), "s3": (dict,), "catalog": (dict,)}
_TOP_SCHEMA: dict[str, tuple[type, ...]] = {**_SETTINGS_SCHEMA, "profile": (str,), "profiles": (dict,),
                                             "maintain": (dict,)}  # checked by lakectl.maintain_policy
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "a table"}


@dataclass(frozen=True, slots=True)
class Key:
    """One setting: its dotted name in the config file, its variable, its flag, its default."""

    name: str
    env: str | None
    flag: str | None = None
    default: Any = None

    @property
    def secret(self) -> bool:
        return self.name in SECRET_KEYS or is_catalog_secret(self.name)


KEYS: tuple[Key, ...] = (
    Key("warehouse", "LAKECTL_WAREHOUSE", "--warehouse", DEFAULT_WAREHOUSE),
    Key("format", "LAKECTL_FORMAT", "--format", "table"),
    Key("engine", "LAKECTL_ENGINE", "--engine", "auto"),
    Key("spark.master", "LAKECTL_SPARK_MASTER", "--master", None),
    Key("spark.threshold", "LAKECTL_SPARK_THRESHOLD", None, "256mb"),
    *(Key(f"s3.{k}", "LAKECTL_S3_" + k.upper().replace("-", "_")) for k in S3_KEYS),
)
_KEY = {k.name: k for k in KEYS}


def catalog_env(key: str) -> str:
    """The variable of a catalog key: ``lock.enabled`` -> ``LAKECTL_CATALOG_LOCK_ENABLED``."""
    return "LAKECTL_CATALOG_" + re.sub(r"[.\-]", "_", key).upper()


def is_catalog_secret(name: str) -> bool:
    """A catalog key whose value is never shown: ``jdbc.password``, ``token`` and anything
    named like a password, secret or token (``token.provider``, ``data-token.enabled`` are not)."""
    if not name.startswith("catalog.") or name in _NOT_SECRET:
        return False
    return any(word in name[len("catalog."):].lower() for word in ("password", "secret", "token"))


def _catalog_key_known(key: str) -> bool:
    return key in CATALOG_KEYS or (key.startswith(CATALOG_PREFIXES) and len(key) > key.index(".") + 1)


def flatten_catalog(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"lock": {"enabled": True}}`` (TOML's reading of ``lock.enabled = true``) ->
    ``{"lock.enabled": True}``; quoted dotted keys stay as they are."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten_catalog(value, f"{name}."))
        else:
            out[name] = value
    return out


@dataclass(frozen=True, slots=True)
class Resolved:
    """A setting's effective value and where it came from (``flag --warehouse``, ``env
    LAKECTL_WAREHOUSE``, ``profile prod``, ``config file``, ``default``)."""

    value: Any
    source: str


def parse_pairs(items: Iterable[str], *, flag: str, shape: str = "KEY=VALUE",
                shown: str | None = None) -> dict[str, str]:
    """``["k=v", ...]`` -> {"k": "v"}; a malformed item is a usage error naming the flag."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {shown or item!r} must be {shape}")
        out[key.strip()] = value.strip()
    return out


# ---- the config file -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ConfigFile:
    path: Path
    data: dict[str, Any]
    text: str
    source: str  # how it was found: flag --config, env LAKECTL_CONFIG, working directory, user config

    def line_of(self, keys: tuple[str, ...]) -> int | None:
        """The line defining the dotted key ``keys`` (or its table header), if a plain scan finds it."""
        return _line_of(self.text, keys)

    def error(self, keys: tuple[str, ...], message: str) -> UsageError:
        line = self.line_of(keys)
        where = f"config file {self.path}" + (f", line {line}" if line else "")
        return UsageError(f"{where}: {message}")


PARTITION_SHAPE = "COLUMN=VALUE[,COLUMN=VALUE...]"


def parse_partition(text: str) -> dict[str, str]:
    """``dt=2024-01-01,hr=10`` -> {"dt": "2024-01-01", "hr": "10"} (values cannot hold commas or
    semicolons). One partition only: Paimon's ``;``-separated list is refused here (``write
    --partition`` replaces exactly one), and a column named twice is refused rather than letting
    the last value win, which would silently act on a partition the user did not mean."""
    if ";" in text:
        raise UsageError(f"--partition {text!r} names several partitions (;); this option takes one, {PARTITION_SHAPE}")
    return _one_partition(text, shown=text)


def parse_partitions(texts: Iterable[str]) -> list[dict[str, str]]:
    """Every partition of repeated ``--partition`` options, each of which may list several in
    Paimon's procedure form ``dt=1,hh=2;dt=3,hh=4``. Empty items (a trailing ``;``) are skipped;
    an option with no partition at all is a usage error."""
    out: list[dict[str, str]] = []
    for text in texts:
        specs = [item for item in text.split(";") if item.strip()]
        if not specs:
            raise UsageError(f"--partition {text!r} must be {PARTITION_SHAPE}[;{PARTITION_SHAPE}...]")
        out.extend(_one_partition(spec, shown=text) for spec in specs)
    return out


def _one_partition(spec: str, *, shown: str) -> dict[str, str]:
    items = spec.split(",")
    out = parse_pairs(items, flag="--partition", shape=PARTITION_SHAPE, shown=shown)
    if len(out) < len(items):
        columns = [item.partition("=")[0].strip() for item in items]
        twice = next(c for c in columns if columns.count(c) > 1)
        raise UsageError(f"--partition {shown!r} names column {twice} twice")
    return out


def config_path(explicit: str | None) -> tuple[Path, str] | None:
    """The config file to read and how it was found, or None."""
    for candidate, source in ((explicit, "flag --config"), (os.environ.get("LAKECTL_CONFIG"), "env LAKECTL_CONFIG")):
        if candidate:
            path = Path(candidate).expanduser()
            if not path.is_file():
                raise UsageError(f"config file {path} does not exist")
            return path, source
    for path, source in ((Path("lakectl.toml"), "working directory"), (Path(USER_CONFIG).expanduser(), "user config")):
        if path.is_file():
            return path.absolute(), source
    return None


_TOML_POSITION = r"\s*\(at line (\d+), column (\d+)\)\s*$"


def load_config_file(path: Path, source: str = "flag --config") -> ConfigFile:
    """Read, parse and check a config file."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise UsageError(f"cannot read config file {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise UsageError(f"config file {path} is not UTF-8 text: {e.reason} at byte {e.start}") from e
    if sys.version_info >= (3, 11):  # imported here: most runs read no config file
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        message = str(e)
        m = re.search(_TOML_POSITION, message)
        if m:  # Python < 3.14 keeps the position only in the message
            raise UsageError(f"config file {path}, line {m.group(1)}, column {m.group(2)}: "
                             f"{message[:m.start()]}") from e
        raise UsageError(f"config file {path}: {message}") from e
    cf = ConfigFile(path, data, text, source)
    _check_settings(cf, data, (), top=True)
    return cf


def _check_table(cf: ConfigFile, table: dict[str, Any], prefix: tuple[str, ...],
                 schema: dict[str, tuple[type, ...]]) -> None:
    where = f"in [{'.'.join(prefix)}]" if prefix else "at the top level"
    for key, value in table.items():
        keys = (*prefix, key)
        if key not in schema:
            raise cf.error(keys, f"unknown key {'.'.join(keys)!r} {where}; known: {', '.join(schema)}")
        types = schema[key]
        # TOML booleans are not integers here, whatever Python's bool subclassing says.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            wanted = " or ".join(_TYPE_NAMES[t] for t in types)
            secret = ".".join(keys[-2:]) in SECRET_KEYS  # a credential's value is never printed
            got = f"a value of type {type(value).__name__}" if secret else _describe(value)
            raise cf.error(keys, f"key {'.'.join(keys)!r} must be {wanted}, not {got}")


def _check_settings(cf: ConfigFile, table: dict[str, Any], prefix: tuple[str, ...], *, top: bool) -> None:
    _check_table(cf, table, prefix, _TOP_SCHEMA if top else _SETTINGS_SCHEMA)
    from core.engines import ENGINES  # a config file's check only: listings need no engine

    for key, allowed in (("format", FORMATS), ("engine", ENGINES)):
        if key in table and table[key] not in allowed:
            keys = (*prefix, key)
            raise cf.error(keys, f"key {'.'.join(keys)!r} is {table[key]!r}; must be one of {', '.join(allowed)}")
    spark = table.get("spark", {})
    _check_table(cf, spark, (*prefix, "spark"), _SPARK_SCHEMA)
    for name, value in spark.get("conf", {}).items():
        if not isinstance(value, _SCALAR):
            keys = (*prefix, "spark", "conf", name)
            raise cf.error(keys, f"key {'.'.join(keys)!r} must be a string, number or boolean, not {_describe(value)}")
    _check_table(cf, table.get("s3", {}), (*prefix, "s3"), _S3_SCHEMA)
    _check_catalog(cf, table.get("catalog", {}), (*prefix, "catalog"))
    if top:
        from lakectl.maintain_policy import check_section

        check_section(cf, table.get("maintain", {}))
        for name, profile in table.get("profiles", {}).items():
            if not isinstance(profile, dict):
                raise cf.error(("profiles", name), f"key 'profiles.{name}' must be a table ([profiles.{name}]), "
                                                   f"not {_describe(profile)}")
            _check_settings(cf, profile, ("profiles", name), top=False)


def _check_catalog(cf: ConfigFile, table: dict[str, Any], prefix: tuple[str, ...]) -> None:
    """Catalog keys are Paimon's: the known ones and the pass-through families, each a string,
    number or boolean; ``metastore`` one lakectl speaks."""
    for key, value in flatten_catalog(table).items():
        keys = (*prefix, *key.split("."))
        dotted = ".".join((*prefix, key))
        if not _catalog_key_known(key):
            known = ", ".join(CATALOG_KEYS) + ", " + ", ".join(f"{p}*" for p in CATALOG_PREFIXES)
            raise cf.error(keys, f"unknown key {dotted!r} in [{'.'.join(prefix)}]; known: {known}")
        if not isinstance(value, _SCALAR):
            got = f"a value of type {type(value).__name__}" if is_catalog_secret(f"catalog.{key}") \
                else _describe(value)
            raise cf.error(keys, f"key {dotted!r} must be a string, number or boolean, not {got}")
        if key == "metastore":
            from core.catalog.base import METASTORES, refusal  # a config file naming a catalog only

            if not isinstance(value, str) or value.strip().lower() not in METASTORES:
                raise cf.error(keys, f"key {dotted!r}: {refusal(str(value))}")


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return f"the {'integer' if isinstance(value, int) else 'number'} {value!r}"


# Patterns compiled on first use (re caches them): most commands read no config file.
_HEADER = r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$"
_ASSIGN = r"""^\s*((?:"[^"]*"|'[^']*'|[A-Za-z0-9_\-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[A-Za-z0-9_\-]+))*)\s*="""
_KEY_PART = r"""\s*("[^"]*"|'[^']*'|[A-Za-z0-9_\-]+)\s*(?:\.|$)"""


def _split_key(text: str) -> tuple[str, ...]:
    return tuple(p.strip("\"'") for p in re.findall(_KEY_PART, text))


def _line_of(text: str, keys: tuple[str, ...]) -> int | None:
    """Line number (1-based) where the dotted key is assigned, else where its table starts."""
    table: tuple[str, ...] = ()
    header_line = None
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(_HEADER, line)
        if header:
            table = _split_key(header.group(1))
            if table == keys and header_line is None:
                header_line = number
            continue
        assign = re.match(_ASSIGN, line)
        if assign and (*table, *_split_key(assign.group(1))) == keys:
            return number
    return header_line


# ---- settings --------------------------------------------------------------------------------
@dataclass(slots=True)
class Settings:
    """What the root callback gathered; commands read it through the ``resolve_*`` methods."""

    warehouse: str | None = None
    format: str | None = None
    verbose: int = 0
    config_file: str | None = None
    engine: str | None = None
    master: str | None = None
    spark_conf: list[str] = field(default_factory=list)
    profile: str | None = None
    quiet: bool = False
    catalog_options: list[str] = field(default_factory=list)  # --catalog-option KEY=VALUE
    _file: ConfigFile | None = field(default=None, repr=False)
    _loaded: bool = field(default=False, repr=False)
    _catalogs: dict[Any, Any] = field(default_factory=dict, repr=False)  # opened, by config

    # ---- sources ------------------------------------------------------------------------------
    @property
    def file(self) -> ConfigFile | None:
        if not self._loaded:
            found = config_path(self.config_file)
            self._file = load_config_file(*found) if found else None
            self._loaded = True
        return self._file

    @property
    def config(self) -> dict[str, Any]:
        """The parsed config file (empty without one)."""
        return self.file.data if self.file else {}

    def selected_profile(self) -> Resolved:
        if self.profile:
            return Resolved(self.profile, "flag --profile")
        if os.environ.get("LAKECTL_PROFILE"):
            return Resolved(os.environ["LAKECTL_PROFILE"], "env LAKECTL_PROFILE")
        if self.config.get("profile"):
            return Resolved(self.config["profile"], "config file")
        return Resolved(None, "default")

    def profile_table(self) -> dict[str, Any]:
        name = self.selected_profile().value
        if name is None:
            return {}
        if self.file is None:
            raise UsageError(f"profile {name!r}: no config file (give --config or LAKECTL_CONFIG, or write "
                             f"./lakectl.toml or {USER_CONFIG})")
        profiles = self.config.get("profiles", {})
        if name not in profiles:
            known = ", ".join(sorted(profiles)) or "none"
            raise UsageError(f"profile {name!r} is not in config file {self.file.path} (profiles: {known})")
        return profiles[name]

    def _layers(self) -> list[tuple[str, dict[str, Any]]]:
        name = self.selected_profile().value
        layers = [(f"profile {name}", self.profile_table())] if name else []
        return layers + [("config file", self.config)]

    def _flags(self) -> dict[str, Any]:
        return {"warehouse": self.warehouse, "format": self.format, "engine": self.engine, "spark.master": self.master}

    def resolve(self, name: str, flag: Any = None) -> Resolved:
        """The value of setting ``name``: a command's own flag > the global flag > environment
        > profile > config file > default."""
        key = _KEY[name]
        for value in (flag, self._flags().get(name)):
            if value is not None and value != "":
                return Resolved(value, f"flag {key.flag}")
        if key.env and os.environ.get(key.env):
            return Resolved(os.environ[key.env], f"env {key.env}")
        path = name.split(".")
        for source, table in self._layers():
            value = _dig(table, path)
            if value is not None:
                if name in PATH_KEYS and isinstance(value, str) and self.file is not None:
                    value = _beside(self.file.path, value)
                return Resolved(value, source)
        return Resolved(key.default, "default")

    def spark_conf_settings(self) -> dict[str, Resolved]:
        """Spark settings: config file < profile < --spark-conf."""
        out: dict[str, Resolved] = {}
        for source, table in reversed(self._layers()):
            for k, v in (_dig(table, ["spark", "conf"]) or {}).items():
                out[str(k)] = Resolved(_text(v), source)
        for k, v in parse_pairs(self.spark_conf, flag="--spark-conf").items():
            out[k] = Resolved(v, "flag --spark-conf")
        return out

    # ---- what commands use ------------------------------------------------------------------
    def resolve_warehouse(self, flag: str | None) -> str:
        """The warehouse URI; also sets the storage defaults (S3 endpoint, credentials) that
        every FileIO of this process starts from."""
        configure_storage("s3", self.s3_options())
        return str(self.resolve("warehouse", flag).value)

    def s3_settings(self) -> dict[str, str]:
        """The ``s3.*`` settings that are set, by key (``endpoint``, ``access-key-id``, ...)."""
        out = {}
        for key in S3_KEYS:
            value = self.resolve(f"s3.{key}").value
            if value is not None:
                out[key] = _text(value)
        return out

    def s3_options(self) -> dict[str, Any]:
        """s3fs options from ``s3_settings``."""
        conf = self.s3_settings()
        flag = {k: parse_bool(conf[k], f"s3 {k}") for k in ("path-style", "conditional-put") if k in conf}
        return s3_options(endpoint=conf.get("endpoint"), region=conf.get("region"),
                          access_key_id=conf.get("access-key-id"), secret_access_key=conf.get("secret-access-key"),
                          session_token=conf.get("session-token"), path_style=flag.get("path-style"),
                          conditional_put=flag.get("conditional-put"), lock_file=conf.get("lock-file"),
                          **_connect_settings(conf))

    def resolve_format(self, flag: str | None) -> str:
        fmt = self.resolve("format", flag)
        if fmt.value not in FORMATS:
            origin = "" if fmt.source.startswith("flag") else f" (from {fmt.source.removeprefix('env ')})"
            scan_only = " (parquet is scan's alone)" if str(fmt.value).strip().lower() == "parquet" else ""
            raise UsageError(f"--format {fmt.value!r}{origin} must be one of {', '.join(FORMATS)}{scan_only}")
        return str(fmt.value)

    def engine_settings(self, progress: ProgressCallback | None = None) -> EngineSettings:
        """--engine/--master/--spark-conf > LAKECTL_ENGINE/LAKECTL_SPARK_MASTER/_THRESHOLD >
        profile > config [spark]."""
        from core.engines import EngineSettings
        from lakectl.heap import keep_freed_memory

        keep_freed_memory()  # a command that asks for its engine is about to move data
        threshold = self.resolve("spark.threshold")
        return EngineSettings(
            engine=str(self.resolve("engine").value),
            master=self.resolve("spark.master").value,
            spark_conf={k: str(r.value) for k, r in self.spark_conf_settings().items()},
            spark_threshold=parse_size(str(threshold.value), "spark threshold"),
            progress=progress,
        )

    # ---- the catalog ----------------------------------------------------------------------------
    def catalog_settings(self) -> dict[str, Resolved]:
        """Each catalog key that is set, with its source: --catalog-option > LAKECTL_CATALOG_<KEY>
        > profile ``[catalog]`` > config file ``[catalog]``; ``metastore`` defaults to
        ``filesystem``. A relative ``warehouse`` or ``jdbc:sqlite:`` path from the config file is
        relative to the file's directory (a REST catalog's ``warehouse`` is a name the server
        serves, never a path: kept as written)."""
        out: dict[str, Resolved] = {}
        from_file: set[str] = set()
        for source, table in reversed(self._layers()):
            for key, value in flatten_catalog(_dig(table, ["catalog"]) or {}).items():
                out[key] = Resolved(_text(value), source)
                from_file.add(key)
        for key in CATALOG_KEYS:
            env = catalog_env(key)
            if os.environ.get(env):
                out[key] = Resolved(os.environ[env], f"env {env}")
        for key, value in parse_pairs(self.catalog_options, flag="--catalog-option").items():
            if not _catalog_key_known(key):
                known = ", ".join(CATALOG_KEYS) + ", " + ", ".join(f"{p}*" for p in CATALOG_PREFIXES)
                raise UsageError(f"--catalog-option {key}: unknown catalog key; known: {known}")
            out[key] = Resolved(value, "flag --catalog-option")
        if "metastore" not in out:
            out["metastore"] = Resolved("filesystem", "default")
        rest = str(out["metastore"].value).strip().lower() == "rest"
        for key in from_file:
            if not out[key].source.startswith(("env ", "flag ")) and not (rest and key == "warehouse"):
                out[key] = Resolved(self._beside_file(key, str(out[key].value)), out[key].source)
        return out

    def _beside_file(self, key: str, value: str) -> str:
        if self.file is None:
            return value
        if key == "warehouse":
            return _beside(self.file.path, value)
        if key == "uri" and value.startswith("jdbc:sqlite:") and not value.startswith("jdbc:sqlite:file:"):
            path = value[len("jdbc:sqlite:"):]
            if path and path != ":memory:":
                return "jdbc:sqlite:" + _beside(self.file.path, path)
        return value

    def metastore(self) -> str:
        """The catalog kind in effect, checked: exit 2 for ``hive`` or an unknown kind."""
        value = str(self.catalog_settings()["metastore"].value).strip().lower()
        if value != "filesystem":
            from core.catalog.base import METASTORES, refusal

            if value not in METASTORES:
                raise UsageError(refusal(value))
        return value

    def _has_catalog(self) -> bool:
        """Whether anything names a catalog: a cheap test, so that a filesystem warehouse's
        commands never compute catalog settings."""
        if self.catalog_options or any(k.startswith("LAKECTL_CATALOG_") for k in os.environ):
            return True
        return any(_dig(table, ["catalog"]) for _, table in self._layers())

    def catalog_config(self, warehouse_flag: str | None = None) -> CatalogConfig:
        """The catalog in effect (``-w``/``warehouse`` fill the ``warehouse`` key when it is not
        given; a ``-w`` given next to a different ``warehouse`` key of a jdbc or rest catalog is
        refused). Raises UsageError for an unsupported kind or a kind's missing key."""
        from core.catalog.base import CatalogConfig

        kind = self.metastore()
        keys = self.catalog_settings()
        options = {k: str(r.value) for k, r in keys.items()}
        options["metastore"] = kind
        resolved = self._catalog_warehouse(kind, keys, warehouse_flag)
        warehouse = None if resolved is None else str(resolved.value)
        if warehouse is not None:
            options["warehouse"] = warehouse
        if kind in ("jdbc", "rest") and not options.get("uri"):
            example = "jdbc:sqlite:/path/catalog.db" if kind == "jdbc" else "http://host:port"
            raise UsageError(f"metastore {kind} needs the catalog key uri ([catalog] uri = ... or "
                             f"--catalog-option uri={example})")
        return CatalogConfig(kind, warehouse, options, self.s3_options() if self._s3_configured() else None)

    def _catalog_warehouse(self, kind: str, keys: dict[str, Resolved], flag: str | None) -> Resolved | None:
        """The catalog's warehouse and its source. Filesystem: ``-w`` > the ``warehouse`` key >
        the warehouse setting. jdbc: the key > the warehouse setting (``-w`` included); a ``-w``
        that differs from the key is refused. rest: the key, else ``-w`` if given."""
        setting = self.resolve("warehouse", flag)
        configure_storage("s3", self.s3_options())  # as resolve_warehouse: every FileIO starts from it
        given = keys.get("warehouse")
        wh_flag = flag or self.warehouse
        if given is None:
            if kind == "rest" and not wh_flag:
                return None
            return Resolved(str(setting.value), setting.source)
        if kind == "filesystem":
            return Resolved(str(setting.value), setting.source) if wh_flag else given
        if wh_flag and wh_flag.rstrip("/") != str(given.value).rstrip("/"):
            raise UsageError(f"--warehouse {wh_flag} differs from the {kind} catalog's warehouse {given.value} "
                             f"({given.source}); give one of them")
        return given

    def _s3_configured(self) -> bool:
        return bool(self.s3_settings())

    def catalog(self, warehouse_flag: str | None = None) -> Catalog | None:
        """The catalog commands go through; None for the filesystem catalog (the default), whose
        tables are found by warehouse path without importing core.catalog. One catalog per
        configuration per process; ``close`` releases them."""
        if not self._has_catalog():
            return None
        config = self.catalog_config(warehouse_flag)
        if config.metastore == "filesystem":
            return None
        key = (config.metastore, config.warehouse, tuple(sorted(config.options.items())))
        if key not in self._catalogs:
            from core.catalog import open_catalog

            self._catalogs[key] = open_catalog(config)
        return self._catalogs[key]

    def any_catalog(self, warehouse_flag: str | None = None) -> Catalog:
        """The catalog in effect, the filesystem one included (listings, drop-database, rename)."""
        catalog = self.catalog(warehouse_flag)
        if catalog is not None:
            return catalog
        from core.catalog.filesystem import FilesystemCatalog
        from core.warehouse import Warehouse

        return FilesystemCatalog.of(Warehouse.open(self.filesystem_warehouse(warehouse_flag)))

    def filesystem_warehouse(self, flag: str | None) -> str:
        """The filesystem catalog's warehouse: ``resolve_warehouse`` unless a ``[catalog]``
        warehouse key applies."""
        if self._has_catalog():
            resolved = self._catalog_warehouse("filesystem", self.catalog_settings(), flag)
            assert resolved is not None
            return str(resolved.value)
        return self.resolve_warehouse(flag)

    def open_table(self, name: str, warehouse_flag: str | None = None, *, branch: str | None = None) -> Table:
        """``Table.open`` of ``name`` through the catalog in effect."""
        from core.table import Table

        catalog = self.catalog(warehouse_flag)
        if catalog is not None:
            return Table.open(name, catalog=catalog, branch=branch)
        return Table.open(name, warehouse=self.filesystem_warehouse(warehouse_flag), branch=branch)

    def locate_table(self, name: str, warehouse_flag: str | None = None) -> Table:
        """``Table.locate`` of ``name`` (it may not exist yet) through the catalog in effect."""
        from core.table import Table

        catalog = self.catalog(warehouse_flag)
        if catalog is not None:
            return Table.locate(name, catalog=catalog)
        return Table.locate(name, warehouse=self.filesystem_warehouse(warehouse_flag))

    def close(self) -> None:
        """Close the catalogs this process opened (their database connections)."""
        catalogs, self._catalogs = list(self._catalogs.values()), {}
        for catalog in catalogs:
            catalog.close()

    def catalog_shown(self, warehouse_flag: str | None = None) -> list[dict[str, Any]]:
        """``config show``'s catalog rows: the kind, the warehouse, then every key set, secrets masked."""
        keys = self.catalog_settings()
        kind = self.metastore()
        rows = [{"key": "catalog.metastore", "value": kind, "source": keys["metastore"].source}]
        warehouse = self._catalog_warehouse(kind, keys, warehouse_flag)
        if warehouse is not None:
            rows.append({"key": "catalog.warehouse", "value": warehouse.value, "source": warehouse.source})
        for key in sorted(k for k in keys if k not in ("metastore", "warehouse")):
            r = keys[key]
            name = f"catalog.{key}"
            rows.append({"key": name, "value": MASK if is_catalog_secret(name) and r.value != "" else r.value,
                         "source": r.source})
        return rows

    def shown(self, warehouse_flag: str | None = None) -> list[dict[str, Any]]:
        """Every effective setting with its source, secrets masked (``lakectl config show``)."""
        cf = self.file
        rows = [{"key": "config-file", "value": str(cf.path) if cf else None, "source": cf.source if cf else "none"}]
        profile = self.selected_profile()
        self.profile_table()  # a profile that does not exist is an error here too
        rows.append({"key": "profile", "value": profile.value, "source": profile.source})
        for key in KEYS:
            r = self.resolve(key.name)
            value = MASK if key.secret and r.value not in (None, "") else r.value
            rows.append({"key": key.name, "value": None if value is None else _text(value), "source": r.source})
            if key.name == "spark.threshold":
                for name, conf in sorted(self.spark_conf_settings().items()):
                    rows.append({"key": f"spark.conf.{name}", "value": conf.value, "source": conf.source})
        return rows + self.catalog_shown(warehouse_flag)


def _beside(config_file: Path, value: str) -> str:
    """A path from a config file, relative to that file's directory (not the current one, which
    for a cron job is anywhere); URIs and absolute paths as written, ``~`` expanded."""
    if "://" in value:
        return value
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    return os.path.normpath(config_file.absolute().parent / path)


def _dig(table: dict[str, Any], path: list[str]) -> Any:
    value: Any = table
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _text(value: Any) -> str:
    """A config value as the text the environment would hold (TOML true -> "true")."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _connect_settings(conf: dict[str, str]) -> dict[str, Any]:
    """s3.connect-timeout (seconds > 0) and s3.retries (an integer >= 0), when set."""
    out: dict[str, Any] = {}
    if "connect-timeout" in conf:
        try:
            out["connect_timeout"] = float(conf["connect-timeout"])
        except ValueError:
            out["connect_timeout"] = -1.0
        if not out["connect_timeout"] > 0:
            raise UsageError(f"s3 connect-timeout {conf['connect-timeout']!r} must be a number of seconds above 0")
    if "retries" in conf:
        if not conf["retries"].isdigit():
            raise UsageError(f"s3 retries {conf['retries']!r} must be an integer >= 0")
        out["retries"] = int(conf["retries"])
    return out
