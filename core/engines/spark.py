"""The Spark engine: Spark moves the rows, our kernels do the table work on the executors.

write: input rows -> ``mapInArrow`` (validate, cast, compute the Paimon bucket: ``core.rows``)
-> shuffle by (partition, bucket) -> ``applyInArrow`` runs ``kernels.write`` per group -> the
CommitMessages come back to the driver, which commits once. A primary-key delete enters the
same shuffle from a ``mapInArrow`` that reads the splits and keeps the matching rows as -D.
scan: the driver plans splits -> ``mapInArrow`` runs ``kernels.read`` per split.
compact: the driver plans per-bucket tasks -> ``mapInArrow`` runs ``kernels.compact``;
``run_tasks`` does the same for other per-bucket kernels (an append table's delete).

This is the only module that imports pyspark. All table file IO happens inside the Python
tasks through ``core.fileio`` (pip's pyspark has no s3a). Rows travel between the Python
stages as Arrow IPC chunks, so nothing is lost to Spark's microsecond timestamps or its
session time zone, and the shuffle moves few large values rather than many small rows.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import socket
import sys
import tempfile
import threading
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

import core
from core import errors, pandas_probe
from core.commit import CommitMessage
from core.engines.settings import ProgressCallback
from core.errors import InvalidDataError, LakectlError, NotFoundError, UsageError
from core.fileio import FileIO
from core.kernels.delete import MatchingRows
from core.kernels.read import ROW_KIND_COLUMN, ReadSplit, changes_schema
from core.kernels.write import WriteJob
from core.schema import TableSchema
from core.tempdirs import core_zip_prefix, sweep
from core.types import DataType, arrow_field

pandas_probe.restore()  # PySpark hands pandas objects to pyarrow: give pyarrow its pandas back

log = logging.getLogger(__name__)

PARTITION_COLUMN = "__lakectl_partition"
CHUNK_COLUMN = "__lakectl_rows"
BUCKET_COLUMN = "__lakectl_bucket"
ROW_COLUMN = "__lakectl_row"
MESSAGE_COLUMN = "message"

# Start-up flags measured to cut a cold JVM start; the in-memory catalog avoids Hive probing.
_DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.catalogImplementation": "in-memory",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.adaptive.enabled": "true",
    # Larger Arrow batches into our Python stages: fewer, larger chunks through the shuffle
    # (Spark's default of 10,000 rows made per-batch overhead dominate).
    "spark.sql.execution.arrow.maxRecordsPerBatch": "262144",
}
# A local session's shuffle files stay on this machine's disk, and what lakectl shuffles (the
# write's routed chunks) is lz4-compressed Arrow already: compressing it again cost CPU and
# saved nothing (bench/results-spark.md). Clusters keep Spark's default (network transfer).
_LOCAL_CONF = {"spark.shuffle.compress": "false"}
# JVM flags by the amount of data the command moves (bench/results-spark.md, 2026-11-27):
# C1 alone (TieredStopAtLevel=1) starts a session and writes 1,000 rows for ~7 CPU seconds
# less than the JVM's default tiered compilation on 2 cores, while C2 saves ~1.5 CPU s per
# million rows of a write; C2 repays its compile time only past ~5 million rows (~145 MiB).
_JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_BULK_JVM_FLAGS = "-XX:+UseSerialGC"
BULK_BYTES = 256 << 20  # data above which a new session gets _BULK_JVM_FLAGS (auto's Spark threshold)
_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


# ---- types -----------------------------------------------------------------------------
def spark_type(dt: DataType) -> T.DataType:
    """The Spark SQL type a user sees for a Paimon type (Table.to_spark)."""
    simple = {"BOOLEAN": T.BooleanType(), "TINYINT": T.ByteType(), "SMALLINT": T.ShortType(),
              "INT": T.IntegerType(), "BIGINT": T.LongType(), "FLOAT": T.FloatType(), "DOUBLE": T.DoubleType(),
              "DATE": T.DateType(), "CHAR": T.StringType(), "VARCHAR": T.StringType(),
              "BINARY": T.BinaryType(), "VARBINARY": T.BinaryType(),
              "TIMESTAMP": T.TimestampNTZType(), "TIMESTAMP_LTZ": T.TimestampType()}
    if dt.name in simple:
        return simple[dt.name]
    if dt.name == "DECIMAL":
        return T.DecimalType(dt.precision, dt.scale)
    if dt.name == "TIME":
        return T.TimeType(6)
    if dt.name in ("ARRAY", "MULTISET"):
        return T.ArrayType(spark_type(dt.element), dt.element.nullable)
    if dt.name == "MAP":
        return T.MapType(spark_type(dt.key), spark_type(dt.value), dt.value.nullable)
    if dt.name == "ROW":
        return T.StructType([T.StructField(f.name, spark_type(f.type), f.type.nullable) for f in dt.fields])
    if dt.name == "VARIANT":
        # Paimon's variant encoding, as the local engine returns it; the fields are nullable
        # here because a null variant's children are null in Spark's Arrow batches.
        return T.StructType([T.StructField("value", T.BinaryType(), True),
                             T.StructField("metadata", T.BinaryType(), True)])
    if dt.name == "VECTOR":
        return T.ArrayType(spark_type(dt.element), dt.element.nullable)
    raise UsageError(f"type {dt} has no Spark equivalent")


def _to_ipc(table: pa.Table) -> bytes:
    """Rows as an Arrow IPC stream (lz4: less to shuffle, cheap to undo)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def _spark_struct(fields: Sequence[tuple[str, T.DataType]]) -> T.StructType:
    return T.StructType([T.StructField(name, t, True) for name, t in fields])


