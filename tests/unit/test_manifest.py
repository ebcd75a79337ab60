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
