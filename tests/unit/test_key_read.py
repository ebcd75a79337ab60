"""Key-bounded reads merged across splits at once (core.kernels.key_read), against the
split-by-split merge (the same read with key_read turned off) and against dict models of
what each test wrote.

Each case is built so that a wrong cross-split merge shows: the same key in two partitions
(a merge that forgot the split would fold them into one), keys updated in one run and
deleted in another, ties of ``sequence.field`` broken by the sequence number, deletion
vectors, and the fallback when too many records pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest

import core.kernels.key_read as key_read
from core.ops.create import create
from core.table import Table


class Paths:
    """Which way the local engine read: how often key_read gave each split's rows."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.key_bounded = 0
        self.monkeypatch = monkeypatch
        real = key_read.read_key_bounded

        def spy(*args: Any, **kwargs: Any) -> Any:
            tables = real(*args, **kwargs)
            self.key_bounded += tables is not None
            return tables

        monkeypatch.setattr(key_read, "read_key_bounded", spy)

    def split_by_split(self, read: Callable[[], Any]) -> Any:
        """``read()`` with key_read turned off: each split merged on its own."""
        with self.monkeypatch.context() as m:
            m.setattr(key_read, "eligible", lambda *a, **k: False)
            return read()


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


def partitioned(tmp_path: Path, options: dict[str, str] | None = None) -> Table:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, dt STRING NOT NULL, v STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", **(options or {})})
    return t


def write_two_partitions(t: Table) -> dict[tuple[int, str], str]:
    """ids 0..199 in partitions a and b; in a, ids 10..19 updated and then 15..24 deleted; in b,
    ids 10..14 deleted and then 12..13 inserted again. The model: (id, dt) -> v."""
    for dt in ("a", "b"):
        t.write(pa.table({"id": pa.array(range(200), pa.int64()), "dt": [dt] * 200,
                          "v": [f"{dt}{i}" for i in range(200)]}))
    t.write(pa.table({"id": pa.array(range(10, 20), pa.int64()), "dt": ["a"] * 10,
                      "v": [f"a-new{i}" for i in range(10, 20)]}))
    t.delete("dt = 'a' AND id >= 15 AND id < 25")
    t.delete("dt = 'b' AND id >= 10 AND id < 15")
    t.write(pa.table({"id": pa.array([12, 13], pa.int64()), "dt": ["b", "b"], "v": ["b-again12", "b-again13"]}))
    model = {(i, dt): f"{dt}{i}" for dt in ("a", "b") for i in range(200)}
    model.update({(i, "a"): f"a-new{i}" for i in range(10, 20)})
    for i in range(15, 25):
        del model[(i, "a")]
    for i in range(10, 15):
        del model[(i, "b")]
    model.update({(12, "b"): "b-again12", (13, "b"): "b-again13"})
    return model


