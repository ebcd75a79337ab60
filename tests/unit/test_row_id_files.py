"""Grouping data-evolution files by row-id range and giving row-tracking files their first
row ids: the rules pypaimon 2.1 follows (``_split_by_row_id``, ``_assign_row_tracking_meta``),
checked against hand-worked cases."""

from __future__ import annotations

import pytest

from core import binary_row, row_tracking
from core.errors import CorruptMetadataError
from core.kernels.data_evolution import file_field_ids, row_id_groups
from core.manifest import ADD, DELETE, FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, DataFileMeta, ManifestEntry
from core.schema import TableSchema
from core.stats import EMPTY_STATS
from core.types import DataField, parse_type


def meta(name: str, rows: int, first_row_id: int | None, seq: int, write_cols: tuple[str, ...] | None = None,
         source: int = FILE_SOURCE_APPEND) -> DataFileMeta:
    return DataFileMeta(name, 100, rows, binary_row.EMPTY_ROW, binary_row.EMPTY_ROW, EMPTY_STATS, EMPTY_STATS,
                        seq, seq, 0, 0, file_source=source, first_row_id=first_row_id, write_cols=write_cols)


def names(groups: list[list[DataFileMeta]]) -> list[list[str]]:
    return [[f.file_name for f in g] for g in groups]


def test_files_group_by_first_row_id_in_row_id_order_newest_first() -> None:
    files = [meta("b-new", 2, 3, 5, ("b",)), meta("base1", 3, 0, 1), meta("base2", 2, 3, 2),
             meta("a-old", 3, 0, 3, ("a",)), meta("a-new", 3, 0, 4, ("a",)), meta("legacy", 4, None, 1)]
    # A file without a first row id is a group of its own, first (pypaimon sorts it as -inf).
    assert names(row_id_groups(files)) == [["legacy"], ["a-new", "a-old", "base1"], ["b-new", "base2"]]


def test_overlapping_row_id_ranges_are_refused() -> None:
    with pytest.raises(CorruptMetadataError, match="row id 2"):
        row_id_groups([meta("f0", 3, 0, 1), meta("f1", 3, 2, 2)])


def test_a_file_holds_its_write_cols_or_its_whole_schema() -> None:
    schema = TableSchema(id=0, fields=(DataField(0, "id", parse_type("INT")), DataField(1, "a", parse_type("STRING")),
                                       DataField(2, "b", parse_type("BIGINT"))),
                         highest_field_id=2, partition_keys=(), primary_keys=(), options={})
    assert file_field_ids(meta("f", 1, 0, 1, ("b",)), schema) == {2}
    assert file_field_ids(meta("f", 1, 0, 1), schema) == {0, 1, 2}


def entry(f: DataFileMeta, kind: int = ADD) -> ManifestEntry:
    return ManifestEntry(kind, b"", 0, 1, f)


def test_new_append_files_take_the_next_row_ids_in_commit_order() -> None:
    entries = [entry(meta("old", 4, 0, 1), DELETE), entry(meta("n1", 2, None, 7)),
               entry(meta("c", 4, 0, 8, source=FILE_SOURCE_COMPACT)), entry(meta("n2", 3, None, 9)),
               entry(meta("kept", 1, 40, 9))]
    assigned, next_id = row_tracking.assign_first_row_ids(entries, 10, 33)
    # Only ADDs of new data without an id get one: 10-11 for n1, 12-14 for n2, and the
    # snapshot id (33) as their sequence numbers; the others keep theirs.
    assert [e.file.first_row_id for e in assigned] == [0, 10, 0, 12, 40]
    assert [(e.file.min_sequence_number, e.file.max_sequence_number) for e in assigned] == \
        [(1, 1), (33, 33), (8, 8), (33, 33), (9, 9)]
    assert next_id == 15


def test_compaction_runs_are_files_whose_row_ids_follow_on() -> None:
    files = [meta("f0", 2, 0, 1), meta("f2", 3, 2, 2), meta("gap", 1, 9, 3), meta("f10", 2, 10, 4),
             meta("dv", 1, 12, 5), meta("f13", 1, 13, 6), meta("none", 1, None, 7)]
    runs = row_tracking.contiguous_runs(files, lambda f: f.file_name != "dv")
    # 0-1 and 2-4 follow on; 9 starts a run that 10-11 continues; the file with a deletion
    # vector (12) breaks the run, 13 stands alone; a file without ids is in none.
    assert names(runs) == [["f0", "f2"], ["gap", "f10"], ["f13"]]


def test_rewritten_files_are_numbered_on_from_the_run() -> None:
    written = [meta("w0", 4, None, 9, source=FILE_SOURCE_COMPACT), meta("w1", 3, None, 9, source=FILE_SOURCE_COMPACT)]
    assert [f.first_row_id for f in row_tracking.number_on(written, 20)] == [20, 24]