def _arrow_schema(struct: T.StructType) -> pa.Schema:
    return to_arrow_schema(struct, timezone="UTC")


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Spark requires returned batches to match the declared schema exactly (int64 vs int32 fails)."""
    columns = [table.column(f.name).cast(f.type, safe=False) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _batches(table: pa.Table) -> Iterator[pa.RecordBatch]:
    yield from table.combine_chunks().to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]


# ---- routing ---------------------------------------------------------------------------------
# Rows on their way to the write shuffle: one IPC chunk per (partition, bucket) of a batch.
_ROUTED_STRUCT = _spark_struct([(PARTITION_COLUMN, T.BinaryType()), (BUCKET_COLUMN, T.IntegerType()),
                                (ROW_COLUMN, T.LongType()), ("rows", T.LongType()), (CHUNK_COLUMN, T.BinaryType())])


def _route(rows: pa.Table, job: WriteJob) -> pa.RecordBatch:
    """Rows already cast to the table (``prepare_rows``) plus a ``ROW_COLUMN`` of row ids, cut
    into one chunk per (partition, bucket); a chunk's first row id orders it in its group."""
    from core.rows import group_rows

    out: dict[str, list[Any]] = {name: [] for name in _ROUTED_STRUCT.names}
    for values, bucket, group in group_rows(rows, job.schema):
        out[PARTITION_COLUMN].append(job.task_for(values, bucket).partition)
        out[BUCKET_COLUMN].append(bucket)
        out[ROW_COLUMN].append(group.column(ROW_COLUMN)[0].as_py())
        out["rows"].append(group.num_rows)
        out[CHUNK_COLUMN].append(_to_ipc(group.drop_columns([ROW_COLUMN])))
    return pa.RecordBatch.from_pydict(out, schema=_arrow_schema(_ROUTED_STRUCT))


# ---- text inputs ---------------------------------------------------------------------------
# What Spark's CSV reader gives for a quoted "" (its default reads it as null, like an
# unquoted empty field); a private-use character no CSV writer produces by itself.
_CSV_EMPTY = "\ue000"


@dataclass(frozen=True)
class TextInput:
    """A CSV or JSON input read by Spark with every column as text, for the write kernels to
    decode into the table's types (``hint``; None: no table yet, the text stays text)."""

    frame: DataFrame
    fmt: str
    source: str
    hint: pa.Schema | None


@dataclass(frozen=True)
class ParquetFiles:
    """Local Parquet input files of an existing table's write, which the executors read with
    pyarrow themselves (``_routed_files``): the rows reach the write kernels as Arrow without
    Spark converting each one to its own row format and back to Arrow, the largest cost of
    the pipeline (bench/results-spark.md), and with the local engine's values and errors."""

    paths: tuple[str, ...]
    columns: tuple[str, ...]  # the first file's, as the local engine checks them

    @staticmethod
    def applies(paths: Sequence[str], fmt: str, hint: pa.Schema | None) -> bool:
        from core.sources import InputFile

        return fmt == "parquet" and hint is not None and all(InputFile.streams(p, fmt) for p in paths)

    @staticmethod
    def of(paths: Sequence[str]) -> "ParquetFiles":
        from core.sources import InputFile

        return ParquetFiles(tuple(paths), tuple(InputFile(paths[0], "parquet").column_names()))


def _frame(data: Any) -> Any:
    return data.frame if isinstance(data, TextInput) else data


