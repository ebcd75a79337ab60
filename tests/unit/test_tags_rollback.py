"""Tags and rollback on real tables under tmp_path.

Expected rows come from what each test wrote (a dict model keyed by primary key), never
from lakectl's readers; file checks look at the table directory directly.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from core.errors import CommitConflictError, NotFoundError, TagExistsError, UsageError
from core.ops.create import create
from core.ops.describe import live_files
from core.ops.rollback import RollbackResult, rollback
from core.ops.tags import create_tag, delete_tag, list_tags
from core.options import parse_duration
from core.table import Table

Row = dict[str, Any]


def make_table(tmp_path: Path, snapshots: int = 4) -> tuple[Table, list[list[Row]]]:
    """A partitioned PK table with ``snapshots`` commits; returns it and the rows of snapshot i+1."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id INT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    model: dict[tuple, Row] = {}
    states = []
    for i in range(snapshots):
        rows = [{"id": i, "v": f"v{i}", "dt": "a"}, {"id": 0, "v": f"u{i}", "dt": "b"}]
        t.write(pa.Table.from_pylist(rows, schema=pa.schema([("id", pa.int32()), ("v", pa.string()),
                                                             ("dt", pa.string())])))
        for r in rows:
            model[(r["id"], r["dt"])] = r
        states.append(sorted(model.values(), key=lambda r: (r["id"], r["dt"])))
    return t, states


def rows(data: pa.Table) -> list[Row]:
    return sorted(data.to_pylist(), key=lambda r: (r["id"], r["dt"]))


