"""Model test of deletion-vector tables (``deletion-vectors.enabled=true``): random writes
(inserts, updates, deletes), compactions (full, or the lookup compaction that marks older
versions in deletion vectors), expire, tag and rollback against a dict model.

In deletion-vector mode batch reads skip level-0 files, so a write's APPEND snapshot still
shows the rows before it; the lookup compaction lakectl runs right after the write (as Java's
writers do) makes them visible. The model keeps both states of each snapshot: what it holds
(``full``) and what a batch read shows (``states``); they differ at an APPEND snapshot, and a
rollback to one brings back its pending level-0 rows, which the next compaction shows. After every step each retained snapshot and tag scans to the
model's rows, every index file a retained snapshot or tag lists exists, decodes and fits its
data files (``check``), and remove-orphan-files (no age threshold) breaks nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lifecycle_model import _apply, _rows

from core.errors import NotFoundError
from core.ops.check import check
from core.ops.compact import compact
from core.ops.create import create
from core.ops.expire import expire_snapshots
from core.ops.orphans import remove_orphan_files
from core.ops.rollback import rollback
from core.ops.tags import create_tag
from core.table import Table

KEYS = st.integers(0, 8)
ROW = st.tuples(KEYS, st.sampled_from(["a", "b"]), st.sampled_from(["+I", "+U", "-D"]))
OPS = st.one_of(
    st.tuples(st.just("write"), st.lists(ROW, min_size=1, max_size=6)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 3), st.integers(0, 3)),
    st.tuples(st.just("tag"), st.integers(0, 100)),
    st.tuples(st.just("rollback"), st.integers(0, 100)),
)


def _check(table: Table, states: dict[int, dict], tags: dict[str, int]) -> None:
    for sid in table.snapshots.list_ids():
        assert _rows(table, snapshot_id=sid) == states[sid], f"snapshot {sid}"
    for name, sid in tags.items():
        assert _rows(table, tag=name) == states[sid], f"tag {name}"
    result = check(table)
    assert result.ok, result.problems


def run(ops: list, after_step=None) -> None:
    """Apply ``ops`` and check after each; ``after_step(table, model)`` may check more."""
    with tempfile.TemporaryDirectory() as wh:
        table = Table.locate("db.t", warehouse=wh)
        create(table, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
               options={"bucket": "2", "deletion-vectors.enabled": "true", "snapshot.num-retained.min": "1000",
                        "snapshot.num-retained.max": "1000"})
        states: dict[int, dict] = {}  # what a batch read of each snapshot shows
        full: dict[int, dict] = {}  # what each snapshot holds, level 0 included
        tags: dict[str, int] = {}
        model: dict = {}  # what the latest snapshot holds
        shown: dict = {}  # what it shows
        for op in ops:
            latest = table.snapshots.latest_id()
            if op[0] == "write":
                batch = [(k, "d1" if k % 2 else "d2", kind) for k, _, kind in op[1]]
                data = pa.table({"id": pa.array([b[0] for b in batch], pa.int64()),
                                 "v": [None if b[2] == "-D" else f"v{b[0]}{b[1]}{b[2]}" for b in batch],
                                 "dt": [b[1] for b in batch], "op": [b[2] for b in batch]})
                result = table.write(data, row_kind_column="op")
                model = _apply(model, batch)
                states[result.snapshot_id], full[result.snapshot_id] = shown, model  # level 0: not shown yet
                for sid in range(result.snapshot_id + 1, table.snapshots.latest_id() + 1):
                    shown = model  # the lookup compaction after the write
                    states[sid], full[sid] = shown, model
            elif op[0] == "compact":
                result = compact(table, full=op[1])
                if result.snapshot_id is not None:
                    shown = model  # every level-0 file moved up
                    states[result.snapshot_id], full[result.snapshot_id] = shown, model
            elif op[0] == "expire":
                retain_min, extra = op[1], op[2]
                expire_snapshots(table, retain_min=retain_min, retain_max=retain_min + extra, older_than="0s")
            elif op[0] == "tag" and latest is not None:
                name = f"t{len(tags)}"
                ids = table.snapshots.list_ids()
                sid = ids[op[1] % len(ids)]
                create_tag(table, name, snapshot_id=sid)
                tags[name] = sid
            elif op[0] == "rollback" and latest is not None:
                targets = sorted(set(table.snapshots.list_ids() + list(tags.values())))
                target = targets[op[1] % len(targets)]
                try:
                    rollback(table, snapshot_id=target)
                except NotFoundError:
                    continue  # an expired snapshot kept only by a tag
                tags = {n: s for n, s in tags.items() if s <= target}
                model, shown = full[target], states[target]
                states = {s: m for s, m in states.items() if s <= target}
            _check(table, states, tags)
            remove_orphan_files(table, older_than="0s", force=True)
            _check(table, states, tags)
            if after_step is not None:
                after_step(table, shown)
        assert _rows(table) == shown


SCENARIOS = [
    [("write", [(1, "a", "+I"), (2, "a", "+I"), (3, "a", "+I")]), ("tag", 1), ("write", [(1, "b", "-D")]),
     ("write", [(2, "b", "+U"), (4, "a", "+I")]), ("expire", 1, 0), ("rollback", 1), ("write", [(3, "a", "-D")]),
     ("compact", False), ("compact", True), ("write", [(5, "b", "+I"), (3, "b", "+U")])],
    [("write", [(k, "a", "+I")]) for k in range(6)] + [("write", [(k, "b", "+U") for k in range(0, 6, 2)]),
                                                        ("expire", 2, 1), ("tag", 0), ("rollback", 0),
                                                        ("write", [(6, "b", "+U"), (1, "a", "-D")]),
                                                        ("compact", True), ("write", [(0, "a", "-D")])],
]


@pytest.mark.parametrize("ops", SCENARIOS)
def test_deletion_vector_scenarios(ops):
    run(ops)


@pytest.mark.interop
@pytest.mark.java
@pytest.mark.parametrize("ops", SCENARIOS[:1])
def test_java_reads_the_dv_table_after_every_step(ops):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    from java_oracle import java_read

    def java_agrees(table: Table, model: dict) -> None:
        latest = table.snapshots.latest_id()
        if latest is None:
            return
        rows, meta = java_read(table.path)
        assert meta["latest_snapshot"] == latest
        assert {(r[2], r[0]): r[1] for r in rows} == _rows(table)

    run(ops, after_step=java_agrees)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("LAKECTL_MODEL_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=12))
def test_deletion_vector_model(ops):
    run(ops)
