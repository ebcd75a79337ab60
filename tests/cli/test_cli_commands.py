"""The lakectl commands end to end through ``CliRunner`` on real tables under ``tmp_path``.

Every expected value is computed here from the rows the test wrote (minus what it deleted
or overwrote), never read back from lakectl's own helpers. Output is parsed from
``--format json`` / ``jsonl`` / ``csv``; the rich ``table`` format only gets a smoke test.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()

Row = dict[str, Any]


# ---- harness -------------------------------------------------------------------------------
@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def invoke(*args: Any, input: bytes | str | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)


def ok(*args: Any, input: bytes | str | None = None) -> Result:
    result = invoke(*args, input=input)
    assert result.exit_code == 0, (f"lakectl {' '.join(map(str, args))} exited {result.exit_code}\n"
                                   f"stdout: {result.stdout}\nstderr: {result.stderr}")
    return result


def as_json(wh: str, *args: Any, input: bytes | str | None = None) -> Any:
    return json.loads(ok("--warehouse", wh, "--format", "json", *args, input=input).stdout)


def as_jsonl(wh: str, *args: Any) -> list[Row]:
    out = ok("--warehouse", wh, "--format", "jsonl", *args).stdout
    return [json.loads(line) for line in out.splitlines()]


def as_csv(wh: str, *args: Any) -> tuple[list[str], list[dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(ok("--warehouse", wh, "--format", "csv", *args).stdout))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def by(key: str | tuple[str, ...]) -> Callable[[Row], Any]:
    keys = (key,) if isinstance(key, str) else key
    return lambda r: tuple((r[k] is None, r[k]) for k in keys)


def sort_rows(rows: list[Row], key: str | tuple[str, ...] = "id") -> list[Row]:
    return sorted(rows, key=by(key))


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow(["" if v is None else v for v in r])
    return path


def write_jsonl(path: Path, rows: list[Row]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def money(value: str | float | None) -> str | None:
    """How lakectl prints a DECIMAL(10, 2) cell in JSON: an exact string with two places."""
    return None if value is None else str(Decimal(str(value)).quantize(Decimal("0.01")))


ORDERS_SCHEMA = "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING"
ORDERS = [
    {"id": 1, "customer": "alice", "amount": "10.50", "dt": "2024-01-01"},
    {"id": 2, "customer": "bob", "amount": "20.25", "dt": "2024-01-01"},
    {"id": 3, "customer": "carol", "amount": "5.00", "dt": "2024-01-02"},
    {"id": 4, "customer": "dave", "amount": "7.75", "dt": "2024-01-02"},
]


def create_orders(wh: str, name: str = "shop.orders", *extra: str) -> None:
    ok("--warehouse", wh, "create", name, "--schema", ORDERS_SCHEMA, "--primary-key", "id,dt",
       "--partition-by", "dt", "--option", "bucket=2", *extra)


def orders_csv(path: Path, rows: list[Row]) -> Path:
    return write_csv(path, ["id", "customer", "amount", "dt"],
                     [[r["id"], r["customer"], r["amount"], r["dt"]] for r in rows])


def expected_orders(rows: list[Row]) -> list[Row]:
    return sort_rows([{**r, "amount": money(r["amount"])} for r in rows])


def snapshot_ids(wh: str, table: str) -> list[int]:
    return [s["snapshot_id"] for s in as_json(wh, "snapshots", table)]


# ---- create ---------------------------------------------------------------------------------
def test_create_with_keys_partitions_options_and_comment(wh: str) -> None:
    created = as_json(wh, "create", "shop.orders", "--schema", ORDERS_SCHEMA, "--primary-key", "id,dt",
                      "--partition-by", "dt", "--option", "bucket=3", "-o", "target-file-size=64mb",
                      "--comment", "all the orders")
    assert created["table"] == "shop.orders"
    assert created["created"] is True
    assert created["schema_id"] == 0
    assert created["primary_keys"] == ["id", "dt"]
    assert created["partition_keys"] == ["dt"]
    assert created["buckets"] == 3
    assert Path(created["path"]) == Path(wh) / "shop.db" / "orders"
    assert (Path(created["path"]) / "schema" / "schema-0").is_file()

    d = as_json(wh, "describe", "shop.orders")
    assert [(c["id"], c["name"], c["type"], c["nullable"], c["primary_key"], c["partition_key"])
            for c in d["columns"]] == [
        (0, "id", "BIGINT", False, True, False),
        (1, "customer", "STRING", True, False, False),
        (2, "amount", "DECIMAL(10, 2)", True, False, False),
        (3, "dt", "STRING", False, True, True),
    ]
    assert d["primary_keys"] == ["id", "dt"]
    assert d["partition_keys"] == ["dt"]
    assert d["buckets"] == 3
    assert d["bucket_keys"] == ["id"]  # the primary key minus the partition keys
    assert d["options"] == {"bucket": "3", "target-file-size": "64mb"}
    assert d["comment"] == "all the orders"
    assert d["latest_snapshot_id"] is None
    assert (d["file_count"], d["total_file_size"], d["total_record_count"]) == (0, 0, 0)


def test_create_if_not_exists_twice_keeps_the_first_schema(wh: str) -> None:
    first = as_json(wh, "create", "db.t", "--schema", "id INT, v STRING", "--primary-key", "id", "--if-not-exists")
    assert first["created"] is True
    before = as_json(wh, "describe", "db.t")
    # A different definition the second time: the existing table wins, nothing is written.
    second = as_json(wh, "create", "db.t", "--schema", "x BIGINT", "--if-not-exists")
    assert second["created"] is False
    assert second["schema_id"] == 0
    assert second["primary_keys"] == ["id"]
    assert as_json(wh, "describe", "db.t") == before
    assert sorted(p.name for p in (Path(wh) / "db.db" / "t" / "schema").iterdir()) == ["schema-0"]


def test_create_append_table_defaults(wh: str) -> None:
    created = as_json(wh, "create", "logs.events", "--schema", "ts TIMESTAMP(3), msg STRING")
    assert created["primary_keys"] == [] and created["partition_keys"] == []
    assert created["buckets"] == -1  # Paimon's unaware-bucket append table
    d = as_json(wh, "describe", "logs.events")
    assert [(c["name"], c["type"], c["nullable"]) for c in d["columns"]] == [
        ("ts", "TIMESTAMP(3)", True), ("msg", "STRING", True)]
    assert d["comment"] is None


# ---- write: every input format ----------------------------------------------------------------
TYPED_SCHEMA = "id INT, name STRING, amount DECIMAL(10, 2), day DATE, flag BOOLEAN"
TYPED = [
    {"id": 1, "name": "one", "amount": "1.50", "day": "2024-01-02", "flag": True},
    {"id": 2, "name": None, "amount": None, "day": "2024-02-03", "flag": False},
    {"id": 3, "name": "007", "amount": "3.10", "day": "2024-03-04", "flag": None},
]


def typed_input(kind: str, directory: Path) -> tuple[list[str], bytes | None]:
    """The TYPED rows as a ``kind`` input: (write arguments, stdin bytes)."""
    header = list(TYPED[0])
    if kind in ("csv", "stdin-csv"):
        path = write_csv(directory / "in.csv", header, [[r[c] for c in header] for r in TYPED])
    elif kind == "json":
        path = directory / "in.json"
        path.write_text(json.dumps(TYPED))
    elif kind in ("jsonl", "stdin-jsonl"):
        path = write_jsonl(directory / "in.jsonl", TYPED)
    else:
        path = directory / "in.parquet"
        pq.write_table(pa.table({
            "id": pa.array([r["id"] for r in TYPED], pa.int32()),
            "name": pa.array([r["name"] for r in TYPED], pa.string()),
            "amount": pa.array([None if r["amount"] is None else Decimal(r["amount"]) for r in TYPED],
                               pa.decimal128(10, 2)),
            "day": pa.array([dt.date.fromisoformat(r["day"]) for r in TYPED], pa.date32()),
            "flag": pa.array([r["flag"] for r in TYPED], pa.bool_()),
        }), path)
    if kind.startswith("stdin-"):
        return ["--input", "-", "--input-format", kind.split("-", 1)[1]], path.read_bytes()
    return ["--input", str(path)], None


@pytest.mark.parametrize("kind", ["csv", "json", "jsonl", "parquet", "stdin-csv", "stdin-jsonl"])
def test_write_each_input_format(wh: str, tmp_path: Path, kind: str) -> None:
    ok("--warehouse", wh, "create", "db.typed", "--schema", TYPED_SCHEMA)
    args, stdin = typed_input(kind, tmp_path)
    result = as_json(wh, "write", "db.typed", *args, input=stdin)
    assert result["table"] == "db.typed"
    assert result["snapshot_id"] == 1
    assert result["commit_kind"] == "APPEND"
    assert result["records_written"] == len(TYPED)
    assert result["files_added"] >= 1 and result["bytes_added"] > 0
    assert result["files_deleted"] == 0
    # "007" meant for a STRING column stays "007"; the DECIMAL keeps its two places.
    assert sort_rows(as_json(wh, "scan", "db.typed")) == TYPED


def test_write_csv_to_partitioned_primary_key_table(wh: str, tmp_path: Path) -> None:
    create_orders(wh)
    result = as_json(wh, "write", "shop.orders", "--input", orders_csv(tmp_path / "orders.csv", ORDERS))
    assert result["records_written"] == 4
    assert result["partitions_written"] == 2
    assert sort_rows(as_json(wh, "scan", "shop.orders")) == expected_orders(ORDERS)
    # Partition directories and buckets on disk, as Paimon lays them out.
    table = Path(wh) / "shop.db" / "orders"
    assert sorted(p.name for p in table.glob("dt=*")) == ["dt=2024-01-01", "dt=2024-01-02"]
    assert all(b.name in ("bucket-0", "bucket-1") for b in table.glob("dt=*/bucket-*"))


def test_primary_key_table_keeps_the_last_write_of_a_key(wh: str, tmp_path: Path) -> None:
    create_orders(wh)
    ok("-w", wh, "write", "shop.orders", "-i", orders_csv(tmp_path / "a.csv", ORDERS))
    update = [{"id": 2, "customer": "bobby", "amount": "1.00", "dt": "2024-01-01"},
              {"id": 9, "customer": "ivan", "amount": "9.99", "dt": "2024-01-03"}]
    ok("-w", wh, "write", "shop.orders", "-i", orders_csv(tmp_path / "b.csv", update))
    expected = {(r["id"], r["dt"]): r for r in ORDERS}
    expected.update({(r["id"], r["dt"]): r for r in update})
    assert sort_rows(as_json(wh, "scan", "shop.orders")) == expected_orders(list(expected.values()))


def test_mode_overwrite_replaces_only_the_partitions_it_touches(wh: str, tmp_path: Path) -> None:
    create_orders(wh)
    ok("-w", wh, "write", "shop.orders", "-i", orders_csv(tmp_path / "a.csv", ORDERS))
    replacement = [{"id": 7, "customer": "gina", "amount": "70.00", "dt": "2024-01-02"}]
    result = as_json(wh, "write", "shop.orders", "-i", orders_csv(tmp_path / "b.csv", replacement),
                     "--mode", "overwrite")
    assert result["commit_kind"] == "OVERWRITE"
    assert result["snapshot_id"] == 2
    assert result["files_deleted"] >= 1
    kept = [r for r in ORDERS if r["dt"] != "2024-01-02"]
    assert sort_rows(as_json(wh, "scan", "shop.orders")) == expected_orders(kept + replacement)
    assert as_json(wh, "snapshots", "shop.orders")[0]["commit_kind"] == "OVERWRITE"
    # The snapshot before the overwrite still reads the old rows.
    assert sort_rows(as_json(wh, "scan", "shop.orders", "--snapshot-id", 1)) == expected_orders(ORDERS)


def test_mode_overwrite_of_an_unpartitioned_table_replaces_everything(wh: str, tmp_path: Path) -> None:
    ok("-w", wh, "create", "db.kv", "--schema", "k INT, v STRING")
    ok("-w", wh, "write", "db.kv", "-i", write_csv(tmp_path / "a.csv", ["k", "v"], [[1, "a"], [2, "b"]]))
    ok("-w", wh, "write", "db.kv", "-i", write_csv(tmp_path / "b.csv", ["k", "v"], [[3, "c"]]), "--mode", "overwrite")
    assert as_json(wh, "scan", "db.kv") == [{"k": 3, "v": "c"}]


def test_row_kind_column_applies_cdc_changes(wh: str, tmp_path: Path) -> None:
    create_orders(wh)
    ok("-w", wh, "write", "shop.orders", "-i", orders_csv(tmp_path / "orders.csv", ORDERS))
    changes = [
        ["+U", 2, "bob", "22.00", "2024-01-01"],
        ["-D", 3, "", "", "2024-01-02"],
        ["+I", 5, "erin", "3.10", "2024-01-03"],
        ["-U", 4, "dave", "7.75", "2024-01-02"],
        ["+U", 4, "dave", "8.00", "2024-01-02"],
        ["+I", 6, "fay", "1.00", "2024-01-03"],
        ["-D", 6, "", "", "2024-01-03"],  # inserted and deleted in the same batch
    ]
    path = write_csv(tmp_path / "changes.csv", ["op", "id", "customer", "amount", "dt"], changes)
    result = as_json(wh, "write", "shop.orders", "-i", path, "--row-kind-column", "op")
    assert result["records_written"] == len(changes)

    state = {(r["id"], r["dt"]): dict(r) for r in ORDERS}
    for op, id_, customer, amount, day in changes:
        if op in ("+I", "+U"):
            state[(id_, day)] = {"id": id_, "customer": customer, "amount": amount, "dt": day}
        else:
            state.pop((id_, day), None)
    assert sort_rows(as_json(wh, "scan", "shop.orders")) == expected_orders(list(state.values()))
    assert sort_rows(as_json(wh, "scan", "shop.orders", "--snapshot-id", 1)) == expected_orders(ORDERS)


def test_auto_create_without_primary_key_makes_an_append_table(wh: str, tmp_path: Path) -> None:
    rows = [{"id": 1, "name": "a", "score": 1.5}, {"id": 2, "name": "b", "score": None},
            {"id": 3, "name": "c", "score": 0.25}]  # two scales: a DECIMAL would print 1.50
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    first = as_json(wh, "write", "db.auto", "-i", path, "--auto-create")
    assert first["snapshot_id"] == 1 and first["records_written"] == 3
    d = as_json(wh, "describe", "db.auto")
    assert [(c["name"], c["type"]) for c in d["columns"]] == [("id", "BIGINT"), ("name", "STRING"),
                                                                ("score", "DOUBLE")]
    assert d["primary_keys"] == [] and d["partition_keys"] == []
    # The table exists now: --auto-create is a no-op and an append table keeps both copies.
    ok("-w", wh, "write", "db.auto", "-i", path, "--auto-create")
    assert sort_rows(as_json(wh, "scan", "db.auto"), ("id",)) == sort_rows(rows + rows, ("id",))


def test_auto_create_with_primary_key_and_partition(wh: str, tmp_path: Path) -> None:
    rows = [["+I", 1, "a", "x"], ["+I", 2, "b", "y"]]
    header = ["op", "id", "name", "part"]
    created = as_json(wh, "write", "db.auto", "-i", write_csv(tmp_path / "a.csv", header, rows), "--auto-create",
                      "--primary-key", "id,part", "--partition-by", "part", "--option", "bucket=2",
                      "--row-kind-column", "op")
    assert created["snapshot_id"] == 1
    d = as_json(wh, "describe", "db.auto")
    assert [c["name"] for c in d["columns"]] == ["id", "name", "part"]  # the row-kind column is not stored
    assert d["primary_keys"] == ["id", "part"] and d["partition_keys"] == ["part"] and d["buckets"] == 2
    changes = [["+U", 1, "a2", "x"], ["-D", 2, "", "y"]]
    ok("-w", wh, "write", "db.auto", "-i", write_csv(tmp_path / "b.csv", header, changes),
       "--row-kind-column", "op")
    assert as_json(wh, "scan", "db.auto") == [{"id": 1, "name": "a2", "part": "x"}]


# ---- scan ---------------------------------------------------------------------------------------
def commit_time(wh: str, table: str, snapshot_id: int) -> int:
    return next(s["commit_time_millis"] for s in as_json(wh, "snapshots", table) if s["snapshot_id"] == snapshot_id)


def test_scan_time_travel_by_snapshot_id_and_timestamp(wh: str, tmp_path: Path) -> None:
    ok("-w", wh, "create", "db.kv", "--schema", "k INT, v STRING", "--primary-key", "k")
    ok("-w", wh, "write", "db.kv", "-i", write_csv(tmp_path / "a.csv", ["k", "v"], [[1, "a"], [2, "b"]]))
    time.sleep(0.05)  # leave room for a time strictly between the two commits
    ok("-w", wh, "write", "db.kv", "-i", write_csv(tmp_path / "b.csv", ["k", "v"], [[2, "B"], [3, "c"]]))
    v1 = [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}]
    v2 = [{"k": 1, "v": "a"}, {"k": 2, "v": "B"}, {"k": 3, "v": "c"}]

    assert sort_rows(as_json(wh, "scan", "db.kv", "--snapshot-id", 1), "k") == v1
    assert sort_rows(as_json(wh, "scan", "db.kv", "--snapshot-id", 2), "k") == v2
    assert sort_rows(as_json(wh, "scan", "db.kv"), "k") == v2

    t1, t2 = commit_time(wh, "db.kv", 1), commit_time(wh, "db.kv", 2)
    assert t2 - t1 >= 2
    middle = (t1 + t2) // 2
    utc_iso = dt.datetime.fromtimestamp(middle / 1000, tz=dt.timezone.utc).isoformat()
    local_naive = dt.datetime.fromtimestamp(middle / 1000).isoformat()  # naive = local time
    for moment in (utc_iso, utc_iso.replace("+00:00", "Z"), local_naive, str(middle)):
        assert sort_rows(as_json(wh, "scan", "db.kv", "--timestamp", moment), "k") == v1, moment
    exactly_t1 = dt.datetime.fromtimestamp(t1 / 1000, tz=dt.timezone.utc).isoformat()
    assert sort_rows(as_json(wh, "scan", "db.kv", "--timestamp", exactly_t1), "k") == v1
    later = dt.datetime.fromtimestamp(t2 / 1000 + 3600, tz=dt.timezone.utc).isoformat()
    assert sort_rows(as_json(wh, "scan", "db.kv", "--timestamp", later), "k") == v2


PEOPLE = [
    {"id": 1, "name": "alice", "score": 1.0, "dt": "a"},
    {"id": 2, "name": "bob", "score": 2.5, "dt": "a"},
    {"id": 3, "name": None, "score": 3.0, "dt": "b"},
    {"id": 4, "name": "anna", "score": None, "dt": "b"},
    {"id": 5, "name": "carl", "score": 0.5, "dt": "c"},
]


@pytest.fixture
def people(wh: str, tmp_path: Path) -> str:
    ok("-w", wh, "create", "db.people", "--schema", "id INT, name STRING, score DOUBLE, dt STRING",
       "--partition-by", "dt")
    ok("-w", wh, "write", "db.people", "-i", write_jsonl(tmp_path / "people.jsonl", PEOPLE))
    return "db.people"


WHERES: list[tuple[str, Callable[[Row], bool]]] = [
    ("id > 2 AND dt = 'b'", lambda r: r["id"] > 2 and r["dt"] == "b"),
    ("id = 1 OR name IS NULL", lambda r: r["id"] == 1 or r["name"] is None),
    ("id IN (1, 3, 5, 42)", lambda r: r["id"] in (1, 3, 5, 42)),
    ("id NOT IN (1, 2)", lambda r: r["id"] not in (1, 2)),
    ("score BETWEEN 1 AND 2.5", lambda r: r["score"] is not None and 1 <= r["score"] <= 2.5),
    ("name LIKE 'a%'", lambda r: r["name"] is not None and r["name"].startswith("a")),
    ("name LIKE '_ob'", lambda r: r["name"] is not None and len(r["name"]) == 3 and r["name"][1:] == "ob"),
    ("name IS NULL", lambda r: r["name"] is None),
    ("score IS NOT NULL AND (dt = 'a' OR dt = 'c')", lambda r: r["score"] is not None and r["dt"] in ("a", "c")),
    ("NOT (score > 1)", lambda r: r["score"] is not None and not r["score"] > 1),
    ("dt = 'zzz'", lambda r: False),
]


@pytest.mark.parametrize(("where", "model"), WHERES, ids=[w for w, _ in WHERES])
def test_scan_where(wh: str, people: str, where: str, model: Callable[[Row], bool]) -> None:
    expected = [r for r in PEOPLE if model(r)]
    assert sort_rows(as_json(wh, "scan", people, "--where", where)) == expected


def test_scan_select_keeps_the_requested_order(wh: str, people: str) -> None:
    rows = as_json(wh, "scan", people, "--select", "name, id", "--where", "id <= 2")
    assert [list(r) for r in rows] == [["name", "id"]] * 2
    assert sort_rows(rows) == [{"name": r["name"], "id": r["id"]} for r in PEOPLE if r["id"] <= 2]


def test_scan_limit(wh: str, people: str) -> None:
    some = as_json(wh, "scan", people, "--limit", 2)
    assert len(some) == 2
    assert all(r in PEOPLE for r in some)
    assert len({r["id"] for r in some}) == 2
    assert sort_rows(as_json(wh, "scan", people, "--limit", 0)) == PEOPLE  # 0: every row
    assert sort_rows(as_json(wh, "scan", people, "--limit", 100)) == PEOPLE
    filtered = as_json(wh, "scan", people, "--where", "dt = 'b'", "--limit", 1)
    assert len(filtered) == 1 and filtered[0] in [r for r in PEOPLE if r["dt"] == "b"]


@pytest.mark.parametrize("command", ["snapshots", "schemas", "files", "partitions"])
def test_listing_limit_0_lists_every_item_as_scan_does(wh: str, people: str, command: str) -> None:
    ok("-w", wh, "write", people, "--input", "-", "--input-format", "jsonl",
       input='{"id": 9, "name": "z", "score": 1.0, "dt": "c"}\n')
    ok("-w", wh, "alter-schema", people, "--add-column", "extra INT")
    every = as_json(wh, command, people)
    assert len(every) >= 2  # two snapshots, two schemas, files and partitions of a, b and c
    assert as_json(wh, command, people, "--limit", 0) == every
    assert as_json(wh, command, people, "--limit", 1) == every[:1]
    refused = invoke("-w", wh, command, people, "--limit", -1)
    assert refused.exit_code == 2 and "--limit must be 0 or more" in refused.stderr


def test_scan_of_a_table_without_snapshots_is_empty(wh: str) -> None:
    ok("-w", wh, "create", "db.empty", "--schema", "id INT, v STRING")
    assert as_json(wh, "scan", "db.empty") == []
    assert as_jsonl(wh, "scan", "db.empty") == []
    header, rows = as_csv(wh, "scan", "db.empty")
    assert (header, rows) == (["id", "v"], [])


@pytest.mark.parametrize("ext", ["parquet", "csv", "jsonl"])
def test_scan_output_file(wh: str, people: str, tmp_path: Path, ext: str) -> None:
    target = tmp_path / "out" / f"result.{ext}"
    target.parent.mkdir()
    summary = as_json(wh, "scan", people, "--where", "id >= 2", "--output", target)
    expected = [r for r in PEOPLE if r["id"] >= 2]
    assert summary["records_written"] == len(expected)
    assert summary["output"] == str(target)
    assert summary["bytes_written"] == target.stat().st_size > 0
    if ext == "parquet":
        data = pq.read_table(target)
        assert data.schema.names == ["id", "name", "score", "dt"]
        assert data.schema.field("id").type == pa.int32()
        assert data.schema.field("score").type == pa.float64()
        got = data.to_pylist()
    elif ext == "csv":
        got = pacsv.read_csv(target, convert_options=pacsv.ConvertOptions(column_types={
            "id": pa.int32(), "name": pa.string(), "score": pa.float64(), "dt": pa.string()},
            strings_can_be_null=True, quoted_strings_can_be_null=False)).to_pylist()
    else:
        got = [json.loads(line) for line in target.read_text().splitlines()]
    assert sort_rows(got) == expected
    assert not list(target.parent.glob("*.tmp-*"))  # the temp file was renamed away


# ---- snapshots, describe, list ------------------------------------------------------------------
def test_snapshots_newest_first_with_counts(wh: str, tmp_path: Path) -> None:
    ok("-w", wh, "create", "db.log", "--schema", "id INT, msg STRING")
    sizes = [3, 1, 2]
    next_id = 0
    before = int(time.time() * 1000)
    for i, n in enumerate(sizes):
        rows = [[next_id + j, f"m{next_id + j}"] for j in range(n)]
        next_id += n
        ok("-w", wh, "write", "db.log", "-i", write_csv(tmp_path / f"{i}.csv", ["id", "msg"], rows))
    after = int(time.time() * 1000)
    snaps = as_json(wh, "snapshots", "db.log")
    assert [s["snapshot_id"] for s in snaps] == [3, 2, 1]
    assert [s["delta_record_count"] for s in snaps] == sizes[::-1]
    assert [s["total_record_count"] for s in snaps] == [sum(sizes), sum(sizes[:2]), sizes[0]]
    assert {s["commit_kind"] for s in snaps} == {"APPEND"}
    assert {s["schema_id"] for s in snaps} == {0}
    times = [s["commit_time_millis"] for s in snaps]
    assert before <= times[-1] and times == sorted(times, reverse=True) and times[0] <= after
    assert all(isinstance(s["commit_user"], str) and s["commit_user"] for s in snaps)
    for s in snaps:
        if "commit_time" in s:  # the same instant as ISO 8601 text
            iso = dt.datetime.fromisoformat(s["commit_time"])
            assert abs(iso.timestamp() * 1000 - s["commit_time_millis"]) < 1
    assert as_json(wh, "snapshots", "db.log", "--limit", 2) == snaps[:2]
    assert as_jsonl(wh, "snapshots", "db.log") == snaps


def test_snapshots_of_a_new_table_is_an_empty_listing(wh: str, tmp_path: Path) -> None:
    ok("-w", wh, "create", "db.t", "--schema", "id INT")
    assert as_json(wh, "snapshots", "db.t") == []
    assert as_jsonl(wh, "snapshots", "db.t") == []
    header, rows = as_csv(wh, "snapshots", "db.t")
    assert rows == []
    # The csv header of an empty listing still names every field of a non-empty one.
    ok("-w", wh, "create", "db.u", "--schema", "id INT")
    ok("-w", wh, "write", "db.u", "-i", write_csv(tmp_path / "a.csv", ["id"], [[1]]))
    assert header == list(as_json(wh, "snapshots", "db.u")[0])
    assert {"snapshot_id", "schema_id", "commit_kind", "commit_time_millis", "delta_record_count",
            "total_record_count", "commit_user"} <= set(header)


def test_describe_after_writes(wh: str, tmp_path: Path) -> None:
    create_orders(wh)
    ok("-w", wh, "write", "shop.orders", "-i", orders_csv(tmp_path / "orders.csv", ORDERS))
    d = as_json(wh, "describe", "shop.orders")
    assert d["table"] == "shop.orders"
    assert d["schema_id"] == 0
    assert d["latest_snapshot_id"] == 1
    assert d["total_record_count"] == len(ORDERS)
    files = [p for p in (Path(wh) / "shop.db" / "orders").glob("dt=*/bucket-*/*") if p.is_file()]
    assert d["file_count"] == len(files) >= 2
    assert d["total_file_size"] == sum(p.stat().st_size for p in files)
    assert as_jsonl(wh, "describe", "shop.orders") == [d]


def test_list_databases_and_tables(wh: str) -> None:
    Path(wh).mkdir()
    assert as_json(wh, "list") == []  # an existing, empty warehouse has no databases
    for name in ("shop.orders", "shop.customers", "logs.events"):
        ok("-w", wh, "create", name, "--schema", "id INT")
    assert as_json(wh, "list") == [{"database": "logs", "table": None}, {"database": "shop", "table": None}]
    assert as_json(wh, "list", "shop") == [{"database": "shop", "table": "customers"},
                                           {"database": "shop", "table": "orders"}]
    assert as_jsonl(wh, "list", "logs") == [{"database": "logs", "table": "events"}]
    header, rows = as_csv(wh, "list")
    assert header == ["database", "table"]
    assert rows == [{"database": "logs", "table": ""}, {"database": "shop", "table": ""}]


# ---- formats --------------------------------------------------------------------------------------
def csv_cell(value: Any) -> str:
    """How a JSON value of a listing appears in the csv format."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


