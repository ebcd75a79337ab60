"""pypaimon writes primary-key tables; lakectl's lookup returns, for each key, the rows
pypaimon itself reads for that key, while reading only some of the table's files.

The keys' rows are taken from pypaimon's full read of the table (the official reader's
merge), filtered in Python; lakectl's scan is not involved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from oracle import official_read, official_write

from core.table import Table

pytestmark = pytest.mark.interop

Row = dict[str, Any]
FIELDS = [["dt", "STRING"], ["id", "BIGINT"], ["name", "STRING"], ["qty", "INT"], ["_rk", "STRING"]]
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32()),
                    ("_rk", pa.string())])


def rows(dts: Sequence[str], ids: Sequence[int], tag: str, kind: str = "+I") -> list[Row]:
    return [{"dt": d, "id": i, "name": f"{tag}-{d}-{i}", "qty": i * 10, "_rk": kind} for d in dts for i in ids]


def pypaimon_table(tmp_path: Path, name: str, options: dict[str, str], batches: list[list[Row]]) -> Table:
    job = {"warehouse": str(tmp_path / "wh"), "table": f"db.{name}",
           "schema": {"fields": FIELDS, "primary_keys": ["dt", "id"], "partition_keys": ["dt"],
                      "options": {**options, "rowkind.field": "_rk"}, "comment": None},
           "steps": [{"op": "write", "overwrite": False, "overwrite_partition": None} for _ in batches]}
    official_write(job, [pa.Table.from_pylist(b, schema=SCHEMA) for b in batches], tmp_path)
    return Table.open(f"db.{name}", warehouse=str(tmp_path / "wh"))


def by_key(data: pa.Table) -> list[Row]:
    return sorted(data.to_pylist(), key=lambda r: (r["dt"], r["id"]))


def covering(table: Table, key: int, *, fixed_buckets: bool, partition: str | None = None) -> set[str]:
    """Live files whose _KEY_id range holds ``key`` (in ``partition`` if given); with fixed
    buckets only those in the bucket directory that holds the key's rows."""
    ranges, holding = {}, set()
    for f in table.files():
        (path,) = Path(table.path).rglob(f.file_name)
        ids = pq.read_table(path, columns=["_KEY_id"]).column("_KEY_id").to_pylist()
        ranges[f.file_name] = (path, min(ids), max(ids))
        if key in ids:
            holding.add(path.parent.name)
    assert len(holding) <= 1, f"key {key} lies in buckets {holding}"
    return {name for name, (path, lo, hi) in ranges.items()
            if lo <= key <= hi and (partition is None or path.parent.parent.name == f"dt={partition}")
            and (not fixed_buckets or path.parent.name in holding)}


def check_lookups(tmp_path: Path, table: Table, probes: Sequence[int], partitions: Sequence[str], *,
                  fixed_buckets: bool) -> None:
    official, _ = official_read(table.path, tmp_path)
    read = official.to_pylist()
    assert read, "pypaimon reads rows back"
    pruned = 0
    for i in probes:
        result = table.lookup([f"id={i}"])
        assert by_key(result.rows) == by_key(pa.Table.from_pylist([r for r in read if r["id"] == i],
                                                                  schema=result.rows.schema)), f"id={i}"
        assert set(result.files) == covering(table, i, fixed_buckets=fixed_buckets), f"id={i}"
        pruned += result.files_read < result.files_total
        for d in partitions:
            one = table.lookup([f"id={i},dt={d}"])
            assert one.rows.to_pylist() == [r for r in read if r["id"] == i and r["dt"] == d], f"id={i}, dt={d}"
            assert set(one.files) == covering(table, i, fixed_buckets=fixed_buckets, partition=d)
    assert pruned, "some lookup should skip files"
    several = table.lookup([f"id={i}" for i in probes])
    assert by_key(several.rows) == by_key(pa.Table.from_pylist([r for r in read if r["id"] in set(probes)],
                                                               schema=several.rows.schema))


def test_lookup_on_a_fixed_bucket_table_written_by_pypaimon(tmp_path: Path) -> None:
    days = ["2024-01-01", "2024-01-02"]
    table = pypaimon_table(tmp_path, "sales", {"bucket": "3"}, [
        rows(days, range(0, 120), "a"),
        rows(days[:1], range(10, 20), "b", "+U") + rows(days[1:], range(30, 36), "", "-D")
        + rows(days[:1], range(200, 210), "c"),
        rows(days, [5, 31, 205], "d", "+U"),
    ])
    check_lookups(tmp_path, table, [0, 5, 10, 19, 30, 31, 35, 119, 200, 205, 500], days, fixed_buckets=True)


def test_lookup_on_a_dynamic_bucket_table_searches_every_bucket(tmp_path: Path) -> None:
    days = ["2024-01-01", "2024-01-02"]
    table = pypaimon_table(tmp_path, "dyn", {"bucket": "-1"}, [
        rows(days, range(0, 50), "a"),
        rows(days, range(40, 60), "b", "+U"),
        rows(days[:1], [3, 45], "", "-D"),
    ])
    assert {e.total_buckets for e in _entries(table)} == {-1}
    check_lookups(tmp_path, table, [0, 3, 39, 45, 59, 60], days, fixed_buckets=False)


def _entries(table: Table) -> list[Any]:
    from core.manifest import live_entries

    return live_entries(table.manifests(), table.latest_snapshot())
