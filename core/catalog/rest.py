"""The REST catalog (Paimon's ``metastore=rest``): a server owns the tables' names and their
latest snapshot; lakectl writes data and manifest files where the server says the table lives,
then asks the server to publish each snapshot.

What the calls are: ``docs/rest-catalog.md``; the HTTP: ``core/catalog/rest_client.py``.

- **Names**: databases and tables are listed, created, dropped and renamed by the server. A
  table's files live at the ``path`` its ``GET .../tables/{table}`` answers (never a path lakectl
  derives); a name the server does not know is not found. Tables named by path are refused:
  a path would bypass the server, which owns the table's snapshots.
- **Creating a table**: the server writes ``schema-0`` itself (``create_table``); lakectl never
  writes it on a REST table.
- **Commits**: ``RestSnapshotCommit.publish`` POSTs the snapshot lakectl built (its manifests
  already written) to ``.../commit`` with the table's uuid and the uuid of the snapshot it was
  planned on (``baseSnapshotUuid``). ``success: false`` is a lost race: ``publish`` answers
  False and ``FileStoreCommit`` plans again on the new latest snapshot, as after losing
  ``snapshot-N`` on a filesystem. It never writes ``snapshot-N`` itself. A server error or a
  broken connection during the POST is an unknown outcome (an ``OSError``: the commit's retry
  first looks for its own snapshot, and deletes nothing).
- **Rewriting the chain**: the protocol has rollback, tag deletion and branch fast-forward
  calls (``rollback_to``, ``delete_tag``, ``fast_forward`` here) but no expiration: the server
  owns the chain. ``rewriting_chain`` therefore never lets a local rewrite run: it refuses
  (exit 2) naming the call the command must go through, or that there is none.

Snapshots lakectl commits through a REST catalog carry a ``uuid`` (as Paimon 2.x writes them),
so that the next commit can name its base to a server that checks it.
"""

from __future__ import annotations

import threading
import time
import uuid as uuid_module
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from core.catalog.base import Catalog, CatalogConfig
from core.catalog.rest_client import (RestAlreadyExists, RestClient, RestNotFound, RestServerError, segment)
from core.errors import (CatalogUnreachableError, CatalogUnsupportedError, LakectlError, NotFoundError,
                         TableExistsError, TableGoneError, UsageError)
from core.fileio import FileIO, storage_defaults
from core.warehouse import DEFAULT_DATABASE, TableLocation, looks_like_path

if TYPE_CHECKING:
    from core.schema import TableSchema

BRANCH_SEPARATOR = "$branch_"  # Java's Identifier: object "t$branch_b" is branch b of table t
_PAGE = 100
# A data token is fetched again this long before it expires (Java and pypaimon keep an hour).
_TOKEN_SAFETY_MILLIS = 3_600_000
# A data token's S3 settings and the names they go by: Paimon's own ``fs.s3.accessKeyId`` etc.
# first, then the Hadoop-style names Paimon's S3 file IOs also take, each under the prefixes
# ``fs.s3.``, ``s3.``, ``s3a.`` and ``fs.s3a.`` (``s3.access-key``, ``fs.s3a.path.style.access``).
_S3_TOKEN_PREFIXES = ("fs.s3.", "s3.", "s3a.", "fs.s3a.")
_S3_TOKEN_NAMES = {
    "key": ("accessKeyId", "access-key", "access.key"),
    "secret": ("accessKeySecret", "secret-key", "secret.key"),
    "token": ("securityToken", "session-token", "session.token", "security-token", "security.token"),
    "endpoint": ("endpoint",),
    "region": ("region", "endpoint.region"),
    "path_style": ("path-style-access", "path.style.access"),
}


class RestUnknownOutcome(OSError):
    """A commit POST whose outcome is unknown (a server error, a connection broken after the
    request was sent): the snapshot may have landed."""


@dataclass(frozen=True)
class RestTable:
    """What ``GET .../tables/{table}`` answered."""

    database: str
    name: str
    path: str
    uuid: str | None
    is_external: bool
    schema_id: int | None


def rest_schema(schema: "TableSchema") -> dict[str, Any]:
    """The spec's Schema of a new table: its fields as a schema file holds them."""
    from core import types as T

    return {"fields": [T.field_to_json(f) for f in schema.fields], "partitionKeys": list(schema.partition_keys),
            "primaryKeys": list(schema.primary_keys), "options": dict(schema.options), "comment": schema.comment}