@pytest.mark.parametrize("args", [["snapshots", "shop.orders"], ["scan", "shop.orders"], ["list"],
                                  ["list", "shop"]], ids=["snapshots", "scan", "list", "list-db"])
def test_listings_have_the_same_fields_in_every_format(wh: str, tmp_path: Path, args: list[str]) -> None:
    create_orders(wh)
    ok("-w", wh, "write", "shop.orders", "-i", orders_csv(tmp_path / "a.csv", ORDERS[:2]))
    ok("-w", wh, "write", "shop.orders", "-i", orders_csv(tmp_path / "b.csv", ORDERS[2:]))

    json_out = ok("--warehouse", wh, "--format", "json", *args).stdout
    as_array = json.loads(json_out)
    assert isinstance(as_array, list) and as_array and all(isinstance(r, dict) for r in as_array)

    jsonl_out = ok("--warehouse", wh, "--format", "jsonl", *args).stdout
    lines = jsonl_out.splitlines()
    assert len(lines) == len(as_array)
    objects = [json.loads(line) for line in lines]
    assert all(isinstance(o, dict) for o in objects)
    assert objects == as_array

    header, csv_rows = as_csv(wh, *args)
    fields = list(as_array[0])
    assert all(list(r) == fields for r in as_array + objects)
    assert header == fields
    assert csv_rows == [{k: csv_cell(v) for k, v in r.items()} for r in as_array]


