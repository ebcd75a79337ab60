"""``lakectl migrate`` through the installed console script: directories of Parquet and ORC
files (flat and Hive-partitioned, written here with pyarrow) become append tables that
``lakectl scan`` reads exactly as ``pyarrow.dataset`` reads the source (partition columns as
strings); copies leave the source byte-identical, ``--in-place`` leaves no source file; the
refusals; and a kill at every mutation point, after which the source or the table is whole
and a re-run finishes the migration."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = shutil.which("lakectl", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(SCRIPT is None, reason="the lakectl console script is not installed")


def lakectl(wh: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    env = {**clean, "PYTHONPATH": str(REPO), "HOME": str(wh.parent), "NO_COLOR": "1"}
    if fault:
        env["LAKECTL_FAULT"] = fault
    return subprocess.run([str(SCRIPT), "-w", str(wh), *args], capture_output=True, text=True, timeout=120, env=env)


def ok(wh: Path, *args: str) -> Any:
    done = lakectl(wh, *args, "-f", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def rows(i: int) -> pa.Table:
    """Three rows of several types (nested too), ``i`` making each file's values its own."""
    return pa.table({
        "id": pa.array([i, i + 1, None], pa.int64()),
        "name": [f"n{i}", "", None],
        "price": pa.array([decimal.Decimal(f"{i}.25"), None, decimal.Decimal("-3.50")], pa.decimal128(12, 2)),
        "at": pa.array([dt.datetime(2024, 1, 1, 2, 3, 4, 5000 + i), None, dt.datetime(1999, 12, 31)],
                       pa.timestamp("us")),
        "day": pa.array([dt.date(2024, 2, 1) + dt.timedelta(days=i), dt.date(1970, 1, 1), None]),
        "point": pa.array([{"x": i, "label": "p"}, None, {"x": None, "label": "r"}]),  # (Java reads a ROW of nulls as null)
        "tags": pa.array([[1, 2], [], None], pa.list_(pa.int32())),
    })


def make_source(root: Path, fmt: str, partitions: list[tuple[str, ...]], keys: tuple[str, ...] = (),
                **parquet_options: Any) -> Path:
    """One file per partition (two in the first), the partition values only in directory names;
    Parquet written with pyarrow's defaults unless ``parquet_options`` say otherwise."""
    for n, values in enumerate(partitions):
        directory = root.joinpath(*(f"{k}={v}" for k, v in zip(keys, values)))
        directory.mkdir(parents=True, exist_ok=True)
        for m in range(2 if n == 0 else 1):
            table = rows(10 * n + m)
            name = directory / f"part-{m}.{fmt}"
            pq.write_table(table, name, **parquet_options) if fmt == "parquet" else orc.write_table(table, name)
    return root


