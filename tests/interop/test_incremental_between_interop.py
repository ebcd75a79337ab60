"""``scan --incremental-between`` against Java Paimon 1.0's batch ``incremental-between`` read.

Where Java 1.0 and later Paimon agree, lakectl must return Java 1.0's rows exactly:

- a range of two tags is a diff of the tags' snapshots (Java 1.0's IncrementalTagStartingScanner,
  Paimon 1.1+'s IncrementalDiffStartingScanner): the table's own read (``-U``/``-D`` dropped)
  and, where no key was deleted before the range starts, the ``audit_log`` read (retractions
  kept, which is what lakectl's ``_row_kind`` column shows);
- ``incremental-between-scan-mode`` ``delta`` and ``changelog`` over one snapshot, with
  retractions kept.

Over several snapshots the releases differ (Java 1.0 merges a ``delta`` or ``changelog``
range per key, Paimon 1.1+ and pypaimon 2.1 return every change) and lakectl follows the
later one; tests/cli/test_cli_incremental.py checks that answer by hand. One JVM per case.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_incremental_reads, lakectl_rows
from test_merge_interop import CL_ENGINES as ENGINES

from core.ops.create import create
from core.ops.tags import create_tag
from core.table import Table

pytestmark = pytest.mark.interop

SCHEMA = "dt STRING NOT NULL, id BIGINT NOT NULL, v INT, w STRING"
ARROW = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int32()), ("w", pa.string()),
                   ("op", pa.string())])
MODE = "incremental-between-scan-mode"


def _key_table(tmp_path: Path, engine: str, producer: str) -> Table:
    table = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    options = {"bucket": "2", "changelog-producer": producer, **ENGINES[engine]}
    create(table, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=options)
    return table


def _write(table: Table, records: list[tuple[str, str, int, int | None, str | None]]) -> None:
    rows = [{"op": k, "dt": dt, "id": i, "v": v, "w": w} for k, dt, i, v, w in records]
    table.write(pa.Table.from_pylist(rows, schema=ARROW), row_kind_column="op")


def _random_writes(table: Table, rng: random.Random, writes: int, *, deletes: bool) -> None:
    seen: set[tuple[str, int]] = set()
    for _ in range(writes):
        batch: dict[tuple[str, int], tuple] = {}
        for _ in range(6):
            key = (rng.choice(["p1", "p2"]), rng.randrange(10))
            kind = rng.choice(["+I", "+U", "-D"] if deletes else ["+I", "+U"]) if key in seen else "+I"
            batch[key] = (kind, *key, rng.randrange(-5, 30), rng.choice(["a", "b", None]))
        seen |= set(batch)
        _write(table, list(batch.values()))


def _tag_latest(table: Table, name: str) -> int:
    sid = table.snapshots.latest_id()
    create_tag(table, name, snapshot_id=sid)
    return sid


def _adds(rows: list[list[Any]]) -> list[list[Any]]:
    return [r for r in rows if r[0] in ("+I", "+U")]


KEY_CASES = [("deduplicate", "none"), ("deduplicate", "input"), ("partial-update", "none"),
             ("aggregation", "lookup"), ("first-row", "none")]


@pytest.mark.parametrize("engine, producer", KEY_CASES, ids=[f"{e}-{p}" for e, p in KEY_CASES])
def test_key_table_ranges_read_as_java_reads_them(tmp_path: Path, engine: str, producer: str) -> None:
    """Tag ranges across writes and a full compaction, and each snapshot in delta and
    changelog mode, in one JVM."""
    table = _key_table(tmp_path, engine, producer)
    rng = random.Random(len(engine) * 7 + len(producer))
    deletes = engine == "deduplicate"
    _random_writes(table, rng, 2, deletes=deletes)
    _tag_latest(table, "t1")
    _random_writes(table, rng, 2, deletes=deletes)
    _tag_latest(table, "t2")
    table.compact(full=True)
    _random_writes(table, rng, 2, deletes=deletes)
    _tag_latest(table, "t3")
    tag_ranges = ["t1,t2", "t1,t3", "t2,t3"]  # (two equal tags: Java 1.0 refuses, 1.1+ reads none)
    snapshots = list(range(1, table.snapshots.latest_id() + 1))
    requests = [(r, {}, False) for r in tag_ranges]
    requests += [(f"{s - 1},{s}", {MODE: mode}, True) for s in snapshots for mode in ("delta", "changelog")]
    java = java_incremental_reads(table.path, requests)
    for (between, options, keep), expected in zip(requests, java):
        start, end = between.split(",")
        if keep:
            got = lakectl_rows(table.changes(int(start), int(end), mode=options[MODE]))
            if options[MODE] == "changelog" and producer == "lookup":
                # Java 1.0 merges even one snapshot's files: a key's -U/+U pair leaves its +U
                got, expected = _adds(got), _adds(expected)
        else:
            got = _adds(lakectl_rows(table.changes(start, end)))
        assert got == expected, f"{between} {options}"
    assert any(java[: len(tag_ranges)]), "the tag ranges have rows"


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_a_key_inserted_and_deleted_between_two_tags_is_a_delete(tmp_path: Path, engine: str) -> None:
    """No key deleted before the range: lakectl's rows are Java's audit_log rows, retractions
    included; the table's own read shows only the +I/+U ones."""
    options = {"merge-engine": engine, "partial-update.remove-record-on-delete": "true"} \
        if engine != "deduplicate" else {}
    table = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(table, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1", **options})
    _write(table, [("+I", "p1", 0, 1, "a"), ("+I", "p1", 1, 2, "a"), ("+I", "p2", 2, 3, "a")])
    _tag_latest(table, "t1")
    _write(table, [("+U", "p1", 0, 10, "b"), ("+I", "p1", 3, 4, "b"), ("-D", "p1", 1, 2, "a")])
    _tag_latest(table, "t2")
    _write(table, [("+U", "p1", 0, 20, None), ("-D", "p1", 3, 4, "b"), ("+I", "p2", 4, 5, "c")])
    _write(table, [("+U", "p1", 0, 30, "d"), ("+U", "p2", 2, 6, None)])
    _tag_latest(table, "t4")
    ranges = ["t1,t2", "t1,t4", "t2,t4"]
    java = java_incremental_reads(table.path, [(r, {}, keep) for r in ranges for keep in (True, False)])
    # key 3 came and went between t1 and t4: its records merge to a delete. Deduplicate keeps
    # the -D record; partial-update's fold gives Paimon 1.1+ a -D of the not-null columns
    # (PartialUpdateMergeFunction.getResult), where Java 1.0's gave no record at all.
    gone = ["-D", "p1", 3, 4, "b"] if engine == "deduplicate" else ["-D", "p1", 3, None, None]
    for i, between in enumerate(ranges):
        ours = lakectl_rows(table.changes(*between.split(",")))
        expected = java[2 * i]
        if between == "t1,t4":
            assert gone in ours
            if engine == "deduplicate":
                assert gone in expected
            else:
                expected = expected + [gone]
        assert sorted(ours) == sorted(expected), between
        assert _adds(ours) == java[2 * i + 1], between


def test_append_table_tag_ranges_read_as_java_reads_them(tmp_path: Path) -> None:
    """An append table's diff is the rows of the files only the later tag holds (a compaction
    in between brings the rewritten rows back), as +I."""
    table = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(table, "dt STRING, id BIGINT, v INT", partition_keys=["dt"], options={"bucket": "-1"})
    plain = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int32())])
    for step in range(5):
        table.write(pa.Table.from_pylist([{"dt": f"p{i % 2}", "id": step * 10 + i, "v": i} for i in range(3)],
                                         schema=plain))
        _tag_latest(table, f"t{step}")
        if step == 2:
            table.compact(full=True)
    ranges = ["t0,t1", "t0,t4", "t2,t4", "t1,t3"]
    java = java_incremental_reads(table.path, [(r, {}, False) for r in ranges])
    for between, expected in zip(ranges, java):
        assert lakectl_rows(table.changes(*between.split(","))) == expected, between
    assert len(java[2]) > len(java[1]) - 6, "the compaction's files are in the t2,t4 diff"


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_an_overwrite_adds_no_changes_in_either_mode(tmp_path: Path, producer: str) -> None:
    """Paimon's incremental scans skip OVERWRITE snapshots (and COMPACT ones in delta mode)."""
    table = _key_table(tmp_path, "deduplicate", producer)
    _write(table, [("+I", "p1", 1, 1, "a"), ("+I", "p1", 2, 2, "a"), ("+I", "p2", 3, 3, "a")])
    overwrite = pa.Table.from_pylist([{"dt": "p1", "id": 1, "v": 10, "w": "b"}], schema=ARROW.remove(4))
    table.write(overwrite, mode="overwrite")
    _write(table, [("+U", "p1", 1, 11, "c"), ("-D", "p2", 3, 3, "a")])
    snapshots = table.snapshots.snapshots()
    assert "OVERWRITE" in [s.commit_kind for s in snapshots]
    requests = [(f"{s.id - 1},{s.id}", {MODE: mode}, True) for s in snapshots for mode in ("delta", "changelog")]
    java = java_incremental_reads(table.path, requests)
    for (between, options, _), expected in zip(requests, java):
        got = lakectl_rows(table.changes(*map(int, between.split(",")), mode=options[MODE]))
        if producer == "lookup" and options[MODE] == "changelog":
            got, expected = _adds(got), _adds(expected)  # Java 1.0 merges a -U/+U pair
        assert got == expected, f"{between} {options}"
        if snapshots[int(between.split(",")[1]) - 1].commit_kind == "OVERWRITE":
            assert got == []