def test_single_results_are_one_object_in_json_and_jsonl(wh: str, tmp_path: Path) -> None:
    ok("-w", wh, "create", "db.a", "--schema", "id INT")
    created_jsonl = ok("-w", wh, "-f", "jsonl", "create", "db.b", "--schema", "id INT").stdout
    assert len(created_jsonl.splitlines()) == 1
    created_json = as_json(wh, "create", "db.b", "--schema", "id INT", "--if-not-exists")
    assert list(json.loads(created_jsonl)) == list(created_json)

    path = write_csv(tmp_path / "a.csv", ["id"], [[1]])
    w_json = as_json(wh, "write", "db.a", "-i", path)
    w_jsonl = ok("-w", wh, "-f", "jsonl", "write", "db.a", "-i", path).stdout
    assert len(w_jsonl.splitlines()) == 1
    assert list(json.loads(w_jsonl)) == list(w_json)
    header, rows = as_csv(wh, "write", "db.a", "-i", path)
    assert header == list(w_json) and len(rows) == 1 and rows[0]["snapshot_id"] == "3"


def test_global_options_are_accepted_after_the_subcommand(wh: str, tmp_path: Path) -> None:
    ok("create", "db.t", "--schema", "id INT, v STRING", "--warehouse", wh)
    ok("write", "db.t", "-i", write_csv(tmp_path / "a.csv", ["id", "v"], [[1, "x"]]), "-w", wh)
    before = json.loads(ok("--warehouse", wh, "--format", "json", "scan", "db.t").stdout)
    after = json.loads(ok("scan", "db.t", "--warehouse", wh, "--format", "json").stdout)
    mixed = json.loads(ok("--format", "jsonl", "scan", "db.t", "-w", wh, "-f", "json").stdout)
    assert before == after == mixed == [{"id": 1, "v": "x"}]


