"""lakectl deletes, Java Paimon 1.0 and pypaimon read: after ``delete --where`` both official
readers return exactly the rows a Python model keeps (the rows written minus those the
filter matches), on a primary-key table (-D records, with and without deletion vectors) and
on an append table (files rewritten in an OVERWRITE snapshot)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_oracle import java_read, lakectl_rows
from oracle import official_read

from core.ops.create import create
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

SCHEMA = "id BIGINT, v STRING, amount INT, dt STRING"


def rows(start: int, n: int, tag: str) -> list[tuple]:
    return [(i, f"{tag}{i}", i % 10, "2024-01-01" if i % 2 else "2024-01-02") for i in range(start, start + n)]


def as_table(data: list[tuple]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in data], pa.int64()),
                     "v": pa.array([r[1] for r in data], pa.string()),
                     "amount": pa.array([r[2] for r in data], pa.int32()),
                     "dt": pa.array([r[3] for r in data], pa.string())})


def doomed(r: tuple) -> bool:
    return r[2] >= 4 and (r[3] == "2024-01-01" or r[0] < 10)


WHERE = "amount >= 4 AND (dt = '2024-01-01' OR id < 10)"


@pytest.mark.parametrize("kind", ["primary-key", "primary-key-dv", "primary-key-input-changelog", "append"])
def test_official_readers_read_the_model_after_a_delete(tmp_path: Path, kind: str) -> None:
    t = Table.locate(f"db.{kind.replace('-', '_')}", warehouse=str(tmp_path / "wh"))
    if kind == "append":
        create(t, SCHEMA, partition_keys=["dt"])
    else:
        options = {"bucket": "2", **({"deletion-vectors.enabled": "true"} if kind.endswith("dv") else {}),
                   **({"changelog-producer": "input"} if kind.endswith("changelog") else {})}
        create(t, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=options)
    t = Table.open(t.name, warehouse=str(tmp_path / "wh"))
    first, second = rows(0, 30, "a"), rows(20, 20, "b")
    t.write(as_table(first))
    t.write(as_table(second))
    if kind == "append":
        before = first + second
    else:
        state = {(r[0], r[3]): r for r in first}
        state.update({(r[0], r[3]): r for r in second})
        before = list(state.values())
    expected = lakectl_rows(as_table([r for r in before if not doomed(r)]))

    result = t.delete(WHERE)

    assert result.rows_deleted == sum(map(doomed, before)) > 0
    assert result.commit_kind == ("OVERWRITE" if kind == "append" else "APPEND")
    java_rows, meta = java_read(t.path)
    assert meta["latest_snapshot"] == t.snapshots.latest_id()
    assert java_rows == expected
    official, _ = official_read(t.path, tmp_path)
    assert lakectl_rows(official.select(["id", "v", "amount", "dt"])) == expected
    assert lakectl_rows(t.scan()) == expected
