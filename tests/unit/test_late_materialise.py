"""Late materialisation of scans for key conditions and of lookups (core.kernels.key_read, and
core.kernels.read._read_merged_late where a read has too many candidates for it): the runs
are merged in their key, sequence and kind columns, and only the records that come out
alive are read in full (core.kernels.data_file.read_rows_at).

Expected rows come from dict models of what each test wrote, or from a full read (no
condition: the plain merge) filtered in Python; expected full reads from the ids the test
wrote into each file, looked up in the files themselves with pyarrow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import core.kernels.data_file as data_file
import core.kernels.read as read_kernel
from core.kernels.write import KEY_SORTED_ROW_GROUP_ROWS
from core.manifest import live_entries
from core.ops.create import create
from core.table import Table

N = 4 * KEY_SORTED_ROW_GROUP_ROWS  # a base file of four row groups


def make_table(tmp_path: Path, schema: str, options: dict[str, str] | None = None) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true", **(options or {})})
    return t


class FullReads:
    """The ids each call of read_rows_at read in full, by data file name (read back from the
    file itself at the positions asked, with pyarrow)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ids: dict[str, list[int]] = {}
        real = read_kernel.read_rows_at

        def spy(path: str, meta: Any, *args: Any, **kwargs: Any) -> pa.Table:
            positions = args[3]
            written = pq.read_table(path, columns=["id"]).column("id").to_numpy()
            self.ids.setdefault(meta.file_name, []).extend(int(i) for i in written[np.asarray(positions)])
            return real(path, meta, *args, **kwargs)

        monkeypatch.setattr(read_kernel, "read_rows_at", spy)  # the per-split late read
        monkeypatch.setattr(data_file, "read_rows_at", spy)  # key_read's, across splits

    def all_ids(self) -> list[int]:
        return sorted(i for ids in self.ids.values() for i in ids)


def write_history(t: Table) -> dict[int, str]:
    """Three runs: ids 0..N-1, an update of every 5th id, a delete of the ids 100..109. The
    model: id -> newest v of the live ids."""
    t.write(pa.table({"id": pa.array(range(N), pa.int64()), "v": [f"old{i}" for i in range(N)]}))
    updated = list(range(0, N, 5))
    t.write(pa.table({"id": pa.array(updated, pa.int64()), "v": [f"new{i}" for i in updated]}))
    t.delete("id >= 100 AND id < 110")
    model = {i: f"old{i}" for i in range(N)}
    model.update({i: f"new{i}" for i in updated})
    for i in range(100, 110):
        del model[i]
    return model


def test_key_list_reads_in_full_only_the_rows_it_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING")
    model = write_history(t)
    full = FullReads(monkeypatch)

    got = t.scan(where=f"id IN ({', '.join(map(str, range(90, 131)))})")

    expected = [(i, model[i]) for i in range(90, 131) if i in model]  # key order, as a merge gives
    assert [(r["id"], r["v"]) for r in got.to_pylist()] == expected
    # Each returned row is read in full once, from the file holding its newest version; the
    # deleted ids and the overridden versions of updated ids are never read in full.
    assert full.all_ids() == [i for i, _ in expected]
    assert len(full.ids) == 2  # the base file and the update file; never the delete's
    # A key range holds throughout the row groups its stats admit: it is read in one pass.
    full.ids.clear()
    ranged = t.scan(where="id BETWEEN 90 AND 130")
    assert ranged.to_pylist() == got.to_pylist() and full.ids == {}


def test_keys_in_the_update_run_decode_no_base_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING")
    model = write_history(t)
    full = FullReads(monkeypatch)

    got = t.scan(where="id IN (0, 5, 10, 100)")  # updated, updated, updated, deleted

    assert {r["id"]: r["v"] for r in got.to_pylist()} == {0: model[0], 5: model[5], 10: model[10]}
    assert full.all_ids() == [0, 5, 10] and len(full.ids) == 1  # only the update file


