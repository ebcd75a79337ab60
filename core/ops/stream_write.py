"""Streaming writes: one APPEND snapshot per batch, the analog of a Flink checkpoint, exactly
once across restarts.

Paimon's streaming committers keep one ``commitUser`` for the life of a job, restarts
included, and number their commits with an increasing ``commitIdentifier`` (the checkpoint
id). Before committing, a restarted committer looks up the latest snapshot of its commit user
and drops everything with an identifier at or below that snapshot's: those were committed
before the crash. ``StreamWriter`` does the same, and drops such a batch before writing any
file, so a re-sent batch costs nothing and leaves no orphans.

Two sources of batches:
- ``write_records``: JSON lines or CSV on a pipe (``lakectl write --stream``). The identifier
  of a batch is its input offset: how many records of the stream had been read at its end.
  It is deterministic for a given input, so a producer that replays its input (from the start,
  or from a known record with ``input_offset``) gets the same identifiers, and records at or
  below the last committed offset are dropped one by one.
- ``write_stream``: a Spark Structured Streaming DataFrame, through ``foreachBatch``; the
  identifier is the micro-batch id, which Spark re-delivers unchanged after a failure. The
  commit user lives in the query's checkpoint directory, so a query restarted from the same
  checkpoint keeps it.

Snapshots expire, and with them what a commit user committed: each commit of a streaming
writer also updates the user's progress marker beside the table (``core/commit_user.py``),
and a restart resumes after the later of its latest snapshot and its marker. Where neither
can tell (no marker, and the snapshots that could hold the user's commits are gone, or a
commit was in flight when the writer stopped and the snapshots after it expired), a record
stream refuses to guess and asks for ``--input-offset`` rather than write records twice.

A batch's watermark (epoch millis) goes into its snapshot by Paimon's rule: the max of it and
the latest snapshot's (``core.commit.next_watermark``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, BinaryIO, Callable

import pyarrow as pa
import pyarrow.compute as pc

from core.commit_user import Committing, CommitUserMarkers, Marker, Progress, Walk, resolve_progress
from core.engines import EngineSettings
from core.errors import CommitConflictError, InvalidDataError, NotFoundError, UsageError
from core.fileio import FileIO, join
from core.ops.write import check_input_columns, pick_engine, write_and_commit
from core.record_stream import RecordReader
from core.sources import read_records
from core.table_handle import TableHandle
from core.types import arrow_field

log = logging.getLogger(__name__)

# Where write_stream keeps its commit user inside a Spark checkpoint directory.
CHECKPOINT_COMMIT_USER = "lakectl/commit-user"
# How often an idle record stream checks for a stop request.
_POLL_SECONDS = 0.2

_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_TIME_TYPES = ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE")
# Arrow timestamp unit -> (multiply, floor-divide) to get epoch millis.
_TO_MILLIS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One batch of a stream: committed as ``snapshot_id``, skipped (this commit user already
    committed ``commit_identifier``), or neither (no rows: nothing to commit)."""

    table: str
    snapshot_id: int | None
    commit_identifier: int
    rows: int  # rows written
    skipped: bool
    watermark: int | None  # the snapshot's watermark (epoch millis, after the max rule)
    commit_user: str


@dataclass(frozen=True, slots=True)
class StreamSummary:
    """A record stream that ended (end of input, or a stop request)."""

    table: str
    commit_user: str
    batches: int  # batches committed
    batches_skipped: int  # batches already committed by this commit user
    rows: int  # rows written
    rows_skipped: int  # records at or below the last committed offset, dropped
    snapshot_id: int | None  # the last snapshot this run committed
    commit_identifier: int | None  # the last committed offset of this commit user
    watermark: int | None
    stopped_by: str  # "eof" or "signal"


