"""Test-side access to the reference implementation, Java Paimon 1.0, as a subprocess.

The Paimon bundle jar ships inside the PyPI package ``paimon-python-ali==0.1.1``, which
``make java-oracle`` installs (without its Python dependencies) into the oracle virtualenv;
our own program ``tests/oracle/java/JavaPaimonOracle.java`` is compiled against it with
``javac``. Nothing of it is a runtime dependency of lakectl.

Values cross the boundary as JSON in one normal form (see the Java file's header), so a
Java read and a lakectl read compare as plain Python lists:

    rows, meta = java_read(table_path)
    assert rows == lakectl_rows(Table.open(...).scan().to_arrow())

``java_run(table_path, steps, create=...)`` makes Java create a table and write, compact,
expire, tag or change options on it, which is how tests get tables "as Java writes them".
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import glob
import json
import math
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
_TIMEOUT_SECONDS = 300
_JAR_GLOB = "lib/python*/site-packages/paimon_python_java/java_dependencies/paimon-python-java-bridge.jar"


def _oracle_venv() -> Path:
    configured = os.environ.get("LAKECTL_ORACLE_PYTHON")
    return Path(configured).parents[1] if configured else REPO_ROOT / ".venv-oracle"


def java_classpath() -> str:
    """The bundle jar and the compiled oracle (packed as a jar where ``make java-oracle`` did,
    which the class-data archive needs); skip (locally) or fail (in CI) without them."""
    venv = _oracle_venv()
    jars = sorted(glob.glob(str(venv / _JAR_GLOB)))
    # LAKECTL_JAVA_ORACLE_CLASSES points at another compile of the oracle (a branch's own).
    classes = Path(os.environ.get("LAKECTL_JAVA_ORACLE_CLASSES") or venv / "java-oracle")
    packed = venv / "java-oracle.jar"
    if jars and (classes / "JavaPaimonOracle.class").is_file():
        use_packed = "LAKECTL_JAVA_ORACLE_CLASSES" not in os.environ and packed.is_file()
        return f"{jars[0]}{os.pathsep}{packed if use_packed else classes}"
    if os.environ.get("CI"):
        raise RuntimeError(f"Java Paimon oracle missing under {venv}; CI must run `make java-oracle` first")
    pytest.skip("Java Paimon oracle missing; run make java-oracle")


def _class_data_flags(classpath: str) -> list[str]:
    """JVM flags for the oracle's class-data archive (``make java-oracle`` records it with
    tests/interop/java_cds.py): the Paimon and Hadoop classes come mapped from it instead of
    parsed and verified anew, which halves a JVM start (~3.5 s to ~1.6 s per call on two busy
    cores). A JVM whose class path differs from the archive's ignores it. Every JVM message
    goes to stderr, at warning level, so that none lands in the oracle's JSON on stdout."""
    quiet = ["-Xlog:disable", "-Xlog:all=warning:stderr"]
    dump = os.environ.get("LAKECTL_JAVA_CDS_DUMP")
    if dump:
        return [*quiet, f"-XX:ArchiveClassesAtExit={dump}"]
    archive = _oracle_venv() / "java-oracle.jsa"
    if archive.is_file() and classpath.endswith("java-oracle.jar"):
        return [*quiet, f"-XX:SharedArchiveFile={archive}"]
    return quiet


# Debian's JDBC drivers (libxerial-sqlite-jdbc-java, libpostgresql-jdbc-java; `make
# postgres-packages` installs them): on the class path of the oracle's `catalog` command, after
# the oracle's own entries, so the class-data archive (recorded without them) still applies.
JDBC_DRIVER_JARS = ("/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/postgresql.jar")


def jdbc_driver_jars() -> list[str]:
    """The JDBC drivers Java's JdbcCatalog loads; skip (locally) or fail (in CI) without them."""
    missing = [jar for jar in JDBC_DRIVER_JARS if not os.path.isfile(jar)]
    if missing:
        if os.environ.get("CI"):
            raise RuntimeError(f"JDBC drivers missing: {missing}; CI must run `make postgres-packages` first")
        pytest.skip(f"JDBC drivers missing ({', '.join(missing)}); run make postgres-packages")
    return list(JDBC_DRIVER_JARS)


def _java_command(args: Sequence[str], scratch: str, *, extra_classpath: Sequence[str] = ()) -> list[str]:
    classpath = java_classpath()
    full = os.pathsep.join([classpath, *extra_classpath])
    return ["java", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *_class_data_flags(classpath),
            f"-Djava.io.tmpdir={scratch}", "-cp", full, "JavaPaimonOracle", *args]