def rest_schema_change(change: Any) -> dict[str, Any]:
    """One of lakectl's schema changes (``core.evolution``) as the spec's SchemaChange of an
    alterTable request (its ``action`` and fields, as docs/rest-catalog.md lists them)."""
    from core import evolution as E

    column = {"fieldNames": [getattr(change, "name", None)]}
    if isinstance(change, E.SetOption):
        return {"action": "setOption", "key": change.key, "value": change.value}
    if isinstance(change, E.RemoveOption):
        return {"action": "removeOption", "key": change.key}
    if isinstance(change, E.AddColumn):
        move = None
        if change.first:
            move = {"fieldName": change.name, "referenceFieldName": None, "type": "FIRST"}
        elif change.after is not None:
            move = {"fieldName": change.name, "referenceFieldName": change.after, "type": "AFTER"}
        return {"action": "addColumn", **column, "dataType": change.type.to_json(), "comment": change.comment,
                "move": move}
    if isinstance(change, E.DropColumn):
        return {"action": "dropColumn", **column}
    if isinstance(change, E.RenameColumn):
        return {"action": "renameColumn", **column, "newName": change.new_name}
    if isinstance(change, E.UpdateColumnType):
        return {"action": "updateColumnType", **column, "newDataType": change.type.to_json(), "keepNullability": True}
    if isinstance(change, E.UpdateColumnNullability):
        return {"action": "updateColumnNullability", **column, "newNullability": change.nullable}
    if isinstance(change, E.UpdateColumnComment):
        return {"action": "updateColumnComment", **column, "newComment": change.comment}
    raise UsageError(f"schema change {type(change).__name__} has no REST form")


def s3_token_settings(token: dict[str, str]) -> dict[str, str]:
    """The S3 settings a data token carries (``key``, ``secret``, ``token``, ``endpoint``,
    ``region``, ``path_style``), each from the first of its names the token has."""
    out: dict[str, str] = {}
    for setting, names in _S3_TOKEN_NAMES.items():
        for key in (prefix + name for prefix in _S3_TOKEN_PREFIXES for name in names):
            if token.get(key):
                out[setting] = token[key]
                break
    return out


def token_storage_options(options: dict[str, Any], settings: dict[str, str]) -> dict[str, Any]:
    """s3fs ``options`` with a data token's ``settings`` (``s3_token_settings``) put in."""
    out = dict(options)
    if settings.get("key"):
        # The token's credentials replace the configured ones whole: a configured session
        # token would not belong to the token's key.
        for name in ("key", "secret", "token"):
            out.pop(name, None)
            if settings.get(name):
                out[name] = settings[name]
    client = dict(out.get("client_kwargs") or {})
    endpoint = settings.get("endpoint")
    if endpoint:
        # Hadoop's endpoints may omit the scheme; S3A then speaks https.
        client["endpoint_url"] = endpoint if "://" in endpoint else f"https://{endpoint}"
    if settings.get("region"):
        client["region_name"] = settings["region"]
    if client:
        out["client_kwargs"] = client
    if "path_style" in settings:
        config = dict(out.get("config_kwargs") or {})
        # As in Paimon's S3 file IOs, false is virtual-host addressing (the bucket a subdomain
        # of the endpoint); without the key botocore picks (path style on a custom endpoint).
        path_style = settings["path_style"].strip().lower() == "true"
        config["s3"] = {**(config.get("s3") or {}), "addressing_style": "path" if path_style else "virtual"}
        out["config_kwargs"] = config
    return out


