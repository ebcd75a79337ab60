"""Issue 43's first three cases on a real S3 server (SeaweedFS on 127.0.0.1, conditional
PUTs): a rollback next to a write, overlapping expires next to a stalled write, and a write
across a rename or a drop (tests/model/test_stalled_neighbours.py runs them on a local disk)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
from expire_race_kit import LAKECTL, Lakectl  # noqa: E402
from test_stalled_neighbours import (Store, make_table,  # noqa: E402,F401  (collected here too)
                                     test_a_write_across_a_rename_or_drop_commits_nothing_anywhere,
                                     test_a_write_during_a_rollback_lands_after_it,
                                     test_a_write_that_lands_before_the_rollback_removes_anything_is_rolled_back_too,
                                     test_overlapping_expires_never_let_a_stalled_write_keep_a_retired_id)

pytestmark = [pytest.mark.s3, pytest.mark.slow,
              pytest.mark.skipif(not LAKECTL.exists(), reason="the lakectl console script is not installed")]


@pytest.fixture()
def lk(s3) -> Lakectl:
    lk = Lakectl(s3.warehouse(), s3.env())
    lk.store = Store(lk.warehouse, s3.fs())  # type: ignore[attr-defined]
    return make_table(lk)