def _java(args: Sequence[str], *, extra_classpath: Sequence[str] = ()) -> list[str]:
    # Each run gets its own java.io.tmpdir, removed afterwards: Paimon's writer leaves its
    # spill directories (paimon-io-*) behind, which filled /tmp by hundreds per test run.
    with tempfile.TemporaryDirectory(prefix="lakectl-java-oracle-") as scratch:
        cmd = _java_command(args, scratch, extra_classpath=extra_classpath)
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False)
    assert result.returncode == 0, (
        f"Java oracle failed (exit {result.returncode}): {' '.join(args)}\n"
        f"--- stderr ---\n{_without_logging_noise(result.stderr)}\n--- stdout (tail) ---\n{result.stdout[-2000:]}"
    )
    return result.stdout.splitlines()


def _without_logging_noise(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith(("SLF4J", "ERROR StatusLogger")))


def java_read(table_path: str | os.PathLike[str], *, snapshot: int | None = None, tag: str | None = None,
              equal: tuple[str, Any] | None = None, incremental_between: tuple[int, int] | None = None,
              with_kind: bool = False, branch: str | None = None,
              stream_from: int | None = None, stream_from_timestamp: int | None = None,
              filters: Sequence[tuple[str, str, Any]] = ()) -> tuple[list[list[Any]], dict[str, Any]]:
    """Read a table as Java Paimon's batch reader does.

    Args:
        table_path: the table directory.
        branch: read this branch as Flink and Spark users address it, by the identifier
            ``db.t$branch_NAME`` in the filesystem catalog of the table's warehouse (the table
            must live in ``<warehouse>/<db>.db/<t>``); time travel then applies to the
            branch's snapshots (and, in this Java build, to main's tags: see
            test_branches_interop).
        snapshot / tag: time travel (``scan.snapshot-id`` / ``scan.tag-name``).
        equal: ``(column, value)``: read with Java's filter ``column = value`` (the value in the
            normal form); Java prunes files by stats and file indexes with it, and the rows
            are filtered exactly here, as a caller of Java's reader would.
        filters: ``(op, column, value)`` each, ANDed: Java's ``PredicateBuilder`` op
            (``equal``, ``notEqual``, ``lessThan``, ``lessOrEqual``, ``greaterThan``,
            ``greaterOrEqual``, ``in``/``notIn`` with a list, ``between`` with ``[low, high]``,
            ``isNull``/``isNotNull`` with None), values in the normal form; Java prunes by
            them and its own reader drops the rows they reject (nothing is filtered here).
        incremental_between: ``(start, end)``: Java's ``incremental-between`` batch read.
        with_kind: each row starts with its row kind (+I, -U, +U, -D).
        stream_from: a streaming read (``scan.mode=from-snapshot``) of the changes of that
            snapshot and every later one up to the latest, as a Flink job reads them: the
            follow-up scanner of the table's changelog producer chooses which snapshots
            (``lookup`` and ``full-compaction``: the changelog of COMPACT snapshots).
        stream_from_timestamp: the same streaming read started with ``scan.mode=from-timestamp``
            at these epoch milliseconds.

    Returns:
        The rows in the normal form, sorted, and the meta line (``rows``, ``latest_snapshot``,
        ``columns``, ``splits``).
    """
    args = ["read", str(table_path)]
    if branch is not None:
        args += ["--branch", branch]
    if snapshot is not None:
        args += ["--snapshot", str(snapshot)]
    if tag is not None:
        args += ["--tag", tag]
    if equal is not None:
        args += ["--filter-equal", equal[0], json.dumps(equal[1])]
    for op, column, value in filters:
        args += ["--filter", op, column, json.dumps(value)]
    if incremental_between is not None:
        args += ["--incremental-between", f"{incremental_between[0]},{incremental_between[1]}"]
    if with_kind:
        args.append("--with-kind")
    if stream_from is not None:
        args += ["--stream-from", str(stream_from)]
    if stream_from_timestamp is not None:
        args += ["--stream-from-timestamp", str(stream_from_timestamp)]
    lines = _java(args)
    meta = json.loads(lines[-1])["meta"]
    rows = [json.loads(line) for line in lines[:-1]]
    if equal is not None:
        index = meta["columns"].index(equal[0]) + (1 if with_kind else 0)
        rows = [r for r in rows if r[index] == equal[1]]
    return sort_rows(rows), meta


