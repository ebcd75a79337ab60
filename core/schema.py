"""Table schemas: the ``schema/schema-N`` JSON files and the rules for a new table.

``TableSchema`` is one immutable schema version. ``SchemaManager`` lists, reads and commits
schema files; a commit is the same create-if-absent primitive snapshots use, so two
concurrent schema changes cannot both take id N.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

from core import types as T
from core.errors import CorruptMetadataError, NotFoundError, TableGoneError, UsageError
from core.fileio import FileIO, FileStatus, join, numbered
from core.partition import partition_path
from core.types import DataField, DataType

if TYPE_CHECKING:  # core.options: imported where options are read, not by every open of a table
    from core.options import CoreOptions

SCHEMA_VERSION = 3


@dataclass(frozen=True, slots=True)
class TableSchema:
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: dict[str, str] = field(hash=False)
    comment: str | None = None
    time_millis: int = 0
    version: int = SCHEMA_VERSION

    # ---- derived views -------------------------------------------------------------
    @property
    def core_options(self) -> CoreOptions:
        from core.options import CoreOptions

        return CoreOptions(self.options)

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise UsageError(f"unknown column {name!r}; columns are: {', '.join(self.field_names)}")

    def fields_named(self, names: Sequence[str]) -> list[DataField]:
        return [self.field(n) for n in names]

    @property
    def has_primary_key(self) -> bool:
        return bool(self.primary_keys)

    @property
    def hides_level0(self) -> bool:
        """Java's batch scans (DataTableBatchScan) skip level-0 files of primary-key tables
        with first-row or deletion vectors: their writers look up older levels, so level 0 is
        not merged state until compacted. lakectl's writers compact it after each commit."""
        opts = self.core_options
        return self.has_primary_key and (opts.deletion_vectors_enabled or opts.merge_engine == "first-row")

    @property
    def trimmed_primary_keys(self) -> list[str]:
        """Primary keys minus partition keys: the ``_KEY_`` columns of data files."""
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def key_fields(self) -> list[DataField]:
        return self.fields_named(self.trimmed_primary_keys)

    @property
    def partition_fields(self) -> list[DataField]:
        return self.fields_named(self.partition_keys)

    def partition_values(self, partition: bytes) -> tuple:
        """The values of a partition's BinaryRow."""
        from core import binary_row

        return binary_row.decode(partition, [f.type for f in self.partition_fields])

    def partition_dir(self, values: Sequence[Any]) -> str:
        """``k=v/...`` directory of a partition ('' when unpartitioned), as Java names it."""
        return partition_path(values, self.partition_fields, self.core_options.partition_default_name)

    def bucket_dir(self, table_path: str, partition: bytes, bucket: int) -> str:
        """Where the data files of one (partition, bucket) live."""
        from core.postpone import bucket_dir_name

        return join(table_path, self.partition_dir(self.partition_values(partition)), bucket_dir_name(bucket))

    @property
    def num_buckets(self) -> int:
        return self.core_options.bucket

    @property
    def bucket_keys(self) -> list[str]:
        return self.core_options.bucket_key or self.trimmed_primary_keys

    # ---- JSON ----------------------------------------------------------------------
    def to_json(self) -> str:
        obj: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [T.field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
            "comment": self.comment,
            "timeMillis": self.time_millis,
        }
        return json.dumps(obj, indent=2)

    @classmethod
    def from_json(cls, text: str, path: str = "<schema>") -> "TableSchema":
        try:
            obj = json.loads(text)
            if not isinstance(obj, dict):
                raise TypeError(f"expected a JSON object, got {type(obj).__name__}")
            options = {str(k): str(v) for k, v in (obj.get("options") or {}).items()}
            version = int(obj.get("version", 1))
            # Schema files before version 3 carry implicit defaults (spec §2).
            if version <= 1:
                options.setdefault("bucket", "1")
            if version <= 2:
                options.setdefault("file.format", "orc")
            return cls(
                id=int(obj["id"]),
                fields=tuple(T.field_from_json(f) for f in obj["fields"]),
                highest_field_id=int(obj["highestFieldId"]),
                partition_keys=tuple(obj.get("partitionKeys") or ()),
                primary_keys=tuple(obj.get("primaryKeys") or ()),
                options=options,
                comment=obj.get("comment"),
                time_millis=int(obj.get("timeMillis") or 0),
                version=version,
            )
        except (ValueError, KeyError, TypeError, UsageError) as e:
            raise CorruptMetadataError(f"cannot decode schema file {path}: {e}") from e