class RestCatalog(Catalog):
    kind = "rest"
    server_owns_chain = True

    def __init__(self, config: CatalogConfig, *, client: RestClient | None = None) -> None:
        self.config = config
        uri = config.option("uri")
        if not uri:
            raise UsageError("a REST catalog needs its server's address: catalog option uri=http://HOST:PORT")
        self.warehouse = config.warehouse or config.option("warehouse")
        if not self.warehouse:
            raise UsageError("a REST catalog needs the warehouse name its server serves: catalog option warehouse=NAME")
        provider = config.option("token.provider")
        token = config.option("token")
        if provider is None and token is not None:
            provider = "bear"
        if provider not in (None, "bear"):
            raise UsageError(f"catalog option token.provider={provider!r} is not supported; lakectl sends bearer "
                             "tokens (token.provider=bear with token=...)")
        if provider == "bear" and not token:
            raise UsageError("token.provider=bear needs the catalog option token=...")
        timeout = config.option("rest.timeout-seconds")
        self.client = client or RestClient(uri, token=token, timeout=float(timeout) if timeout else 30.0)
        self._merged: dict[str, str] | None = None
        self._lock = threading.Lock()
        self._tokens: dict[tuple[str, str], tuple[dict[str, str], int | None]] = {}

    # ---- config -------------------------------------------------------------------------
    @property
    def options(self) -> dict[str, str]:
        """The catalog's options merged with the server's: its defaults, then the user's
        options, then its overrides (which win)."""
        with self._lock:
            if self._merged is None:
                answer = self.client.request("GET", "/v1/config", operation="getConfig",
                                             query={"warehouse": self.warehouse}) or {}
                merged = {k: str(v) for k, v in (answer.get("defaults") or {}).items() if v is not None}
                merged.update(self.config.options)
                merged.update({k: str(v) for k, v in (answer.get("overrides") or {}).items() if v is not None})
                self._merged = merged
            return self._merged

    def _base(self) -> str:
        prefix = self.options.get("prefix")
        return f"/v1/{segment(prefix)}" if prefix else "/v1"

    def _db_path(self, db: str) -> str:
        return f"{self._base()}/databases/{segment(db)}"

    def _table_path(self, db: str, table: str) -> str:
        return f"{self._db_path(db)}/tables/{segment(table)}"

    def _paged(self, path: str, key: str, operation: str) -> list[Any]:
        out: list[Any] = []
        token: str | None = None
        while True:
            query = {"maxResults": str(_PAGE)}
            if token:
                query["pageToken"] = token
            answer = self.client.request("GET", path, operation=operation, query=query) or {}
            page = answer.get(key) or []
            out.extend(page)
            token = answer.get("nextPageToken")
            if not token or not page:
                return out

    @property
    def warehouse_uri(self) -> str:
        return f"{self.client.uri} (warehouse {self.warehouse})"

    # ---- names --------------------------------------------------------------------------
    @staticmethod
    def split_name(name: str) -> tuple[str, str]:
        if looks_like_path(name):
            raise UsageError(f"{name} is a path; a REST catalog names its tables DB.TABLE (a path would bypass "
                             "the server, which owns the table's snapshots)")
        parts = name.split(".")
        if len(parts) == 1:
            parts = [DEFAULT_DATABASE, parts[0]]
        if len(parts) != 2 or not all(parts):
            raise UsageError(f"table name {name!r} must be DB.TABLE")
        return parts[0], parts[1]

    def get_table(self, db: str, table: str) -> RestTable:
        try:
            answer = self.client.request("GET", self._table_path(db, table), operation="getTable") or {}
        except RestNotFound as e:
            raise NotFoundError(f"table {db}.{table} does not exist in the REST catalog at {self.client.uri}") from e
        path = answer.get("path")
        if not path:
            raise RestServerError(f"REST catalog at {self.client.uri} answered getTable for {db}.{table} without "
                                  "the table's path")
        schema_id = answer.get("schemaId")
        return RestTable(db, table, str(path), None if answer.get("id") is None else str(answer["id"]),
                         bool(answer.get("isExternal")), None if schema_id is None else int(schema_id))

    def table_exists(self, name: str) -> bool:
        db, table = self.split_name(name)
        try:
            self.get_table(db, table)
        except NotFoundError:
            return False
        return True

    def locate(self, name: str, *, must_exist: bool = True) -> TableLocation:
        """The table's location as the server answers it. A name the server does not know is
        NotFoundError, or with ``must_exist=False`` an unplaced location (``placed=False``: a
        REST table has no path before the server creates it, ``core.ops.create``)."""
        db, table = self.split_name(name)
        try:
            info = self.get_table(db, table)
        except NotFoundError:
            if must_exist:
                raise
            return TableLocation(f"{db}.{table}", f"<not yet created by {self.client.uri}>", FileIO.for_uri("file"),
                                 catalog=self, placed=False)
        file_io = FileIO.for_uri(info.path, self._storage_options(db, table, info.path))
        return TableLocation(f"{db}.{table}", file_io.normalize(info.path), file_io, catalog=self)

    def _storage_options(self, db: str, table: str, path: str) -> dict[str, Any] | None:
        base = self.config.storage_options
        if "://" not in path or path.startswith("file://") or not self._data_token_enabled():
            return base
        settings = s3_token_settings(self.data_token(db, table))
        if not settings:
            return base
        # The token's settings go over the process's S3 defaults (lakectl's [s3] config), not
        # in place of them: a client_kwargs or config_kwargs of the token's alone would drop
        # the config's timeouts, retries and addressing.
        return token_storage_options({**storage_defaults("s3"), **(base or {})}, settings)

    def _data_token_enabled(self) -> bool:
        value = self.options.get("data-token.enabled", "false").strip().lower()
        if value not in ("true", "false"):
            raise UsageError(f"catalog option data-token.enabled={value!r} must be true or false")
        return value == "true"

    def data_token(self, db: str, table: str) -> dict[str, str]:
        """The table's data token (``GET .../token``), fetched again an hour before it expires."""
        now = int(time.time() * 1000)
        cached = self._tokens.get((db, table))
        if cached is not None and (cached[1] is None or cached[1] - now > _TOKEN_SAFETY_MILLIS):
            return cached[0]
        answer = self.client.request("GET", self._table_path(db, table) + "/token", operation="getTableToken") or {}
        token = {str(k): str(v) for k, v in (answer.get("token") or {}).items()}
        expires = answer.get("expiresAtMillis", answer.get("expiresAt"))
        self._tokens[(db, table)] = (token, None if expires is None else int(expires))
        return token

    def databases(self) -> list[str]:
        return sorted(self._paged(f"{self._base()}/databases", "databases", "listDatabases"))

    def tables(self, db: str) -> list[str]:
        try:
            return sorted(self._paged(f"{self._db_path(db)}/tables", "tables", "listTables"))
        except RestNotFound as e:
            raise NotFoundError(f"database {db} does not exist in the REST catalog at {self.client.uri}") from e

    def database_exists(self, db: str) -> bool:
        try:
            self.client.request("GET", self._db_path(db), operation="getDatabase")
        except RestNotFound:
            return False
        return True

    def create_database(self, db: str, *, properties: dict[str, str] | None = None,
                        if_not_exists: bool = False) -> None:
        try:
            self.client.request("POST", f"{self._base()}/databases", operation="createDatabase",
                                body={"name": db, "options": dict(properties or {})})
        except RestAlreadyExists:
            if not if_not_exists:
                raise LakectlError(f"database {db} already exists in the REST catalog at {self.client.uri}") from None

    def drop_database(self, db: str) -> None:
        try:
            self.client.request("DELETE", self._db_path(db), operation="dropDatabase")
        except RestNotFound as e:
            raise NotFoundError(f"database {db} does not exist in the REST catalog at {self.client.uri}") from e

    def create_table(self, name: str, schema: "TableSchema | dict[str, Any]", *,
                     if_not_exists: bool = False) -> TableLocation:
        """Create the table on the server, which writes its ``schema-0``; its location after.

        ``schema``: lakectl's new table schema, or the spec's Schema as a dict. A missing
        database is created first, as lakectl's create makes a database directory.
        """
        db, table = self.split_name(name)
        body = {"identifier": {"database": db, "object": table},
                "schema": schema if isinstance(schema, dict) else rest_schema(schema)}
        for attempt in range(2):
            try:
                self.client.request("POST", f"{self._db_path(db)}/tables", operation="createTable", body=body)
                break
            except RestAlreadyExists:
                if not if_not_exists:
                    raise TableExistsError(f"table {db}.{table} already exists in the REST catalog at "
                                           f"{self.client.uri}") from None
                break
            except RestNotFound as e:
                if attempt or e.resource_type not in (None, "DATABASE"):
                    raise
                self.create_database(db, if_not_exists=True)
        return self.locate(f"{db}.{table}")

    def alter_table(self, name: str, changes: list[Any], *, branch: str | None = None) -> None:
        """``POST .../tables/{table}`` with the changes: the server writes the next schema."""
        db, table = self.split_name(name)
        table = self.object_name(table, branch)
        try:
            self.client.request("POST", self._table_path(db, table), operation="alterTable",
                                body={"changes": [rest_schema_change(c) for c in changes]})
        except RestNotFound as e:
            raise NotFoundError(f"table {db}.{table} does not exist in the REST catalog at {self.client.uri}") from e

    def register_table(self, location: TableLocation) -> None:
        """The server registers a table as it creates it (``create_table``); here only a check
        that it did."""
        db, table = self.split_name(location.name)
        self.get_table(db, table)

    def unregister_table(self, location: TableLocation) -> None:
        db, table = self.split_name(location.name)
        try:
            self.client.request("DELETE", self._table_path(db, table), operation="dropTable")
        except RestNotFound as e:
            raise NotFoundError(f"table {db}.{table} does not exist in the REST catalog at {self.client.uri}") from e

    def rename_table(self, old: TableLocation, new: TableLocation | str) -> None:
        """The server renames (and moves the files if it keeps them under the name); the new
        name's location is asked of the server afterwards."""
        src = self.split_name(old.name)
        dst = self.split_name(new if isinstance(new, str) else new.name)
        try:
            self.client.request("POST", f"{self._base()}/tables/rename", operation="renameTable",
                                body={"source": {"database": src[0], "object": src[1]},
                                      "destination": {"database": dst[0], "object": dst[1]}})
        except RestNotFound as e:
            raise NotFoundError(f"table {old.name} does not exist in the REST catalog at {self.client.uri}") from e
        except RestAlreadyExists:
            raise TableExistsError(f"table {dst[0]}.{dst[1]} already exists in the REST catalog at "
                                   f"{self.client.uri}") from None

    def check_registered(self, location: TableLocation, *, has_files: bool) -> None:
        pass  # a REST location comes from the server's answer: it is registered by construction

    def snapshot_commit(self, location: TableLocation) -> "RestSnapshotCommit":
        db, table = self.split_name(location.name)
        return RestSnapshotCommit(self, db, table)

    # ---- the chain-rewriting calls the protocol has ----------------------------------------
    @staticmethod
    def object_name(table: str, branch: str | None) -> str:
        """The table object a call names: ``t``, or ``t$branch_b`` for branch b (Java's Identifier)."""
        return table if branch in (None, "main") else f"{table}{BRANCH_SEPARATOR}{branch}"

    def rollback_to(self, name: str, *, snapshot_id: int | None = None, tag: str | None = None,
                    from_snapshot: int | None = None, branch: str | None = None) -> None:
        """``POST .../rollback`` to a snapshot or a tag; ``from_snapshot``: only while it is still
        the latest (the server refuses otherwise)."""
        db, table = self.split_name(name)
        table = self.object_name(table, branch)
        if (snapshot_id is None) == (tag is None):
            raise UsageError("rollback takes a snapshot id or a tag")
        instant = {"type": "snapshot", "snapshotId": snapshot_id} if tag is None else {"type": "tag", "tagName": tag}
        try:
            self.client.request("POST", self._table_path(db, table) + "/rollback", operation="rollbackTable",
                                body={"instant": instant, "fromSnapshot": from_snapshot})
        except RestNotFound as e:
            what = {"SNAPSHOT": f"snapshot {snapshot_id}", "TAG": f"tag {tag}"}.get(e.resource_type or "",
                                                                                   f"table {db}.{table}")
            raise NotFoundError(f"{what} does not exist (REST catalog at {self.client.uri})") from e

    def list_tags(self, name: str) -> list[str]:
        db, table = self.split_name(name)
        return sorted(self._paged(self._table_path(db, table) + "/tags", "tags", "listTags"))

    def get_tag(self, name: str, tag: str) -> dict[str, Any]:
        db, table = self.split_name(name)
        try:
            return self.client.request("GET", f"{self._table_path(db, table)}/tags/{segment(tag)}",
                                       operation="getTag") or {}
        except RestNotFound as e:
            raise NotFoundError(f"tag {tag} of {db}.{table} does not exist (REST catalog at {self.client.uri})") from e

    def create_tag(self, name: str, tag: str, *, snapshot_id: int | None = None,
                   time_retained: str | None = None, if_not_exists: bool = False, branch: str | None = None) -> None:
        from core.errors import TagExistsError

        db, table = self.split_name(name)
        table = self.object_name(table, branch)
        try:
            self.client.request("POST", self._table_path(db, table) + "/tags", operation="createTag",
                                body={"tagName": tag, "snapshotId": snapshot_id, "timeRetained": time_retained,
                                      "ignoreIfExists": if_not_exists})
        except RestAlreadyExists:
            if not if_not_exists:
                raise TagExistsError(f"tag {tag} of {db}.{table} already exists") from None
        except RestNotFound as e:
            what = f"snapshot {snapshot_id}" if e.resource_type == "SNAPSHOT" else f"table {db}.{table}"
            raise NotFoundError(f"{what} does not exist (REST catalog at {self.client.uri})") from e

    def delete_tag(self, name: str, tag: str, *, branch: str | None = None) -> None:
        db, table = self.split_name(name)
        table = self.object_name(table, branch)
        try:
            self.client.request("DELETE", f"{self._table_path(db, table)}/tags/{segment(tag)}", operation="deleteTag")
        except RestNotFound as e:
            raise NotFoundError(f"tag {tag} of {db}.{table} does not exist (REST catalog at {self.client.uri})") from e

    def list_branches(self, name: str) -> list[str]:
        db, table = self.split_name(name)
        answer = self.client.request("GET", self._table_path(db, table) + "/branches", operation="listBranches") or {}
        return sorted(answer.get("branches") or [])

    def create_branch(self, name: str, branch: str, *, from_tag: str | None = None) -> None:
        from core.errors import BranchExistsError

        db, table = self.split_name(name)
        try:
            self.client.request("POST", self._table_path(db, table) + "/branches", operation="createBranch",
                                body={"branch": branch, "fromTag": from_tag})
        except RestAlreadyExists:
            raise BranchExistsError(f"branch {branch} of {db}.{table} already exists") from None
        except RestNotFound as e:
            what = f"tag {from_tag}" if e.resource_type == "TAG" else f"table {db}.{table}"
            raise NotFoundError(f"{what} does not exist (REST catalog at {self.client.uri})") from e

    def drop_branch(self, name: str, branch: str) -> None:
        db, table = self.split_name(name)
        try:
            self.client.request("DELETE", f"{self._table_path(db, table)}/branches/{segment(branch)}",
                                operation="dropBranch")
        except RestNotFound as e:
            raise NotFoundError(f"branch {branch} of {db}.{table} does not exist "
                                f"(REST catalog at {self.client.uri})") from e

    def rename_branch(self, name: str, branch: str, new: str) -> None:
        """``POST .../branches/{branch}/rename`` with ``toBranch``: the server moves the branch."""
        from core.errors import BranchExistsError

        db, table = self.split_name(name)
        try:
            self.client.request("POST", f"{self._table_path(db, table)}/branches/{segment(branch)}/rename",
                                operation="renameBranch", body={"toBranch": new})
        except RestAlreadyExists:
            raise BranchExistsError(f"branch {new} of {db}.{table} already exists; nothing was renamed") from None
        except RestNotFound as e:
            raise NotFoundError(f"branch {branch} of {db}.{table} does not exist "
                                f"(REST catalog at {self.client.uri})") from e

    def fast_forward(self, name: str, branch: str) -> None:
        db, table = self.split_name(name)
        try:
            self.client.request("POST", f"{self._table_path(db, table)}/branches/{segment(branch)}/forward",
                                operation="forwardBranch", body={})
        except RestNotFound as e:
            raise NotFoundError(f"branch {branch} of {db}.{table} does not exist "
                                f"(REST catalog at {self.client.uri})") from e

    def close(self) -> None:
        pass  # urllib keeps no connection between requests


