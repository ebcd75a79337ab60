"""A minimal Paimon REST catalog server of our own, written from the OpenAPI spec
(``docs/static/rest-catalog-open-api.yaml`` in Paimon; our summary in docs/rest-catalog.md),
for the calls pypaimon 1.4.1's mock lacks: tags and branches. It also serves what a client
needs around them (config, databases, tables, commit, the latest snapshot), over tables in
Paimon's layout under ``<data>/<warehouse>/<db>.db/<table>``.

Standard library only in its local mode; imports nothing of lakectl or pypaimon, so it is a
party of its own.
Tables' files are Paimon's: a tag is ``tag/tag-NAME`` holding the tagged snapshot's JSON, a
branch ``branch/branch-NAME/`` with its own ``schema/`` and ``snapshot/``; a commit is
create-if-absent of ``snapshot-N`` after checking ``tableId`` and ``baseSnapshotUuid`` (as
Java's reference server does); fast-forward replaces main's snapshots, schemas and tags from
the branch's first snapshot on by the branch's.

  python spec_server.py --data DIR --warehouse NAME --token TOKEN   (prints one JSON line, serves until killed)

With ``--s3-warehouse s3://BUCKET/PREFIX --s3-endpoint URL --s3-access-key K --s3-secret-key S``
new tables are placed on S3 (``s3://BUCKET/PREFIX/<db>.db/<table>``; their schema, snapshot,
tag and branch files written through fsspec's s3fs, which lakectl's python has), databases are
still kept in ``DIR``, and ``GET .../token`` answers those credentials as the table's data token
(Paimon's ``fs.s3.*`` keys, or with ``--token-style hadoop`` S3A's ``fs.s3a.*``, and
``--token-option KEY=VALUE`` added or replacing; valid for an hour). The server handles one request at a time, so
its create-if-absent of ``snapshot-N`` on S3 (look, then put) has no other writer to race.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer

PREFIX = "spec"
# A data token's access key, secret, endpoint and region: Paimon's names, or Hadoop S3A's.
TOKEN_KEYS = {"paimon": ("fs.s3.accessKeyId", "fs.s3.accessKeySecret", "fs.s3.endpoint", "fs.s3.region"),
              "hadoop": ("fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.endpoint", "fs.s3a.endpoint.region")}


class Failure(Exception):
    def __init__(self, code: int, message: str, resource_type: str | None = None, name: str | None = None):
        super().__init__(message)
        self.code, self.resource_type, self.name = code, resource_type, name


class LocalFiles:
    """The tables' files on the local filesystem."""

    join = staticmethod(os.path.join)
    isdir = staticmethod(os.path.isdir)
    exists = staticmethod(os.path.exists)
    listdir = staticmethod(os.listdir)
    remove = staticmethod(os.remove)
    rename = staticmethod(os.rename)
    rmtree = staticmethod(shutil.rmtree)
    copy = staticmethod(shutil.copyfile)

    @staticmethod
    def makedirs(path: str, exist_ok: bool = False) -> None:
        os.makedirs(path, exist_ok=exist_ok)

    @staticmethod
    def read_json(path: str) -> dict:
        with open(path) as f:
            return json.load(f)

    @staticmethod
    def write_json(path: str, content: dict, *, exclusive: bool = False) -> None:
        with open(path, "x" if exclusive else "w") as f:
            json.dump(content, f, indent=2)


class S3Files:
    """The tables' files on S3 through s3fs (no listing cache: lakectl writes there too)."""

    def __init__(self, endpoint: str, access_key: str, secret_key: str, region: str) -> None:
        import s3fs

        self.fs = s3fs.S3FileSystem(key=access_key, secret=secret_key, use_listings_cache=False,
                                    skip_instance_cache=True,
                                    client_kwargs={"endpoint_url": endpoint, "region_name": region},
                                    config_kwargs={"s3": {"addressing_style": "path"}})

    @staticmethod
    def join(*parts: str) -> str:
        return "/".join(p.rstrip("/") for p in parts)

    def isdir(self, path: str) -> bool:
        return self.fs.isdir(path)

    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def listdir(self, path: str) -> list[str]:
        return [entry.rstrip("/").rsplit("/", 1)[-1] for entry in self.fs.ls(path, detail=False)]

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        pass  # S3 has no directories: a key's prefix exists once a file is under it

    def read_json(self, path: str) -> dict:
        return json.loads(self.fs.cat_file(path))

    def write_json(self, path: str, content: dict, *, exclusive: bool = False) -> None:
        if exclusive and self.fs.exists(path):
            raise FileExistsError(path)
        self.fs.pipe_file(path, json.dumps(content, indent=2).encode())

    def remove(self, path: str) -> None:
        self.fs.rm_file(path)

    def rmtree(self, path: str) -> None:
        self.fs.rm(path, recursive=True)

    def copy(self, source: str, target: str) -> None:
        self.fs.copy(source, target)

    def rename(self, source: str, target: str) -> None:
        self.fs.mv(source, target, recursive=True)