class StreamWriter:
    """Commits batches of one stream under one commit user, skipping those it committed before.

    Args:
        table: an existing table.
        commit_user: the stream's identity; the same one across restarts gives exactly once.
        engine_settings: how to run the writes (local or Spark), as for ``write``.
        watermark_column: a TIMESTAMP, TIMESTAMP_LTZ, DATE or integer column whose max in a
            batch is the batch's watermark (epoch millis; integers as they are).
        row_kind_column: CDC column holding +I, -U, +U, -D, as for ``write``.

    Raises:
        NotFoundError: the table does not exist.
        UsageError: an empty commit user, or an unusable watermark column.
    """

    def __init__(self, table: TableHandle, commit_user: str, *, engine_settings: EngineSettings | None = None,
                 watermark_column: str | None = None, row_kind_column: str | None = None) -> None:
        if not commit_user or not commit_user.strip():
            raise UsageError("the commit user must not be empty")
        if not table.exists():
            raise NotFoundError(f"table {table.name} does not exist (looked in {table.path})")
        self.table = table
        self.commit_user = commit_user
        self.engine_settings = engine_settings
        self.row_kind_column = row_kind_column
        self.watermark_column = watermark_column
        if watermark_column is not None:
            kind = table.schema.field(watermark_column).type.name
            if kind not in _INTEGER_TYPES + _TIME_TYPES:
                raise UsageError(f"--watermark-column {watermark_column} is {kind}; it must be a TIMESTAMP, "
                                 "TIMESTAMP_LTZ, DATE or integer column")
        self._markers = CommitUserMarkers(table.file_io, table.branch_path)
        self._marker: Marker | None = None  # the user's marker as this writer last read or wrote it
        self._last: int | None = None
        self._last_snapshot: int | None = None
        self._looked_up = False

    def lookup_progress(self) -> Progress:
        """Where this commit user resumes: after the later of its latest snapshot and its
        progress marker (``core.commit_user.resolve_progress``). ``Progress.unknown`` says
        when the snapshots that could tell have expired; the identifier is then the last one
        known, and the caller decides (a record stream refuses, Spark goes on from it)."""
        marker = self._markers.read(self.commit_user)  # first: its snapshot is then at or below the walk's latest
        progress = resolve_progress(marker, self._walk(), self._probe, commit_user=self.commit_user)
        if progress.stale_marker:
            log.info("commit user %s: the marker's commit (%s) was rolled back; going by the snapshots",
                     self.commit_user, marker.identifier)
        self._marker = marker
        self._last, self._last_snapshot, self._looked_up = progress.identifier, progress.snapshot_id, True
        return progress

    def last_committed_identifier(self) -> int | None:
        """The identifier this commit user resumes after: its latest snapshot's or its
        marker's, whichever is later (see ``lookup_progress``); None if it committed nothing."""
        return self.lookup_progress().identifier

    def start_over(self) -> None:
        """Forget what this commit user committed before: remove its marker and resume after
        nothing, whatever its snapshots say (``--reset-progress``, and a fresh commit user)."""
        self._markers.delete(self.commit_user)
        self._marker, self._last, self._last_snapshot, self._looked_up = None, None, None, True

    def assume_committed(self, identifier: int) -> None:
        """Take records up to ``identifier`` as committed, on the caller's word (``--input-offset``
        where ``lookup_progress`` could not tell); the marker keeps it from the next commit on."""
        if self._last is None or identifier > self._last:
            self._last, self._last_snapshot = identifier, None
        self._looked_up = True

    @property
    def last_committed(self) -> int | None:
        """``last_committed_identifier()`` as of the first lookup, then of this writer's commits
        (a commit user belongs to one running stream, as in Paimon)."""
        if not self._looked_up:
            return self.last_committed_identifier()
        return self._last

    def write_batch(self, data: Any, identifier: int, watermark: int | None = None) -> BatchResult:
        """Commit ``data`` (an Arrow table or a Spark DataFrame) as one APPEND snapshot with
        ``identifier``, or skip it if this commit user already committed ``identifier`` or a
        later one. Without ``watermark``, the max of the watermark column (if any) is used.
        The user's progress marker says the commit is in flight before it, and names it after.

        Raises:
            InvalidDataError: rows that do not fit the table (nothing of the batch is committed).
            CommitConflictError: the commit could not land, or another run of this commit user
                moved its marker (nothing of the batch is committed).
        """
        last = self.last_committed
        if last is not None and identifier <= last:
            log.info("batch %d skipped: commit user %s already committed %d", identifier, self.commit_user, last)
            return BatchResult(self.table.name, None, identifier, 0, True, None, self.commit_user)
        if watermark is None and self.watermark_column is not None:
            watermark = column_watermark(data, self.table, self.watermark_column)
        engine = pick_engine(data, self.engine_settings, self.table.schema)
        self._begin(identifier)
        try:
            done = write_and_commit(self.table, data, engine, row_kind_column=self.row_kind_column,
                                    commit_user=self.commit_user, identifier=identifier, watermark=watermark,
                                    engine_settings=self.engine_settings)
        except InvalidDataError:
            self._put(self._settled())  # refused before the commit: nothing is in flight
            raise
        snapshot = done.snapshot
        if snapshot is not None:
            self._last, self._last_snapshot = identifier, snapshot.id
        self._put(self._settled())
        log.info("batch %d: %d rows, snapshot %s", identifier, done.rows_in, snapshot.id if snapshot else None)
        return BatchResult(self.table.name, snapshot.id if snapshot else None, identifier,
                           done.rows_in if snapshot else 0, False, snapshot.watermark if snapshot else None,
                           self.commit_user)

    # ---- the progress marker ----
    def _walk(self) -> Walk:
        """This user's latest snapshot, walking back from the latest (see ``Walk``)."""
        snapshots = self.table.snapshots
        latest = snapshots.latest_id()
        if latest is None:
            return Walk(None, None, 1, 0)
        earliest = snapshots.earliest_id() or 1
        for sid in range(latest, earliest - 1, -1):
            try:
                snap = snapshots.snapshot(sid)
            except NotFoundError:
                return Walk(None, None, sid + 1, latest)  # expired while we walked back: the older ones are gone too
            if snap.commit_user == self.commit_user:
                return Walk(snap.commit_identifier, sid, sid, latest)
        return Walk(None, None, earliest, latest)

    def _probe(self, snapshot_id: int) -> tuple[str, int] | None:
        try:
            snap = self.table.snapshots.snapshot(snapshot_id)
        except NotFoundError:
            return None
        return snap.commit_user, snap.commit_identifier

    def _settled(self) -> Marker:
        return Marker(self.commit_user, self._last, self._last_snapshot)

    def _begin(self, identifier: int) -> None:
        """Record the commit about to start. The marker must be as this writer left it: if
        another run of the same commit user moved it, committing would duplicate that run's
        records and move its marker back, so stop before writing anything."""
        current = self._markers.read(self.commit_user)
        if current != self._marker:
            raise CommitConflictError(
                f"another run of commit user {self.commit_user} changed its progress marker while this one ran; "
                f"batch {identifier} was not committed: run one stream per commit user")
        after = self.table.snapshots.latest_id() or 0  # the commit, if it lands, is a later snapshot
        self._put(Marker(self.commit_user, self._last, self._last_snapshot, Committing(identifier, after)))

    def _put(self, marker: Marker) -> None:
        self._markers.write(marker)
        self._marker = marker


