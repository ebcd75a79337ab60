"""Spark Structured Streaming over a table: the source of ``Table.read_stream()`` and the
DataFrame side of ``Table.write_stream()`` (event-time watermarks, the foreachBatch query).

The source is the ``scan --follow`` of Spark, on PySpark's Python data source API. An offset
``{"next": N, "full": F}`` means every snapshot before N was delivered. F is a snapshot id
to deliver in full at the start of the next batch, or 0 for none. Spark keeps offsets in
the query's checkpoint, so a restarted query resumes where it stopped.

The scan mode, the consumer id and the table's ``scan.*`` options pick the first offset, as
for ``follow``. Each micro-batch then reads the snapshots in its offset range: one Spark task
per (partition, bucket) split, read by ``kernels.read`` on the executors. The stream keeps
the schema it started with; later files are read into it, as for time travel.

With a consumer id, Spark's commit of a batch records ``nextSnapshot`` in
``consumer/consumer-<id>``, so expiration keeps what the query has not processed. Spark
commits a batch to its source when it starts the next one, so the consumer trails the query
by one micro-batch: it holds back a little more than needed, never less.
``scan.bounded.watermark`` caps the offsets: the stream produces nothing past the first
snapshot whose watermark is past the bound.
"""

from __future__ import annotations

import base64
import pickle
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from core.consumer import ConsumerManager
from core.engines.spark import _arrow_schema, _batches, _conform, spark_type
from core.errors import UsageError
from core.kernels.read import ROW_KIND_COLUMN, ReadSplit, read_changes, read_split
from core.ops.follow import FollowSettings, plan_start, reads_changes
from core.schema import TableSchema
from core.table_handle import TableHandle

SOURCE_NAME = "lakectl"


def stream_struct(schema: TableSchema) -> T.StructType:
    fields = [T.StructField(ROW_KIND_COLUMN, T.StringType(), False)]
    fields += [T.StructField(f.name, spark_type(f.type), True) for f in schema.fields]
    return T.StructType(fields)


def _encode(value: Any) -> str:
    return base64.b64encode(pickle.dumps(value)).decode("ascii")


def _decode(text: str) -> Any:
    return pickle.loads(base64.b64decode(text))


class StreamPart(InputPartition):
    """One split of one snapshot: read in full (merged, as +I) or as its changes."""

    def __init__(self, split: ReadSplit, full: bool, read_schema: TableSchema,
                 schemas: dict[int, TableSchema], table: TableHandle) -> None:
        super().__init__(None)
        self.split, self.full, self.read_schema, self.schemas, self.table = split, full, read_schema, schemas, table


