"""``lakectl migrate`` from Iceberg tables written by pyiceberg 0.12 (tests/oracle/iceberg_write.py),
through the console script: the migrated table reads in lakectl, pypaimon and Java Paimon 1.0
exactly as pyiceberg reads the source (partitioned by identity on a column, a column renamed
between two appends, position deletes, decimals, timestamps with and without zone), the data
files are the source's bytes, and a kill at every mutation point leaves the source or the
table whole (copy and in place)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from iceberg_oracle import iceberg_read, iceberg_write
from java_oracle import java_read, lakectl_rows
from oracle import official_read

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_cli_migrate import _one_line_error, lakectl, ok, snapshot_of  # noqa: E402

from core.ops.check import check  # noqa: E402
from core.table import Table  # noqa: E402

pytestmark = [pytest.mark.interop]


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A catalog and the metadata of ns.events: region-partitioned, two appends with ``name``
    renamed to ``label`` between them, rows 0 and 2 of one data file deleted by position."""
    root = tmp_path_factory.mktemp("iceberg")
    metadata = iceberg_write(root / "catalog.db", root / "wh", {"table": "ns.events", "partitioned": True,
                                                               "batches": 2, "rename": True, "deletes": [0, 2]})
    return root / "catalog.db", metadata


@pytest.mark.java
@pytest.mark.slow
def test_a_sql_catalog_table_reads_everywhere_as_pyiceberg_reads_it(partitioned: tuple[Path, Path],
                                                                    tmp_path: Path) -> None:
    catalog, metadata = partitioned
    expected, meta = iceberg_read(metadata, tmp_path)
    assert len(expected) == 10 and [f["name"] for f in meta["schema"]][1] == "label"  # 12 rows, 2 deleted
    before = snapshot_of(metadata.parent.parent)
    wh = tmp_path / "wh"
    result = ok(wh, "migrate", f"jdbc:sqlite:{catalog}#ns.events", "db.t")
    assert (result["files_added"], result["records_added"], result["partitions_added"]) == (6, 10, 3)
    assert result["partition_keys"] == ["region"]
    assert snapshot_of(metadata.parent.parent) == before  # a copy leaves the source as it was
    path = wh / "db.db" / "t"
    table = Table.open(str(path))
    assert lakectl_rows(table.scan()) == expected
    # field ids are Iceberg's; the file written before the rename keeps schema 0 (name)
    assert [(f.id, f.name) for f in table.schema.fields][:2] == [(1, "id"), (2, "label")]
    assert table.schemas.schema(0).fields[1].name == "name"
    assert table.schema.options["deletion-vectors.enabled"] == "true"
    got, info = java_read(path)
    assert got == expected and info["latest_snapshot"] == 1
    official, _ = official_read(path, tmp_path)
    assert lakectl_rows(official) == expected
    # the data files are the source's bytes, not rewritten
    sources = sorted(p.read_bytes() for p in (metadata.parent.parent / "data").rglob("0*.parquet"))
    assert sorted(p.read_bytes() for p in path.rglob("data-*.parquet")) == sources
    # filters on the partition and on a migrated stat prune nothing they must keep
    assert lakectl_rows(table.scan(where="region = 'eu'")) == [r for r in expected if r[-1] == "eu"]
    assert lakectl_rows(table.scan(where="id >= 12")) == [r for r in expected if r[0] >= 12]


def test_a_table_directory_in_place_and_the_refusals(tmp_path: Path) -> None:
    """An unpartitioned table found by its directory (the newest metadata file), moved in place;
    equality deletes and a non-Iceberg --from are refused with usage errors (exit 2)."""
    metadata = iceberg_write(tmp_path / "catalog.db", tmp_path / "src", {"table": "ns.flat", "batches": 2})
    table_dir = metadata.parent.parent
    expected, _ = iceberg_read(metadata, tmp_path)
    wh = tmp_path / "wh"
    dry = ok(wh, "migrate", str(table_dir), "db.t", "--dry-run", "--in-place")
    assert dry["dry_run"] and dry["files_added"] == 2 and dry["first_files"][0].startswith("data/")
    assert not (wh / "db.db" / "t").exists()
    done = ok(wh, "migrate", str(table_dir), "db.t", "--in-place")
    assert done["mode"] == "move" and done["records_added"] == 12
    assert not list(table_dir.rglob("*.parquet"))  # the data files moved
    assert lakectl_rows(Table.open(str(wh / "db.db" / "t")).scan()) == expected
    assert ok(wh, "check", "db.t")["ok"] is True
    equality = iceberg_write(tmp_path / "catalog.db", tmp_path / "src", {"table": "ns.eq", "equality_delete": True})
    _one_line_error(lakectl(wh, "migrate", str(equality), "db.u"), 2, "equality deletes")
    _one_line_error(lakectl(wh, "migrate", f"jdbc:sqlite:{tmp_path / 'catalog.db'}#ns.nope", "db.u"), 2,
                    "no Iceberg table ns.nope")
    assert not (wh / "db.db" / "u").exists()