def new_table_schema(
    columns: Sequence[tuple[str, DataType, str | None]],
    *,
    primary_keys: Sequence[str] = (),
    partition_keys: Sequence[str] = (),
    options: dict[str, str] | None = None,
    comment: str | None = None,
) -> TableSchema:
    """Validate a new table's definition and give it field ids 0..n-1 (schema id 0)."""
    options = dict(options or {})
    names = [c[0] for c in columns]
    if not names:
        raise UsageError("a table needs at least one column")
    for label, keys in (("primary key", primary_keys), ("partition", partition_keys)):
        for k in keys:
            if k not in names:
                raise UsageError(f"{label} column {k!r} is not in the schema; columns are: {', '.join(names)}")
        if len(set(keys)) != len(keys):
            raise UsageError(f"{label} columns repeat a name: {', '.join(keys)}")
    if primary_keys and set(primary_keys) <= set(partition_keys):
        raise UsageError("the primary key must contain a column that is not a partition key")
    # Without a bucket option a primary-key table is in Paimon's default dynamic bucket mode
    # (bucket=-1, core.dynamic_bucket), as Java creates it; the option stays unset, as Java leaves it.
    # imported here: a listing that opens the table reads no schema to validate
    from core.merge_options import merge_options
    from core.options import CoreOptions, validate
    from core.tag_options import auto_tag_options

    validate(options, has_primary_key=bool(primary_keys))
    auto_tag_options(options)  # the tag.* options of automatic tags
    for k in CoreOptions(options).bucket_key:
        if k not in names:
            raise UsageError(f"bucket-key column {k!r} is not in the schema")
        if primary_keys and k not in primary_keys:
            raise UsageError(f"bucket-key column {k!r} must be part of the primary key")
    for name, dt, _ in columns:
        if name in partition_keys and dt.is_composite:
            raise UsageError(f"partition column {name!r} cannot have composite type {dt}")
        if name in primary_keys and dt.is_composite:
            raise UsageError(f"primary key column {name!r} cannot have composite type {dt}")
    # Java's SchemaValidation: key columns take no default value (Paimon fills a column's
    # default into nulls when it reads; it writes the nulls as they come).
    for label, keys in (("partition", partition_keys), ("primary key", primary_keys)):
        for k in keys:
            if f"fields.{k}.default-value" in options:
                raise UsageError(f"option fields.{k}.default-value: {label} column {k!r} cannot have a default value")
    # Top-level ids are 0..n-1 in column order; nested ROW ids continue after them (spec §2.1).
    top = []
    for i, (name, dt, desc) in enumerate(columns):
        if name in primary_keys:
            dt = dt.with_nullable(False)  # Paimon stores key columns NOT NULL
        top.append(DataField(i, name, dt, desc))
    counter = len(top) - 1
    renumbered = []
    for f in top:
        dt, counter = _renumber_nested(f.type, counter)
        renumbered.append(DataField(f.id, f.name, dt, f.description))
    schema = TableSchema(
        id=0,
        fields=tuple(renumbered),
        highest_field_id=counter,
        partition_keys=tuple(partition_keys),
        primary_keys=tuple(primary_keys),
        options=options,
        comment=comment,
        time_millis=int(time.time() * 1000),
    )
    if primary_keys:
        merge_options(schema)  # refuses merge options lakectl cannot honour, naming the option
    return schema


def assign_nested_ids(dt: DataType, highest_field_id: int) -> tuple[DataType, int]:
    """Give a new column's nested ROW fields ids after ``highest_field_id`` (one counter for
    every level, spec §2.1). Returns the type and the new highest id."""
    return _renumber_nested(dt, highest_field_id)


def _renumber_nested(dt: DataType, counter: int) -> tuple[DataType, int]:
    """Give nested ROW fields ids from the shared counter, depth first."""
    if dt.name == "ROW":
        new_fields = []
        for f in dt.fields:
            counter += 1
            fid = counter
            inner, counter = _renumber_nested(f.type, counter)
            new_fields.append(DataField(fid, f.name, inner, f.description))
        return replace(dt, fields=tuple(new_fields)), counter
    if dt.name in ("ARRAY", "MULTISET"):
        inner, counter = _renumber_nested(dt.element, counter)
        return replace(dt, element=inner), counter
    if dt.name == "MAP":
        k, counter = _renumber_nested(dt.key, counter)
        v, counter = _renumber_nested(dt.value, counter)
        return replace(dt, key=k, value=v), counter
    return dt, counter