def test_table_format_is_the_default(wh: str, tmp_path: Path) -> None:
    ok("-w", wh, "create", "db.t", "--schema", "id INT, v STRING")
    ok("-w", wh, "write", "db.t", "-i", write_csv(tmp_path / "a.csv", ["id", "v"], [[1, "hello"]]))
    out = ok("-w", wh, "scan", "db.t").stdout
    assert "hello" in out and "id" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)
    # on a pipe no title line: the header first
    assert ok("-w", wh, "snapshots", "db.t").stdout.split()[:2] == ["snapshot_id", "schema_id"]


# ---- where the warehouse comes from: flag > env > config > ./warehouse ------------------------------
def test_warehouse_precedence_flag_env_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg_wh, env_wh, flag_wh = (tmp_path / n for n in ("cfg-wh", "env-wh", "flag-wh"))

    def where_created(*extra: str) -> Path:
        out = json.loads(ok("--format", "json", *extra, "create", "db.t", "--schema", "id INT",
                            "--if-not-exists").stdout)
        return Path(out["path"])

    # Nothing configured: ./warehouse in the working directory.
    assert where_created() == tmp_path / "warehouse" / "db.db" / "t"

    (tmp_path / "lakectl.toml").write_text(f'warehouse = "{cfg_wh.as_posix()}"\n')
    assert where_created() == cfg_wh / "db.db" / "t"

    monkeypatch.setenv("LAKECTL_WAREHOUSE", str(env_wh))
    assert where_created() == env_wh / "db.db" / "t"

    assert where_created("--warehouse", str(flag_wh)) == flag_wh / "db.db" / "t"
    out = json.loads(ok("create", "db.u", "--schema", "id INT", "--warehouse", str(flag_wh), "-f", "json").stdout)
    assert Path(out["path"]) == flag_wh / "db.db" / "u"

    # Every command resolves the same way.
    assert json.loads(ok("-f", "json", "list", "db").stdout) == [{"database": "db", "table": "t"}]  # env
    monkeypatch.delenv("LAKECTL_WAREHOUSE")
    assert json.loads(ok("-f", "json", "list", "db").stdout) == [{"database": "db", "table": "t"}]  # config
    assert json.loads(ok("-f", "json", "-w", str(flag_wh), "list", "db").stdout) == [
        {"database": "db", "table": "t"}, {"database": "db", "table": "u"}]
    assert (cfg_wh / "db.db" / "t" / "schema" / "schema-0").is_file()
    assert (env_wh / "db.db" / "t" / "schema" / "schema-0").is_file()


def test_config_file_in_a_subdirectory_is_read_from_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "lakectl.toml").write_text('warehouse = "wh-from-config"\nformat = "jsonl"\n')
    monkeypatch.chdir(project)
    out = ok("create", "db.t", "--schema", "id INT").stdout
    assert json.loads(out)["path"] == str(project / "wh-from-config" / "db.db" / "t")  # format from config too
    assert json.loads(ok("-f", "json", "list").stdout) == [{"database": "db", "table": None}]
    monkeypatch.chdir(tmp_path)  # no config here: the default ./warehouse, which does not exist
    missing = invoke("-f", "json", "list")
    assert missing.exit_code == 3 and "warehouse" in missing.stderr and "does not exist" in missing.stderr