class TableStreamSource(DataSource):
    """``spark.readStream.format("lakectl").option("table", ...)``: the options carry the
    pickled TableHandle (with its store's settings) and the FollowSettings."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> T.StructType:
        return stream_struct(_decode(self.options["read_schema"]))

    def streamReader(self, schema: T.StructType) -> "TableStreamReader":
        return TableStreamReader(_decode(self.options["table"]), _decode(self.options["settings"]),
                                 _decode(self.options["read_schema"]))


class TableStreamReader(DataSourceStreamReader):
    def __init__(self, table: TableHandle, settings: FollowSettings, read_schema: TableSchema) -> None:
        self.table, self.settings, self.read_schema = table, settings, read_schema

    def initialOffset(self) -> dict:
        start = plan_start(self.table, self.settings)
        if start.full_snapshot is not None:
            return {"next": start.full_snapshot, "full": start.full_snapshot}
        return {"next": start.next_id or 0, "full": 0}  # 0: compacted-full waiting for a compaction

    def latestOffset(self, start: dict, limit: Any = None) -> dict:
        snapshots = self.table.snapshots
        latest = snapshots.latest_id() or 0
        if start["next"] == 0:  # compacted-full: begin at the first compaction that appears
            compacted = snapshots.latest_compacted()
            if compacted is None:
                return start
            first = {"next": compacted.id, "full": compacted.id}
            end = self._capped(first, latest)
            # "compacted" tells partitions() which snapshot to read in full from the waiting offset.
            return start if end is first else {**end, "compacted": compacted.id}
        return self._capped(start, latest)

    def _capped(self, start: dict, latest: int) -> dict:
        """The end offset: every committed snapshot, but none past the bounded watermark."""
        bound = self.settings.bounded_watermark
        end = start["next"]
        while end <= latest:
            snap = self.table.snapshots.snapshot(end)
            if bound is not None and snap.watermark is not None and snap.watermark > bound:
                break
            end += 1
        if end == start["next"]:
            return start
        return {"next": end, "full": 0}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        from core.ops.changes import plan_changes
        from core.ops.scan import plan

        parts: list[InputPartition] = []
        first = start["next"]
        full_id = start.get("full") or (end.get("compacted", 0) if first == 0 else 0)
        if full_id:
            snap = self.table.snapshots.snapshot(full_id)
            full = plan(self.table, snap, read_schema=self.read_schema)
            parts += [StreamPart(s, True, self.read_schema, full.schemas, self.table) for s in full.splits]
            first = full_id + 1
        for sid in range(first, end["next"]):
            snap = self.table.snapshots.snapshot(sid)
            changelog = self.table.schemas.schema(snap.schema_id).core_options.changelog_producer != "none"
            if not reads_changes(snap, changelog, self.settings.read_overwrite):
                continue
            changes = plan_changes(self.table, sid - 1, sid, streaming=True)
            schemas = {**changes.schemas, self.read_schema.id: self.read_schema}
            parts += [StreamPart(s, False, self.read_schema, schemas, self.table) for s in changes.splits]
        return parts

    def read(self, partition: StreamPart) -> Iterator[pa.RecordBatch]:
        p = partition
        if p.full:
            rows = read_split(p.split, p.read_schema, p.schemas, p.table.file_io)
            rows = rows.add_column(0, ROW_KIND_COLUMN, pa.array(["+I"] * rows.num_rows, pa.string()))
        else:
            rows = read_changes(p.split, p.read_schema, p.schemas, p.table.file_io)
        yield from _batches(_conform(rows, _arrow_schema(stream_struct(p.read_schema))))

    def commit(self, end: dict) -> None:
        if self.settings.consumer_id and end["next"] > 0:
            ConsumerManager(self.table.file_io, self.table.branch_path).record(self.settings.consumer_id, end["next"])


# ---- the sink side: Table.write_stream (core.ops.stream_write) ----------------------------------
# Spark's metadata key on an event-time column (set by withWatermark): the delay in millis.
SPARK_WATERMARK_DELAY = "spark.watermarkDelayMs"


def spark_max_millis(df: Any, column: str) -> int | None:
    """Max of a Spark column as epoch millis, computed by Spark."""
    kind = df.schema[column].dataType.typeName()
    quoted = "`" + column.replace("`", "``") + "`"
    if kind in ("timestamp", "timestamp_ntz"):
        expr = f"max(unix_millis(CAST({quoted} AS TIMESTAMP)))"
    elif kind == "date":
        expr = f"max(unix_date({quoted})) * 86400000"
    elif kind in ("byte", "short", "integer", "long"):
        expr = f"max({quoted})"
    else:
        raise UsageError(f"a watermark needs a timestamp, date or integer column; {column} is {kind}")
    value = df.selectExpr(expr).collect()[0][0]
    return None if value is None else int(value)


def spark_event_time_watermark(df: Any) -> int | None:
    """The watermark of a Spark micro-batch: max of its event-time column (the one
    ``withWatermark`` marked with ``spark.watermarkDelayMs``) minus the delay; None without one."""
    for f in df.schema.fields:
        delay = (f.metadata or {}).get(SPARK_WATERMARK_DELAY)
        if delay is not None:
            newest = spark_max_millis(df, f.name)
            return None if newest is None else newest - int(delay)
    return None


def start_foreach_batch(streaming_df: DataFrame, each_batch: Any, *, checkpoint: str,
                        trigger: dict[str, Any] | None, query_name: str | None) -> Any:
    """Start the streaming query that hands each micro-batch to ``each_batch(df, batch_id)``."""
    out = streaming_df.writeStream.foreachBatch(each_batch).option("checkpointLocation", checkpoint)
    if trigger:
        out = out.trigger(**trigger)
    if query_name:
        out = out.queryName(query_name)
    return out.start()


def read_stream(session: SparkSession, table: TableHandle, settings: FollowSettings) -> DataFrame:
    """A streaming DataFrame of the table's rows as they commit (``_row_kind`` first)."""
    from core.option_rules import READ, check_options

    from core.kernels.data_evolution import refuse_incremental

    check_options(table.schema, table.name, READ)
    refuse_incremental(table.schema, table.name)
    session.dataSource.register(TableStreamSource)
    return (session.readStream.format(SOURCE_NAME)
            .option("table", _encode(table))
            .option("settings", _encode(settings))
            .option("read_schema", _encode(table.schema))
            .load())


__all__ = ["SOURCE_NAME", "TableStreamSource", "read_stream", "spark_event_time_watermark", "spark_max_millis",
           "start_foreach_batch", "stream_struct"]