# The call each chain-rewriting command must go through on a REST catalog (no entry: none exists).
_ROUTES = (
    (("rollback", "roll back"), "rollbackTable (POST .../tables/{table}/rollback)"),
    (("delete tag", "expire tags"), "deleteTag (DELETE .../tables/{table}/tags/{tag})"),
    (("fast-forward",), "forwardBranch (POST .../tables/{table}/branches/{branch}/forward)"),
)


def _route(what: str) -> str | None:
    for prefixes, call in _ROUTES:
        if what.startswith(prefixes):
            return call
    return None


def partition_statistics(snapshots: Any, snapshot: Any) -> list[dict[str, Any]]:
    """The commit's ``statistics``: per partition its delta manifest touches, the change in
    records, bytes and files, the newest file's creation time and the bucket count, as Paimon's
    writers report them (``spec`` values as they appear in the partition's directory name)."""
    from core.manifest import ADD, ManifestIO
    from core.schema import SchemaManager

    branch_dir = str(snapshots.dir).rstrip("/").rsplit("/", 1)[0]  # the branch's schemas live here
    parts = branch_dir.rsplit("/", 2)
    # a branch's manifests are the table's (branch/branch-NAME/ holds schemas and snapshots only)
    table_dir = parts[0] if len(parts) == 3 and parts[1] == "branch" and parts[2].startswith("branch-") else branch_dir
    file_io = snapshots.file_io
    manifests = ManifestIO(file_io, table_dir)
    schema = SchemaManager(file_io, branch_dir).schema(snapshot.schema_id)
    metas = manifests.read_manifest_list(snapshot.delta_manifest_list)
    out: dict[bytes, dict[str, Any]] = {}
    for entry in manifests.read_manifests([m.file_name for m in metas]):
        stats = out.get(entry.partition)
        if stats is None:
            spec = {}
            directory = schema.partition_dir(schema.partition_values(entry.partition)) if schema.partition_keys else ""
            for part in filter(None, directory.split("/")):
                key, _, value = part.partition("=")
                spec[key] = value
            stats = out[entry.partition] = {"spec": spec, "recordCount": 0, "fileSizeInBytes": 0, "fileCount": 0,
                                            "lastFileCreationTime": 0, "totalBuckets": entry.total_buckets}
        sign = 1 if entry.kind == ADD else -1
        stats["recordCount"] += sign * entry.file.row_count
        stats["fileSizeInBytes"] += sign * entry.file.file_size
        stats["fileCount"] += sign
        if entry.kind == ADD and entry.file.creation_time:
            stats["lastFileCreationTime"] = max(stats["lastFileCreationTime"], entry.file.creation_time)
    return list(out.values())


