"""Model test of the changelog producers: random commit sequences (inserts, updates, deletes,
minor and full compactions) on tables with ``changelog-producer`` input, lookup and
full-compaction, for every merge engine a producer serves, then ``Table.changes`` is checked
as a downstream consumer would use it:

(a) replaying ``changes(0, N)`` in order onto an empty dict (+I/+U set the row, -U/-D remove
    the key) reproduces ``scan()`` at N: after every commit for ``lookup`` and ``input``,
    right after each full compaction for ``full-compaction`` (its changes only appear in the
    COMPACT snapshots that write the top level);
(b) a running sum of ``v`` kept from the changelog (+I/+U add, -U/-D subtract) equals sum(v)
    over the scan at the same points, so retractions carry the values that were there;
(c) ranges compose: ``changes(a, b)`` followed by ``changes(b, c)`` is ``changes(a, c)``.

An independent Python model of each merge engine also says what ``scan()`` must hold, and
for the exact producers (lookup, full-compaction, input fed proper CDC) the replay is
strict: +I only for an absent key, -U/-D only with the key's current row, +U right after
the -U of its key. Producer ``none`` (deduplicate) replays the data files the commits added.

Also: ``changelog-producer.row-deduplicate``; the snapshot fields ``changelogManifestList``
and ``changelogRecordCount``; ``expire`` deleting expired snapshots' changelog files; and
``remove-orphan-files`` keeping live ones.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import binary_row
from core.errors import NotFoundError
from core.manifest import read_entries
from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.tags import create_tag
from core.partition import partition_path
from core.snapshot import COMPACT
from core.table import Table

SCHEMA = "dt STRING NOT NULL, id BIGINT NOT NULL, v INT, m INT"
COLUMNS = ("dt", "id", "v", "m")
Key = tuple[str, int]
Row = dict[str, Any]

# merge engine -> (table options, the row kinds its writes may carry)
ENGINES: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "deduplicate": ({}, ("+I", "+U", "-U", "-D")),
    "partial-update": ({"merge-engine": "partial-update", "ignore-delete": "true"}, ("+I", "+U", "-U", "-D")),
    "aggregation": ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                     "fields.m.aggregate-function": "max", "fields.m.ignore-retract": "true"},
                    ("+I", "+U", "-U", "-D")),
    "first-row": ({"merge-engine": "first-row", "ignore-delete": "true"}, ("+I", "-D")),
}


# ---- the independent model of the merge engines ---------------------------------------------
def _key(row: Row) -> Key:
    return (row["dt"], row["id"])


def apply_rows(state: dict[Key, Row], rows: list[Row], engine: str) -> dict[Key, Row]:
    """The table after ``rows`` (in sequence order), as the merge engine folds them."""
    new = {k: dict(v) for k, v in state.items()}
    for row in rows:
        key, kind = _key(row), row["_kind"]
        retract = kind in ("-U", "-D")
        values = {c: row[c] for c in COLUMNS}
        if engine == "deduplicate":
            if retract:
                new.pop(key, None)
            else:
                new[key] = values
        elif engine == "partial-update":  # ignore-delete: retractions are dropped
            if not retract:
                cur = new.setdefault(key, {"dt": key[0], "id": key[1], "v": None, "m": None})
                for c in ("v", "m"):
                    if values[c] is not None:
                        cur[c] = values[c]
        elif engine == "aggregation":  # v: sum (retracts), m: max (ignore-retract)
            cur = new.setdefault(key, {"dt": key[0], "id": key[1], "v": None, "m": None})
            if values["v"] is not None:
                delta = -values["v"] if retract else values["v"]
                cur["v"] = delta if cur["v"] is None else cur["v"] + delta
            if not retract and values["m"] is not None:
                cur["m"] = values["m"] if cur["m"] is None else max(cur["m"], values["m"])
        elif engine == "first-row":  # ignore-delete
            if not retract and key not in new:
                new[key] = values
        else:
            raise AssertionError(engine)
    return new


# ---- consumers of the changelog -------------------------------------------------------------
def replay(changes: pa.Table, state: dict[Key, Row] | None = None, *, strict: bool = False) -> dict[Key, Row]:
    """Apply changelog rows in order: +I/+U set the row, -U/-D remove the key.

    ``strict``: the changelog must be exact (what lookup and full-compaction produce).
    """
    state = {k: dict(v) for k, v in (state or {}).items()}
    rows = changes.to_pylist()
    kinds = [row.pop("_row_kind") for row in rows]
    for i, (kind, row) in enumerate(zip(kinds, rows)):
        key = _key(row)
        where = f"changelog row {i} {kind} {row}"
        if kind in ("+I", "+U"):
            if strict:
                assert key not in state, f"{where}: the key is present ({state.get(key)})"
                if kind == "+U":
                    assert i and kinds[i - 1] == "-U" and _key(rows[i - 1]) == key, \
                        f"{where}: +U does not follow the -U of its key"
            state[key] = row
        elif kind in ("-U", "-D"):
            if strict:
                assert state.get(key) == row, f"{where}: retracts {row}, the key holds {state.get(key)}"
                if kind == "-U":
                    assert i + 1 < len(rows) and kinds[i + 1] == "+U" and _key(rows[i + 1]) == key, \
                        f"{where}: -U not followed by the +U of its key"
            state.pop(key, None)
        else:
            raise AssertionError(f"{where}: unknown row kind")
    return state


def running_sum(changes: pa.Table) -> int:
    """sum(v) as a downstream aggregate keeps it: +I/+U add v, -U/-D subtract v (null = 0)."""
    total = 0
    for kind, v in zip(changes.column("_row_kind").to_pylist(), changes.column("v").to_pylist()):
        total += (v or 0) * (1 if kind in ("+I", "+U") else -1)
    return total


def scanned(table: Table, **kw: Any) -> dict[Key, Row]:
    return {_key(r): r for r in table.scan(**kw).to_pylist()}


def scan_sum(table: Table) -> int:
    return sum(r["v"] or 0 for r in table.scan().to_pylist())


def assert_composes(table: Table, a: int, b: int, c: int) -> None:
    whole = table.changes(a, c).to_pylist()
    parts = table.changes(a, b).to_pylist() + table.changes(b, c).to_pylist()
    assert parts == whole, f"changes({a},{b}) + changes({b},{c}) != changes({a},{c})"


# ---- one random history -----------------------------------------------------------------------
def new_table(warehouse: str, producer: str, engine: str, extra: dict[str, str] | None = None) -> Table:
    table = Table.locate("db.t", warehouse=warehouse)
    options = {"bucket": "2", "changelog-producer": producer, **ENGINES[engine][0], **(extra or {})}
    create(table, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=options)
    return table


def batch(rows: list[Row]) -> pa.Table:
    return pa.table({
        "dt": pa.array([r["dt"] for r in rows], pa.string()),
        "id": pa.array([r["id"] for r in rows], pa.int64()),
        "v": pa.array([r["v"] for r in rows], pa.int32()),
        "m": pa.array([r["m"] for r in rows], pa.int32()),
        "op": pa.array([r["_kind"] for r in rows], pa.string()),
    })


def _dt(key: int) -> str:
    return "d1" if key % 2 else "d2"


def cdc_rows(state: dict[Key, Row], intents: list[tuple]) -> list[Row]:
    """Turn upserts/deletes into proper CDC against ``state`` (deduplicate): +I for a new key,
    -U(old) +U(new) for an existing one, -D(old) for a delete; deletes of absent keys vanish."""
    cur = {k: dict(v) for k, v in state.items()}
    out: list[Row] = []
    for op, k, v, m in intents:
        key = (_dt(k), k)
        new = {"dt": key[0], "id": k, "v": v, "m": m}
        if op == "put":
            if key in cur:
                out += [{**cur[key], "_kind": "-U"}, {**new, "_kind": "+U"}]
            else:
                out.append({**new, "_kind": "+I"})
            cur[key] = new
        elif key in cur:
            out.append({**cur.pop(key), "_kind": "-D"})
    return out


def no_lone_retractions(state: dict[Key, Row], rows: list[Row]) -> list[Row]:
    """aggregation: a retraction of a key that has no record yet becomes +I.

    A key whose only record is a retraction is that record, unmerged, as Paimon's
    ReducerMergeFunctionWrapper returns a lone record, so it reads as absent; but a full
    compaction drops it while a minor one may keep it for a later record to merge with, so
    the outcome depends on when compactions ran (see ``test_aggregation_lone_retraction``).
    """
    seen = set(state)
    out = []
    for row in rows:
        if row["_kind"] in ("-U", "-D") and _key(row) not in seen:
            row = {**row, "_kind": "+I"}
        seen.add(_key(row))
        out.append(row)
    return out


def run_history(producer: str, engine: str, ops: list[tuple], *, cdc: bool = False) -> None:
    """Apply ``ops`` to a fresh table and check (a), (b) and (c) along the way.

    ``ops``: ("write", rows) with rows (key, kind, v, m) -- or with ``cdc`` (op, key, v, m)
    intents turned into proper CDC --, ("full",) and ("minor",) compactions.
    """
    strict = producer in ("lookup", "full-compaction") or (producer == "input" and cdc)
    with tempfile.TemporaryDirectory() as warehouse:
        table = new_table(warehouse, producer, engine)
        model: dict[Key, Row] = {}
        for op in ops:
            checkpoint = producer in ("input", "lookup", "none")
            if op[0] == "write":
                if cdc:
                    rows = cdc_rows(model, op[1])
                else:
                    rows = [{"dt": _dt(k), "id": k, "v": v, "m": m, "_kind": kind} for k, kind, v, m in op[1]]
                    if engine == "aggregation":
                        rows = no_lone_retractions(model, rows)
                if not rows:
                    continue
                table.write(batch(rows), row_kind_column="op")
                model = apply_rows(model, rows, engine)
            else:
                table.compact(full=op[0] == "full")
                # full-compaction: a full compaction leaves every bucket at the top level, so
                # the changelog has caught up (also when there was nothing left to compact).
                checkpoint = checkpoint or (op[0] == "full" and producer == "full-compaction")
            latest = table.snapshots.latest_id()
            if latest is None:
                continue
            assert scanned(table) == model, "scan disagrees with the merge-engine model"
            if checkpoint:
                log = table.changes(0, latest)
                assert replay(log, strict=strict) == model, f"(a) replay of changes(0,{latest}) != scan"
                if strict:
                    assert running_sum(log) == scan_sum(table), f"(b) running sum of v at snapshot {latest}"
        latest = table.snapshots.latest_id()
        if latest is None:
            return
        # (c) every split point of (0, N], and of (N//2, N] (snapshot 0 does not exist, so
        # it is a start only).
        for a in sorted({0, latest // 2}):
            for b in range(max(a, 1), latest + 1):
                assert_composes(table, a, b, latest)
        # Snapshot by snapshot, the changes continue the replay of everything before them.
        state: dict[Key, Row] = {}
        for sid in range(1, latest + 1):
            state = replay(table.changes(sid - 1, sid), state, strict=strict)
        assert state == replay(table.changes(0, latest), strict=strict)


# ---- strategies ---------------------------------------------------------------------------------
VALUES = st.one_of(st.none(), st.integers(-5, 9))


def raw_ops(kinds: tuple[str, ...]) -> st.SearchStrategy[list[tuple]]:
    row = st.tuples(st.integers(0, 6), st.sampled_from(kinds), VALUES, VALUES)
    op = st.one_of(
        st.tuples(st.just("write"), st.lists(row, min_size=1, max_size=6)),
        st.tuples(st.just("write"), st.lists(row, min_size=1, max_size=6)),
        st.tuples(st.just("full")),
        st.tuples(st.just("minor")),
    )
    return st.lists(op, min_size=4, max_size=14)


CDC_INTENT = st.tuples(st.sampled_from(["put", "put", "delete"]), st.integers(0, 6), VALUES, VALUES)
CDC_OPS = st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(CDC_INTENT, min_size=1, max_size=6)),
    st.tuples(st.just("write"), st.lists(CDC_INTENT, min_size=1, max_size=6)),
    st.tuples(st.just("full")),
), min_size=4, max_size=14)

EXAMPLES = int(os.environ.get("LAKECTL_MODEL_EXAMPLES", "20"))
MODEL_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

EXACT_CASES = [(p, e) for p in ("lookup", "full-compaction") for e in ENGINES]


@pytest.mark.slow
@pytest.mark.parametrize("producer,engine", EXACT_CASES, ids=[f"{p}-{e}" for p, e in EXACT_CASES])
def test_exact_producers_model(producer: str, engine: str) -> None:
    @MODEL_SETTINGS
    @given(raw_ops(ENGINES[engine][1]))
    def check(ops: list[tuple]) -> None:
        run_history(producer, engine, ops)

    check()


@pytest.mark.slow
@MODEL_SETTINGS
@given(CDC_OPS)
def test_input_producer_with_cdc_input_model(ops: list[tuple]) -> None:
    run_history("input", "deduplicate", ops, cdc=True)


@pytest.mark.slow
@MODEL_SETTINGS
@given(raw_ops(ENGINES["deduplicate"][1]))
def test_input_producer_with_arbitrary_input_model(ops: list[tuple]) -> None:
    """Input that is not proper CDC (+U of a new key, -D of an absent one, several records
    of a key in one commit): the changelog is that input, and replaying it still gives the table."""
    run_history("input", "deduplicate", ops)


@pytest.mark.slow
@MODEL_SETTINGS
@given(raw_ops(ENGINES["deduplicate"][1]))
def test_no_producer_delta_replay_model(ops: list[tuple]) -> None:
    run_history("none", "deduplicate", ops)


# ---- fixed scenarios (fast, always run) -------------------------------------------------------
SCENARIO = [
    ("write", [(1, "+I", 1, 1), (2, "+I", 2, 2), (3, "+I", 3, 3), (4, "+I", 4, 4)]),
    ("write", [(1, "+U", 10, None), (2, "-D", 2, 2), (5, "+I", 5, 5), (5, "+U", 6, 0)]),
    ("full",),
    ("write", [(3, "-U", 3, 3), (3, "+U", 30, 7), (2, "+I", 20, None), (1, "-D", 10, 1)]),
    ("minor",),
    ("write", [(6, "+I", None, 6), (4, "+U", 4, 4)]),
    ("full",),
    ("write", [(1, "+I", 1, 1)]),
    ("full",),
]


@pytest.mark.parametrize("producer,engine", EXACT_CASES + [("input", "deduplicate"), ("none", "deduplicate")],
                         ids=[f"{p}-{e}" for p, e in EXACT_CASES] + ["input-deduplicate", "none-deduplicate"])
def test_changelog_scenario(producer: str, engine: str) -> None:
    kinds = ENGINES[engine][1]
    ops = [(op[0], [r for r in op[1] if r[1] in kinds]) if op[0] == "write" else op for op in SCENARIO]
    run_history(producer, engine, ops)


def test_input_producer_cdc_scenario() -> None:
    run_history("input", "deduplicate", [
        ("write", [("put", 1, 1, 1), ("put", 2, 2, 2), ("put", 1, 5, None)]),
        ("write", [("delete", 2, None, None), ("put", 3, 3, 3), ("put", 1, 7, 7)]),
        ("full",),
        ("write", [("delete", 1, None, None), ("put", 2, 9, 9)]),
    ], cdc=True)


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
@pytest.mark.parametrize("compact_between", [False, True])
def test_aggregation_lone_retraction(tmp_path: Path, producer: str, compact_between: bool) -> None:
    """A key whose only record is a -U reads as absent (a lone record is not merged, as in
    Paimon's ReducerMergeFunctionWrapper); a later +I merges with it (sum 7 - 3), unless a
    full compaction dropped it first. The changelog follows what the scan shows."""
    table = new_table(str(tmp_path), producer, "aggregation", {"write-only": "true"})
    _write(table, [(1, "-U", 3, 3), (2, "+I", 1, 1)])
    assert scanned(table) == {("d2", 2): {"dt": "d2", "id": 2, "v": 1, "m": 1}}
    if compact_between:
        table.compact(full=True)
    _write(table, [(1, "+I", 7, 2)])
    table.compact(full=True)
    want_v = 7 if compact_between else 4
    assert scanned(table)[("d1", 1)] == {"dt": "d1", "id": 1, "v": want_v, "m": 2}
    latest = table.snapshots.latest_id()
    log = table.changes(0, latest)
    assert replay(log, strict=True) == scanned(table)
    assert [r for r in log.to_pylist() if r["id"] == 1] == [
        {"_row_kind": "+I", "dt": "d1", "id": 1, "v": want_v, "m": 2}]


# ---- row-deduplicate --------------------------------------------------------------------------
def _write(table: Table, rows: list[tuple]) -> int:
    data = [{"dt": _dt(k), "id": k, "v": v, "m": m, "_kind": kind} for k, kind, v, m in rows]
    return table.write(batch(data), row_kind_column="op").snapshot_id


def _kinds(table: Table, start: int, end: int) -> list[tuple]:
    return [(r["_row_kind"], r["id"], r["v"]) for r in table.changes(start, end).to_pylist()]


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
@pytest.mark.parametrize("row_dedup", [None, "false", "true"])
def test_row_deduplicate(tmp_path: Path, producer: str, row_dedup: str | None) -> None:
    extra = {"changelog-producer.row-deduplicate": row_dedup} if row_dedup is not None else {}
    table = new_table(str(tmp_path), producer, "deduplicate", extra)

    def step(rows: list[tuple]) -> tuple[int, int]:
        """The write (and its compaction, whose snapshot carries the changelog): the range of
        snapshots it added."""
        start = table.latest_snapshot().id if table.latest_snapshot() is not None else 0
        _write(table, rows)
        if producer == "full-compaction":
            table.compact(full=True)
        return start, table.latest_snapshot().id

    start, end = step([(1, "+I", 1, 1), (2, "+I", 2, 2)])
    assert sorted(_kinds(table, start, end)) == [("+I", 1, 1), ("+I", 2, 2)]
    # Key 1 re-written with identical values, key 2 with a new one.
    start, end = step([(1, "+U", 1, 1), (2, "+U", 3, 2)])
    got = _kinds(table, start, end)
    changed = [("-U", 2, 2), ("+U", 2, 3)]
    if row_dedup == "true":
        assert got == changed, "row-deduplicate: no -U/+U for a key whose row did not change"
    else:
        assert sorted(got) == sorted([("-U", 1, 1), ("+U", 1, 1)] + changed)
    # A delete is still a -D with row-deduplicate.
    start, end = step([(1, "-D", None, None)])
    assert _kinds(table, start, end) == [("-D", 1, 1)]
    assert replay(table.changes(0, end), strict=True) == scanned(table)


# ---- snapshot fields, expire, orphan files -------------------------------------------------------
def _snapshot_json(table: Table, sid: int) -> dict:
    return json.loads((Path(table.path) / "snapshot" / f"snapshot-{sid}").read_text())


def changelog_paths(table: Table, sid: int) -> list[Path]:
    """The changelog files snapshot ``sid`` lists, as paths on disk."""
    snap = table.snapshots.snapshot(sid)
    if not snap.changelog_manifest_list:
        return []
    schema = table.schema
    out = []
    for e in read_entries(table.manifests(), [snap.changelog_manifest_list]):
        values = binary_row.decode(e.partition, [f.type for f in schema.partition_fields])
        part = partition_path(values, schema.partition_fields, schema.core_options.partition_default_name)
        out.append(Path(table.path) / part / f"bucket-{e.bucket}" / e.file.file_name)
    return out


def _history(producer: str) -> list[tuple]:
    return [
        ("write", [(1, "+I", 1, 1), (2, "+I", 2, 2), (3, "+I", 3, 3)]),
        ("write", [(1, "+U", 5, 5), (2, "-D", 2, 2), (4, "+I", 4, 4)]),
        ("full",),
        ("write", [(3, "+U", 6, 6), (5, "+I", 5, 5)]),
        ("full",),
        ("write", [(4, "-D", 4, 4), (6, "+I", 6, 6)]),
    ] + ([("full",)] if producer in ("full-compaction", "lookup") else [])


def _build(tmp_path: Path, producer: str) -> Table:
    table = new_table(str(tmp_path), producer, "deduplicate", {"write-only": "true"})
    for op in _history(producer):
        if op[0] == "write":
            _write(table, op[1])
        else:
            table.compact(full=True)
    return table


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction", "none"])
def test_snapshot_changelog_fields(tmp_path: Path, producer: str) -> None:
    table = _build(tmp_path, producer)
    with_changelog = 0
    for sid in range(1, table.snapshots.latest_id() + 1):
        raw = _snapshot_json(table, sid)
        rows = table.changes(sid - 1, sid).num_rows
        kind = raw["commitKind"]
        # input: the write's snapshot; lookup and full-compaction: the compaction's (the
        # table is write-only: its writes are compacted by the full compactions only)
        produces = producer == "input" and kind != COMPACT \
            or producer in ("lookup", "full-compaction") and kind == COMPACT
        if produces and rows:
            with_changelog += 1
            assert raw.get("changelogManifestList"), f"snapshot {sid}: no changelogManifestList"
            assert (Path(table.path) / "manifest" / raw["changelogManifestList"]).is_file()
            assert raw["changelogRecordCount"] == rows, f"snapshot {sid}"
            assert raw["changelogManifestListSize"] == \
                (Path(table.path) / "manifest" / raw["changelogManifestList"]).stat().st_size
            assert all(p.is_file() and p.name.startswith("changelog-") for p in changelog_paths(table, sid))
        else:
            assert raw.get("changelogManifestList") is None, f"snapshot {sid} ({kind}) has a changelog"
            assert raw.get("changelogRecordCount") in (None, 0)
    assert with_changelog >= (0 if producer == "none" else 2)
    if producer == "none":  # no changelog-* files anywhere
        assert not list(Path(table.path).rglob("changelog-*"))


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
def test_expire_deletes_changelog_files_of_expired_snapshots(tmp_path: Path, producer: str) -> None:
    table = _build(tmp_path, producer)
    latest = table.snapshots.latest_id()
    files = {sid: changelog_paths(table, sid) for sid in range(1, latest + 1)}
    expired_files = [p for sid in range(1, latest) for p in files[sid]]
    kept_files = files[latest]
    assert expired_files and all(p.is_file() for p in expired_files)
    before = scanned(table)
    last_changes = table.changes(latest - 1, latest).to_pylist()

    result = table.expire(retain_max=1, retain_min=1, dry_run=False)
    assert result.snapshots_expired == list(range(1, latest))
    assert table.snapshots.list_ids() == [latest]
    gone = [p for p in expired_files if p.exists()]
    assert not gone, f"changelog files of expired snapshots left behind: {gone}"
    assert all(p.is_file() for p in kept_files)
    assert scanned(table) == before
    assert table.changes(latest - 1, latest).to_pylist() == last_changes
    with pytest.raises(NotFoundError, match="expired"):
        table.changes(0, latest)
    assert not [p for p in Path(table.path).rglob("changelog-*") if p not in kept_files]


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
def test_remove_orphan_files_keeps_live_changelog_files(tmp_path: Path, producer: str) -> None:
    table = _build(tmp_path, producer)
    latest = table.snapshots.latest_id()
    live = [p for sid in range(1, latest + 1) for p in changelog_paths(table, sid)]
    assert live
    before_changes = table.changes(0, latest).to_pylist()
    before = scanned(table)
    # An unreferenced changelog file (a crashed writer's): it must go, the live ones stay.
    bucket_dir = live[0].parent
    stray = bucket_dir / "changelog-00000000-0000-0000-0000-000000000000-0.parquet"
    stray.write_bytes(live[0].read_bytes())
    os.utime(stray, (1, 1))
    for p in live:
        os.utime(p, (1, 1))  # as old as can be: age alone must not make them orphans

    result = remove_orphan_files(table, older_than="0s", force=True)
    assert [Path(p).name for p in result.paths] == [stray.name]
    assert not stray.exists()
    assert all(p.is_file() for p in live)
    assert table.changes(0, latest).to_pylist() == before_changes
    assert scanned(table) == before


def test_expire_keeps_changelog_files_a_tag_references(tmp_path: Path) -> None:
    table = _build(tmp_path, "lookup")
    latest = table.snapshots.latest_id()
    create_tag(table, "t3", snapshot_id=3)  # the first full compaction: the changelog of the two writes
    tagged = changelog_paths(table, 3)
    others = [p for sid in range(1, latest) if sid != 3 for p in changelog_paths(table, sid)]
    assert tagged and others
    table.expire(retain_max=1, retain_min=1, dry_run=False)
    assert table.snapshots.list_ids() == [latest]
    assert all(p.is_file() for p in tagged), "expire deleted changelog files a tag still references"
    assert not [p for p in others if p.exists()]
    remove_orphan_files(table, older_than="0s", force=True)
    assert all(p.is_file() for p in tagged), "remove-orphan-files deleted a tag's changelog files"


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_replay_across_an_overwrite(tmp_path: Path, producer: str) -> None:
    table = new_table(str(tmp_path), producer, "deduplicate")
    _write(table, [(1, "+I", 1, 1), (3, "+I", 3, 3), (2, "+I", 2, 2)])  # keys 1, 3 in d1; 2 in d2
    table.compact(full=True)
    data = [{"dt": "d1", "id": 1, "v": 10, "m": 10, "_kind": "+I"}]
    table.write(batch(data).drop_columns(["op"]), mode="overwrite")  # d1 now holds key 1 only
    table.compact(full=True)
    assert scanned(table) == {("d1", 1): {"dt": "d1", "id": 1, "v": 10, "m": 10},
                              ("d2", 2): {"dt": "d2", "id": 2, "v": 2, "m": 2}}
    # replayed as a follower reading overwrites (streaming-read-overwrite) reads the changelog;
    # incremental-between skips the OVERWRITE snapshot, as Paimon's batch read does
    from core.ops.changes import changes

    assert replay(changes(table, 0, table.snapshots.latest_id(), streaming=True)) == scanned(table)
