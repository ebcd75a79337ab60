"""Deletion vectors without Java: the index file format, and a lakectl DV table end to end
(``tests/interop/test_deletion_vectors_interop.py`` holds both against Java Paimon)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from pyroaring import BitMap

from core.deletion_vectors import MAGIC, DeletionFile, read_index_file, read_vectors, write_index_file
from core.errors import CorruptMetadataError
from core.fileio import FileIO
from core.index_manifest import (ADD, DELETE, DELETION_VECTORS, IndexManifestEntry, IndexManifestIO, combine,
                                 live_index_entries)
from core.ops.check import check
from core.ops.create import create
from core.table import Table


def test_index_file_layout_is_javas(tmp_path: Path) -> None:
    fio = FileIO.for_uri(str(tmp_path))
    vectors = {"data-a.parquet": BitMap([0, 1, 2, 3, 100]), "data-b.parquet": BitMap([7]),
               "data-empty.parquet": BitMap()}
    meta = write_index_file(fio, str(tmp_path), vectors)
    data = (tmp_path / "index" / meta.file_name).read_bytes()
    assert data[0] == 1 and meta.file_size == len(data) and meta.index_type == DELETION_VECTORS
    assert [r.data_file for r in meta.dv_ranges] == ["data-a.parquet", "data-b.parquet"]  # empty ones left out
    first = meta.dv_ranges[0]
    assert first.offset == 1 and first.cardinality == 5
    (size,) = struct.unpack(">i", data[1:5])
    body = data[5:5 + size]
    assert size == first.length and struct.unpack(">i", body[:4]) == (MAGIC,)
    assert struct.unpack(">I", data[5 + size:9 + size]) == (zlib.crc32(body),)
    assert BitMap.deserialize(body[4:]) == vectors["data-a.parquet"]
    assert read_index_file(fio, str(tmp_path), meta) == {"data-a.parquet": vectors["data-a.parquet"],
                                                         "data-b.parquet": vectors["data-b.parquet"]}
    # A flipped byte fails the checksum.
    broken = bytearray(data)
    broken[10] ^= 0xFF
    (tmp_path / "index" / meta.file_name).write_bytes(bytes(broken))
    with pytest.raises(CorruptMetadataError, match="checksum"):
        read_index_file(fio, str(tmp_path), meta)


def test_64_bit_index_file_layout_is_icebergs_blob(tmp_path: Path) -> None:
    """``deletion-vectors.bitmap64``: each vector is an Iceberg deletion-vector-v1 blob (Java's
    Bitmap64DeletionVector), bytes built here by hand from the spec; the range covers the whole
    blob; readers take either layout from the same index file set."""
    fio = FileIO.for_uri(str(tmp_path))
    meta = write_index_file(fio, str(tmp_path), {"data-a.parquet": BitMap([1, 2])}, bitmap64=True)
    data = (tmp_path / "index" / meta.file_name).read_bytes()
    roaring = (struct.pack("<ii", 12346, 1)  # portable cookie without runs, one container
               + struct.pack("<HH", 0, 2 - 1)  # its key and cardinality - 1
               + struct.pack("<i", 16)  # offset of its values
               + struct.pack("<HH", 1, 2))  # an array container: 1, 2
    body = bytes([0xD1, 0xD3, 0x39, 0x64]) + struct.pack("<q", 1) + struct.pack("<i", 0) + roaring
    assert data == b"\x01" + struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    (r,) = meta.dv_ranges
    assert (r.offset, r.length, r.cardinality) == (1, len(data) - 1, 2)
    assert read_index_file(fio, str(tmp_path), meta) == {"data-a.parquet": BitMap([1, 2])}
    # Both layouts, one file each, read in one pass.
    meta32 = write_index_file(fio, str(tmp_path), {"data-b.parquet": BitMap([0, 70000])})
    deletions = [DeletionFile(str(tmp_path / "index" / m.file_name), m.dv_ranges[0].offset, m.dv_ranges[0].length)
                 for m in (meta, meta32)]
    assert read_vectors(fio, deletions) == [BitMap([1, 2]), BitMap([0, 70000])]
    # A bitmap under key 1 holds positions past 2**32: refused, not folded into the low half.
    high = bytes([0xD1, 0xD3, 0x39, 0x64]) + struct.pack("<q", 1) + struct.pack("<i", 1) + roaring
    framed = b"\x01" + struct.pack(">i", len(high)) + high + struct.pack(">I", zlib.crc32(high))
    (tmp_path / "index" / "index-high").write_bytes(framed)
    with pytest.raises(CorruptMetadataError, match="past 2"):
        read_vectors(fio, [DeletionFile(str(tmp_path / "index" / "index-high"), 1, len(framed) - 1)])


def test_combine_applies_deletes_then_adds_by_file_name(tmp_path: Path) -> None:
    fio = FileIO.for_uri(str(tmp_path))
    a = write_index_file(fio, str(tmp_path), {"x": BitMap([1])})
    b = write_index_file(fio, str(tmp_path), {"y": BitMap([2])})
    c = write_index_file(fio, str(tmp_path), {"x": BitMap([1, 3])})
    previous = [IndexManifestEntry(ADD, b"p", 0, a), IndexManifestEntry(ADD, b"p", 1, b)]
    combined = combine(previous, [IndexManifestEntry(ADD, b"p", 0, c), IndexManifestEntry(DELETE, b"p", 0, a)])
    assert [e.index_file.file_name for e in combined] == [b.file_name, c.file_name]


def raw_ranges(manifest: Path) -> tuple[dict, list[dict]]:
    """An index manifest as fastavro reads it, not through lakectl: the range record's schema
    and every deletion-vector range."""
    with manifest.open("rb") as f:
        reader = fastavro.reader(f)
        entries = list(reader)
        entry_schema = reader.writer_schema
    ranges_field = next(f for f in entry_schema["fields"] if f["name"] == "_DELETIONS_VECTORS_RANGES")
    record = next(t for t in ranges_field["type"][1]["items"] if t != "null")
    return record, [r for e in entries for r in e["_DELETIONS_VECTORS_RANGES"] or ()]


def test_ranges_carry_the_cardinality_java_writes(tmp_path: Path) -> None:
    """Each range's ``_CARDINALITY`` is its vector's number of deleted positions, in both layouts,
    in the record field Java's DeletionVectorMeta has since 1.0 (a nullable long, fourth)."""
    fio = FileIO.for_uri(str(tmp_path))
    narrow = write_index_file(fio, str(tmp_path), {"a": BitMap([0, 1, 2, 3, 100]), "b": BitMap([7]),
                                                   "c": BitMap(range(70000, 70000 + 4097))})
    wide = write_index_file(fio, str(tmp_path), {"d": BitMap([5, 9])}, bitmap64=True)
    manifests = IndexManifestIO(fio, str(tmp_path))
    name = manifests.write([IndexManifestEntry(ADD, b"", 0, narrow), IndexManifestEntry(ADD, b"", 1, wide)])
    record, ranges = raw_ranges(tmp_path / "manifest" / name)
    assert [f["name"] for f in record["fields"]] == ["f0", "f1", "f2", "_CARDINALITY"]
    assert record["fields"][3]["type"] == ["null", "long"] and record["fields"][3]["default"] is None
    # 5 and 1 listed positions, 4097 in a run (a bitmap container in the file), 2 in the 64-bit blob.
    assert [(r["f0"], r["_CARDINALITY"]) for r in ranges] == [("a", 5), ("b", 1), ("c", 4097), ("d", 2)]
    assert [r.cardinality for e in manifests.read(name) for r in e.index_file.dv_ranges] == [5, 1, 4097, 2]


