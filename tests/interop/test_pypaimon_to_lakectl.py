"""The official writer (pypaimon) writes, lakectl reads; then both write the same table.

pypaimon creates and writes each table through ``official_write`` while an independent
model (shared with ``test_lakectl_to_pypaimon.py``) tracks the rows every snapshot must
hold; lakectl's scan must return them at the latest snapshot, at each earlier one, at
tags, and in the schema a snapshot was written with. The mixed tests let lakectl and
pypaimon take turns on one primary-key table: each writer must continue the other's
sequence numbers (and buckets), so the later update of a key wins in both readers.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle import ORACLE_DIR, official_read, official_write, oracle_python
from test_lakectl_to_pypaimon import (
    ESCAPED_PARTITIONS,
    AppendModel,
    KeyedModel,
    Model,
    Row,
    all_types_batch,
    all_types_columns,
    assert_rows,
    canonical_rows,
    lakectl_table,
    partition_dirs,
)

from core.table import Table

pytestmark = pytest.mark.interop


class OracleHistory:
    """A table pypaimon will create and write, and the rows each of its snapshots must hold.

    Steps are collected first and run as one ``official_write`` job by ``run``.
    """

    def __init__(self, tmp_path: Path, name: str, fields: Sequence[tuple[str, str]], model: Model, *,
                 primary_keys: Sequence[str] = (), partition_keys: Sequence[str] = (),
                 options: dict[str, str] | None = None) -> None:
        self.tmp_path = tmp_path
        self.warehouse = tmp_path / "wh"
        self.name = f"db.{name}"
        self.model = model
        self.row_kind_field = (options or {}).get("rowkind.field")
        self.job: dict[str, Any] = {
            "warehouse": str(self.warehouse), "table": self.name,
            "schema": {"fields": [list(f) for f in fields], "primary_keys": list(primary_keys),
                       "partition_keys": list(partition_keys), "options": dict(options or {}), "comment": None},
            "steps": [],
        }
        self.batches: list[pa.Table] = []
        self.columns = [name for name, _ in fields]
        self.states: list[tuple[list[str], list[Row]]] = []  # (columns, rows) of snapshot i + 1
        self.tags: dict[str, int] = {}

    def write(self, data: pa.Table, *, overwrite_partition: dict[str, Any] | None = None) -> None:
        """One commit; ``overwrite_partition`` ({} for the whole table) makes it an overwrite."""
        rows = canonical_rows(data)
        self.job["steps"].append({"op": "write", "overwrite": overwrite_partition is not None,
                                  "overwrite_partition": overwrite_partition})
        self.batches.append(data)
        if overwrite_partition is not None:
            assert all(str(row[k]) == str(v) for row in rows for k, v in overwrite_partition.items()), \
                "an overwrite batch must lie inside the partition it replaces"
            self.model.overwrite(rows)
        else:
            kinds = [row[self.row_kind_field] for row in rows] if self.row_kind_field else None
            self.model.apply(rows, kinds)
        self.states.append((list(self.columns), self.model.snapshot()))

    def tag(self, name: str) -> None:
        self.job["steps"].append({"op": "tag", "name": name, "snapshot": None})
        self.tags[name] = len(self.states)

    def add_column(self, name: str, paimon_type: str) -> None:
        self.job["steps"].append({"op": "add_column", "name": name, "type": paimon_type})
        self.columns.append(name)

    def run(self) -> Table:
        result = official_write(self.job, self.batches, self.tmp_path)
        assert result["latest_snapshot"] == len(self.states), "each write step commits one snapshot"
        return Table.open(self.name, warehouse=str(self.warehouse))

    def verify(self, table: Table, filters: Sequence[tuple[str, Callable[[Row], bool]]] = ()) -> None:
        """lakectl reads the latest snapshot, every earlier one and every tag as the model says.

        ``filters`` pairs a ``where`` text with the same condition in Python: lakectl's
        filtered scan of the latest snapshot (pruned with pypaimon's partition values and
        stats) must return exactly the model rows it accepts.
        """
        key = self.model.key
        columns, rows = self.states[-1]
        assert table.latest_snapshot().id == len(self.states)
        assert_rows(table.scan(), rows, columns=columns, key=key, label="lakectl, latest")
        for where, accept in filters:
            matching = [row for row in rows if accept(row)]
            assert matching, f"filter {where!r} selects nothing; it would prove little"
            assert_rows(table.scan(where=where), matching, columns=columns, key=key, label=f"lakectl, where {where}")
        for snapshot_id, (columns, rows) in enumerate(self.states, start=1):
            assert_rows(table.scan(snapshot_id=snapshot_id), rows, columns=columns, key=key,
                        label=f"lakectl, snapshot {snapshot_id}")
        for tag, snapshot_id in self.tags.items():
            columns, rows = self.states[snapshot_id - 1]
            assert table.tags.snapshot(tag).id == snapshot_id
            assert_rows(table.scan(tag=tag), rows, columns=columns, key=key, label=f"lakectl, tag {tag}")


# ---- primary-key tables ----------------------------------------------------------------
SALES_FIELDS = [("dt", "STRING"), ("id", "BIGINT"), ("item", "STRING"), ("qty", "INT"), ("_rk", "STRING")]
SALES = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("item", pa.string()), ("qty", pa.int32()),
                   ("_rk", pa.string())])


def _sales(partitions: Sequence[str], ids: Sequence[int], tag: str, kind: str = "+I") -> list[Row]:
    return [{"dt": p, "id": i, "item": f"{tag}-{p}-{i}", "qty": i * 10, "_rk": kind} for p in partitions for i in ids]


def test_pk_partitioned_row_kinds_tags_and_time_travel(tmp_path: Path) -> None:
    h = OracleHistory(tmp_path, "sales", SALES_FIELDS, KeyedModel(["dt", "id"], ["dt"]),
                      primary_keys=["dt", "id"], partition_keys=["dt"],
                      options={"bucket": "4", "rowkind.field": "_rk"})
    h.write(pa.Table.from_pylist(_sales(ESCAPED_PARTITIONS, range(1, 13), "a"), schema=SALES))
    h.tag("t1")
    updates = [
        {"dt": "", "id": 2, "item": "a--2", "qty": 20, "_rk": "-U"},
        {"dt": "", "id": 2, "item": "b--2", "qty": -2, "_rk": "+U"},
        {"dt": "a/b c", "id": 5, "item": "b-5", "qty": None, "_rk": "+U"},
        {"dt": "x=y%", "id": 6, "item": "b-6", "qty": 1, "_rk": "+U"},
        {"dt": "x=y%", "id": 6, "item": "b-6-again", "qty": 2, "_rk": "+U"},
        {"dt": "2024-01-03", "id": 1, "item": "new", "qty": 3, "_rk": "+I"},
    ]
    h.write(pa.Table.from_pylist(updates + _sales(["2024-01-01"], range(10, 16), "b", "+U"), schema=SALES))
    deletes = [
        {"dt": "2024-01-01", "id": 1, "item": None, "qty": None, "_rk": "-D"},
        {"dt": "", "id": 3, "item": None, "qty": None, "_rk": "-D"},
        {"dt": "a/b c", "id": 5, "item": None, "qty": None, "_rk": "-U"},
        {"dt": "x=y%", "id": 999, "item": None, "qty": None, "_rk": "-D"},
        {"dt": "2024-01-03", "id": 1, "item": None, "qty": None, "_rk": "-D"},
    ]
    h.write(pa.Table.from_pylist(deletes, schema=SALES))
    h.write(pa.Table.from_pylist(_sales(["2024-01-02"], [1, 50, 51], "d"), schema=SALES),
            overwrite_partition={"dt": "2024-01-02"})
    h.tag("t2")
    h.write(pa.Table.from_pylist(_sales(["2024-01-02", "", "2024-01-04"], [51, 52], "e"), schema=SALES))
    table = h.run()
    assert partition_dirs(table.path, "dt") == {"dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03", "dt=2024-01-04",
                                                "dt=__DEFAULT_PARTITION__", "dt=a%2Fb c", "dt=x%3Dy%25"}
    assert h.tags == {"t1": 1, "t2": 4}
    h.verify(table, filters=[
        ("dt = 'x=y%'", lambda r: r["dt"] == "x=y%"),
        ("dt = '' OR id = 52", lambda r: r["dt"] == "" or r["id"] == 52),
        ("id >= 10 AND id < 12", lambda r: 10 <= r["id"] < 12),
        ("qty > 400", lambda r: r["qty"] is not None and r["qty"] > 400),
        ("item LIKE 'b-%'", lambda r: r["item"] is not None and r["item"].startswith("b-")),
    ])


ORDERS_FIELDS = [("id", "BIGINT"), ("name", "STRING"), ("amount", "DOUBLE"), ("_rk", "STRING")]
ORDERS = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()), ("_rk", pa.string())])


def test_pk_unpartitioned_one_bucket_with_overwrite(tmp_path: Path) -> None:
    h = OracleHistory(tmp_path, "orders", ORDERS_FIELDS, KeyedModel(["id"]), primary_keys=["id"],
                      options={"bucket": "1", "rowkind.field": "_rk"})
    h.write(pa.Table.from_pylist([{"id": i, "name": f"a{i}", "amount": i / 4, "_rk": "+I"} for i in range(10)],
                                 schema=ORDERS))
    h.write(pa.Table.from_pylist([{"id": 3, "name": None, "amount": None, "_rk": "-D"},
                                  {"id": 4, "name": "b4", "amount": -4.0, "_rk": "+U"},
                                  {"id": 40, "name": "b40", "amount": 40.0, "_rk": "+I"}], schema=ORDERS))
    h.write(pa.Table.from_pylist([{"id": 7, "name": "c7", "amount": 7.0, "_rk": "+I"}], schema=ORDERS),
            overwrite_partition={})
    h.write(pa.Table.from_pylist([{"id": 8, "name": "d8", "amount": 8.0, "_rk": "+I"}], schema=ORDERS))
    h.verify(h.run())


EVENTS_FIELDS = [("region", "STRING"), ("day", "DATE"), ("k1", "INT"), ("k2", "STRING"), ("v", "DOUBLE"),
                 ("_rk", "STRING")]
EVENTS = pa.schema([("region", pa.string()), ("day", pa.date32()), ("k1", pa.int32()), ("k2", pa.string()),
                    ("v", pa.float64()), ("_rk", pa.string())])


def test_composite_pk_with_string_and_date_partitions(tmp_path: Path) -> None:
    key = ["region", "day", "k1", "k2"]
    h = OracleHistory(tmp_path, "events", EVENTS_FIELDS, KeyedModel(key, ["region", "day"]), primary_keys=key,
                      partition_keys=["region", "day"], options={"bucket": "3", "rowkind.field": "_rk"})
    days = [dt.date(1969, 12, 31), dt.date(2024, 2, 29)]
    names = ["", "a", "abcdefgh", "a longer key string", "ü"]
    h.write(pa.Table.from_pylist([{"region": r, "day": d, "k1": k1, "k2": k2, "v": k1 / 2, "_rk": "+I"}
                                  for r in ("eu", "a/b c") for d in days for k1 in (-1, 0, 9) for k2 in names],
                                 schema=EVENTS))
    h.write(pa.Table.from_pylist([
        {"region": "eu", "day": days[0], "k1": 9, "k2": "abcdefgh", "v": None, "_rk": "-D"},
        {"region": "a/b c", "day": days[1], "k1": 0, "k2": "", "v": 100.0, "_rk": "+U"},
        {"region": "eu", "day": dt.date(2000, 1, 1), "k1": 1, "k2": "y2k", "v": 1.0, "_rk": "+I"},
    ], schema=EVENTS))
    h.write(pa.Table.from_pylist([{"region": "eu", "day": days[1], "k1": 5, "k2": "only", "v": 5.0, "_rk": "+I"}],
                                 schema=EVENTS), overwrite_partition={"region": "eu", "day": days[1].isoformat()})
    table = h.run()
    assert partition_dirs(table.path, "region") == {"region=eu", "region=a%2Fb c"}
    h.verify(table)


# ---- append tables ---------------------------------------------------------------------
LOG_FIELDS = [("p", "STRING"), ("seq", "INT"), ("payload", "STRING")]
LOG = pa.schema([("p", pa.string()), ("seq", pa.int32()), ("payload", pa.string())])


def _log(partitions: Sequence[str | None], seqs: Sequence[int], tag: str) -> list[Row]:
    return [{"p": p, "seq": s, "payload": f"{tag}{s}"} for p in partitions for s in seqs]


def test_append_partitions_null_empty_blank_and_escaped(tmp_path: Path) -> None:
    """null, '' and ' ' are three partitions sharing one directory."""
    h = OracleHistory(tmp_path, "log", LOG_FIELDS, AppendModel(["p"]), partition_keys=["p"])
    partitions = [None, "", " ", "a/b c", "x=y%", "plain"]
    h.write(pa.Table.from_pylist(_log(partitions, range(3), "a"), schema=LOG))
    h.tag("first")
    h.write(pa.Table.from_pylist(_log(partitions, [1, 5], "b"), schema=LOG))
    h.write(pa.Table.from_pylist(_log(["x=y%"], [100], "c"), schema=LOG), overwrite_partition={"p": "x=y%"})
    h.write(pa.Table.from_pylist(_log([" ", None, ""], [300], "e"), schema=LOG))
    table = h.run()
    assert partition_dirs(table.path, "p") == {"p=__DEFAULT_PARTITION__", "p=a%2Fb c", "p=x%3Dy%25", "p=plain"}
    h.verify(table)


NUMBERS_FIELDS = [("n", "INT"), ("s", "STRING")]
NUMBERS = pa.schema([("n", pa.int32()), ("s", pa.string())])


@pytest.mark.parametrize("layout", ["unpartitioned", "partitioned", "two-buckets"])
def test_append_tables(tmp_path: Path, layout: str) -> None:
    partition_keys = ["n"] if layout == "partitioned" else []
    options = {"bucket": "2", "bucket-key": "s"} if layout == "two-buckets" else {}
    h = OracleHistory(tmp_path, "numbers", NUMBERS_FIELDS, AppendModel(partition_keys),
                      partition_keys=partition_keys, options=options)
    h.write(pa.Table.from_pylist([{"n": i % 3, "s": f"a{i}"} for i in range(12)], schema=NUMBERS))
    h.write(pa.Table.from_pylist([{"n": i % 3, "s": f"a{i}"} for i in range(4)] + [{"n": -5, "s": None}],
                                 schema=NUMBERS))
    if partition_keys:
        h.write(pa.Table.from_pylist([{"n": 1, "s": "over"}], schema=NUMBERS), overwrite_partition={"n": 1})
    h.write(pa.Table.from_pylist([{"n": 2, "s": "late"}, {"n": 1, "s": None}], schema=NUMBERS))
    table = h.run()
    if layout == "two-buckets":
        buckets = {p.name for p in Path(table.path).glob("bucket-*")}
        assert buckets == {"bucket-0", "bucket-1"}
    h.verify(table)


# ---- every primitive type ----------------------------------------------------------------
@pytest.mark.parametrize("primary_key", [True, False], ids=["pk-table", "append-table"])
def test_all_types(tmp_path: Path, primary_key: bool) -> None:
    """Every primitive type pypaimon 2.1.0 writes, nulls included, through two commits."""
    fields = all_types_columns()
    if primary_key:
        h = OracleHistory(tmp_path, "typed", fields + [("_rk", "STRING")], KeyedModel(["id"]), primary_keys=["id"],
                          options={"bucket": "2", "rowkind.field": "_rk"})

        def batch(ids: Sequence[int], variant: int, kinds: Sequence[str]) -> pa.Table:
            return all_types_batch(ids, variant).append_column("_rk", pa.array(list(kinds), pa.string()))

        h.write(batch(range(20), 0, ["+I"] * 20))
        h.write(batch(range(0, 20, 2), 1, ["+U"] * 10))
        h.write(batch([1, 3, 5, 77, 21], 2, ["-D", "-U", "-D", "-D", "+I"]))
    else:
        h = OracleHistory(tmp_path, "typed", fields, AppendModel())
        h.write(all_types_batch(range(20)))
        h.write(all_types_batch(range(10, 25), variant=1))
    ns_2000 = 946_684_800 * 10**9
    h.verify(h.run(), filters=[
        ("id < 5", lambda r: r["id"] < 5),
        ("c_int <> 0", lambda r: r["c_int"] is not None and r["c_int"] != 0),
        ("c_date < DATE '1970-01-01'", lambda r: r["c_date"] is not None and r["c_date"] < dt.date(1970, 1, 1)),
        ("c_timestamp_9 > TIMESTAMP '2000-01-01 00:00:00'",
         lambda r: r["c_timestamp_9"] is not None and r["c_timestamp_9"] > ns_2000),
        ("c_string IS NULL", lambda r: r["c_string"] is None),
        ("c_decimal_38_10 < 0", lambda r: r["c_decimal_38_10"] is not None and r["c_decimal_38_10"] < 0),
    ])


# ---- schema evolution ------------------------------------------------------------------
@pytest.mark.parametrize("primary_key", [True, False], ids=["pk-table", "append-table"])
def test_added_column_and_old_snapshots_in_their_schema(tmp_path: Path, primary_key: bool) -> None:
    fields = [("id", "INT"), ("name", "STRING"), ("_rk", "STRING")]
    before = pa.schema([("id", pa.int32()), ("name", pa.string()), ("_rk", pa.string())])
    after = pa.schema([*before, ("score", pa.decimal128(12, 3))])
    if primary_key:
        h = OracleHistory(tmp_path, "evolving", fields, KeyedModel(["id"]), primary_keys=["id"],
                          options={"bucket": "2", "rowkind.field": "_rk"})
    else:
        h = OracleHistory(tmp_path, "evolving", fields, AppendModel())
    h.write(pa.Table.from_pylist([{"id": i, "name": f"a{i}", "_rk": "+I"} for i in range(8)], schema=before))
    h.tag("v1")
    h.write(pa.Table.from_pylist([{"id": 2, "name": "b2", "_rk": "+U"}, {"id": 9, "name": "b9", "_rk": "+I"}],
                                 schema=before))
    h.add_column("score", "DECIMAL(12, 3)")
    h.write(pa.Table.from_pylist([{"id": 3, "name": "c3", "_rk": "+U", "score": "1.5"},
                                  {"id": 20, "name": "c20", "_rk": "+I", "score": None},
                                  {"id": 21, "name": None, "_rk": "+I", "score": "-99.125"}],
                                 schema=pa.schema([*before, ("score", pa.string())])).cast(after))
    h.tag("v3")
    table = h.run()
    assert [f.name for f in table.schema.fields] == ["id", "name", "_rk", "score"]
    assert table.scan(snapshot_id=2).column_names == ["id", "name", "_rk"]
    h.verify(table)


# ---- two writers on one table ------------------------------------------------------------
_WRITE_EXISTING = """
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory
from pypaimon.schema.data_types import PyarrowFieldParser

