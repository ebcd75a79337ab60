"""Write Iceberg tables with pyiceberg 0.12 (run by tests/interop/iceberg_oracle.py in .venv-iceberg).

    iceberg_write.py CATALOG WAREHOUSE_DIR SPEC_JSON

SPEC is a JSON object: ``table`` ("ns.name"), ``partitioned`` (identity on ``region``),
``batches`` (how many appends; the rows of each are made here), ``rename`` (after the first
append, rename column ``name`` to ``label``), ``deletes`` (after the last append, delete these
row positions of the first data file through a Parquet position-delete file, as Iceberg's
merge-on-read does: pyiceberg 0.12 writes only copy-on-write deletes itself, so the delete
file and its DELETES manifest are written here with pyiceberg's own manifest writer),
``equality_delete`` (the same, but an equality-delete file on ``id``).
The tables are format version 2, registered in a SQLite file (CATALOG) laid out as pyiceberg's
SqlCatalog lays out its ``iceberg_tables`` table (catalog ``default``): SqlCatalog itself needs
SQLAlchemy, which the venv lacks, so a small catalog on the stdlib's sqlite3 stands in, writing
metadata files as pyiceberg's metastore catalogs do (``<location>/metadata/NNNNN-uuid.metadata.json``).
The last stdout line is JSON: ``metadata`` (the current metadata file).
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import sqlite3
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog import Catalog, MetastoreCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat, ManifestContent, ManifestEntry,
                                ManifestEntryStatus, ManifestWriterV2)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (BooleanType, DateType, DecimalType, DoubleType, IntegerType, LongType, NestedField,
                             StringType, TimestampType, TimestamptzType)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "price", DecimalType(10, 2), required=False),
    NestedField(4, "big", DecimalType(28, 4), required=False),
    NestedField(5, "at", TimestampType(), required=False),
    NestedField(6, "at_utc", TimestamptzType(), required=False),
    NestedField(7, "day", DateType(), required=False),
    NestedField(8, "ok", BooleanType(), required=False),
    NestedField(9, "score", DoubleType(), required=False),
    NestedField(10, "qty", IntegerType(), required=False),
    NestedField(11, "region", StringType(), required=False),
)


class SqliteCatalog(MetastoreCatalog):
    """pyiceberg's SqlCatalog layout on sqlite3: only what this script calls."""

    def __init__(self, path: str, warehouse: str) -> None:
        super().__init__("default", warehouse=warehouse)
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS iceberg_tables (catalog_name VARCHAR(255) NOT NULL, "
                        "table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, "
                        "metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), "
                        "PRIMARY KEY (catalog_name, table_namespace, table_name))")

    def load_table(self, identifier: Any) -> Table:
        namespace, name = self._split(identifier)
        row = self.db.execute("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND "
                              "table_namespace = ? AND table_name = ?", (self.name, namespace, name)).fetchone()
        if row is None:
            raise NoSuchTableError(f"{namespace}.{name}")
        io = self._load_file_io(location=row[0])
        metadata = FromInputFile.table_metadata(io.new_input(row[0]))
        return Table((namespace, name), metadata=metadata, metadata_location=row[0], io=io, catalog=self)

    def create_table(self, identifier: Any, schema: Any, location: Any = None, partition_spec: Any = None,
                     sort_order: Any = None, properties: Any = None) -> Table:
        staged = self._create_staged_table(identifier, schema, location, partition_spec=partition_spec,
                                           properties=properties or {})
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        namespace, name = self._split(identifier)
        self.db.execute("INSERT INTO iceberg_tables VALUES (?, ?, ?, ?, NULL)",
                        (self.name, namespace, name, staged.metadata_location))
        self.db.commit()
        return self.load_table(identifier)

    def commit_table(self, table: Table, requirements: Any, updates: Any) -> CommitTableResponse:
        current = self.load_table(table.name())
        staged = self._update_and_stage_table(current, table.name(), requirements, updates)
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        namespace, name = self._split(table.name())
        self.db.execute("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE "
                        "catalog_name = ? AND table_namespace = ? AND table_name = ?",
                        (staged.metadata_location, current.metadata_location, self.name, namespace, name))
        self.db.commit()
        return CommitTableResponse(metadata=staged.metadata, metadata_location=staged.metadata_location)

    def _resolve_table_location(self, location: Any, database_name: str, table_name: str) -> str:
        return location or f"{self.properties['warehouse']}/{database_name}.db/{table_name}"

    @staticmethod
    def _split(identifier: Any) -> tuple[str, str]:
        return Catalog.namespace_to_string(Catalog.namespace_from(identifier)), Catalog.table_name_from(identifier)


