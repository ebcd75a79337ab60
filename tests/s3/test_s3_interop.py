"""pypaimon reads what lakectl wrote to S3: the table's objects copied down with s3fs
(``fs.get(recursive=True)``) are a valid Paimon table for the official reader, at the latest
snapshot and by time travel; and the tables concurrent writers built on S3 read the same."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

from core.ops.create import create
from core.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
from concurrency_kit import Figures, check_table, race, writer_commits  # noqa: E402
from oracle import official_read  # noqa: E402

pytestmark = [pytest.mark.s3, pytest.mark.interop]


def _download(s3, t: Table, local: Path) -> Path:
    fs = s3.fs()
    fs.get(t.path.split("://", 1)[1] + "/", str(local) + "/", recursive=True)
    assert (local / "snapshot").is_dir() and (local / "schema" / "schema-0").is_file()
    return local


def _official(table_dir: Path, tmp_path: Path, snapshot: int | None = None) -> list[tuple]:
    data, meta = official_read(table_dir, tmp_path, snapshot=snapshot)
    return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))))


def _batch(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "v": [r[1] for r in rows],
                     "dt": [r[2] for r in rows]})


def test_pypaimon_reads_a_table_lakectl_wrote_to_s3(s3, tmp_path: Path) -> None:
    t = Table.locate("db.orders", warehouse=s3.warehouse(), storage_options=s3.storage_options())
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2"})
    first = [(i, f"v{i}", "ab"[i % 2]) for i in range(20)]
    t.write(_batch(first))
    t.write(_batch([(i, f"u{i}", "ab"[i % 2]) for i in range(10, 30)]))
    t.compact(full=True)
    t.write(_batch([(100, "o", "b")]), mode="overwrite")
    model = {r[0]: r for r in first}
    model.update({i: (i, f"u{i}", "ab"[i % 2]) for i in range(10, 30)})
    model = {k: r for k, r in model.items() if r[2] != "b"}
    model[100] = (100, "o", "b")
    assert sorted(zip(*(t.scan().column(c).to_pylist() for c in ("id", "v", "dt")))) == sorted(model.values())

    local = _download(s3, t, tmp_path / "copy")
    assert _official(local, tmp_path) == sorted(model.values())
    assert _official(local, tmp_path, snapshot=1) == sorted(first)


def test_pypaimon_reads_what_concurrent_s3_writers_built(s3, tmp_path: Path) -> None:
    options = s3.storage_options()
    t = Table.locate("db.t", warehouse=s3.warehouse(), storage_options=options)
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=["id"],
           options={"bucket": "2", "write-only": "true", "commit.max-retries": "30"})
    writers = {f"w{w}": writer_commits(w, 3, 4) for w in range(2)}
    results = race(tmp_path / "barrier", t, writers=writers, rounds=True, compactors=1, storage_options=options)
    states = check_table(t, writers, results, Figures())
    local = _download(s3, t, tmp_path / "copy")
    latest = max(states)
    assert _official(local, tmp_path) == sorted(states[latest].values())
