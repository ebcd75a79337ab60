"""``LAKECTL_FAULT_TRACE``: one numbered line per storage mutation, numbered as
``LAKECTL_FAULT=...:mutation:N`` counts, so that the stall explorer (tests/explore) can count a
command's mutation points and say where a stall stopped it; and the fault points of the
mutations that had none (a directory made on its own)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from core import fileio
from core.fileio import FileIO, inject_fault
from core.ops.create import create
from core.table import Table

REPO = Path(__file__).resolve().parents[2]
LAKECTL = Path(sys.executable).parent / "lakectl"


def _table(root: Path) -> Table:
    t = Table.locate("db.t", warehouse=str(root / "wh"))
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2"})
    return Table.open("db.t", warehouse=str(root / "wh"))


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids],
                     "dt": ["a" if i % 2 else "b" for i in ids]})


@pytest.fixture
def traced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "trace"
    monkeypatch.setattr(fileio, "_trace", fileio._Trace(str(out)))
    return out


def _lines(trace: Path) -> list[tuple[int, str, str]]:
    out = []
    for line in trace.read_text().splitlines():
        n, kind, path = line.split(" ", 2)
        out.append((int(n), kind, path))
    return out


def test_a_write_traces_each_mutation_in_the_order_mutation_faults_count_them(tmp_path: Path, traced: Path) -> None:
    t = _table(tmp_path)
    traced.unlink(missing_ok=True)  # the create's lines
    fileio._trace.seen = 0
    with inject_fault("fail", "mutation", 10_000) as fault:
        t.write(_rows(1, 2))
    lines = _lines(traced)
    assert [n for n, _, _ in lines] == list(range(1, fault.seen + 1))
    table_dir = Path(t.path)
    # Two partitions' data files, then the manifests, the snapshot and its LATEST hint: the
    # snapshot's create is the point of publication and the hints come after it.
    kinds = [kind for _, kind, _ in lines]
    assert kinds[:2] == ["write", "write"] and {p.split("/")[-3] for _, _, p in lines[:2]} == {"dt=a", "dt=b"}
    # The first commit's own expire then writes the EARLIEST hint the new table lacks, last.
    # On a local disk the publish and its checks sit inside the commit's busy marker
    # (core/busy.py), which a local rename or drop waits for.
    assert lines[-1][1:] == ("hint", str(table_dir / "snapshot" / "EARLIEST"))
    assert lines[-2][1:] == ("hint", str(table_dir / "snapshot" / "LATEST"))
    assert lines[-4][1:] == ("create", str(table_dir / "snapshot" / "snapshot-1"))
    busy = [(kind, p) for _, kind, p in (lines[-5], lines[-3])]
    assert [kind for kind, _ in busy] == ["create", "delete"] and busy[0][1] == busy[1][1]
    assert Path(busy[0][1]).parent == table_dir and Path(busy[0][1]).name.startswith(".lakectl-busy-")


def test_every_mutating_fileio_method_is_a_traced_fault_point(tmp_path: Path, traced: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    a, b = str(tmp_path / "d" / "a"), str(tmp_path / "d" / "b")
    calls = [
        ("mkdir", lambda: io.mkdirs(str(tmp_path / "m"))),
        ("write", lambda: io.write_bytes(a, b"1")),
        ("create", lambda: io.try_create(b, b"2")),
        ("copy", lambda: io.copy(a, str(tmp_path / "d" / "c"))),
        ("hint", lambda: io.overwrite_hint(str(tmp_path / "d" / "LATEST"), "1")),
        ("delete", lambda: io.delete(a)),
        ("rename", lambda: io.rename_dir(str(tmp_path / "m"), str(tmp_path / "n"))),
        ("rmdir", lambda: io.remove_empty_dir(str(tmp_path / "n"))),
        ("rmtree", lambda: io.delete_tree(str(tmp_path / "d"))),
    ]
    for kind, call in calls:
        with inject_fault("fail", "mutation", 1) as fault:
            with pytest.raises(OSError, match="injected fault"):
                call()
        assert fault.seen == 1, kind
        call()  # now for real
    assert [kind for _, kind, _ in _lines(traced)] == [k for k, _ in calls for _ in (0, 1)]
    assert not (tmp_path / "d").exists() and not (tmp_path / "n").exists()


def test_a_directory_made_is_not_counted_by_any(tmp_path: Path) -> None:
    """``any`` counts what it always counted: the new mkdir point is a mutation only."""
    io = FileIO.for_uri(str(tmp_path))
    with inject_fault("fail", "any", 1) as fault:
        io.mkdirs(str(tmp_path / "m"))
    assert fault.seen == 0 and (tmp_path / "m").is_dir()


@pytest.mark.skipif(not LAKECTL.exists(), reason="the lakectl console script is not installed")
def test_a_stalled_console_script_names_the_traced_mutation_it_stopped_before(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for var in ("LAKECTL_FAULT", "LAKECTL_STALL_FILE", "LAKECTL_FAULT_TRACE"):
        env.pop(var, None)
    wh = str(tmp_path / "wh")
    base = [str(LAKECTL), "-q", "-w", wh]
    subprocess.run([*base, "create", "db.t", "--schema", "id BIGINT, v STRING"], env=env, check=True)
    data = tmp_path / "in.csv"
    data.write_text("id,v\n1,a\n")
    dry = tmp_path / "dry"
    subprocess.run([*base, "write", "db.t", "-i", str(data)], env={**env, "LAKECTL_FAULT_TRACE": str(dry)}, check=True)
    traced = _lines(dry)
    point = next(n for n, kind, p in traced if kind == "create" and "/snapshot/" in p)  # the publication
    stall = tmp_path / "stall"
    proc = subprocess.Popen([*base, "write", "db.t", "-i", str(data)], stderr=subprocess.DEVNULL,
                            env={**env, "LAKECTL_FAULT": f"stall:mutation:{point}", "LAKECTL_STALL_FILE": str(stall)})
    try:
        deadline = time.monotonic() + 60
        while not stall.exists() or not stall.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "the write did not stall"
            time.sleep(0.01)
        said = stall.read_text()
        assert f"mutation #{point}: create " in said and said.rstrip().endswith("/snapshot/snapshot-2"), said
        assert not (tmp_path / "wh" / "db.db" / "t" / "snapshot" / "snapshot-2").exists()
    finally:
        stall.unlink(missing_ok=True)
    assert proc.wait(60) == 0


def test_a_fault_range_faults_each_operation_in_it_and_no_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``LAKECTL_FAULT=fail:write:2-3`` fails the second and third writes only (how a test
    holds two threads of one process still at once); a malformed range is refused."""
    monkeypatch.setenv("LAKECTL_FAULT", "fail:write:2-3")
    monkeypatch.setattr(fileio, "_fault", fileio._fault_from_env())
    io = FileIO.for_uri(str(tmp_path))
    outcomes = []
    for i in range(1, 6):
        try:
            io.write_bytes(str(tmp_path / f"f{i}"), b"x")
            outcomes.append(True)
        except OSError:
            outcomes.append(False)
    assert outcomes == [True, False, False, True, True]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f1", "f4", "f5"]
    for bad in ("fail:write:2-", "fail:write:-3", "fail:write:a-3"):
        monkeypatch.setenv("LAKECTL_FAULT", bad)
        with pytest.raises(fileio.UsageError, match="N-M"):
            fileio._fault_from_env()