def _java_reads(requests: Sequence[Sequence[str]]) -> list[list[list[Any]]]:
    """Several ``read`` argument lists (table path first) answered in one JVM (a JVM start
    costs more than a small read): each read's rows, sorted, in the normal form."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for request in requests:
            fh.write(json.dumps(list(request)) + "\n")
        path = fh.name
    try:
        lines = _java(["reads", path])
    finally:
        os.unlink(path)
    results: list[list[list[Any]]] = []
    rows: list[list[Any]] = []
    for line in lines:
        if line.startswith('{"meta"'):  # each read ends with its meta line; rows are arrays
            results.append(sort_rows(rows))
            rows = []
        else:
            rows.append(json.loads(line))
    assert len(results) == len(requests), f"Java answered {len(results)} of {len(requests)} reads"
    return results


def java_read_snapshots(table_path: str | os.PathLike[str], snapshot_ids: Sequence[int], *,
                        branch: str | None = None) -> dict[int, list[list[Any]]]:
    """Java's rows (sorted, normal form) at each of ``snapshot_ids`` (of ``branch``, opened as
    in ``java_read``), read in one JVM."""
    on_branch = ["--branch", branch] if branch is not None else []
    results = _java_reads([[str(table_path), *on_branch, "--snapshot", str(sid)] for sid in snapshot_ids])
    return dict(zip(snapshot_ids, results))


def java_incremental_reads(table_path: str | os.PathLike[str],
                           requests: Sequence[tuple[str, dict[str, str], bool]]) -> list[list[list[Any]]]:
    """Java's batch ``incremental-between`` reads, all in one JVM: for each request
    ``(range, options, keep_delete)`` (range ``"3,7"`` or ``"tagA,tagB"``; ``options`` further
    read options such as ``incremental-between-scan-mode``; ``keep_delete``: retractions kept,
    as Paimon's ``audit_log`` table reads, where the table's own batch read drops -U and -D
    rows), its rows with the row kind first, sorted."""
    argv = []
    for between, options, keep_delete in requests:
        request = [str(table_path), "--incremental-between", between, "--with-kind"]
        for key, value in options.items():
            request += ["--option", f"{key}={value}"]
        argv.append(request + (["--keep-delete"] if keep_delete else []))
    return _java_reads(argv)


def java_read_filtered(table_path: str | os.PathLike[str],
                       filter_sets: Sequence[Sequence[tuple[str, str, Any]]]) -> list[list[list[Any]]]:
    """Java's rows (sorted, normal form) of ``table_path`` under each set of ``filters`` (as
    ``java_read`` takes them), read in one JVM."""
    argv = []
    for filters in filter_sets:
        args = [str(table_path)]
        for op, column, value in filters:
            args += ["--filter", op, column, json.dumps(value)]
        argv.append(args)
    return _java_reads(argv)


def java_run(table_path: str | os.PathLike[str], steps: Iterable[dict[str, Any]], *,
             create: dict[str, Any] | None = None) -> dict[str, Any]:
    """Have Java Paimon create (optionally) and change a table.

    Args:
        table_path: the table directory (``<warehouse>/<db>.db/<name>``).
        steps: in order, each one of
            ``{"op": "write", "rows": [[...], ...], "kinds": ["+I", "-D", ...], "overwrite": false}``
            (one batch commit; rows in the normal form, in field order; dynamic-bucket tables get
            their buckets from Java's HashBucketAssigner),
            ``{"op": "compact", "full": true}`` (every partition and bucket with files),
            ``{"op": "expire", "retain_max": N, "retain_min": M, "older_than_ms": 0}`` (with
            ``changelog_retain_max``/``changelog_retain_min``/``changelog_older_than_ms``: the
            changelog retention, decoupled when larger; ``"changelogs": true``: Java's
            changelog expiration instead of the snapshots'),
            ``{"op": "tag", "name": NAME, "snapshot": ID}``,
            ``{"op": "set-option", "key": K, "value": V}`` (a new schema, as ALTER TABLE SET),
            ``{"op": "create-branch", "name": NAME, "tag": TAG}`` (from a tag; without it an
            empty branch with main's latest schema);
            any step with ``"branch": NAME`` runs on ``db.t$branch_NAME`` of the filesystem
            catalog (a write commits to the branch).
        create: ``{"fields": [{"name": ..., "type": <Paimon type string or JSON>}, ...],
            "partitionKeys": [...], "primaryKeys": [...], "options": {...}}``.

    Returns:
        ``{"snapshots": [latest snapshot id after each step]}`` (of the step's branch).
    """
    spec: dict[str, Any] = {"table": str(table_path), "steps": list(steps)}
    if create is not None:
        spec["create"] = create
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
        spec_path = f.name
    try:
        lines = _java(["run", spec_path])
    finally:
        os.unlink(spec_path)
    meta: dict[str, Any] = json.loads(lines[-1])["meta"]
    return meta


def java_catalog(catalog: dict[str, str], steps: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Have Java Paimon work through a catalog (``CatalogFactory.createCatalog`` with Paimon's
    own options, e.g. ``metastore=jdbc``, ``uri``, ``warehouse``, ``jdbc.user``,
    ``jdbc.password``, ``catalog-key``, ``lock.enabled``), the JDBC drivers on its class path.

    Args:
        catalog: the catalog options.
        steps: in order, each one of ``{"op": "create-database", "name": DB}``,
            ``{"op": "create-table", "table": "db.t", "create": <as java_run's create>}``,
            ``{"op": "write", "table": "db.t", "rows": [...], "kinds": [...]}`` (one commit),
            ``{"op": "writes", "table": "db.t", "batches": [[rows], ...]}`` (a commit per batch),
            ``{"op": "read", "table": "db.t"}``, ``{"op": "list-databases"}``,
            ``{"op": "list-tables", "database": DB}``,
            ``{"op": "rename-table", "from": "db.t", "to": "db.u"}``,
            ``{"op": "drop-table", "table": "db.t"}``,
            ``{"op": "drop-database", "name": DB, "cascade": true}``.

    Returns:
        One dict per line Java printed: a line per step (``{"step", "op"}`` and ``snapshot``
        for write and read, ``rows`` (sorted, normal form) for read, ``names`` for the
        listings), and for ``writes`` an ``{"attempt": i}`` before and a ``{"committed": i,
        "snapshot": id}`` after each commit.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"catalog": catalog, "steps": list(steps)}, f)
        spec_path = f.name
    try:
        lines = _java(["catalog", spec_path], extra_classpath=jdbc_driver_jars())
    finally:
        os.unlink(spec_path)
    out = [json.loads(line) for line in lines if line.startswith("{")]
    for line in out:
        if "rows" in line:
            line["rows"] = sort_rows(line["rows"])
    return out


class JavaCatalogProcess:
    """``java_catalog`` running in the background, its lines read as they come: a test can
    act between Java's steps (hold a lock while Java tries to commit)."""

    def __init__(self, catalog: dict[str, str], steps: Iterable[dict[str, Any]]) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="lakectl-java-oracle-")
        spec = Path(self._scratch.name) / "spec.json"
        spec.write_text(json.dumps({"catalog": catalog, "steps": list(steps)}))
        cmd = _java_command(["catalog", str(spec)], self._scratch.name, extra_classpath=jdbc_driver_jars())
        self._stderr = open(Path(self._scratch.name) / "stderr.txt", "w+")
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True)

    def next_line(self) -> dict[str, Any] | None:
        """Java's next JSON line (blocking), None at the end of its output."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        return None

    def stderr(self) -> str:
        """What Java printed on stderr so far, without its logging noise."""
        self._stderr.flush()
        self._stderr.seek(0)
        return _without_logging_noise(self._stderr.read())

    def wait(self) -> None:
        """Wait for Java to finish (its remaining lines are dropped); assert it succeeded."""
        try:
            self.process.communicate(timeout=_TIMEOUT_SECONDS)
            assert self.process.returncode == 0, f"Java oracle failed (exit {self.process.returncode})\n{self.stderr()}"
        finally:
            self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._stderr.close()
        self._scratch.cleanup()


def sort_rows(rows: Iterable[list[Any]]) -> list[list[Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def lakectl_rows(table: pa.Table) -> list[list[Any]]:
    """lakectl's rows in the Java oracle's normal form, sorted."""
    columns = [[normal(v, f.type) for v in table.column(i).to_pylist()] for i, f in enumerate(table.schema)]
    return sort_rows([list(r) for r in zip(*columns)] if columns else [])


def normal(value: Any, arrow_type: pa.DataType) -> Any:
    """One Python value of ``arrow_type`` (as ``to_pylist`` gives it) in the normal form."""
    if value is None:
        return None
    if pa.types.is_timestamp(arrow_type):
        return _timestamp(value)
    if pa.types.is_date(arrow_type):
        return value.isoformat()
    if pa.types.is_time(arrow_type):
        return (value.hour * 3600 + value.minute * 60 + value.second) * 1000 + value.microsecond // 1000
    if pa.types.is_decimal(arrow_type):
        return format(decimal.Decimal(value), "f")
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type) or pa.types.is_fixed_size_binary(arrow_type):
        return base64.b64encode(value).decode("ascii")
    if pa.types.is_floating(arrow_type):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        # Java prints a FLOAT by the shortest decimal that reads back as that float.
        return float(str(np.float32(value))) if pa.types.is_float32(arrow_type) else float(value)
    if pa.types.is_map(arrow_type):
        return [[normal(k, arrow_type.key_type), normal(v, arrow_type.item_type)] for k, v in value]
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return [normal(v, arrow_type.value_type) for v in value]
    if pa.types.is_struct(arrow_type):
        return [normal(value[arrow_type.field(i).name], arrow_type.field(i).type) for i in range(arrow_type.num_fields)]
    return value


def _timestamp(value: Any) -> str:
    # pyarrow gives datetime (to microseconds) or, for nanosecond columns with a fraction,
    # a pandas Timestamp; both print 9 fractional digits here, as the Java side does.
    nanos = getattr(value, "nanosecond", 0)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond * 1000 + nanos:09d}"