# ---- watermarks ----------------------------------------------------------------------------
def column_watermark(data: Any, table: TableHandle, column: str) -> int | None:
    """Max of ``column`` in a batch as epoch millis (integers as they are); None without values."""
    if type(data).__module__.startswith("pyspark"):
        from core.ops.spark_stream import spark_max_millis

        return spark_max_millis(data, column)
    if column not in data.column_names:
        return None
    target = arrow_field(table.schema.field(column)).type
    try:
        values = pc.cast(data.column(column), target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidDataError(f"--watermark-column {column}: values of type {data.column(column).type} do not fit "
                               f"{target}: {str(e).strip().splitlines()[0]}") from e
    return _max_millis(values)


def _max_millis(values: pa.ChunkedArray | pa.Array) -> int | None:
    t = values.type
    if pa.types.is_integer(t):
        return pc.max(values).as_py()
    if pa.types.is_date32(t):
        days = pc.max(pc.cast(values, pa.int32())).as_py()
        return None if days is None else days * 86_400_000
    if pa.types.is_timestamp(t):
        raw = pc.max(pc.cast(values, pa.int64())).as_py()
        if raw is None:
            return None
        multiply, divide = _TO_MILLIS[t.unit]
        return raw * multiply // divide
    raise UsageError(f"a watermark needs a TIMESTAMP, DATE or integer column, not {t}")


# ---- a record stream (lakectl write --stream) -----------------------------------------------
def write_records(table: TableHandle, source: BinaryIO, *, fmt: str = "jsonl", commit_user: str | None = None,
                  commit_rows: int | None = None, commit_interval: float | None = None,
                  input_offset: int | None = None, reset_progress: bool = False,
                  watermark_column: str | None = None, row_kind_column: str | None = None,
                  engine_settings: EngineSettings | None = None, stop: threading.Event | None = None,
                  on_batch: Callable[[BatchResult], None] | None = None,
                  fill_missing_columns: bool = False) -> StreamSummary:
    """Read records (JSON lines or CSV) from ``source`` and commit a snapshot every
    ``commit_rows`` records and/or every ``commit_interval`` seconds, and the rest at the end.

    Batch identifiers are input offsets (see the module doc): the first record of ``source``
    is record ``input_offset + 1`` of the stream (default 0). Records at or below the commit
    user's last committed offset are dropped. A set ``stop`` event ends the stream after
    committing what was read (the records still unread stay in the pipe).

    Where the user's progress cannot be known (``StreamWriter.lookup_progress``), the stream is
    refused unless ``input_offset`` is given: it then means that the records before the input
    are in the table.

    Args:
        commit_user: the stream's identity (default: a fresh UUID, which makes a restart
            unable to tell what was committed).
        reset_progress: forget what ``commit_user`` committed before (its progress marker and
            its snapshots): write every record of the input.
        on_batch: called with every batch's result as it happens.
        fill_missing_columns: write table columns a batch lacks (no record names them) as
            null; without it such a batch is refused, as ``write_input`` refuses such a file.

    Raises:
        UsageError: bad batch sizes, offsets or format; or a named commit user whose progress
            cannot be known, without ``input_offset``.
        InvalidDataError: a batch that does not fit the table; the batches before it stay committed.
    """
    if commit_rows is not None and commit_rows < 1:
        raise UsageError(f"--commit-rows {commit_rows} must be 1 or more")
    if commit_interval is not None and commit_interval <= 0:
        raise UsageError("--commit-interval must be longer than 0")
    if commit_rows is None and commit_interval is None:
        raise UsageError("a streaming write needs --commit-rows or --commit-interval")
    if input_offset is not None and input_offset < 0:
        raise UsageError(f"--input-offset {input_offset} must be 0 or more")
    reader = RecordReader(source, fmt)
    writer = StreamWriter(table, commit_user or str(uuid.uuid4()), engine_settings=engine_settings,
                          watermark_column=watermark_column, row_kind_column=row_kind_column)
    if reset_progress or commit_user is None:
        writer.start_over()  # a fresh UUID has committed nothing
    else:
        _resume(writer, input_offset)
    input_offset = input_offset or 0
    hint = pa.schema([arrow_field(f) for f in table.schema.fields])
    stats = {"batches": 0, "skipped": 0, "rows": 0, "rows_skipped": 0}
    snapshot_id = watermark = None
    offset = input_offset

    def flush(records: list[bytes]) -> None:
        nonlocal offset, snapshot_id, watermark
        first, end = offset, offset + len(records)
        offset = end
        last = writer.last_committed
        drop = 0 if last is None else min(len(records), max(0, last - first))
        if drop == len(records):
            result = writer.write_batch(pa.table({}), end)  # skipped: nothing is parsed or written
        else:
            data = read_records(reader.batch_bytes(records[drop:]), fmt, hint,
                                f"stdin (records {first + drop + 1} to {end})")
            check_input_columns(table.schema, data.column_names, fill_missing_columns)
            result = writer.write_batch(data, end)
        stats["rows_skipped"] += drop
        if result.skipped:
            stats["skipped"] += 1
        elif result.snapshot_id is not None:
            stats["batches"] += 1
            stats["rows"] += result.rows
            snapshot_id, watermark = result.snapshot_id, result.watermark
        if on_batch is not None:
            on_batch(result)

    pending: list[bytes] = []
    deadline = time.monotonic() + commit_interval if commit_interval else None
    stopped_by = "eof"
    while True:
        if stop is not None and stop.is_set():
            stopped_by = "signal"
            break
        timeout = _POLL_SECONDS
        if deadline is not None:
            timeout = max(0.0, min(timeout, deadline - time.monotonic()))
        for record in reader.read(timeout):
            pending.append(record)
            if commit_rows is not None and len(pending) >= commit_rows:
                flush(pending)
                pending = []
        if reader.eof:
            break
        if deadline is not None and time.monotonic() >= deadline:
            if pending:
                flush(pending)
                pending = []
            deadline = time.monotonic() + commit_interval
    if pending:
        flush(pending)
    return StreamSummary(table.name, writer.commit_user, stats["batches"], stats["skipped"], stats["rows"],
                         stats["rows_skipped"], snapshot_id, writer.last_committed, watermark, stopped_by)


def _resume(writer: StreamWriter, input_offset: int | None) -> None:
    """Look up where the commit user resumes; refuse to guess where nothing can tell."""
    progress = writer.lookup_progress()
    if progress.unknown is not None:
        if input_offset is None:
            raise UsageError(f"{progress.unknown}. Re-send the input from the first record not in the table with "
                             "--input-offset N (N: the records before it, 0 for a new stream)")
        log.warning("%s; going by --input-offset %d: records up to %d are taken as in the table",
                    progress.unknown, input_offset, input_offset)
        writer.assume_committed(input_offset)
        return
    last = progress.identifier
    if last is not None and input_offset is not None and input_offset > last:
        log.warning("the input starts after record %d, but commit user %s committed records up to %d only: "
                    "records %d to %d are not in the table", input_offset, writer.commit_user, last,
                    last + 1, input_offset)


# ---- Spark Structured Streaming --------------------------------------------------------------
def checkpoint_commit_user(checkpoint: str, storage_options: dict[str, Any] | None = None) -> str:
    """The commit user kept in ``<checkpoint>/lakectl/commit-user``, created on first use."""
    file_io = FileIO.for_uri(checkpoint, storage_options)
    path = join(checkpoint, CHECKPOINT_COMMIT_USER)
    if not file_io.exists(path):
        file_io.try_create(path, str(uuid.uuid4()).encode("ascii"))  # a racing query may win: read theirs
    user = file_io.read_text(path).strip()
    if not user:
        raise UsageError(f"{path} is empty; delete it or the whole checkpoint to start a new stream")
    return user


def stream_batch_function(table: TableHandle, checkpoint: str, *,
                          engine_settings: EngineSettings | None = None) -> Callable[[Any, int], BatchResult]:
    """The ``foreachBatch`` function of ``write_stream``: commits micro-batch ``batch_id`` with
    the batch id as commit identifier (a re-delivered id is skipped) and the stream's
    event-time watermark."""
    from core.ops.spark_stream import spark_event_time_watermark

    writer = StreamWriter(table, checkpoint_commit_user(checkpoint),
                          engine_settings=replace(engine_settings or EngineSettings(), engine="spark"))
    progress = writer.lookup_progress()
    if progress.unknown is not None:
        # Spark re-delivers from its own checkpoint, at most the batches after its last commit:
        # going on from the last commit known can write one batch twice, never skip one.
        log.warning("%s; going on after batch %s", progress.unknown, progress.identifier)

    def each_batch(df: Any, batch_id: int) -> BatchResult:
        last = writer.last_committed
        if last is not None and batch_id <= last:  # before any Spark job: a re-delivered batch costs nothing
            return writer.write_batch(df, batch_id)
        return writer.write_batch(df, batch_id, spark_event_time_watermark(df))

    return each_batch


def write_stream(table: TableHandle, streaming_df: Any, *, checkpoint: str, trigger: dict[str, Any] | None = None,
                 query_name: str | None = None, engine_settings: EngineSettings | None = None) -> Any:
    """Start a Spark Structured Streaming query that commits each micro-batch as one snapshot.

    Args:
        streaming_df: a streaming DataFrame (``spark.readStream...``) with the table's columns.
        checkpoint: the query's checkpoint location; it also keeps the commit user, so a query
            restarted from it commits each batch exactly once.
        trigger: keyword arguments of ``DataStreamWriter.trigger``, e.g.
            ``{"processingTime": "10 seconds"}`` or ``{"availableNow": True}``.
        query_name: the query's name.

    Returns:
        The started ``StreamingQuery``.

    Raises:
        UsageError: the DataFrame is not a streaming one.
        NotFoundError: the table does not exist.
    """
    if not getattr(streaming_df, "isStreaming", False):
        raise UsageError("write_stream needs a streaming DataFrame (spark.readStream...); use write for a batch")
    from core.ops.spark_stream import start_foreach_batch

    each_batch = stream_batch_function(table, checkpoint, engine_settings=engine_settings)
    return start_foreach_batch(streaming_df, each_batch, checkpoint=checkpoint, trigger=trigger,
                               query_name=query_name)