class RestSnapshotCommit:
    """The commit side of one REST table (``SnapshotCommit``)."""

    # Read by FileStoreCommit: the server owns the chain (no hint files, no undo, no checks
    # after the publish that read the chain on the filesystem; docs/architecture.md).
    server_owns_chain = True

    def __init__(self, catalog: RestCatalog, db: str, table: str) -> None:
        self.catalog = catalog
        self.db = db
        self.table = table

    def _object(self, snapshots: Any) -> str:
        """The table object a commit names: ``t``, or ``t$branch_b`` for branch b's snapshots."""
        parts = str(snapshots.dir).rstrip("/").split("/")
        if len(parts) >= 3 and parts[-3] == "branch" and parts[-2].startswith("branch-"):
            return f"{self.table}{BRANCH_SEPARATOR}{parts[-2][len('branch-'):]}"
        return self.table

    def publish(self, snapshots: Any, snapshot: Any, *, make_dirs: bool) -> bool:
        """POST the snapshot to the server; False when the server refused it (a lost race)."""
        del make_dirs  # the server creates what it needs
        base_uuid = None
        if snapshot.id > 1:
            try:
                base = snapshots.snapshot(snapshot.id - 1)
            except (NotFoundError, FileNotFoundError):
                base = None  # expired or rolled back meanwhile: the server will judge
            if base is not None:
                base_uuid = base.extra.get("uuid")
        statistics = partition_statistics(snapshots, snapshot)
        body_snapshot = snapshot.to_dict()
        body_snapshot.setdefault("uuid", str(uuid_module.uuid4()))
        table_uuid = self.catalog.get_table(self.db, self.table).uuid
        obj = self._object(snapshots)
        path = f"{self.catalog._db_path(self.db)}/tables/{segment(obj)}/commit"
        try:
            answer = self.catalog.client.request(
                "POST", path, operation="commitTable",
                body={"tableId": table_uuid, "baseSnapshotUuid": base_uuid, "snapshot": body_snapshot,
                      "statistics": statistics}) or {}
        except RestNotFound as e:
            raise TableGoneError(f"table {self.db}.{self.table} is no longer in the REST catalog at "
                                 f"{self.catalog.client.uri} (dropped or renamed while this command ran); "
                                 "nothing was committed") from e
        except (RestServerError, CatalogUnreachableError) as e:
            if isinstance(e, RestServerError) and e.status == 400:
                raise
            raise RestUnknownOutcome(f"commitTable of snapshot {snapshot.id}: {e}") from e
        return bool(answer.get("success"))

    @contextmanager
    def rewriting_chain(self, what: str) -> Iterator[None]:
        call = _route(what)
        name = f"{self.db}.{self.table}"
        if call is None:
            raise CatalogUnsupportedError(
                f"{what} is refused on {name}: the REST catalog protocol has no call for it and the server "
                "owns the snapshot chain (run the server's own maintenance)")
        raise CatalogUnsupportedError(
            f"{what} is refused on {name}: on a REST catalog it must go through the server's {call}, "
            "never rewrite the chain behind the server's back")
        yield  # pragma: no cover
