"""Compaction and delete of data-evolution tables, from metadata: the bins Paimon 2.1's
data-evolution compaction coordinator plans, the anchor a range's deletion vector is keyed by
(``retrieve_anchor_file``), where a deleted row id lands in it, and the commit's refusal of a
compacted file over rows another commit added a file to. Hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from core import binary_row, row_tracking
from core.errors import CorruptMetadataError
from core.kernels.compact_plan import data_evolution_bins
from core.kernels.data_evolution import anchor_file, row_id_groups
from core.manifest import ADD, DELETE, FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, DataFileMeta, ManifestEntry
from core.ops.data_evolution_delete import _positions
from core.schema import TableSchema
from core.stats import EMPTY_STATS
from core.types import DataField, parse_type

MB = 1 << 20


def meta(name: str, rows: int, first_row_id: int | None, seq: int, size: int = 100,
         write_cols: tuple[str, ...] | None = None, source: int = FILE_SOURCE_APPEND) -> DataFileMeta:
    return DataFileMeta(name, size, rows, binary_row.EMPTY_ROW, binary_row.EMPTY_ROW, EMPTY_STATS, EMPTY_STATS,
                        seq, seq, 0, 0, file_source=source, first_row_id=first_row_id, write_cols=write_cols)


def schema(**options: str) -> TableSchema:
    return TableSchema(id=0, fields=(DataField(0, "id", parse_type("INT")), DataField(1, "a", parse_type("STRING"))),
                       highest_field_id=1, partition_keys=(), primary_keys=(),
                       options={"row-tracking.enabled": "true", "data-evolution.enabled": "true", **options})


def names(bins: list[tuple[DataFileMeta, ...]]) -> list[list[str]]:
    return [sorted(f.file_name for f in b) for b in bins]


def test_a_bin_takes_consecutive_ranges_once_it_holds_min_file_num_files() -> None:
    files = [meta("r0", 3, 0, 1), meta("r0-a", 3, 0, 4, write_cols=("a",)), meta("r3", 2, 3, 2),
             meta("r5", 1, 5, 3), meta("r5-a", 1, 5, 5, write_cols=("a",))]
    # Five files, all small: one bin over row ids 0-5 at the default min of 5; none at 6.
    assert names(data_evolution_bins(schema(), files)) == [["r0", "r0-a", "r3", "r5", "r5-a"]]
    assert data_evolution_bins(schema(**{"compaction.min.file-num": "6"}), files) == []


def test_a_gap_in_the_row_ids_ends_a_bin() -> None:
    # Rows 3-4 are gone from the table (no live file): 0-2 and 5 cannot be one file.
    files = [meta("r0", 3, 0, 1), meta("r0-a", 3, 0, 4, write_cols=("a",)),
             meta("r5", 1, 5, 3), meta("r5-a", 1, 5, 5, write_cols=("a",))]
    assert names(data_evolution_bins(schema(**{"compaction.min.file-num": "2"}), files)) == [
        ["r0", "r0-a"], ["r5", "r5-a"]]


def test_bins_close_past_target_file_size_and_a_heavy_range_is_its_own() -> None:
    # target 10 MB; each file weighs at least the 4 MB open-file cost. Ranges: 0 (4+4 = 8 MB),
    # 2 (12 MB: heavier than the target, a bin of its own), 3 (4 MB), 4 (4 MB), 5 (4+4 MB).
    # The bin of range 0 closes when range 2 comes; 3 and 4 make 8 MB, and 5 takes it to 16 MB,
    # past the target: that bin closes with them. min.file-num 2 leaves no single-file bin.
    files = [meta("a", 2, 0, 1), meta("a2", 2, 0, 6, write_cols=("a",)), meta("b", 1, 2, 2, size=12 * MB),
             meta("c", 1, 3, 3), meta("d", 1, 4, 4), meta("e", 1, 5, 5), meta("e2", 1, 5, 7, write_cols=("a",))]
    bins = data_evolution_bins(schema(**{"target-file-size": "10 mb", "compaction.min.file-num": "2"}), files)
    assert names(bins) == [["a", "a2"], ["c", "d", "e", "e2"]]


def test_blob_files_stay_and_overlapping_ranges_that_differ_are_refused() -> None:
    files = [meta("r0", 2, 0, 1), meta("r2", 2, 2, 2), meta("x.blob", 2, 0, 3)]
    assert names(data_evolution_bins(schema(**{"compaction.min.file-num": "2"}), files)) == [["r0", "r2"]]
    with pytest.raises(CorruptMetadataError, match="overlap"):
        data_evolution_bins(schema(), [meta("r0", 3, 0, 1), meta("r0-a", 2, 0, 2, write_cols=("a",))])


def test_a_ranges_vector_is_keyed_by_its_oldest_data_file() -> None:
    group = [meta("new-a", 3, 0, 9, write_cols=("a",)), meta("base", 3, 0, 4), meta("z.blob", 3, 0, 1)]
    assert anchor_file(group).file_name == "base"  # lowest max sequence number, blob files aside
    # Equal sequence numbers: the name decides, as in pypaimon.
    assert anchor_file([meta("m", 3, 0, 4), meta("k", 3, 0, 4)]).file_name == "k"


def test_a_deleted_row_id_is_a_position_in_its_ranges_anchor() -> None:
    files = [meta("base0", 3, 0, 1), meta("a0", 3, 0, 5, write_cols=("a",)), meta("base3", 2, 3, 2),
             meta("base7", 4, 7, 3)]
    anchors = [anchor_file(g) for g in row_id_groups(files)]
    assert _positions(anchors, np.array([0, 2, 4, 9], dtype=np.int64)) == {"base0": [0, 2], "base3": [1],
                                                                            "base7": [2]}


def entry(f: DataFileMeta, kind: int = ADD) -> ManifestEntry:
    return ManifestEntry(kind, b"", 0, -1, f)


def test_a_compacted_file_over_rows_another_commit_added_a_file_to_is_a_conflict() -> None:
    old = [meta("base0", 3, 0, 1), meta("base3", 2, 3, 2)]
    compacted = meta("c", 5, 0, 2, source=FILE_SOURCE_COMPACT)
    commit = [entry(old[0], DELETE), entry(old[1], DELETE), entry(compacted)]
    live = [entry(old[0]), entry(old[1])]
    assert row_tracking.rewritten_range_conflict(commit, live) is None
    # An update of column a of rows 3-4, or an append numbered after them: only the first overlaps.
    update = meta("upd", 2, 3, 3, write_cols=("a",))
    assert "upd" in row_tracking.rewritten_range_conflict(commit, live + [entry(update)])
    assert row_tracking.rewritten_range_conflict(commit, live + [entry(meta("new", 2, 5, 3))]) is None
    assert row_tracking.rewritten_range_conflict(commit, live + [entry(meta("v.blob", 2, 3, 3))]) is None
