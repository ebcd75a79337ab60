"""Reading an Iceberg table for ``migrate --from iceberg``: where its current metadata is, its
schemas as Paimon types, and the live files of its current snapshot with their partition
values and deleted row positions.

Facts followed (the Iceberg table spec, and Paimon's ``IcebergMigrator``, which migrates only
unaware-bucket append tables and refuses delete files): the metadata JSON names the schemas
(``schemas``, ``current-schema-id``), partition specs (``partition-specs``,
``default-spec-id``) and the current snapshot's manifest list; the list's entries name
manifests with ``content`` 0 (data) or 1 (deletes); a manifest's entries have ``status``
0 existing, 1 added, 2 deleted (not live), and ``data_file.content`` 0 data, 1 position
deletes, 2 equality deletes. A position-delete file holds ``file_path`` and ``pos`` columns.
Format-version 3 deletion vectors are position deletes stored as Puffin blobs (a
``referenced_data_file`` and the blob's ``content_offset``/``content_size_in_bytes``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import unquote

from core.errors import InvalidDataError, UsageError
from core.fileio import FileIO, join
from core.types import MAX_LENGTH, DataField, DataType

METADATA_SUFFIX = ".metadata.json"
_VERSIONED = re.compile(r"^(?:v(\d+)|(\d+)-[^/]*)\.metadata\.json$")
CATALOG_SCHEMES = ("jdbc:sqlite:", "jdbc:postgresql:", "sqlite:", "postgresql:", "postgres:")
DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
_DELETED_ENTRY = 2


@dataclass(frozen=True, slots=True)
class DataFile:
    path: str  # as the manifest names it (a URI)
    size: int
    record_count: int
    partition: tuple[Any, ...]  # in the order of the partition keys, Avro-decoded
    spec_id: int


@dataclass(frozen=True, slots=True)
class IcebergTable:
    metadata_path: str
    metadata: dict[str, Any]
    files: tuple[DataFile, ...]
    deleted: dict[str, tuple[int, ...]]  # data file path -> deleted row positions, sorted

    @property
    def location(self) -> str:
        return self.metadata["location"]


# ---- where the metadata is -------------------------------------------------------------------
def is_catalog_source(source: str) -> bool:
    return source.startswith(CATALOG_SCHEMES) and "#" in source


def looks_like_iceberg(file_io: FileIO, source: str) -> bool:
    """Whether ``source`` names an Iceberg table: a metadata file, a catalog URI with a table,
    or a directory with ``metadata/*.metadata.json`` (or that metadata directory itself)."""
    if is_catalog_source(source) or source.endswith(METADATA_SUFFIX):
        return True
    try:
        return bool(_metadata_files(file_io, join(source, "metadata")) or _metadata_files(file_io, source))
    except (OSError, ValueError):
        return False


def _metadata_files(file_io: FileIO, directory: str) -> dict[int, str]:
    """Version -> metadata file in ``directory`` (``v<N>.metadata.json`` as Hadoop tables name
    them, ``<NNNNN>-<uuid>.metadata.json`` as metastore catalogs do)."""
    if not file_io.exists(directory):
        return {}
    found = {}
    for status in file_io.list_dir(directory):
        name = status.path.rstrip("/").rsplit("/", 1)[-1]
        m = _VERSIONED.match(name)
        if m:
            found[int(m.group(1) or m.group(2))] = status.path
    return found


def locate_metadata(source: str, io_for: Callable[[str], FileIO]) -> str:
    """The current metadata file of the table ``source`` names: the file itself, the one a
    catalog row names, or in a table (or metadata) directory the one ``version-hint.text``
    names, else the highest-numbered one."""
    if is_catalog_source(source):
        return catalog_metadata_location(source)
    if source.endswith(METADATA_SUFFIX):
        return source
    file_io = io_for(source)
    for directory in (join(source, "metadata"), source):
        hint = file_io.read_text_if_exists(join(directory, "version-hint.text"))
        if hint is not None and hint.strip().isdigit():
            path = join(directory, f"v{hint.strip()}{METADATA_SUFFIX}")
            if file_io.exists(path):
                return path
        versions = _metadata_files(file_io, directory)
        if versions:
            return versions[max(versions)]
    raise UsageError(f"{source} holds no Iceberg metadata (metadata/*.metadata.json)")


def catalog_metadata_location(source: str) -> str:
    """The ``metadata_location`` of a table in a pyiceberg SqlCatalog's ``iceberg_tables``:
    ``URI#[CATALOG/]NAMESPACE.TABLE``, URI a JDBC URL (``jdbc:sqlite:/path/catalog.db``,
    ``jdbc:postgresql://host/db``) or SQLAlchemy's spelling (``sqlite:////path/catalog.db``)."""
    from core.catalog.jdbc import connect, shown_uri

    uri, _, identifier = source.partition("#")
    catalog, _, qualified = identifier.rpartition("/")
    namespace, _, table = qualified.rpartition(".")
    if not namespace or not table:
        raise UsageError(f"{shown_uri(uri)}#{identifier}: name the table as NAMESPACE.TABLE after '#'")
    conn, mark = connect(_jdbc_url(uri), {})
    try:
        sql = (f"SELECT catalog_name, metadata_location FROM iceberg_tables WHERE table_namespace = {mark} "
               f"AND table_name = {mark}")
        cur = conn.cursor()
        try:
            cur.execute(sql, (namespace, table))
            rows = [r for r in cur.fetchall() if not catalog or r[0] == catalog]
        except Exception as e:  # noqa: BLE001 - the driver's error, in lakectl's words
            raise UsageError(f"{shown_uri(uri)} is not a pyiceberg SQL catalog (no table iceberg_tables: "
                             f"{str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
        finally:
            cur.close()
    finally:
        conn.close()
    if not rows:
        raise UsageError(f"{shown_uri(uri)} has no Iceberg table {namespace}.{table}"
                         f"{f' in catalog {catalog}' if catalog else ''}")
    if len(rows) > 1:
        names = ", ".join(sorted(r[0] for r in rows))
        raise UsageError(f"{shown_uri(uri)} has {namespace}.{table} in several catalogs ({names}); name one: "
                         f"#CATALOG/{namespace}.{table}")
    return rows[0][1]


def _jdbc_url(uri: str) -> str:
    """SQLAlchemy's ``sqlite:///relative.db`` / ``sqlite:////absolute.db`` and
    ``postgresql://...`` as the JDBC URLs lakectl's catalog connections take."""
    if uri.startswith("jdbc:"):
        return uri
    if uri.startswith("sqlite:"):
        return "jdbc:sqlite:" + unquote(uri[len("sqlite:"):].removeprefix("///"))
    scheme, rest = uri.split(":", 1)
    return "jdbc:postgresql:" + rest


# ---- reading ---------------------------------------------------------------------------------
def local_or_uri(path: str) -> str:
    """A ``file:`` URI as a plain path (lakectl's local store), other URIs as they are."""
    if path.startswith("file://"):
        return unquote(path[len("file://"):])
    if path.startswith("file:/"):
        return unquote(path[len("file:"):])
    return path


def read_table(metadata_path: str, io_for: Callable[[str], FileIO]) -> IcebergTable:
    """The metadata and the current snapshot's live data files and position deletes.

    Raises:
        UsageError: equality deletes, delete files that are not Parquet, format version > 3.
    """
    metadata_path = local_or_uri(metadata_path)
    try:
        metadata = json.loads(io_for(metadata_path).read_text(metadata_path))
    except (ValueError, FileNotFoundError, OSError) as e:
        raise UsageError(f"cannot read Iceberg metadata {metadata_path}: {e}") from None
    version = int(metadata.get("format-version", 1))
    if version > 3:
        raise UsageError(f"{metadata_path} is Iceberg format version {version}; lakectl reads 1 to 3")
    snapshot = _current_snapshot(metadata)
    if snapshot is None:
        return IcebergTable(metadata_path, metadata, (), {})
    data, deletes = _live_entries(snapshot, metadata, io_for)
    return IcebergTable(metadata_path, metadata, tuple(data), _deleted_positions(deletes, io_for))


def _current_snapshot(metadata: dict[str, Any]) -> dict[str, Any] | None:
    current = metadata.get("current-snapshot-id")
    if current is None or current == -1:
        return None
    return next(s for s in metadata.get("snapshots", []) if s["snapshot-id"] == current)


def _avro(path: str, io_for: Callable[[str], FileIO]) -> list[dict[str, Any]]:
    from core.iceberg.avro_files import avro_records

    path = local_or_uri(path)
    return avro_records(io_for(path).read_bytes(path))


def _live_entries(snapshot: dict[str, Any], metadata: dict[str, Any],
                  io_for: Callable[[str], FileIO]) -> tuple[list[DataFile], list[dict[str, Any]]]:
    """The snapshot's live data files, and its live delete files (their data_file records)."""
    if "manifest-list" in snapshot:
        manifests = _avro(snapshot["manifest-list"], io_for)
    else:  # format 1 may list manifests in the snapshot itself
        manifests = [{"manifest_path": p, "content": DATA, "partition_spec_id": 0} for p in snapshot["manifests"]]
    keys = _partition_field_names(metadata)
    data, deletes = [], []
    for manifest in manifests:
        for entry in _avro(manifest["manifest_path"], io_for):
            if entry["status"] == _DELETED_ENTRY:
                continue
            f = entry["data_file"]
            content = f.get("content", DATA) or DATA
            if content == EQUALITY_DELETES:
                raise UsageError(f"Iceberg table has equality deletes ({f['file_path']}); lakectl migrates data "
                                 "files with position deletes or deletion vectors only: compact the Iceberg "
                                 "table first (e.g. Spark's rewrite_data_files)")
            if content == POSITION_DELETES:
                deletes.append(f)
                continue
            if str(f["file_format"]).upper() != "PARQUET":
                raise UsageError(f"Iceberg data file {f['file_path']} is {f['file_format']}; lakectl migrates "
                                 "Parquet data files only")
            spec_id = manifest.get("partition_spec_id", 0)
            values = f.get("partition") or {}
            data.append(DataFile(f["file_path"], f["file_size_in_bytes"], f["record_count"],
                                 tuple(values.get(k) for k in keys.get(spec_id, ())), spec_id))
    return data, deletes


def _partition_field_names(metadata: dict[str, Any]) -> dict[int, tuple[str, ...]]:
    specs = metadata.get("partition-specs") or [{"spec-id": 0, "fields": metadata.get("partition-spec", [])}]
    return {s["spec-id"]: tuple(f["name"] for f in s["fields"]) for s in specs}


def _deleted_positions(deletes: list[dict[str, Any]], io_for: Callable[[str], FileIO]) -> dict[str, tuple[int, ...]]:
    """Data file path -> its deleted positions, from Parquet position-delete files and Puffin
    deletion vectors."""
    positions: dict[str, set[int]] = {}
    for f in deletes:
        fmt = str(f["file_format"]).upper()
        if fmt == "PUFFIN":
            target = f.get("referenced_data_file")
            positions.setdefault(target, set()).update(_deletion_vector(f, io_for))
        elif fmt == "PARQUET":
            import pyarrow.parquet as pq

            path = local_or_uri(f["file_path"])
            with io_for(path).open_input(path) as handle:
                table = pq.read_table(handle, columns=["file_path", "pos"])
            for target, pos in zip(table.column("file_path").to_pylist(), table.column("pos").to_pylist()):
                positions.setdefault(target, set()).add(pos)
        else:
            raise UsageError(f"Iceberg delete file {f['file_path']} is {fmt}; lakectl reads Parquet position "
                             "deletes and Puffin deletion vectors")
    return {path: tuple(sorted(p)) for path, p in positions.items()}


def _deletion_vector(f: dict[str, Any], io_for: Callable[[str], FileIO]) -> list[int]:
    """The positions of one v3 deletion vector: the ``deletion-vector-v1`` blob at the entry's
    ``content_offset``, ``content_size_in_bytes`` long. Paimon's 64-bit vectors share its
    layout, so core.deletion_vectors reads and checks it (length, magic, CRC; positions past
    2**32 are refused there rather than truncated)."""
    from core.deletion_vectors import read_iceberg_blob

    path = local_or_uri(f["file_path"])
    offset, size = f.get("content_offset"), f.get("content_size_in_bytes")
    if offset is None or size is None:
        raise InvalidDataError(f"deletion vector in {path} has no content offset or size")
    with io_for(path).open_input(path) as handle:
        handle.seek(offset)
        blob = handle.read(size)
    return list(read_iceberg_blob(blob, f"{path} (the blob at {offset})"))


# ---- types -----------------------------------------------------------------------------------
_PRIMITIVE = {"boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
              "date": "DATE"}


def paimon_fields(schema: dict[str, Any]) -> tuple[DataField, ...]:
    """An Iceberg schema's columns as Paimon fields, with the Iceberg field ids (nested struct
    fields too), nullable unless required."""
    return tuple(_field(f) for f in schema["fields"])


def _field(f: dict[str, Any]) -> DataField:
    return DataField(f["id"], f["name"], paimon_type(f["type"], f["name"]).with_nullable(not f.get("required")),
                     f.get("doc"))


def paimon_type(t: Any, column: str) -> DataType:
    """An Iceberg type as a Paimon type, or UsageError naming the column for types Paimon's
    Parquet files hold otherwise (time: micros in Iceberg, millis in Paimon; uuid; nanosecond
    timestamps, variant, geometry)."""
    if isinstance(t, dict):
        kind = t["type"]
        if kind == "struct":
            return DataType("ROW", fields=tuple(_field(f) for f in t["fields"]))
        if kind == "list":
            return DataType("ARRAY", element=paimon_type(t["element"], column).with_nullable(
                not t.get("element-required")))
        if kind == "map":
            return DataType("MAP", key=paimon_type(t["key"], column).with_nullable(False),
                            value=paimon_type(t["value"], column).with_nullable(not t.get("value-required")))
        raise UsageError(f"column {column}: Iceberg type {kind} has no Paimon type lakectl migrates")
    if t in _PRIMITIVE:
        return DataType(_PRIMITIVE[t])
    if t == "string":
        return DataType("VARCHAR", length=MAX_LENGTH)
    if t == "binary":
        return DataType("VARBINARY", length=MAX_LENGTH)
    if t == "timestamp":
        return DataType("TIMESTAMP", precision=6)
    if t == "timestamptz":
        return DataType("TIMESTAMP_LTZ", precision=6)
    m = re.fullmatch(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)", t)
    if m:
        return DataType("DECIMAL", precision=int(m.group(1)), scale=int(m.group(2)))
    m = re.fullmatch(r"fixed\[\s*(\d+)\s*\]", t)
    if m:
        return DataType("BINARY", length=int(m.group(1)))
    raise UsageError(f"column {column}: Iceberg type {t} has no Paimon type lakectl migrates (time is micros in "
                     "Iceberg's files and millis in Paimon's; uuid, nanosecond timestamps, variant and geo types "
                     "have none)")
