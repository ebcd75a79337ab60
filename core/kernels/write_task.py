"""What a write kernel needs besides the rows, for one (partition, bucket): kept apart from
``core.kernels.write`` because the changelog producers, which the write kernel calls, read it
too."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.deletion_vectors import CarriesDeletionFiles, DeletionFile
from core.fileio import join
from core.manifest import DataFileMeta
from core.postpone import bucket_dir_name
from core.schema import TableSchema


class InBucketDir:
    """Base of the tasks that name their bucket by table, partition directory and number."""

    __slots__ = ()
    table_path: str
    partition_dir: str
    bucket: int

    @property
    def bucket_dir(self) -> str:
        return join(self.table_path, self.partition_dir, bucket_dir_name(self.bucket))


@dataclass(frozen=True, slots=True)
class WriteTask(InBucketDir, CarriesDeletionFiles):
    """Everything a write kernel needs besides the rows; small and picklable."""

    table_path: str
    schema: TableSchema
    partition: bytes
    partition_dir: str  # "dt=2024-01-01" or "" for unpartitioned tables
    bucket: int
    total_buckets: int
    start_sequence: int
    # changelog-producer=lookup: the bucket's live files before this write, and the schemas
    # they were written with, to look up what each written key was before.
    lookup_files: tuple[DataFileMeta, ...] = ()
    schemas: dict[int, TableSchema] | None = field(default=None, hash=False)
    overwrite: bool = False  # the write replaces the bucket's records (INSERT OVERWRITE)
    # Deletion vectors of lookup files: the rows they mark are not looked up.
    deletion_files: tuple[tuple[str, DeletionFile], ...] = ()
