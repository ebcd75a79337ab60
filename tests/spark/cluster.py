"""A real Spark standalone cluster (one master, one worker) on 127.0.0.1 for tests.

Both daemons come from the installed pyspark (its ``bin/spark-class`` and ``jars/``), so the
cluster always matches the driver that lakectl or a test starts; an inherited ``SPARK_HOME``
is ignored. Each daemon runs in its own process group: the worker's executors and their
Python workers are in the worker's group, so stopping the group stops them too.

Use it from a test module in ``tests/spark/`` as ``from cluster import standalone_cluster``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
START_TIMEOUT_SECONDS = 90.0
# The master's log lines naming the ports it bound (Spark 3 and 4).
_WEBUI_BOUND = re.compile(r"Bound MasterWebUI to \S+, and started at http://[^:/\s]+:(\d+)")
_MASTER_STARTED = re.compile(r"Starting Spark master at (spark://\S+)")
STOP_GRACE_SECONDS = 5.0
_LOG_TAIL_LINES = 40
_START_ATTEMPTS = 3
# C1-only JIT and the serial collector cut the cluster's start-up by about a third on a 2-core
# machine (3.3 s instead of 5 s); the daemons and short test jobs never run long enough for C2
# to pay off. Drivers and executors can take the same options (see the self-check test).
FAST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Without this a taken port makes Spark silently bind port+1, ..., port+16; we would then poll
# the wrong web UI or hand out the wrong master URL. Fail loudly instead.
_DAEMON_OPTS = f"{FAST_JVM_OPTS} -Dspark.port.maxRetries=0"
# urllib honours http_proxy; the cluster is on loopback and must never go through a proxy.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ClusterStartError(RuntimeError):
    """The master or the worker died, or the worker never registered in time."""


class _PortTaken(ClusterStartError):
    """A daemon died because another process bound one of its ports first."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """A running standalone cluster; valid only inside ``standalone_cluster``."""

    master_url: str
    master_webui_url: str
    worker_dir: Path
    master_pid: int
    worker_pid: int
    spark_home: Path
    log_dir: Path


@dataclass(frozen=True, slots=True)
class CompletedApp:
    """One entry of the master's ``completedapps``."""

    id: str
    name: str
    state: str
    duration_ms: int