warehouse, identifier, batch_path = sys.argv[1:4]
table = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier)
target = PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)
with pa.OSFile(batch_path, "rb") as source:
    data = pa.ipc.open_file(source).read_all()
data = data.select(target.names).cast(target)
builder = table.new_batch_write_builder()
write, commit = builder.new_write(), builder.new_commit()
try:
    write.write_arrow(data)
    commit.commit(write.prepare_commit())
finally:
    write.close()
    commit.close()
print(json.dumps({"latest_snapshot": table.snapshot_manager().get_latest_snapshot().id}))
"""


def pypaimon_append(warehouse: Path, identifier: str, data: pa.Table, tmp_path: Path) -> int:
    """Commit ``data`` to an existing table with pypaimon (``official_write`` always creates one).

    Returns the latest snapshot id afterwards.
    """
    path = tmp_path / f"append-{len(list(tmp_path.glob('append-*')))}.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
        writer.write_table(data)
    cmd = [oracle_python(), "-c", _WRITE_EXISTING, str(warehouse), identifier, str(path)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False, cwd=ORACLE_DIR)
    assert result.returncode == 0, f"pypaimon append failed:\n{result.stderr}\n{result.stdout}"
    latest: int = json.loads(result.stdout.strip().splitlines()[-1])["latest_snapshot"]
    return latest


MIXED_FIELDS = [("dt", "STRING"), ("id", "BIGINT"), ("v", "STRING"), ("writer", "STRING"), ("_rk", "STRING")]
MIXED = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("writer", pa.string()),
                   ("_rk", pa.string())])
# write-only: these tests count one snapshot per write; compaction after commit (a second,
# COMPACT snapshot once a bucket has 5 sorted runs) is tested in test_universal_compaction.py.
MIXED_OPTIONS = {"bucket": "4", "rowkind.field": "_rk", "write-only": "true"}


def _mixed(writer: str, rows: Sequence[tuple[str, int, str]]) -> pa.Table:
    return pa.Table.from_pylist([{"dt": d, "id": i, "v": f"{writer}-{d}-{i}" if kind != "-D" else None,
                                  "writer": writer, "_rk": kind} for d, i, kind in rows], schema=MIXED)


def _both_readers_agree(table: Table, states: list[list[Row]], tmp_path: Path) -> None:
    key = ("dt", "id")
    columns = [name for name, _ in MIXED_FIELDS]
    assert table.latest_snapshot().id == len(states)
    for snapshot_id, expected in enumerate(states, start=1):
        rows, _ = official_read(table.path, tmp_path, snapshot=snapshot_id)
        assert_rows(rows, expected, columns=columns, key=key, label=f"pypaimon, snapshot {snapshot_id}")
        assert_rows(table.scan(snapshot_id=snapshot_id), expected, columns=columns, key=key,
                    label=f"lakectl, snapshot {snapshot_id}")
    latest, _ = official_read(table.path, tmp_path)
    assert_rows(latest, states[-1], columns=columns, key=key, label="pypaimon, latest")
    assert_rows(table.scan(), states[-1], columns=columns, key=key, label="lakectl, latest")


def _keys(partitions: Sequence[str], ids: Sequence[int], kind: str = "+I") -> list[tuple[str, int, str]]:
    return [(d, i, kind) for d in partitions for i in ids]


def test_lakectl_continues_a_pypaimon_table_and_pypaimon_continues_again(tmp_path: Path) -> None:
    model = KeyedModel(["dt", "id"], ["dt"])
    states: list[list[Row]] = []

    def record(data: pa.Table) -> None:
        rows = canonical_rows(data)
        model.apply(rows, [row["_rk"] for row in rows])
        states.append(model.snapshot())

    first = _mixed("pypaimon", _keys(["d1", "", "a/b c"], range(20)))
    second = _mixed("pypaimon", _keys(["d1"], range(15, 25), "+U"))
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.mixed",
           "schema": {"fields": [list(f) for f in MIXED_FIELDS], "primary_keys": ["dt", "id"],
                      "partition_keys": ["dt"], "options": MIXED_OPTIONS, "comment": None},
           "steps": [{"op": "write"}, {"op": "write"}]}
    official_write(job, [first, second], tmp_path)
    record(first)
    record(second)
    table = Table.open("db.mixed", warehouse=str(tmp_path / "wh"))

    # lakectl updates keys pypaimon wrote twice, once, and deletes some: its sequence
    # numbers must start above pypaimon's in each bucket, or the old rows would win.
    third = _mixed("lakectl", _keys(["d1"], range(10, 22), "+U") + _keys([""], [0, 1], "-D")
                   + _keys(["a/b c"], [5], "+U") + _keys(["d2"], [1], "+I"))
    assert table.write(third, row_kind_column="_rk").snapshot_id == 3
    record(third)

    fourth = _mixed("pypaimon", _keys(["d1"], range(18, 30), "+U") + _keys(["a/b c"], [5, 6], "-D")
                    + _keys([""], [1], "+I"))
    assert pypaimon_append(tmp_path / "wh", "db.mixed", fourth, tmp_path) == 4
    record(fourth)

    fifth = _mixed("lakectl", _keys(["d1"], range(25, 32), "+U") + _keys(["d2"], [1], "-D"))
    assert table.write(fifth, row_kind_column="_rk").snapshot_id == 5
    record(fifth)

    writers = {(row["dt"], row["id"]): row["writer"] for row in states[-1]}
    assert writers[("d1", 12)] == "lakectl" and writers[("d1", 20)] == "pypaimon"
    assert writers[("d1", 28)] == "lakectl" and ("a/b c", 5) not in writers
    _both_readers_agree(table, states, tmp_path)


def test_pypaimon_continues_a_lakectl_table(tmp_path: Path) -> None:
    table = lakectl_table(tmp_path, "mixed", MIXED_FIELDS, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options=MIXED_OPTIONS)
    model = KeyedModel(["dt", "id"], ["dt"])
    states: list[list[Row]] = []

    def record(data: pa.Table) -> None:
        rows = canonical_rows(data)
        model.apply(rows, [row["_rk"] for row in rows])
        states.append(model.snapshot())

    for data in (_mixed("lakectl", _keys(["d1", "x=y%"], range(30))),
                 _mixed("lakectl", _keys(["d1"], range(20, 35), "+U") + _keys(["x=y%"], [0], "-D"))):
        table.write(data, row_kind_column="_rk")
        record(data)

    third = _mixed("pypaimon", _keys(["d1"], range(25, 40), "+U") + _keys(["x=y%"], [0, 1], "+I")
                   + _keys(["x=y%"], [2], "-D"))
    assert pypaimon_append(tmp_path / "wh", "db.mixed", third, tmp_path) == 3
    record(third)

    fourth = _mixed("lakectl", _keys(["d1"], range(38, 42), "+U") + _keys(["x=y%"], [1], "-D"))
    assert table.write(fourth, row_kind_column="_rk").snapshot_id == 4
    record(fourth)

    writers = {(row["dt"], row["id"]): row["writer"] for row in states[-1]}
    assert writers[("d1", 30)] == "pypaimon" and writers[("d1", 40)] == "lakectl"
    assert writers[("x=y%", 0)] == "pypaimon" and ("x=y%", 1) not in writers
    _both_readers_agree(table, states, tmp_path)