class State:
    def __init__(self, data: str, warehouse: str, token: str, *, s3: dict | None = None) -> None:
        self.root = os.path.join(data, warehouse)
        self.warehouse = warehouse
        self.token = token
        self.uuids: dict[str, str] = {}  # "db.table" -> the table's uuid
        os.makedirs(self.root, exist_ok=True)
        # Databases are directories under root either way; tables live under tables_root.
        self.s3 = s3
        if s3 is None:
            self.files: LocalFiles | S3Files = LocalFiles()
            self.tables_root = self.root
        else:
            self.files = S3Files(s3["endpoint"], s3["access_key"], s3["secret_key"], s3["region"])
            self.tables_root = s3["warehouse"].rstrip("/")

    # ---- layout -----------------------------------------------------------------------
    def db_dir(self, db: str) -> str:
        return os.path.join(self.root, f"{db}.db")

    def tables_dir(self, db: str) -> str:
        return self.files.join(self.tables_root, f"{db}.db")

    def table_dir(self, db: str, table: str) -> str:
        path = self.files.join(self.tables_dir(db), table)
        if not self.files.isdir(self.files.join(path, "schema")):
            raise Failure(404, f"Table {db}.{table} does not exist", "TABLE", table)
        return path

    def data_token(self) -> dict:
        """The S3 server's credentials as Paimon's data token, valid for an hour."""
        if self.s3 is None:
            raise Failure(404, "Not Found")
        settings = (self.s3["access_key"], self.s3["secret_key"], self.s3["endpoint"], self.s3["region"])
        token = dict(zip(TOKEN_KEYS[self.s3["token_style"]], settings))
        token.update(self.s3.get("extra") or {})
        return {"token": token, "expiresAtMillis": int(time.time() * 1000) + 3_600_000}

    def need_db(self, db: str) -> None:
        if not os.path.isdir(self.db_dir(db)):
            raise Failure(404, f"Database {db} does not exist", "DATABASE", db)

    def numbered(self, directory: str, prefix: str) -> list[int]:
        if not self.files.isdir(directory):
            return []
        return sorted(int(n[len(prefix):]) for n in self.files.listdir(directory)
                      if n.startswith(prefix) and n[len(prefix):].isdigit())

    def latest(self, snapshot_dir: str) -> dict | None:
        ids = self.numbered(snapshot_dir, "snapshot-")
        if not ids:
            return None
        return self.files.read_json(self.files.join(snapshot_dir, f"snapshot-{ids[-1]}"))

    def uuid_of(self, db: str, table: str) -> str:
        return self.uuids.setdefault(f"{db}.{table}", str(uuid.uuid4()))

    # ---- calls ----------------------------------------------------------------------------
    def route(self, method: str, parts: list[str], query: dict, body: dict | None) -> tuple[int, object]:
        if parts == ["v1", "config"]:
            if query.get("warehouse") != self.warehouse:
                raise Failure(404, f"no warehouse {query.get('warehouse')}")
            return 200, {"defaults": {"prefix": PREFIX}, "overrides": {}}
        if len(parts) < 3 or parts[:2] != ["v1", PREFIX]:
            raise Failure(404, "Not Found")
        rest = parts[2:]
        if rest == ["databases"]:
            if method == "GET":
                names = sorted(n[:-3] for n in os.listdir(self.root) if n.endswith(".db"))
                return 200, {"databases": names, "nextPageToken": None}
            if os.path.isdir(self.db_dir(body["name"])):
                self._exists("DATABASE", body["name"])
            os.makedirs(self.db_dir(body["name"]))
            return 200, None
        if rest[0] != "databases" or len(rest) < 2:
            raise Failure(404, "Not Found")
        db = rest[1]
        self.need_db(db)
        if len(rest) == 2:
            return 200, {"name": db, "location": self.db_dir(db), "options": {}}
        if rest[2:] == ["tables"]:
            if method == "GET":
                tables = self.tables_dir(db)
                listed = self.files.listdir(tables) if self.files.isdir(tables) else []
                names = sorted(n for n in listed if self.files.isdir(self.files.join(tables, n, "schema")))
                return 200, {"tables": names, "nextPageToken": None}
            return self.create_table(db, body)
        if len(rest) < 4 or rest[2] != "tables":
            raise Failure(404, "Not Found")
        table, branch = rest[3], None
        if "$branch_" in table:
            table, branch = table.split("$branch_", 1)
        path = self.table_dir(db, table)
        tail = rest[4:]
        if not tail:
            schema_ids = self.numbered(self.files.join(path, "schema"), "schema-")
            schema = self.files.read_json(self.files.join(path, "schema", f"schema-{schema_ids[-1]}"))
            return 200, {"id": self.uuid_of(db, table), "name": table, "path": path, "isExternal": False,
                         "schemaId": schema_ids[-1], "schema": {k: schema.get(k) for k in (
                             "fields", "partitionKeys", "primaryKeys", "options", "comment")}}
        if tail == ["token"] and method == "GET":
            return 200, self.data_token()
        if tail == ["snapshot"] and method == "GET":
            return self.load_snapshot(path, branch)
        if tail == ["commit"] and method == "POST":
            return self.commit(db, table, path, branch, body)
        if tail[0] == "tags":
            return self.tags(method, path, tail[1:], body)
        if tail[0] == "branches":
            return self.branches(method, path, tail[1:], body)
        raise Failure(404, "Not Found")

    def _exists(self, kind: str, name: str):
        raise Failure(409, f"{kind.title()} {name} already exists", kind, name)

    def create_table(self, db: str, body: dict) -> tuple[int, object]:
        table = body["identifier"]["object"]
        path = self.files.join(self.tables_dir(db), table)
        if self.files.isdir(self.files.join(path, "schema")):
            self._exists("TABLE", table)
        schema = body["schema"]
        self.files.makedirs(self.files.join(path, "schema"))
        content = {"version": 3, "id": 0, "fields": schema["fields"],
                   "highestFieldId": max((f["id"] for f in schema["fields"]), default=-1),
                   "partitionKeys": schema.get("partitionKeys") or [], "primaryKeys": schema.get("primaryKeys") or [],
                   "options": schema.get("options") or {}, "comment": schema.get("comment"),
                   "timeMillis": int(time.time() * 1000)}
        self.files.write_json(self.files.join(path, "schema", "schema-0"), content)
        self.uuid_of(db, table)
        return 200, None

    def snapshot_dir(self, path: str, branch: str | None) -> str:
        return self.files.join(path, "snapshot") if branch in (None, "main") else \
            self.files.join(path, "branch", f"branch-{branch}", "snapshot")

    def load_snapshot(self, path: str, branch: str | None) -> tuple[int, object]:
        """The latest snapshot (pypaimon 2.1 reads a REST table's through this call). The
        statistics beside it are the snapshot's record count and zeros: this server does not
        read manifests."""
        latest = self.latest(self.snapshot_dir(path, branch))
        if latest is None:
            raise Failure(404, "No snapshot", "SNAPSHOT", "latest")
        return 200, {"snapshot": {"snapshot": latest, "recordCount": latest.get("totalRecordCount") or 0,
                                  "fileSizeInBytes": 0, "fileCount": 0, "lastFileCreationTime": 0}}

    def commit(self, db: str, table: str, path: str, branch: str | None, body: dict) -> tuple[int, object]:
        if body.get("tableId") != self.uuid_of(db, table):
            raise Failure(404, f"Table {db}.{table} does not exist", "TABLE", table)
        snapshot_dir = self.snapshot_dir(path, branch)
        latest = self.latest(snapshot_dir)
        if (latest or {}).get("uuid") != body.get("baseSnapshotUuid"):
            return 200, {"success": False}
        snapshot = body["snapshot"]
        self.files.makedirs(snapshot_dir, exist_ok=True)
        try:
            self.files.write_json(self.files.join(snapshot_dir, f"snapshot-{snapshot['id']}"), snapshot,
                                  exclusive=True)
        except FileExistsError:
            return 200, {"success": False}
        return 200, {"success": True}

    def tags(self, method: str, path: str, tail: list[str], body: dict | None) -> tuple[int, object]:
        tag_dir = self.files.join(path, "tag")
        if not tail:
            if method == "GET":
                listed = self.files.listdir(tag_dir) if self.files.isdir(tag_dir) else []
                names = sorted(n[len("tag-"):] for n in listed)
                return 200, {"tags": names, "nextPageToken": None}
            name = body["tagName"]
            target = self.files.join(tag_dir, f"tag-{name}")
            if self.files.exists(target):
                if body.get("ignoreIfExists"):
                    return 200, None
                self._exists("TAG", name)
            snapshot_dir = self.files.join(path, "snapshot")
            snapshot_id = body.get("snapshotId")
            if snapshot_id is None:
                latest = self.latest(snapshot_dir)
                if latest is None:
                    raise Failure(404, "No snapshot", "SNAPSHOT", "latest")
                snapshot_id = latest["id"]
            source = self.files.join(snapshot_dir, f"snapshot-{snapshot_id}")
            if not self.files.exists(source):
                raise Failure(404, f"Snapshot {snapshot_id} does not exist", "SNAPSHOT", str(snapshot_id))
            snapshot = self.files.read_json(source)
            snapshot["tagCreateTime"] = time.strftime("%Y-%m-%dT%H:%M:%S")
            if body.get("timeRetained"):
                snapshot["tagTimeRetained"] = body["timeRetained"]
            self.files.makedirs(tag_dir, exist_ok=True)
            self.files.write_json(target, snapshot)
            return 200, None
        name = urllib.parse.unquote(tail[0])
        target = self.files.join(tag_dir, f"tag-{name}")
        if not self.files.exists(target):
            raise Failure(404, f"Tag {name} does not exist", "TAG", name)
        if method == "DELETE":
            self.files.remove(target)
            return 200, None
        snapshot = self.files.read_json(target)
        return 200, {"tagName": name, "snapshot": snapshot, "tagCreateTime": None,
                     "tagTimeRetained": snapshot.get("tagTimeRetained")}

    def branches(self, method: str, path: str, tail: list[str], body: dict | None) -> tuple[int, object]:
        branch_root = self.files.join(path, "branch")
        if not tail:
            if method == "GET":
                listed = self.files.listdir(branch_root) if self.files.isdir(branch_root) else []
                names = sorted(n[len("branch-"):] for n in listed)
                return 200, {"branches": names}
            name = body["branch"]
            target = self.files.join(branch_root, f"branch-{name}")
            if self.files.exists(target):
                self._exists("BRANCH", name)
            from_tag = body.get("fromTag")
            schema_ids = self.numbered(self.files.join(path, "schema"), "schema-")
            schema_id = schema_ids[-1]
            snapshot = None
            if from_tag:
                tag_file = self.files.join(path, "tag", f"tag-{from_tag}")
                if not self.files.exists(tag_file):
                    raise Failure(404, f"Tag {from_tag} does not exist", "TAG", from_tag)
                snapshot = self.files.read_json(tag_file)
                snapshot.pop("tagCreateTime", None)
                snapshot.pop("tagTimeRetained", None)
                schema_id = snapshot["schemaId"]
            self.files.makedirs(self.files.join(target, "schema"))
            for sid in [s for s in schema_ids if s <= schema_id]:
                self.files.copy(self.files.join(path, "schema", f"schema-{sid}"),
                                self.files.join(target, "schema", f"schema-{sid}"))
            if snapshot is not None:
                self.files.makedirs(self.files.join(target, "snapshot"))
                self.files.write_json(self.files.join(target, "snapshot", f"snapshot-{snapshot['id']}"), snapshot)
                self.files.makedirs(self.files.join(target, "tag"))
                self.files.copy(self.files.join(path, "tag", f"tag-{from_tag}"),
                                self.files.join(target, "tag", f"tag-{from_tag}"))
            return 200, None
        name = urllib.parse.unquote(tail[0])
        target = self.files.join(branch_root, f"branch-{name}")
        if not self.files.isdir(target):
            raise Failure(404, f"Branch {name} does not exist", "BRANCH", name)
        if tail[1:] == [] and method == "DELETE":
            self.files.rmtree(target)
            return 200, None
        if tail[1:] == ["forward"] and method == "POST":
            return self.forward(path, target)
        if tail[1:] == ["rename"] and method == "POST":
            renamed = self.files.join(branch_root, f"branch-{body['toBranch']}")
            if self.files.exists(renamed):
                self._exists("BRANCH", body["toBranch"])
            self.files.rename(target, renamed)
            return 200, None
        raise Failure(404, "Not Found")

    def forward(self, path: str, branch: str) -> tuple[int, object]:
        """Main takes the branch's chain: main's snapshots, schemas and tags from the branch's
        first snapshot on are replaced by the branch's (Paimon's fast-forward)."""
        branch_ids = self.numbered(self.files.join(branch, "snapshot"), "snapshot-")
        if not branch_ids:
            raise Failure(400, "the branch has no snapshot to fast-forward to")
        first = branch_ids[0]
        main_snapshots = self.files.join(path, "snapshot")
        for sid in self.numbered(main_snapshots, "snapshot-"):
            if sid >= first:
                self.files.remove(self.files.join(main_snapshots, f"snapshot-{sid}"))
        for hint in ("LATEST", "EARLIEST"):
            if self.files.exists(self.files.join(main_snapshots, hint)):
                self.files.remove(self.files.join(main_snapshots, hint))
        for sid in self.numbered(self.files.join(branch, "schema"), "schema-"):
            self.files.copy(self.files.join(branch, "schema", f"schema-{sid}"),
                            self.files.join(path, "schema", f"schema-{sid}"))
        self.files.makedirs(main_snapshots, exist_ok=True)
        for sid in branch_ids:
            self.files.copy(self.files.join(branch, "snapshot", f"snapshot-{sid}"),
                            self.files.join(main_snapshots, f"snapshot-{sid}"))
        return 200, None


