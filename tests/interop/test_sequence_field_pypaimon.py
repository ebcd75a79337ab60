"""``sequence.field`` against pypaimon 2.1 both ways, in both sort orders: pypaimon writes records
of a key out of order over several commits and lakectl reads what pypaimon reads; lakectl
writes and pypaimon reads what lakectl reads. Expected rows are computed by hand. pypaimon
2.1 honours ``sequence.field.sort-order=descending``, which Java 1.0 does not
(test_sequence_field_interop)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from oracle import official_read, official_write

from core.ops.create import create
from core.table import Table

pytestmark = [pytest.mark.interop]

ARROW = pa.schema([("k", pa.int32()), ("ts", pa.int64()), ("v", pa.string())])


def rows(table: pa.Table) -> list[tuple]:
    return sorted((r["k"], r["ts"], r["v"]) for r in table.to_pylist())


def batch(*records: tuple) -> pa.Table:
    return pa.table({"k": [r[0] for r in records], "ts": [r[1] for r in records], "v": [r[2] for r in records]},
                    schema=ARROW)


# (options, commits, expected): key 1 arrives out of order, key 2 has a null ts (the oldest in
# either order), key 3 two records in one commit.
CASES = {
    "ascending": ({}, [batch((1, 5, "1@5"), (2, 3, "2@3")), batch((1, 3, "1@3"), (2, None, "2@null")),
                       batch((3, 9, "3@9"), (3, 2, "3@2"), (1, 4, "1@4"))],
                  [(1, 5, "1@5"), (2, 3, "2@3"), (3, 9, "3@9")]),
    "descending": ({"sequence.field.sort-order": "descending"},
                   [batch((1, 5, "1@5"), (2, 3, "2@3")), batch((1, 3, "1@3"), (2, None, "2@null")),
                    batch((3, 9, "3@9"), (3, 2, "3@2"), (1, 4, "1@4"))],
                   [(1, 3, "1@3"), (2, 3, "2@3"), (3, 2, "3@2")]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pypaimon_writes_and_lakectl_reads_the_same(tmp_path: Path, case: str) -> None:
    options, batches, expected = CASES[case]
    job = {"warehouse": str(tmp_path / "wh"), "table": "db.t",
           "schema": {"fields": [["k", "INT NOT NULL"], ["ts", "BIGINT"], ["v", "STRING"]], "primary_keys": ["k"],
                      "partition_keys": [], "options": {"bucket": "2", "sequence.field": "ts", "write-only": "true",
                                                        **options}},
           "steps": [{"op": "write"} for _ in batches]}
    result = official_write(job, batches, tmp_path)
    official, _ = official_read(result["table_path"], tmp_path)
    assert rows(official) == expected
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    assert rows(table.scan()) == expected
    table.compact(full=True)
    assert rows(official_read(result["table_path"], tmp_path)[0]) == rows(table.scan()) == expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_lakectl_writes_and_pypaimon_reads_the_same(tmp_path: Path, case: str) -> None:
    options, batches, expected = CASES[case]
    table = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(table, "k INT NOT NULL, ts BIGINT, v STRING", primary_keys=["k"],
           options={"bucket": "2", "sequence.field": "ts", "write-only": "true", **options})
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    for b in batches:
        table.write(b)
    assert rows(table.scan()) == expected
    assert rows(official_read(table.path, tmp_path)[0]) == expected
