import datetime as dt

from core import binary_row
from core.fileio import FileIO
from core.manifest import ADD, DELETE, DataFileMeta, ManifestEntry, ManifestIO, merge_entries
from core.stats import EMPTY_STATS
from core.types import parse_type


def _file(name, level=0, rows=3):
    return DataFileMeta(name, 100, rows, binary_row.EMPTY_ROW, binary_row.EMPTY_ROW, EMPTY_STATS, EMPTY_STATS,
                        0, rows - 1, 0, level, creation_time=1700000000000, delete_row_count=0, file_source=0,
                        value_stats_cols=())


def test_manifest_and_list_round_trip(tmp_path):
    mio = ManifestIO(FileIO.for_uri(str(tmp_path)), str(tmp_path))
    dt_type = parse_type("DATE")
    parts = [binary_row.encode([dt.date(2024, 1, d)], [dt_type]) for d in (1, 2)] + [binary_row.encode([None], [dt_type])]
    entries = [ManifestEntry(ADD, p, i, 4, _file(f"f{i}")) for i, p in enumerate(parts)]
    meta = mio.write_manifest(entries, 0, [dt_type])
    assert mio.read_manifest(meta.file_name) == entries
    assert (meta.num_added_files, meta.num_deleted_files, meta.min_bucket, meta.max_bucket) == (3, 0, 0, 2)
    stats = binary_row.decode(meta.partition_stats.min_values, [dt_type]), \
        binary_row.decode(meta.partition_stats.max_values, [dt_type])
    assert stats == ((dt.date(2024, 1, 1),), (dt.date(2024, 1, 2),))
    assert meta.partition_stats.null_counts == (1,)
    name, size = mio.write_manifest_list([meta])
    assert mio.read_manifest_list(name) == [meta] and size == (tmp_path / "manifest" / name).stat().st_size


def test_live_set_applies_adds_and_deletes_in_order():
    p = binary_row.EMPTY_ROW
    a, b = _file("a"), _file("b")
    upgraded = _file("a", level=5)
    entries = [ManifestEntry(ADD, p, 0, 1, a), ManifestEntry(ADD, p, 0, 1, b), ManifestEntry(DELETE, p, 0, 1, a),
               ManifestEntry(ADD, p, 0, 1, upgraded), ManifestEntry(DELETE, p, 0, 1, _file("ghost"))]
    live = merge_entries(entries)
    assert [(e.file.file_name, e.file.level) for e in live] == [("b", 0), ("a", 5)]


def _decodes(monkeypatch):
    """A list that gets one item per Avro file fastavro decodes."""
    import core.manifest as manifest_module

    seen = []
    real = manifest_module.fastavro.reader

    def counting(stream, *args, **kwargs):
        seen.append(1)
        return real(stream, *args, **kwargs)

    monkeypatch.setattr(manifest_module.fastavro, "reader", counting)
    return seen


def test_a_local_manifest_is_decoded_once_per_process(tmp_path, monkeypatch):
    mio = ManifestIO(FileIO.for_uri(str(tmp_path)), str(tmp_path))
    entries = [ManifestEntry(ADD, binary_row.EMPTY_ROW, 0, 1, _file("a"))]
    meta = mio.write_manifest(entries, 0, [])
    # another writer's manifest: the same bytes under a name this process did not write
    other = tmp_path / "manifest" / "manifest-of-another-writer-0"
    other.write_bytes((tmp_path / "manifest" / meta.file_name).read_bytes())
    seen = _decodes(monkeypatch)
    first = mio.read_manifest(other.name)
    first.append("a caller's own list")  # each call gets a list of its own
    again = ManifestIO(FileIO.for_uri(str(tmp_path)), str(tmp_path)).read_manifest(other.name)
    assert again == entries and len(seen) == 1
    # the one this process wrote is kept as written: not decoded at all
    assert mio.read_manifest(meta.file_name) == entries and len(seen) == 1


