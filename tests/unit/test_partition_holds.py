"""A filter that pins partition columns skips manifest blocks by a byte search (issue 44).

``binary_row.value_bytes`` claims a run of bytes that every BinaryRow reading as a value
contains, ``pinned_values`` the values a filter pins a column to, and the manifest reader
skips an Avro block that lacks the runs. A wrong claim would silently drop files from a scan,
so each part is checked against an independent expectation: the decoder, hand-written
answers, and the rows a full scan gives filtered in Python.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import binary_row
from core.engines import EngineSettings
from core.ops.create import create
from core.ops.scan import scan
from core.ops.write import write
from core.predicate import pinned_values
from core.table import Table
from core.types import DataField, parse_type
from core.where import parse_where

_VALUES = {
    "SMALLINT": st.integers(-2**15, 2**15 - 1),
    "INT": st.integers(-2**31, 2**31 - 1),
    "BIGINT": st.integers(-2**63, 2**63 - 1),
    "DATE": st.dates(),
    "STRING": st.text(max_size=20),
    "CHAR(5)": st.text(max_size=5),
    "VARBINARY(30)": st.binary(max_size=30),
}
_OTHERS = ["INT", "STRING", "BIGINT", "DOUBLE", "BOOLEAN"]


def _other_value(t: str, rnd: random.Random) -> Any:
    if rnd.random() < 0.2:
        return None
    return {"INT": rnd.randint(-9, 9), "STRING": "x" * rnd.randint(0, 12), "BIGINT": rnd.randint(-2**40, 2**40),
            "DOUBLE": rnd.random(), "BOOLEAN": rnd.random() < 0.5}[t]


@settings(max_examples=300, deadline=None)
@given(type_name=st.sampled_from(sorted(_VALUES)), data=st.data(), seed=st.integers(0, 2**32))
def test_every_row_that_reads_as_a_value_holds_its_bytes(type_name: str, data: st.DataObject, seed: int) -> None:
    """Rows written by lakectl, and the same rows with any byte the decoder does not read
    changed (as another writer may leave padding or the unused half of a slot): whenever
    the field still decodes to the value, the row holds ``value_bytes``."""
    rnd = random.Random(seed)
    value = data.draw(_VALUES[type_name])
    t = parse_type(type_name)
    others = [parse_type(rnd.choice(_OTHERS)) for _ in range(rnd.randint(0, 3))]
    at = rnd.randint(0, len(others))
    types = others[:at] + [t] + others[at:]
    values = [_other_value(o.name if o.name != "VARCHAR" else "STRING", rnd) for o in others]
    values = values[:at] + [value] + values[at:]
    run = binary_row.value_bytes(value, t)
    if run is None:  # nothing claimed: only short text and binary go without a run
        assert t.name in ("CHAR", "VARCHAR", "VARBINARY") and len(binary_row._as_bytes(value, t)) < 2
        return
    row = bytearray(binary_row.encode(values, types))
    assert run in row
    for pos in range(4, len(row)):  # the arity stays: it is not part of any field
        changed = bytearray(row)
        changed[pos] = (changed[pos] + 1 + rnd.randrange(255)) % 256
        try:
            still = binary_row.decode(bytes(changed), types)[at] == value
        except Exception:  # noqa: BLE001 - a row that no longer decodes holds no value
            still = False
        if still:
            assert run in changed, (pos, row.hex(), changed.hex())


def test_types_without_a_telling_run_claim_none() -> None:
    assert binary_row.value_bytes(3, parse_type("TINYINT")) is None
    assert binary_row.value_bytes(True, parse_type("BOOLEAN")) is None
    assert binary_row.value_bytes(1.5, parse_type("DOUBLE")) is None
    assert binary_row.value_bytes("a", parse_type("STRING")) is None
    assert binary_row.value_bytes(2**40, parse_type("INT")) is None  # no INT holds it
    assert binary_row.value_bytes(7, parse_type("INT")) == b"\x07\x00\x00\x00"
    assert binary_row.value_bytes(dt.date(1970, 1, 3), parse_type("DATE")) == b"\x02\x00\x00\x00"
    assert binary_row.value_bytes("héllo", parse_type("STRING")) == "héllo".encode()


_FIELDS = [DataField(0, "p", parse_type("INT")), DataField(1, "s", parse_type("STRING")),
           DataField(2, "v", parse_type("BIGINT"))]


@pytest.mark.parametrize("where, column, expected", [
    ("p = 3", "p", {3}),
    ("p IN (1, 2, 3)", "p", {1, 2, 3}),
    ("p = 3 AND v > 2", "p", {3}),
    ("p IN (1, 2) AND p IN (2, 3)", "p", {2}),
    ("p = 1 OR p = 4", "p", {1, 4}),
    ("p = 1 OR v = 4", "p", None),
    ("(p = 1 AND s = 'a') OR (p = 2 AND s = 'b')", "s", {"a", "b"}),
    ("p IN (1, NULL)", "p", {1}),
    ("NOT p = 1", "p", None),
    ("p <> 1", "p", None),
    ("p > 1", "p", None),
    ("v = 9", "p", None),
    ("p = 1 AND p = 2", "p", set()),
])
def test_the_values_a_filter_pins_a_column_to(where: str, column: str, expected: set | None) -> None:
    got = pinned_values(parse_where(where, _FIELDS), column)
    assert (None if got is None else set(got)) == expected


@pytest.fixture(scope="module")
def wide_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, list[dict]]:
    """400 partitions (INT, STRING, DATE) written in three commits, so that each commit's
    manifest spans every partition in several Avro blocks."""
    t = Table.locate("db.t", warehouse=str(tmp_path_factory.mktemp("wh")))
    create(t, "p INT, s STRING, d DATE, id BIGINT, v STRING", partition_keys=["p", "s", "d"],
           options={"bucket": "1", "bucket-key": "id"})
    rows = []
    for c in range(3):
        part = [{"p": i % 50, "s": f"name-{i % 8}", "d": dt.date(2024, 1, 1) + dt.timedelta(days=i % 400),
                 "id": c * 1000 + i, "v": f"c{c}"} for i in range(400)]
        write(t, pa.Table.from_pylist(part, schema=pa.schema([("p", pa.int32()), ("s", pa.string()),
                                                             ("d", pa.date32()), ("id", pa.int64()),
                                                             ("v", pa.string())])),
              engine_settings=EngineSettings(engine="local"))
        rows += part
    return t, rows


_CONDITIONS = [
    ("p = {p}", lambda r, a: r["p"] == a["p"]),
    ("p IN ({p}, {q})", lambda r, a: r["p"] in (a["p"], a["q"])),
    ("s = 'name-{k}'", lambda r, a: r["s"] == f"name-{a['k']}"),
    ("d = DATE '{d}'", lambda r, a: r["d"] == a["d"]),
    ("p = {p} AND s = 'name-{k}'", lambda r, a: r["p"] == a["p"] and r["s"] == f"name-{a['k']}"),
    ("p = {p} OR s = 'name-{k}'", lambda r, a: r["p"] == a["p"] or r["s"] == f"name-{a['k']}"),
    ("(p = {p} OR p = {q}) AND id > 1500", lambda r, a: r["p"] in (a["p"], a["q"]) and r["id"] > 1500),
    ("p = {p} AND d > DATE '{d}'", lambda r, a: r["p"] == a["p"] and r["d"] > a["d"]),
]


@settings(max_examples=40, deadline=None)
@given(shape=st.sampled_from(range(len(_CONDITIONS))), p=st.integers(-2, 52), q=st.integers(0, 49),
       k=st.integers(0, 9), day=st.integers(-3, 402))
def test_a_partition_filter_scans_exactly_the_rows_python_keeps(wide_table: tuple[Table, list[dict]], shape: int,
                                                                p: int, q: int, k: int, day: int) -> None:
    t, rows = wide_table
    args = {"p": p, "q": q, "k": k, "d": dt.date(2024, 1, 1) + dt.timedelta(days=day)}
    text, keep = _CONDITIONS[shape]
    got = scan(t, where=text.format(**args), engine_settings=EngineSettings(engine="local")).to_pylist()
    assert sorted(r["id"] for r in got) == sorted(r["id"] for r in rows if keep(r, args)), text.format(**args)


def test_a_one_partition_filter_decodes_only_the_blocks_holding_it(
        wide_table: tuple[Table, list[dict]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every record the reader decodes has its partition tested; with the byte search, only
    those of the few blocks holding the partition are."""
    import core.ops.scan as scan_module

    t, rows = wide_table
    tested = []
    real = scan_module._partition_filter

    def counting(*args: Any) -> Any:
        keep = real(*args)
        return lambda partition: tested.append(1) or keep(partition)

    monkeypatch.setattr(scan_module, "_partition_filter", counting)
    day = dt.date(2024, 1, 8)
    got = scan(t, where="p = 7 AND s = 'name-7' AND d = DATE '2024-01-08'", engine_settings=EngineSettings(engine="local"))
    assert sorted(got.column("id").to_pylist()) == sorted(
        r["id"] for r in rows if (r["p"], r["s"], r["d"]) == (7, "name-7", day))
    entries = len(rows)  # one file per partition and commit
    print(f"tested {len(tested)} of {entries} manifest entries")
    assert 0 < len(tested) < entries / 4, (len(tested), entries)
