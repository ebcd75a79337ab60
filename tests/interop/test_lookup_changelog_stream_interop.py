"""A Flink job streaming a lakectl-written ``changelog-producer=lookup`` table sees every
change: Java Paimon 1.0's streaming read (``scan.mode=from-snapshot``, the follow-up scanner
Flink runs, which for ``lookup`` reads the changelog of COMPACT snapshots only) returns the
changes lakectl's own incremental read returns, on every merge engine, with and without
deletion vectors, and replaying them gives the rows Java's batch read returns.

lakectl commits a lookup table's changelog as Java's writers do: the write's APPEND snapshot
holds the new level-0 files, the compaction right after it (a COMPACT snapshot) the changelog.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_oracle import java_read, lakectl_rows
from test_merge_interop import CL_ENGINES as ENGINES  # the four engines, as the changelog tests there set them

from core.ops.create import create
from core.table import Table

pytestmark = pytest.mark.interop

SCHEMA = "dt STRING NOT NULL, id BIGINT NOT NULL, v INT, w STRING"
ARROW = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int32()), ("w", pa.string()),
                   ("op", pa.string())])


def _history(table: Table, seed: int, *, deletes: bool) -> None:
    """Six writes of inserts, updates (and deletes) over 8 keys in two partitions."""
    rng = random.Random(seed)
    seen: set[tuple[str, int]] = set()
    for _ in range(6):
        records = []
        for _ in range(6):
            key = (rng.choice(["p1", "p2"]), rng.randrange(8))
            kinds = ["+I", "+U", "-D"] if deletes else ["+I", "+U"]
            kind = rng.choice(kinds) if key in seen else "+I"
            seen.add(key)
            records.append({"dt": key[0], "id": key[1], "v": rng.randrange(-5, 30),
                            "w": rng.choice(["a", "b", None]), "op": kind})
        table.write(pa.Table.from_pylist(records, schema=ARROW), row_kind_column="op")


def _replayed(changes: list[list[Any]]) -> list[list[Any]]:
    """The table a consumer applying the changes in order holds (rows without the kind)."""
    state: dict[tuple[Any, Any], list[Any]] = {}
    for kind, *row in changes:
        if kind in ("+I", "+U"):
            state[(row[0], row[1])] = row
        else:
            state.pop((row[0], row[1]), None)
    return sorted(state.values(), key=lambda r: (r[0], r[1]))


# (Java refuses deletion vectors with first-row: that merge engine deletes no old data.)
CASES = [(engine, dv) for engine in ENGINES for dv in (False, True) if not (dv and engine == "first-row")]


@pytest.mark.parametrize("engine, dv", CASES, ids=[f"{e}-{'dv' if dv else 'plain'}" for e, dv in CASES])
def test_java_streams_every_change_of_a_lakectl_lookup_table(tmp_path: Path, engine: str, dv: bool) -> None:
    table = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    options = {"bucket": "2", "changelog-producer": "lookup", **ENGINES[engine]}
    if dv:
        options["deletion-vectors.enabled"] = "true"
    create(table, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=options)
    _history(table, seed=len(engine) + dv, deletes=engine == "deduplicate")
    latest = table.snapshots.latest_id()
    kinds = [s.commit_kind for s in table.snapshots.snapshots()]
    # every write that adds files is compacted, the changelog in that snapshot (a first-row
    # write of stored keys only adds none)
    assert kinds.count("COMPACT") >= 4 and kinds[-1] == "COMPACT", kinds
    ours = lakectl_rows(table.changes(0, latest))
    assert ours, "lakectl's incremental read has changes"
    streamed, meta = java_read(table.path, stream_from=1, with_kind=True)
    assert streamed == ours
    batch, _ = java_read(table.path)
    if engine != "aggregation":  # a sum's changelog is -U/+U of totals: replayed it is the same state
        assert [r for r in _replayed([list(r) for r in _in_commit_order(table)])] == batch
    assert lakectl_rows(table.scan()) == batch


def _in_commit_order(table: Table) -> list[list[Any]]:
    """lakectl's changes snapshot by snapshot, in the order it returns them."""
    data = table.changes(0, table.snapshots.latest_id())
    return [list(r.values()) for r in data.to_pylist()]


# ---- tables Java's lookup writers left with old versions below newer ones ----------------------
@pytest.mark.parametrize("engine", ["aggregation", "partial-update"])
@pytest.mark.parametrize("dv", [False, True], ids=["plain", "deletion-vectors"])
def test_a_java_lookup_table_with_old_versions_below_reads_as_java_reads_it(tmp_path: Path, engine: str,
                                                                             dv: bool) -> None:
    """Java's lookup compaction folds a key's older record into the record it writes above
    level 0 and leaves the older one below (its size ratio keeps a large base run where it
    is), and its readers count only the newest record above level 0. lakectl's scan, lookup
    and compactions must do the same: summing both versions gave 1112 for Java's 1111."""
    from java_oracle import java_run

    path = tmp_path / "wh" / "db.db" / "t"
    options = {"bucket": "1", "changelog-producer": "lookup", **ENGINES[engine]}
    if dv:
        options["deletion-vectors.enabled"] = "true"
    fields = [{"name": "dt", "type": "STRING NOT NULL"}, {"name": "id", "type": "BIGINT NOT NULL"},
              {"name": "v", "type": "INT"}, {"name": "w", "type": "STRING"}]
    base = [["p1", k, 1, "base"] for k in range(3000)]  # a large first run: later runs stay above it
    steps = [{"op": "write", "rows": base}] + [{"op": "write", "rows": [["p1", 1, 10 ** i, None], ["p1", 2, None, f"w{i}"]]}
                                              for i in range(1, 4)]
    java_run(path, steps, create={"fields": fields, "primaryKeys": ["dt", "id"], "options": options})
    table = Table.open("db.t", warehouse=str(tmp_path / "wh"))
    levels = sorted({f.level for f in table.files()})
    assert len(levels) >= 2, levels  # a key in two levels: the case at stake
    java_rows, _ = java_read(path)
    assert lakectl_rows(table.scan()) == java_rows
    assert lakectl_rows(table.scan(where="id = 1")) == [r for r in java_rows if r[1] == 1]
    table.compact(full=False)
    assert java_read(path)[0] == java_rows and lakectl_rows(table.scan()) == java_rows
    table.compact(full=True)
    assert java_read(path)[0] == java_rows and lakectl_rows(table.scan()) == java_rows
