"""remove-orphan-files on real tables under tmp_path, with orphans made the way they happen:
writes SIGKILLed part-way (the console script with LAKECTL_KILL_AFTER_WRITES) and rollbacks.

Expected orphans are the files those failed writes and rolled-back commits added to the
directory (a before/after listing), never what lakectl's own reference walk says. File ages
are set with os.utime, so "old" and "fresh" need no waiting.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.errors import CorruptMetadataError, UsageError
from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.rollback import rollback
from core.ops.tags import create_tag
from core.table import Table

LAKECTL = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "lakectl"
SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string()), ("dt", pa.string())])
HOUR = 3600


def batch(i: int, dt: str = "a") -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "v": f"v{i}", "dt": dt}, {"id": i + 100, "v": f"w{i}", "dt": "b"}],
                                schema=SCHEMA)


def listing(table: Table) -> set[str]:
    """Every file of the table outside snapshot/ (relative paths)."""
    root = Path(table.path)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
            and not str(p.relative_to(root)).startswith("snapshot/")}


def age(table: Table, seconds: float) -> None:
    """Make every file under the table look ``seconds`` old."""
    when = time.time() - seconds
    for p in Path(table.path).rglob("*"):
        if p.is_file():
            os.utime(p, (when, when))


def killed_write(table: Table, warehouse: Path, data: pa.Table, kill_after: int, tmp_path: Path) -> None:
    """Run ``lakectl write`` in a subprocess that SIGKILLs itself before its k-th file mutation."""
    src = tmp_path / f"in-{kill_after}-{time.monotonic_ns()}.parquet"
    pq.write_table(data, src)
    env = {**os.environ, "LAKECTL_KILL_AFTER_WRITES": str(kill_after), "HOME": str(tmp_path)}
    proc = subprocess.run([str(LAKECTL), "-w", str(warehouse), "write", table.name, "--input", str(src)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, f"write was not killed (exit {proc.returncode}): {proc.stderr}"


def scans(table: Table) -> dict[str, Any]:
    """Rows of every snapshot and tag, sorted."""
    out: dict[str, Any] = {}
    for sid in table.snapshots.list_ids():
        out[f"s{sid}"] = sorted(table.scan(snapshot_id=sid).to_pylist(), key=lambda r: (r["id"], r["dt"]))
    for name in table.tags.names():
        out[f"t:{name}"] = sorted(table.scan(tag=name).to_pylist(), key=lambda r: (r["id"], r["dt"]))
    return out


def build(tmp_path: Path) -> tuple[Table, set[str]]:
    """A table with snapshots, a tag on an old snapshot, a compaction, killed writes and a
    rolled-back commit; returns it and the files the failures left behind."""
    warehouse = tmp_path / "wh"
    t = Table.locate("db.t", warehouse=str(warehouse))
    create(t, "id INT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    t.write(batch(1))
    t.write(batch(2))
    create_tag(t, "first", snapshot_id=1)
    t.compact(full=True)  # snapshot 3 deletes the files of 1-2; the tag and snapshots 1-2 still need them
    t.write(batch(3))
    before = listing(t)
    # One data file in a new partition: only dt=c rows, since the local engine writes groups on
    # parallel threads and a second partition could take the one write before the kill.
    only_c = pa.Table.from_pylist([{"id": 4, "v": "v4", "dt": "c"}], schema=SCHEMA)
    killed_write(t, warehouse, only_c, 2, tmp_path)
    killed_write(t, warehouse, batch(5), 5, tmp_path)  # data files, maybe a manifest
    t.write(batch(6))  # snapshot 5, rolled back below
    rollback(t, snapshot_id=4)
    orphans = listing(t) - before
    assert any(o.startswith("dt=c/") for o in orphans) and any(o.startswith("manifest/") for o in orphans)
    return t, orphans


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    base = tmp_path_factory.mktemp("orphans")
    t, orphans = build(base)
    return base, orphans


@pytest.fixture
def table(template: tuple[Path, set[str]], tmp_path: Path) -> tuple[Table, set[str]]:
    base, orphans = template
    shutil.copytree(base / "wh", tmp_path / "wh")  # copy2 keeps modification times
    return Table.open("db.t", warehouse=str(tmp_path / "wh")), orphans


def test_fresh_orphans_are_kept(table: tuple[Table, set[str]]) -> None:
    t, orphans = table
    before = listing(t)
    result = remove_orphan_files(t, older_than="1h")
    assert (result.files, result.paths) == (0, ())
    assert listing(t) == before


def test_old_orphans_are_removed_and_every_snapshot_and_tag_still_scans(table: tuple[Table, set[str]]) -> None:
    t, orphans = table
    expected_scans = scans(t)
    age(t, 2 * HOUR)
    before = listing(t)
    preview = remove_orphan_files(t, older_than="1h", dry_run=True)
    assert listing(t) == before  # a dry run deletes nothing
    assert {str(Path(p).relative_to(t.path)) for p in preview.paths} == orphans
    assert preview.bytes == sum(Path(t.path, o).stat().st_size for o in orphans)
    result = remove_orphan_files(t, older_than="1h")
    assert not result.dry_run and result.files == len(orphans) and set(result.paths) == set(preview.paths)
    assert listing(t) == before - orphans
    assert not Path(t.path, "dt=c").exists()  # the emptied partition directory is gone
    assert scans(t) == expected_scans
    for sid in t.snapshots.list_ids():  # every referenced data file is still there
        for f in t.files(snapshot_id=sid):
            assert Path(t.path, f"dt={f.partition['dt']}", f"bucket-{f.bucket}", f.file_name).is_file()
    assert remove_orphan_files(t, older_than="1h").files == 0  # nothing left to do


def test_files_a_tag_pins_are_kept_after_the_snapshot_is_gone(table: tuple[Table, set[str]]) -> None:
    t, orphans = table
    tag_rows = scans(t)["t:first"]
    for sid in (1, 2):  # expire by hand; only the tag references snapshot 1's files now
        Path(t.snapshots.path(sid)).unlink()
    age(t, 2 * HOUR)
    remove_orphan_files(t, older_than="1h")
    assert sorted(t.scan(tag="first").to_pylist(), key=lambda r: (r["id"], r["dt"])) == tag_rows
    # without the tag those files are orphans too
    t.tags.delete("first")
    live = {f.file_name for sid in t.snapshots.list_ids() for f in t.files(snapshot_id=sid)}
    result = remove_orphan_files(t, older_than="1h")
    assert result.files > 0 and not {Path(p).name for p in result.paths} & live
    assert {p.name for p in Path(t.path).rglob("data-*")} == live


def test_metadata_directories_are_never_touched(table: tuple[Table, set[str]]) -> None:
    t, _ = table
    root = Path(t.path)
    strays = {
        "snapshot/.snapshot-9.0123abcd.tmp": True,  # a commit killed before its link: removable
        "snapshot/.LATEST.0123abcd.tmp": True,
        "schema/.schema-7.0123abcd.tmp": False,
        "tag/.tag-x.0123abcd.tmp": False,
        "consumer/consumer-x": False,
        "branch/branch-b/snapshot/snapshot-1": False,
        "changelog/changelog-3": False,
    }
    for rel in strays:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    # A branch's snapshots are read (they pin the table's files): that one must be readable.
    (root / "branch/branch-b/snapshot/snapshot-1").write_bytes((root / "snapshot" / "snapshot-1").read_bytes())
    # So are long-lived changelogs (decoupled changelog retention): a readable one too.
    (root / "changelog/changelog-3").write_bytes((root / "snapshot" / "snapshot-1").read_bytes())
    age(t, 2 * HOUR)
    remove_orphan_files(t, older_than="1h")
    for rel, removable in strays.items():
        assert (root / rel).exists() != removable, rel
    for name in ("LATEST", "EARLIEST", "snapshot-1"):
        assert (root / "snapshot" / name).exists() or name == "EARLIEST"
    assert (root / "schema" / "schema-0").exists()


def test_unreadable_metadata_deletes_nothing(table: tuple[Table, set[str]]) -> None:
    t, _ = table
    Path(t.tags.dir, "tag-broken").write_text("{not json")
    age(t, 2 * HOUR)
    before = listing(t)
    with pytest.raises(CorruptMetadataError):
        remove_orphan_files(t, older_than="1h")
    assert listing(t) == before


def test_bad_duration_is_a_usage_error(table: tuple[Table, set[str]]) -> None:
    with pytest.raises(UsageError):
        remove_orphan_files(table[0], older_than="yesterday")


def test_python_facade_defaults_to_dry_run(table: tuple[Table, set[str]]) -> None:
    t, orphans = table
    age(t, 2 * HOUR)
    before = listing(t)
    assert t.remove_orphan_files(older_than="1h").files == len(orphans)
    assert listing(t) == before


# ---- crashes -------------------------------------------------------------------------------
def run_cli(*args: str, kill_after: int | None = None, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env["HOME"] = str(home)
    if kill_after is not None:
        env["LAKECTL_KILL_AFTER_WRITES"] = str(kill_after)
    return subprocess.run([str(LAKECTL), *args], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_remove_orphan_files_killed_at_every_step(template: tuple[Path, set[str]], tmp_path: Path) -> None:
    base, orphans = template
    src = tmp_path / "src"
    shutil.copytree(base / "wh", src / "wh")
    t0 = Table.open("db.t", warehouse=str(src / "wh"))
    age(t0, 2 * HOUR)
    expected_scans = scans(t0)
    final = listing(t0) - orphans
    k = 1
    while True:
        work = tmp_path / f"k{k}"
        shutil.copytree(src / "wh", work / "wh")
        t = Table.open("db.t", warehouse=str(work / "wh"))
        proc = run_cli("-w", str(work / "wh"), "remove-orphan-files", "db.t", "--older-than", "1h",
                       kill_after=k, home=tmp_path)
        assert proc.returncode in (0, -9), proc.stderr
        assert scans(t) == expected_scans, f"killed before mutation {k}"
        assert final <= listing(t) <= final | orphans
        if proc.returncode == 0:
            break
        rerun = run_cli("-w", str(work / "wh"), "remove-orphan-files", "db.t", "--older-than", "1h", home=tmp_path)
        assert rerun.returncode == 0, rerun.stderr
        assert listing(t) == final and scans(t) == expected_scans
        shutil.rmtree(work)
        k += 1
    assert k > len(orphans)  # every deletion was a kill point


# ---- the age floor -------------------------------------------------------------------------
@pytest.mark.parametrize("older_than", ["0s", "1ms", "59min", "3599s"])
def test_an_age_under_an_hour_is_refused_and_deletes_nothing(table: tuple[Table, set[str]], older_than: str) -> None:
    """A commit writes its files before it publishes the snapshot that references them: an age
    under one hour could delete a running write's files, so it is refused (dry run too)."""
    t, orphans = table
    age(t, 30 * 60)  # every orphan 30 minutes old: each age above would take them all
    before = listing(t)
    for dry_run in (True, False):
        with pytest.raises(UsageError) as refused:
            remove_orphan_files(t, older_than=older_than, dry_run=dry_run)
        message = str(refused.value)
        assert "--older-than" in message and "1h floor" in message and "--force" in message
        assert "before it publishes the snapshot" in message and "\n" not in message
    assert listing(t) == before


def test_force_goes_under_the_floor_and_one_hour_is_allowed(table: tuple[Table, set[str]]) -> None:
    t, orphans = table
    age(t, 30 * 60)
    assert remove_orphan_files(t, older_than="1h").files == 0  # the floor itself: allowed, nothing that old
    result = remove_orphan_files(t, older_than="10min", force=True)
    assert result.older_than == 600
    assert {os.path.relpath(p, t.path) for p in result.paths} == orphans
    assert not listing(t) & orphans
