"""A cron ``expire`` next to live writers never loses a write (issue 24), on local files,
through the installed console script: the stalled-committer reproduction, and a bounded race of
writers, a compactor, an aggressive expirer, a deleter and a reader (expire_race_kit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from expire_race_kit import LAKECTL, TABLE, Lakectl, check_race, check_reproduction, expire_race, \
    stalled_write_reproduction

pytestmark = pytest.mark.skipif(not LAKECTL.exists(), reason="the lakectl console script is not installed")


def test_stalled_write_resumes_after_expire_retired_its_id(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    lk = Lakectl(str(warehouse))
    repro = stalled_write_reproduction(lk, tmp_path)
    check_reproduction(lk, warehouse / "db.db" / "t", repro)


@pytest.mark.slow
def test_writers_compactor_deleter_reader_next_to_an_aggressive_expire(tmp_path: Path) -> None:
    lk = Lakectl(str(tmp_path / "wh"))
    model, figures = expire_race(lk, tmp_path, seconds=25)
    print("\n" + figures.line("local race"))
    check_race(lk, model, figures)
    assert figures.runs[("write", 0)] >= 3 and figures.snapshots_expired >= 1, figures.line("local")
