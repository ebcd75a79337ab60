"""rescale against Java Paimon 1.0 (the reference) and pypaimon 2.1: after lakectl rescales a
primary-key table (the whole table, then one partition to yet another count, so that its
partitions' files use different bucket counts), Java and pypaimon read exactly the rows of a
dict model of what was written (updates merged, deleted keys gone), whole and one partition;
Java's full-key filters, which pick each file's bucket from its own total_buckets, find every
key, as lakectl's lookup does; Java then writes into a partition whose files use the table's
bucket option and lakectl reads that write, while Java refuses a partition rescaled to another
count ("Try to write partition ... with a new bucket num"), as lakectl's own writer does.
A deletion-vector table (whose level-0 files Java's batch read skips) and an append table
with a bucket key read in Java as their models after a rescale too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run, lakectl_rows, sort_rows
from oracle import official_read

from core.errors import CommitConflictError
from core.manifest import ManifestIO
from core.ops.create import create
from core.ops.rescale import rescale
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
DAYS = ("d1", "d2", "d3")


def _write(t: Table, model: dict[tuple[int, str], str], rows: list[tuple[int, str, str]]) -> None:
    t.write(pa.Table.from_pylist([{"id": i, "v": v, "dt": d} for i, v, d in rows], schema=SCHEMA))
    model.update({(i, d): v for i, v, d in rows})


def _expected(model: dict[tuple[int, str], str], day: str | None = None) -> list[list[Any]]:
    return sort_rows([i, v, d] for (i, d), v in model.items() if day in (None, d))


def _table(tmp_path: Path) -> tuple[Table, dict[tuple[int, str], str]]:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2"})
    model: dict[tuple[int, str], str] = {}
    _write(t, model, [(i, f"a{i}", DAYS[i % 3]) for i in range(30)])
    _write(t, model, [(i, f"b{i}", DAYS[i % 3]) for i in range(0, 30, 4)])  # updates
    t.delete("id < 3")  # deleted keys must not come back
    for i in range(3):
        model.pop((i, DAYS[i % 3]))
    return t, model


def _counts(t: Table) -> dict[str, set[int]]:
    """Bucket counts of the live files, per partition."""
    from core.commit import base_entries

    out: dict[str, set[int]] = {}
    for e in base_entries(ManifestIO(t.file_io, t.path), t.latest_snapshot()):
        out.setdefault(t.schema.partition_values(e.partition)[0], set()).add(e.total_buckets)
    return out


def _all_read_the_model(t: Table, model: dict[tuple[int, str], str], tmp_path: Path | None) -> None:
    """lakectl, Java and (given ``tmp_path``) pypaimon read the model, whole and partition d1."""
    expected = _expected(model)
    assert lakectl_rows(t.scan()) == expected
    java_rows, _ = java_read(t.path)
    assert java_rows == expected
    if tmp_path is not None:
        assert lakectl_rows(official_read(t.path, tmp_path)[0].select(["id", "v", "dt"])) == expected
    one, _ = java_read(t.path, equal=("dt", "d1"))
    assert one == _expected(model, "d1")
    assert lakectl_rows(t.scan(where="dt = 'd1'")) == _expected(model, "d1")


def _keys_found(t: Table, model: dict[tuple[int, str], str], keys: list[tuple[int, str]]) -> None:
    found = t.lookup([f"id={i},dt={d}" for i, d in model])
    assert found.found == len(model)
    assert lakectl_rows(found.rows) == _expected(model)
    for i, d in keys:  # Java's bucket filter: a full primary key picks one bucket per file's count
        rows, _ = java_read(t.path, filters=[("equal", "id", i), ("equal", "dt", d)])
        assert rows == [[i, model[(i, d)], d]]


def test_java_and_pypaimon_read_a_rescaled_table_and_java_writes_into_it(tmp_path: Path) -> None:
    t, model = _table(tmp_path)

    whole = rescale(t, 3)
    assert (whole.buckets_before, whole.buckets, whole.partitions_rewritten, whole.records_written) == ((2,), 3, 3, len(model))
    assert t.schema.num_buckets == 3 and t.schema.id == whole.schema_id == 1
    assert _counts(t) == {d: {3} for d in DAYS}
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    _all_read_the_model(t, model, tmp_path)
    _keys_found(t, model, [(4, "d2"), (8, "d3"), (9, "d1")])

    part = rescale(t, 5, partitions=[{"dt": "d1"}])
    assert (part.buckets_before, part.partitions_rewritten, part.schema_id) == ((3,), 1, None)
    assert t.schema.num_buckets == 3  # the option stays, as Paimon's procedure leaves it
    assert _counts(t) == {"d1": {5}, "d2": {3}, "d3": {3}}
    _all_read_the_model(t, model, tmp_path)
    _keys_found(t, model, [(12, "d1"), (15, "d1"), (13, "d2")])

    # Java writes into a partition whose files use the option's count; lakectl reads it.
    java_run(t.path, [{"op": "write", "rows": [[100, "java", "d2"], [4, "java4", "d2"]]}])
    model.update({(100, "d2"): "java", (4, "d2"): "java4"})
    assert lakectl_rows(t.scan()) == _expected(model)
    _keys_found(t, model, [(100, "d2"), (4, "d2")])
    # Java refuses the partition rescaled to another count; so does lakectl's writer.
    with pytest.raises(AssertionError, match="new bucket num 3, but the previous bucket num is 5"):
        java_run(t.path, [{"op": "write", "rows": [[101, "java", "d1"]]}])
    with pytest.raises(CommitConflictError, match="lakectl rescale db.t --buckets 3 --partition dt=d1"):
        t.write(pa.Table.from_pylist([{"id": 101, "v": "x", "dt": "d1"}], schema=SCHEMA))
    rescale(t, 3, partitions=[{"dt": "d1"}])  # back to the option's count: writable again
    _write(t, model, [(101, "x", "d1")])
    java_run(t.path, [{"op": "write", "rows": [[102, "java", "d1"]]}])
    model[(102, "d1")] = "java"
    # pypaimon 2.1 cannot read Java 1.0's manifest entries (no _VALUE_STATS_COLS): Java and lakectl.
    _all_read_the_model(t, model, None)


@pytest.mark.parametrize("keys, options", [
    (["id", "dt"], {"deletion-vectors.enabled": "true"}),  # level 0 hidden from Java's batch read
    ([], {"bucket-key": "id"}),  # an append table: its rows kept as they are, duplicates included
], ids=["deletion-vectors", "append"])
def test_java_reads_other_rescaled_tables(tmp_path: Path, keys: list[str], options: dict[str, str]) -> None:
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=keys, partition_keys=["dt"],
           options={"bucket": "2", **options})
    rows = [(i, f"a{i}", DAYS[i % 3]) for i in range(20)]
    later = [(i, f"b{i}", DAYS[i % 3]) for i in range(0, 20, 5)]
    for batch in (rows, later):
        t.write(pa.Table.from_pylist([{"id": i, "v": v, "dt": d} for i, v, d in batch], schema=SCHEMA))
    if keys:
        merged = {(i, d): v for i, v, d in rows + later}
        expected = sort_rows([i, v, d] for (i, d), v in merged.items())
    else:
        expected = sort_rows([i, v, d] for i, v, d in rows + later)
    rescale(t, 3)
    assert _counts(t) == {d: {3} for d in DAYS}
    assert lakectl_rows(t.scan()) == expected
    assert java_read(t.path)[0] == expected