SqliteCatalog.__abstractmethods__ = frozenset()  # the rest of the Catalog API is not used here


def batch(n: int, name_column: str) -> pa.Table:
    """Six rows, ``n`` making each batch's values its own; regions eu, us and null."""
    ids = [n * 10 + i for i in range(6)]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        name_column: [f"n{i}" if i % 3 else None for i in ids],
        "price": pa.array([decimal.Decimal(f"{i}.25") if i % 4 else None for i in ids], pa.decimal128(10, 2)),
        "big": pa.array([decimal.Decimal(f"-{i}12345678901234.5678") for i in ids], pa.decimal128(28, 4)),
        "at": pa.array([dt.datetime(2024, 1, 1, 2, 3, 4, i) for i in ids], pa.timestamp("us")),
        "at_utc": pa.array([dt.datetime(1999, 12, 31, 23, 59, 59, i, tzinfo=dt.timezone.utc) for i in ids],
                           pa.timestamp("us", tz="UTC")),
        "day": pa.array([dt.date(2024, 2, 1) + dt.timedelta(days=i) for i in ids]),
        "ok": [i % 2 == 0 for i in ids],
        "score": [i / 3 for i in ids],
        "qty": pa.array([i * 7 for i in ids], pa.int32()),
        "region": ["eu", "us", None, "eu", "us", "eu"],
    })


class _WithDeleteFile(_FastAppendFiles):
    """A fast append whose snapshot also lists one delete file in a DELETES manifest."""

    delete_file: DataFile

    def _manifests(self) -> list[Any]:
        class DeleteManifestWriter(ManifestWriterV2):
            def content(self) -> ManifestContent:
                return ManifestContent.DELETES

            @property
            def _meta(self) -> dict[str, str]:
                return {**super()._meta, "content": "deletes"}

        writer = DeleteManifestWriter(self._transaction.table_metadata.spec(), self.schema(),
                                      self.new_manifest_output(), self._snapshot_id, self._compression)
        with writer:
            writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=self._snapshot_id,
                                               sequence_number=None, file_sequence_number=None,
                                               data_file=self.delete_file))
        return super()._manifests() + [writer.to_manifest_file()]


def add_delete_file(table: Any, rows: pa.Table, content: DataFileContent, target: Any,
                    equality_ids: list[int] | None = None) -> None:
    """Write ``rows`` as a delete file in ``target``'s partition and commit it."""
    path = f"{table.location()}/data/delete-{uuid.uuid4()}.parquet"
    with table.io.new_output(path).create() as out:
        pq.write_table(rows, out)
    size = len(table.io.new_input(path).open().read())
    delete_file = DataFile.from_args(content=content, file_path=path, file_format=FileFormat.PARQUET,
                                     partition=target.partition, record_count=rows.num_rows, file_size_in_bytes=size,
                                     equality_ids=equality_ids, spec_id=target.spec_id)
    with table.transaction() as tx:
        producer = _WithDeleteFile(operation=__import__("pyiceberg.table.snapshots", fromlist=["Operation"])
                                   .Operation.OVERWRITE, transaction=tx, io=table.io)
        producer.delete_file = delete_file
        producer.commit()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog")
    parser.add_argument("warehouse")
    parser.add_argument("spec")
    args = parser.parse_args()
    spec = json.loads(args.spec)
    catalog = SqliteCatalog(args.catalog, f"file://{args.warehouse}")
    partition = PartitionSpec(PartitionField(source_id=11, field_id=1000, transform=IdentityTransform(),
                                             name="region")) if spec.get("partitioned") else PartitionSpec()
    table = catalog.create_table(spec["table"], SCHEMA, partition_spec=partition,
                                 properties={"format-version": "2"})
    name_column = "name"
    for n in range(spec.get("batches", 1)):
        table.append(batch(n, name_column).cast(table.schema().as_arrow()))
        if n == 0 and spec.get("rename"):
            with table.update_schema() as update:
                update.rename_column("name", "label")
            name_column = "label"
    first = min((task.file for task in table.scan().plan_files()), key=lambda f: f.file_path)
    if spec.get("deletes"):
        positions = spec["deletes"]
        add_delete_file(table, pa.table({"file_path": [first.file_path] * len(positions),
                                         "pos": pa.array(positions, pa.int64())}),
                        DataFileContent.POSITION_DELETES, first)
    if spec.get("equality_delete"):
        add_delete_file(table, pa.table({"id": pa.array([0], pa.int64())}), DataFileContent.EQUALITY_DELETES,
                        first, equality_ids=[1])
    table = catalog.load_table(spec["table"])
    print(json.dumps({"metadata": table.metadata_location}))


if __name__ == "__main__":
    main()