def source_rows(root: Path, fmt: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """The source as pyarrow.dataset reads it (partition columns as strings), in lakectl's
    JSON values, sorted."""
    partitioning = ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive") if keys else None
    table = ds.dataset(str(root), format=fmt, partitioning=partitioning).to_table()
    return normal(table.to_pylist())


def normal(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from core.text_values import json_value

    return sorted((json.loads(json.dumps({k: json_value(v) for k, v in r.items()})) for r in records),
                  key=lambda r: json.dumps(r, sort_keys=True))


def scanned(wh: Path, table: str) -> list[dict[str, Any]]:
    return normal(ok(wh, "scan", table))


def snapshot_of(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_a_partitioned_copy_scans_as_pyarrow_reads_the_source_which_stays_as_it_was(tmp_path: Path, fmt: str) -> None:
    keys = ("dt", "hour")
    src = make_source(tmp_path / "src", fmt, [("2024-01-01", "0"), ("2024-01-01", "1"), ("2024-01-02", "0")], keys)
    (src / "_SUCCESS").write_bytes(b"")  # Hive's marker, not data
    before = snapshot_of(src)
    wh = tmp_path / "wh"
    result = ok(wh, "migrate", str(src), "db.t")
    assert (result["table"], result["snapshot_id"], result["files_added"], result["records_added"],
            result["partitions_added"], result["mode"], result["file_format"]) == ("db.t", 1, 4, 12, 3, "copy", fmt)
    assert result["bytes_added"] == sum(len(b) for name, b in before.items() if name.endswith(fmt))
    expected = source_rows(src, fmt, keys)
    assert scanned(wh, "db.t") == expected
    # the files hold no partition column: a read of those alone, or filtered on them, still
    # gets them (and every row) from the partition
    assert normal(ok(wh, "scan", "db.t", "--select", "dt,hour")) == \
        normal([{"dt": r["dt"], "hour": r["hour"]} for r in expected])
    assert normal(ok(wh, "scan", "db.t", "--where", "hour = '1' and id = 10")) == \
        [r for r in expected if r["hour"] == "1" and r["id"] == 10]
    assert snapshot_of(src) == before
    described = ok(wh, "describe", "db.t")
    assert described["partition_keys"] == list(keys) and described["options"]["file.format"] == fmt
    assert described["options"]["bucket"] == "-1"
    files = ok(wh, "files", "db.t")
    assert sorted(f["record_count"] for f in files) == [3, 3, 3, 3]
    assert all(f["level"] == 0 for f in files)


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_in_place_moves_every_file_and_leaves_no_source_directory(tmp_path: Path, fmt: str) -> None:
    keys = ("region",)
    src = make_source(tmp_path / "src", fmt, [("eu",), ("us",), ("a b",)], keys)
    expected = source_rows(src, fmt, keys)
    wh = tmp_path / "wh"
    result = ok(wh, "migrate", str(src), "db.t", "--in-place", "--from", fmt.upper())  # as --help spells it
    assert result["mode"] == "move" and result["files_added"] == 4 and result["file_format"] == fmt
    assert not src.exists()
    assert scanned(wh, "db.t") == expected


def test_a_flat_directory_then_write_and_compact(tmp_path: Path) -> None:
    src = make_source(tmp_path / "src", "parquet", [()] * 3)
    expected = source_rows(src, "parquet", ())
    wh = tmp_path / "wh"
    ok(wh, "migrate", str(src), "db.t")
    more = tmp_path / "more.parquet"
    pq.write_table(rows(99), more)
    ok(wh, "write", "db.t", "--input", str(more))
    with_more = normal(expected + normal(rows(99).to_pylist()))
    assert scanned(wh, "db.t") == with_more
    compacted = lakectl(wh, "compact", "db.t", "--full")
    assert compacted.returncode == 0, compacted.stderr
    assert scanned(wh, "db.t") == with_more
    assert len(ok(wh, "files", "db.t")) == 1
    assert ok(wh, "check", "db.t")["ok"] is True


def test_columns_java_cannot_read_are_warned_about(tmp_path: Path) -> None:
    """pyarrow's default Parquet decimal (dictionary-encoded fixed-length bytes) and nanosecond
    timestamp (INT64) are read by lakectl and pypaimon but not by Java Paimon 1.0
    (tests/interop/test_migrate_interop.py reads the forms Java can): migrate names each column."""
    wh = tmp_path / "wh"
    plain = make_source(tmp_path / "plain", "parquet", [()])
    pq.write_table(rows(7), plain / "more.parquet")
    done = lakectl(wh, "migrate", str(plain), "db.t", "--dry-run")
    assert done.returncode == 0 and "warning: column price of 3 file(s) is a DECIMAL" in done.stderr, done.stderr
    nanos = tmp_path / "nanos"
    nanos.mkdir()
    stamps = rows(1).set_column(3, "at", rows(1).column("at").cast(pa.timestamp("ns")))
    pq.write_table(stamps, nanos / "a.parquet", store_decimal_as_integer=True)
    done = lakectl(wh, "migrate", str(nanos), "db.t", "--dry-run")
    assert done.returncode == 0 and done.stderr.count("warning:") == 1, done.stderr
    assert "warning: column at of 1 file(s) is a nanosecond TIMESTAMP stored as INT64" in done.stderr
    for name, options in (("integers", {"store_decimal_as_integer": True}),
                          ("int96", {"store_decimal_as_integer": True, "use_deprecated_int96_timestamps": True})):
        (tmp_path / name).mkdir()
        pq.write_table(stamps if name == "int96" else rows(1), tmp_path / name / "a.parquet", **options)
        done = lakectl(wh, "migrate", str(tmp_path / name), "db.t", "--dry-run")
        assert done.returncode == 0 and "warning" not in done.stderr, (name, done.stderr)


def test_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    src = make_source(tmp_path / "src", "parquet", [("1",), ("2",)], ("k",))
    wh = tmp_path / "wh"
    result = ok(wh, "migrate", str(src), "db.t", "--dry-run", "--in-place")
    assert result["dry_run"] is True and result["files_added"] == 3 and result["mode"] == "move"
    assert result["records_added"] is None and result["snapshot_id"] is None
    assert result["first_files"][0] == "k=1/part-0.parquet"
    assert result["columns"][0] == {"name": "id", "type": "BIGINT"}
    assert result["columns"][-1] == {"name": "k", "type": "STRING"} and result["partition_keys"] == ["k"]
    assert not wh.exists() or not any(p.is_file() for p in wh.rglob("*"))
    assert len(list(src.rglob("*.parquet"))) == 3


def _one_line_error(done: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], done.stderr


def test_refusals(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    mixed = make_source(tmp_path / "mixed", "parquet", [()])
    orc.write_table(rows(5), mixed / "other.orc")
    _one_line_error(lakectl(wh, "migrate", str(mixed), "db.t"), 2, "mixed formats")
    disagree = make_source(tmp_path / "disagree", "parquet", [()])
    pq.write_table(rows(5).drop_columns(["tags"]), disagree / "zz.parquet")
    _one_line_error(lakectl(wh, "migrate", str(disagree), "db.t"), 2, str(disagree / "zz.parquet"))
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(lakectl(wh, "migrate", str(empty), "db.t"), 2, "no data files")
    good = make_source(tmp_path / "good", "parquet", [()])
    ok(wh, "migrate", str(good), "db.t")
    _one_line_error(lakectl(wh, "migrate", str(good), "db.t"), 1, "already exists")  # as create
    _one_line_error(lakectl(wh, "migrate", str(good), "db.u", "--from", "orc"), 2, "--from orc")
    assert not (wh / "db.db" / "u").exists() or not list((wh / "db.db" / "u").rglob("schema-*"))


def _mutations(tmp_path: Path, mode: list[str]) -> int:
    """How many mutations an undisturbed migration makes (LAKECTL_FAULT_TRACE)."""
    src = make_source(tmp_path / "count-src", "parquet", [("1",), ("2",)], ("k",))
    trace = tmp_path / "trace"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    env = {**clean, "PYTHONPATH": str(REPO), "HOME": str(tmp_path), "LAKECTL_FAULT_TRACE": str(trace)}
    done = subprocess.run([str(SCRIPT), "-w", str(tmp_path / "count-wh"), "migrate", str(src), "db.t", *mode],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return len(trace.read_text().splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["--in-place"]], ids=["copy", "in-place"])
def test_a_kill_at_every_mutation_leaves_source_or_table_whole_and_a_rerun_finishes(tmp_path: Path,
                                                                                      mode: list[str]) -> None:
    total = _mutations(tmp_path, mode)
    assert total > 5
    for n in range(1, total + 1):
        src = make_source(tmp_path / f"src{n}", "parquet", [("1",), ("2",)], ("k",))
        originals = {p.name + p.parent.name: p.read_bytes() for p in src.rglob("*.parquet")}
        expected = source_rows(src, "parquet", ("k",))
        wh = tmp_path / f"wh{n}"
        killed = lakectl(wh, "migrate", str(src), "db.t", *mode, fault=f"kill:mutation:{n}")
        assert killed.returncode == -9, (n, killed.stderr)
        table_dir = wh / "db.db" / "t"
        committed = (table_dir / "snapshot" / "snapshot-1").exists()
        if committed:  # the table is whole
            assert scanned(wh, "db.t") == expected, n
        elif not mode:  # a copy never touches the source
            assert {p.name + p.parent.name: p.read_bytes() for p in src.rglob("*.parquet")} == originals, n
        elif not (table_dir / ".migrate-journal.json").exists():  # killed before it began
            assert {p.name + p.parent.name: p.read_bytes() for p in src.rglob("*.parquet")} == originals, n
        else:  # each file whole in exactly one place: at its source, or where the journal sends it
            journal = json.loads((table_dir / ".migrate-journal.json").read_text())
            for source_path, target, *_ in journal["files"]:
                here, there = Path(source_path).exists(), (table_dir / target).exists()
                assert here or there, (n, source_path)
        again = lakectl(wh, "migrate", str(src), "db.t", *mode, "-f", "json")
        assert again.returncode == 0, (n, again.stderr)
        assert scanned(wh, "db.t") == expected, n
        assert not (table_dir / ".migrate-journal.json").exists()
        assert ok(wh, "check", "db.t")["ok"] is True, n
        if mode:
            assert not list(src.rglob("*.parquet")), n
        else:
            assert {p.name + p.parent.name: p.read_bytes() for p in src.rglob("*.parquet")} == originals, n


def _file_stats(wh: Path, table: str) -> dict[tuple, list[tuple]]:
    """Each live file's decoded value stats, keyed by its row count and partition."""
    from core import stats
    from core.manifest import live_entries
    from core.table import Table

    t = Table.open(table, warehouse=str(wh))
    types = [f.type for f in t.schema.fields]
    out: dict[tuple, list[tuple]] = {}
    for e in live_entries(t.manifests(), t.latest_snapshot()):
        decoded = stats.decode(e.file.value_stats, types)
        out.setdefault((e.file.row_count, t.schema.partition_values(e.partition)), []).append(
            [(c.min, c.max, c.null_count) for c in decoded])
    return {k: sorted(v, key=repr) for k, v in out.items()}


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_the_stats_are_the_ones_lakectls_writer_records_for_the_same_rows(tmp_path: Path, fmt: str) -> None:
    """Each migrated file's stats equal those lakectl's own write records for that file's rows
    with the partition column added (one write per file, into a table of the same schema)."""
    src = make_source(tmp_path / "src", fmt, [("a",), ("b",)], ("k",))
    wh = tmp_path / "wh"
    ok(wh, "migrate", str(src), "db.t")
    columns = ", ".join(f"`{c['name']}` {c['type']}" for c in ok(wh, "describe", "db.t")["columns"])
    done = lakectl(wh, "create", "db.w", "--schema", columns, "--partition-by", "k", "-o", "bucket=-1",
                   "-o", f"file.format={fmt}")
    assert done.returncode == 0, done.stderr
    for path in sorted(src.rglob(f"*.{fmt}")):
        table = pq.read_table(path) if fmt == "parquet" else orc.read_table(path)
        one = tmp_path / "one.parquet"
        pq.write_table(table.append_column("k", pa.array([path.parent.name.split("=")[1]] * table.num_rows)), one)
        ok(wh, "write", "db.w", "--input", str(one))
    migrated, written = _file_stats(wh, "db.t"), _file_stats(wh, "db.w")
    assert migrated == written and len(migrated) == 2
    # not vacuous: the files have bounds (ids, names, decimals, times, dates) and null counts
    some = next(iter(migrated.values()))[0]
    assert some[0][0] is not None and some[2][0] is not None and some[0][2] == 1


def test_orphan_removal_keeps_the_files_an_unfinished_in_place_migration_moved(tmp_path: Path) -> None:
    """Moved files keep their old modification times and no snapshot lists them before the
    commit: remove-orphan-files (and maintain) must not take them for garbage."""
    src = make_source(tmp_path / "src", "parquet", [("1",), ("2",)], ("k",))
    expected = source_rows(src, "parquet", ("k",))
    wh = tmp_path / "wh"
    # mutations: journal, schema-0, three moves: killed before the third move
    killed = lakectl(wh, "migrate", str(src), "db.t", "--in-place", fault="kill:mutation:5")
    assert killed.returncode == -9, killed.stderr
    assert len(list((wh / "db.db" / "t").rglob("*.parquet"))) == 2
    removed = ok(wh, "remove-orphan-files", "db.t", "--older-than", "0s", "--force")
    assert removed["files_deleted"] == 0
    ok(wh, "migrate", str(src), "db.t", "--in-place")
    assert scanned(wh, "db.t") == expected


def test_hives_default_partition_is_a_null_partition_value(tmp_path: Path) -> None:
    src = make_source(tmp_path / "src", "parquet", [("x",), ("__HIVE_DEFAULT_PARTITION__",)], ("k",))
    expected = source_rows(src, "parquet", ("k",))
    assert sum(r["k"] is None for r in expected) == 3  # pyarrow reads it as null too
    wh = tmp_path / "wh"
    ok(wh, "migrate", str(src), "db.t")
    assert scanned(wh, "db.t") == expected
    assert sorted(p["partition"]["k"] or "" for p in ok(wh, "partitions", "db.t")) == ["", "x"]


def test_an_unfinished_migration_is_finished_only_by_the_same_command(tmp_path: Path) -> None:
    src = make_source(tmp_path / "src", "orc", [("1",), ("2",)], ("k",))
    expected = source_rows(src, "orc", ("k",))
    wh = tmp_path / "wh"
    killed = lakectl(wh, "migrate", str(src), "db.t", "--in-place", fault="kill:mutation:4")  # after one move
    assert killed.returncode == -9, killed.stderr
    _one_line_error(lakectl(wh, "migrate", str(src), "db.t"), 2, "--in-place` to finish it")
    assert scanned(wh, "db.t") == []  # no snapshot yet: an empty table
    dry = ok(wh, "migrate", str(src), "db.t", "--in-place", "--dry-run")
    assert dry["resumed"] is True and dry["files_added"] == 3
    done = ok(wh, "migrate", str(src), "db.t", "--in-place")
    assert done["resumed"] is True and done["records_added"] == 9
    assert scanned(wh, "db.t") == expected and not src.exists()
