"""A PostgreSQL server of its own, on 127.0.0.1, for the JDBC catalog's tests and for people
trying lakectl against PostgreSQL (``make postgres``).

Debian's ``postgresql`` package provides the binaries (``/usr/lib/postgresql/NN/bin``; ``make
postgres-packages`` installs it where it is missing). The server lives entirely in one
directory: its data directory, its unix socket, its log. It listens on 127.0.0.1 only and asks
for a password over TCP (scram-sha-256), so a client that forgets to pass ``jdbc.password``
fails as it would against a real server.

``initdb`` and ``postgres`` refuse to run as root: as root, the server runs as the ``postgres``
user the Debian package creates (else ``nobody``), and its directory is handed to that user.

Usage (stdlib only, no lakectl import):
    python scripts/postgres.py start DIR [--port N]   # prints the catalog settings to use
    python scripts/postgres.py stop DIR
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

USER = "lakectl"
PASSWORD = "lakectl-test-password"
DATABASE = "lakectl"
_STATE = "server.json"


@dataclass(frozen=True)
class PostgresServer:
    """A running server: the JDBC URI Paimon's catalog takes and the credentials it checks."""

    root: str
    host: str
    port: int
    database: str
    user: str
    password: str

    @property
    def jdbc_uri(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    def catalog_options(self) -> dict[str, str]:
        """Paimon's JDBC catalog keys for this server (``warehouse`` and ``catalog-key`` are
        the caller's)."""
        return {"metastore": "jdbc", "uri": self.jdbc_uri, "jdbc.user": self.user, "jdbc.password": self.password}

    def connect_kwargs(self, database: str | None = None) -> dict[str, object]:
        """Keyword arguments for ``psycopg.connect``."""
        return {"host": self.host, "port": self.port, "dbname": database or self.database,
                "user": self.user, "password": self.password}


def bin_dir() -> Path | None:
    """The newest installed PostgreSQL's binaries, or None when none is installed."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as() -> pwd.struct_passwd | None:
    """The account the server runs as when we are root (initdb refuses root), else None."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a postgres nor a nobody account exists for the server")


def _run(cmd: list[str], account: pwd.struct_passwd | None, **kwargs: object) -> subprocess.CompletedProcess:
    extra: dict[str, object] = {}
    if account is not None:
        extra = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False,  # type: ignore[call-overload]
                          **extra, **kwargs)


def start(root: Path, *, port: int | None = None, ready_seconds: float = 60.0) -> PostgresServer:
    """initdb a fresh cluster under ``root`` (which must not hold one yet), start it on
    127.0.0.1 and create the database.

    Raises:
        RuntimeError: no PostgreSQL installed, or a step failed (the message has its output).
    """
    binaries = bin_dir()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql, or make postgres-packages)")
    account = _run_as()
    root.mkdir(parents=True, exist_ok=True)
    data, sockets = root / "data", root / "socket"
    sockets.mkdir(exist_ok=True)
    pwfile = root / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    if account is not None:
        for path in (root, sockets, pwfile):
            os.chown(path, account.pw_uid, account.pw_gid)
    init = _run([str(binaries / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={pwfile}", "-E", "UTF8",
                 "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"], account)
    if init.returncode != 0:
        raise RuntimeError(f"initdb failed: {init.stdout}{init.stderr}")
    pwfile.unlink()
    last = ""
    for _attempt in range(5):  # a free port can be taken between probing it and binding it
        chosen = port or _free_port()
        started = _run([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"),
                        "-o", _server_options(chosen, sockets),
                        "-w", "-t", str(int(ready_seconds)), "start"], account)
        if started.returncode == 0:
            break
        last = started.stdout + started.stderr + _tail(root / "server.log")
        if port is not None:
            break
    else:
        chosen = 0
    if started.returncode != 0:
        raise RuntimeError(f"PostgreSQL did not start: {last}")
    server = PostgresServer(str(root), "127.0.0.1", chosen, DATABASE, USER, PASSWORD)
    created = _run([str(binaries / "createdb"), "-h", str(sockets), "-p", str(chosen), "-U", USER, DATABASE], account)
    if created.returncode != 0:
        stop(root)
        raise RuntimeError(f"createdb failed: {created.stdout}{created.stderr}")
    (root / _STATE).write_text(json.dumps(asdict(server)))
    return server


def create_database(server: PostgresServer, name: str) -> PostgresServer:
    """Another database on the same server (a test's own registry), returned as a server
    view whose URI names it."""
    binaries = bin_dir()
    assert binaries is not None
    created = _run([str(binaries / "createdb"), "-h", str(Path(server.root) / "socket"), "-p", str(server.port),
                    "-U", server.user, name], _run_as())
    if created.returncode != 0:
        raise RuntimeError(f"createdb {name} failed: {created.stdout}{created.stderr}")
    return PostgresServer(server.root, server.host, server.port, name, server.user, server.password)


def resume(root: Path) -> PostgresServer:
    """The server set up under ``root`` by ``start``, started again if it is not running
    (after a reboot)."""
    server = PostgresServer(**json.loads((root / _STATE).read_text()))
    binaries = bin_dir()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql, or make postgres-packages)")
    account = _run_as()
    if _run([str(binaries / "pg_ctl"), "-D", str(root / "data"), "status"], account).returncode != 0:
        started = _run([str(binaries / "pg_ctl"), "-D", str(root / "data"), "-l", str(root / "server.log"), "-o",
                        _server_options(server.port, root / "socket"), "-w", "start"], account)
        if started.returncode != 0:
            log = _tail(root / "server.log")
            raise RuntimeError(f"PostgreSQL did not start: {started.stdout}{started.stderr}{log}")
    return server


def _server_options(port: int, sockets: Path) -> str:
    # A throwaway server: durability off (fsync, synchronous commit) for speed.
    return (f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")


def stop(root: Path) -> None:
    """Stop the server under ``root`` (immediately: nothing in it needs to survive)."""
    binaries = bin_dir()
    if binaries is None or not (root / "data").is_dir():
        return
    _run([str(binaries / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"], _run_as())


def _tail(path: Path) -> str:
    try:
        return path.read_text()[-2000:]
    except OSError:
        return ""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--port", type=int, default=None)
    args = parser.parse_args(argv)
    root = args.dir.resolve()
    if args.action == "stop":
        stop(root)
        print(f"stopped the PostgreSQL server in {root}")
        return 0
    if (root / _STATE).is_file():
        server = resume(root)
        print(f"PostgreSQL already set up in {root}; `make postgres-stop` stops it", file=sys.stderr)
    else:
        server = start(root, port=args.port)
    warehouse = root.parent / "warehouse-pg"
    print(f"PostgreSQL {server.host}:{server.port}, database {server.database}, data in {root}\n")
    print("Add to lakectl's config file (./lakectl.toml or ~/.config/lakectl/config.toml),")
    print("or pass each as the global option --catalog-option KEY=VALUE:\n")
    print("[catalog]")
    print('metastore = "jdbc"')
    print(f'uri = "{server.jdbc_uri}"')
    print(f'warehouse = "{warehouse}"')
    print(f'"jdbc.user" = "{server.user}"')
    print(f'"jdbc.password" = "{server.password}"')
    print('"catalog-key" = "lakectl"')
    print('"lock.enabled" = "true"')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
