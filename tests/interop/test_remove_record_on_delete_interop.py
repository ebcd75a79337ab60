"""partial-update.remove-record-on-delete with -U/-D rows: Java Paimon against lakectl, both ways.

The Java oracle's bundle (paimon-python-java-bridge) is a Paimon 1.0 pre-release
(1.0-SNAPSHOT, Sept 2024) whose PartialUpdateMergeFunction differs from every released fold in
exactly the paths issue 25 is about (tried with the oracle): a -D sets its row to null, so an
insert after it in the same fold throws a NullPointerException (a commit [-D, +I], or [+I], [-D],
[+I] read together), and a -U after a -D drops the key instead of keeping it alive (one commit
[+I, -D, -U] commits no snapshot at all); a commit of -U rows only writes a file its own read
then fails on (ParquetDecodingException); its AggregateMergeFunction has no
aggregation.remove-record-on-delete (first_value after [+I 1, -D, +I 3] is 1). Those cases are
checked against the model of Paimon 1.1+'s folds in tests/model/test_merge_engines_model.py
only. What the oracle can check is below: a leading -U before an insert in one commit, a -D in
its own commit, and a lone -U, each written by one side and read by both at every snapshot (the
full compaction's included), with the values Paimon's rules give worked out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, java_read_snapshots, java_run, lakectl_rows

from core.ops.create import create
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

FIELDS = [("id", "BIGINT NOT NULL", pa.int64()), ("price", "DOUBLE", pa.float64()), ("num", "INT", pa.int32()),
          ("d", "STRING", pa.string())]
OPTIONS = {"bucket": "1", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}
COMMITS: list[list[tuple[str, int, Any, Any, Any]]] = [
    [("+I", 1, 1.0, 1, "a"), ("+I", 2, 1.0, 1, "a"), ("+I", 3, 1.0, 1, "a")],
    # Key 1: a leading -U sets nothing (nullable columns), the insert fills price: (2.0, None,
    # None), read over the first commit: (2.0, 1, "a"). Key 2: the -D removes the key. Key 3: a
    # lone -U is stored as it is and changes nothing.
    [("-U", 1, None, 5, None), ("+I", 1, 2.0, None, None), ("-D", 2, None, 2, None), ("-U", 3, None, 4, None)],
]
EXPECTED = [[1, 2.0, 1, "a"], [3, 1.0, 1, "a"]]


def _steps() -> list[dict[str, Any]]:
    writes = [{"op": "write", "rows": [list(r[1:]) for r in c], "kinds": [r[0] for r in c]} for c in COMMITS]
    return [*writes, {"op": "compact", "full": True}]


def _table_path(tmp_path: Path) -> Path:
    return tmp_path / "wh" / "db.db" / "t"


def _assert_both_read(path: Path, table: Table) -> None:
    latest, _ = java_read(path)
    assert latest == EXPECTED
    assert lakectl_rows(table.scan()) == EXPECTED
    ids = table.snapshots.list_ids()
    assert len(ids) == 3
    for sid, rows in java_read_snapshots(path, ids).items():
        assert lakectl_rows(table.scan(snapshot_id=sid)) == rows, f"snapshot {sid}"


def test_java_writes_lakectl_reads(tmp_path: Path) -> None:
    path = _table_path(tmp_path)
    java_run(path, _steps(), create={"fields": [{"name": n, "type": t} for n, t, _ in FIELDS],
                                     "primaryKeys": ["id"], "options": OPTIONS})
    _assert_both_read(path, Table.open("db.t", warehouse=str(path.parents[1])))


def test_lakectl_writes_java_reads(tmp_path: Path) -> None:
    path = _table_path(tmp_path)
    table = Table.locate("db.t", warehouse=str(path.parents[1]))
    create(table, ", ".join(f"{n} {t}" for n, t, _ in FIELDS), primary_keys=["id"], options=OPTIONS)
    for commit in COMMITS:
        data = {n: pa.array([r[i + 1] for r in commit], a) for i, (n, _, a) in enumerate(FIELDS)}
        table.write(pa.table({**data, "op": [r[0] for r in commit]}), row_kind_column="op")
    table.compact(full=True)
    _assert_both_read(path, table)