def spark_home() -> Path:
    """Return the installed pyspark's package directory, which is a full Spark distribution."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ClusterStartError("pyspark is not installed in this interpreter")
    home = Path(next(iter(spec.submodule_search_locations)))
    if not (home / "bin" / "spark-class").is_file():
        raise ClusterStartError(f"{home} has no bin/spark-class")
    return home


def client_env(cluster: Cluster, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a driver process (lakectl, a ``python -c`` job) talking to ``cluster``.

    Pins the driver to the same Spark distribution and to loopback, and makes executors run
    Python with this interpreter.
    """
    env = dict(os.environ if base is None else base)
    env.update(
        SPARK_HOME=str(cluster.spark_home),
        SPARK_LOCAL_IP=HOST,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


@contextmanager
def standalone_cluster(workdir: Path, *, worker_cores: int = 1, worker_memory: str = "1g") -> Iterator[Cluster]:
    """Start a master and a worker on 127.0.0.1, yield once the worker is ALIVE, always stop both.

    Args:
        workdir: directory for the daemons' logs (``logs/``), the worker dir (``work/``),
            executors' scratch space (``local/``) and pid files.
        worker_cores: cores the worker offers.
        worker_memory: memory the worker offers to executors, in Spark's syntax (``"1g"``).

    Raises:
        ClusterStartError: a daemon exited, or the worker was not ALIVE within 90 s; the
            message carries the tail of both logs.
    """
    home = spark_home()
    log_dir, worker_dir, pid_dir = workdir / "logs", workdir / "work", workdir / "pids"
    for d in (log_dir, worker_dir, pid_dir, workdir / "local"):
        d.mkdir(parents=True, exist_ok=True)
    env = _daemon_env(home, log_dir=log_dir, worker_dir=worker_dir, pid_dir=pid_dir)
    spark_class = str(home / "bin" / "spark-class")
    logs = {"master": log_dir / "master.out", "worker": log_dir / "worker.out"}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for attempt in range(1, _START_ATTEMPTS + 1):
            # A port is free when chosen, but another process may bind it before the JVM does.
            master_port, master_webui_port, worker_webui_port = _free_ports(3)
            master_url = f"spark://{HOST}:{master_port}"
            master_webui_url = f"http://{HOST}:{master_webui_port}"
            procs.append(_spawn(
                [spark_class, "org.apache.spark.deploy.master.Master",
                 "--host", HOST, "--port", str(master_port), "--webui-port", str(master_webui_port)],
                env=env, log=logs["master"], cwd=workdir))
            procs.append(_spawn(
                [spark_class, "org.apache.spark.deploy.worker.Worker", master_url,
                 "--host", HOST, "--cores", str(worker_cores), "--memory", worker_memory,
                 "--work-dir", str(worker_dir), "--webui-port", str(worker_webui_port)],
                env=env, log=logs["worker"], cwd=workdir))
            try:
                _wait_for_alive_worker(master_webui_url, master_url, procs=dict(zip(logs, procs)), logs=logs)
                break
            except _PortTaken:
                if attempt == _START_ATTEMPTS:
                    raise
                _stop_all(procs)
                procs.clear()
        master, worker = procs
        # For a human cleaning up after a killed test run; nothing here reads them.
        (pid_dir / "master.pid").write_text(f"{master.pid}\n")
        (pid_dir / "worker.pid").write_text(f"{worker.pid}\n")
        yield Cluster(master_url=master_url, master_webui_url=master_webui_url, worker_dir=worker_dir,
                      master_pid=master.pid, worker_pid=worker.pid, spark_home=home, log_dir=log_dir)
    finally:
        _stop_all(procs)


def master_state(cluster: Cluster) -> dict[str, Any]:
    """The master's ``/json/`` document (workers, activeapps, completedapps, ...)."""
    return _get_json(f"{cluster.master_webui_url}/json/")


def completed_apps(cluster: Cluster) -> list[CompletedApp]:
    """Applications the master lists as completed, oldest first.

    An application appears here only after its driver stopped the SparkContext (or died) and
    the master processed the unregistration, which can lag the driver's exit by a moment.
    """
    return [CompletedApp(id=a["id"], name=a["name"], state=a["state"], duration_ms=a["duration"])
            for a in master_state(cluster)["completedapps"]]


def executor_ran_on_worker(cluster: Cluster) -> list[str]:
    """Ids of the applications that ran at least one executor on the worker, sorted.

    The worker gives each executor ``<worker_dir>/<app id>/<executor id>/`` with its
    ``stdout`` and ``stderr``; a directory with ``stderr`` means an executor JVM was launched.
    """
    return sorted({p.parent.parent.name for p in cluster.worker_dir.glob("app-*/*/stderr")})


def _daemon_env(home: Path, *, log_dir: Path, worker_dir: Path, pid_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPARK_", "PYSPARK_")) and k not in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")}
    env.update(
        SPARK_HOME=str(home),
        SPARK_CONF_DIR=str(log_dir.parent / "conf"),  # absent: no spark-env.sh, no site defaults
        SPARK_LOCAL_IP=HOST,  # also what the web UIs bind to (default 0.0.0.0)
        SPARK_LOG_DIR=str(log_dir),
        SPARK_WORKER_DIR=str(worker_dir),
        SPARK_PID_DIR=str(pid_dir),
        SPARK_LOCAL_DIRS=str(log_dir.parent / "local"),  # executors' scratch; default is /tmp
        SPARK_DAEMON_JAVA_OPTS=_DAEMON_OPTS,
        # Spark 4 turns on the REST submission server, on the fixed port 6066: a second cluster
        # (a parallel test run) could not start. Nothing here submits in cluster mode.
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        # Spark 4 also turns on work-dir cleanup (apps older than 7 days, every 30 min); the
        # executor logs under the worker dir are test evidence, so never delete them.
        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false",
        SPARK_DAEMON_MEMORY="512m",
        SPARK_LAUNCHER_OPTS=FAST_JVM_OPTS,  # the short-lived JVM spark-class runs to build the command
        PYSPARK_PYTHON=sys.executable,
    )
    return env