def _csv_empty_strings(table: pa.Table) -> pa.Table:
    """Spark's marker of a quoted empty CSV field back to the empty string."""
    columns = [pc.if_else(pc.equal(c, _CSV_EMPTY), "", c) if pa.types.is_string(c.type) else c
               for c in table.columns]
    return pa.Table.from_arrays(columns, names=table.column_names)


# ---- errors from tasks ----------------------------------------------------------------------
_TASK_ERROR = re.compile(r"core\.errors\.(\w+): (.+)")


_BAD_INPUT = re.compile(r"\[(MALFORMED_[\w.]+)\] ([^\n]{0,160})")


def _unparsable_input(exc: Exception) -> str | None:
    """The one-line reason of a Spark reader's FAILFAST error (Spark's MALFORMED_* message,
    and the parser's own cause when there is one), or None for other errors."""
    java = getattr(exc, "java_exception", None)
    causes = []
    while java is not None:  # Py4JJavaError: the Java exception and its causes
        causes.append(str(java.toString()))
        java = java.getCause()
    bad = _BAD_INPUT.search("\n".join([str(exc), *causes]))
    if bad is None:
        return None
    reason = bad.group(2).strip()
    root = causes[-1].split(": ", 1)[-1].splitlines()[0][:160] if len(causes) > 1 else ""
    return f"{reason} ({root})" if root and "MALFORMED_" not in causes[-1] else reason


def _rethrow(exc: Exception) -> None:
    """Raise the core error a Python task raised, with its own message, instead of Spark's
    wrapper; an input Spark's own reader could not parse is invalid data, in one line."""
    match = _TASK_ERROR.search(str(exc))
    if match:
        cls = getattr(errors, match.group(1), None)
        if isinstance(cls, type) and issubclass(cls, LakectlError):
            raise cls(match.group(2).strip()) from None
    bad = _unparsable_input(exc)
    if bad:
        raise InvalidDataError(f"Spark cannot parse the input: {bad}") from None
    raise exc


# ---- shipping core to executors -------------------------------------------------------------
_core_zip_lock = threading.Lock()
_core_zip: str | None = None


def core_archive() -> str:
    """A zip of the ``core`` package, added to every job so executors of a real cluster can
    import it without lakectl installed there."""
    global _core_zip
    with _core_zip_lock:
        if _core_zip is None or not os.path.exists(_core_zip):
            root = Path(core.__file__).parent
            sweep()  # no process removes its archive (it may exit any way): sweep those of dead ones
            fd, path = tempfile.mkstemp(prefix=core_zip_prefix(), suffix=".zip")
            os.close(fd)
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
                for file in root.rglob("*.py"):
                    zf.write(file, Path("core") / file.relative_to(root))
            _core_zip = path
        return _core_zip


# ---- the session ---------------------------------------------------------------------------
def _conf_dir() -> str:
    """A SPARK_CONF_DIR holding a log4j2 config that keeps the JVM quiet (errors only)."""
    path = os.path.join(tempfile.gettempdir(), f"lakectl-spark-conf-{os.getuid()}")
    os.makedirs(path, exist_ok=True)
    target = os.path.join(path, "log4j2.properties")
    if not os.path.exists(target):
        with open(target, "w", encoding="ascii") as f:
            f.write(_LOG4J)
    return path