# Parsed schema files by (path, text). ``TableHandle.schema`` re-reads the latest schema on
# every access (another process may alter the table), a dozen times in one write; the file is
# small, but parsing its types costs ~0.5 ms each time. The text is the key, so a changed file
# is parsed anew; TableSchema is immutable (evolution copies its options before changing them).
_PARSED: dict[tuple[str, str], TableSchema] = {}
_PARSED_LIMIT = 256
# Latest schemas on object stores by (path, size, ETag) of their listing entry (_latest_listed).
_LISTED: dict[tuple[str, int, str], TableSchema] = {}


def parsed_schema(text: str, path: str) -> TableSchema:
    """``TableSchema.from_json(text, path)``, parsed once per distinct (path, text)."""
    key = (path, text)
    schema = _PARSED.get(key)
    if schema is None:
        schema = TableSchema.from_json(text, path)
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[key] = schema
    return schema


class SchemaManager:
    """Reads and commits the schema files of one table."""

    def __init__(self, file_io: FileIO, table_path: str, main_path: str | None = None) -> None:
        self.file_io = file_io
        self.dir = join(table_path, "schema")
        # A branch's: where to read the schemas it did not copy. Java Paimon 1.0 copies only the
        # branch snapshot's own schema, but its data files may be written under older ones,
        # whose ids (up to the fork) are main's and never change.
        self.main_dir = join(main_path, "schema") if main_path else None

    def path(self, schema_id: int) -> str:
        return join(self.dir, f"schema-{schema_id}")

    def readable_path(self, schema_id: int) -> str:
        """Where ``schema-<id>`` is read from: the branch's own file, else main's (see above)."""
        path = self.path(schema_id)
        if self.main_dir is None or self.file_io.exists(path):
            return path
        inherited = join(self.main_dir, f"schema-{schema_id}")
        return inherited if self.file_io.exists(inherited) else path

    def list_ids(self) -> list[int]:
        return self.file_io.list_numbered(self.dir, "schema-")

    def readable_ids(self) -> list[int]:
        """The ids ``schema`` can read: a branch's own and those it inherits from main (a
        Java-made branch's data files may name main's older ids)."""
        own = self.list_ids()
        if self.main_dir is None:
            return own
        return sorted(set(own) | set(self.file_io.list_numbered(self.main_dir, "schema-")))

    def schema(self, schema_id: int) -> TableSchema:
        path = self.readable_path(schema_id)
        text = self.file_io.read_text_if_exists(path)
        if text is None:
            raise CorruptMetadataError(f"missing schema file {path}")
        return parsed_schema(text, path)

    def latest(self) -> TableSchema | None:
        if not self.file_io.local:
            return self._latest_listed()
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def _latest_listed(self) -> TableSchema | None:
        """The latest schema on an object store, where each request costs milliseconds: the
        listing's entry of the newest file (its size and ETag, which change when the file is
        rewritten, e.g. by a drop and re-create) says whether it is the one parsed before, so
        asking again costs one LIST instead of a LIST, a GET and a HEAD."""
        newest: tuple[int, FileStatus] | None = None
        for status in self.file_io.list_dir(self.dir):
            schema_id = numbered(status.path.rstrip("/").rsplit("/", 1)[-1], "schema-")
            if schema_id is not None and (newest is None or schema_id > newest[0]):
                newest = (schema_id, status)
        if newest is None:
            return None
        schema_id, status = newest
        key = (self.path(schema_id), status.size, status.etag)
        schema = _LISTED.get(key) if status.etag else None
        if schema is None:
            schema = self.schema(schema_id)
            if status.etag:
                if len(_LISTED) >= _PARSED_LIMIT:
                    _LISTED.clear()
                _LISTED[key] = schema
        return schema

    def require_latest(self, table_name: str) -> TableSchema:
        schema = self.latest()
        if schema is None:
            raise NotFoundError(f"table {table_name} does not exist")
        return schema

    def commit(self, schema: TableSchema) -> bool:
        """Publish ``schema-<id>``; False if another writer took that id first. Only the first
        schema may make ``schema/``: a later one finding it gone means the table was renamed or
        dropped under the command (TableGoneError), whose directory must not come back."""
        try:
            return self.file_io.try_create(self.path(schema.id), schema.to_json().encode("utf-8"),
                                           make_dirs=schema.id == 0)
        except FileNotFoundError:
            raise TableGoneError(f"the table at {self.dir.rsplit('/', 1)[0]} was renamed or dropped meanwhile; "
                                 "nothing was changed") from None