def test_a_manifest_rewritten_under_its_name_is_read_afresh(tmp_path):
    import pytest
    from core.errors import CorruptMetadataError

    mio = ManifestIO(FileIO.for_uri(str(tmp_path)), str(tmp_path))
    meta = mio.write_manifest([ManifestEntry(ADD, binary_row.EMPTY_ROW, 0, 1, _file("a"))], 0, [])
    assert len(mio.read_manifest(meta.file_name)) == 1
    (tmp_path / "manifest" / meta.file_name).write_bytes(b"not avro at all")
    with pytest.raises(CorruptMetadataError, match="cannot decode Avro file"):
        mio.read_manifest(meta.file_name)
    (tmp_path / "manifest" / meta.file_name).unlink()
    with pytest.raises(CorruptMetadataError, match="missing file"):
        mio.read_manifest(meta.file_name)


def test_a_write_opens_each_manifest_once(tmp_path, monkeypatch):
    """The plan, the commit and the compaction check after it need the same manifests and
    manifest lists: each written by another process is opened once, however often it is read,
    and the ones the write itself adds are not opened at all."""
    import collections

    import pyarrow as pa

    import core.fileio
    from core.ops.create import create
    from core.table import Table

    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": "2"})
    for start in (0, 10):
        t.write(pa.table({"id": pa.array(range(start, start + 10), pa.int64()), "v": ["x"] * 10}))
    before = {p.name for p in (tmp_path / "wh" / "db.db" / "t" / "manifest").iterdir()}
    # as if another process had written them: nothing kept
    monkeypatch.setattr(core.fileio, "_decoded", collections.OrderedDict())
    opened = collections.Counter()

    def spy(path, *args, **kwargs):
        if "/manifest/" in str(path) and "r" in (args[0] if args else kwargs.get("mode", "r")):
            opened[str(path)] += 1
        return open(path, *args, **kwargs)

    monkeypatch.setattr(core.fileio, "open", spy, raising=False)
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["y", "z"]}))
    assert opened and max(opened.values()) == 1, opened
    assert {p.rsplit("/", 1)[1] for p in opened} <= before, opened


def test_a_big_manifest_is_not_kept(tmp_path, monkeypatch):
    """Only small files stay decoded: a long-running writer must not hold the table's history."""
    import core.fileio

    mio = ManifestIO(FileIO.for_uri(str(tmp_path)), str(tmp_path))
    meta = mio.write_manifest([ManifestEntry(ADD, binary_row.EMPTY_ROW, 0, 1, _file("a"))], 0, [])
    monkeypatch.setattr(core.fileio, "_DECODED_MAX_FILE", meta.file_size - 1)
    seen = _decodes(monkeypatch)
    assert mio.read_manifest(meta.file_name) == mio.read_manifest(meta.file_name)
    assert len(seen) == 2


def test_partition_stats_bound_floats_in_javas_order_and_binaries_not_at_all():
    """A manifest's partition stats as Java 1.0 writes and prunes by them: DOUBLE bounds in
    Double.compare's order (-0.0 below 0.0, NaN above Infinity), where Python's min/max return
    whichever zero or NaN comes first; no bounds for VARBINARY (Java 1.0 writes none, its
    filters compare bytes signed), only the null count."""
    from core.manifest import partition_stats

    types = [parse_type("DOUBLE"), parse_type("VARBINARY(4)")]
    values = [(0.0, b"\xff\x01"), (-0.0, b"\x01"), (float("nan"), None), (-1.0, b"\x7f")]
    partitions = [binary_row.encode(list(v), types) for v in values]
    got = partition_stats(partitions, types)
    lo, hi = binary_row.decode(got.min_values, types), binary_row.decode(got.max_values, types)
    assert repr(lo) == repr((-1.0, None)) and repr(hi) == repr((float("nan"), None))
    assert got.null_counts == (0, 1)
    zeros = partition_stats([binary_row.encode([v, None], types) for v in (0.0, -0.0)], types)
    assert repr(binary_row.decode(zeros.min_values, types)[0]) == "-0.0"
    assert repr(binary_row.decode(zeros.max_values, types)[0]) == "0.0"