@contextmanager
def _jvm_stderr_to_log() -> Iterator[None]:
    """The JVM inherits fd 2 when it starts; point it at a log file so Spark's start-up
    banner and warnings stay out of the CLI's output (kept on stderr with -v)."""
    if log.isEnabledFor(logging.INFO):
        yield
        return
    log_path = os.path.join(_conf_dir(), f"spark-{os.getpid()}.log")
    sys.stderr.flush()
    saved = os.dup(2)
    with open(log_path, "ab") as target:
        os.dup2(target.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _loopback_master(master: str) -> bool:
    return bool(re.match(r"spark://(127\.|localhost[:/]|\[::1\])", master))


MASTER_CONNECT_TIMEOUT = 3.0  # seconds: Spark itself retries an absent master for about a minute
MASTER_ANSWER_TIMEOUT = 15.0  # seconds a master that took the connection has to answer as Spark


def check_master(master: str, conf: Mapping[str, str] | None = None) -> None:
    """Refuse a ``spark://`` master that no host of it answers on as Spark does, before a JVM
    starts: Spark's own client would retry for a minute and then fail with a Java stack trace.
    A host that takes the connection is asked one RPC request (``master_probe``), unless the
    session authenticates (``spark.authenticate``), which such a request would not pass.

    Raises:
        SparkUnreachableError: no ``host:port`` of the master URL accepts a connection and
            answers as Spark.
    """
    if not master.startswith("spark://"):
        return  # local[*], yarn, k8s://...: nothing of ours to check
    from core.engines.master_probe import answers_as_spark

    authenticated = str((conf or {}).get("spark.authenticate", "false")).strip().lower() == "true"
    reasons = []
    for address in master[len("spark://"):].split(","):  # a standby list: spark://h1:7077,h2:7077
        host, _, port = address.strip().rstrip("/").rpartition(":")
        if not host or not port.isdigit():
            raise UsageError(f"--master {master}: expected spark://HOST:PORT[,HOST:PORT...]")
        host = host.strip("[]")
        try:
            if authenticated:
                socket.create_connection((host, int(port)), timeout=MASTER_CONNECT_TIMEOUT).close()
                return
            why = answers_as_spark(host, int(port), MASTER_CONNECT_TIMEOUT, MASTER_ANSWER_TIMEOUT)
        except OSError as e:
            why = e.strerror or str(e) or "no connection"
        if why is None:
            return
        reasons.append(f"{host}:{port}: {why}")
    raise errors.SparkUnreachableError(f"no Spark master answers at {master} ({'; '.join(reasons)})")


def jvm_flags(data_bytes: int) -> str:
    """The JVM flags of a new session for a command moving ``data_bytes`` (0: not known)."""
    return _BULK_JVM_FLAGS if data_bytes > BULK_BYTES else _JVM_FLAGS


def session_settings(master: str, conf: Mapping[str, str], data_bytes: int, python: str) -> dict[str, str]:
    """The Spark settings of a new lakectl session: lakectl's defaults, those of its master
    and its data size, then the user's ``conf`` over them all."""
    settings = dict(_DEFAULT_CONF)
    settings["spark.driver.extraJavaOptions"] = jvm_flags(data_bytes)
    settings["spark.executor.extraJavaOptions"] = jvm_flags(data_bytes)
    settings["spark.pyspark.python"] = python
    # the executors' Python workers import numpy: no OpenBLAS thread pool there either (lakectl.app)
    settings["spark.executorEnv.OPENBLAS_NUM_THREADS"] = "1"
    if _loopback_master(master):
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    if master.startswith("local"):
        settings.update(_LOCAL_CONF)
    settings.update(conf)
    return settings


def get_session(master: str, conf: Mapping[str, str], data_bytes: int = 0) -> SparkSession:
    """The active SparkSession if lakectl runs inside a Spark application, else a new one
    (with JVM flags for ``data_bytes``, the size of the command's data when known)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        log.info("reusing the active SparkSession (master %s)", active.sparkContext.master)
        _ship_core(active)
        return active
    # Executors start the interpreter named here; the default `python3` on PATH may lack core.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_CONF_DIR", _conf_dir())
    builder = SparkSession.builder.master(master).appName("lakectl")
    for key, value in session_settings(master, conf, data_bytes, os.environ["PYSPARK_PYTHON"]).items():
        builder = builder.config(key, value)
    check_master(master, conf)
    log.info("starting a SparkSession on %s", master)
    with _jvm_stderr_to_log():
        try:
            session = builder.getOrCreate()
        except Exception as exc:  # Py4JJavaError and friends: say what failed in one line
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise LakectlError(f"cannot start a Spark session on {master}: {first}") from exc
    session.sparkContext.setLogLevel("ERROR")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    _ship_core(session)
    return session


_shipped_to: set[str] = set()  # application ids whose executors already have the archive


def _ship_core(session: SparkSession) -> None:
    app_id = session.sparkContext.applicationId
    if app_id not in _shipped_to:
        session.sparkContext.addPyFile(core_archive())
        _shipped_to.add(app_id)


# ---- progress ----------------------------------------------------------------------------------
class _JobProgress:
    """Polls Spark's status tracker and reports finished/total tasks of the running stages."""

    def __init__(self, session: SparkSession, progress: ProgressCallback | None, what: str) -> None:
        self.session, self.progress, self.what = session, progress, what
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "_JobProgress":
        if self.progress is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2)

    def _run(self) -> None:
        tracker = self.session.sparkContext.statusTracker()
        while not self.stop.wait(0.25):
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                self.progress(done, total, self.what)


