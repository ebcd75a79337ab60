"""Concurrent writers on a real S3 server (SeaweedFS on 127.0.0.1): N writer processes x M
commits of their own keys into one s3:// table, racing for every snapshot id through
conditional PUTs (If-None-Match), with compactors and a reader; and the same through the
commit lock file on a store told it has no conditional puts. The checks are
tests/model/concurrency_kit.py's: all N x M commits, gapless ids, every row, no conflict lost,
readers only see whole snapshots."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from core.ops.create import create
from core.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
from concurrency_kit import Figures, check_table, race, writer_commits  # noqa: E402

pytestmark = pytest.mark.s3

N, M, ROWS = 3, 5, 3


def _s3_table(s3, options: dict, *, buckets: int) -> Table:
    t = Table.locate("db.t", warehouse=s3.warehouse(), storage_options=options)
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=["id"],
           options={"bucket": str(buckets), "write-only": "true", "commit.max-retries": "30"})
    return t


def test_s3_writers_on_disjoint_buckets(s3, tmp_path: Path) -> None:
    options = s3.storage_options()
    t = _s3_table(s3, options, buckets=N)
    writers = {f"w{w}": writer_commits(w, M, ROWS, bucket=(w, N)) for w in range(N)}
    figures = Figures()
    results = race(tmp_path / "barrier", t, writers=writers, rounds=True, storage_options=options)
    check_table(t, writers, results, figures)
    assert sorted(f.bucket for f in t.files()) == sorted(list(range(N)) * M)
    assert figures.retries >= M * (N - 1), figures.reasons
    assert any("taken by another writer" in r for r in figures.reasons)  # lost conditional PUTs
    print("\n" + figures.line("s3, disjoint buckets"))


def test_s3_writers_on_one_bucket_with_compactors_and_a_reader(s3, tmp_path: Path) -> None:
    options = s3.storage_options()
    t = _s3_table(s3, options, buckets=1)
    writers = {f"w{w}": writer_commits(w, M, ROWS) for w in range(N)}
    figures = Figures()
    results = race(tmp_path / "barrier", t, writers=writers, rounds=True, compactors=2, readers=1,
                   storage_options=options)
    check_table(t, writers, results, figures)
    assert figures.retries >= M * (N - 1), figures.reasons
    assert figures.compactions >= 1 and figures.reads >= 1
    print("\n" + figures.line("s3, one bucket + 2 compactors + reader"))


def test_s3_writers_through_the_commit_lock_file(s3, tmp_path: Path) -> None:
    """No conditional puts (lakectl.conditional-put=false): the writers serialise their
    check-and-create on a shared lock file and still all land, gapless."""
    options = s3.storage_options(**{"lakectl.conditional-put": False,
                                    "lakectl.lock-file": str(tmp_path / "commit.lock")})
    t = _s3_table(s3, options, buckets=N)
    writers = {f"w{w}": writer_commits(w, 3, ROWS, bucket=(w, N)) for w in range(N)}
    figures = Figures()
    results = race(tmp_path / "barrier", t, writers=writers, rounds=True, storage_options=options)
    check_table(t, writers, results, figures)
    assert figures.retries >= 3 * (N - 1), figures.reasons
    print("\n" + figures.line("s3 with a lock file"))
