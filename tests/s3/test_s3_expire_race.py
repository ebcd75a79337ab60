"""Issue 24 on a real S3 server (SeaweedFS on 127.0.0.1, conditional PUTs): the stalled
``lakectl write`` whose snapshot id expire retired, and the bounded race of writers, a
compactor, an aggressive expirer, a deleter and a reader (tests/model/expire_race_kit.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
from expire_race_kit import LAKECTL, Lakectl, check_race, check_reproduction, expire_race, \
    stalled_write_reproduction  # noqa: E402

pytestmark = [pytest.mark.s3,
              pytest.mark.skipif(not LAKECTL.exists(), reason="the lakectl console script is not installed")]


def test_s3_stalled_write_resumes_after_expire_retired_its_id(s3, tmp_path: Path) -> None:
    lk = Lakectl(s3.warehouse(), s3.env())
    repro = stalled_write_reproduction(lk, tmp_path)
    check_reproduction(lk, None, repro)
    latest = s3.fs().cat_file(f"{lk.warehouse}/db.db/t/snapshot/LATEST").decode().strip()
    assert latest == str(repro.base + 4)


@pytest.mark.slow
def test_s3_writers_compactor_deleter_reader_next_to_an_aggressive_expire(s3, tmp_path: Path) -> None:
    lk = Lakectl(s3.warehouse(), s3.env())
    model, figures = expire_race(lk, tmp_path, seconds=25, storage_options=s3.storage_options())
    print("\n" + figures.line("s3 race"))
    check_race(lk, model, figures)
    assert figures.runs[("write", 0)] >= 3 and figures.snapshots_expired >= 1, figures.line("s3")