# ---- the engine ----------------------------------------------------------------------------------
@dataclass
class SparkEngine:
    master: str = "local[*]"
    conf: dict[str, str] = field(default_factory=dict)
    progress: ProgressCallback | None = None
    data_bytes: int = 0  # the size of the command's data, when known: it picks the JVM flags
    name: str = "spark"
    _session: SparkSession | None = None

    @property
    def session(self) -> SparkSession:
        if self._session is None:
            self._session = get_session(self.master, self.conf, self.data_bytes)
        return self._session

    def _run(self, what: str, action: Callable[[], Any]) -> Any:
        with _JobProgress(self.session, self.progress, what):
            try:
                return action()
            except LakectlError:
                raise
            except Exception as exc:  # Spark wraps task failures; surface the task's own error
                _rethrow(exc)
                raise

    # ---- input ---------------------------------------------------------------------------------
    def read_input(self, paths: list[str], fmt: str, hint: pa.Schema | None,
                   whole: bool = False) -> DataFrame | TextInput:
        """Spark's own readers over the files ``sources.expand_input`` found (stdin is copied
        to a local file first). CSV and JSON for an existing table (``hint``) are read as text
        and decoded by ``core.text_values`` on the executors (``TextInput``), so values and
        errors are those of the local engine: one text encoding on every engine. (``whole``
        is the local engine's: Spark checks the input as it writes it.)"""
        if paths == ["-"]:
            from core.sources import stdin_to_file

            paths = [stdin_to_file(fmt)]
        if ParquetFiles.applies(paths, fmt, hint):
            return ParquetFiles.of(paths)
        reader = self.session.read
        shown = paths[0] if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} more)"
        try:
            if fmt == "csv":
                # RFC 4180 as csv_field writes it: "" escapes a quote, a quoted field may hold
                # line breaks, an unquoted empty field is null and a quoted "" the empty string
                # (Spark reads both as null unless the empty value is told apart).
                frame = (reader.option("header", "true").option("mode", "FAILFAST").option("escape", '"')
                         .option("multiLine", "true").option("emptyValue", _CSV_EMPTY).csv(paths))
            elif fmt in ("json", "jsonl"):
                multiline = str(fmt == "json").lower()
                frame = reader.option("mode", "FAILFAST").option("multiLine", multiline).json(paths)
                if hint is not None:  # every value as its JSON text (strings unquoted), for decode_text;
                    # a table column no record names is read as null, as the local engine reads it
                    names = list(frame.columns) + [n for n in hint.names if n not in frame.columns]
                    text = T.StructType([T.StructField(c, T.StringType()) for c in names])
                    frame = (reader.schema(text).option("mode", "FAILFAST").option("multiLine", multiline)
                             .json(paths))
            else:
                return reader.format(fmt).load(paths)
        except Exception as exc:  # AnalysisException for missing paths, a record Spark cannot parse
            first = _unparsable_input(exc) or (str(exc).strip().splitlines()[0] if str(exc).strip()
                                               else type(exc).__name__)
            raise InvalidDataError(f"cannot read {fmt} input {shown}: {first}") from None
        return TextInput(frame, fmt, shown, hint)

    def input_columns(self, data: DataFrame | TextInput | ParquetFiles) -> list[str]:
        if isinstance(data, ParquetFiles):
            return list(data.columns)
        return list(_frame(data).columns)

    def read_table(self, name: str) -> DataFrame:
        """A table (or view) of the Spark session's catalog."""
        try:
            return self.session.table(name)
        except Exception as exc:  # AnalysisException: no such table
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise NotFoundError(f"Spark table {name} not found: {first}") from None

    def input_schema(self, data: DataFrame | TextInput | ParquetFiles) -> pa.Schema:
        if isinstance(data, ParquetFiles):
            import pyarrow.parquet as pq

            return pq.read_schema(data.paths[0])
        return _arrow_schema(_frame(data).schema)

    # ---- write ---------------------------------------------------------------------------------
    def write(self, job: WriteJob, data: DataFrame | TextInput | pa.Table | MatchingRows,
              file_io: FileIO) -> tuple[list[CommitMessage], int]:
        """Route, shuffle and write. Rows cross the shuffle as Arrow IPC chunks, one per
        (input task, partition, bucket): Spark moves a few large binary values instead of
        converting every row to its own format and back, and the values keep their exact
        Arrow types (nanoseconds, TIME, time zones). An Arrow table given through the Python
        API becomes a DataFrame first; a delete's ``MatchingRows`` are read and routed on the
        executors (``_routed_matches``)."""
        if job.assigner is not None:
            from core.dynamic_bucket import DYNAMIC_NOT_ON_SPARK

            raise UsageError(DYNAMIC_NOT_ON_SPARK)
        if isinstance(data, MatchingRows):
            return self._shuffle_write(job, self._routed_matches(job, data, file_io), file_io, "deleting")
        if isinstance(data, ParquetFiles):
            return self._shuffle_write(job, self._routed_files(job, data), file_io, "writing")
        text = (data.hint, data.fmt, data.source) if isinstance(data, TextInput) else None
        data = _frame(data)
        nanos: dict[str, pa.DataType] = {}
        if isinstance(data, pa.Table):
            # Nanosecond timestamps cross into Spark as their epoch nanos (Spark's timestamps
            # stop at microseconds) and become timestamps again on the executors.
            nanos = {f.name: f.type for f in data.schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"}
            for name in nanos:
                data = data.set_column(data.schema.get_field_index(name), name, data.column(name).cast(pa.int64()))
            data = self.session.createDataFrame(data)
        schema = job.schema

        def route(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from core.rows import prepare_rows
            from core.sources import decode_text

            for batch in batches:
                table = pa.Table.from_batches([batch])
                rows = table.drop_columns([ROW_COLUMN])
                for name, stamp in nanos.items():
                    rows = rows.set_column(rows.schema.get_field_index(name), name, rows.column(name).cast(stamp))
                if text is not None:
                    hint, fmt, source = text
                    if fmt == "csv":
                        rows = _csv_empty_strings(rows)
                    rows = decode_text(rows, hint, fmt, source, row_offset=None)
                rows = prepare_rows(rows, schema, job.row_kind_column)
                yield _route(rows.append_column(ROW_COLUMN, table.column(ROW_COLUMN)), job)

        routed_df = data.withColumn(ROW_COLUMN, _monotonic_id()).mapInArrow(route, _ROUTED_STRUCT)
        return self._shuffle_write(job, routed_df, file_io, "writing")

    def _routed_files(self, job: WriteJob, files: ParquetFiles) -> DataFrame:
        """Parquet input files as routed chunks (``_route``), read on the executors: the driver
        cuts the files into runs of row groups (``sources.parquet_pieces``, two per core) and
        each task reads its pieces with pyarrow, casts and checks the rows as the local engine
        does (``prepare_rows``, input row numbers included) and routes them."""
        import numpy as np

        from core.sources import parquet_pieces

        schema = job.schema

        def read_and_route(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from core.rows import prepare_rows
            from core.sources import parquet_piece

            for batch in batches:
                for index, path, first, end, before in zip(*(c.to_pylist() for c in batch.columns)):
                    done = 0  # rows of the piece read so far
                    for rows in parquet_piece(path, first, end):
                        prepared = prepare_rows(rows, schema, job.row_kind_column, row_offset=before + done)
                        # Row ids order a group's chunks by input: piece by piece, then row by row.
                        ids = pa.array(np.arange(done, done + rows.num_rows, dtype=np.int64) + (index << 32))
                        done += rows.num_rows
                        yield _route(prepared.append_column(ROW_COLUMN, ids), job)

        parallelism = self.session.sparkContext.defaultParallelism
        pieces = parquet_pieces(files.paths, 2 * parallelism)
        frame = self.session.createDataFrame(pieces, "piece long, path string, first int, end int, before long")
        return frame.repartition(max(1, min(len(pieces), 2 * parallelism))).mapInArrow(read_and_route, _ROUTED_STRUCT)

    def _routed_matches(self, job: WriteJob, rows: MatchingRows, file_io: FileIO) -> DataFrame:
        """A delete's -D records as routed chunks (``_route``), read on the executors: one task
        reads its splits (``kernels.read``), keeps the matching rows and routes them. They go
        from the table's files into the write shuffle as Arrow, never through Spark's row types
        (a key rounded to microseconds would delete nothing) and never through the driver."""
        schema = job.schema
        spec = replace(rows, splits=())  # the splits travel as the DataFrame's rows, not in the closure

        def read_and_route(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            import numpy as np

            from core.kernels.delete import matching_parts
            from core.kernels.read import read_split
            from core.rows import prepare_rows

            for batch in batches:
                for index, blob in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                    split = pickle.loads(blob)
                    read = read_split(split, spec.read_schema, spec.schemas, file_io)
                    for part in matching_parts(spec, [read]):
                        prepared = prepare_rows(part, schema, job.row_kind_column)
                        # Row ids order the chunks of a group in write_group: split by split.
                        ids = pa.array(np.arange(prepared.num_rows, dtype=np.int64) + (index << 32))
                        yield _route(prepared.append_column(ROW_COLUMN, ids), job)

        blobs = [(i, pickle.dumps(s)) for i, s in enumerate(rows.splits)]
        # As many read tasks as a scan of these splits gets (scan.parallelism, else one per split).
        n = rows.read_schema.core_options.scan_parallelism(len(blobs)) or self.session.sparkContext.defaultParallelism
        n = max(1, min(n, len(blobs)))
        splits_df = self.session.createDataFrame(blobs, "split_index long, split binary").repartition(n)
        return splits_df.mapInArrow(read_and_route, _ROUTED_STRUCT)

    def _shuffle_write(self, job: WriteJob, routed_df: DataFrame, file_io: FileIO,
                       what: str) -> tuple[list[CommitMessage], int]:
        """The write's second half, for any routed DataFrame (``_ROUTED_STRUCT``): shuffle the
        chunks by (partition, bucket) and run ``kernels.write`` per group; the CommitMessages
        and row counts come back to the driver."""
        schema = job.schema

        def write_group(group: pa.Table) -> pa.Table:
            from core import binary_row
            from core.kernels.write import write_bucket

            group = group.take(pc.sort_indices(group, [(ROW_COLUMN, "ascending")]))  # input order
            rows = pa.concat_tables([_from_ipc(chunk) for chunk in group.column(CHUNK_COLUMN).to_pylist()])
            partition = group.column(PARTITION_COLUMN)[0].as_py()
            values = binary_row.decode(partition, [f.type for f in schema.partition_fields])
            bucket = group.column(BUCKET_COLUMN)[0].as_py()
            message = write_bucket(job.task_for(values, bucket), rows, file_io)
            return pa.table({MESSAGE_COLUMN: pa.array([pickle.dumps(message)], pa.binary()),
                             "rows": pa.array([rows.num_rows], pa.int64())})

        parallelism = schema.options.get("sink.parallelism")
        if parallelism:
            routed_df = routed_df.repartition(int(parallelism), PARTITION_COLUMN, BUCKET_COLUMN)
        result_struct = _spark_struct([(MESSAGE_COLUMN, T.BinaryType()), ("rows", T.LongType())])
        written = routed_df.groupBy(PARTITION_COLUMN, BUCKET_COLUMN).applyInArrow(write_group, result_struct)
        rows = self._run(what, written.collect)
        messages = [pickle.loads(r[MESSAGE_COLUMN]) for r in rows]
        return messages, sum(r["rows"] for r in rows)

    def run_tasks(self, work: Callable[[Any], Any], tasks: Sequence[Any], what: str) -> list[Any]:
        """``work`` on each task, one Spark task per task (a bucket's rewrite, say): the tasks
        and results travel pickled, ``work`` must be a module-level function of ``core`` (or a
        ``functools.partial`` of one). Results come back in no particular order."""
        if not tasks:
            return []

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                out = [pickle.dumps(work(pickle.loads(blob))) for blob in batch.column(0).to_pylist()]
                yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], names=[MESSAGE_COLUMN])

        blobs = [(pickle.dumps(t),) for t in tasks]
        df = self.session.createDataFrame(blobs, "task binary").repartition(len(blobs))
        rows = self._run(what, df.mapInArrow(run, _spark_struct([(MESSAGE_COLUMN, T.BinaryType())])).collect)
        return [pickle.loads(r[MESSAGE_COLUMN]) for r in rows]

    # ---- read ----------------------------------------------------------------------------------
    def output_struct(self, read_schema: TableSchema, select: Sequence[str] | None,
                      changes: bool = False) -> T.StructType:
        fields = [read_schema.field(n) for n in select] if select else list(read_schema.fields)
        struct = [T.StructField(f.name, spark_type(f.type), True) for f in fields]
        if changes:
            struct.insert(0, T.StructField(ROW_KIND_COLUMN, T.StringType(), False))
        return T.StructType(struct)

    def read_dataframe(self, splits: Sequence[ReadSplit], read_schema: TableSchema,
                       schemas: Mapping[int, TableSchema], *, where: str | None = None,
                       select: Sequence[str] | None = None, parallelism: int | None = None,
                       changes: bool = False, file_io: FileIO | None = None, packed: bool = False) -> DataFrame:
        """A DataFrame over the splits, read by ``kernels.read`` on the executors (with a
        leading ``_row_kind`` column for the splits of an incremental read).

        ``packed``: for rows bound for the driver (printing, files). Each task's rows travel as
        Arrow IPC blobs in lakectl's own types instead of Spark's: a TIMESTAMP(9) value keeps
        its nanoseconds, which Spark's microsecond timestamps would silently drop."""
        struct = self.output_struct(read_schema, select, changes)
        keep = ([ROW_KIND_COLUMN] if changes else []) + list(select or ())
        arrow_out = _arrow_schema(struct)

        def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from core.kernels.read import read_split
            from core.where import parse_where

            predicate = parse_where(where, read_schema.fields) if where else None
            for batch in batches:
                for blob in batch.column(0).to_pylist():
                    split = pickle.loads(blob)
                    part = read_split(split, read_schema, schemas, file_io or FileIO.for_uri(split.bucket_dir))
                    if predicate is not None:
                        part = part.filter(predicate.to_arrow())
                    if select:
                        part = part.select(keep)
                    if part.num_rows and packed:
                        yield pa.RecordBatch.from_arrays([pa.array([_to_ipc(part)], pa.binary())],
                                                         names=[MESSAGE_COLUMN])
                    elif part.num_rows:
                        yield from _batches(_conform(part, arrow_out))

        blobs = [(pickle.dumps(s),) for s in splits]
        n = parallelism or self.session.sparkContext.defaultParallelism
        splits_df = self.session.createDataFrame(blobs, "split binary").repartition(max(1, min(n, len(blobs))))
        return splits_df.mapInArrow(read, _spark_struct([(MESSAGE_COLUMN, T.BinaryType())]) if packed else struct)

    def read(self, splits: Sequence[ReadSplit], read_schema: TableSchema, schemas: Mapping[int, TableSchema],
             file_io: FileIO) -> Iterator[pa.Table]:
        """Rows back on the driver, in the lakectl Arrow types (for printing and files)."""
        if not splits:
            return iter(())
        changes = any(s.changes for s in splits)
        if changes:
            target = changes_schema(read_schema)
        else:
            target = pa.schema([arrow_field(f).with_nullable(True) for f in read_schema.fields])
        df = self.read_dataframe(splits, read_schema, schemas, changes=changes, file_io=file_io, packed=True)
        return self.collect_parts(df, target, packed=True)

    # The collected parts follow Spark's partitions, not the splits: already streamed.
    read_parts = read

    def collect_parts(self, df: DataFrame, schema: pa.Schema, *, packed: bool = False) -> Iterator[pa.Table]:
        """The DataFrame's rows on the driver one partition at a time, in ``schema``'s types:
        each task packs its Arrow batches as IPC blobs and ``toLocalIterator`` fetches one
        partition's blobs after another (no prefetch), so the driver holds a partition, not the
        result. ``scan --output`` writes them with the local engine's writer: one file on every
        engine."""

        def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                blob = _to_ipc(pa.Table.from_batches([batch]))
                yield pa.RecordBatch.from_arrays([pa.array([blob], pa.binary())], names=[MESSAGE_COLUMN])

        # A DataFrame from read_dataframe(packed=True) carries the blobs already.
        blobs = df if packed else df.mapInArrow(pack, _spark_struct([(MESSAGE_COLUMN, T.BinaryType())]))
        rows = self._run("reading", lambda: blobs.toLocalIterator(prefetchPartitions=False))
        while (row := self._run("reading", lambda: next(rows, None))) is not None:
            part = _from_ipc(row[MESSAGE_COLUMN])
            yield pa.Table.from_arrays([part.column(f.name).cast(f.type, safe=False) for f in schema], schema=schema)

    # ---- compact -------------------------------------------------------------------------------
    def compact(self, tasks: Sequence[Any], file_io: FileIO) -> list[CommitMessage]:
        """Run ``kernels.compact`` per bucket task on the executors."""
        if not tasks:
            return []

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from core.kernels.compact import compact_bucket

            for batch in batches:
                out = []
                for blob in batch.column(0).to_pylist():
                    task = pickle.loads(blob)
                    out.append(pickle.dumps(compact_bucket(task, file_io)))
                yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], names=[MESSAGE_COLUMN])

        blobs = [(pickle.dumps(t),) for t in tasks]
        df = self.session.createDataFrame(blobs, "task binary").repartition(len(blobs))
        rows = self._run("compacting", df.mapInArrow(run, _spark_struct([(MESSAGE_COLUMN, T.BinaryType())])).collect)
        return [pickle.loads(r[MESSAGE_COLUMN]) for r in rows]


def _monotonic_id() -> Any:
    from pyspark.sql import functions as F

    return F.monotonically_increasing_id()