def _mutations(source: str, tmp_path: Path, mode: list[str]) -> int:
    import os
    import subprocess

    from test_cli_migrate import REPO, SCRIPT

    trace = tmp_path / "trace"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    env = {**clean, "PYTHONPATH": str(REPO), "HOME": str(tmp_path), "LAKECTL_FAULT_TRACE": str(trace)}
    done = subprocess.run([str(SCRIPT), "-w", str(tmp_path / "count-wh"), "migrate", source, "db.t", *mode],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return len(trace.read_text().splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("mode", [["--in-place"]], ids=["in-place"])
def test_a_kill_at_every_mutation_leaves_source_or_table_whole(partitioned: tuple[Path, Path], tmp_path: Path,
                                                               mode: list[str]) -> None:
    """The Iceberg path's journal: after a kill, the table is whole (committed) or the files
    are each whole at their source or their target, and a re-run finishes with the rows
    pyiceberg read (the source is restored between kills). In place only: a copy's journal is
    the same code with copies for moves, and test_cli_migrate's matrix kills it at each step."""
    catalog, metadata = partitioned
    source_dir = metadata.parent.parent
    pristine = tmp_path / "pristine"
    shutil.copytree(source_dir, pristine)
    expected, _ = iceberg_read(metadata, tmp_path)
    source = f"jdbc:sqlite:{catalog}#ns.events"
    total = _mutations(source, tmp_path, mode)
    _restore(pristine, source_dir)
    assert total > 8  # journal, 2 schemas, 6 files, index file, commit ...
    for n in range(1, total + 1):
        wh = tmp_path / f"wh{n}"
        killed = lakectl(wh, "migrate", source, "db.t", *mode, fault=f"kill:mutation:{n}")
        assert killed.returncode == -9, (n, killed.stderr)
        table_dir = wh / "db.db" / "t"
        if (table_dir / "snapshot" / "snapshot-1").exists():
            assert lakectl_rows(Table.open(str(table_dir)).scan()) == expected, n
        elif not mode:
            assert snapshot_of(source_dir) == snapshot_of(pristine), n
        elif (table_dir / ".migrate-journal.json").exists():  # each file whole at its source or its target
            journal = json.loads((table_dir / ".migrate-journal.json").read_text())
            for entry in journal["files"]:
                assert Path(entry[0]).exists() or (table_dir / entry[1]).exists(), (n, entry[0])
        again = lakectl(wh, "migrate", source, "db.t", *mode)
        assert again.returncode == 0, (n, again.stderr)
        assert lakectl_rows(Table.open(str(table_dir)).scan()) == expected, n
        assert not (table_dir / ".migrate-journal.json").exists()
        assert check(Table.open(str(table_dir))).ok, n  # in process: a third process per kill is CI time
        if mode:
            assert not list((source_dir / "data").rglob("0*.parquet")), n
            _restore(pristine, source_dir)


def _restore(pristine: Path, source_dir: Path) -> None:
    shutil.rmtree(source_dir)
    shutil.copytree(pristine, source_dir)


@pytest.mark.java
def test_a_lakectl_iceberg_table_with_deletion_vectors_migrates_back(tmp_path: Path) -> None:
    """Round trip through Iceberg: a lakectl append table exposed as Iceberg format 3, whose
    deletion vectors are Puffin blobs (one from a 32-bit and one from a 64-bit Paimon vector),
    migrates from its Iceberg metadata into a new Paimon table that lakectl and Java Paimon 1.0
    read exactly as pyiceberg reads the source: real Puffin files, not a blob built by hand."""
    from pyroaring import BitMap
    from test_iceberg_interop import batch, make, metadata_dir

    from core.commit import CommitMessage, FileStoreCommit
    from core.deletion_vectors import write_index_file
    from core.index_manifest import live_index_entries
    from core.manifest import live_entries

    source = make(tmp_path, "events", primary_key=False, partitioned=True,
                  options={"metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true"})
    source.write(batch(0, 30, "a"))
    source = Table.open(source.path)
    entries = sorted(live_entries(source.manifests(), source.latest_snapshot()), key=lambda e: e.partition)
    messages = [CommitMessage(e.partition, e.bucket, e.total_buckets, new_index_files=(
        write_index_file(source.file_io, source.path, {e.file.file_name: BitMap(positions)}, bitmap64=wide),))
        for e, positions, wide in zip(entries, ([0, 2], [1]), (False, True))]
    FileStoreCommit(source.file_io, source.path, source.schema).commit(messages)
    source.write(batch(30, 4, "b"))
    expected, meta = iceberg_read(metadata_dir(source), tmp_path)
    assert expected == lakectl_rows(Table.open(source.path).scan()) and len(expected) == 31

    wh = tmp_path / "wh2"
    result = ok(wh, "migrate", str(metadata_dir(source)), "db.copy")
    assert (result["records_added"], result["partition_keys"]) == (31, ["dt"])
    copy = wh / "db.db" / "copy"
    assert lakectl_rows(Table.open(str(copy)).scan()) == expected
    got, _ = java_read(copy)
    assert got == expected
    # The vectors migrate writes count their rows (_CARDINALITY): 2 and 1, as deleted above.
    copied = Table.open(str(copy))
    ranges = [r for e in live_index_entries(copied.file_io, copied.path, copied.latest_snapshot().index_manifest)
              for r in e.index_file.dv_ranges or ()]
    assert sorted(r.cardinality for r in ranges) == [1, 2]
