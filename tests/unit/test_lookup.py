"""Point lookups by primary key (core.ops.lookup) on real tables under tmp_path.

Expected rows come from a dict model of what each test wrote (minus what it deleted or
overrode by the merge engine's rule), never from a lakectl scan. Expected files come from
the Parquet data files themselves: the live files of the key's bucket (the bucket directory
the key's rows sit in) and partition, whose ``_KEY_*`` columns' smallest and largest key
hold the key; their sizes are read from the file system.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.bucket import bucket_of
from core.errors import NotFoundError, UsageError
from core.evolution import RenameColumn
from core.ops.create import create
from core.table import Table
from core.types import arrow_field

Row = dict[str, Any]


# ---- harness -------------------------------------------------------------------------------
def make_table(tmp_path: Path, schema: str, *, name: str = "t", primary_keys: Sequence[str] = (),
               partition_keys: Sequence[str] = (), options: dict[str, str] | None = None) -> Table:
    t = Table.locate(f"db.{name}", warehouse=str(tmp_path / "wh"))
    create(t, schema, primary_keys=list(primary_keys), partition_keys=list(partition_keys), options=options)
    return t


def ordered(rows: list[Row], columns: Sequence[str]) -> list[Row]:
    return sorted(rows, key=lambda r: tuple((r[c] is None, r[c]) for c in columns))


class KeyedModel:
    """The rows a primary-key table must hold, by full primary key, after each snapshot."""

    def __init__(self, key: Sequence[str], merge: Callable[[Row | None, Row], Row | None] | None = None) -> None:
        self.key = list(key)
        self.rows: dict[tuple, Row] = {}
        self.merge = merge or (lambda old, new: new)
        self.snapshots: dict[int, dict[tuple, Row]] = {}

    def apply(self, rows: list[Row], kinds: list[str] | None = None) -> None:
        for i, row in enumerate(rows):
            k = tuple(row[c] for c in self.key)
            if kinds is not None and kinds[i] in ("-D", "-U"):
                self.rows.pop(k, None)
                continue
            merged = self.merge(self.rows.get(k), dict(row))
            if merged is not None:
                self.rows[k] = merged

    def commit(self, snapshot_id: int) -> None:
        self.snapshots[snapshot_id] = dict(self.rows)

    def find(self, key: Row, snapshot_id: int | None = None) -> list[Row]:
        rows = self.rows if snapshot_id is None else self.snapshots[snapshot_id]
        return [dict(r) for r in rows.values() if all(r[c] == v for c, v in key.items())]


def write(t: Table, model: KeyedModel, rows: list[Row], kinds: list[str] | None = None) -> int:
    data = pa.Table.from_pylist(rows, schema=model_schema(t))
    if kinds is not None:
        data = data.append_column("op", pa.array(kinds))
    t.write(data, row_kind_column="op" if kinds is not None else None)
    model.apply(rows, kinds)
    sid = t.latest_snapshot().id
    model.commit(sid)
    return sid


def model_schema(t: Table) -> pa.Schema:
    return pa.schema([arrow_field(f).with_nullable(True) for f in t.schema.fields])


# ---- the files a lookup must read, from the Parquet files ------------------------------------
def _file_path(t: Table, name: str) -> Path:
    found = list(Path(t.path).rglob(name))
    assert len(found) == 1, f"data file {name} found {len(found)} times"
    return found[0]


def _key_tuples(path: Path) -> list[tuple]:
    data = pq.read_table(path)
    keys = [c for c in data.column_names if c.startswith("_KEY_")]
    assert keys, f"{path} has no _KEY_ columns"
    return list(zip(*(data.column(c).to_pylist() for c in keys)))


def expected_files(t: Table, key: Row, key_columns: Sequence[str], partition: str | None = None,
                   snapshot_id: int | None = None, bucket_key: Sequence[str] | None = None) -> set[str]:
    """Names of the live files of the key's bucket (under the ``partition`` directory, such as
    ``dt=19723``, if given) whose smallest and largest ``_KEY_`` rows bound the key.

    The key's bucket is the bucket directory its rows sit in; for a key no file holds it is
    the writer's hash (``core.bucket.bucket_of``) of the bucket-key values.
    """
    live = [f.file_name for f in t.files(snapshot_id=snapshot_id)]
    want = tuple(key[c] for c in key_columns)
    files = {}
    for name in live:
        path = _file_path(t, name)
        rel = path.relative_to(t.path).parts
        files[name] = (rel[:-2], rel[-2], _key_tuples(path))
    holding = {bucket for part, bucket, tuples in files.values()
               if want in tuples and (partition is None or partition in part)}
    if not holding:
        schema = t.schema if snapshot_id is None else t.schemas.schema(t.snapshots.snapshot(snapshot_id).schema_id)
        names = list(bucket_key or key_columns)
        bucket = bucket_of([key[c] for c in names], [schema.field(c).type for c in names], schema.num_buckets)
        holding = {f"bucket-{bucket}"}
    assert len(holding) == 1, f"key {key} lies in buckets {holding}"
    out = set()
    for name, (part, bucket, tuples) in files.items():
        if bucket not in holding or (partition is not None and partition not in part):
            continue
        if min(tuples) <= want <= max(tuples):
            out.add(name)
    return out


def assert_pruned(t: Table, result: Any, expected: set[str], snapshot_id: int | None = None) -> None:
    """The lookup read exactly ``expected``, and reports its files and bytes out of the live ones."""
    assert set(result.files) == expected
    assert len(result.files) == result.files_read == len(expected)
    assert result.bytes_read == sum(os.path.getsize(_file_path(t, n)) for n in expected)
    live = [f.file_name for f in t.files(snapshot_id=snapshot_id)]
    assert result.files_total == len(live)
    assert result.bytes_total == sum(os.path.getsize(_file_path(t, n)) for n in live)


def key_text(key: Row) -> str:
    return ",".join(f"{c}={v}" for c, v in key.items())


# ---- deduplicate ---------------------------------------------------------------------------
def test_deduplicate_updates_deletes_across_writes_and_a_compaction(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id BIGINT, name STRING, amount DOUBLE", primary_keys=["id"],
                   options={"bucket": "3", "target-file-size": "1kb"})
    m = KeyedModel(["id"])

    def rows(ids: Sequence[int], tag: str) -> list[Row]:
        return [{"id": i, "name": f"{tag}{i}", "amount": i / 4} for i in ids]

    write(t, m, rows(range(300), "a"))
    updates = rows(range(50, 81), "b") + rows(range(100, 111), "x") + rows(range(300, 321), "c")
    write(t, m, updates, ["+U"] * 31 + ["-D"] * 11 + ["+I"] * 21)
    t.compact(full=True)
    m.commit(t.latest_snapshot().id)
    write(t, m, rows([5, 150, 305], "d") + rows([60], "") + rows([105], "e"), ["+U"] * 3 + ["-D", "+I"])
    write(t, m, rows(range(4), ""), ["-D"] * 4)
    levels = {f.level for f in t.files()}
    assert 0 in levels and max(levels) > 0, "the table should hold compacted and new files"

    probes = [0, 1, 5, 50, 60, 80, 100, 105, 110, 150, 299, 305, 320, 321, 999, -1]
    for sid in sorted(m.snapshots):
        latest = sid == t.latest_snapshot().id
        result = t.lookup([f"id={i}" for i in probes], snapshot_id=None if latest else sid)
        expected = [r for i in probes for r in m.find({"id": i}, sid)]
        assert result.rows.to_pylist() == expected, f"snapshot {sid}"  # in the order of the keys asked
        assert (result.keys, result.found) == (len(probes), len(expected))
        assert sorted(k["id"] for k in result.missing) == sorted(set(probes) - {r["id"] for r in expected})
        union: set[str] = set()
        for i in probes:
            one = t.lookup([f"id={i}"], snapshot_id=sid)
            assert one.rows.to_pylist() == m.find({"id": i}, sid)
            want = expected_files(t, {"id": i}, ["id"], snapshot_id=sid)
            assert_pruned(t, one, want, sid)
            union |= want
        assert set(result.files) == union
    # the lookup really prunes: one key reads a fraction of the live files
    one = t.lookup(["id=150"])
    assert 0 < one.files_read < one.files_total / 3


def test_lookup_returns_rows_in_key_order_and_counts_distinct_keys(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id INT, v STRING", primary_keys=["id"], options={"bucket": "2"})
    m = KeyedModel(["id"])
    write(t, m, [{"id": i, "v": f"v{i}"} for i in range(20)])
    result = t.lookup(["id=7", "id=3", {"id": 12}, "id=7", "id=40", " id=3"])
    assert [r["id"] for r in result.rows.to_pylist()] == [7, 3, 12]
    assert (result.keys, result.found) == (4, 3)
    assert result.missing == ({"id": 40},)
    assert t.lookup(["id=3"], select=["v"]).rows.to_pylist() == [{"v": "v3"}]
    assert t.lookup(["id=3"], select=["v"]).rows.schema.names == ["v"]


def test_empty_table_finds_nothing(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id INT, v STRING", primary_keys=["id"])
    result = t.lookup(["id=1"])
    assert result.rows.num_rows == 0 and result.rows.schema.names == ["id", "v"]
    assert (result.found, result.files_read, result.files_total, result.bytes_total) == (0, 0, 0, 0)


# ---- other merge engines ---------------------------------------------------------------------
def _partial(old: Row | None, new: Row) -> Row:
    if old is None:
        return new
    return {c: (new[c] if new[c] is not None else old[c]) for c in new}


def test_partial_update(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id INT, a STRING, b INT, c DOUBLE", primary_keys=["id"],
                   options={"bucket": "2", "merge-engine": "partial-update", "target-file-size": "1kb"})
    m = KeyedModel(["id"], _partial)
    write(t, m, [{"id": i, "a": f"a{i}", "b": None, "c": None} for i in range(0, 60)])
    write(t, m, [{"id": i, "a": None, "b": i * 10, "c": None} for i in range(20, 80)])
    t.compact(full=True)
    m.commit(t.latest_snapshot().id)
    write(t, m, [{"id": i, "a": f"z{i}", "b": None, "c": i / 2} for i in (0, 25, 59, 79, 90)])
    probes = [0, 1, 19, 20, 25, 59, 60, 79, 90, 91]
    for sid in sorted(m.snapshots):
        for i in probes:
            result = t.lookup([f"id={i}"], snapshot_id=sid)
            assert result.rows.to_pylist() == m.find({"id": i}, sid), (sid, i)
            assert_pruned(t, result, expected_files(t, {"id": i}, ["id"], snapshot_id=sid), sid)


def _first_row(old: Row | None, new: Row) -> Row:
    return new if old is None else old


def test_first_row(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id BIGINT, v STRING", primary_keys=["id"],
                   options={"bucket": "2", "merge-engine": "first-row", "target-file-size": "1kb"})
    m = KeyedModel(["id"], _first_row)
    write(t, m, [{"id": i, "v": f"a{i}"} for i in range(0, 100, 2)])
    write(t, m, [{"id": i, "v": f"b{i}"} for i in range(0, 100, 3)])
    t.compact(full=True)
    m.commit(t.latest_snapshot().id)
    write(t, m, [{"id": i, "v": f"c{i}"} for i in range(0, 120, 5)])
    probes = [0, 2, 3, 5, 9, 10, 99, 100, 105, 7, 121]
    result = t.lookup([f"id={i}" for i in probes])
    assert result.rows.to_pylist() == [r for i in probes for r in m.find({"id": i})]
    for sid in sorted(m.snapshots):
        for i in probes:
            one = t.lookup([f"id={i}"], snapshot_id=sid)
            assert one.rows.to_pylist() == m.find({"id": i}, sid), (sid, i)
            assert_pruned(t, one, expected_files(t, {"id": i}, ["id"], snapshot_id=sid), sid)


def test_aggregation(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id INT, total BIGINT, hi INT", primary_keys=["id"],
                   options={"bucket": "2", "merge-engine": "aggregation", "fields.total.aggregate-function": "sum",
                            "fields.hi.aggregate-function": "max"})

    def agg(old: Row | None, new: Row) -> Row:
        if old is None:
            return new
        return {"id": new["id"], "total": old["total"] + new["total"], "hi": max(old["hi"], new["hi"])}

    m = KeyedModel(["id"], agg)
    write(t, m, [{"id": i % 10, "total": i, "hi": i} for i in range(10)])
    write(t, m, [{"id": i % 7, "total": 100, "hi": 3 * i % 11} for i in range(14)])
    for i in range(12):
        assert t.lookup([f"id={i}"]).rows.to_pylist() == m.find({"id": i})


# ---- partitions, composite keys, types -------------------------------------------------------
def day_dir(d: dt.date) -> str:
    """A DATE partition's directory: days since the epoch (Paimon's legacy partition names)."""
    return f"dt={(d - dt.date(1970, 1, 1)).days}"


def test_partitioned_with_partition_omitted_and_given(tmp_path: Path) -> None:
    t = make_table(tmp_path, "dt DATE, id BIGINT, v STRING", primary_keys=["dt", "id"], partition_keys=["dt"],
                   options={"bucket": "3", "target-file-size": "1kb"})
    m = KeyedModel(["dt", "id"])
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)]
    write(t, m, [{"dt": d, "id": i, "v": f"{d}-{i}"} for d in days[:2] for i in range(50)])
    write(t, m, [{"dt": days[2], "id": i, "v": f"new-{i}"} for i in range(25, 75)]
          + [{"dt": days[0], "id": i, "v": f"upd-{i}"} for i in range(10, 15)])
    t.compact(full=True)
    write(t, m, [{"dt": days[1], "id": 30, "v": None}], ["-D"])
    for i in (0, 10, 30, 49, 60, 80):
        result = t.lookup([f"id={i}"])
        assert ordered(result.rows.to_pylist(), ["dt"]) == ordered(m.find({"id": i}), ["dt"])
        # every partition is searched, each in the key's bucket only
        want: set[str] = set()
        for d in days:
            want |= expected_files(t, {"id": i}, ["id"], day_dir(d))
        assert_pruned(t, result, want)
        for d in days:
            given = t.lookup([f"id={i},dt={d.isoformat()}"])
            assert given.rows.to_pylist() == m.find({"id": i, "dt": d})
            assert_pruned(t, given, expected_files(t, {"id": i}, ["id"], day_dir(d)))
    both = t.lookup(["dt=2024-01-03,id=30", "id=12"])
    assert both.rows.to_pylist() == m.find({"id": 30, "dt": days[2]}) + ordered(m.find({"id": 12}), ["dt"])


def test_default_partition_of_a_key_outside_the_partition(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id BIGINT, region STRING, v STRING", primary_keys=["id"], partition_keys=["region"],
                   options={"bucket": "2"})
    m = KeyedModel(["region", "id"])
    write(t, m, [{"id": 1, "region": None, "v": "a"}, {"id": 1, "region": "eu", "v": "b"},
                 {"id": 2, "region": None, "v": "c"}])
    assert t.lookup(["id=1,region=__DEFAULT_PARTITION__"]).rows.to_pylist() == m.find({"id": 1, "region": None})
    assert t.lookup(["id=1,region=eu"]).rows.to_pylist() == m.find({"id": 1, "region": "eu"})
    assert ordered(t.lookup(["id=1"]).rows.to_pylist(), ["v"]) == ordered(m.find({"id": 1}), ["v"])


@pytest.mark.parametrize("bucket_key", [None, "k1"])
def test_composite_key(tmp_path: Path, bucket_key: str | None) -> None:
    options = {"bucket": "3", "target-file-size": "1kb"}
    if bucket_key:
        options["bucket-key"] = bucket_key
    t = make_table(tmp_path, "k1 INT, k2 STRING, v DOUBLE", primary_keys=["k1", "k2"], options=options)
    m = KeyedModel(["k1", "k2"])
    names = ["", "a", "a,b", "b", "long key string", "ü"]
    write(t, m, [{"k1": k1, "k2": k2, "v": k1 * 1.5} for k1 in range(-5, 20) for k2 in names])
    write(t, m, [{"k1": k1, "k2": "a", "v": -1.0} for k1 in range(0, 20, 4)])
    write(t, m, [{"k1": 3, "k2": "b", "v": None}], ["-D"])
    bk = [bucket_key] if bucket_key else None
    for k1 in (-5, 0, 3, 4, 19, 20):
        for k2 in names + ["zz"]:
            key = {"k1": k1, "k2": k2}
            result = t.lookup([key_text(key)])
            assert result.rows.to_pylist() == m.find(key), key
            assert_pruned(t, result, expected_files(t, key, ["k1", "k2"], bucket_key=bk))
    with pytest.raises(UsageError, match="lacks primary-key column 'k2'"):
        t.lookup(["k1=3"])


def test_typed_key_columns(tmp_path: Path) -> None:
    t = make_table(tmp_path, "d DATE, n DECIMAL(10, 2), ts TIMESTAMP(3), flag BOOLEAN, v STRING",
                   primary_keys=["d", "n", "ts", "flag"], options={"bucket": "4"})
    m = KeyedModel(["d", "n", "ts", "flag"])
    rows = [{"d": dt.date(2024, 1, 1 + i % 3), "n": Decimal(f"{i}.25"), "ts": dt.datetime(2024, 5, 1, 12, i, 0, 123000),
             "flag": i % 2 == 0, "v": f"v{i}"} for i in range(30)]
    write(t, m, rows)
    for row in rows[::4]:
        key = {c: row[c] for c in m.key}
        text = (f"d={row['d'].isoformat()},n={row['n']},ts={row['ts'].isoformat(sep=' ')},"
                f"flag={'true' if row['flag'] else 'false'}")
        assert t.lookup([text]).rows.to_pylist() == m.find(key) == [row]
        assert t.lookup([key]).rows.to_pylist() == [row]  # a mapping of Python values
        assert t.lookup([text.replace(".25", ".250")]).rows.to_pylist() == [row]
    assert t.lookup(["d=2024-01-01,n=0.26,ts=2024-05-01T12:00:00.123,flag=true"]).rows.num_rows == 0


def test_renamed_key_column(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id BIGINT, v STRING", primary_keys=["id"],
                   options={"bucket": "2", "target-file-size": "1kb"})
    m = KeyedModel(["id"])
    first = write(t, m, [{"id": i, "v": f"a{i}"} for i in range(40)])
    t.alter([RenameColumn("id", "uid")])
    m.rows = {k: {"uid": r["id"], "v": r["v"]} for k, r in m.rows.items()}
    m.key = ["uid"]
    write(t, m, [{"uid": i, "v": f"b{i}"} for i in range(30, 60)])
    schemas = {f.schema_id for f in t.files()}
    assert len(schemas) == 2, "old and new files should have different schemas"
    for i in (0, 29, 30, 39, 40, 59, 60):
        result = t.lookup([f"uid={i}"])
        assert result.rows.to_pylist() == m.find({"uid": i})
        assert_pruned(t, result, expected_files(t, {"uid": i}, ["uid"]))
    # time travel reads the snapshot in its own schema, where the key was still called id
    assert t.lookup(["id=5"], snapshot_id=first).rows.to_pylist() == [{"id": 5, "v": "a5"}]
    with pytest.raises(UsageError, match="'id'"):
        t.lookup(["id=5"])


# ---- errors --------------------------------------------------------------------------------
def test_errors(tmp_path: Path) -> None:
    t = make_table(tmp_path, "id INT, dt STRING, v STRING", primary_keys=["dt", "id"], partition_keys=["dt"],
                   options={"bucket": "2"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "dt": ["a", "b"], "v": ["x", "y"]}))
    cases = {
        "nope=1": "column 'nope' is not in table",
        "v=1": "column 'v' is not a primary-key or partition column",
        "dt=a": "lacks primary-key column 'id'",
        "id=abc": "'abc' is not a value of column 'id' \\(INT\\)",
        "id=1.5": "'1.5' is not a value of column 'id'",
        "id=99999999999": "is not a value of column 'id'",
        "id=1,id=2": "gives column 'id' twice",
        "": "--key is empty",
        "1": "is not COLUMN=VALUE",
    }
    for key, message in cases.items():
        with pytest.raises(UsageError, match=message):
            t.lookup([key])
    with pytest.raises(UsageError, match="cannot be null"):
        t.lookup([{"id": None}])
    with pytest.raises(UsageError, match="at least one"):
        t.lookup([])
    with pytest.raises(UsageError, match="unknown column 'w'"):
        t.lookup(["id=1"], select=["w"])
    with pytest.raises(NotFoundError, match="snapshot 7"):
        t.lookup(["id=1"], snapshot_id=7)
    append = make_table(tmp_path, "id INT, v STRING", name="log")
    with pytest.raises(UsageError, match="primary-key table"):
        append.lookup(["id=1"])
