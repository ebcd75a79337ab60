"""Run pypaimon 1.4.1's mock REST catalog server on 127.0.0.1 until killed.

Runs under the REST venv's python (``make rest-oracle``: pypaimon 1.4.1 and the ``requests``
its modules import), never under lakectl's: the server is an independent implementation of the
REST catalog (``pypaimon/tests/rest/rest_server.py`` inside pypaimon's wheel), used unchanged
except for two checks put in front of it, each one Java's reference server makes and the mock
leaves out (docs/rest-catalog.md):

- the bearer token: a request without ``Authorization: Bearer <token>`` is answered 401 (the
  mock's own check accepts anything);
- a commit is create-if-absent: ``success: false`` when ``snapshot-N`` already exists (the
  mock would overwrite it), as Java's server publishes through its renaming commit;
- and atomic: the mock writes ``snapshot-N`` and ``LATEST`` in place with ``open``/``write``,
  so a reader could find an empty ``snapshot-N`` (a race test did); here they are written
  aside and moved into place, as Java's server's ``tryToWriteAtomic`` does.

Prints one JSON line ``{"uri", "warehouse", "data", "prefix"}`` when it listens, then serves.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
from http.server import HTTPServer

from pypaimon.api.api_response import CommitTableResponse, ConfigResponse
from pypaimon.tests.rest.rest_server import RESTCatalogServer


class CheckedServer(RESTCatalogServer):
    """The mock with the token check and create-if-absent commits."""

    def __init__(self, *args, token: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.expected_token = token

    def _create_request_handler(self):
        base = super()._create_request_handler()
        expected = f"Bearer {self.expected_token}"

        class Handler(base):
            def _authenticate(self, token, path, params, method, data):
                # the mock hands in dict(headers).get("authorization"), which misses the header
                # as clients spell it: ask the case-blind message instead
                return self.headers.get("Authorization") == expected

        return Handler

    def _table_commit_handle(self, method, data, identifier, branch=None):
        if method == "POST" and identifier.get_full_name() in self.table_metadata_store:
            try:
                snapshot_id = int(json.loads(data)["snapshot"]["id"])
            except (ValueError, KeyError, TypeError):
                snapshot_id = None
            if snapshot_id is not None:
                table_dir = os.path.join(self.data_path, self.warehouse, identifier.get_database_name(),
                                         identifier.get_object_name())
                sub = "snapshot" if not branch or branch == "main" else os.path.join("branch", f"branch-{branch}",
                                                                                    "snapshot")
                if os.path.exists(os.path.join(table_dir, sub, f"snapshot-{snapshot_id}")):
                    return self._mock_response(CommitTableResponse(success=False), 200)
        return super()._table_commit_handle(method, data, identifier, branch)

    def _write_snapshot_files(self, identifier, snapshot, statistics):
        # The mock writes under data_path/warehouse/db/table: point it at a staging directory
        # (the server is single-threaded), then link snapshot-N into place (create-if-absent)
        # and rename LATEST over the old one.
        real_root = self.data_path
        staging = tempfile.mkdtemp(prefix=".staging-", dir=real_root)
        try:
            self.data_path = staging
            super()._write_snapshot_files(identifier, snapshot, statistics)
        finally:
            self.data_path = real_root
        try:
            rel = os.path.join(self.warehouse, identifier.get_database_name(), identifier.get_object_name(),
                               "snapshot")
            target = os.path.join(real_root, rel)
            os.makedirs(target, exist_ok=True)
            os.link(os.path.join(staging, rel, f"snapshot-{snapshot.id}"), os.path.join(target, f"snapshot-{snapshot.id}"))
            os.replace(os.path.join(staging, rel, "LATEST"), os.path.join(target, "LATEST"))
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def start(self) -> None:  # the mock binds "localhost"; the tests want the loopback address itself
        self.server = HTTPServer(("127.0.0.1", 0), self._create_request_handler())
        self.port = self.server.server_port


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="directory the server keeps its tables under")
    parser.add_argument("--warehouse", required=True, help="the warehouse name clients ask /v1/config for")
    parser.add_argument("--token", required=True, help="the bearer token clients must send")
    parser.add_argument("--prefix", default="mock", help="the path prefix the config hands out")
    args = parser.parse_args()
    os.makedirs(os.path.join(args.data, args.warehouse), exist_ok=True)
    config = ConfigResponse(defaults={"prefix": args.prefix})
    server = CheckedServer(os.path.abspath(args.data), None, config, args.warehouse, token=args.token)
    server.start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(json.dumps({"uri": f"http://127.0.0.1:{server.port}", "warehouse": args.warehouse,
                      "data": os.path.abspath(args.data), "prefix": args.prefix}), flush=True)
    try:
        server.server.serve_forever()
    finally:
        server.server.server_close()


if __name__ == "__main__":
    main()