def test_same_key_in_two_partitions_updated_and_deleted_across_runs(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    t = partitioned(tmp_path)
    model = write_two_partitions(t)
    paths = Paths(monkeypatch)

    for where, keep in [("id BETWEEN 5 AND 30", lambda i: 5 <= i <= 30), ("id IN (0, 12, 13, 17, 22, 199, 500)",
                                                                           lambda i: i in (0, 12, 13, 17, 22, 199))]:
        got = t.scan(where=where)
        assert sorted((r["id"], r["dt"], r["v"]) for r in rows(got)) == \
            sorted((i, dt, v) for (i, dt), v in model.items() if keep(i))
        # the same rows in the same order (split by split, each by key) as the per-split merge
        assert rows(got) == rows(paths.split_by_split(lambda: t.scan(where=where)))
    assert paths.key_bounded == 2

    wanted = ["id=12", "id=17", "id=22", "id=3,dt=b", "id=500"]
    found = t.lookup(wanted)
    assert [(r["id"], r["dt"], r["v"]) for r in rows(found.rows)] == \
        [(12, "a", "a-new12"), (12, "b", "b-again12"), (17, "b", "b17"), (22, "b", "b22"), (3, "b", "b3")]
    assert rows(found.rows) == rows(paths.split_by_split(lambda: t.lookup(wanted)).rows)
    assert paths.key_bounded == 3


def test_sequence_field_ties_and_descending_order_choose_as_the_split_merge(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``sequence.field`` decides first (here descending: the smallest ts wins); equal ts leave
    it to the sequence number (the later write)."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, ts BIGINT, v STRING", primary_keys=["id"],
           options={"bucket": "3", "sequence.field": "ts", "sequence.field.sort-order": "descending"})
    t.write(pa.table({"id": pa.array(range(60), pa.int64()), "ts": pa.array([10] * 60, pa.int64()),
                      "v": ["first"] * 60}))
    t.write(pa.table({"id": pa.array(range(0, 60, 2), pa.int64()), "ts": pa.array([10, 9, 11] * 10, pa.int64()),
                      "v": ["second"] * 30}))
    paths = Paths(monkeypatch)

    got = t.scan(where="id < 30")

    # ids 0, 6, 12..: ts tie -> later write; 2, 8, ..: ts 9 is smaller -> wins; 4, 10, ..: 11 loses
    second = {i for i in range(0, 60, 2) if (i // 2) % 3 in (0, 1)}
    assert {r["id"]: r["v"] for r in rows(got)} == {i: "second" if i in second else "first" for i in range(30)}
    assert rows(got) == rows(paths.split_by_split(lambda: t.scan(where="id < 30")))
    assert paths.key_bounded == 1


def test_ignore_delete_keeps_the_deleted_keys_as_the_split_merge(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    t = partitioned(tmp_path, {"ignore-delete": "true"})
    t.write(pa.table({"id": pa.array(range(50), pa.int64()), "dt": ["a"] * 50, "v": ["x"] * 50}))
    t.write(pa.table({"id": pa.array([3, 4], pa.int64()), "dt": ["a", "a"], "v": ["gone?", "new"],
                      "op": ["-D", "+U"]}), row_kind_column="op")
    paths = Paths(monkeypatch)

    got = t.scan(where="id IN (3, 4, 5)")

    assert {r["id"]: r["v"] for r in rows(got)} == {3: "x", 4: "new", 5: "x"}
    assert rows(got) == rows(paths.split_by_split(lambda: t.scan(where="id IN (3, 4, 5)")))
    assert paths.key_bounded == 1


def test_deletion_vectors_are_applied_before_the_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deletion-vector table's splits here are read without merging (raw-convertible, several
    levels: their own file order), so scans keep the split-by-split path; key_read, called on
    the same splits, applies the vectors as it reads each file: a key whose -D was dropped by
    the write's compaction would otherwise come back from the base file."""
    from core.kernels.read import read_split
    from core.ops.scan import prepare

    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"],
           options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": pa.array(range(100), pa.int64()), "v": [f"a{i}" for i in range(100)]}))
    t.write(pa.table({"id": pa.array([1, 2, 3, 4, 60], pa.int64()), "v": ["b", "b", None, None, "b"],
                      "op": ["+U", "+U", "-D", "-D", "+U"]}), row_kind_column="op")
    t.write(pa.table({"id": pa.array([2, 3], pa.int64()), "v": ["c", "c"]}))  # 3 deleted, then back
    assert sum(f.deleted_rows for f in t.files()) > 0  # the updates left vectors
    model = {i: f"a{i}" for i in range(100) if i != 4} | {1: "b", 2: "c", 3: "c", 60: "b"}
    paths = Paths(monkeypatch)

    for where, keep in [("id < 10 OR id = 60", lambda i: i < 10 or i == 60), ("id IN (1, 2, 3, 4, 60, 61)",
                                                                            lambda i: i in (1, 2, 3, 4, 60, 61))]:
        assert {r["id"]: r["v"] for r in rows(t.scan(where=where))} == {i: v for i, v in model.items() if keep(i)}
        prepared = prepare(t, where=where)
        plan = prepared.plan
        assert plan.splits and all(s.deletion_files for s in plan.splits)
        assert not key_read.eligible(plan.splits, plan.read_schema, t.file_io)
        merged = key_read.read_key_bounded(plan.splits, plan.read_schema, plan.schemas, t.file_io)
        for split, got in zip(plan.splits, merged):
            alone = read_split(split, plan.read_schema, plan.schemas, t.file_io)
            passing = [r for r in rows(alone) if keep(r["id"])]
            assert rows(got) == sorted(passing, key=lambda r: r["id"])
    assert paths.key_bounded == 2  # the direct calls only


def test_too_many_candidates_read_split_by_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = partitioned(tmp_path)
    model = write_two_partitions(t)
    paths = Paths(monkeypatch)
    monkeypatch.setattr(key_read, "MAX_CANDIDATES", 100)

    got = t.scan(where="id BETWEEN 0 AND 150")

    assert sorted((r["id"], r["dt"], r["v"]) for r in rows(got)) == \
        sorted((i, dt, v) for (i, dt), v in model.items() if i <= 150)
    assert paths.key_bounded == 0  # gave up: more than 100 records passed
    small = t.scan(where="id BETWEEN 0 AND 20")
    assert paths.key_bounded == 1 and rows(small) == [r for r in rows(got) if r["id"] <= 20]


def test_select_and_value_conditions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--select reads the chosen columns; a condition naming a value column is not key-bounded
    (a key's newest record decides first), and the rows are the model's either way."""
    t = partitioned(tmp_path)
    model = write_two_partitions(t)
    paths = Paths(monkeypatch)

    got = t.scan(where="id IN (11, 12, 16)", select=["v"])
    assert sorted(r["v"] for r in rows(got)) == sorted(v for (i, _), v in model.items() if i in (11, 12, 16))
    assert paths.key_bounded == 1
    old = t.scan(where="id IN (11, 12, 16) AND v = 'a11'")  # a11 was overwritten: no row
    assert rows(old) == [] and paths.key_bounded == 1


def test_points_on_a_leading_key_column_that_repeats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a key (a, b) a file holds each a in a run of rows; a key list on a finds each run by
    binary search (key_read._points_in_sorted) and must return all of its rows, newest values."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "a INT NOT NULL, b INT NOT NULL, v STRING", primary_keys=["a", "b"], options={"bucket": "2"})
    t.write(pa.table({"a": pa.array([i // 4 for i in range(400)], pa.int32()),
                      "b": pa.array([i % 4 for i in range(400)], pa.int32()), "v": ["old"] * 400}))
    t.write(pa.table({"a": pa.array([7, 7, 50], pa.int32()), "b": pa.array([1, 9, 3], pa.int32()),
                      "v": ["new", "added", "new"]}))
    t.delete("a = 50 AND b = 0")
    model = {(i // 4, i % 4): "old" for i in range(400)} | {(7, 1): "new", (7, 9): "added", (50, 3): "new"}
    del model[(50, 0)]
    paths = Paths(monkeypatch)

    for where in ("a IN (0, 7, 50, 99, 1000)", "a = 7"):
        got = t.scan(where=where)
        points = {0, 7, 50, 99, 1000} if "IN" in where else {7}
        assert sorted((r["a"], r["b"], r["v"]) for r in rows(got)) == \
            sorted((a, b, v) for (a, b), v in model.items() if a in points)
        assert rows(got) == rows(paths.split_by_split(lambda: t.scan(where=where)))
    assert paths.key_bounded == 2
    found = t.lookup(["a=7,b=9", "a=50,b=0", "a=99,b=3"])
    assert [(r["a"], r["b"], r["v"]) for r in rows(found.rows)] == [(7, 9, "added"), (99, 3, "old")]
    assert paths.key_bounded == 3


def test_points_in_sorted_finds_each_run_and_declines_unsorted_rows() -> None:
    from core.kernels.key_read import _points_in_sorted
    from core.predicate import InList
    from core.types import parse_type

    bigint = parse_type("BIGINT")
    records = pa.table({"k": pa.array([1, 3, 3, 3, 8, 9, 9], pa.int64()), "n": pa.array(range(7), pa.int64())})
    found = _points_in_sorted(records, InList("k", bigint, (9, 3, 4, 0)), "k")
    assert found.column("n").to_pylist() == [1, 2, 3, 5, 6]  # both runs whole, in file order
    assert _points_in_sorted(records, InList("k", bigint, (4,)), "k").num_rows == 0
    assert _points_in_sorted(records, InList("n", bigint, (4,)), "k") is None  # not the leading key
    shuffled = records.take(pa.array([1, 0, 2, 3, 4, 5, 6]))
    assert _points_in_sorted(shuffled, InList("k", bigint, (3,)), "k") is None  # is_in filters it then


def test_row_group_ranges_admit_what_the_predicate_admits() -> None:
    """key_read._may_hold (numpy over all row groups at once) against Predicate.may_match (the
    per-group answer read_file prunes by), on random group ranges and random conditions."""
    import random

    import numpy as np

    from core.kernels.key_read import _may_hold
    from core.predicate import And, ColumnRange, Comparison, InList
    from core.types import parse_type

    bigint = parse_type("BIGINT")
    rng = random.Random(7)
    for _ in range(300):
        lo = np.array(sorted(rng.randrange(-50, 50) for _ in range(8)), np.int64)
        hi = lo + np.array([rng.randrange(0, 20) for _ in range(8)], np.int64)
        known = np.array([rng.random() > 0.1 for _ in range(8)])

        def leaf():
            if rng.random() < 0.4:
                return InList("k", bigint, tuple(rng.randrange(-60, 80) for _ in range(rng.randrange(1, 5))))
            return Comparison("k", bigint, rng.choice(["=", "<>", "<", "<=", ">", ">="]), rng.randrange(-60, 80))

        condition = leaf() if rng.random() < 0.5 else And((leaf(), leaf()))
        got = _may_hold(condition, {"k": (lo, hi, known)})
        expected = [condition.may_match({"k": ColumnRange(int(a), int(b), 0, 10)}) if k else True
                    for a, b, k in zip(lo, hi, known)]
        assert got.tolist() == expected, condition


def test_partition_columns_from_the_splits_match_the_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An integer and a string partition column: the columns key_read fills from the splits'
    partition values (not decoded from the files) equal the files' values."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, p INT, q STRING, v STRING", primary_keys=["id", "p", "q"],
           partition_keys=["p", "q"], options={"bucket": "2"})
    for p, q in [(1, "x"), (2, "x"), (3, "y")]:
        t.write(pa.table({"id": pa.array(range(30), pa.int64()), "p": pa.array([p] * 30, pa.int32()),
                          "q": [q] * 30, "v": [f"{p}{q}{i}" for i in range(30)]}))
    t.write(pa.table({"id": pa.array([5, 6], pa.int64()), "p": pa.array([2, 3], pa.int32()), "q": ["x", "y"],
                      "v": ["new", "new"]}))
    paths = Paths(monkeypatch)

    for where in ("id BETWEEN 4 AND 7", "id IN (5, 6, 29)"):
        got = t.scan(where=where)
        assert sorted((r["id"], r["p"], r["q"]) for r in rows(got)) == \
            sorted((i, p, q) for p, q in [(1, "x"), (2, "x"), (3, "y")]
                   for i in ({4, 5, 6, 7} if "BETWEEN" in where else {5, 6, 29}))
        assert {(r["id"], r["p"]): r["v"] for r in rows(got)}[(5, 2)] == "new"
        assert rows(got) == rows(paths.split_by_split(lambda: t.scan(where=where)))
    assert paths.key_bounded == 2


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}, {"sequence.field": "ver"}],
                         ids=["plain", "deletion-vectors", "sequence-field"])
def test_key_lists_over_files_of_many_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 options: dict[str, str]) -> None:
    """A key list over files of several row groups (key_read reads the groups its stats admit,
    binary searches each file's key column, then fetches the other columns of the rows alive): keys in
    the first, middle and last groups, keys between two groups, absent keys, keys updated,
    deleted and re-inserted in later runs, against a dict model and the split-by-split read."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, ver INT, v STRING", primary_keys=["id"], options={"bucket": "1", **options})
    n = 20_000  # five row groups of 4,096 rows in the first file
    t.write(pa.table({"id": pa.array(range(0, 2 * n, 2), pa.int64()), "ver": pa.array([1] * n, pa.int32()),
                      "v": [f"base{i}" for i in range(0, 2 * n, 2)]}))
    model = {i: (1, f"base{i}") for i in range(0, 2 * n, 2)}
    updated = [0, 8190, 8192, 20_000, 39_998]  # first row, either side of a group edge, middle, last
    t.write(pa.table({"id": pa.array(updated, pa.int64()), "ver": pa.array([2] * 5, pa.int32()),
                      "v": [f"upd{i}" for i in updated]}))
    model.update({i: (2, f"upd{i}") for i in updated})
    t.delete("id IN (8192, 30000)")
    del model[8192], model[30000]
    t.write(pa.table({"id": pa.array([30000, 7], pa.int64()), "ver": pa.array([3, 3], pa.int32()),
                      "v": ["again30000", "odd7"]}))
    model.update({30000: (3, "again30000"), 7: (3, "odd7")})
    keys = [0, 7, 8190, 8191, 8192, 8194, 20_000, 30000, 39_998, 39_999, 40_000, -2]
    where = f"id IN ({', '.join(map(str, keys))})"
    expected = sorted((k, *model[k]) for k in keys if k in model)
    if "deletion-vectors.enabled" in options:
        # read without merging by the scan (see above); key_read asked directly applies each
        # file's vector in its key pass, before the rows found are fetched
        from core.ops.scan import prepare

        assert sum(f.deleted_rows for f in t.files()) > 0
        plan = prepare(t, where=where).plan
        merged = key_read.read_key_bounded(plan.splits, plan.read_schema, plan.schemas, t.file_io)
        assert sorted((r["id"], r["ver"], r["v"]) for part in merged for r in rows(part)) == expected
        return
    paths = Paths(monkeypatch)
    got = t.scan(where=where)
    assert sorted((r["id"], r["ver"], r["v"]) for r in rows(got)) == expected
    assert rows(got) == rows(paths.split_by_split(lambda: t.scan(where=where)))
    found = t.lookup([f"id={k}" for k in keys])
    assert sorted((r["id"], r["ver"], r["v"]) for r in rows(found.rows)) == expected
    assert paths.key_bounded == 2