def test_ranges_without_cardinality_read_as_none(tmp_path: Path) -> None:
    """An index manifest of Java 0.9 (or a 1.0 snapshot before the field): three fields per
    range; lakectl reads it, with no cardinality, and the vectors still count their rows."""
    fio = FileIO.for_uri(str(tmp_path))
    meta = write_index_file(fio, str(tmp_path), {"a": BitMap([4, 6, 8])})
    old_range = {"type": "record", "name": "org.apache.paimon.avro.generated.record__DELETIONS_VECTORS_RANGES",
                 "fields": [{"name": "f0", "type": "string"}, {"name": "f1", "type": "int"},
                            {"name": "f2", "type": "int"}]}
    schema = {"type": "record", "name": "org.apache.paimon.avro.generated.record", "fields": [
        {"name": n, "type": t} for n, t in [("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"),
                                            ("_BUCKET", "int"), ("_INDEX_TYPE", "string"), ("_FILE_NAME", "string"),
                                            ("_FILE_SIZE", "long"), ("_ROW_COUNT", "long")]]
        + [{"name": "_DELETIONS_VECTORS_RANGES", "type": ["null", {"type": "array", "items": ["null", old_range]}]}]}
    (r,) = meta.dv_ranges
    record = {"_VERSION": 1, "_KIND": ADD, "_PARTITION": b"", "_BUCKET": 0, "_INDEX_TYPE": DELETION_VECTORS,
              "_FILE_NAME": meta.file_name, "_FILE_SIZE": meta.file_size, "_ROW_COUNT": 1,
              "_DELETIONS_VECTORS_RANGES": [{"f0": "a", "f1": r.offset, "f2": r.length}]}
    (tmp_path / "manifest").mkdir()
    with (tmp_path / "manifest" / "index-manifest-old").open("wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [record])
    (entry,) = IndexManifestIO(fio, str(tmp_path)).read("index-manifest-old")
    (read,) = entry.index_file.dv_ranges
    assert (read.data_file, read.offset, read.length, read.cardinality) == ("a", r.offset, r.length, None)
    assert read_index_file(fio, str(tmp_path), entry.index_file) == {"a": BitMap([4, 6, 8])}


def test_lakectl_dv_table_end_to_end(tmp_path: Path) -> None:
    table = Table.locate("db.t", warehouse=str(tmp_path))
    create(table, "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    table.write(pa.table({"id": pa.array(range(20), pa.int64()), "v": [f"a{i}" for i in range(20)]}))
    table.write(pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": ["b", "b", None, None],
                          "op": ["+U", "+U", "-D", "-D"]}), row_kind_column="op")
    expected = {i: f"a{i}" for i in range(20) if i not in (3, 4)} | {1: "b", 2: "b"}
    assert {r["id"]: r["v"] for r in table.scan().to_pylist()} == expected
    assert sum(f.deleted_rows for f in table.files()) == 4  # two updated, two deleted, none rewritten
    assert check(table).ok
    snap = table.latest_snapshot()
    # The commit's ranges count their vectors' rows: ids 1-4, one old version each.
    _, ranges = raw_ranges(Path(table.path) / "manifest" / snap.index_manifest)
    vectors = {}
    for e in live_index_entries(table.file_io, table.path, snap.index_manifest):
        vectors.update(read_index_file(table.file_io, table.path, e.index_file))
    assert {r["f0"]: r["_CARDINALITY"] for r in ranges} == {name: len(v) for name, v in vectors.items()}
    assert sum(r["_CARDINALITY"] for r in ranges) == 4
    assert len(live_index_entries(table.file_io, table.path, snap.index_manifest)) == 2
    assert table.lookup(["id=3", "id=1"]).rows.to_pylist() == [{"id": 1, "v": "b"}]
    # Level 0 is hidden until compacted: the write's APPEND snapshot still shows the rows before it.
    append = [s for s in table.snapshots.snapshots() if s.commit_kind == "APPEND"][-1]
    assert table.scan(snapshot_id=append.id).num_rows == 20
    table.compact(full=True)
    assert {r["id"]: r["v"] for r in table.scan().to_pylist()} == expected
    assert sum(f.deleted_rows for f in table.files()) == 0
    assert not live_index_entries(table.file_io, table.path, table.latest_snapshot().index_manifest)
    result = table.expire(retain_min=1, retain_max=1, older_than="0s", max_deletes=100, dry_run=False)
    assert result.index_files_deleted >= 3  # two index files and their index manifest(s)
    assert not list((Path(table.path) / "index").iterdir())
    assert check(table).ok