def test_lookup_reads_in_full_only_the_keys_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING")
    model = write_history(t)
    full = FullReads(monkeypatch)
    wanted = [3, 5, 105, N // 2 + 1, N + 7]  # old, updated, deleted, old in another row group, never written

    found = t.lookup([f"id={k}" for k in wanted])

    assert [(r["id"], r["v"]) for r in found.rows.to_pylist()] == [(k, model[k]) for k in wanted if k in model]
    assert full.all_ids() == sorted(k for k in wanted if k in model)


def test_sequence_field_chooses_the_same_record_as_a_full_merge(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # The later write of id 7 carries a smaller sequence field: the earlier record wins.
    t = make_table(tmp_path, "id BIGINT NOT NULL, ts BIGINT, v STRING", {"sequence.field": "ts"})
    t.write(pa.table({"id": pa.array(range(N), pa.int64()), "ts": pa.array([10] * N, pa.int64()),
                      "v": ["first"] * N}))
    t.write(pa.table({"id": pa.array([6, 7, 8], pa.int64()), "ts": pa.array([11, 9, 10], pa.int64()),
                      "v": ["second"] * 3}))
    full = FullReads(monkeypatch)

    got = t.scan(where="id IN (5, 6, 7, 8, 9)").to_pylist()

    # ts equal: the later write wins, as Java orders equal sequence fields by sequence number
    assert [(r["id"], r["v"]) for r in got] == [(5, "first"), (6, "second"), (7, "first"), (8, "second"),
                                                (9, "first")]
    assert got == [r for r in t.scan().to_pylist() if 5 <= r["id"] <= 9]
    assert full.all_ids() == [5, 6, 7, 8, 9]


def test_value_folding_engines_and_value_conditions_read_whole_records(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Partial-update folds columns across records: nothing is read late, and the result is
    the full merge's. A value condition merges first (no early key condition at all)."""
    t = make_table(tmp_path, "id BIGINT NOT NULL, a STRING, b STRING", {"merge-engine": "partial-update"})
    t.write(pa.table({"id": pa.array(range(N), pa.int64()), "a": ["a1"] * N, "b": ["b1"] * N}))
    t.write(pa.table({"id": pa.array([3, 4], pa.int64()), "a": pa.array([None, "a2"]), "b": ["b2", None]}))
    full = FullReads(monkeypatch)

    got = t.scan(where="id BETWEEN 2 AND 5").to_pylist()

    assert [(r["id"], r["a"], r["b"]) for r in got] == [(2, "a1", "b1"), (3, "a1", "b2"), (4, "a2", "b1"),
                                                      (5, "a1", "b1")]
    assert full.ids == {}
    dedup = make_table(tmp_path / "d", "id BIGINT NOT NULL, v STRING")
    model = write_history(dedup)  # its delete reads late: the ids it deletes
    full.ids.clear()
    assert sorted(r["id"] for r in dedup.scan(where="v = 'new5' OR v = 'old5'").to_pylist()) == [5]
    assert model[5] == "new5"
    assert full.ids == {}


@pytest.mark.parametrize("file_format", ["orc", "avro"])
def test_other_formats_are_read_late_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             file_format: str) -> None:
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING", {"file.format": file_format})
    model = write_history(t)
    late = []
    real = data_file.read_rows_at
    monkeypatch.setattr(data_file, "read_rows_at", lambda *a, **k: late.append(a[0]) or real(*a, **k))

    got = t.scan(where=f"id IN ({', '.join(map(str, range(95, 113)))})")

    assert [(r["id"], r["v"]) for r in got.to_pylist()] == [(i, model[i]) for i in range(95, 113) if i in model]
    assert len(late) == 2  # the rows came from the base and the update file, read late


def test_positions_and_rows_at_address_the_rows_written(tmp_path: Path) -> None:
    """In a file of ids 0..N-1 written in order a row's position is its id: the positions of a
    key range (only its row groups read) and the rows read back at chosen positions say so."""
    from core.kernels.data_file import POSITION, read_file, read_rows_at
    from core.predicate import And, Comparison

    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING")
    t.write(pa.table({"id": pa.array(range(N), pa.int64()), "v": [f"v{i}" for i in range(N)]}))
    (path,) = Path(t.path).rglob("bucket-0/*.parquet")
    (entry,) = live_entries(t.manifests(), t.snapshots.latest())
    entry = entry.file
    schema = t.schema
    id_type = schema.field("id").type
    inside = And((Comparison("id", id_type, ">=", KEY_SORTED_ROW_GROUP_ROWS + 5),
                  Comparison("id", id_type, "<", KEY_SORTED_ROW_GROUP_ROWS + 9)))
    part = read_file(str(path), entry, schema, list(schema.fields), t.file_io, system_columns=True,
                     row_filter=inside, positions=True)
    # only the second row group is read: its ids, each at its own position
    assert part.column("id").to_pylist() == list(range(KEY_SORTED_ROW_GROUP_ROWS, 2 * KEY_SORTED_ROW_GROUP_ROWS))
    assert part.column(POSITION).to_pylist() == part.column("id").to_pylist()
    at = np.array([1, KEY_SORTED_ROW_GROUP_ROWS + 3, N - 1], np.int64)
    rows = read_rows_at(str(path), entry, schema, list(schema.fields), t.file_io, at)
    assert rows.to_pylist() == [{"id": int(i), "v": f"v{i}"} for i in at]


def test_int_array_holds_the_numpy_values() -> None:
    from core.arrow_values import int_array

    values = np.array([5, -1, 2**40], np.int64)
    assert int_array(values).to_pylist() == [5, -1, 2**40] and int_array(values).type == pa.int64()
    assert int_array(values[::2]).to_pylist() == [5, 2**40]  # a strided view is copied, not misread
    assert int_array(np.array([7, 8], np.int32)).type == pa.int32()
    assert int_array(np.zeros(0, np.int64)).to_pylist() == []


def test_a_file_of_deletes_is_read_in_its_keys_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deduplicate merge shows no value of a file of -D records: the scan reads its key
    columns only, and the rows are the model's (the deleted keys gone, whatever the values),
    in a full read (split by split) and in a key range (key_read) alike."""
    t = make_table(tmp_path, "id BIGINT NOT NULL, v STRING")
    model = write_history(t)
    entries = [e.file for e in live_entries(t.manifests(), t.snapshots.latest())]
    (deletes,) = [f for f in entries if f.delete_row_count == f.row_count]
    assert deletes.row_count == 10
    read: dict[str, Any] = {}
    real = data_file.read_file

    def spy(path: str, meta: Any, file_schema: Any, read_fields: Any, *args: Any, **kwargs: Any) -> pa.Table:
        needed = kwargs.get("needed")
        names = frozenset(f.name for f in read_fields if needed is None or f.name in needed)
        read.setdefault(meta.file_name, set()).add(names)
        return real(path, meta, file_schema, read_fields, *args, **kwargs)

    monkeypatch.setattr(data_file, "read_file", spy)
    for where in (None, "id BETWEEN 95 AND 200"):
        read.clear()
        got = t.scan(where=where).to_pylist()
        expected = {i: v for i, v in model.items() if where is None or 95 <= i <= 200}
        assert {r["id"]: r["v"] for r in got} == expected
        assert read[deletes.file_name] == {frozenset({"id"})}
        assert {n for f, ns in read.items() if f != deletes.file_name for n in ns} == {frozenset({"id", "v"})}