# ---- durations -----------------------------------------------------------------------------
@pytest.mark.parametrize("text,seconds", [("1d", 86400), ("7 d", 604800), ("12h", 43200), ("30min", 1800),
                                          ("10s", 10), ("500ms", 0.5), ("2 days", 172800), ("1500", 1.5)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "d", "1 fortnight", "-1d", "1d2h"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_duration(text, "--older-than")


# ---- tags ----------------------------------------------------------------------------------
def test_tag_file_is_the_snapshot_plus_tag_fields(tmp_path: Path) -> None:
    t, _ = make_table(tmp_path, 2)
    info = create_tag(t, "nightly", snapshot_id=1, time_retained="1d")
    assert (info.tag, info.snapshot_id, info.time_retained, info.record_count) == ("nightly", 1, 86400, 2)
    tag = json.loads(Path(t.tags.path("nightly")).read_text())
    snap = json.loads(Path(t.snapshots.path(1)).read_text())
    assert {k: v for k, v in tag.items() if not k.startswith("tag")} == snap
    assert tag["tagTimeRetained"] == 86400.0
    created = tag["tagCreateTime"]
    assert len(created) == 7 and all(isinstance(x, int) for x in created)
    moment = dt.datetime(*created[:6])
    assert abs((dt.datetime.now() - moment).total_seconds()) < 60  # local time, as Java's LocalDateTime
    # without a TTL there is no tagTimeRetained
    create_tag(t, "latest")
    assert "tagTimeRetained" not in json.loads(Path(t.tags.path("latest")).read_text())
    assert t.tags.snapshot("latest").id == 2


def test_tag_listing_and_scan(tmp_path: Path) -> None:
    t, states = make_table(tmp_path, 3)
    create_tag(t, "b", snapshot_id=2)
    create_tag(t, "a", snapshot_id=1, time_retained="7d")
    listed = list_tags(t)
    assert [(i.tag, i.snapshot_id, i.time_retained, i.record_count) for i in listed] == \
        [("a", 1, 604800, 2), ("b", 2, None, 4)]
    assert rows(t.scan(tag="a")) == states[0]
    assert rows(t.scan(tag="b")) == states[1]
    assert delete_tag(t, "a").tag == "a"
    assert [i.tag for i in list_tags(t)] == ["b"]
    with pytest.raises(NotFoundError):
        delete_tag(t, "a")
    with pytest.raises(NotFoundError):
        t.scan(tag="a")


def test_tag_errors(tmp_path: Path) -> None:
    t, _ = make_table(tmp_path, 2)
    create_tag(t, "x", snapshot_id=1)
    before = Path(t.tags.path("x")).read_bytes()
    with pytest.raises(TagExistsError):
        create_tag(t, "x", snapshot_id=2)
    assert Path(t.tags.path("x")).read_bytes() == before
    with pytest.raises(NotFoundError):
        create_tag(t, "y", snapshot_id=9)
    for bad in ("", " ", "a/b", "..", "12"):
        with pytest.raises(UsageError):
            create_tag(t, bad, snapshot_id=1)
    with pytest.raises(UsageError):
        create_tag(t, "z", time_retained="soon")
    assert not t.tags.exists("z") and not t.tags.exists("y")
    empty = Table.locate("db.e", warehouse=str(tmp_path / "wh"))
    create(empty, "id INT")
    with pytest.raises(NotFoundError):
        create_tag(empty, "x")


def test_racing_tag_creators_one_wins(tmp_path: Path) -> None:
    t, _ = make_table(tmp_path, 2)
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def go(i: int) -> None:
        barrier.wait()
        try:
            create_tag(t, "race", snapshot_id=1 + i % 2)
            outcomes.append("won")
        except TagExistsError:
            outcomes.append("lost")

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    assert [p.name for p in Path(t.tags.dir).iterdir()] == ["tag-race"]  # no temp file left


# ---- rollback ------------------------------------------------------------------------------
def test_rollback_to_snapshot(tmp_path: Path) -> None:
    t, states = make_table(tmp_path, 4)
    create_tag(t, "keep", snapshot_id=2)
    create_tag(t, "gone", snapshot_id=3)
    data_before = sorted(p.name for p in Path(t.path).rglob("data-*"))
    preview = rollback(t, snapshot_id=2, dry_run=True)
    assert preview == RollbackResult("db.t", "main", 2, (4, 3), ("gone",), True)
    assert t.snapshots.list_ids() == [1, 2, 3, 4] and t.tags.names() == ["gone", "keep"]
    assert t.rollback(snapshot_id=2).dry_run  # the Python facade defaults to a dry run
    result = rollback(t, snapshot_id=2)
    assert result == RollbackResult("db.t", "main", 2, (4, 3), ("gone",), False)
    assert t.snapshots.list_ids() == [1, 2]
    assert Path(t.snapshots.dir, "LATEST").read_text() == "2"
    assert t.tags.names() == ["keep"]
    assert rows(t.scan()) == states[1]
    # data files stay for remove-orphan-files
    assert sorted(p.name for p in Path(t.path).rglob("data-*")) == data_before
    # the next write commits snapshot 3 on top of 2
    t.write(pa.table({"id": pa.array([7], pa.int32()), "v": ["w"], "dt": ["a"]}))
    assert t.snapshots.list_ids() == [1, 2, 3]
    assert rows(t.scan()) == sorted(states[1] + [{"id": 7, "v": "w", "dt": "a"}], key=lambda r: (r["id"], r["dt"]))
    assert rows(t.scan(snapshot_id=2)) == states[1]


def test_rollback_to_latest_is_a_no_op(tmp_path: Path) -> None:
    t, states = make_table(tmp_path, 2)
    assert rollback(t, snapshot_id=2) == RollbackResult("db.t", "main", 2, (), (), False)
    assert rows(t.scan()) == states[1]


def test_rollback_to_tag(tmp_path: Path) -> None:
    t, states = make_table(tmp_path, 3)
    create_tag(t, "one", snapshot_id=1)
    result = rollback(t, tag="one")
    assert (result.target_snapshot_id, result.snapshots_removed) == (1, (3, 2))
    assert rows(t.scan()) == states[0] and t.tags.names() == ["one"]


def test_rollback_to_tag_whose_snapshot_expired(tmp_path: Path) -> None:
    t, states = make_table(tmp_path, 4)
    create_tag(t, "two", snapshot_id=2)
    snap2 = json.loads(Path(t.snapshots.path(2)).read_text())
    for sid in (1, 2):  # expire by hand: the data stays (the tag pins it)
        Path(t.snapshots.path(sid)).unlink()
    Path(t.snapshots.dir, "EARLIEST").write_text("3")
    with pytest.raises(NotFoundError):
        rollback(t, snapshot_id=2)
    result = rollback(t, tag="two")
    assert result.snapshots_removed == (4, 3) and result.target_snapshot_id == 2
    assert t.snapshots.list_ids() == [2]
    assert json.loads(Path(t.snapshots.path(2)).read_text()) == snap2  # no tag fields in the snapshot
    assert Path(t.snapshots.dir, "EARLIEST").read_text() == "2"
    assert Path(t.snapshots.dir, "LATEST").read_text() == "2"
    assert rows(t.scan()) == states[1]
    t.write(pa.table({"id": pa.array([9], pa.int32()), "v": ["z"], "dt": ["b"]}))
    assert t.snapshots.list_ids() == [2, 3]


def test_rollback_errors(tmp_path: Path) -> None:
    t, _ = make_table(tmp_path, 3)
    with pytest.raises(CommitConflictError):
        rollback(t, snapshot_id=1, if_latest=2)
    with pytest.raises(NotFoundError, match="snapshot 5 does not exist: the latest snapshot is 3"):
        rollback(t, snapshot_id=5)
    with pytest.raises(UsageError):
        rollback(t)
    with pytest.raises(UsageError):
        rollback(t, snapshot_id=1, tag="x")
    with pytest.raises(NotFoundError):
        rollback(t, tag="x")
    Path(t.snapshots.path(1)).unlink()
    with pytest.raises(NotFoundError):
        rollback(t, snapshot_id=1)
    assert t.snapshots.list_ids() == [2, 3]
    assert rollback(t, snapshot_id=2, if_latest=3).snapshots_removed == (3,)


def test_live_files(tmp_path: Path) -> None:
    t, _ = make_table(tmp_path, 2)
    files = live_files(t, 1)
    assert sorted((tuple(f.partition.items()), f.row_count) for f in files) == [((("dt", "a"),), 1),
                                                                                ((("dt", "b"),), 1)]
    assert len(live_files(t)) == 4 == len(t.files())
    on_disk = {p.name: p.stat().st_size for p in Path(t.path).rglob("data-*")}
    for f in live_files(t):
        assert on_disk[f.file_name] == f.file_size
        assert Path(t.path, f"dt={f.partition['dt']}", f"bucket-{f.bucket}", f.file_name).is_file()
        assert (f.level, f.schema_id) == (0, 0) and f.min_sequence_number <= f.max_sequence_number
    with pytest.raises(NotFoundError):
        live_files(t, 7)


# ---- crashes -------------------------------------------------------------------------------
LAKECTL = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "lakectl"


def run_cli(*args: str, kill_after: int | None, home: Path) -> "subprocess.CompletedProcess[str]":
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["HOME"] = str(home)
    if kill_after is not None:
        env["LAKECTL_KILL_AFTER_WRITES"] = str(kill_after)
    return subprocess.run([str(LAKECTL), *args], env=env, capture_output=True, text=True, timeout=120)


def check_consistent(t: Table, states: list[list[Row]], tag_ids: dict[str, int]) -> None:
    """The latest snapshot and every remaining snapshot and tag scan as they were committed."""
    latest = t.snapshots.latest_id()
    assert latest is not None
    assert rows(t.scan()) == states[latest - 1]
    for sid in t.snapshots.list_ids():
        assert rows(t.scan(snapshot_id=sid)) == states[sid - 1]
    for name in t.tags.names():
        assert rows(t.scan(tag=name)) == states[tag_ids[name] - 1]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["snapshot", "expired-tag"])
def test_rollback_killed_at_every_step(tmp_path: Path, target: str) -> None:
    src, states = make_table(tmp_path / "src", 5)
    tag_ids = {"two": 2, "four": 4, "five": 5}
    for name, sid in tag_ids.items():
        create_tag(src, name, snapshot_id=sid)
    if target == "expired-tag":
        for sid in (1, 2):
            Path(src.snapshots.path(sid)).unlink()
        args = ["--tag", "two"]
    else:
        args = ["--snapshot-id", "2"]
    k = 1
    while True:
        work = tmp_path / f"k{k}"
        shutil.copytree(tmp_path / "src" / "wh", work / "wh")
        t = Table.open("db.t", warehouse=str(work / "wh"))
        proc = run_cli("-w", str(work / "wh"), "rollback", "db.t", *args, kill_after=k, home=tmp_path)
        assert proc.returncode in (0, -9), proc.stderr
        check_consistent(t, states, tag_ids)
        if proc.returncode == 0:
            break
        rerun = run_cli("-w", str(work / "wh"), "rollback", "db.t", *args, kill_after=None, home=tmp_path)
        assert rerun.returncode == 0, rerun.stderr
        assert t.snapshots.latest_id() == 2 and t.tags.names() == ["two"]
        check_consistent(t, states, tag_ids)
        t.write(pa.table({"id": pa.array([50], pa.int32()), "v": ["n"], "dt": ["a"]}))
        assert t.snapshots.latest_id() == 3
        shutil.rmtree(work)
        k += 1
    assert k >= 5  # three snapshots and two tags to remove: every one was a kill point
    assert t.snapshots.list_ids() == ([1, 2] if target == "snapshot" else [2])
