"""Model test of the table lifecycle: random interleavings of write, delete --where, compact
(minor and full), expire, tag, rollback, truncate and drop-partition. After every step each
retained snapshot and each tag scans to exactly the rows the model says it held, every file a
retained snapshot or tag references exists, and remove-orphan-files (with no age threshold)
never removes a referenced file.
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

from core import binary_row
from core.errors import NotFoundError
from core.fileio import join
from core.manifest import merge_entries, read_entries
from core.ops.compact import compact
from core.ops.create import create
from core.ops.expire import expire_snapshots
from core.ops.orphans import remove_orphan_files
from core.ops.rollback import rollback
from core.ops.tags import create_tag
from core.ops.truncate import drop_partitions, truncate
from core.partition import partition_path
from core.table import Table

KEYS = st.integers(0, 6)
ROW = st.tuples(KEYS, st.sampled_from(["a", "b"]), st.sampled_from(["+I", "+U", "-D"]))
OPS = st.one_of(
    st.tuples(st.just("write"), st.lists(ROW, min_size=1, max_size=6)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 3), st.integers(0, 3)),
    st.tuples(st.just("tag"), st.integers(0, 100)),
    st.tuples(st.just("rollback"), st.integers(0, 100)),
    st.tuples(st.just("delete"), KEYS, st.sampled_from(["", "d1", "d2"])),
    st.tuples(st.just("truncate")),
    st.tuples(st.just("drop-partition"), st.sampled_from(["d1", "d2"])),
)


def _rows(table: Table, **kw) -> dict:
    return {(r["dt"], r["id"]): r["v"] for r in table.scan(**kw).to_pylist()}


def _apply(model: dict, batch: list) -> dict:
    new = dict(model)
    for key, dt_, kind in batch:
        if kind == "-D":
            new.pop((dt_, key), None)
        else:
            new[(dt_, key)] = f"v{key}{dt_}{kind}"
    return new


def _referenced_paths(table: Table, snapshots: list) -> set[str]:
    paths = set()
    mio = table.manifests()
    schema = table.schema
    for snap in snapshots:
        for e in merge_entries(read_entries(mio, [snap.base_manifest_list, snap.delta_manifest_list])):
            values = binary_row.decode(e.partition, [f.type for f in schema.partition_fields])
            part = partition_path(values, schema.partition_fields, schema.core_options.partition_default_name)
            paths.add(join(table.path, part, f"bucket-{e.bucket}", e.file.file_name))
        for name in (snap.base_manifest_list, snap.delta_manifest_list):
            paths.add(join(table.path, "manifest", name))
    return paths


def _check(table: Table, states: dict[int, dict], tags: dict[str, int]) -> None:
    ids = table.snapshots.list_ids()
    for sid in ids:
        assert _rows(table, snapshot_id=sid) == states[sid], f"snapshot {sid}"
    for name, sid in tags.items():
        assert _rows(table, tag=name) == states[sid], f"tag {name}"
    retained = [table.snapshots.snapshot(i) for i in ids] + [table.tags.snapshot(n) for n in tags]
    for path in _referenced_paths(table, retained):
        assert os.path.exists(path), f"{path} is referenced but gone"


def run(ops: list, after_step=None) -> None:
    """Apply ``ops`` and check after each; ``after_step(table, model)`` may check more."""
    with tempfile.TemporaryDirectory() as wh:
        table = Table.locate("db.t", warehouse=wh)
        # Retention and compaction happen only when the model asks for them.
        create(table, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
               options={"bucket": "2", "write-only": "true", "num-sorted-run.compaction-trigger": "2"})
        states: dict[int, dict] = {}
        tags: dict[str, int] = {}
        model: dict = {}
        for op in ops:
            latest = table.snapshots.latest_id()
            if op[0] == "write":
                batch = [(k, "d1" if k % 2 else "d2", kind) for k, _, kind in op[1]]
                data = pa.table({"id": pa.array([b[0] for b in batch], pa.int64()),
                                 "v": [None if b[2] == "-D" else f"v{b[0]}{b[1]}{b[2]}" for b in batch],
                                 "dt": [b[1] for b in batch], "op": [b[2] for b in batch]})
                result = table.write(data, row_kind_column="op")
                model = _apply(model, batch)
                states[result.snapshot_id] = model
            elif op[0] == "delete":
                where = f"id <= {op[1]}" + (f" AND dt = '{op[2]}'" if op[2] else "")
                gone = {k for k in model if k[1] <= op[1] and (not op[2] or k[0] == op[2])}
                result = table.delete(where)
                assert result.rows_deleted == len(gone)
                assert (result.snapshot_id is None) == (not gone)  # nothing matching commits nothing
                model = {k: v for k, v in model.items() if k not in gone}
                if result.snapshot_id is not None:
                    states[result.snapshot_id] = model
            elif op[0] == "compact":
                result = compact(table, full=op[1])
                if result.snapshot_id is not None:
                    states[result.snapshot_id] = model  # compaction never changes the rows
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
                targets = table.snapshots.list_ids() + [tags[n] for n in tags]
                target = sorted(set(targets))[op[1] % len(set(targets))]
                try:
                    rollback(table, snapshot_id=target)
                except NotFoundError:
                    continue  # an expired snapshot kept only by a tag: roll back to that tag instead
                tags = {n: s for n, s in tags.items() if s <= target}
                model = states[target]
                states = {s: m for s, m in states.items() if s <= target}
            elif op[0] == "truncate":
                result = truncate(table)
                if result.snapshot_id is not None:
                    model = {}
                    states[result.snapshot_id] = model
            elif op[0] == "drop-partition":
                try:
                    result = drop_partitions(table, [{"dt": op[1]}])
                except NotFoundError:
                    # no live file there: then no row either
                    assert not any(d == op[1] for d, _ in model), f"{op[1]} has rows but no live files"
                    continue
                model = {k: v for k, v in model.items() if k[0] != op[1]}
                states[result.snapshot_id] = model
            _check(table, states, tags)
            # Orphan removal with no age threshold must never break a retained snapshot or tag.
            remove_orphan_files(table, older_than="0s")
            _check(table, states, tags)
            if after_step is not None:
                after_step(table, model)
        assert _rows(table) == model


SCENARIOS = [
    [("write", [(1, "a", "+I"), (2, "a", "+I")]), ("tag", 0), ("write", [(1, "b", "-D")]),
     ("compact", True), ("expire", 1, 0), ("rollback", 1), ("write", [(3, "a", "+I")])],
    [("write", [(k, "a", "+I")]) for k in range(5)] + [("compact", False), ("expire", 2, 1), ("rollback", 0),
                                                        ("write", [(6, "b", "+U")]), ("compact", True)],
    [("write", [(k, "a", "+I") for k in range(6)]), ("tag", 0), ("delete", 3, "d1"), ("compact", False),
     ("delete", 6, ""), ("delete", 6, ""), ("rollback", 1), ("write", [(2, "a", "+U")]), ("compact", True)],
    [("write", [(k, "a", "+I") for k in range(4)]), ("tag", 0), ("drop-partition", "d1"), ("drop-partition", "d1"),
     ("write", [(5, "a", "+I")]), ("truncate",), ("rollback", 1), ("compact", True), ("expire", 1, 0),
     ("write", [(2, "b", "-D")]), ("drop-partition", "d2"), ("truncate",), ("truncate",)],
]


@pytest.mark.parametrize("ops", SCENARIOS)
def test_lifecycle_scenarios(ops):
    run(ops)


@pytest.mark.interop
@pytest.mark.parametrize("ops", SCENARIOS)
def test_pypaimon_reads_the_table_after_every_step(ops, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    from oracle import official_read

    def pypaimon_agrees(table: Table, model: dict) -> None:
        if table.snapshots.latest_id() is None:
            return
        data, meta = official_read(table.path, tmp_path)
        assert meta["latest_snapshot"] == table.snapshots.latest_id()
        assert {(r["dt"], r["id"]): r["v"] for r in data.to_pylist()} == model

    run(ops, after_step=pypaimon_agrees)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("LAKECTL_MODEL_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=12))
def test_lifecycle_model(ops):
    run(ops)