def _spawn(cmd: list[str], *, env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    # spark-class ends in `exec java ...`, so the pid is the daemon JVM's and leads its group.
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for_alive_worker(webui_url: str, master_url: str, *, procs: dict[str, subprocess.Popen[bytes]],
                           logs: dict[str, Path]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    last = "master web UI not answering yet"
    while True:
        for name, proc in procs.items():
            if proc.poll() is not None:
                text = _read(logs[name])
                taken = "Address already in use" in text or "Failed to bind" in text
                error = _PortTaken if taken else ClusterStartError
                raise error(f"spark {name} exited with {proc.returncode} during start-up" + _log_tails(logs))
        # Spark binds its web UI to the next port when the chosen one was taken meanwhile (by
        # another test's py4j gateway, say), so the chosen port is asked only once the master's
        # log says it bound that one: otherwise the answer may come from someone else.
        master_log = _read(logs["master"])
        bound, started = _WEBUI_BOUND.search(master_log), _MASTER_STARTED.search(master_log)
        if bound is not None and bound.group(1) != webui_url.rsplit(":", 1)[1]:
            raise _PortTaken(f"master web UI bound port {bound.group(1)}, not the chosen {webui_url}"
                             + _log_tails(logs))
        if started is not None and started.group(1) != master_url:  # its RPC port moved on the same way
            raise _PortTaken(f"master started at {started.group(1)}, not the chosen {master_url}" + _log_tails(logs))
        if bound is None:
            last = "master web UI not bound yet"
        elif (state := _master_state_now(webui_url, master_url, logs)) is None:
            last = "master web UI not answering with its state yet"
        else:
            workers = [(w.get("host"), w.get("state")) for w in state.get("workers", [])]
            if any(s == "ALIVE" for _, s in workers):
                return
            last = f"master workers: {workers}"
        if time.monotonic() > deadline:
            raise ClusterStartError(f"no ALIVE worker after {START_TIMEOUT_SECONDS:.0f}s ({last})"
                                    + _log_tails(logs))
        time.sleep(0.25)


def _master_state_now(webui_url: str, master_url: str, logs: dict[str, Path]) -> dict[str, Any] | None:
    """The master's state, or None while its web UI does not answer with it yet."""
    try:
        state = _get_json(f"{webui_url}/json/")
    except (OSError, ValueError):  # refused or timed out while the JVM starts; its HTML page first
        return None
    if state.get("url") != master_url:
        raise ClusterStartError(f"master at {webui_url} reports {state.get('url')!r}, expected "
                                f"{master_url!r}" + _log_tails(logs))
    return state


def _stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    # Worker first, so it does not spend the master's grace period trying to reconnect.
    with ExitStack() as stack:
        for proc in procs:
            stack.callback(_stop, proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it after the grace period; reap the leader."""
    pgid = proc.pid  # start_new_session made it the group leader
    _signal_group(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        _signal_group(pgid, signal.SIGKILL)
        proc.wait(timeout=STOP_GRACE_SECONDS)
    # Executors and Python workers outlive a worker that exited on SIGTERM only if its shutdown
    # hook failed; whatever still runs in the group goes now.
    if live_group_members(pgid):
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while live_group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)


def live_group_members(pgid: int) -> list[int]:
    """Pids of the processes in group ``pgid`` that still run (zombies do not count).

    ``spark-class`` leaves a zombie behind: its process-substitution subshell, which the
    daemon JVM (that ``exec`` replaced bash with) never reaps. It belongs to the daemon's group
    and is re-parented to pid 1 when the daemon exits, so ``killpg(pgid, 0)`` keeps succeeding
    until pid 1 gets round to reaping it (about a second in this sandbox). Reads ``/proc``.
    """
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()  # comm may hold spaces and parens
        except OSError:  # the process went away while we looked
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            members.append(int(stat.parent.name))
    return sorted(members)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _get_json(url: str) -> dict[str, Any]:
    with _HTTP.open(url, timeout=5) as resp:
        doc: dict[str, Any] = json.load(resp)
    return doc


def _free_ports(n: int) -> list[int]:
    # Hold all sockets until every port is chosen, so the ports are distinct.
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(n)]
        for s in socks:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in socks]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return "<no log>"


def _log_tails(logs: dict[str, Path]) -> str:
    parts = []
    for name, path in logs.items():
        lines = _read(path).splitlines()[-_LOG_TAIL_LINES:]
        parts.append(f"\n--- {name} log ({path}), last {len(lines)} lines ---\n" + "\n".join(lines))
    return "".join(parts)
