"""A minimal Paimon REST catalog server of our own, written from the OpenAPI spec
(``docs/static/rest-catalog-open-api.yaml`` in Paimon; our summary in docs/rest-catalog.md),
for the calls pypaimon 1.4.1's mock lacks: tags and branches. It also serves what a client
needs around them (config, databases, tables, commit), over tables in Paimon's layout under
``<data>/<warehouse>/<db>.db/<table>``.

Standard library only; imports nothing of lakectl or pypaimon, so it is a party of its own.
Tables' files are Paimon's: a tag is ``tag/tag-NAME`` holding the tagged snapshot's JSON, a
branch ``branch/branch-NAME/`` with its own ``schema/`` and ``snapshot/``; a commit is
create-if-absent of ``snapshot-N`` after checking ``tableId`` and ``baseSnapshotUuid`` (as
Java's reference server does); fast-forward replaces main's snapshots, schemas and tags from
the branch's first snapshot on by the branch's.

  python spec_server.py --data DIR --warehouse NAME --token TOKEN   (prints one JSON line, serves until killed)
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


class Failure(Exception):
    def __init__(self, code: int, message: str, resource_type: str | None = None, name: str | None = None):
        super().__init__(message)
        self.code, self.resource_type, self.name = code, resource_type, name


class State:
    def __init__(self, data: str, warehouse: str, token: str) -> None:
        self.root = os.path.join(data, warehouse)
        self.warehouse = warehouse
        self.token = token
        self.uuids: dict[str, str] = {}  # "db.table" -> the table's uuid
        os.makedirs(self.root, exist_ok=True)

    # ---- layout -----------------------------------------------------------------------
    def db_dir(self, db: str) -> str:
        return os.path.join(self.root, f"{db}.db")

    def table_dir(self, db: str, table: str) -> str:
        path = os.path.join(self.db_dir(db), table)
        if not os.path.isdir(os.path.join(path, "schema")):
            raise Failure(404, f"Table {db}.{table} does not exist", "TABLE", table)
        return path

    def need_db(self, db: str) -> None:
        if not os.path.isdir(self.db_dir(db)):
            raise Failure(404, f"Database {db} does not exist", "DATABASE", db)

    @staticmethod
    def numbered(directory: str, prefix: str) -> list[int]:
        if not os.path.isdir(directory):
            return []
        return sorted(int(n[len(prefix):]) for n in os.listdir(directory)
                      if n.startswith(prefix) and n[len(prefix):].isdigit())

    def latest(self, snapshot_dir: str) -> dict | None:
        ids = self.numbered(snapshot_dir, "snapshot-")
        if not ids:
            return None
        with open(os.path.join(snapshot_dir, f"snapshot-{ids[-1]}")) as f:
            return json.load(f)

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
                names = sorted(n for n in os.listdir(self.db_dir(db))
                               if os.path.isdir(os.path.join(self.db_dir(db), n, "schema")))
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
            schema_ids = self.numbered(os.path.join(path, "schema"), "schema-")
            with open(os.path.join(path, "schema", f"schema-{schema_ids[-1]}")) as f:
                schema = json.load(f)
            return 200, {"id": self.uuid_of(db, table), "name": table, "path": path, "isExternal": False,
                         "schemaId": schema_ids[-1], "schema": {k: schema.get(k) for k in (
                             "fields", "partitionKeys", "primaryKeys", "options", "comment")}}
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
        path = os.path.join(self.db_dir(db), table)
        if os.path.isdir(os.path.join(path, "schema")):
            self._exists("TABLE", table)
        schema = body["schema"]
        os.makedirs(os.path.join(path, "schema"))
        content = {"version": 3, "id": 0, "fields": schema["fields"],
                   "highestFieldId": max((f["id"] for f in schema["fields"]), default=-1),
                   "partitionKeys": schema.get("partitionKeys") or [], "primaryKeys": schema.get("primaryKeys") or [],
                   "options": schema.get("options") or {}, "comment": schema.get("comment"),
                   "timeMillis": int(time.time() * 1000)}
        with open(os.path.join(path, "schema", "schema-0"), "w") as f:
            json.dump(content, f, indent=2)
        self.uuid_of(db, table)
        return 200, None

    def commit(self, db: str, table: str, path: str, branch: str | None, body: dict) -> tuple[int, object]:
        if body.get("tableId") != self.uuid_of(db, table):
            raise Failure(404, f"Table {db}.{table} does not exist", "TABLE", table)
        snapshot_dir = os.path.join(path, "snapshot") if branch in (None, "main") else \
            os.path.join(path, "branch", f"branch-{branch}", "snapshot")
        latest = self.latest(snapshot_dir)
        if (latest or {}).get("uuid") != body.get("baseSnapshotUuid"):
            return 200, {"success": False}
        snapshot = body["snapshot"]
        os.makedirs(snapshot_dir, exist_ok=True)
        try:
            with open(os.path.join(snapshot_dir, f"snapshot-{snapshot['id']}"), "x") as f:
                json.dump(snapshot, f, indent=2)
        except FileExistsError:
            return 200, {"success": False}
        return 200, {"success": True}

    def tags(self, method: str, path: str, tail: list[str], body: dict | None) -> tuple[int, object]:
        tag_dir = os.path.join(path, "tag")
        if not tail:
            if method == "GET":
                names = sorted(n[len("tag-"):] for n in os.listdir(tag_dir)) if os.path.isdir(tag_dir) else []
                return 200, {"tags": names, "nextPageToken": None}
            name = body["tagName"]
            target = os.path.join(tag_dir, f"tag-{name}")
            if os.path.exists(target):
                if body.get("ignoreIfExists"):
                    return 200, None
                self._exists("TAG", name)
            snapshot_dir = os.path.join(path, "snapshot")
            snapshot_id = body.get("snapshotId")
            if snapshot_id is None:
                latest = self.latest(snapshot_dir)
                if latest is None:
                    raise Failure(404, "No snapshot", "SNAPSHOT", "latest")
                snapshot_id = latest["id"]
            source = os.path.join(snapshot_dir, f"snapshot-{snapshot_id}")
            if not os.path.exists(source):
                raise Failure(404, f"Snapshot {snapshot_id} does not exist", "SNAPSHOT", str(snapshot_id))
            with open(source) as f:
                snapshot = json.load(f)
            snapshot["tagCreateTime"] = time.strftime("%Y-%m-%dT%H:%M:%S")
            if body.get("timeRetained"):
                snapshot["tagTimeRetained"] = body["timeRetained"]
            os.makedirs(tag_dir, exist_ok=True)
            with open(target, "w") as f:
                json.dump(snapshot, f, indent=2)
            return 200, None
        name = urllib.parse.unquote(tail[0])
        target = os.path.join(tag_dir, f"tag-{name}")
        if not os.path.exists(target):
            raise Failure(404, f"Tag {name} does not exist", "TAG", name)
        if method == "DELETE":
            os.remove(target)
            return 200, None
        with open(target) as f:
            snapshot = json.load(f)
        return 200, {"tagName": name, "snapshot": snapshot, "tagCreateTime": None,
                     "tagTimeRetained": snapshot.get("tagTimeRetained")}

    def branches(self, method: str, path: str, tail: list[str], body: dict | None) -> tuple[int, object]:
        branch_root = os.path.join(path, "branch")
        if not tail:
            if method == "GET":
                names = sorted(n[len("branch-"):] for n in os.listdir(branch_root)) if os.path.isdir(branch_root) else []
                return 200, {"branches": names}
            name = body["branch"]
            target = os.path.join(branch_root, f"branch-{name}")
            if os.path.exists(target):
                self._exists("BRANCH", name)
            from_tag = body.get("fromTag")
            schema_ids = self.numbered(os.path.join(path, "schema"), "schema-")
            schema_id = schema_ids[-1]
            snapshot = None
            if from_tag:
                tag_file = os.path.join(path, "tag", f"tag-{from_tag}")
                if not os.path.exists(tag_file):
                    raise Failure(404, f"Tag {from_tag} does not exist", "TAG", from_tag)
                with open(tag_file) as f:
                    snapshot = json.load(f)
                snapshot.pop("tagCreateTime", None)
                snapshot.pop("tagTimeRetained", None)
                schema_id = snapshot["schemaId"]
            os.makedirs(os.path.join(target, "schema"))
            for sid in [s for s in schema_ids if s <= schema_id]:
                shutil.copyfile(os.path.join(path, "schema", f"schema-{sid}"),
                                os.path.join(target, "schema", f"schema-{sid}"))
            if snapshot is not None:
                os.makedirs(os.path.join(target, "snapshot"))
                with open(os.path.join(target, "snapshot", f"snapshot-{snapshot['id']}"), "w") as f:
                    json.dump(snapshot, f, indent=2)
                os.makedirs(os.path.join(target, "tag"))
                shutil.copyfile(os.path.join(path, "tag", f"tag-{from_tag}"),
                                os.path.join(target, "tag", f"tag-{from_tag}"))
            return 200, None
        name = urllib.parse.unquote(tail[0])
        target = os.path.join(branch_root, f"branch-{name}")
        if not os.path.isdir(target):
            raise Failure(404, f"Branch {name} does not exist", "BRANCH", name)
        if tail[1:] == [] and method == "DELETE":
            shutil.rmtree(target)
            return 200, None
        if tail[1:] == ["forward"] and method == "POST":
            return self.forward(path, target)
        if tail[1:] == ["rename"] and method == "POST":
            renamed = os.path.join(branch_root, f"branch-{body['toBranch']}")
            if os.path.exists(renamed):
                self._exists("BRANCH", body["toBranch"])
            os.rename(target, renamed)
            return 200, None
        raise Failure(404, "Not Found")

    def forward(self, path: str, branch: str) -> tuple[int, object]:
        """Main takes the branch's chain: main's snapshots, schemas and tags from the branch's
        first snapshot on are replaced by the branch's (Paimon's fast-forward)."""
        branch_ids = self.numbered(os.path.join(branch, "snapshot"), "snapshot-")
        if not branch_ids:
            raise Failure(400, "the branch has no snapshot to fast-forward to")
        first = branch_ids[0]
        main_snapshots = os.path.join(path, "snapshot")
        for sid in self.numbered(main_snapshots, "snapshot-"):
            if sid >= first:
                os.remove(os.path.join(main_snapshots, f"snapshot-{sid}"))
        for hint in ("LATEST", "EARLIEST"):
            if os.path.exists(os.path.join(main_snapshots, hint)):
                os.remove(os.path.join(main_snapshots, hint))
        for sid in self.numbered(os.path.join(branch, "schema"), "schema-"):
            shutil.copyfile(os.path.join(branch, "schema", f"schema-{sid}"), os.path.join(path, "schema", f"schema-{sid}"))
        os.makedirs(main_snapshots, exist_ok=True)
        for sid in branch_ids:
            shutil.copyfile(os.path.join(branch, "snapshot", f"snapshot-{sid}"),
                            os.path.join(main_snapshots, f"snapshot-{sid}"))
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
    args = parser.parse_args()
    state = State(os.path.abspath(args.data), args.warehouse, args.token)
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