def handler_for(state: State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _handle(self, method: str) -> None:
            if self.headers.get("Authorization") != f"Bearer {state.token}":
                return self._send(401, {"message": "No auth for this resource", "code": 401})
            url = urllib.parse.urlsplit(self.path)
            parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
            query = dict(urllib.parse.parse_qsl(url.query))
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            try:
                code, answer = state.route(method, parts, query, body)
            except Failure as e:
                code, answer = e.code, {"message": str(e), "resourceType": e.resource_type,
                                        "resourceName": e.name, "code": e.code}
            self._send(code, answer)

        def _send(self, code: int, answer: object) -> None:
            data = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_DELETE(self) -> None:
            self._handle("DELETE")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--s3-warehouse", help="s3://BUCKET/PREFIX: place new tables on S3")
    parser.add_argument("--s3-endpoint")
    parser.add_argument("--s3-access-key")
    parser.add_argument("--s3-secret-key")
    parser.add_argument("--s3-region", default="us-east-1")
    parser.add_argument("--token-style", choices=sorted(TOKEN_KEYS), default="paimon")
    parser.add_argument("--token-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a further key of the data token")
    args = parser.parse_args()
    s3 = None
    if args.s3_warehouse:
        s3 = {"warehouse": args.s3_warehouse, "endpoint": args.s3_endpoint, "access_key": args.s3_access_key,
              "secret_key": args.s3_secret_key, "region": args.s3_region, "token_style": args.token_style,
              "extra": dict(kv.split("=", 1) for kv in args.token_option)}
    state = State(os.path.abspath(args.data), args.warehouse, args.token, s3=s3)
    server = HTTPServer(("127.0.0.1", 0), handler_for(state))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(json.dumps({"uri": f"http://127.0.0.1:{server.server_port}", "warehouse": args.warehouse,
                      "data": os.path.abspath(args.data), "prefix": PREFIX}), flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
